"""Which files are tests, by the conventions of the languages Assay parses.

One recogniser serves the rank stage (tests rarely answer a question unless it asks for them) and the code
graph (`impact`: the tests that reach an entity), so the two never disagree about a file. It reads the path
only: folders such as `tests/`, `__tests__/`, `src/test/`, `Foo.Tests/`, `FooTests/`, `integration-tests/`,
`testdata/`; file names such as `test_x.py`, `x_test.go`, `x_unittest.cc`, `x_spec.rb`, `x.test.ts`,
`FooTest.java`, `FooIT.java`, `conftest.py`. The graph also counts tests that live beside the code, by the
markers the parser records (`is_test_marked`: Rust's `#[test]` and `#[cfg(test)] mod tests`, JUnit's `@Test`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath

# Folder names, lower-cased: `test`, `tests`, `unit_tests`, `integration-tests`, `Foo.Tests`, `Foo.UnitTests` ...
_TEST_DIR = re.compile(
    r"^(?:.+[._-])?(?:unit|integration|functional|acceptance|e2e)?[_-]?tests?$"
    r"|^(?:__tests__|__mocks__|specs?|testing|test_?utils?|test_?helpers?|testdata|androidtest|testfixtures|e2e)$"
)
# File stems, lower-cased: `test_x`, `x_test`, `x_tests`, `x_unittest`, `x_spec`, `x.test`, `x-spec`, `x.specs`,
# `tests` (Django's) ... A bare `test` is a test only at the top of the tree: inside a package it is the package's
# testing tools (`werkzeug/test.py`'s test client, `pydantic_ai/models/test.py`, Penlight's `pl/test.lua`, Mix's
# `mix/tasks/test.ex`).
_TEST_STEM = re.compile(r"^(?:test_.*|.*_(?:tests?|unittest|spec)|.*[.-](?:test|spec)s?|conftest|tests)$")
# Names in their own case, where the convention is CamelCase: `FooTests/`, `FooTest.java`, `FooTestCase.php`,
# `FooIT.java` (Maven's integration tests). Not `FooSpec` or `TestFoo`: source files use those names too.
_CAMEL_TEST = re.compile(r"[a-z0-9](?:Tests?|TestCase|IT)$")


@lru_cache(maxsize=65536)
def is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    folders, stem = parts[:-1], PurePosixPath(parts[-1]).stem
    if any(_TEST_DIR.match(p.lower()) or _CAMEL_TEST.search(p) for p in folders):
        return True
    low = stem.lower()
    return bool(_TEST_STEM.match(low) or _CAMEL_TEST.search(stem) or (low == "test" and not folders))


# Markers (as `facts.decorators` records them) of a test that lives beside the code it tests: Rust's `#[test]`,
# `#[tokio::test]` and `#[rstest]`, JUnit's `@Test` family; `cfg(test)` on a Rust module (`cfg(all(test, ...))`
# too, never `cfg(not(test))`) makes all of it test code.
_TEST_MARKERS = frozenset({"test", "Test", "ParameterizedTest", "RepeatedTest", "TestFactory", "TestTemplate", "rstest"})
_TEST_CFG = re.compile(r"^cfg(?!.*\bnot\().*[(,]test[),]")  # `test` itself, not `feature="test-utils"`


def is_test_marked(decorators: list[str], module: bool = False) -> bool:
    """Whether a definition's decorators mark it a test (a module's: test-only code)."""
    if module:
        return any(_TEST_CFG.match(d) for d in decorators)
    return any(d in _TEST_MARKERS for d in decorators)


_OUTPUT_DIRS = frozenset({"dist", "build", "out"})


def is_build_output(path: str) -> bool:
    """The file lies under a folder a build writes (`dist/`, `build/`, `out/`): a copy of source that is written
    elsewhere, so a name defined in both is answered from the source."""
    return not _OUTPUT_DIRS.isdisjoint(path.split("/")[:-1])

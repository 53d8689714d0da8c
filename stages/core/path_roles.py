"""Which files are tests, vendored or built, by the conventions of the languages Assay parses.

One recogniser serves the rank stage (tests rarely answer a question unless it asks for them) and the code
graph (`impact`: the tests that reach an entity), so the two never disagree about a file. It reads the path
only: folders such as `tests/`, `__tests__/`, `src/test/`, `Foo.Tests/`, `FooTests/`, `integration-tests/`,
`testdata/`; file names such as `test_x.py`, `x_test.go`, `x_unittest.cc`, `x_spec.rb`, `x.test.ts`,
`FooTest.java`, `FooIT.java`, `conftest.py`. The graph also counts tests that live beside the code, by the
markers the parser records (`is_test_marked`: Rust's `#[test]` and `#[cfg(test)] mod tests`, JUnit's `@Test`).
It also names build outputs (`dist/`, a Cargo `target/`) and vendored trees (`vendor/`, `third_party/`); the
latter, like the rank stage's example folders, only from layout folders: a JVM package named `example` or `vendor`
is the project's own code (`layout_folders`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
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


def is_marked_test(qualname: str, decorators: list[str], modules: Iterable[tuple[str, list[str]]] = ()) -> bool:
    """Whether a definition in a source file is test code by the markers the parser records: itself marked a test,
    or a test-only module or inside one (`modules`: the (qualname, decorators) of modules of its file)."""
    return is_test_marked(decorators) or any(
        (qualname == name or qualname.startswith(name + ".")) and is_test_marked(marks, module=True)
        for name, marks in modules)


_OUTPUT_DIRS = frozenset({"dist", "build", "out"})
# Cargo's `target/` holds a build when it holds a profile's output (`target/debug/`, `target/release/`, a cross
# build's `target/<triple>/release/`) or `cargo package`'s copies; Maven's holds `generated-sources/`. A `target/`
# without them may be the project's own code (a compiler's target descriptions), so the name alone is not enough.
_TARGET_OUTPUTS = frozenset({"debug", "release", "package", "generated-sources", "generated-test-sources"})
_TARGET_TRIPLE = re.compile(r"^[a-z0-9_]+(?:-[a-z0-9_.]+){2,}$")  # `x86_64-unknown-linux-gnu`, `wasm32-unknown-unknown`


def is_build_output(path: str) -> bool:
    """The file lies under a folder a build writes (`dist/`, `build/`, `out/`, a build's `target/`): a copy of source
    that is written elsewhere, so a name defined in both is answered from the source."""
    folders = path.split("/")[:-1]
    return not _OUTPUT_DIRS.isdisjoint(folders) or any(
        part == "target" and _holds_build(folders[i + 1:]) for i, part in enumerate(folders))


def _holds_build(below: list[str]) -> bool:
    """The folders below a `target/` are a build's: a profile or package folder, or a profile under a target triple."""
    return bool(below) and (below[0] in _TARGET_OUTPUTS or (
        len(below) > 1 and _TARGET_TRIPLE.match(below[0]) is not None and below[1] in _TARGET_OUTPUTS))


# Folders that hold other projects' code copied in: Go's, Composer's and Rails' `vendor/`, Chromium's and Bazel's
# `third_party/`, VTK's `ThirdParty/`. Their code answers questions about those projects, not this one.
# Not `external/` or `extern/`: as often the project's own adapters to outside services as checked-out dependencies.
# Not a package's private `_vendor/` (pip, bleach): it is part of the package as shipped, bleach's HTML parser
# answers questions about bleach, and the rank stage already reads its `_` as private.
_VENDOR_DIRS = frozenset({"vendor", "vendored", "third_party", "third-party", "thirdparty", "3rdparty", "3rd_party",
                          "3rd-party"})


def is_vendored(path: str) -> bool:
    """The file lies in a vendored tree: a folder of copied-in dependencies, not a package of that name (a JVM
    `com/shop/vendor/` package is the shop's own code, see `layout_folders`)."""
    return any(part.lower() in _VENDOR_DIRS for part in layout_folders(path))


# Below a JVM source root (`src/main/java/`, `src/test/kotlin/`, `app/src/androidTest/java/`) folders are the
# segments of a package name, not a layout; so are the organisation and project below a reverse-domain prefix at the
# top of a package tree (`com/example/demo/`: the default package of Maven and Gradle archetypes, Spring Initializr
# and Android Studio; resources mirror it). A folder such as `examples/` above them, or in a Python or JS tree, still
# names its role.
_JVM_SOURCE_DIRS = frozenset({"java", "kotlin", "scala", "groovy"})
_DOMAIN_PREFIXES = frozenset({"com", "org", "net", "io", "edu", "gov"})
_PACKAGE_TREE_ROOTS = _JVM_SOURCE_DIRS | {"", "src", "resources"}  # "": the top of the repository
_JVM_EXTENSIONS = frozenset({"java", "kt", "kts", "scala", "sc", "groovy", "clj", "cljc"})


def layout_folders(path: str) -> list[str]:
    """A path's folders that say what its tree holds (`examples/`, `docs/`, `vendor/`): all but package names."""
    folders = path.split("/")[:-1]
    for i, part in enumerate(folders):
        if i >= 2 and part.lower() in _JVM_SOURCE_DIRS and folders[i - 2].lower() == "src":
            return folders[: i + 1]
    for i, part in enumerate(folders):
        parent = folders[i - 1].lower() if i else ""
        # a package tree holds JVM sources, or resources mirroring them: a top-level `net/` or `io/` of Go, Python or C
        # code is that code's own folder (`net/vendor/`, `io/examples/` keep their roles)
        jvm = parent == "resources" or path.rsplit(".", 1)[-1].lower() in _JVM_EXTENSIONS
        if part.lower() in _DOMAIN_PREFIXES and parent in _PACKAGE_TREE_ROOTS and jvm:
            return folders[: i + 1] + folders[i + 3:]  # the organisation and project are names
    return folders

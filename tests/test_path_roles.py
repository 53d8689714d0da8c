"""Test files by the conventions of each language, one recogniser for the rank stage and the code graph."""

from __future__ import annotations

import pytest

from assay.stages.core.path_roles import is_test_path
from assay.stages.query.rank import path_kinds

TESTS = [
    "tests/test_cache.py", "testing/python/approx.py", "conftest.py", "pkg/cache_test.py",  # Python
    "src/__tests__/cache.ts", "src/cache.test.ts", "src/cache.spec.ts", "e2e/login.spec.ts",  # JS / TS
    "pkg/cache/cache_test.go", "pkg/cache/testdata/input.json",  # Go
    "crates/cache/tests/evict.rs",  # Rust
    "src/test/java/org/cache/CacheTest.java", "src/main/java/org/cache/CacheIT.java",  # Java
    "src/androidTest/java/org/cache/Ui.java",  # Android
    "src/Cache.Tests/EvictTests.cs", "test/Cache.UnitTests/Evict.cs",  # .NET
    "Tests/CacheTests/EvictTests.swift",  # Swift
    "src/cache_unittest.cc", "src/cache_test.cc",  # C++
    "lib/cache_spec.rb", "spec/cache_spec.rb",  # Ruby
    "tests/Unit/CacheTestCase.php",  # PHP
    "src/integration-tests/evict.py", "src/unit_tests/evict.py",
    "test.py", "polls/tests.py",  # a test script at the top of the tree; Django's per-app tests
]
SOURCES = [
    "src/cache/evict.py", "src/latest/cache.py", "src/contest/solve.py", "src/Attestation.cs", "src/Manifest.java",
    "lib/digest.rb", "src/_pytest/unittest.py", "src/_pytest/pytester.py", "src/pytest/__init__.py", "src/Latest.ts",
    "src/GitCommit.java", "src/OpenApiSpec.ts", "src/TestResults.tsx",
    # a package's own testing tools: werkzeug's test client, pydantic-ai's test model, Penlight's, Mix's `mix test`
    "src/werkzeug/test.py", "pydantic_ai/models/test.py", "usr/share/lua/5.1/pl/test.lua", "lib/mix/lib/mix/tasks/test.ex",
]


@pytest.mark.parametrize("path", TESTS)
def test_each_languages_test_layout_is_a_test(path: str) -> None:
    assert is_test_path(path)
    assert "test" in path_kinds(path)  # the rank stage's penalty reads the same recogniser


@pytest.mark.parametrize("path", SOURCES)
def test_names_that_only_contain_test_are_source(path: str) -> None:
    assert not is_test_path(path)
    assert "test" not in path_kinds(path)

"""Roles read from a tree's layout: JVM package names are not example folders, vendored trees and a build's
`target/` sink below the project's own code, and Rust's in-file tests rank as tests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.artifacts import Candidate, CodeFacts
from assay.stages.core.path_roles import is_build_output, is_marked_test, is_vendored, layout_folders
from assay.stages.query.rank import RankConfig, explain, marked_tests, path_kinds, rank

_n = 0


def cand(file: str, entity: str, kind: str = "function", bm25: float = 8.0, distance: float = 0.45,
         decorators: list[str] | None = None, language: str = "rust") -> Candidate:
    global _n
    _n += 1
    facts = CodeFacts(decorators=decorators) if decorators is not None else None
    return Candidate(id=f"l{_n}", file=file, start_line=1, end_line=5, entity=entity, kind=kind, language=language,
                     body="pass", bm25=bm25, distance=distance, facts=facts, fused_rank=_n, fused_score=0.01)


PENALTIES_ONLY = RankConfig(query_shape=False, definition=False, path=False, file_coherence=False, entity_facts=False,
                            doc_match=False, phrase=False, location=False, centrality=False, callees=False,
                            diversity=False, learned=False, adapter=False)

# --- 5: a JVM package named `example` is code --------------------------------------------------------------------

JVM_PACKAGES = [
    "src/main/java/com/example/demo/Router.java",  # Spring Initializr's default
    "app/src/main/kotlin/com/example/myapp/MainActivity.kt",  # Android Studio's
    "src/test/java/org/example/AppTest.java",
    "src/main/java/com/acme/samples/Sample.java",  # any package segment below a source root
    "src/main/java/com/acme/i18n/Messages.java",
    "src/main/resources/com/example/demo/app.properties",  # resources mirror the package
    "com/example/demo/Router.java",  # a tree without Maven's layout: organisation and project below the domain
    "src/org/example/Router.java",
]
EXAMPLE_FOLDERS = [
    "examples/basic.py", "docs_src/tutorial/app.py", "src/pkg/examples/demo.py", "packages/demo/index.ts",
    "examples/spring/src/main/java/com/acme/Demo.java",  # an examples folder above the source root
    "samples/com/example/demo/Demo.java",  # ... and above a package tree
    "pkg/io/examples/read.py",  # `io` inside a package is a module, not a reverse domain
]


@pytest.mark.parametrize("path", JVM_PACKAGES)
def test_a_jvm_package_named_example_is_not_an_examples_folder(path: str) -> None:
    assert "example" not in path_kinds(path)


@pytest.mark.parametrize("path", EXAMPLE_FOLDERS)
def test_an_examples_folder_of_the_layout_is_still_one(path: str) -> None:
    assert "example" in path_kinds(path)


def test_layout_folders_end_at_the_source_root() -> None:
    assert layout_folders("app/src/main/java/com/example/demo/A.java") == ["app", "src", "main", "java"]
    assert layout_folders("com/example/demo/web/A.java") == ["com", "web"]
    assert layout_folders("pkg/examples/a.py") == ["pkg", "examples"]


def test_spring_default_package_is_not_penalised_as_an_example() -> None:
    router = cand("src/main/java/com/example/demo/Router.java", "Router.register", language="java")
    ranked = rank("register handler", [router], PENALTIES_ONLY)[0]
    assert "example" not in ranked.rank_signals and "penalty" not in ranked.rank_signals


# --- 9: vendored trees and a build's target/ ----------------------------------------------------------------------

VENDORED = ["vendor/github.com/acme/mux/router.go", "third_party/abseil/strings/str_cat.cc", "ThirdParty/zlib/zlib.c",
            "lib/third-party/lodash.js", "vendor/acme/http/src/Client.php", "app/vendor/assets/jquery.js"]
NOT_VENDORED = ["src/main/java/com/shop/vendor/VendorService.java",  # a JVM package: the shop's vendors
                "internal/vendors/api.go", "external/api/client.py", "src/vendor_api.py",
                "bleach/_vendor/html5lib/html5parser.py"]  # a package's private copy: part of it as shipped


@pytest.mark.parametrize("path", VENDORED)
def test_vendored_trees_are_vendored(path: str) -> None:
    assert is_vendored(path) and "vendored" in path_kinds(path)


@pytest.mark.parametrize("path", NOT_VENDORED)
def test_a_package_or_file_named_like_vendor_is_own_code(path: str) -> None:
    assert not is_vendored(path) and "vendored" not in path_kinds(path)


def test_vendored_code_ranks_after_the_projects_own_and_says_why() -> None:
    ours = cand("internal/api/server.go", "Server.routes", bm25=8.0, distance=0.45, language="go")
    theirs = cand("vendor/github.com/acme/mux/router.go", "Router.HandleFunc", bm25=10.0, distance=0.4, language="go")
    ranked = rank("where is the HTTP handler registered", [theirs, ours], PENALTIES_ONLY)
    assert [c.entity for c in ranked] == ["Server.routes", "Router.HandleFunc"]
    assert "vendored" in explain(ranked[1]).split("; ")
    asked = rank("where does the vendored router register a handler", [theirs, ours], PENALTIES_ONLY)
    assert asked[0].entity == "Router.HandleFunc"  # a query about vendored code asks for it
    named = rank("HandleFunc", [theirs, ours], RankConfig(learned=False, adapter=False))
    assert named[0].entity == "Router.HandleFunc" and "vendored" not in named[0].rank_signals  # naming it asks for it


@pytest.mark.parametrize("path", [
    "target/debug/deps/http-copy.rs", "target/release/build/ring-1/out/bindings.rs",
    "target/x86_64-unknown-linux-gnu/release/examples/demo.rs", "target/package/http-0.1.0/src/lib.rs",
    "crates/http/target/debug/build.rs", "target/generated-sources/annotations/Router_.java",
])
def test_a_target_folder_holding_a_build_is_build_output(path: str) -> None:
    assert is_build_output(path)


@pytest.mark.parametrize("path", ["src/target/arm.rs", "compiler/rustc_target/src/spec.rs", "target/spec/x86.rs",
                                  "target/debug.rs", "src/targets/release/notes.py"])
def test_a_target_folder_of_source_is_not_build_output(path: str) -> None:
    assert not is_build_output(path)


def test_a_copy_in_cargos_target_ranks_after_its_source_as_built() -> None:
    source = cand("crates/http/src/lib.rs", "build_router", bm25=8.0, distance=0.45)
    copy = cand("target/debug/deps/http-copy.rs", "build_router", bm25=10.0, distance=0.4)
    ranked = rank("build the http router", [copy, source], PENALTIES_ONLY)
    assert [c.file for c in ranked] == ["crates/http/src/lib.rs", "target/debug/deps/http-copy.rs"]
    assert "built" in explain(ranked[1]).split("; ")


# --- 7: Rust's in-file tests are tests -----------------------------------------------------------------------------

def test_marked_tests_read_the_function_and_its_test_only_module() -> None:
    cfg_test = [("tests", ["cfg(test)"])]
    assert is_marked_test("tests.put_then_get", ["test"])
    assert is_marked_test("tests.helper_store", [], cfg_test) and is_marked_test("tests", ["cfg(test)"], cfg_test)
    assert not is_marked_test("testsuite.helper", [], cfg_test)  # a prefix of the name is not the module
    assert not is_marked_test("real.helper", [], [("real", ["cfg(not(test))"])])
    assert not is_marked_test("MemoryStore.put", [], cfg_test)


def test_a_rust_unit_test_in_a_source_file_is_labelled_and_sinks() -> None:
    product = cand("src/storage/memory.rs", "MemoryStore.put", bm25=8.0, distance=0.45, decorators=[])
    test_fn = cand("src/storage/memory.rs", "tests.put_then_get", bm25=10.0, distance=0.4, decorators=["test"])
    ranked = rank("put then get a value", [test_fn, product], PENALTIES_ONLY)
    assert [c.entity for c in ranked] == ["MemoryStore.put", "tests.put_then_get"]
    assert "test" in explain(ranked[1]).split("; ")


def test_a_helper_inside_cfg_test_module_is_a_test_when_the_module_is_in_the_pool() -> None:
    module = cand("src/lib.rs", "tests", kind="module", decorators=["cfg(test)"])
    helper = cand("src/lib.rs", "tests.helper_store", decorators=[])
    product = cand("src/lib.rs", "MemoryStore.new", decorators=[])
    elsewhere = cand("src/other.rs", "tests.helper_store", decorators=[])  # another file's `tests` is not that module
    assert marked_tests([module, helper, product, elsewhere]) == {module.id, helper.id}
    not_test = cand("src/lib.rs", "imp", kind="module", decorators=["cfg(not(test))"])
    assert marked_tests([not_test, cand("src/lib.rs", "imp.run", decorators=[])]) == frozenset()


# --- end to end: search over a real polyglot repository ------------------------------------------------------------

def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layouts")
    _write(root, {
        "src/main/java/com/example/demo/Router.java":
            "package com.example.demo;\n/** Registers every HTTP handler. */\npublic class Router { public void register(Object c) {} }\n",
        "vendor/github.com/acme/mux/router.go":
            "package mux\n\n// Mux registers HTTP handlers by path.\ntype Mux struct{ routes map[string]func() }\n\n"
            "// HandleFunc registers the handler for the given path.\nfunc (m *Mux) HandleFunc(path string, h func()) { m.routes[path] = h }\n",
        "crates/store/src/lib.rs":
            "pub struct MemoryStore { n: usize }\nimpl MemoryStore {\n    /// Put a value into the store.\n"
            "    pub fn put(&mut self, _k: &str) { self.n += 1; }\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n"
            "    #[test]\n    fn put_then_get() { let mut s = MemoryStore { n: 0 }; s.put(\"a\"); assert_eq!(s.n, 1); }\n}\n",
    })
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    result = CliRunner().invoke(app, ["index", str(root)])
    assert result.exit_code == 0, result.output
    return root


def _hits(root: Path, query: str) -> list[dict]:
    res = CliRunner().invoke(app, ["search", query, str(root), "-k", "10", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["results"]


def test_search_labels_roles_from_layout(polyglot: Path) -> None:
    hits = {h["entity"]: h["why"].split("; ") for h in _hits(polyglot, "register handler")}
    assert "Router.register" in hits and "example" not in hits["Router.register"]
    assert "Mux.HandleFunc" in hits and "vendored" in hits["Mux.HandleFunc"]
    rust = {h["entity"]: h["why"].split("; ") for h in _hits(polyglot, "put then get")}
    assert "test" in rust["tests.put_then_get"] and "test" not in rust["MemoryStore.put"]

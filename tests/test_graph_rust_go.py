"""Call graph edges the grammars hide: calls in Rust macro arguments, tests marked by attributes rather than by
their path (Rust `#[test]` in `#[cfg(test)] mod tests`, JUnit `@Test`), and type uses (Go composite literals, Rust
struct literals, TypeScript decorators, `Type::new()` of an imported Rust type whose `impl` is in another file)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.path_roles import is_test_marked
from assay.stages.index.parse import parse_source
from assay.stages.query import graph
from tests.test_graph import load

RUST_LIB = """pub fn open_store(cap: usize) -> usize {
    cap * 2
}

pub fn show(cap: usize) {
    println!("{}", open_store(cap));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper() -> usize {
        open_store(1)
    }

    #[test]
    fn stores_and_reads() {
        assert_eq!(open_store(2), 4);
    }

    #[tokio::test]
    async fn via_helper() {
        assert!(helper() > 0);
    }
}

#[cfg(not(test))]
mod real {
    pub fn boot() -> usize {
        twice(3)
    }

    fn twice(x: usize) -> usize {
        x * 2
    }
}
"""

MACRO_CALLS = """fn run(x: u32) {
    let v = vec![h(), a::b::k(x), Foo::new().bar(2), self.m(1)];
    println!("{}", format!("{}", inner(x)));
    m! { #[derive(Debug)] struct S(u32); fn g(a: u32) -> u32 { a } }
    let w = vec![Vec::<u8>::new(), xs[0].len()];
}
"""


def calls(path: str, text: str) -> list[tuple[str, str, int]]:
    """(receiver, name, line) of each call edge of one parsed file."""
    parsed = parse_source(text.encode(), path, "rust" if path.endswith(".rs") else "go", "h")
    return [(e.receiver, e.name, e.line) for e in parsed.edges if e.kind == "call"]


def sites(result: graph.GraphResult) -> list[tuple[str, int, bool]]:
    return [(r.entity, r.site_line, r.resolved) for r in result.rows]


def test_calls_inside_rust_macro_arguments_are_call_edges(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"src/lib.rs": RUST_LIB})
    assert sites(graph.callees(catalog, "show")) == [("open_store", 6, True)]
    callers = {(r.entity, r.site_line) for r in graph.callers(catalog, "open_store").rows if r.resolved}
    assert ("show", 6) in callers and ("tests.stores_and_reads", 19) in callers


def test_macro_token_trees_give_receivers_and_skip_what_they_cannot_read() -> None:
    found = calls("src/m.rs", MACRO_CALLS)
    for call in [("", "h", 2), ("a::b", "k", 2), ("Foo", "new", 2), ("Foo::new()", "bar", 2), ("self", "m", 2),
                 ("", "inner", 3)]:
        assert call in found
    names = {name for _, name, _ in found}
    assert not names & {"derive", "S", "g", "format", "len"}  # attributes, definitions, macros, `xs[0].len()`
    assert ("Vec", "new", 5) not in found  # `Vec::<u8>::new`: the turbofish hides the receiver


def test_impact_counts_rust_tests_marked_by_attribute_or_a_cfg_test_module(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"src/lib.rs": RUST_LIB})
    result = graph.impact(catalog, "open_store")
    tests = {(t.entity, t.site_line) for t in result.tests}
    assert tests == {("tests.stores_and_reads", 19), ("tests.helper", 14), ("tests.via_helper", 24)}
    assert "3 test site(s) reach it" in result.note
    real = graph.impact(catalog, "real.twice")  # `cfg(not(test))` is no test module
    assert [(r.entity, r.is_test) for r in real.rows] == [("real.boot", False)] and real.tests == []


def test_rust_test_markers_are_recorded_as_decorators() -> None:
    parsed = parse_source(RUST_LIB.encode(), "src/lib.rs", "rust", "h")
    decorators = {e.qualname: e.facts.decorators for e in parsed.entities if e.facts is not None and e.part == 0}
    assert decorators["tests"] == ["cfg(test)"]
    assert decorators["tests.stores_and_reads"] == ["test"] and decorators["tests.via_helper"] == ["test"]
    assert decorators["real"] == ["cfg(not(test))"] and decorators["open_store"] == []
    assert is_test_marked(["cfg(all(test,unix))"], module=True)
    assert not is_test_marked(['cfg(feature="test-utils")'], module=True) and not is_test_marked(["cfg(test)"])


def test_a_junit_test_outside_a_test_folder_is_a_test(tmp_path: Path) -> None:
    catalog = load(tmp_path, {
        "com/acme/Calc.java": "package com.acme;\npublic class Calc {\n    public static int add(int a, int b) { return a + b; }\n}\n",
        "com/acme/Checks.java": ("package com.acme;\npublic class Checks {\n    @Test\n    public void adds() {\n"
                                 "        Calc.add(1, 2);\n    }\n    public void notATest() {\n        Calc.add(3, 4);\n    }\n}\n"),
    })
    result = graph.impact(catalog, "Calc.add")
    assert [(t.entity, t.site_line) for t in result.tests] == [("Checks.adds", 5)]


def test_go_composite_literals_reference_their_type(tmp_path: Path) -> None:
    catalog = load(tmp_path, {
        "go.mod": "module example.com/app\n",
        "server/server.go": ("package server\n\ntype Server struct {\n\tport int\n}\n\ntype Health struct{}\n\n"
                             "func NewServer() *Server {\n\treturn &Server{port: 1}\n}\n"),
        "main.go": ('package main\n\nimport "example.com/app/server"\n\nfunc main() {\n\t_ = server.Health{}\n'
                    "\t_ = server.NewServer()\n}\n"),
    })
    assert sites(graph.references(catalog, "Server")) == [("NewServer", 10, True)]
    assert sites(graph.references(catalog, "Health")) == [("main", 6, True)]


def test_a_rust_struct_literal_and_an_imported_types_associated_fn_resolve(tmp_path: Path) -> None:
    catalog = load(tmp_path, {
        "engine/src/storage/mod.rs": "pub struct MemStore {\n    pub cap: usize,\n}\n",
        "engine/src/util.rs": ("use crate::storage::MemStore;\n\nimpl MemStore {\n    pub fn with_capacity(cap: usize) -> Self {\n"
                               "        MemStore { cap }\n    }\n}\n"),
        "engine/src/lib.rs": ("pub mod storage;\nmod util;\n\nuse crate::storage::{Store, MemStore};\n\n"
                              "pub fn open_store(cap: usize) -> MemStore {\n    MemStore::with_capacity(cap)\n}\n"),
    })
    assert sites(graph.callers(catalog, "MemStore.with_capacity")) == [("open_store", 7, True)]
    assert ("MemStore.with_capacity", 5, True) in sites(graph.references(catalog, "MemStore"))


def test_a_bare_typescript_decorator_calls_its_function(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"d.ts": "function logged(t: any, k: string) {}\nclass A {\n  @logged\n  m(): void {}\n}\n"})
    assert sites(graph.callers(catalog, "logged")) == [("A.m", 3, True)]


def test_cli_impact_names_the_inline_rust_test(tmp_path: Path) -> None:
    root = tmp_path / "rt"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "rt"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src" / "lib.rs").write_text(RUST_LIB)
    run_index(str(root))
    out = CliRunner().invoke(app, ["impact", "open_store", str(root)])
    assert out.exit_code == 0, out.output
    tests_line = next(line for line in out.output.splitlines() if line.startswith("tests: "))
    assert "tests.stores_and_reads (src/lib.rs:19)" in tests_line
    assert "show  src/lib.rs:5  (call at src/lib.rs:6)" in out.output
    assert "no test reaches it" not in out.output

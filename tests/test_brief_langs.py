"""`assay brief` over non-Python code: every language the index reads is code, entry points and key classes come
from every language, and "used Nx" is the count `assay references` gives, never a wrong 0x."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.index.store import Catalog
from assay.stages.query.brief import build, refresh
from assay.stages.query.graph import references


FILES = {
    # Kotlin and Swift (the sweep's repro): no extension the brief used to know
    "app/src/Cart.kt": 'package shop\n\n/** A cart. */\nclass Cart {\n    fun add(item: String) { log(item) }\n}\n\n'
                       'fun log(msg: String) { println(msg) }\n\nfun main() {\n    Cart().add("book")\n}\n',
    "app/src/Store.swift": '/// A product store.\nclass ProductStore {\n    func add(_ name: String) { report(name) }\n}\n\n'
                           'func report(_ name: String) { print(name) }\n',
    # Rust: a trait and a struct used through `use`, `impl ... for`, a struct literal, `Type::fn`
    "engine/src/storage/mod.rs": '/// A key-value store.\npub trait Store {\n'
                                 '    fn get(&self, key: &str) -> Option<String>;\n}\n\n'
                                 '/// A store in memory.\npub struct MemStore {\n    cap: usize,\n}\n',
    "engine/src/util.rs": 'use crate::storage::{MemStore, Store};\n\n'
                          'impl MemStore {\n    pub fn with_capacity(cap: usize) -> Self {\n'
                          '        MemStore { cap }\n    }\n}\n\nimpl Store for MemStore {\n'
                          '    fn get(&self, key: &str) -> Option<String> {\n        None\n    }\n}\n',
    "engine/src/lib.rs": '//! The storage engine.\npub mod storage;\nmod util;\n\nuse crate::storage::{Store, MemStore};\n\n'
                         'pub fn open_store(cap: usize) -> Box<dyn Store> {\n    Box::new(MemStore::with_capacity(cap))\n}\n',
    # Go: a struct built and given methods, never called by name
    "server/server.go": 'package server\n\n// Server routes requests.\ntype Server struct {\n\tport int\n}\n\n'
                        '// NewServer builds a server.\nfunc NewServer() *Server {\n\treturn &Server{port: 8080}\n}\n\n'
                        'func (s *Server) Run() error {\n\treturn nil\n}\n\nfunc (s *Server) Stop() {}\n\n'
                        'func (s *Server) Port() int {\n\treturn s.port\n}\n',
    # a header-only C++ library, a C header, an ES module, shell scripts with and without an extension
    "native/matrix.hpp": '#pragma once\nnamespace linalg {\n/// A dense matrix.\nclass Matrix {\npublic:\n'
                         '    int rows() const { return r; }\n    int r;\n};\n}\n',
    "native/ring.h": '#ifndef RING_H\n#define RING_H\nint ring_len(int n);\n#endif\n',
    "web/index.mjs": 'export function start() {\n  return 1;\n}\n',
    "bin/deploy": '#!/bin/sh\nset -e\necho deploying\n',
    "bin/build.sh": '#!/usr/bin/env bash\nbuild() {\n  echo building\n}\nbuild\n',
    # entry points the JVM and .NET runtimes call, and a `main` that is none
    "apps/App.java": 'package apps;\npublic class App {\n    public static void main(String[] args) { }\n'
                    '    void helper() { }\n}\n',
    "apps/Main.scala": 'object Main {\n  def main(args: Array[String]): Unit = println("x")\n}\n'
                      'class Helper {\n  def main(x: Int): Int = x\n}\n',
    "apps/Program.cs": 'namespace Demo {\n  class Program {\n    static void Main(string[] args) { }\n  }\n}\n',
    # a Python script whose `__main__` guard follows a definition (a top-level window holds it)
    "bin/cli.py": 'def run():\n    return 1\n\n\nif __name__ == "__main__":\n    run()\n',
    "Makefile": 'test:\n\techo ok\n',
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mixed-language repository, committed and indexed once for the module (read only by the tests)."""
    root = tmp_path_factory.mktemp("brief") / "polyglot"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text(".assay/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "-c", "user.email=dev@example.com", "-c", "user.name=Dev", "commit", "-q", "-m", "init")
    run_index(str(root))
    return root


def _brief(root: Path) -> str:
    catalog = Catalog(root)
    try:
        return build(root, catalog, catalog.files())
    finally:
        catalog.close()


def _section(text: str, heading: str) -> list[str]:
    lines = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    return [line for line in lines if line.startswith("- ")]


def test_kotlin_and_swift_files_are_code_with_their_entry_point_and_classes(polyglot: Path) -> None:
    text = _brief(polyglot)
    assert "- `app/` (2 code files)" in _section(text, "Main packages")
    assert "- `app/src/Cart.kt:10` `main`" in _section(text, "Entry points")
    keys = "\n".join(_section(text, "Key classes (most used)"))
    assert "`Cart` (app/src/Cart.kt:4" in keys and "`ProductStore` (app/src/Store.swift:2" in keys


def test_every_indexed_code_language_counts_and_build_files_do_not(polyglot: Path) -> None:
    packages = _section(_brief(polyglot), "Main packages")
    counts = {m.group(1): int(m.group(2)) for line in packages if (m := re.match(r"- `(.+?)/` \((\d+) code files\)", line))}
    # .hpp and .h; .mjs; an extensionless `#!/bin/sh` script, a .sh and a .py one; the Makefile at the top is no code
    assert counts["native"] == 2 and counts["web"] == 1 and counts["bin"] == 3
    assert "(top level)" not in counts


def test_header_only_cpp_class_is_a_key_class(polyglot: Path) -> None:
    keys = "\n".join(_section(_brief(polyglot), "Key classes (most used)"))
    assert "`linalg.Matrix` (native/matrix.hpp:4" in keys


def test_entry_points_of_every_runtime_and_no_others(polyglot: Path) -> None:
    entry = _section(_brief(polyglot), "Entry points")
    for expected in ("- `apps/App.java:3` `main`", "- `apps/Main.scala:2` `main`", "- `apps/Program.cs:3` `Main`",
                     "- `bin/deploy` (runs as a script)", "- `bin/cli.py` (runs as a script)"):
        assert expected in entry, (expected, entry)
    assert not any("Main.scala:5" in line for line in entry)  # `Helper.main(x)` in a class: an ordinary method


def test_used_counts_match_references_and_no_type_is_said_used_0x(polyglot: Path) -> None:
    text = _brief(polyglot)
    keys = _section(text, "Key classes (most used)")
    assert "used 0x" not in text
    catalog = Catalog(polyglot)
    try:
        for line in keys:
            m = re.match(r"- `(.+?)` \((.+?):\d+(?:, used (\d+)x)?\)", line)
            assert m, line
            found = references(catalog, f"{m.group(2)}:{m.group(1)}", limit=1000)
            resolved = sum(r.resolved for r in found.rows)
            assert int(m.group(3) or 0) == resolved, (line, found.rows)
    finally:
        catalog.close()
    by_name = {re.match(r"- `(.+?)`", line).group(1): line for line in keys}
    assert "used 2x" in by_name["Store"]  # the `use` lines in lib.rs and util.rs
    assert "used 3x" in by_name["MemStore"]  # those, and the struct literal `MemStore { cap }` in util.rs


def test_a_type_the_graph_cannot_see_used_ranks_by_its_methods(polyglot: Path) -> None:
    names = [re.match(r"- `(.+?)`", line).group(1) for line in _section(_brief(polyglot), "Key classes (most used)")]
    # neither is used by name; three methods against one rank Server first, though its file sorts after
    assert names.index("Server") < names.index("ProductStore")


def test_brief_stays_byte_identical_while_the_polyglot_project_does_not_change(polyglot: Path, tmp_path: Path) -> None:
    first = _brief(polyglot)
    assert _brief(polyglot) == first
    out = CliRunner().invoke(app, ["brief", str(polyglot)])
    again = CliRunner().invoke(app, ["brief", str(polyglot)])
    assert out.exit_code == 0 and again.exit_code == 0 and out.output == again.output
    assert out.output.strip() == first.strip()
    catalog = Catalog(polyglot)
    try:
        _, rewritten, _ = refresh(polyglot, catalog, catalog.files())
    finally:
        catalog.close()
    assert not rewritten


def test_classes_past_the_resolving_budget_are_listed_without_a_count(polyglot: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.stages.query import brief

    counted = _section(_brief(polyglot), "Key classes (most used)")
    assert any(", used " in line for line in counted)
    monkeypatch.setattr(brief, "MAX_RESOLVED_SITES", 0)
    uncounted = _section(_brief(polyglot), "Key classes (most used)")
    assert uncounted and not any(", used " in line for line in uncounted)
    names = [re.match(r"- `(.+?)`", line).group(1) for line in uncounted]
    assert names[0] == "Server"  # by its three methods, the most of any class here

"""The call graph beyond one file and one definition per name: overloads, same-named definitions in several languages,
methods declared away from their type (Rust `impl`, Go receivers), Go packages and C headers."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.query import graph
from tests.test_graph import load

INVENTORY = """package com.acme;
public class Inventory {
    public void add(String sku) {
        add(sku, 1);
    }
    public void add(String sku, int qty) {
        Item existing = find(sku);
    }
    public void add(Item item) {
        add(item.sku, item.qty);
    }
    Item find(String sku) { return null; }
}
"""

RUST_STORE = {
    "engine/src/storage/mod.rs": "pub struct MemStore {\n    data: Vec<u8>,\n}\n",
    "engine/src/util.rs": ("use crate::storage::MemStore;\n\nimpl MemStore {\n    fn evict_one(&mut self) {\n    }\n\n"
                           "    fn put(&mut self) {\n        self.evict_one();\n    }\n}\n"),
}

GO_SERVER = {
    "server/server.go": ("package server\n\ntype Server struct {\n\tport int\n}\n\n"
                         "func (s *Server) lookup(p string) int {\n\treturn s.route(p)\n}\n"),
    "server/dispatch.go": ("package server\n\nfunc (s *Server) ServeHTTP(p string) int {\n\treturn s.lookup(p)\n}\n\n"
                           "func (s *Server) route(p string) int {\n\treturn helper(1)\n}\n"),
    "server/util.go": "package server\n\nfunc helper(x int) int {\n\treturn x\n}\n",
    "other/util.go": "package other\n\nfunc helper(x int) int {\n\treturn x\n}\n",
}

C_PROJECT = {
    "c/util.h": "#ifndef UTIL_H\n#define UTIL_H\nint add_ints(int a, int b);\nint far_away(void);\n#define TWICE(x) ((x)*2)\n#endif\n",
    "c/util.c": '#include "util.h"\n\nint add_ints(int a, int b) {\n    return a + b;\n}\n',
    "lib/far.c": "int far_away(void) {\n    return 1;\n}\n\nint undeclared(void) {\n    return 2;\n}\n",
    "c/main.c": ('#include <stdio.h>\n#include "util.h"\n\nint main(void) {\n    printf("%d", add_ints(1, TWICE(2)));\n'
                 "    far_away();\n    return undeclared();\n}\n"),
}


def rows(result: graph.GraphResult) -> list[tuple[str, int, int, bool]]:
    """(holder, holder line, site line, resolved) per row."""
    return [(r.entity, r.line, r.site_line, r.resolved) for r in result.rows]


def test_each_overload_owns_the_calls_in_its_own_lines(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"com/acme/Inventory.java": INVENTORY})
    assert rows(graph.callers(catalog, "Inventory.find")) == [("Inventory.add", 6, 7, True)]
    result = graph.callers(catalog, "Inventory.add")
    assert rows(result) == [("Inventory.add", 3, 4, True), ("Inventory.add", 9, 10, True)] and result.total == 2
    second = next(e for e in catalog.by_name("add") if e.start_line == 6)
    assert [(edge.name, edge.line) for _, edge in catalog.edges(source_id=second.id, kinds=("call",))] == [("find", 7)]


def test_a_python_redefinition_owns_its_calls(tmp_path: Path) -> None:
    source = ("import sys\n\n\ndef helper():\n    return 1\n\n\nif sys.platform == 'win32':\n    def run():\n        return 0\n"
              "else:\n    def run():\n        return helper()\n")
    catalog = load(tmp_path, {"pkg/mod.py": source})
    assert rows(graph.callers(catalog, "helper")) == [("run", 12, 13, True)]


def test_a_site_is_listed_once_and_never_under_another_language(tmp_path: Path) -> None:
    catalog = load(tmp_path, {
        "main.go": "package main\n\nfunc main() {\n\ts := NewThing()\n\ts.Run()\n}\n",
        "server/server.go": "package server\n\ntype Server struct{}\n\nfunc (s *Server) Run() {\n}\n",
        "scripts/run.py": "class Runner:\n    def Run(self):\n        return 1\n",
    })
    assert rows(graph.callers(catalog, "Run")) == [("main", 3, 5, False)]
    assert rows(graph.callers(catalog, "Runner.Run")) == []  # a Go call can never reach a Python method
    assert rows(graph.callers(catalog, "Server.Run")) == [("main", 3, 5, False)]
    assert graph.references(catalog, "Run").total == 1


def test_two_calls_on_one_line_stay_two_sites(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"a.py": "class A:\n    def get(self):\n        return 1\n",
                              "b.py": "class B:\n    def get(self):\n        return 2\n",
                              "c.py": "def use(x):\n    return x.get(x.get())\n"})
    assert rows(graph.callers(catalog, "get")) == [("use", 1, 2, False), ("use", 1, 2, False)]


def test_js_and_ts_share_a_family_c_and_cpp_too(tmp_path: Path) -> None:
    catalog = load(tmp_path, {
        "lib/cache.js": "class LruCache {\n  set(k, v) {\n    return v;\n  }\n}\n",
        "src/app.ts": "export function boot(m: any) {\n  m.set(1, 2);\n}\n",
        "app/run.py": "def go(m):\n    m.set(1, 2)\n",
    })
    assert [(r.entity, r.site_file) for r in graph.callers(catalog, "LruCache.set").rows] == [("boot", "src/app.ts")]


def test_self_calls_resolve_when_the_impl_is_in_another_file_than_the_struct(tmp_path: Path) -> None:
    catalog = load(tmp_path, RUST_STORE)
    assert rows(graph.callers(catalog, "MemStore.evict_one")) == [("MemStore.put", 7, 8, True)]
    put = next(e for e in catalog.by_name("put") if e.qualname == "MemStore.put")
    assert [h.qualname for _, _, h in graph.Graph(catalog).calls_from(put)] == ["MemStore.evict_one"]


def test_go_receiver_calls_resolve_across_the_files_of_a_package(tmp_path: Path) -> None:
    catalog = load(tmp_path, GO_SERVER)
    assert rows(graph.callers(catalog, "Server.lookup")) == [("Server.ServeHTTP", 3, 4, True)]  # type in server.go
    assert rows(graph.callers(catalog, "Server.route")) == [("Server.lookup", 7, 8, True)]  # type's file, method elsewhere


def test_a_cpp_method_defined_out_of_class_calls_its_class_members_by_bare_name(tmp_path: Path) -> None:
    catalog = load(tmp_path, {
        "include/box.hpp": "class Box {\npublic:\n    int field(int v) { return v; }\n    int get();\n};\n",
        "src/box.cpp": '#include "box.hpp"\n\nint Box::get() {\n    return field(1);\n}\n',
    })
    assert rows(graph.callers(catalog, "Box.field")) == [("Box.get", 3, 4, True)]


def test_go_functions_of_a_package_resolve_by_bare_name_in_sibling_files(tmp_path: Path) -> None:
    catalog = load(tmp_path, GO_SERVER)
    assert rows(graph.callers(catalog, "server/util.go:helper")) == [("Server.route", 7, 8, True)]
    assert rows(graph.callers(catalog, "other/util.go:helper")) == []  # another package's helper is not in scope


def test_c_names_declared_in_an_included_header_resolve_to_their_definition(tmp_path: Path) -> None:
    catalog = load(tmp_path, C_PROJECT)
    assert rows(graph.callers(catalog, "add_ints")) == [("main", 4, 5, True)]  # the header's own util.c
    assert rows(graph.callers(catalog, "TWICE")) == [("main", 4, 5, True)]  # a macro the header defines
    assert rows(graph.callers(catalog, "far_away")) == [("main", 4, 6, True)]  # declared there, defined once elsewhere
    # declared in no included header: not resolved, yet listed, never dropped as "0 site(s)"
    assert rows(graph.callers(catalog, "undeclared")) == [("main", 4, 7, False)]


def test_a_bare_call_is_listed_unresolved_only_where_it_can_name_the_target(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"pkg/tools.py": "class Box:\n    def open(self):\n        return 1\n\n\ndef open_all():\n    return 2\n",
                              "app/main.py": "def run(path):\n    return open(path) and open_all()\n"})
    assert rows(graph.callers(catalog, "Box.open")) == []  # Python has no implicit `self`: a bare `open` is not it
    assert rows(graph.callers(catalog, "open_all")) == [("run", 1, 2, False)]


def test_cli_lists_each_overload_site_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "com" / "acme").mkdir(parents=True)
    (root / "com" / "acme" / "Inventory.java").write_text(INVENTORY)
    run_index(str(root))
    out = CliRunner().invoke(app, ["callers", "Inventory.add", str(root)])
    assert out.exit_code == 0, out.output
    assert "Inventory.add  com/acme/Inventory.java:9  (call at com/acme/Inventory.java:10)" in out.output
    assert "2 site(s); 2 resolved, 0 unresolved shown" in out.output

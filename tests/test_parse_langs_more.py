"""Definitions and call edges of C typedefs, TypeScript declarations and decorators, C++ qualified calls and JSX
(sweep report langs.md, defects 7-11)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.artifacts import Edge, Entity
from assay.stages.index.languages import language_for
from assay.stages.index.parse import parse_source
from assay.stages.index.store import Catalog
from assay.stages.query import graph


def parse(path: str, text: str) -> tuple[list[Entity], list[Edge]]:
    parsed = parse_source(text.encode(), path, language_for(path) or "text", "h")
    assert not parsed.partial, parsed.error
    return parsed.entities, parsed.edges


def spans(entities: list[Entity]) -> dict[tuple[str, str], tuple[int, int]]:
    """(kind, qualname) -> lines of each definition (files and windows left out)."""
    return {(e.kind, e.qualname): (e.start_line, e.end_line) for e in entities
            if e.part == 0 and e.kind not in ("file", "window")}


def windows(entities: list[Entity]) -> list[tuple[int, int]]:
    return [(e.start_line, e.end_line) for e in entities if e.kind == "window"]


def load(root: Path, files: dict[str, str]) -> Catalog:
    catalog = Catalog(root)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        entities, edges = parse(rel, text)
        catalog.replace(entities, [])
        catalog.replace_edges({rel: edges})
    return catalog


def sites(catalog: Catalog, command: str, query: str) -> set[tuple[str, int, bool]]:
    res = getattr(graph, command)(catalog, query)
    assert res.targets, (query, res.note)
    return {(r.entity, r.site_line, r.resolved) for r in res.rows}


# -- defect 7: C typedef of a struct ------------------------------------------------------------------------------

RING_H = """\
#ifndef RING_H
#define RING_H

/* A ring buffer struct. */
typedef struct ring {
    int head;
    int tail;
} ring_t;

typedef union { int i; float f; } number_t;

struct plain { int y; };

typedef struct node node_t;

#endif
"""


def test_a_typedef_of_a_struct_body_is_one_definition_named_by_the_typedef() -> None:
    entities, _ = parse("ring.h", RING_H)
    got = spans(entities)
    assert got[("struct", "ring_t")] == (5, 8)
    assert not any(qual.startswith("ring_t.") or qual == "ring" for _, qual in got)  # no second entity, no `ring_t.ring`
    assert len([e for e in entities if e.start_line == 5 and e.kind != "window"]) == 1
    assert next(e for e in entities if e.qualname == "ring_t").docstring == "A ring buffer struct."
    assert got[("struct", "number_t")] == (10, 10)  # anonymous: the typedef names it, of the union's kind
    assert got[("struct", "plain")] == (12, 12)  # a struct without a typedef keeps its own name
    assert got[("type", "node_t")] == (14, 14)  # a typedef of a struct defined elsewhere is a type alias


def test_a_cpp_typedef_struct_keeps_the_structs_bases() -> None:
    entities, edges = parse("shape.hpp", "class Base {};\ntypedef struct Point : public Base { int x; } point_t;\n")
    assert spans(entities)[("struct", "point_t")] == (2, 2)
    assert ("inherit", "Base", "point_t") in {(e.kind, e.name, e.source) for e in edges}


# -- defect 11: TypeScript declarations ----------------------------------------------------------------------------

TYPES_D_TS = """\
declare module "legacy-config" {
  export function loadConfig(path: string): Record<string, string>;
}

/** A helper the page defines. */
declare function globalHelper(x: number): string;

declare class Legacy {
  run(x: number): void;
}
"""

USER_TS = """\
export interface Repository<T> {
  get(id: number): T | undefined;
  /** Stores it. */
  save(item: T): void;
}

export abstract class Shape {
  abstract area(): number;
}

export function takes(cb: { run(): void }): void {}

export class Service {
  constructor(private repo: Repository<string>) {}
  register(name: string): void {
    this.repo.save(name);
  }
}
"""


def test_typescript_declarations_without_bodies_are_definitions() -> None:
    got = spans(parse("types.d.ts", TYPES_D_TS)[0])
    assert got[("function", "loadConfig")] == (2, 2)
    assert got[("function", "globalHelper")] == (6, 6)
    assert got[("method", "Legacy.run")] == (9, 9)
    entities, _ = parse("user.d.ts", USER_TS)  # a declaration file: its member signatures are its definitions
    got = spans(entities)
    assert got[("method", "Repository.get")] == (2, 2)
    assert got[("method", "Repository.save")] == (4, 4)
    assert got[("method", "Shape.area")] == (8, 8)
    assert ("method", "takes.run") not in got and not any(q.endswith(".run") for _, q in got)  # an inline type's member
    assert next(e for e in entities if e.qualname == "Repository.save").docstring == "Stores it."
    assert next(e for e in entities if e.qualname == "Repository.save").params == ["item"]
    # in a `.ts` file they stay lines of their interface or class: as definitions they crowded search (semble zod)
    got = spans(parse("user.ts", USER_TS)[0])
    assert ("interface", "Repository") in got and not any(q.startswith(("Repository.", "Shape.")) for _, q in got)
    ambient = next(e for e in parse("types.d.ts", TYPES_D_TS)[0] if e.qualname == "globalHelper")
    assert ambient.docstring == "A helper the page defines."  # the doc above `declare`


def test_graph_finds_typescript_declarations_by_name(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"src/types.d.ts": TYPES_D_TS, "src/user.d.ts": USER_TS.split("export function takes")[0],
                              "src/user.ts": USER_TS.split("export abstract class")[0] + USER_TS.split("void {}\n")[1]})
    assert graph.callers(catalog, "loadConfig").targets == ["loadConfig src/types.d.ts:2"]
    assert {e for e, _, _ in sites(catalog, "callers", "Repository.save")} == {"Service.register"}  # the .d.ts's


OVERLOADS_TS = """\
/** Picks it. */
export function pick(x: string): string;
export function pick(x: number): number;
export function pick(x: any): any {
  return x;
}

export class Box {
  put(x: string): void;
  put(x: any): void {}
}
"""


def test_typescript_overload_signatures_are_lines_of_their_implementation() -> None:
    entities, _ = parse("pick.ts", OVERLOADS_TS)
    got = spans(entities)
    assert [q for _, q in got if q == "pick"] == ["pick"]  # one definition, not one per signature
    assert got[("function", "pick")] == (2, 6)
    assert next(e for e in entities if e.qualname == "pick").docstring == "Picks it."
    assert got[("method", "Box.put")] == (9, 10)
    assert windows(entities) == []  # the signatures' lines belong to `pick`, not to a top-level window


# -- defect 10: TypeScript method decorators --------------------------------------------------------------------

DECORATED_TS = """\
function logged(t: any, k: string) {}
class A {
  @logged
  m(): void {}

  /** Doc of n. */
  @logged
  @other({ a: 1 })
  n(): void {}
}
"""


def test_a_typescript_method_starts_at_its_decorators() -> None:
    entities, _ = parse("d.ts", DECORATED_TS)
    got = spans(entities)
    assert got[("method", "A.m")] == (3, 4)
    assert got[("method", "A.n")] == (7, 9)
    n = next(e for e in entities if e.qualname == "A.n")
    assert n.body.splitlines()[:2] == ["  @logged", "  @other({ a: 1 })"]
    assert n.docstring == "Doc of n."  # the doc comment above the decorators is still the method's
    assert n.facts is not None and n.facts.decorators == ["logged", "other"]
    a = next(e for e in entities if e.qualname == "A")
    assert "@logged" in a.body and "m(): void {} ..." not in a.body  # the class outline keeps the decorator line


# -- defect 8: C++ qualified and template calls --------------------------------------------------------------------

MAIN_CPP = """\
namespace app {
int run() { return 0; }
}
struct W { static void make() {} template <typename T> void put(T x) {} };
template <typename T> T ident(T x) { return x; }
void f() {}
int main() {
    W w;
    w.put<int>(1);
    W::make();
    ident<long>(3);
    ::f();
    return app::run();
}
"""


def test_cpp_qualified_and_template_calls_are_call_edges() -> None:
    _, edges = parse("main.cpp", MAIN_CPP)
    calls = {(e.name, e.receiver, e.line) for e in edges if e.kind == "call"}
    assert calls == {("put", "w", 9), ("make", "W", 10), ("ident", "", 11), ("f", "", 12), ("run", "app", 13)}


def test_cpp_qualified_and_template_calls_reach_callers(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"main.cpp": MAIN_CPP})
    assert ("main", 10, True) in sites(catalog, "callers", "W.make")
    assert ("main", 11, True) in sites(catalog, "callers", "ident")
    assert ("main", 12, True) in sites(catalog, "callers", "f")
    assert ("main", 13, True) in sites(catalog, "callers", "app.run")  # was "0 site(s)", then unresolved


# -- defect 9: JSX elements -------------------------------------------------------------------------------------

APP_TSX = """\
export function Header({ title }: { title: string }) {
  return <h1 className="header">{title}</h1>;
}

export const Counter = () => <button>1</button>;

export default function App() {
  return (
    <div>
      <Header title="x" />
      <Counter></Counter>
    </div>
  );
}
"""


def test_a_jsx_element_calls_its_component_and_an_html_tag_calls_nothing() -> None:
    for path in ("App.tsx", "App.jsx"):
        text = APP_TSX.replace("{ title }: { title: string }", "{ title }") if path.endswith(".jsx") else APP_TSX
        _, edges = parse(path, text)
        calls = {(e.name, e.line, e.source) for e in edges if e.kind == "call"}
        assert calls == {("Header", 10, "App"), ("Counter", 11, "App")}, path


def test_cli_lists_a_jsx_use_as_a_reference_and_a_caller(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "App.tsx").write_text(APP_TSX)
    run_index(str(tmp_path))
    runner = CliRunner()
    refs = runner.invoke(app, ["references", "Header", str(tmp_path)])
    assert refs.exit_code == 0, refs.output
    assert "App  src/App.tsx:7  (call at src/App.tsx:10)" in refs.output and "1 site(s)" in refs.output
    callers = runner.invoke(app, ["callers", "Counter", str(tmp_path)])
    assert "App  src/App.tsx:7  (call at src/App.tsx:11)" in callers.output

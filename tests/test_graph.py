"""The code graph: hand-checked callers and callees per language, the requests sdist, and the doors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.stages.index.languages import language_for
from assay.stages.index.parse import parse_source
from assay.stages.index.store import Catalog
from assay.stages.query import graph

PROJECTS: dict[str, dict[str, str]] = {
    "python": {
        "pkg/__init__.py": "",
        "pkg/util.py": "def helper(x):\n    return x\n\n\ndef twice(x):\n    return helper(helper(x))\n",
        "pkg/core.py": (
            "from .util import helper as h\nfrom pkg import util\n\n\nclass Base:\n    def run(self):\n        return self.step()\n\n"
            "    def step(self):\n        return 1\n\n\nclass Child(Base):\n    def step(self):\n        return h(2)\n\n\n"
            "def outer():\n    def inner():\n        return util.twice(3)\n    return inner()\n\n\ndef helper(y):\n    return obj.helper(y)\n"
        ),
    },
    "javascript": {
        "src/util.js": "export function helper(x) { return x; }\nexport function twice(x) { return helper(helper(x)); }\n",
        "src/core.js": (
            "import { helper as h } from './util';\nimport * as u from './util';\n"
            "class Base {\n  run() { return this.step(); }\n  step() { return 1; }\n}\n"
            "class Child extends Base {\n  step() { return h(2); }\n}\n"
            "function outer() {\n  function inner() { return u.twice(3); }\n  return inner();\n}\n"
            "function helper(y) { return obj.helper(y); }\n"
        ),
    },
    "typescript": {
        "src/util.ts": "export function helper(x: number): number { return x; }\nexport function twice(x: number): number { return helper(helper(x)); }\n",
        "src/core.ts": (
            "import { helper as h } from './util';\nimport * as u from './util';\n"
            "class Base {\n  run(): number { return this.step(); }\n  step(): number { return 1; }\n}\n"
            "class Child extends Base {\n  step(): number { return h(2); }\n}\n"
            "function outer(): number {\n  function inner(): number { return u.twice(3); }\n  return inner();\n}\n"
            "function helper(y: number): number { return obj.helper(y); }\n"
        ),
    },
    "go": {
        "util/util.go": "package util\n\nfunc Helper(x int) int { return x }\n\nfunc Twice(x int) int { return Helper(Helper(x)) }\n",
        "main.go": (
            "package main\n\nimport u \"example.com/app/util\"\n\ntype Base struct{}\n\n"
            "func (b *Base) Run() int { return b.Step() }\n\nfunc (b *Base) Step() int { return 1 }\n\n"
            "func outer() int { return u.Twice(3) }\n\nfunc Helper(y int) int { return obj.Helper(y) }\n"
        ),
    },
    "rust": {
        "src/util.rs": "pub fn helper(x: i32) -> i32 { x }\n\npub fn twice(x: i32) -> i32 { helper(helper(x)) }\n",
        "src/main.rs": (
            "mod util;\nuse crate::util::{helper as h, twice};\n\nstruct Base;\n\n"
            "impl Base {\n    fn run(&self) -> i32 { self.step() }\n    fn step(&self) -> i32 { 1 }\n}\n\n"
            "fn outer() -> i32 {\n    fn inner() -> i32 { twice(3) }\n    inner()\n}\n\nfn helper(y: i32) -> i32 { h(y) }\n"
        ),
    },
    "java": {
        "src/util/Util.java": (
            "package util;\n\npublic class Util {\n    public static int helper(int x) { return x; }\n"
            "    public static int twice(int x) { return helper(helper(x)); }\n}\n"
        ),
        "src/app/Core.java": (
            "package app;\n\nimport util.Util;\n\nclass Base {\n    int run() { return this.step(); }\n    int step() { return 1; }\n}\n\n"
            "class Child extends Base {\n    int step() { return Util.twice(2); }\n}\n"
        ),
    },
}

# (command, query, expected rows as (entity, site line), resolved only)
EXPECTED: dict[str, list[tuple[str, str, set[tuple[str, int]]]]] = {
    "python": [
        ("callers", "pkg/util.py:helper", {("twice", 6), ("Child.step", 15)}),  # twice calls it twice on line 6; `h` is an alias
        ("callers", "pkg/core.py:helper", set()),  # the same name defined twice: no call resolves to this one
        ("callers", "Base.step", {("Base.run", 7)}),
        ("callers", "inner", {("outer", 21)}),  # a nested function
        ("callers", "twice", {("outer.inner", 20)}),  # `util.twice` through `from pkg import util`
        ("callees", "outer", {("outer.inner", 21)}),
        ("callees", "Child.step", {("helper", 15)}),
    ],
    "javascript": [
        ("callers", "src/util.js:helper", {("twice", 2), ("Child.step", 8)}),
        ("callers", "src/core.js:helper", set()),
        ("callers", "Base.step", {("Base.run", 4)}),
        ("callers", "inner", {("outer", 12)}),
        ("callers", "twice", {("outer.inner", 11)}),  # through the namespace import `u`
        ("callees", "Child.step", {("helper", 8)}),
    ],
    "go": [
        ("callers", "util/util.go:Helper", {("Twice", 5)}),
        ("callers", "main.go:Helper", set()),
        ("callers", "Base.Step", {("Base.Run", 7)}),  # the receiver variable `b` is Go's self
        ("callers", "Twice", {("outer", 11)}),  # through the aliased package import `u`
    ],
    "rust": [
        ("callers", "src/util.rs:helper", {("twice", 3), ("helper", 16)}),  # `h` is `helper as h`
        ("callers", "Base.step", {("Base.run", 7)}),
        ("callers", "inner", {("outer", 13)}),
        ("callers", "twice", {("outer.inner", 12)}),
    ],
    "java": [
        ("callers", "Util.helper", {("Util.twice", 5)}),
        ("callers", "Base.step", {("Base.run", 6)}),
        ("callers", "Util.twice", {("Child.step", 11)}),  # a static call through an imported class
    ],
}
EXPECTED["typescript"] = [(c, q.replace(".js", ".ts"), rows) for c, q, rows in EXPECTED["javascript"]]
# Languages with call edges only: `twice` calls `helper` twice on one line (Elixir's `def` heads are not calls)
for language, rel, text, caller, line in (
    ("kotlin", "src/Util.kt", "fun helper(x: Int): Int = x\n\nfun twice(x: Int): Int {\n    return helper(helper(x))\n}\n", "twice", 4),
    ("swift", "Sources/Util.swift", "func helper(_ x: Int) -> Int { x }\n\nfunc twice(_ x: Int) -> Int {\n    return helper(helper(x))\n}\n", "twice", 4),
    ("scala", "src/Util.scala", "object Util {\n  def helper(x: Int): Int = x\n  def twice(x: Int): Int = helper(helper(x))\n}\n", "Util.twice", 3),
    ("lua", "util.lua", "local function helper(x)\n  return x\nend\n\nfunction twice(x)\n  return helper(helper(x))\nend\n", "twice", 6),
    ("elixir", "lib/util.ex", "defmodule Util do\n  def helper(x), do: x\n\n  def twice(x) do\n    helper(helper(x))\n  end\nend\n", "Util.twice", 5),
    ("haskell", "src/Util.hs", "module Util where\n\nhelper :: Int -> Int\nhelper x = x\n\ntwice :: Int -> Int\ntwice x = helper (helper x)\n", "twice", 7),
    ("zig", "src/util.zig", "fn helper(x: i32) i32 {\n    return x;\n}\n\nfn twice(x: i32) i32 {\n    return helper(helper(x));\n}\n", "twice", 6),
    ("dart", "lib/util.dart", "int helper(int x) {\n  return x;\n}\n\nint twice(int x) {\n  return helper(helper(x));\n}\n", "twice", 6),
    ("csharp", "src/Util.cs", "class Util\n{\n    int helper(int x) { return x; }\n\n    int twice(int x)\n    {\n        return this.helper(this.helper(x));  // `this` is no named node in C#\n    }\n}\n", "Util.twice", 7),
    ("objc", "Util.m", "@implementation Util\n- (int)helper:(int)x {\n    return x;\n}\n- (int)twice:(int)x {\n    return [self helper:[self helper:x]];\n}\n@end\n", "Util.twice", 6),
    ("bash", "bin/util.sh", 'helper() {\n  echo "$1"\n}\n\ntwice() {\n  helper "$(helper "$1")"\n}\n', "twice", 6),
):
    PROJECTS[language] = {rel: text}
    callee = caller.replace("twice", "helper")
    EXPECTED[language] = [("callers", "helper", {(caller, line)}), ("callees", caller, {(callee, line)})]
# CommonJS: `require` binds a whole module or destructures its exports (`{ helper: h }` renames)
PROJECTS["javascript-commonjs"] = {
    "src/util.js": "function helper(x) { return x; }\nfunction twice(x) { return helper(helper(x)); }\nmodule.exports = { helper, twice };\n",
    "src/core.js": PROJECTS["javascript"]["src/core.js"].replace(
        "import { helper as h } from './util';\nimport * as u from './util';\n", "const { helper: h } = require('./util');\nconst u = require('./util');\n"),
}
EXPECTED["javascript-commonjs"] = EXPECTED["javascript"]
# TypeScript's ESM convention: `./util.js` in the import names `util.ts` on disk
PROJECTS["typescript-esm"] = {f: text.replace("from './util'", "from './util.js'") for f, text in PROJECTS["typescript"].items()}
EXPECTED["typescript-esm"] = EXPECTED["typescript"]


def load(root: Path, files: dict[str, str]) -> Catalog:
    catalog = Catalog(root)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        parsed = parse_source(text.encode(), rel, language_for(rel) or "text", "h")
        catalog.replace(parsed.entities, [])
        catalog.replace_edges({rel: parsed.edges})
    return catalog



def resolved_callers(catalog: Catalog, *names: str) -> dict[str, list[tuple[str, int]]]:
    """Each name's resolved callers, as (holder, site line)."""
    return {q: [(r.entity, r.site_line) for r in graph.callers(catalog, q).rows if r.resolved] for q in names}

@pytest.mark.parametrize("language", sorted(PROJECTS))
def test_hand_checked_callers_and_callees(tmp_path: Path, language: str) -> None:
    catalog = load(tmp_path, PROJECTS[language])
    for command, query, expected in EXPECTED[language]:
        res = getattr(graph, command)(catalog, query)
        assert res.targets, (language, query, res.note)
        got = {(r.entity, r.site_line) for r in res.rows if r.resolved}
        assert got == expected, (language, command, query, got)


def test_unresolved_calls_are_listed_and_marked_never_guessed(tmp_path: Path) -> None:
    catalog = load(tmp_path, PROJECTS["python"])
    rows = graph.callers(catalog, "pkg/core.py:helper").rows
    assert [(r.entity, r.resolved, r.via) for r in rows] == [("helper", False, "obj.helper")]
    assert "[unresolved: obj.helper]" in graph.render(graph.callers(catalog, "pkg/core.py:helper"))


def test_edges_follow_edits_and_deletions(tmp_path: Path) -> None:
    catalog = load(tmp_path, PROJECTS["python"])
    catalog.replace_edges({"pkg/util.py": parse_source(b"def helper(x):\n    return x\n\n\ndef twice(x):\n    return x\n",
                                                        "pkg/util.py", "python", "h").edges})
    resolved = lambda: {(r.entity, r.site_line) for r in graph.callers(catalog, "pkg/util.py:helper").rows if r.resolved}  # noqa: E731
    assert resolved() == {("Child.step", 15)}
    assert catalog.drop_edges_except({"pkg/util.py"}) == 1  # core.py; __init__.py has no edges
    assert resolved() == set()


def test_impact_reaches_callers_of_callers_and_tests(tmp_path: Path) -> None:
    files = dict(PROJECTS["python"])
    files["tests/test_core.py"] = "from pkg.core import outer\n\n\ndef test_outer():\n    assert outer() == 3\n"
    catalog = load(tmp_path, files)
    res = graph.impact(catalog, "pkg/util.py:helper", depth=3)
    assert {(r.entity, r.depth) for r in res.rows} == {("twice", 1), ("Child.step", 1), ("outer.inner", 2), ("outer", 3)}
    res4 = graph.impact(catalog, "pkg/util.py:helper", depth=4)
    assert [t.entity for t in res4.tests] == ["test_outer"] and res4.tests[0].site_line == 5


@pytest.fixture(scope="module")
def requests_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    from assay.flows.evaluate import eval_home
    from assay.stages.evaluate.sdists import prepare_corpus

    try:
        root = prepare_corpus("requests==2.32.5", eval_home())
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"the requests sdist is not cached and cannot be downloaded here: {exc}")
    catalog = Catalog(tmp_path_factory.mktemp("requests-graph"))
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        parsed = parse_source(path.read_bytes(), rel, "python", "h")
        catalog.replace(parsed.entities, [])
        catalog.replace_edges({rel: parsed.edges})
    return catalog


def test_requests_callers_of_merge_setting(requests_catalog: Catalog) -> None:
    res = graph.callers(requests_catalog, "merge_setting")
    assert [(r.entity, r.site_file, r.site_line) for r in res.rows if r.resolved] == [
        ("merge_hooks", "src/requests/sessions.py", 103),
        ("Session.prepare_request", "src/requests/sessions.py", 490),
        ("Session.prepare_request", "src/requests/sessions.py", 493),
        ("Session.prepare_request", "src/requests/sessions.py", 494),
        ("Session.merge_environment_settings", "src/requests/sessions.py", 774),
        ("Session.merge_environment_settings", "src/requests/sessions.py", 775),
        ("Session.merge_environment_settings", "src/requests/sessions.py", 776),
        ("Session.merge_environment_settings", "src/requests/sessions.py", 777),
    ]


def test_requests_impact_of_get_environ_proxies(requests_catalog: Catalog) -> None:
    res = graph.impact(requests_catalog, "get_environ_proxies")
    depth1 = {(r.entity, r.site_line) for r in res.rows if r.depth == 1}
    assert depth1 == {("Session.merge_environment_settings", 760), ("resolve_proxies", 872),
                      ("TestGetEnvironProxies.test_bypass", 232), ("TestGetEnvironProxies.test_not_bypass", 243),
                      ("TestGetEnvironProxies.test_bypass_no_proxy_keyword", 255),
                      ("TestGetEnvironProxies.test_not_bypass_no_proxy_keyword", 272)}
    tests = {(t.entity, t.resolved) for t in res.tests}
    assert ("TestGetEnvironProxies.test_bypass", True) in tests
    assert ("TestRequests.test_env_cert_bundles", False) in tests  # calls `session.merge_environment_settings`


def test_cli_and_index_flow_build_the_graph(project: Path) -> None:
    run_index(str(project))
    runner = CliRunner()
    out = runner.invoke(app, ["callers", "retry_call", str(project)])
    assert out.exit_code == 0, out.output
    assert "Session.send  pkg/session.py:22  (call at pkg/session.py:24)" in out.output and "1 site(s)" in out.output
    missing = runner.invoke(app, ["callers", "NoSuchThing", str(project)])
    assert "no definition named 'NoSuchThing'" in missing.output
    report = run_query(str(project), "How does retry_call back off between attempts?")
    assert "[retry_call] " in report.text and "called by 1 site(s)" in report.text


def test_called_by_counts_are_remembered_until_the_index_changes(project: Path) -> None:
    from assay.stages.index.store import index_generation

    run_index(str(project))
    catalog = Catalog(project)
    retry = next(e for e in catalog.by_name("retry_call") if e.kind == "function")
    memo = (str(project), index_generation(project))
    assert graph.called_by_counts(catalog, [retry.id], memo=memo) == {retry.id: 1}

    class NoGraph:  # a second ask within the same index generation must not resolve anything again
        def __getattr__(self, name):
            raise AssertionError(f"catalog.{name} used although the count is remembered")

    assert graph.called_by_counts(NoGraph(), [retry.id], memo=memo) == {retry.id: 1}
    (project / "pkg" / "again.py").write_text("from pkg.retry import retry_call\n\n\ndef twice(f):\n    return retry_call(f)\n")
    run_index(str(project))
    assert index_generation(project) != memo[1]
    report = run_query(str(project), "How does retry_call back off between attempts?")
    assert "[retry_call] " in report.text and "called by 2 site(s)" in report.text
    catalog.close()


@pytest.mark.parametrize("language", ["python", "typescript", "typescript-esm", "javascript-commonjs"])
def test_import_centrality_counts_the_files_that_import_each_file(tmp_path: Path, language: str) -> None:
    files = PROJECTS[language]
    util = next(f for f in files if "/util." in f)
    user = next(f for f in files if "import" in files[f] or "require(" in files[f])
    catalog = load(tmp_path, files)
    assert graph.file_importers(catalog) == {util: 1}
    assert graph.import_centrality(catalog, full_at=0) == {util: 1.0}
    folder, suffix = user.rsplit("/", 1)[0], user[user.rfind("."):]
    load(tmp_path, {f"{folder}/extra{i}{suffix}": files[user] for i in range(3)})  # three more files import util
    load(tmp_path, {f"{folder}/leaf{suffix}": files[user].replace("util", "extra0")})  # one imports extra0
    assert graph.file_importers(catalog) == {util: 4, f"{folder}/extra0{suffix}": 1}
    central = graph.import_centrality(catalog, full_at=0)
    assert central[util] == 1.0 and central[f"{folder}/extra0{suffix}"] == pytest.approx(math.log(2) / math.log(5))


def test_a_few_importers_make_a_file_only_somewhat_central(tmp_path: Path) -> None:
    """Centrality is a share of the top file's importers or of `CENTRALITY_FULL_AT`, whichever is more: in a
    small crate the most-imported file (regex's `exec.rs`, 7) is no hub like zod's `util.ts` (57)."""
    files = {"pkg/util.py": "def helper(x):\n    return x\n",
             **{f"pkg/user{i}.py": "from pkg import util\n\n\ndef run():\n    return util.helper(1)\n" for i in range(3)}}
    catalog = load(tmp_path, files)
    assert graph.import_centrality(catalog) == {"pkg/util.py": pytest.approx(math.log(4) / math.log(1 + graph.CENTRALITY_FULL_AT))}
    load(tmp_path, {f"pkg/more{i}.py": files["pkg/user0.py"] for i in range(graph.CENTRALITY_FULL_AT)})
    assert graph.import_centrality(catalog) == {"pkg/util.py": 1.0}  # 33 importers: as central as it gets


def test_workspace_centrality_is_computed_once_per_index_generation(project: Path) -> None:
    run_index(str(project))
    first = graph.workspace_centrality(project)
    assert list(first) == ["pkg/retry.py"] and graph.workspace_centrality(project) is first
    (project / "pkg" / "again.py").write_text("from pkg.retry import retry_call\nfrom pkg.session import Session\n")
    run_index(str(project))
    again = graph.workspace_centrality(project)
    assert again is not first and again["pkg/retry.py"] > first["pkg/retry.py"] and 0 < again["pkg/session.py"] < again["pkg/retry.py"]


def test_importing_a_submodule_by_name_counts_for_the_submodule(tmp_path: Path) -> None:
    """`from pkg import util` imports `pkg/util.py`, not the package's `__init__`; `from pkg import VERSION`
    imports the package."""
    catalog = load(tmp_path, {"pkg/__init__.py": "VERSION = '1'\n", "pkg/util.py": "def helper(x):\n    return x\n",
                              "app/main.py": "from pkg import util\nfrom pkg import VERSION\n\n\ndef run():\n    return util.helper(1)\n",
                              "pkg/sub/mod.py": "from .. import util\n\n\ndef go():\n    return util.helper(2)\n"})
    assert graph.file_importers(catalog) == {"pkg/util.py": 2, "pkg/__init__.py": 1}


def test_tests_that_import_a_module_do_not_make_it_central(tmp_path: Path) -> None:
    """A test imports what it tests; lz4's tests made its `frame/__init__.py` wrapper the most central file, above
    the C library everything is built on."""
    catalog = load(tmp_path, {"pkg/util.py": "def helper(x):\n    return x\n",
                              "pkg/wrapper.py": "def wrap(x):\n    return x\n",
                              "pkg/core.py": "from pkg import util\n\n\ndef run():\n    return util.helper(1)\n",
                              **{f"tests/test_wrap{i}.py": "from pkg import wrapper\n\n\ndef test_wrap():\n    assert wrapper.wrap(1)\n"
                                 for i in range(3)}})
    assert graph.file_importers(catalog) == {"pkg/util.py": 1}


def test_a_go_import_names_a_package_folder_not_a_file_and_never_the_standard_library(tmp_path: Path) -> None:
    """`import "errors"` is Go's own package, not the workspace's `errors.go`; an import path brings in its
    package's files (found by the path's tail in a module checkout, or by the whole path in a GOPATH tree) but not
    their tests."""
    pkg = "package web\n\nfunc Handle() int { return 1 }\n"
    catalog = load(tmp_path, {
        "errors.go": "package web\n\ntype Error struct{}\n",
        "binding/json.go": "package binding\n\nfunc Decode() int { return 1 }\n",
        "binding/json_test.go": "package binding\n\nfunc TestDecode() {}\n",
        "src/github.com/acme/kit/render/html.go": "package render\n\nfunc HTML() int { return 1 }\n",
        "context.go": pkg.replace("Handle", "Context").replace('package web\n', 'package web\n\nimport (\n\t"errors"\n\t"net/http"\n)\n'),
        "router.go": pkg.replace('package web\n', 'package web\n\nimport (\n\t"errors"\n\t"example.com/web/binding"\n)\n'),
        "render.go": pkg.replace('package web\n', 'package web\n\nimport "github.com/acme/kit/render"\n'),
    })
    assert graph.file_importers(catalog) == {"binding/json.go": 1, "src/github.com/acme/kit/render/html.go": 1}


def test_commonjs_requires_are_imports() -> None:
    src = (b"var methods = require('./utils').methods;\nvar View = require('./view');\nconst { a, b: c } = require('./u2');\n"
           b"var debug = require('debug')('app');\nconst x = load('./not-a-require');\n")
    edges = parse_source(src, "lib/app.js", "javascript", "h").edges
    assert {(e.name, e.alias, e.module) for e in edges if e.kind == "import"} == {
        ("methods", "methods", "./utils"), ("view", "View", "./view"), ("a", "", "./u2"), ("b", "c", "./u2")}


def test_an_index_from_an_older_parser_with_edges_still_answers_graph_questions(project: Path) -> None:
    """Parser v4 reads more imports than v3, but a v3 index already has a graph: it answers until re-indexed;
    only an index from before edges existed is refused."""
    import json

    from assay.stages.index.store import manifest_path

    run_index(str(project))
    path = manifest_path(project)
    data = json.loads(path.read_text())
    for version, works in ((graph.FIRST_GRAPH_PARSER, True), (graph.FIRST_GRAPH_PARSER - 1, False)):
        path.write_text(json.dumps({**data, "parser": version}))
        if works:
            assert graph.query_workspace(project, "callers", "retry_call").rows
        else:
            with pytest.raises(ValueError, match="before the code graph existed"):
                graph.query_workspace(project, "callers", "retry_call")


# language -> (files, importers expected): an import that names a file by path or by namespace, and ones that do not
PATH_IMPORT_PROJECTS: dict[str, tuple[dict[str, str], dict[str, int]]] = {
    # `"lz4.h"` beside the includer, `"common/xxhash.h"` under an include folder; including a header depends on the
    # source file beside it; `<stdio.h>` is the system's, and `stdio.h` in the tree is not it
    "c": ({"lib/lz4.h": "int LZ4_compress(int x);\n", "lib/lz4.c": '#include "lz4.h"\nint LZ4_compress(int x) { return x; }\n',
           "lib/common/xxhash.h": "int XXH32(int x);\n", "stdio.h": "int printf(int x);\n",
           "lib/lz4frame.c": '#include <stdio.h>\n#include "lz4.h"\n#include "common/xxhash.h"\nint f(int x) { return LZ4_compress(x); }\n',
           "programs/cli.c": '#include "xxhash.h"\n#include "lz4.h"\nint main(void) { return LZ4_compress(1); }\n'},
          {"lib/lz4.h": 3, "lib/lz4.c": 2, "lib/common/xxhash.h": 2}),  # lz4.c does not depend on itself
    # `require "rack/utils"` from the load path (lib/), `require_relative "utils"` beside the file, `autoload`;
    # `require "json"` is the standard library's, not a `json.rb` deeper in the tree
    "ruby": ({"lib/rack/utils.rb": "module Rack\n  module Utils\n  end\nend\n", "lib/rack/request.rb": "module Rack\nend\n",
              "lib/rack.rb": "module Rack\n  autoload :Request, 'rack/request'\nend\n",
              "lib/rack/response.rb": "require 'rack/utils'\nrequire 'json'\nmodule Rack\nend\n",
              "lib/rack/files.rb": "require_relative 'utils'\nmodule Rack\nend\n",
              "lib/rack/handler/json.rb": "require 'json'\nmodule Rack\nend\n"},
             {"lib/rack/utils.rb": 2, "lib/rack/request.rb": 1}),
    # PSR-4: the namespace's tail names the file under a prefix the import does not show; a bare class name counts
    # only when one file has it
    "php": ({"Output/OutputInterface.php": "<?php\nnamespace Symfony\\Component\\Console\\Output;\ninterface OutputInterface {}\n",
             "Application.php": "<?php\nnamespace Symfony\\Component\\Console;\nuse Symfony\\Component\\Console\\Output\\OutputInterface;\n"
                                "use Psr\\Log\\LoggerInterface;\nclass Application {}\n",
             "Command/Command.php": "<?php\nnamespace Symfony\\Component\\Console\\Command;\nuse Symfony\\Component\\Console\\Application;\n"
                                    "use Symfony\\Component\\Console\\Output\\OutputInterface;\nclass Command {}\n",
             "Logger/LoggerInterface.php": "<?php\nnamespace Other;\ninterface LoggerInterface {}\n",
             "Log/LoggerInterface.php": "<?php\nnamespace Mine;\ninterface LoggerInterface {}\n"},
            {"Output/OutputInterface.php": 2, "Application.php": 1, "Log/LoggerInterface.php": 1}),
    "lua": ({"pl/utils.lua": "local M = {}\nfunction M.quote(s) return s end\nreturn M\n", "pl/init.lua": "return {}\n",
             "pl/tablex.lua": 'local utils = require "pl.utils"\nlocal x = require("lpeg")\nreturn {}\n',
             "pl/app.lua": 'local utils = require("pl.utils")\nlocal pl = require "pl"\nreturn {}\n'},
            {"pl/utils.lua": 2, "pl/init.lua": 1}),
    "zig": ({"std/json.zig": 'const std = @import("std");\nconst Scanner = @import("json/Scanner.zig");\n',
             "std/json/Scanner.zig": 'const std = @import("std");\nconst json = @import("../json.zig");\n'},
            {"std/json/Scanner.zig": 1, "std/json.zig": 1}),
    # Mix lays `Mix.Project` out as `mix/project.ex`, `HTTPServer` as `http_server.ex`
    "elixir": ({"lib/mix/lib/mix/project.ex": "defmodule Mix.Project do\nend\n",
                "lib/mix/lib/mix/http_server.ex": "defmodule Mix.HTTPServer do\nend\n",
                "lib/mix/lib/mix/tasks/compile.ex": "defmodule Mix.Tasks.Compile do\n  alias Mix.Project\n  import Mix.HTTPServer\n"
                                                    "  use GenServer\nend\n"},
               {"lib/mix/lib/mix/project.ex": 1, "lib/mix/lib/mix/http_server.ex": 1}),
    # `import a.b.C`: the module `a.b` is a folder, the class `C` its file
    "java": ({"src/org/jpype/manager/TypeManager.java": "package org.jpype.manager;\npublic class TypeManager {}\n",
              "src/org/jpype/JPypeContext.java": "package org.jpype;\nimport org.jpype.manager.TypeManager;\nimport java.util.List;\n"
                                                 "public class JPypeContext {}\n"},
             {"src/org/jpype/manager/TypeManager.java": 1}),
    "kotlin": ({"expo/modules/kotlin/Promise.kt": "package expo.modules.kotlin\nclass Promise\n",
                "expo/modules/kotlin/AppContext.kt": "package expo.modules.kotlin\nimport expo.modules.kotlin.Promise\n"
                                                     "import kotlinx.coroutines.Job\nclass AppContext\n"},
               {"expo/modules/kotlin/Promise.kt": 1}),
}


@pytest.mark.parametrize("language", sorted(PATH_IMPORT_PROJECTS))
def test_imports_by_path_or_namespace_count_for_the_file_they_name(tmp_path: Path, language: str) -> None:
    files, expected = PATH_IMPORT_PROJECTS[language]
    catalog = load(tmp_path, files)
    assert graph.file_importers(catalog) == expected
    # centrality counts module imports only: these languages import types and headers, and their hubs are
    # interfaces, exceptions and umbrella headers (measured in `graph.CENTRAL_SOURCES`)
    assert graph.import_centrality(catalog) == {}


def test_a_ruby_require_names_a_file_from_a_load_root(tmp_path: Path) -> None:
    """`require` searches $LOAD_PATH (a gem's lib/, the spec/ or test/ folder rspec and minitest add), so
    `require "json"` is no `json.rb` deeper in the tree, and `require "spec_helper"` is `spec/spec_helper.rb`."""
    catalog = load(tmp_path, {"lib/rack/utils.rb": "module Rack\nend\n", "lib/rack/handler/json.rb": "module Rack\nend\n",
                              "spec/spec_helper.rb": "require 'rack/utils'\n", "spec/rack/utils_spec.rb": "require 'spec_helper'\n"})
    found = graph.Graph(catalog)
    assert found.module_files("rack/utils", "spec/spec_helper.rb") == ["lib/rack/utils.rb"]
    assert found.module_files("spec_helper", "spec/rack/utils_spec.rb") == ["spec/spec_helper.rb"]
    assert found.module_files("json", "lib/rack/utils.rb") == []
    assert found.module_files("handler/json", "lib/rack/utils.rb") == []  # from rack/, not a load root


def test_a_module_bound_by_a_path_import_resolves_its_callees(tmp_path: Path) -> None:
    """`local utils = require "pl.utils"` then `utils.quote(s)`, `const Scanner = @import("Scanner.zig")` then
    `Scanner.init()`: the call resolves into the file the import names."""
    catalog = load(tmp_path, {"pl/utils.lua": "local M = {}\nfunction M.quote(s) return s end\nreturn M\n",
                              "pl/app.lua": 'local utils = require("pl.utils")\nlocal function run(s) return utils.quote(s) end\n'
                                            "return run\n",
                              "json/Scanner.zig": "pub fn init() u8 {\n    return 1;\n}\n",
                              "json.zig": 'const Scanner = @import("json/Scanner.zig");\npub fn parse() u8 {\n    return Scanner.init();\n}\n'})
    assert [r.site_file for r in graph.callers(catalog, "quote").rows if r.resolved] == ["pl/app.lua"]
    assert [r.site_file for r in graph.callers(catalog, "init").rows if r.resolved] == ["json.zig"]


def test_qualified_receivers_and_php_self_calls_resolve(tmp_path: Path) -> None:
    """`Mix.Utils.bar()` and, after `alias Mix.Utils`, `Utils.foo()` name Elixir's `Mix.Utils`; Ruby's
    `Rack::Utils.escape` names `Rack::Utils`; PHP's `$this->step()` and `static::step()` the enclosing class."""
    catalog = load(tmp_path, {
        "lib/mix/utils.ex": "defmodule Mix.Utils do\n  def foo(x), do: x\n  def bar, do: 1\nend\n",
        "lib/mix/project.ex": "defmodule Mix.Project do\n  alias Mix.Utils\n  def config do\n    Utils.foo(1)\n    Mix.Utils.bar()\n  end\nend\n",
        "lib/rack/utils.rb": "module Rack\n  module Utils\n    def self.escape(s)\n      s\n    end\n  end\nend\n",
        "lib/rack/request.rb": "module Rack\n  class Request\n    def path\n      Rack::Utils.escape('/')\n    end\n  end\nend\n",
        "src/Foo.php": "<?php\nnamespace A;\nclass Foo {\n  public function run() { return $this->step() + static::step(); }\n"
                       "  public function step() { return 1; }\n}\n"})
    assert resolved_callers(catalog, "foo", "bar", "escape", "step") == {
        "foo": [("Mix.Project.config", 4)], "bar": [("Mix.Project.config", 5)],
        "escape": [("Rack.Request.path", 4)], "step": [("A.Foo.run", 4), ("A.Foo.run", 4)]}


def test_a_python_receiver_resolves_through_the_class_the_code_says_it_holds(tmp_path: Path) -> None:
    """`s: Session` as a parameter, `x = Session()` in the function, `self.session = Session()` or a class-level
    `session: Session` in the class: the call goes to `Session.send`. An object nothing types stays unresolved."""
    catalog = load(tmp_path, {
        "pkg/sessions.py": "class Session:\n    def send(self):\n        return 1\n",
        "pkg/client.py": (
            "from pkg.sessions import Session\n\n\ndef use(s: Session):\n    return s.send()\n\n\n"
            "def make():\n    x = Session()\n    return x.send()\n\n\n"
            "class Client:\n    def __init__(self):\n        self.session = Session()\n\n    def go(self):\n        return self.session.send()\n\n\n"
            "class Pool:\n    spare: Session\n\n    def go(self):\n        return self.spare.send()\n\n\n"
            "def other(y):\n    return y.send()\n\n\ndef kw(y):\n    wrap(y=Session())\n    return y.send()\n")})
    rows = graph.callers(catalog, "Session.send").rows
    assert sorted((r.entity, r.site_line) for r in rows if r.resolved) == [
        ("Client.go", 18), ("Pool.go", 25), ("make", 10), ("use", 5)]
    assert [(r.entity, r.resolved) for r in rows if r.entity in ("other", "kw")] == [("other", False), ("kw", False)]


def test_java_and_kotlin_see_their_packages_names_without_an_import(tmp_path: Path) -> None:
    """A class of the caller's package (its folder, by convention) needs no import in Java or Kotlin, nor does a
    Kotlin top-level function; another package's does, and a Java bare call is a method, never another file's."""
    catalog = load(tmp_path, {
        "src/app/Util.java": "package app;\n\npublic class Util {\n    static int helper(int x) { return x; }\n}\n",
        "src/app/Core.java": "package app;\n\nclass Core {\n    int run() { return Util.helper(1); }\n}\n",
        "src/other/Far.java": "package other;\n\nclass Far {\n    int run() { return Util.helper(2); }\n}\n",
        "src/app/text.kt": "package app\n\nfun shout(s: String) = s\n",
        "src/app/Main.kt": "package app\n\nclass Main {\n    fun go() = shout(\"hi\")\n}\n",
        "src/other/Away.kt": "package other\n\nfun away() = shout(\"no\")\n"})
    assert resolved_callers(catalog, "helper", "shout") == {"helper": [("Core.run", 4)], "shout": [("Main.go", 4)]}


def test_a_receiver_resolves_from_the_callers_enclosing_namespaces(tmp_path: Path) -> None:
    """C#'s `Runtime.Call()` inside `namespace Py.Runtime` is `Py.Runtime.Runtime.Call`, in whatever file; Ruby's
    `Utils.escape` inside `module Rack` is `Rack::Utils.escape`. A namespace the caller is not in is no match."""
    catalog = load(tmp_path, {
        "src/Runtime.cs": "namespace Py.Runtime\n{\n    static class Runtime\n    {\n        public static int Call(int x) { return x; }\n    }\n}\n",
        "src/Engine.cs": "namespace Py.Runtime\n{\n    class Engine\n    {\n        int Run() { return Runtime.Call(1); }\n    }\n}\n",
        "src/Other.cs": "namespace Elsewhere\n{\n    class Other\n    {\n        int Run() { return Runtime.Call(2); }\n    }\n}\n",
        "lib/rack/utils.rb": "module Rack\n  module Utils\n    def self.escape(s)\n      s\n    end\n  end\nend\n",
        "lib/rack/files.rb": "module Rack\n  class Files\n    def get\n      Utils.escape('/')\n    end\n  end\nend\n"})
    assert resolved_callers(catalog, "Call", "escape") == {"Call": [("Py.Runtime.Engine.Run", 5)], "escape": [("Rack.Files.get", 4)]}

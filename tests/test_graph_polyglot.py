"""The graph commands on non-Python projects: a base class named from inside a namespace, module or outer class;
names as their language writes them (`a::C::m`, Go's `pkg.(*C).m` with its package, C++'s `f(int) const`, `f<int>`);
methods passed as values and Go sentinels as references, Java field reads not; `history`'s ambiguity hint shown on
the real candidates; folders named like a reverse domain; a Rust `#[test]` beside the code as "only tests"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.artifacts import Candidate, CodeFacts, Judgment, PassageScores, RankedPassage, Selection, Thresholds
from assay.stages.core.path_roles import is_vendored, layout_folders
from assay.stages.index.parse import parse_source
from assay.stages.query import graph
from assay.stages.query.gaps import missing_lines
from tests.test_graph import load


def referrers(catalog, query: str) -> set[tuple[str, int, str]]:
    """Resolved `references` rows as (holder, site line, relation)."""
    return {(r.entity, r.site_line, r.relation) for r in graph.references(catalog, query).rows if r.resolved}


# -- 3: a base class seen from the subclass's enclosing scope ------------------------------------------------------

NESTED_BASES = {
    "cpp": ({"a.h": "namespace ns {\nclass NBase { public: virtual void go() = 0; };\n"
                    "class NImpl : public NBase { public: void go() override {} };\n}\n"}, "NBase", ("ns.NImpl", 3)),
    "csharp": ({"S.cs": "namespace Kv.Storage\n{\n    public interface IStore { string Get(string key); }\n"
                        "    public class MemoryStore : IStore { public string Get(string key) { return key; } }\n}\n"},
               "IStore", ("Kv.Storage.MemoryStore", 4)),
    "php": ({"S.php": "<?php\nnamespace App\\Storage;\n\ninterface StoreInterface { public function get(string $k); }\n\n"
                      "class MemoryStore implements StoreInterface\n{\n    public function get(string $k) { return null; }\n}\n"},
            "StoreInterface", ("App.Storage.MemoryStore", 6)),
    "ruby": ({"lib/store.rb": "module Kv\n  class Store\n    def get(key); end\n  end\n\n  class MemoryStore < Store\n"
                              "    def get(key)\n      key\n    end\n  end\nend\n"}, "Store", ("Kv.MemoryStore", 6)),
    "java": ({"MemoryStore.java": "public class MemoryStore {\n    interface Listener { void onPut(String k); }\n"
                                  "    static class CountingListener implements Listener { public void onPut(String k) {} }\n}\n"},
             "Listener", ("MemoryStore.CountingListener", 3)),
}


@pytest.mark.parametrize("language", sorted(NESTED_BASES))
def test_base_in_enclosing_scope_resolves(tmp_path: Path, language: str) -> None:
    files, base, (subclass, line) = NESTED_BASES[language]
    catalog = load(tmp_path, files)
    assert (subclass, line, "inherit") in referrers(catalog, base)


def test_base_is_never_the_subclass_itself(tmp_path: Path) -> None:
    """`class Base : public ::Base` inside `ns`: the walk from `ns` meets `ns.Base` itself first."""
    catalog = load(tmp_path, {"a.h": "class Base { public: virtual void run() = 0; };\n"
                                     "namespace ns {\nclass Base : public ::Base {};\n}\n"})
    assert referrers(catalog, "ns.Base") == set()
    assert ("ns.Base", 3, "inherit") in referrers(catalog, "a.h:Base")


def test_base_in_namespace_declared_in_another_file(tmp_path: Path) -> None:
    """C# namespaces and C++ namespaces span files: the base is the namespace's, wherever it is declared; a base
    qualified from outside (`ns::NBase`) resolves as a qualified call's receiver does."""
    catalog = load(tmp_path, {
        "I.cs": "namespace Kv.Storage { public interface IStore { string Get(string key); } }\n",
        "M.cs": "namespace Kv.Storage { public class Mem : IStore { public string Get(string key) { return key; } } }\n",
        "b.h": "namespace ns { class NBase { public: virtual void go() = 0; }; }\n",
        "c.h": '#include "b.h"\nnamespace ns { class Other : public NBase {}; }\nclass Outside : public ns::NBase {};\n',
    })
    assert referrers(catalog, "IStore") == {("Kv.Storage.Mem", 1, "inherit")}
    assert referrers(catalog, "NBase") == {("ns.Other", 2, "inherit"), ("Outside", 3, "inherit")}


def test_python_nested_class_base_is_not_taken_from_another_module(tmp_path: Path) -> None:
    """Python modules share no qualified names: `A.Base` of another module is no base of `A.Sub` here."""
    catalog = load(tmp_path, {"one.py": "class A:\n    class Base:\n        pass\n",
                              "two.py": "class A:\n    class Sub(Base):\n        pass\n"})
    assert referrers(catalog, "A.Base") == set()


# -- 6: names as their language writes them --------------------------------------------------------------------

CPP_FILES = {
    "s.h": "namespace kv { namespace http {\nclass Server { public: void handle(); void routes(); };\n} }\n",
    "s.cpp": '#include "s.h"\nnamespace kv::http {\nvoid Server::handle() {}\nvoid Server::routes() { handle(); }\n}\n',
}
GO_FILES = {
    "api/s.go": "package api\n\ntype Server struct{}\n\nfunc (s *Server) handleKV() {}\n\nfunc (s *Server) routes() { s.handleKV() }\n",
}
RUST_FILES = {
    "lib.rs": "pub struct MemoryStore { n: usize }\n\nimpl MemoryStore {\n    fn check_room(&self) -> bool { self.n < 9 }\n"
              "    pub fn put(&mut self) { if self.check_room() { self.n += 1; } }\n}\n",
}


@pytest.mark.parametrize(("files", "query", "expected"), [
    (CPP_FILES, "kv::http::Server::handle", ("kv.http.Server.routes", 4)),
    (CPP_FILES, "::kv::http::Server::handle", ("kv.http.Server.routes", 4)),
    (CPP_FILES, "s.cpp:kv::http::Server::handle", ("kv.http.Server.routes", 4)),
    (CPP_FILES, "Server::handle", ("kv.http.Server.routes", 4)),
    (GO_FILES, "(*Server).handleKV", ("Server.routes", 7)),
    (GO_FILES, "api.(*Server).handleKV", ("Server.routes", 7)),
    (GO_FILES, "github.com/acme/kv/api.(*Server).handleKV", ("Server.routes", 7)),
    (GO_FILES, "api/s.go:(*Server).handleKV", ("Server.routes", 7)),
    (RUST_FILES, "MemoryStore::check_room", ("MemoryStore.put", 5)),
])
def test_native_qualified_names_are_looked_up(tmp_path: Path, files: dict[str, str], query: str,
                                              expected: tuple[str, int]) -> None:
    catalog = load(tmp_path, files)
    rows = graph.callers(catalog, query).rows
    assert {(r.entity, r.site_line) for r in rows if r.resolved} == {expected}
    assert expected[0] in {r.entity for r in graph.impact(catalog, query).rows}


def test_dotted_name_keeps_other_names() -> None:
    assert graph.dotted_name("Session.send") == "Session.send"
    assert graph.dotted_name("pkg/mod.py:send") == "pkg/mod.py:send"
    assert graph.dotted_name("src/app.py:120") == "src/app.py:120"
    assert graph.dotted_name("a::b::C::m") == "a.b.C.m"
    assert graph.dotted_name("pkg.(*T).M") == "T.M"


def test_unknown_native_name_is_one_line_error(tmp_path: Path) -> None:
    catalog = load(tmp_path, CPP_FILES)
    with pytest.raises(ValueError, match=r"no definition named 'kv::nope'"):
        graph.callers(catalog, "kv::nope")


# -- 8: methods passed as values, Go sentinels returned or compared --------------------------------------------

GO_REFS = {
    "api/s.go": """package api

import "errors"

var ErrNotFound = errors.New("not found")

type Server struct{ mux map[string]func() }

func (s *Server) handleKV() {}

func (s *Server) routes() {
	s.mux["/kv"] = s.handleKV
	register("/kv", s.handleKV)
}

func register(p string, h func()) {}

func find(ok bool) error {
	if !ok {
		return ErrNotFound
	}
	return nil
}
""",
    "api/t.go": """package api

func (s *Server) more() { h := s.handleKV; register("/x", h) }

func check(err error) bool { return err != ErrNotFound }

type Other struct{}

func (o *Other) handleKV() {}
""",
}


def test_go_method_value_is_a_reference(tmp_path: Path) -> None:
    catalog = load(tmp_path, GO_REFS)
    assert referrers(catalog, "Server.handleKV") == {("Server.routes", 12, "ref"), ("Server.routes", 13, "ref"),
                                                      ("Server.more", 3, "ref")}
    assert referrers(catalog, "Other.handleKV") == set()  # `s.handleKV` is the Server's


def test_go_sentinel_returned_or_compared_is_a_reference(tmp_path: Path) -> None:
    catalog = load(tmp_path, GO_REFS)
    assert referrers(catalog, "ErrNotFound") == {("find", 20, "ref"), ("check", 5, "ref")}


PY_REFS = """import threading


class App:
    size = 3

    def handle_kv(self):
        pass

    def routes(self, router):
        router.add("/kv", self.handle_kv)
        self.callback = self.handle_kv
        threading.Thread(target=self.handle_kv)
        self.handle_kv()
        grown = self.size + 1
        print(self.size, grown)
"""


def test_python_method_value_is_a_reference_and_a_call_is_not(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"app.py": PY_REFS})
    assert referrers(catalog, "handle_kv") == {("App.routes", 11, "ref"), ("App.routes", 12, "ref"),
                                               ("App.routes", 13, "ref"), ("App.routes", 14, "call")}


def test_only_members_passed_or_assigned_become_refs() -> None:
    """A member read in an expression is no ref, nor a called member (that is a call)."""
    edges = parse_source(PY_REFS.encode(), "app.py", "python", "h").edges
    refs = {(e.name, e.line, e.receiver) for e in edges if e.kind == "ref"}
    assert ("handle_kv", 14, "self") not in refs
    assert not any(name == "size" and line == 15 for name, line, _ in refs)
    assert ("handle_kv", 11, "self") in refs


def test_java_method_reference_and_rust_path_value_are_references(tmp_path: Path) -> None:
    catalog = load(tmp_path, {
        "A.java": "class A {\n    void handle() {}\n    void f() { register(this::handle); register(A::handle); }\n"
                  "    void register(Runnable r) {}\n}\n",
        "lib.rs": "struct S;\nimpl S {\n    fn parse(x: u8) -> u8 { x }\n    fn go(&self, v: Vec<u8>) { v.into_iter().map(Self::parse); }\n}\n",
    })
    assert referrers(catalog, "A.handle") == {("A.f", 3, "ref")}
    assert referrers(catalog, "S.parse") == {("S.go", 4, "ref")}


# -- 10: history's ambiguity hint on the real candidates -------------------------------------------------------

def _commit(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "one"], check=True)


def test_history_ambiguity_hint_names_a_real_candidate(tmp_path: Path) -> None:
    _commit(tmp_path, GO_REFS)
    run_index(str(tmp_path))
    out = CliRunner().invoke(app, ["history", "handleKV", str(tmp_path)])
    assert out.exit_code == 2
    assert "api/s.go:Server.handleKV" in out.output
    assert "path/to/file.py" not in out.output
    picked = CliRunner().invoke(app, ["history", "api.(*Server).handleKV", str(tmp_path)])
    assert picked.exit_code == 0, picked.output
    assert "history of Server.handleKV (api/s.go:9" in picked.output


# -- verify3 1: a Java field read is never a reference to the method of the same name ------------------------------

JAVA_ACCESSORS = """public class Svc {
    private final Store store;
    private final String name;
    Svc(Store store, String name) { this.store = store; this.name = name; }
    Store store() { return store; }
    String name() { return name; }
    void run() { log(this.name); use(this.store, name); Runnable r = this::tick; }
    void tick() {}
    static void log(String s) {}
    static void use(Store s, String n) {}
}
class Store {}
"""


def test_java_field_read_is_no_reference_to_a_method(tmp_path: Path) -> None:
    catalog = load(tmp_path, {"Svc.java": JAVA_ACCESSORS})
    assert referrers(catalog, "Svc.name") == set()
    assert not [r for r in graph.references(catalog, "Svc.name").rows if r.relation == "ref"]  # nor unresolved
    assert "Svc.run" not in {r.entity for r in graph.impact(catalog, "Svc.store").rows}
    assert referrers(catalog, "Svc.tick") == {("Svc.run", 7, "ref")}  # a method reference still is one


# -- verify3 6: a Go sentinel compared either way, switched on, held or package-qualified --------------------------

GO_SENTINELS = {
    "go.mod": "module github.com/acme/kv\n",
    "e/e.go": """package e

import "errors"

var ErrBadKey = errors.New("bad key")

func a(err error) bool { return ErrBadKey == err }
func b(err error) bool { return err == ErrBadKey }
func d(err error) int {
	switch err {
	case ErrBadKey:
		return 1
	}
	return 0
}
func f() error { var e = ErrBadKey; return e }
func g() error { e := ErrBadKey; return e }
func h() (err error) { err = ErrBadKey; return }
""",
    "api/api.go": """package api

import "github.com/acme/kv/e"

type T struct{ n int }

func a(err error) bool { return err == e.ErrBadKey }
func b(err error) bool { return e.ErrBadKey != err }
func c() error { var target = e.ErrBadKey; return target }
func d(err error) int {
	switch err {
	case e.ErrBadKey:
		return 1
	}
	return 0
}
func f() error { return e.ErrBadKey }
func same(x, y T) bool { return x.n == y.n }
""",
}


def test_go_sentinel_in_every_use_is_a_reference(tmp_path: Path) -> None:
    catalog = load(tmp_path, GO_SENTINELS)
    found = {(r.site_file, r.entity, r.site_line) for r in graph.references(catalog, "ErrBadKey").rows if r.resolved}
    assert found == {("e/e.go", "a", 7), ("e/e.go", "b", 8), ("e/e.go", "d", 11), ("e/e.go", "f", 16),
                     ("e/e.go", "g", 17), ("e/e.go", "h", 18),
                     ("api/api.go", "a", 7), ("api/api.go", "b", 8), ("api/api.go", "c", 9), ("api/api.go", "d", 12),
                     ("api/api.go", "f", 17)}


def test_go_field_comparison_is_no_reference() -> None:
    """`x.n == y.n` compares fields of values, not a package's names: only `pkg.Name` after `import pkg` counts."""
    edges = parse_source(GO_SENTINELS["api/api.go"].encode(), "api/api.go", "go", "h").edges
    assert not [e for e in edges if e.kind == "ref" and e.line == 18]
    assert ("ErrBadKey", 7, "e") in {(e.name, e.line, e.receiver) for e in edges if e.kind == "ref"}


# -- verify3 8: a Go package in a name narrows it ----------------------------------------------------------------

GO_PACKAGES = {
    "api/s.go": "package api\n\ntype Server struct{}\n\nfunc (s *Server) Start() {}\n\nfunc NewServer() *Server { return &Server{} }\n",
    "admin/s.go": "package admin\n\ntype Server struct{}\n\nfunc (s Server) Start() {}\n",
    "cmd/srv/m.go": "package main\n\nfunc main() {}\n",
}


@pytest.mark.parametrize(("query", "file"), [
    ("api.(*Server).Start", "api/s.go"),
    ("github.com/acme/kv/api.(*Server).Start", "api/s.go"),
    ("admin.Server.Start", "admin/s.go"),  # a value receiver, as Go prints it
    ("github.com/acme/kv/admin.Server.Start", "admin/s.go"),
    ("api.NewServer", "api/s.go"),
    ("main.main", "cmd/srv/m.go"),  # the package clause, where the folder is named otherwise
])
def test_go_package_narrows_the_name(tmp_path: Path, query: str, file: str) -> None:
    catalog = load(tmp_path, GO_PACKAGES)
    assert [t.file for t in graph.Graph(catalog).targets(query)] == [file]


@pytest.mark.parametrize("query", ["nope.(*Server).Start", "nope.Server.Start"])
def test_go_unknown_package_is_refused_in_one_line(tmp_path: Path, query: str) -> None:
    catalog = load(tmp_path, GO_PACKAGES)
    with pytest.raises(ValueError, match=r"^no Go package 'nope' defines 'Server.Start'; it is defined in admin/s.go, "
                                         r"api/s.go [^\n]*$"):
        graph.callers(catalog, query)


def test_history_picks_the_go_package(tmp_path: Path) -> None:
    _commit(tmp_path, GO_PACKAGES)
    run_index(str(tmp_path))
    out = CliRunner().invoke(app, ["history", "admin.Server.Start", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "history of Server.Start (admin/s.go:5" in out.output


# -- verify3 9: C++ names as debuggers print them, folders named like domains, Python class scopes ---------------

def test_cpp_parameter_list_and_template_arguments_are_dropped() -> None:
    assert graph.dotted_name("kv::http::Server::handle(std::string const&, Handler)") == "kv.http.Server.handle"
    assert graph.dotted_name("kv::Server::size() const noexcept") == "kv.Server.size"
    assert graph.dotted_name("kv::clamp<std::vector<int>>") == "kv.clamp"
    assert graph.dotted_name("Matrix<T>::identity") == "Matrix.identity"
    assert graph.dotted_name("kv::name[abi:cxx11]()") == "kv.name"
    assert graph.dotted_name("api.(*Server).Start") == "Server.Start"  # Go's receiver is no parameter list
    assert graph.dotted_name("kv::operator<=>") == "kv.operator<=>"


def test_cpp_name_with_a_signature_is_looked_up(tmp_path: Path) -> None:
    catalog = load(tmp_path, CPP_FILES)
    rows = graph.callers(catalog, "kv::http::Server::handle(std::string const&, int) const").rows
    assert {(r.entity, r.site_line) for r in rows if r.resolved} == {("kv.http.Server.routes", 4)}


@pytest.mark.parametrize(("path", "folders"), [
    ("net/vendor/x.go", ["net", "vendor"]),
    ("io/examples/x.py", ["io", "examples"]),
    ("src/net/vendor/x.go", ["src", "net", "vendor"]),
    ("com/example/demo/web/A.java", ["com", "web"]),  # a JVM package tree keeps its reading
    ("src/main/resources/com/example/demo/app.properties", ["src", "main", "resources", "com"]),
])
def test_domain_named_folders_are_packages_only_in_jvm_trees(path: str, folders: list[str]) -> None:
    assert layout_folders(path) == folders


def test_vendored_under_a_top_level_net_folder() -> None:
    assert is_vendored("net/vendor/x.go")
    assert not is_vendored("src/main/java/com/shop/vendor/VendorService.java")


def test_python_method_does_not_see_its_class_scope(tmp_path: Path) -> None:
    """A parameter named like a property is the parameter; a bare call named like a method is the module's function."""
    catalog = load(tmp_path, {"h.py": """def helper():
    pass


class Headers:
    @property
    def encoding(self):
        return "ascii"

    def helper(self):
        pass

    def __init__(self, encoding=None):
        self._encoding = encoding
        helper()
        print(self.encoding)

    class Inner:
        pass

    class Sub(Inner):
        pass
"""})
    assert referrers(catalog, "Headers.encoding") == {("Headers.__init__", 16, "ref")}
    call = next(e for _, e in catalog.edges(file="h.py", kinds=("call",)) if e.name == "helper")
    assert [h.qualname for h in graph.Graph(catalog).resolve("h.py", call)] == ["helper"]
    assert not [r for r in graph.callers(catalog, "Headers.helper").rows if r.resolved]
    assert ("Headers.Sub", 21, "inherit") in referrers(catalog, "Headers.Inner")  # a class body sees its class scope


# -- verify3 7: a Rust test beside the code is "only tests" ------------------------------------------------------

def test_only_marked_rust_tests_kept_say_so() -> None:
    facts = CodeFacts(decorators=["test"])
    test = Candidate(id="t", file="src/lib.rs", start_line=7, end_line=7, entity="tests.roundtrip_zebra_checksum",
                     kind="function", body="fn roundtrip_zebra_checksum() {}", facts=facts, fused_rank=1, fused_score=0.01)
    scores = PassageScores(relevance=0.8, evidence=0.5, contradicts=0, injection=0)
    sel = Selection(included=[RankedPassage(candidate=test, scores=scores, verdict="include", rank_score=0.8)], dropped=[],
                    thresholds=Thresholds(relevance_min=0.2, evidence_min=0.1, injection_max=0.5, contradicts_min=0.5,
                                          answerable_min=0.9, top_k=1))
    lines = missing_lines("roundtrip zebra checksum", sel, Judgment(backend="local", scores={}))
    assert any(line.startswith("missing: only tests were found") for line in lines), lines
    product = sel.included[0].candidate.model_copy(update={"facts": CodeFacts()})
    plain = sel.model_copy(update={"included": [sel.included[0].model_copy(update={"candidate": product})]})
    assert not any("only tests" in line for line in missing_lines("roundtrip zebra checksum", plain,
                                                                   Judgment(backend="local", scores={})))

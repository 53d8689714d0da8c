"""Premises about Go, Rust and Java code: implementing an interface or trait written apart from the type (or not
written at all) is no false premise, a kind word before "implements" is no file, a constructor is not its class."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.stages.core.artifacts import Premise, PremiseFinding
from assay.stages.evaluate.premise_set import FLAG_AT
from assay.stages.index.parse import parse_source
from assay.stages.query.premise import check, check_question, extract, resolver_from

GO_STORE = b'''package store

// Store is the persistence interface.
type Store interface {
	Get(key string) (string, error)
	Put(key, value string) error
}

// Entry is one pair.
type Entry struct{ Key, Value string }

type base struct{ name string }
'''
GO_MEMORY = b'''package store

// MemoryStore keeps values in a map; it implements Store without saying so.
type MemoryStore struct {
	base
	data map[string]string
}

func (m *MemoryStore) Get(key string) (string, error) { return m.data[key], nil }

func (m *MemoryStore) Put(k, v string) error { m.data[k] = v; return nil }
'''


def _resolver(*files: tuple[str, bytes, str]):
    return resolver_from([e for path, source, lang in files for e in parse_source(source, path, lang, "h").entities])


def _findings(question: str, *files: tuple[str, bytes, str]) -> list[PremiseFinding]:
    return check_question(question, _resolver(*files))


def _flagged(findings: list[PremiseFinding]) -> list[str]:
    return [f.fact for f in findings if not f.holds and f.contradicts >= FLAG_AT]


def _base(findings: list[PremiseFinding]) -> list[PremiseFinding]:
    return [f for f in findings if f.premise.kind == "base"]


# -- Go: interfaces are satisfied implicitly ----------------------------------------------------------------------


@pytest.mark.parametrize("question", ["Does MemoryStore implement the Store interface?", "Why does MemoryStore implement Store?",
                                      "Why does MemoryStore inherit from Store?"])
def test_a_go_struct_with_the_interface_s_methods_implements_it(question: str) -> None:
    """It was "`MemoryStore` inherits from `base`, not `Store`": the embedded struct was taken as its only base."""
    findings = _findings(question, ("internal/store/store.go", GO_STORE, "go"), ("internal/store/memory.go", GO_MEMORY, "go"))
    assert _flagged(findings) == []
    assert [f.holds for f in _base(findings)] == [True]  # the method sets match: `Put(k, v string)` is `Put(key, value string)`


def test_a_go_method_promoted_from_an_embedded_struct_counts() -> None:
    promoted = GO_MEMORY.replace(b"func (m *MemoryStore) Get", b"func (b *base) Get")
    findings = _findings("Does MemoryStore implement the Store interface?", ("store.go", GO_STORE, "go"), ("memory.go", promoted, "go"))
    assert [f.holds for f in _base(findings)] == [True]


@pytest.mark.parametrize("change", [
    (b"func (m *MemoryStore) Put(k, v string) error { m.data[k] = v; return nil }", b""),  # a method missing here
    (b"Put(k, v string) error", b"Put(k string, v int) error"),  # another signature
])
def test_a_go_struct_whose_method_set_differs_is_undecided_not_false(change: tuple[bytes, bytes]) -> None:
    """The missing method may be in a file not indexed (a generated one): neither holds nor false."""
    memory = GO_MEMORY.replace(*change)
    assert memory != GO_MEMORY
    findings = _findings("Does MemoryStore implement the Store interface?", ("store.go", GO_STORE, "go"), ("memory.go", memory, "go"))
    assert _base(findings) == [] and _flagged(findings) == []


def test_a_go_interface_outside_the_index_is_undecided() -> None:
    """It was "`MemoryStore` inherits from `base`, not `io.Writer`": any type with a `Write` method implements it."""
    findings = _findings("Why does MemoryStore inherit from io.Writer?", ("store.go", GO_STORE, "go"), ("memory.go", GO_MEMORY, "go"))
    assert [p.value for p in extract("Why does MemoryStore inherit from io.Writer?") if p.kind == "base"] == ["io.Writer"]
    assert _flagged(findings) == []


def test_a_go_struct_that_does_not_embed_another_struct_still_contradicts() -> None:
    """Embedding is written in the struct itself and recorded: a struct claimed as a base can still be false."""
    findings = _findings("Why does MemoryStore inherit from Entry?", ("store.go", GO_STORE, "go"), ("memory.go", GO_MEMORY, "go"))
    assert _flagged(findings) == ["`MemoryStore` inherits from `base`, not `Entry` (memory.go:4)"]


# -- Rust: `impl Trait for Type` may be in any file ---------------------------------------------------------------

RUST_TRAIT = b"/// The persistence interface.\npub trait Store { fn get(&self, key: &str) -> Option<String>; }\n"
RUST_STRUCT = b"/// An in-memory store.\npub struct MemoryStore { n: usize }\n\npub struct Entry { k: String }\n"
RUST_IMPL = b"use crate::memory::MemoryStore;\n\nimpl Store for MemoryStore {\n    fn get(&self, key: &str) -> Option<String> { None }\n}\n"


def test_a_rust_trait_implemented_in_another_file_is_no_false_premise() -> None:
    """The parse stage records `impl Store for MemoryStore` only beside the struct; here it is in another file."""
    findings = _findings("Does MemoryStore implement the Store trait?", ("src/lib.rs", RUST_TRAIT + RUST_IMPL, "rust"),
                         ("src/memory.rs", RUST_STRUCT, "rust"))
    assert _flagged(findings) == []


def test_a_rust_trait_implemented_beside_the_struct_holds() -> None:
    source = RUST_TRAIT + RUST_STRUCT + RUST_IMPL
    findings = _findings("Does MemoryStore implement the Store trait?", ("src/lib.rs", source, "rust"))
    assert _flagged(findings) == [] and [f.holds for f in _base(findings)] == [True]


def test_a_foreign_rust_trait_is_undecided_and_a_struct_base_still_false() -> None:
    files = (("src/lib.rs", RUST_TRAIT, "rust"), ("src/memory.rs", RUST_STRUCT, "rust"))
    assert _flagged(_findings("Why does MemoryStore inherit from Send?", *files)) == []
    assert _flagged(_findings("Why does MemoryStore inherit from Entry?", *files)) == [
        "`MemoryStore` inherits from no base class, not `Entry` (src/memory.rs:2)"]


# -- the word before "implements" is no file ---------------------------------------------------------------------


@pytest.mark.parametrize("word", ["struct", "enum", "trait", "service", "handler", "record", "MemoryStore"])
def test_the_word_before_implements_is_not_read_as_a_file(word: str) -> None:
    """"which struct implements the Store interface" was "`Store` is defined in `store.go`, not `struct`"."""
    assert [p for p in extract(f"which {word} implements the Store interface") if p.kind == "file"] == []


@pytest.mark.parametrize("question", ["Does MemoryStore implement the Store trait?", "Why is Store kept in memory?",
                                      "Why is Store implemented in terms of Get?"])
def test_an_english_word_in_a_file_s_place_is_no_file_premise(question: str) -> None:
    assert [p for p in extract(question) if p.kind == "file"] == []


@pytest.mark.parametrize(("question", "value"), [
    ("Does store.go define Store?", "store.go"),
    ("Why is Store defined in internal/store?", "internal/store"),
    ("Is Store defined in the store package?", "store"),
    ("Why is Session defined in requests.sessions?", "requests.sessions"),
    ("Why is Store defined in the `store` module?", "store"),
])
def test_a_file_module_or_package_is_still_read(question: str, value: str) -> None:
    assert [p.value for p in extract(question) if p.kind == "file"] == [value]


def test_a_go_package_folder_holds_the_definition() -> None:
    files = (("internal/store/store.go", GO_STORE, "go"),)
    assert _flagged(_findings("Why is Store defined in internal/store?", *files)) == []
    assert _flagged(_findings("Is Store defined in the store package?", *files)) == []
    assert _flagged(_findings("Why is Store defined in internal/cache?", *files)) == [
        "`Store` is defined in `internal/store/store.go`, not `internal/cache` (internal/store/store.go:4)"]


# -- Java: the constructor shares the class's name ---------------------------------------------------------------

JAVA_STORE = b'''package kv;

/** A store kept in a map. */
public class MemoryStore implements Store {
    public MemoryStore(int capacity) {
    }

    public String get(String key) { return null; }
}
'''
JAVA_FILES = (("kv/MemoryStore.java", JAVA_STORE, "java"), ("kv/Store.java", b"package kv;\n\npublic interface Store {}\n", "java"),
              ("kv/Entry.java", b"package kv;\n\npublic record Entry(String key) {}\n", "java"))


def test_a_java_false_base_is_said_of_the_class_not_its_constructor() -> None:
    """It was "`MemoryStore.MemoryStore` is a method, not a class": the constructor was taken as the subject."""
    assert _flagged(_findings("Why does MemoryStore inherit from Entry?", *JAVA_FILES)) == [
        "`MemoryStore` inherits from `Store`, not `Entry` (kv/MemoryStore.java:4)"]
    assert _flagged(_findings("Why does MemoryStore implement Store?", *JAVA_FILES)) == []


def test_a_java_kind_premise_is_said_of_the_class_and_parameters_still_of_the_constructor() -> None:
    assert _flagged(_findings("Why is MemoryStore a function?", *JAVA_FILES)) == [
        "`MemoryStore` is a class, not a function (kv/MemoryStore.java:4)"]
    assert any("no parameter `size`" in f for f in _flagged(_findings("Why does MemoryStore take a size parameter?", *JAVA_FILES)))


# -- end to end: an indexed Go workspace ---------------------------------------------------------------------------


def test_ask_about_a_go_interface_reports_no_false_premise(tmp_path: Path) -> None:
    from assay.flows.index import run_index
    from assay.flows.query import run_query

    (tmp_path / "internal" / "store").mkdir(parents=True)
    (tmp_path / "internal" / "store" / "store.go").write_bytes(GO_STORE)
    (tmp_path / "internal" / "store" / "memory.go").write_bytes(GO_MEMORY)
    run_index(str(tmp_path))
    for question in ("Does MemoryStore implement the Store interface?", "which struct implements the Store interface"):
        report = run_query(str(tmp_path), question)
        assert "premise:" not in report.text and not report.answer.text.startswith("Note:"), question


# -- a bare module, file stem or folder name the index holds is a file premise ---------------------------------------

PY_CLIENT = (("httpx/_client.py", b"class Client:\n    pass\n", "python"), ("httpx/_models.py", b"class Headers:\n    pass\n", "python"))
PY_FILES = ["httpx/_client.py", "httpx/_models.py", "httpx/__init__.py"]


@pytest.mark.parametrize(("question", "value"), [("Is Client defined in _models?", "_models"), ("Does _models define Client?", "_models"),
                                                 ("Why is Client defined in models?", "models")])
def test_a_module_the_index_holds_is_checked_by_its_bare_name(question: str, value: str) -> None:
    """The old build flagged these; the fix that kept "which struct implements Store" unflagged dropped them too."""
    findings = check_question(question, _resolver(*PY_CLIENT), PY_FILES)
    assert _flagged(findings) == [f"`Client` is defined in `httpx/_client.py`, not `{value}` (httpx/_client.py:1)"]
    assert _flagged(check_question(question, _resolver(*PY_CLIENT))) == []  # no file list: the word is not known as a module


@pytest.mark.parametrize("question", ["Is Headers defined in _models?", "Is Headers defined in models?", "Is Client defined in httpx?"])
def test_a_true_bare_module_premise_holds(question: str) -> None:
    findings = check_question(question, _resolver(*PY_CLIENT), PY_FILES)
    assert _flagged(findings) == [] and [f.holds for f in findings if f.premise.kind == "file"] == [True]


def test_a_go_package_folder_by_its_bare_name_is_checked() -> None:
    files = (("internal/store/store.go", GO_STORE, "go"), ("internal/store/memory.go", GO_MEMORY, "go"))
    paths = ["internal/store/store.go", "internal/store/memory.go", "internal/api/server.go"]
    assert _flagged(check_question("Is MemoryStore defined in api?", _resolver(*files), paths)) == [
        "`MemoryStore` is defined in `internal/store/memory.go`, not `api` (internal/store/memory.go:4)"]
    assert _flagged(check_question("Is MemoryStore defined in store?", _resolver(*files), paths)) == []


@pytest.mark.parametrize("question", ["which struct implements the Store interface", "which handler implements Store"])
def test_a_word_asked_about_is_no_file_even_where_a_folder_has_its_name(question: str) -> None:
    """"which handler ..." asks of a handler, though `handler/` is a folder of the index; `struct` names none."""
    paths = ["internal/store/store.go", "handler/h.go"]
    findings = check_question(question, _resolver(("internal/store/store.go", GO_STORE, "go")), paths)
    assert [f for f in findings if f.premise.kind == "file"] == []


def test_a_java_class_named_like_its_file_is_the_class_not_a_file() -> None:
    """"Does MemoryStore implement Store?" is about the class: `MemoryStore.java` being a file stem does not make
    `MemoryStore` the file that should define `Store` (polyglot #2's "`Shape` is defined in `Shapes.java`, not ...")."""
    paths = [path for path, _, _ in JAVA_FILES]
    findings = check_question("Does MemoryStore implement Store?", _resolver(*JAVA_FILES), paths)
    assert [f for f in findings if f.premise.kind == "file"] == [] and _flagged(findings) == []


def test_a_java_file_premise_is_said_of_the_class_not_its_constructor() -> None:
    """It was "`MemoryStore.MemoryStore` is defined in ...": the constructor was one of the subject's definitions."""
    assert _flagged(_findings("Is MemoryStore defined in the com.example.web package?", *JAVA_FILES)) == [
        "`MemoryStore` is defined in `kv/MemoryStore.java`, not `com.example.web` (kv/MemoryStore.java:4)"]


def test_a_path_before_a_file_name_is_kept_in_the_value() -> None:
    """It was "... not `server.go`": the loose reading cut `api/server.go` at the `/`."""
    files = (("internal/store/memory.go", GO_MEMORY, "go"),)
    assert _flagged(_findings("Where in api/server.go is MemoryStore defined?", *files)) == [
        "`MemoryStore` is defined in `internal/store/memory.go`, not `api/server.go` (internal/store/memory.go:4)"]
    assert _flagged(_findings("Where in internal/store/memory.go is MemoryStore defined?", *files)) == []


# -- a Go import path names the folder it ends in ------------------------------------------------------------------

GO_ROUTER = b"package mux\n\n// Router routes.\ntype Router struct{}\n"


@pytest.mark.parametrize(("question", "flagged"), [
    ("Is Router defined in the github.com/acme/mux package?", False),
    ("Is Router defined in github.com/acme/other?", True),
    ("Is MemoryStore defined in github.com/example/gosvc/internal/store?", False),  # after the go.mod module path
    ("Is MemoryStore defined in github.com/example/gosvc/internal/api?", True),
])
def test_a_go_import_path_is_matched_against_the_folders(question: str, flagged: bool) -> None:
    """It was "`Router` is defined in `vendor/github.com/acme/mux/router.go`, not `github.com/acme/mux`": the dots of
    the domain were read as a dotted module path."""
    files = (("vendor/github.com/acme/mux/router.go", GO_ROUTER, "go"), ("internal/store/memory.go", GO_MEMORY, "go"))
    assert bool(_flagged(_findings(question, *files))) is flagged


# -- one finding per fact: `a::b::C::m` is one subject ----------------------------------------------------------

CPP_SERVER = b'''namespace kv::http {

void Server::handle(const std::string& path, Handler h) {
    routes_[path] = h;
}

}
'''


def test_a_cpp_qualified_subject_gives_one_note() -> None:
    """It printed the same note three times, for `kv.http.Server.handle`, `http.Server.handle` and `Server.handle`."""
    question = "Does kv::http::Server::handle take a timeout parameter?"
    assert [p.subject for p in extract(question)] == ["kv.http.Server.handle"]
    flagged = _flagged(_findings(question, ("src/server.cpp", CPP_SERVER, "cpp")))
    assert len(flagged) == 1 and "no parameter `timeout`" in flagged[0]


def test_premises_that_reach_one_fact_of_one_definition_give_one_finding() -> None:
    """However the subject was written (`kv::http::Server::handle`, `Server::handle`), one definition's fact is said once."""
    premises = [Premise(kind="param", subject=s, value="timeout", param="timeout") for s in ("kv.http.Server.handle", "Server.handle")]
    findings = check(premises, _resolver(("src/server.cpp", CPP_SERVER, "cpp")))
    assert [f.fact for f in findings] == ["`kv.http.Server.handle` takes `path`, `h`; there is no parameter `timeout` (src/server.cpp:3)"]


# -- "A implements B" names A, and so does "B is implemented by A" ------------------------------------------------

JAVA_SHAPES = (("Shapes.java", b"interface Shape { double area(); }\nclass Circle implements Shape { public double area() { return 1; } }\n"
                               b"class Plain { }\n", "java"),)


@pytest.mark.parametrize("question", ["Does Plain implement Shape?", "Is Shape implemented by Plain?", "Is Shape extended by Plain?",
                                      "Why does Plain implement the Shape interface?"])
def test_a_false_implements_premise_is_said_of_the_implementing_class(question: str) -> None:
    """It was "`Shape` inherits from no base class, not `Plain`" (a tie went to the later word), and the passive
    form was not read at all."""
    assert _flagged(_findings(question, *JAVA_SHAPES)) == ["`Plain` inherits from no base class, not `Shape` (Shapes.java:3)"]


@pytest.mark.parametrize("question", ["Does Circle implement Shape?", "Is Shape implemented by Circle?", "How is Plain implemented with Shape?"])
def test_a_true_or_no_implements_premise_is_not_flagged(question: str) -> None:
    assert _flagged(_findings(question, *JAVA_SHAPES)) == []


# -- Go's `(*T).M` as traces print it ------------------------------------------------------------------------------

GO_CLOSERS = (b'package a\n\nimport "context"\n\ntype Server struct{}\n\nfunc (s *Server) Close(ctx context.Context) error { return nil }\n\n'
              b'type DB struct{}\n\nfunc (d *DB) Close() error { return nil }\n')


@pytest.mark.parametrize("name", ["DB.Close", "(*DB).Close", "a.(*DB).Close", "github.com/x/a.(*DB).Close", "`(*DB).Close`"])
def test_a_go_receiver_form_names_the_type_s_method(name: str) -> None:
    """`(*DB).Close` lost its type: the premise was unflagged, as `Server.Close` takes a ctx."""
    assert _flagged(_findings(f"Does {name} take a ctx parameter?", ("a.go", GO_CLOSERS, "go"))) == [
        "`DB.Close` takes no parameters; there is no parameter `ctx` (a.go:11)"]


def test_a_go_receiver_form_of_the_right_type_holds() -> None:
    assert _flagged(_findings("Does (*Server).Close take a ctx parameter?", ("a.go", GO_CLOSERS, "go"))) == []


def test_ask_reads_a_bare_go_package_name_as_a_file_premise(tmp_path: Path) -> None:
    """The door passes the index's files: "`api`" is a folder the index holds, so the premise is checked."""
    from assay.flows.index import run_index
    from assay.flows.query import run_query

    (tmp_path / "internal" / "store").mkdir(parents=True)
    (tmp_path / "internal" / "api").mkdir(parents=True)
    (tmp_path / "internal" / "store" / "memory.go").write_bytes(GO_MEMORY)
    (tmp_path / "internal" / "api" / "server.go").write_bytes(b"package api\n\n// Server serves.\ntype Server struct{}\n")
    run_index(str(tmp_path))
    report = run_query(str(tmp_path), "Is MemoryStore defined in api?")
    assert "`MemoryStore` is defined in `internal/store/memory.go`, not `api`" in report.text

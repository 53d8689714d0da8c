"""Parse-stage fixes from the polyglot sweep (defects 1, 4, 6 and 10): Rust trait impls as bases, Kotlin class
delegation, C++17 nested namespace names and qualified C++ bases (stage only, no Prefect)."""

from __future__ import annotations

from assay.stages.core.artifacts import Entity
from assay.stages.index.parse import parse_source


def _defs(source: str, path: str, language: str) -> dict[str, Entity]:
    """qualname -> first part of each definition (files and windows left out)."""
    ents = parse_source(source.encode(), path, language, "h").entities
    return {e.qualname: e for e in ents if e.kind not in ("file", "window") and e.part == 0}


def _inherits(source: str, path: str, language: str) -> set[tuple[str, str, str]]:
    """(source, name, receiver) of each inherit edge."""
    edges = parse_source(source.encode(), path, language, "h").edges
    return {(e.source, e.name, e.receiver) for e in edges if e.kind == "inherit"}


RUST = """\
/// The persistence interface.
pub trait Store { fn get(&self, key: &str) -> Option<String>; }

impl Store for MemoryStore {
    fn get(&self, key: &str) -> Option<String> { self.data.get(key).cloned() }
}

/// An in-memory store.
pub struct MemoryStore { data: std::collections::HashMap<String, String> }

impl MemoryStore { pub fn new() -> Self { todo!() } }
impl<T: Clone> std::fmt::Display for Wrapper<T> { fn fmt(&self) {} }
impl From<String> for Wrapper<String> { fn from(s: String) -> Self { todo!() } }
impl From<u8> for Wrapper<u8> { fn from(s: u8) -> Self { todo!() } }
impl !Send for Wrapper<u8> {}
pub struct Wrapper<T> { t: T }
pub enum Kind { A }
impl Default for Kind { fn default() -> Self { Kind::A } }
mod inner {
    pub struct Local;
    impl super::Store for Local { fn get(&self, key: &str) -> Option<String> { None } }
}
impl Store for String { fn get(&self, key: &str) -> Option<String> { None } }
"""


def test_rust_trait_impls_are_bases_of_the_type() -> None:
    defs = _defs(RUST, "src/lib.rs", "rust")
    assert defs["MemoryStore"].bases == ["Store"]  # the impl above the struct counts; `impl MemoryStore` adds nothing
    assert defs["Wrapper"].bases == ["std.fmt.Display", "From"]  # dotted, no type arguments, once; `!Send` is none
    assert defs["Kind"].bases == ["Default"]
    assert defs["inner.Local"].bases == ["super.Store"]
    assert defs["Store"].bases == []  # `impl Store for String`: a type this file does not define gets nothing
    assert "MemoryStore.get" in defs and "Wrapper.from" in defs  # methods keep their names
    assert ("MemoryStore", "Store", "Store") in _inherits(RUST, "src/lib.rs", "rust")


KOTLIN = """\
interface Store { fun get(key: String): String? }

/** A read-through cache. */
class Cache(private val backing: Store) : Store by backing {
    fun warm(key: String) { backing.get(key) }

    data class Stats(val hits: Int)
    companion object { fun of(store: Store): Cache = Cache(store) }
}

class Mixed(x: Store) : Base(), a.b.Named by x, Comparable<Mixed> { }
class Short(x: Store) : Store by x
"""


def test_kotlin_delegation_bases_are_the_supertypes_only() -> None:
    defs = _defs(KOTLIN, "Cache.kt", "kotlin")
    assert defs["Cache"].bases == ["Store"]  # not `by`, `backing`, `fun`, `Stats`, nor `Cache` itself
    assert defs["Mixed"].bases == ["Base", "a.b.Named", "Comparable"]
    assert defs["Short"].bases == ["Store"]
    assert {"Cache.warm", "Cache.Stats", "Cache.of"} <= defs.keys()  # the body read as a lambda still defines them
    assert {n for s, n, _ in _inherits(KOTLIN, "Cache.kt", "kotlin") if s == "Cache"} == {"Store"}


def test_cpp17_nested_namespace_names_as_nested_namespaces_do() -> None:
    header = "namespace kv { namespace http {\nclass Server { public: void handle(); };\n} }\n"
    source = "#include \"s.h\"\nnamespace kv::http {\nvoid Server::handle() {}\nclass Router {};\n}\n"
    assert "kv.http.Server" in _defs(header, "s.h", "cpp")
    defs = _defs(source, "s.cpp", "cpp")
    assert {"kv.http.Server.handle", "kv.http.Router"} <= defs.keys()
    assert defs["kv.http.Server.handle"].parent == "kv.http.Server"
    assert not [q for q in defs if "::" in q]


def test_cpp20_inline_namespace_part_names_its_scope() -> None:
    defs = _defs("namespace kv::inline v1 {\nclass Store {};\n}\n", "s.hpp", "cpp")
    assert "kv.v1.Store" in defs


def test_a_qualified_cpp_base_is_one_base_without_type_arguments() -> None:
    src = (
        "#include <stdexcept>\n"
        "class StoreError : public std::runtime_error {};\n"
        "template <class T> class Impl : private ::detail::Base<std::map<int, T>>, virtual public Root {};\n"
    )
    defs = _defs(src, "err.hpp", "cpp")
    assert defs["StoreError"].bases == ["std.runtime_error"]  # was `std` and `runtime_error`
    assert defs["Impl"].bases == ["detail.Base", "Root"]  # no `int`, `T`, `map` or `std`
    assert ("StoreError", "runtime_error", "std.runtime_error") in _inherits(src, "err.hpp", "cpp")


def test_qualified_bases_in_other_typed_languages() -> None:
    java = "class A extends java.util.AbstractList<String> implements Comparable<A>, java.io.Serializable { }\n"
    assert _defs(java, "A.java", "java")["A"].bases == ["java.util.AbstractList", "Comparable", "java.io.Serializable"]
    php = "<?php\nnamespace App;\nclass A extends \\Illuminate\\Model implements \\Countable { }\n"
    assert _defs(php, "A.php", "php")["App.A"].bases == ["Illuminate.Model", "Countable"]

"""Graph stage: who calls this, what it calls, where it is used, what breaks if it changes.

Edges come from the parse stage (`stages.index.edges`); names are resolved here, against the catalog of
the moment, only where the language makes it sound:

- a bare name: a definition in the caller's own scopes (nested functions first), else a top-level one in the
  same file, else the name an import of that file brings in (module path -> file; aliases followed; a package
  `__init__` that re-exports it is followed once); a sibling file's in a Go package; in C, a name an included
  header defines, or declares and the header's own source (or the one definition in the workspace) defines;
- `self.m()` / `this.m()` / `cls.m()`: the method of the enclosing class or of its (indexed) ancestors; where a
  type's methods may sit in other files (a Rust `impl`, a Go receiver, C++'s `A::f`), `m` beside the calling method;
- `mod.f()` / `Class.m()`: `f` in the imported module `mod`, or method `m` of the class `Class`.

Everything else (a call on an arbitrary object) stays *unresolved*: it is listed with its receiver text and
marked, never guessed into a resolved row.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
import threading
import tomllib
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from assay.stages.core.artifacts import DEFINITION_KINDS, Edge, Entity
from assay.stages.core.path_roles import is_marked_test, is_test_path
from assay.stages.index.languages import language_for

CLASS_KINDS = frozenset({"class", "interface", "struct", "trait", "enum"})
_SELF = frozenset({"self", "this", "cls", "super()", "Self", "$this", "static"})  # PHP's `$this->f()`, `static::f()`
_JS_SUFFIX = re.compile(r"\.(?:js|jsx|mjs|cjs|ts|tsx|mts|cts)$")
_SOURCE_SUFFIXES = (".py", ".pyi", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", "/index.ts", "/index.js", "/__init__.py",
                    ".go", ".rs", "/mod.rs", ".java", ".kt")
_C_FAMILY = frozenset({"c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "inl", "ipp", "m", "mm"})
# the importers whose imports count for centrality: where an import brings in a module whose code the importer uses
# Java, Kotlin and PHP import every type they name, C-family files include umbrella headers, Elixir `use`s behaviours:
# their most-imported files are interfaces, exceptions, annotations and headers (symfony's `OutputInterface` 31,
# expo's `DoNotStrip` 20, JPype's `jpype.h` 52), and counting them (with Lua's, Ruby's and Zig's) cost bench_topics
# 0.824 -> 0.809 (JPype 0.824 -> 0.749, penlight 0.929 -> 0.879). Their imports still resolve names for the graph.
CENTRAL_SOURCES = frozenset({"py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "go", "rs"})
_C_SOURCES = ("c", "cc", "cpp", "cxx", "m", "mm")
_MEMBER_IMPORTS = (".java", ".kt")  # `import a.b.C`: the module `a.b` is a folder, `a.b.C` the file
# code files where a test may sit beside the code it tests, marked by an attribute (`#[test]`, `@Test`)
_MARKED_TESTS = (".rs", ".java")
# where a type's methods may sit in another file than the type: Rust `impl` blocks, Go receivers, C++ out-of-class
# definitions, Swift extensions, C# partial classes, Ruby reopened classes, Objective-C categories
_OPEN_TYPES = (".rs", ".go", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".swift", ".cs", ".rb", ".m", ".mm")
# languages where a bare `m()` inside a class may call a method of it (an implicit `this`); C: C++ in `.h` headers
_IMPLICIT_THIS = frozenset({"java", "csharp", "cpp", "c", "kotlin", "swift", "scala", "ruby", "dart", "objc"})
_FAMILIES = {"typescript": "javascript", "tsx": "javascript", "cpp": "c", "objc": "c"}  # one namespace of names each
# languages whose namespaces (modules) span files, so a qualified name means one definition wherever it is declared
_SHARED_NAMESPACES = frozenset({"cpp", "csharp", "php", "ruby"})


def family(language: str) -> str:
    """The language family a name lives in: JS/TS/JSX/TSX call each other, and so do C, C++ and Objective-C."""
    return _FAMILIES.get(language, language)


def _underscore(name: str) -> str:
    """Elixir's file name for a module name (`Macro.underscore`): `HTTPServer` -> `http_server`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


# Ruby's `require "x/y"` searches $LOAD_PATH: a gem's `lib/`, and the `spec/` or `test/` folder rspec and minitest add
_RUBY_LOAD_ROOTS = frozenset({"lib", "spec", "test"})


def _on_load_path(file: str, required: str) -> bool:
    """`file` is what `require` of `required` finds: its path from a load root (or the workspace root) on. So
    `require "json"` (the standard library's) is not `lib/rack/handler/json.rb`, while `require "rack/utils"` is
    `lib/rack/utils.rb`."""
    prefix = file[: len(file) - len(required)].rstrip("/")
    return not prefix or prefix.rsplit("/", 1)[-1] in _RUBY_LOAD_ROOTS


# the first element of every Go standard library import path (go1.23); a module's own paths start with its domain or name
_GO_STANDARD = frozenset({
    "archive", "bufio", "builtin", "bytes", "cmp", "compress", "container", "context", "crypto", "database", "debug",
    "embed", "encoding", "errors", "expvar", "flag", "fmt", "go", "hash", "html", "image", "index", "io", "iter", "log",
    "maps", "math", "mime", "net", "os", "path", "plugin", "reflect", "regexp", "runtime", "slices", "sort", "strconv",
    "strings", "structs", "sync", "syscall", "testing", "text", "time", "unicode", "unique", "unsafe", "weak", "C",
})


class GraphRow(BaseModel):
    """One site: the definition it sits in (or reaches), where, and how sure the link is."""

    entity: str = Field(description="the caller (callers, references, impact) or the callee (callees)")
    kind: str = ""
    file: str
    line: int = Field(description="where that entity is defined (0 when unresolved)")
    site_file: str = ""
    site_line: int = Field(0, description="the line of the call, import or reference itself")
    relation: str = Field("call", description="call | import | inherit | ref")
    resolved: bool = True
    via: str = Field("", description="unresolved: the receiver or name as written")
    depth: int = 1
    is_test: bool = False
    stale: bool = Field(False, description="the site's or the entity's file changed or was deleted since indexing")


class GraphResult(BaseModel):
    command: str
    query: str
    targets: list[str] = Field(default_factory=list, description="the definitions the query named, `qualname file:line`")
    rows: list[GraphRow] = []
    total: int = 0
    truncated: int = 0
    tests: list[GraphRow] = Field(default_factory=list, description="impact: tests that reach the target (at most `limit`)")
    tests_total: int = Field(0, description="impact: all tests that reach the target, shown or not")
    stale_files: list[str] = Field(default_factory=list, description="files of this result changed or deleted since indexing")
    note: str = ""


def package_dirs(root: Path | None) -> list[tuple[str, str]]:
    """(import prefix, folder) pairs of pyproject.toml's `[tool.setuptools] package-dir`, longest prefix first; the
    root mapping (`"" = "src"`) is left out, since a module path's suffix already finds `src/pkg/mod.py`. A missing
    or unreadable file maps nothing."""
    if root is None:
        return []
    try:
        table = tomllib.loads((Path(root) / "pyproject.toml").read_text(encoding="utf-8"))
        mapping = table.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
        return []
    if not isinstance(mapping, dict):
        return []
    pairs = [(k, v) for k, v in mapping.items() if isinstance(k, str) and k and isinstance(v, str) and k != v]
    return sorted(pairs, key=lambda kv: -len(kv[0]))


_RECEIPT_LINE = re.compile(r"(\d+)(?:-\d+)?")  # `file.py:120`, `file.py:120-140`: the receipts every output prints


def split_file(query: str) -> tuple[str, str]:
    """`pkg/mod.py:send` as ("pkg/mod.py", "send"); a name without a file part as ("", name). The last colon splits,
    so `C:\\repo\\mod.py:send` keeps its drive; C++'s `ns::send` is a name."""
    file, sep, name = query.rpartition(":")
    if not sep or not file.strip() or not name or file.endswith(":"):
        return "", query
    return file, name


# Go's method as its panic traces and pprof print it: `(*Server).handleKV`, `api.(*Server).handleKV`,
# `github.com/acme/kv/api.(*Server).handleKV`; the index names it `Server.handleKV`, the package (group 2) by its folder
_GO_METHOD = re.compile(r"(^|:)(?:([\w.\-/]*)\.)?\(\*?(\w+)\)\.")
# C++ names as gdb, sanitizers and compiler errors print them: `kv::Server::handle(std::string const&) const`,
# `kv::clamp<int>`, `kv::f[abi:cxx11]()`, Rust's turbofish `Vec::<u8>::new`; the index names none of these parts.
_PARAMETERS = re.compile(r"\((?:[^()]|\([^()]*\))*\)(?:\s*(?:const|volatile|noexcept|override|final|&&?))*\s*$")
_TEMPLATE_ARGUMENTS = re.compile(r"(?<=\w)(?:::)?<(?!=)[^<>]*>")  # innermost first; never `operator<=>`
_ABI_TAG = re.compile(r"\[abi:\w+\]")


def _without_signature(query: str) -> str:
    """`kv::Server::handle(std::string const&, Handler) const` as `kv::Server::handle`, `kv::clamp<int>` as
    `kv::clamp`: the parameter list (only at the end, so Go's `(*T).M` stays), template arguments and ABI tags."""
    query = _PARAMETERS.sub("", _ABI_TAG.sub("", query.strip()))
    while (stripped := _TEMPLATE_ARGUMENTS.sub("", query)) != query:
        query = stripped
    return query


def go_package(query: str) -> str:
    """The package a Go method name is qualified with: `api` of `api.(*Server).Start`, `github.com/acme/kv/api` of
    the import path form; '' for `(*Server).Start` and for any other name."""
    found = _GO_METHOD.search(query)
    return (found.group(2) or "") if found else ""


def _go_led(name: str) -> tuple[str, str]:
    """A name read as led by a Go package, as Go prints a value receiver's method and a function: `admin.Server.Start`
    as ("admin", "Server.Start"), `github.com/acme/kv/api.NewServer` as ("github.com/acme/kv/api", "NewServer");
    ("", name) when nothing follows the package."""
    path, slash, tail = name.rpartition("/")
    head, _, rest = tail.partition(".")
    return (f"{path}{slash}{head}", rest) if head and rest else ("", name)


def dotted_name(query: str) -> str:
    """A name as a developer of its language writes it, as the index names it: Rust's and C++'s `a::C::m` (the
    premise checker's rule, so the two read names alike) and Go's `pkg.(*C).m` are `a.C.m` and `C.m` (the package
    narrows the lookup: `go_package`); a C++ parameter list or template arguments are dropped. A file part
    (`src/s.cpp:kv::Server::run`) is kept."""
    query = _without_signature(query)
    if "::" in query:
        from assay.stages.query.premise import _clean  # lazily: a heavy import that only such names need

        query = _clean(query)
        file, sep, name = query.rpartition(":")  # `::f`, the global `f`, is `f`
        query = f"{file}{sep}{name.lstrip('.')}" if sep else query.lstrip(".")
    return _GO_METHOD.sub(r"\1\3.", query)


def split_receipt(text: str) -> tuple[str, int] | None:
    """A receipt `pkg/mod.py:120` (or `:120-140`) as ("pkg/mod.py", 120); None for anything else."""
    file, name = split_file(text)
    found = _RECEIPT_LINE.fullmatch(name) if file else None
    return (file, int(found.group(1))) if found else None


def file_key(file: str, root: Path | str | None = None, backslash: bool = True) -> str:
    """A file as pasted, as the index names files (workspace-relative, `/`), in NFC for comparing: `./a/b.py`,
    `a\\b.py` and `/ws/a/b.py` (inside the workspace `root`) all read `a/b.py`; an absolute path elsewhere stays one.
    `backslash=False` keeps `\\` as the name character it is on Linux and macOS (`we\\ird.py`): callers try that
    reading first, so a file named so is found, and read `\\` as a Windows separator only when it names none."""
    given = unicodedata.normalize("NFC", file.strip().replace("\\", "/") if backslash else file.strip())
    if root is not None and posixpath.isabs(given):
        given = _under_root(given, str(root))
    return posixpath.normpath(given) if given else given


def _under_root(path: str, root: str) -> str:
    """`path` relative to the workspace, as written or (through a symlink to the workspace) where it lies."""
    base = unicodedata.normalize("NFC", root).rstrip("/") + "/"
    for candidate in (posixpath.normpath(path), unicodedata.normalize("NFC", os.path.realpath(path))):
        if candidate.startswith(base):
            return candidate[len(base):]
    return path


def innermost(entities: Iterable[Entity], line: int, kinds: frozenset[str] | None = None) -> Entity | None:
    """The innermost entity (of `kinds`) covering `line`, over each one's whole span (a long one is stored in parts):
    the shortest; on a tie a definition before what is none (a file holding one function spans the same lines)."""
    spans: dict[tuple[str, str, str], list[Entity]] = {}
    for e in entities:
        if kinds is None or e.kind in kinds:
            spans.setdefault((e.kind, e.qualname, e.content_hash), []).append(e)  # the parts of one entity
    covering = []
    for parts in spans.values():
        start, end = min(p.start_line for p in parts), max(p.end_line for p in parts)
        if start <= line <= end:
            covering.append((end - start, parts[0].kind not in DEFINITION_KINDS, min(parts, key=lambda p: p.part)))
    return min(covering, key=lambda c: c[:2])[2] if covering else None


class Graph:
    """Resolution over a catalog-like object (`edges`, `by_name`, `by_file`, `get`, `files`)."""

    def __init__(self, catalog) -> None:
        self.catalog = catalog
        self._files: list[str] | None = None
        self._keys: dict[str, list[tuple[str, str]]] | None = None
        self._go_folders: dict[str, list[tuple[str, list[str]]]] | None = None
        self._by_basename: dict[str, list[str]] | None = None
        self._package_dirs: list[tuple[str, str]] | None = None
        self._types: dict[tuple[str, str, str], str] = {}  # (file, receiver, scope) -> the class it holds, or ""
        self._clauses: dict[str, str] = {}  # Go file -> its `package` clause's name
        self.by_file = lru_cache(maxsize=512)(self._by_file)
        self.by_name = lru_cache(maxsize=4096)(self._by_name)
        self.imports = lru_cache(maxsize=512)(self._imports)
        self.language = lru_cache(maxsize=4096)(self._language)
        self.declared = lru_cache(maxsize=512)(self._declared)
        self.scope_kinds = lru_cache(maxsize=512)(self._scope_kinds)

    def _by_file(self, file: str) -> tuple[Entity, ...]:
        return tuple(e for e in self.catalog.by_file(file) if e.part == 0)

    def _by_name(self, name: str) -> tuple[Entity, ...]:
        return tuple(e for e in self.catalog.by_name(name) if e.part == 0 and e.kind in DEFINITION_KINDS)

    def _imports(self, file: str) -> tuple[Edge, ...]:
        return tuple(e for _, e in self.catalog.edges(file=file, kinds=("import",)))

    def _language(self, file: str) -> str:
        """A file's language as parsed (an extensionless script's too), else its extension's."""
        return next((e.language for e in self.by_file(file)), "") or language_for(file.rsplit("/", 1)[-1]) or ""

    def _declared(self, header: str) -> frozenset[str]:
        """Names a C header declares as callable (`int add_ints(int a, int b);`, a macro): its prototypes sit in
        the header's line windows, which are no definitions."""
        return frozenset(n for e in self.by_file(header) for n in re.findall(r"\b([A-Za-z_]\w*)\s*\(", e.body))

    @property
    def files(self) -> list[str]:
        if self._files is None:
            self._files = self.catalog.files()
        return self._files

    # -- modules -------------------------------------------------------------------------------------------
    def _module_keys(self) -> dict[str, list[tuple[str, str]]]:
        """Indexed files by the module path they stand for (`pkg/mod` for `pkg/mod.py` and `pkg/mod/__init__.py`),
        grouped by last path component: built once per graph, so a lookup never scans every file."""
        if self._keys is None:
            self._keys = {}
            for f in self.files:
                for suffix in _SOURCE_SUFFIXES:
                    if f.endswith(suffix):
                        key = f[: -len(suffix)]
                        self._keys.setdefault(key.rsplit("/", 1)[-1], []).append((key, f))
        return self._keys

    def module_files(self, module: str, from_file: str) -> list[str]:
        """Files a module path names: `.utils` beside the importer, `pkg.utils`, `./x`, `crate::a`, a Go package."""
        if not module:
            return []
        by_path = self._path_module(module, from_file)
        if by_path is not None:
            return by_path
        if module.startswith("."):
            if "/" in module or module.startswith("./") or module.startswith("../"):  # JS/TS relative path
                base = posixpath.normpath(posixpath.join(posixpath.dirname(from_file), module))
                base = _JS_SUFFIX.sub("", base)  # TypeScript's ESM imports name `./x.js` for `x.ts`
            else:  # Python relative import: one dot is the importer's package, each further dot one level up
                dots = len(module) - len(module.lstrip("."))
                folder = posixpath.dirname(from_file)
                for _ in range(dots - 1):
                    folder = posixpath.dirname(folder)
                rest = module.lstrip(".").replace(".", "/")
                base = posixpath.join(folder, rest) if rest else folder
            return sorted({f for key, f in self._module_keys().get(base.rsplit("/", 1)[-1], []) if key == base})
        if from_file.endswith(".go"):
            return self._go_package(module)
        if from_file.endswith((".py", ".pyi")):
            module = self._package_dir_module(module)
        path = module.replace("::", "/").replace(".", "/").removeprefix("crate/").removeprefix("self/")
        return sorted({f for key, f in self._module_keys().get(path.rsplit("/", 1)[-1], [])
                       if key == path or key.endswith("/" + path)})

    def _package_dir_module(self, module: str) -> str:
        """A Python import path as the workspace lays it out: setuptools' `package-dir` in pyproject.toml maps import
        prefixes to folders (`assay.flows` lives in `flows/`), which neither the path nor any suffix of it shows."""
        if self._package_dirs is None:
            self._package_dirs = package_dirs(getattr(self.catalog, "root", None))
        for prefix, folder in self._package_dirs:
            if module == prefix or module.startswith(prefix + "."):
                rest = module[len(prefix):].lstrip(".")
                return ".".join(p for p in (*folder.strip("/").split("/"), rest) if p)
        return module

    def _path_module(self, module: str, from_file: str) -> list[str] | None:
        """Files an import names by path or by namespace, in the languages that do (None for the others):
        C's `#include "x.h"` beside the includer or under an include folder; Ruby's `require "rack/utils"`
        (`lib/rack/utils.rb`) and `require_relative`; Lua's `require "pl.utils"`; Zig's `@import("x.zig")`; PHP's
        `use A\\B\\C` and Elixir's `alias Mix.Project` by the longest tail of the namespace that names a file
        (PSR-4 and Mix lay files out by namespace, under a prefix the import does not show)."""
        ext = from_file.rsplit(".", 1)[-1]
        folder = posixpath.dirname(from_file)
        if ext in _C_FAMILY:
            return self._exact(posixpath.join(folder, module)) or self._suffix(module)
        if ext == "rb":
            path = module if module.endswith(".rb") else module + ".rb"
            if module.startswith("."):
                return self._exact(posixpath.join(folder, path))
            return [f for f in self._suffix(path) if _on_load_path(f, path)]
        if ext == "lua":
            path = module.replace(".", "/")
            return self._suffix(path + ".lua") or self._suffix(path + "/init.lua")
        if ext == "zig":
            return self._exact(posixpath.join(folder, module)) if module.endswith(".zig") else []
        if ext == "php":
            return self._tail(module.split("\\"), ".php")
        if ext in ("ex", "exs"):
            return self._tail([_underscore(p) for p in module.split(".")], ".ex")
        return None

    def _suffix(self, path: str) -> list[str]:
        """Indexed files whose path is `path` or ends with `/path`."""
        if self._by_basename is None:
            self._by_basename = {}
            for f in self.files:
                self._by_basename.setdefault(f.rsplit("/", 1)[-1], []).append(f)
        path = posixpath.normpath(path).lstrip("/")
        return sorted(f for f in self._by_basename.get(path.rsplit("/", 1)[-1], []) if f == path or f.endswith("/" + path))

    def _exact(self, path: str) -> list[str]:
        path = posixpath.normpath(path)
        return [f for f in self._suffix(path) if f == path]

    def implementations(self, header: str) -> list[str]:
        """A C header's own source files (`lz4.h` -> `lz4.c` beside it): including the header is depending on them."""
        stem, _, ext = header.rpartition(".")
        if ext not in ("h", "hh", "hpp", "hxx"):
            return []
        return [f for source_ext in _C_SOURCES for f in self._exact(f"{stem}.{source_ext}")]

    def _tail(self, parts: list[str], ext: str) -> list[str]:
        """The files of the longest tail of a namespace path that names any; a bare last name only when one file has it."""
        for k in range(len(parts), 0, -1):
            hits = self._suffix("/".join(parts[-k:]) + ext)
            if hits and (k > 1 or len(hits) == 1):
                return hits
        return []

    def _go_package(self, path: str) -> list[str]:
        """A Go import path names a package folder, and brings in its files but not their tests. The folder is the
        import path's tail (`binding` in a checkout of `github.com/gin-gonic/gin`) or ends with it (a GOPATH tree);
        the standard library's packages (`errors`, `net/http`) are never the workspace's own `errors.go`."""
        if path.split("/", 1)[0] in _GO_STANDARD:
            return []
        if self._go_folders is None:  # package folders by their last part, which each way of matching shares
            packages: dict[str, list[str]] = {}
            for f in self.files:
                if f.endswith(".go") and not f.endswith("_test.go") and "/" in f:
                    packages.setdefault(posixpath.dirname(f), []).append(f)
            self._go_folders = {}
            for folder, files in packages.items():
                self._go_folders.setdefault(folder.rsplit("/", 1)[-1], []).append((folder, files))
        return sorted(f for folder, files in self._go_folders.get(path.rsplit("/", 1)[-1], [])
                      if folder == path or folder.endswith("/" + path) or path.endswith("/" + folder)
                      for f in files)

    def defined_in(self, files: list[str], name: str, hops: int = 1) -> list[Entity]:
        """Top-level `name` in the given files, following one re-export (`from .x import name` in `__init__`)."""
        out: list[Entity] = []
        for f in files:
            found = [e for e in self.by_file(f) if e.name == name and e.qualname == name]
            if not found and f.endswith(".lua"):  # a Lua module is the table it returns: `function M.quote`
                found = [e for e in self.by_file(f) if e.name == name and e.qualname.count(".") == 1]
            if not found and hops > 0:
                for imp in self.imports(f):
                    if (imp.alias or imp.name) == name:
                        found = self.defined_in(self.module_files(imp.module, f), imp.name, hops - 1)
            out.extend(found)
        return out

    def members(self, cls: Entity, name: str, depth: int = 5) -> list[Entity]:
        """Method `name` of a class or, failing that, of its indexed ancestors (nearest first)."""
        frontier, seen = [cls], set()
        for _ in range(depth):
            nxt: list[Entity] = []
            for c in frontier:
                if c.id in seen:
                    continue
                seen.add(c.id)
                hit = [e for e in self.by_file(c.file) if e.qualname == f"{c.qualname}.{name}"]
                if hit:
                    return hit
                for base in c.bases:
                    nxt.extend(self.resolve_name(base.rsplit(".", 1)[-1], c.file, c.qualname, kinds=CLASS_KINDS))
            frontier = nxt
        return []

    # -- names -----------------------------------------------------------------------------------------------
    def resolve_name(self, name: str, file: str, scope: str, kinds: frozenset[str] = DEFINITION_KINDS) -> list[Entity]:
        """A bare name as seen from `scope` in `file`: enclosing scopes, the file's top level, its imports, then (Java,
        Kotlin) its package's other files, which by convention share its folder."""
        local = self.by_file(file)
        parts = scope.split(".") if scope else []
        hidden = self._class_scopes(file, parts) if len(parts) > 1 and file.endswith((".py", ".pyi")) else set()
        for i in range(len(parts), -1, -1):
            if i in hidden:
                continue
            qual = ".".join([*parts[:i], name])
            hit = [e for e in local if e.qualname == qual and e.kind in kinds]
            if hit:
                return hit
        if file.endswith(_OPEN_TYPES) and self.language(file) in _IMPLICIT_THIS:  # `field(v)` in C++'s `A::get`: `A.field`
            hit = [e for e in self._sibling_methods(file, scope, name) if e.kind in kinds]
            if hit:
                return hit
        for imp in self.imports(file):
            if (imp.alias or imp.name) == name and imp.name != imp.module:
                files = self.module_files(imp.module, file) or self.module_files(f"{imp.module}.{imp.name}", file)
                return [e for e in self.defined_in(files, imp.name) if e.kind in kinds]
        if file.endswith(_MEMBER_IMPORTS):  # a Java or Kotlin package's classes (and Kotlin's functions) need no import
            folder = posixpath.dirname(file)
            return [e for e in self.by_name(name) if e.qualname == name and e.kind in kinds and e.file != file
                    and posixpath.dirname(e.file) == folder and (e.kind in CLASS_KINDS or file.endswith(".kt"))]
        if file.endswith(".go"):  # a Go package is its folder's files: a sibling's names need no import
            folder = posixpath.dirname(file)
            return [e for e in self.by_name(name) if e.qualname == name and e.kind in kinds and e.file != file
                    and e.file.endswith(".go") and posixpath.dirname(e.file) == folder]
        if file.rsplit(".", 1)[-1] in _C_FAMILY:
            return self._included(name, file, kinds)
        return []

    def _class_scopes(self, file: str, parts: list[str]) -> set[int]:
        """The enclosing scopes a Python function cannot see: a class body's names (`encoding` in a method of a class
        with a property `encoding` is the method's parameter or a global, never `self.encoding`). Code directly in a
        class body, its innermost scope, sees them."""
        functions, classes = self.scope_kinds(file)
        if ".".join(parts) not in functions:
            return set()
        return {i for i in range(1, len(parts)) if ".".join(parts[:i]) in classes}

    def _scope_kinds(self, file: str) -> tuple[frozenset[str], frozenset[str]]:
        """The qualnames of a file's functions and of its classes."""
        local = self.by_file(file)
        return (frozenset(e.qualname for e in local if e.kind in ("function", "method")),
                frozenset(e.qualname for e in local if e.kind in CLASS_KINDS))

    def _included(self, name: str, file: str, kinds: frozenset[str]) -> list[Entity]:
        """A C name an `#include "x.h"` brings in: defined in the header (a macro, an inline function), or declared
        there and defined in the header's own source (`x.c`) or, C names being global, once in the workspace."""
        headers = [h for imp in self.imports(file) for h in self.module_files(imp.module, file) if h != file]
        for header in headers:
            hit = [e for e in self.by_file(header) if e.qualname == name and e.kind in kinds]
            if hit:
                return hit
        declaring = [h for h in headers if name in self.declared(h)]
        for header in declaring:
            hit = [e for f in self.implementations(header) for e in self.by_file(f) if e.qualname == name and e.kind in kinds]
            if hit:
                return hit
        if not declaring:
            return []
        anywhere = [e for e in self.by_name(name) if e.qualname == name and e.kind in kinds and family(e.language) == "c"]
        return anywhere if len(anywhere) == 1 else []

    def imported_module(self, file: str, local: str) -> list[str]:
        """Files of a module the file imported under `local` (`import a.b as m`, `from pkg import util`, `* as ns`)."""
        for imp in self.imports(file):
            if (imp.alias or imp.name) != local:
                continue
            whole = imp.name == imp.module or imp.name == imp.module.rsplit("/", 1)[-1].rsplit(".", 1)[-1].rsplit("::", 1)[-1]
            if whole:
                return self.module_files(imp.module, file)
            sub = self.module_files(f"{imp.module}.{imp.name}", file)  # `from pkg import util`: a submodule
            if sub and not any(e.name == imp.name for f in sub for e in self.by_file(f) if e.qualname == imp.name):
                return sub
        return []

    def calls_from(self, holder: Entity) -> Iterator[tuple[str, Edge, Entity | None]]:
        """Each call site inside a definition, with the definition it resolves to (None: unresolved)."""
        for file, edge in self.catalog.edges(source_id=holder.id, kinds=("call",)):
            hits = self.resolve(file, edge)
            yield file, edge, hits[0] if hits else None

    def resolve(self, file: str, edge: Edge) -> list[Entity]:
        """What one call, reference or inheritance edge points at; [] when it cannot be told soundly."""
        if edge.kind == "import":
            return self.defined_in(self.module_files(edge.module, file), edge.name)
        if edge.kind == "inherit":
            return self._base(file, edge)
        recv = edge.receiver  # a call's, or a member ref's (`register(s.handleKV)`): resolved alike
        if not recv:
            return self.resolve_name(edge.name, file, edge.source)
        if recv in _SELF:
            return self._own_members(file, edge.source, edge.name)
        head = recv.split(".")[0].split("::")[0]
        holder = self.entity(edge.source_id)
        go_receiver = re.match(r"^func\s*\(\s*(\w+)\s", holder.signature) if holder is not None and file.endswith(".go") else None
        if go_receiver and go_receiver.group(1) == recv:  # `func (b *Base) Run()`: `b` is Go's self
            return self._own_members(file, edge.source, edge.name)
        if re.fullmatch(r"[A-Za-z_$][\w$]*", recv.replace("::", "_")):
            module = self.imported_module(file, head)  # `mod.f()`: a module imported whole
            found = self.defined_in(module, edge.name) if module and "." not in recv else []
            if found:
                return found
            classes = self.resolve_name(head, file, edge.source, CLASS_KINDS)
            for c in classes:  # `Class.method()`; `MemStore::with_capacity()` defined in an `impl` in another file
                hit = self.members(c, edge.name)
                if not hit and c.file.endswith(_OPEN_TYPES):
                    hit = self._methods_of(c.qualname, edge.name, c.file)
                if hit:
                    return hit
            for imp in self.imports(file):  # `pkg.mod.f()` after `import pkg.mod`
                if imp.module == recv:
                    return self.defined_in(self.module_files(imp.module, file), edge.name)
        if file.endswith((".py", ".pyi")) and re.fullmatch(r"(?:self\.)?[A-Za-z_]\w*", recv):
            key = (file, recv, edge.source)
            if key not in self._types:
                self._types[key] = self._python_type(file, recv, edge.source, holder)
            typed = self._types[key]
            for c in self.resolve_name(typed, file, edge.source, CLASS_KINDS) if typed else ():
                hit = self.members(c, edge.name)
                if hit:
                    return hit
        return self._qualified(file, recv, edge.name, edge.source)

    def _base(self, file: str, edge: Edge) -> list[Entity]:
        """The class an inherit edge names, seen from the subclass's enclosing scopes as a call's name is: `NBase`
        inside `namespace ns` (a Ruby module, a Java outer class) is `ns.NBase`; a qualified `ns::NBase` is read
        as a qualified call's receiver is. Never the subclass itself (`class Base : public ::Base` inside `ns`)."""
        owner = edge.receiver.rpartition(".")[0]
        if owner:
            as_call = edge.model_copy(update={"kind": "call", "receiver": owner})
            hits = [e for e in self.resolve(file, as_call) if e.kind in CLASS_KINDS]
            if hits:
                return hits
        scope = edge.source.rpartition(".")[0]
        for where in dict.fromkeys((scope, "")):  # the enclosing scopes; then the top level, past the subclass itself
            hits = [e for e in self.resolve_name(edge.name, file, where, CLASS_KINDS) if (e.file, e.qualname) != (file, edge.source)]
            if hits:
                return hits
        return self._in_namespace(file, scope, edge.name)

    def _in_namespace(self, file: str, scope: str, name: str) -> list[Entity]:
        """A class of an enclosing namespace declared in another file (C#, C++, PHP namespaces, Ruby modules span
        files): `IStore` in `namespace Kv.Storage` is `Kv.Storage.IStore`, in a file of the same language family."""
        if self.language(file) not in _SHARED_NAMESPACES or not scope:
            return []
        lang, parts = family(self.language(file)), scope.split(".")
        defined = [e for e in self.by_name(name) if e.kind in CLASS_KINDS and family(e.language) == lang]
        for i in range(len(parts), 0, -1):
            hit = [e for e in defined if e.qualname == ".".join([*parts[:i], name])]
            if hit:
                return hit
        return []

    def _python_type(self, file: str, recv: str, scope: str, holder: Entity | None) -> str:
        """The class a Python receiver holds, where the code says it: `s = Session()` or `s: Session` in the
        calling function (its parameters too), `self.adapter = HTTPAdapter()` or `adapter: HTTPAdapter` in its
        class. A class by its written name only: anything computed stays unknown."""
        name = recv.removeprefix("self.")
        if recv.startswith("self."):
            owner = self._enclosing_class(file, scope)
            if owner is None:
                return ""
            texts = [owner.body] + [e.body for e in self.by_file(file) if e.qualname.startswith(owner.qualname + ".")]
            held = rf"self\.{name}"
            annotations = (rf"self\.{name}\s*:\s*['\"]?([A-Z]\w*)", rf"^\s*{name}\s*:\s*['\"]?([A-Z]\w*)")  # class level
        else:
            texts = [holder.signature, holder.body] if holder is not None else []
            held = name
            annotations = (rf"[(,]\s*{name}\s*:\s*['\"]?([A-Z]\w*)",)  # a parameter's
        # a statement of its own, so `f(session=Session())` is no assignment to `session`
        assigned = re.compile(rf"^\s*{held}\s*(?::\s*['\"]?([A-Z]\w*)[^=\n]*)?=\s*([A-Z]\w*)\s*\(", re.M)
        for text in texts:
            if m := assigned.search(text):
                return m.group(1) or m.group(2)
        for pattern in annotations:
            for text in texts:
                if m := re.search(pattern, text, re.M):
                    return m.group(1)
        return ""

    def _qualified(self, file: str, recv: str, name: str, scope: str = "") -> list[Entity]:
        """`Mix.Utils.bar()`, or `Utils.bar()` after Elixir's `alias Mix.Utils`: the definition whose qualified name
        is the receiver's, alias expanded, and the called name's. Failing that, the receiver as seen from the
        caller's enclosing scopes, innermost first: C#'s `Runtime.Call()` inside `namespace Python.Runtime` is
        `Python.Runtime.Runtime.Call`, wherever that class's file is."""
        qualified = recv.replace("::", ".")
        if not re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", qualified):
            return []
        head, _, rest = qualified.partition(".")
        for imp in self.imports(file):
            if (imp.alias or imp.name) == head and imp.module.endswith("." + imp.name):
                qualified = imp.module + (f".{rest}" if rest else "")
                break
        parts = scope.split(".") if scope else []
        # C++'s `app::run()` is stored with the receiver `app`: in the C family one name may be a namespace or type,
        # so it is an owner too; elsewhere one name is an object (`session.get()`), whose type is unknown
        alone = "::" in recv or file.rsplit(".", 1)[-1] in _C_FAMILY
        owners = ([qualified] if "." in qualified or alone else []) + [".".join([*parts[:i], qualified]) for i in range(len(parts), 0, -1)]
        if not owners:
            return []
        defined = self.by_name(name)
        for owner in owners:
            hit = [e for e in defined if e.qualname == f"{owner}.{name}"]
            if hit:
                return hit
        return []

    def _enclosing_class(self, file: str, scope: str) -> Entity | None:
        parts = scope.split(".") if scope else []
        local = self.by_file(file)
        for i in range(len(parts), 0, -1):
            qual = ".".join(parts[:i])
            hit = [e for e in local if e.qualname == qual and e.kind in CLASS_KINDS]
            if hit:
                return hit[0]
        return None

    def _own_members(self, file: str, scope: str, name: str) -> list[Entity]:
        """`self.m()` in a method: `m` of its class or the class's ancestors; where a type's methods may sit in
        other files (`_OPEN_TYPES`), or its class is not in this file at all, `m` beside the calling method."""
        owner = self._enclosing_class(file, scope)
        hit = self.members(owner, name) if owner is not None else []
        if hit or (owner is not None and not file.endswith(_OPEN_TYPES)):
            return hit
        return self._sibling_methods(file, scope, name)

    def _sibling_methods(self, file: str, scope: str, name: str) -> list[Entity]:
        """`self.evict_one()` in `MemStore.put`: `MemStore.evict_one` by qualified name, in a file of the caller's
        language (of its package, in Go), the nearest by path where several crates or modules define one."""
        owner, _, _ = scope.rpartition(".")
        return self._methods_of(owner, name, file) if owner else []

    def _methods_of(self, owner: str, name: str, file: str) -> list[Entity]:
        """Method `name` of the type qualified `owner`, wherever its methods sit (a Rust `impl` in another file, a Go
        receiver in another file of the package), in `file`'s language; the nearest by path where several have one."""
        lang, folder = family(self.language(file)), posixpath.dirname(file)
        hits = [e for e in self.by_name(name) if e.qualname == f"{owner}.{name}" and family(e.language) == lang
                and (not file.endswith(".go") or posixpath.dirname(e.file) == folder)]
        if len(hits) < 2:
            return hits
        shared = {e.id: len(posixpath.commonpath([file, e.file])) for e in hits}
        best = max(shared.values())
        return [e for e in hits if shared[e.id] == best]

    def targets(self, query: str) -> list[Entity]:
        """Definitions a query names: `Session.send`, `send`, `pkg/mod.py:send`, or a receipt `pkg/mod.py:120` (the
        innermost definition covering that line). The file part as pasted: `./`, `\\`, absolute, either normal form.
        A name as its language writes it (`a::C::m`, Go's `pkg.(*C).m`) is read as the index writes it (`dotted_name`)."""
        receipt = split_receipt(query)
        if receipt is not None:
            line = receipt[1]
            return [hit for f in self.files_named(receipt[0]) if (hit := innermost(self.catalog.by_file(f), line, DEFINITION_KINDS))]
        package = go_package(query)
        file, query = split_file(dotted_name(query))
        found = self._named(query)
        if not found and not package:  # Go's value receiver `admin.Server.Start`, a function `api.NewServer`
            package, query = _go_led(query)
            found = [e for e in self._named(query) if e.qualname == query] if package else []
        if package:
            found = [e for e in found if self.in_go_package(e.file, package)]
        if file and found:
            files = self.files_named(file)
            found = [e for e in found if e.file in files]
        return found

    def _named(self, query: str) -> list[Entity]:
        short = query.rsplit(".", 1)[-1]
        return [e for e in self.by_name(short) if e.qualname == query or e.name == query or e.qualname.endswith("." + query)]

    def in_go_package(self, file: str, package: str) -> bool:
        """Whether a Go file belongs to the package a name is qualified with: its folder is the package path or ends
        with it (`api`, `internal/api`), or the path ends with the folder (an import path: `github.com/acme/kv/api`);
        else its `package` clause names it (`main` in `cmd/server/`, a file at the top of the module)."""
        if not file.endswith(".go"):
            return False
        folder = posixpath.dirname(file)
        if folder and (folder == package or folder.endswith("/" + package) or package.endswith("/" + folder)):
            return True
        return ("/" not in package or not folder) and self._go_clause(file) == package.rsplit("/", 1)[-1]

    def _go_clause(self, file: str) -> str:
        """The name a Go file's `package` clause gives (its first lines' passage holds it); '' when none is indexed."""
        if file not in self._clauses:
            heads = sorted((e for e in self.catalog.by_file(file) if e.kind not in DEFINITION_KINDS), key=lambda e: e.start_line)
            found = next((m for e in heads if (m := re.search(r"(?m)^package\s+(\w+)", e.body))), None)
            self._clauses[file] = found.group(1) if found else ""
        return self._clauses[file]

    def files_named(self, file: str) -> set[str]:
        """Indexed files a name's file part means: that file, or every file ending in it (`requests/utils.py`).
        Compared in NFC: a name typed NFC finds a file stored NFD (macOS) and back. A folder symlinked inside the
        workspace names the files where it points (the index skips symlinks, so it holds them only there)."""
        root = getattr(self.catalog, "root", None)
        found = self._files_ending(file_key(file, root, backslash=False)) if "\\" in file else set()  # `we\ird.py`
        if found:
            return found
        key = file_key(file, root)
        found = self._files_ending(key)
        if not found and root is not None and not posixpath.isabs(key):
            real = os.path.realpath(os.path.join(root, key))
            if real.startswith(os.path.join(str(root), "")):
                found = self._files_ending(file_key(os.path.relpath(real, root)))
        return found

    def _files_ending(self, key: str) -> set[str]:
        return {f for f in self.files if (n := unicodedata.normalize("NFC", f)) == key or n.endswith("/" + key)}

    def entity(self, entity_id: str) -> Entity | None:
        """The definition an edge sits in, by id ('' = module level: None)."""
        return self.catalog.get([entity_id]).get(entity_id) if entity_id else None

    def is_test(self, holder: Entity | None, file: str) -> bool:
        """Whether a site is test code: in a test file, or in a definition marked as a test (`#[test] fn`, JUnit's
        `@Test`) or inside a test-only module (Rust's `#[cfg(test)] mod tests` beside the code it tests)."""
        if is_test_path(file):
            return True
        if holder is None:
            return False
        decorators = holder.facts.decorators if holder.facts is not None else []
        if is_marked_test(holder.qualname, decorators):  # the common case, without reading the file's modules
            return True
        modules = [(e.qualname, e.facts.decorators) for e in self.by_file(holder.file) if e.kind == "module" and e.facts is not None]
        return bool(modules) and is_marked_test(holder.qualname, decorators, modules)


def _row(holder: Entity | None, file: str, edge: Edge, resolved: bool, depth: int = 1, is_test: bool = False) -> GraphRow:
    if holder is None:  # module-level site: the file itself holds it
        return GraphRow(entity=f"<module {file}>", kind="module", file=file, line=0, site_file=file, site_line=edge.line,
                        relation=edge.kind, resolved=resolved, via="" if resolved else (edge.receiver or edge.name), depth=depth,
                        is_test=is_test)
    return GraphRow(entity=holder.qualname, kind=holder.kind, file=holder.file, line=holder.start_line, site_file=file,
                    site_line=edge.line, relation=edge.kind, resolved=resolved,
                    via="" if resolved else (f"{edge.receiver}.{edge.name}" if edge.receiver else edge.name), depth=depth,
                    is_test=is_test)


def sites(graph: Graph, target: Entity, kinds: tuple[str, ...], unresolved: bool) -> list[tuple[GraphRow, str]]:
    """Sites whose edge names the target: resolved ones that point at it, and (optionally) name matches that
    cannot be resolved. Returns (row, holder id)."""
    out: list[tuple[GraphRow, str]] = []
    found = graph.catalog.edges(name=target.name, kinds=kinds)
    for file, imp in graph.catalog.edges(name=target.name, kinds=("import",)):
        if imp.alias and imp.alias != target.name:  # `helper as h`: the file calls it `h`
            found += [(f, e) for f, e in graph.catalog.edges(name=imp.alias, file=file, kinds=kinds) if e.kind != "import"]
    for file, edge in found:
        hits = graph.resolve(file, edge)
        holder = graph.entity(edge.source_id)
        if any(h.id == target.id for h in hits):
            out.append((_row(holder, file, edge, True, is_test=graph.is_test(holder, file)), edge.source_id))
        elif not hits and unresolved and _may_reach(graph, target, file, edge):
            out.append((_row(holder, file, edge, False, is_test=graph.is_test(holder, file)), edge.source_id))
    return out


def _may_reach(graph: Graph, target: Entity, file: str, edge: Edge) -> bool:
    """Whether an unresolved call named like the target may still be a call of it: never from another language
    family (a Go `s.Run()` is no caller of a Python `Runner.Run`), nor on `self` (its class lacks the name); a bare
    `f()` only where it can name the target (a top-level definition, or a method through an implicit `this`). A
    member passed as a value (`register(h.serve)`) is read as a call on it."""
    as_call = edge.kind == "call" or (edge.kind == "ref" and bool(edge.receiver))
    if not as_call or edge.receiver in _SELF or family(graph.language(file)) != family(target.language):
        return False
    return bool(edge.receiver) or target.qualname == target.name or graph.language(file) in _IMPLICIT_THIS


def _per_site(rows_by_target: Iterable[list[GraphRow]]) -> list[GraphRow]:
    """The rows of several same-named targets, one per site: overloads (`add(String)`, `add(Item)`) and same-named
    definitions find the same edges each. Two calls on one line stay two, as one target lists them."""
    kept: dict[tuple, int] = {}
    out: list[GraphRow] = []
    for rows in rows_by_target:
        seen: dict[tuple, int] = {}
        for r in rows:
            key = (r.site_file, r.site_line, r.relation, r.resolved, r.via, r.entity)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > kept.get(key, 0):
                kept[key] = seen[key]
                out.append(r)
    return out


def _finish(command: str, query: str, targets: list[Entity], rows: list[GraphRow], limit: int, note: str = "",
            tests: list[GraphRow] | None = None) -> GraphResult:
    rows = sorted(rows, key=lambda r: (not r.resolved, r.depth, r.site_file, r.site_line))
    shown = rows[:limit]
    tests = tests or []
    return GraphResult(command=command, query=query, targets=[f"{t.qualname} {t.file}:{t.start_line}" for t in targets],
                       rows=shown, total=len(rows), truncated=max(0, len(rows) - len(shown)), tests=tests[:limit],
                       tests_total=len(tests), note=note)


def named_targets(graph: Graph, query: str) -> list[Entity]:
    """The definitions a query names; a name with none is an error, so a typo never reads as "no callers"."""
    targets = graph.targets(query)
    if not targets:
        raise ValueError(_none_named(graph, query))
    return targets


def _none_named(graph: Graph, query: str) -> str:
    """Why a query names no definition: its file part is no indexed file, no definition covers a receipt's line,
    the name is defined only in other files, or it is nowhere in the index."""
    file, name = split_file(dotted_name(query))
    package, bare = (go_package(query), name) if go_package(query) else _go_led(name)
    elsewhere = sorted({e.file for e in graph.targets(bare)}) if package and not file else []
    if elsewhere and all(f.endswith(".go") for f in elsewhere):  # `nope.(*Server).Start`: a Go name, in no such package
        shown = ", ".join(elsewhere[:5]) + (" ..." if len(elsewhere) > 5 else "")
        return f"no Go package {package!r} defines {bare!r}; it is defined in {shown} (qualify it with one of their folders)"
    if not file:
        return f"no definition named {query!r} in the index; try `assay search {query}` for similar names"
    if found := _RECEIPT_LINE.fullmatch(name):
        files = graph.files_named(file)
        if not files:
            return f"{file!r} is not an indexed file (paths are workspace-relative, e.g. src/app.py:120)"
        last = max((e.end_line for f in files for e in graph.catalog.by_file(f)), default=0)
        beyond = line_problem(next(iter(files)) if len(files) == 1 else file, int(found.group(1)), last)
        if beyond:
            return beyond
        return (f"no definition covers {file}:{name} (a blank line, a comment or module-level code); give the "
                "definition's name, or a line inside it")
    elsewhere = sorted({e.file for e in graph.targets(name)})
    shown = ", ".join(elsewhere[:5]) + (" ..." if len(elsewhere) > 5 else "")
    where = f"; {name!r} is defined in {shown}" if elsewhere else ""
    if not graph.files_named(file):
        return f"{file!r} is not an indexed file (paths are workspace-relative, e.g. src/app.py:{name}){where}"
    if where:
        return f"no definition named {name!r} in {file}{where}"
    return f"no definition named {name!r} in {file} nor elsewhere in the index; try `assay search {name}` for similar names"


def line_problem(file: str, line: int, last: int) -> str | None:
    """Why `line` is no line of `file`, whose indexed entities end at `last` (None when it is one): get_entity and
    the graph commands give the same reason, where the graph's "no definition covers" would mislead."""
    if line < 1:
        return f"line must be 1 or more (lines count from 1; got {line})"
    if line > last:
        return f"line {line} is past the end of {file} (the index holds lines 1-{last})"
    return None


def callers(catalog, query: str, limit: int = 50, unresolved: bool = True) -> GraphResult:
    graph = Graph(catalog)
    targets = named_targets(graph, query)
    rows = _per_site([row for row, _ in sites(graph, t, ("call",), unresolved)] for t in targets)
    return _finish("callers", query, targets, rows, limit)


def references(catalog, query: str, limit: int = 50, unresolved: bool = True) -> GraphResult:
    graph = Graph(catalog)
    targets = named_targets(graph, query)
    rows = _per_site([row for row, _ in sites(graph, t, ("call", "import", "inherit", "ref"), unresolved)] for t in targets)
    return _finish("references", query, targets, rows, limit)


def callees(catalog, query: str, limit: int = 50) -> GraphResult:
    graph = Graph(catalog)
    targets = named_targets(graph, query)
    rows: list[GraphRow] = []
    for t in targets:
        for file, edge, h in graph.calls_from(t):
            if h is not None:
                rows.append(GraphRow(entity=h.qualname, kind=h.kind, file=h.file, line=h.start_line, site_file=file,
                                     site_line=edge.line, relation="call"))
            else:
                rows.append(GraphRow(entity=edge.name, file=file, line=0, site_file=file, site_line=edge.line, relation="call",
                                     resolved=False, via=f"{edge.receiver}.{edge.name}" if edge.receiver else edge.name))
    return _finish("callees", query, targets, rows, limit)


DELEGATION_CUE = re.compile(r"\b(delegat\w*|calls? into|invok\w*|dispatch\w*|forward(?:s|ed|ing)? to|hands? off)\b", re.I)


def delegation_callees(catalog, question: str, names: Iterable[str], max_targets: int = 4) -> frozenset[tuple[str, str]]:
    """(file, qualname) of the definitions that the functions a question names call, when it asks what they
    delegate to or invoke (the graph knows; neither list ranks a callee the question never names). A dotted name
    led by an instance (`pytester.runpytest_subprocess`) falls back to its last part."""
    if not DELEGATION_CUE.search(question):
        return frozenset()
    graph = Graph(catalog)
    found: set[tuple[str, str]] = set()
    for name in names:
        targets = graph.targets(name) or (graph.targets(name.rsplit(".", 1)[-1]) if "." in name else [])
        for target in targets[:max_targets]:
            found.update((h.file, h.qualname) for _, _, h in graph.calls_from(target) if h is not None)
    return frozenset(found)


def _walk_callers(graph: Graph, targets: list[Entity], depth: int) -> tuple[list[GraphRow], list[Entity], set[str]]:
    """Resolved callers level by level up to `depth`: (rows, the last level's callers, every holder seen). The
    last level's callers are not walked further; a non-empty list means the walk stopped at `depth`."""
    rows: list[GraphRow] = []
    seen: set[str] = {t.id for t in targets}
    frontier = list(targets)
    for level in range(1, depth + 1):
        nxt: list[Entity] = []
        for t in frontier:
            for row, holder_id in sites(graph, t, ("call", "ref"), unresolved=False):
                key = holder_id or f"{row.site_file}:{row.site_line}"
                if key in seen:
                    continue
                seen.add(key)
                rows.append(row.model_copy(update={"depth": level}))
                holder = graph.entity(holder_id)
                if holder is not None:
                    nxt.append(holder)
        frontier = nxt
        if not frontier:
            break
    return rows, frontier, seen


def _unexplored(graph: Graph, frontier: list[Entity], seen: set[str]) -> bool:
    """Whether any caller of the last level walked has a resolved caller not seen yet (stops at the first)."""
    return any((holder_id or f"{row.site_file}:{row.site_line}") not in seen
               for t in frontier for row, holder_id in sites(graph, t, ("call", "ref"), unresolved=False))


def impact(catalog, query: str, depth: int = 3, limit: int = 100) -> GraphResult:
    """Transitive resolved callers up to `depth`, and the tests among everything that reaches the target
    (test functions that call it, directly or through callers, and test files that import it)."""
    graph = Graph(catalog)
    targets = named_targets(graph, query)
    rows, frontier, seen = _walk_callers(graph, targets, depth)
    tests = [r for r in rows if r.is_test]
    for t in targets:  # a test file that imports the target tests it even if no call was resolved
        for row, _ in sites(graph, t, ("import",), unresolved=False):
            if row.is_test and not any(x.site_file == row.site_file for x in tests):
                tests.append(row)
    reached = list(targets)
    reached += [h for r in rows if r.kind in ("function", "method") for h in graph.by_name(r.entity.rsplit(".", 1)[-1])
                if h.qualname == r.entity and h.file == r.file]
    for e in reached:  # `session.merge_environment_settings(...)` in a test: a name defined once, called on an object
        if len(graph.by_name(e.name)) != 1 or e.kind not in ("method", "function"):
            continue
        for file, edge in catalog.edges(name=e.name, kinds=("call",)):
            if not edge.receiver or any(x.site_file == file and x.site_line == edge.line for x in tests):
                continue
            holder = graph.entity(edge.source_id) if is_test_path(file) or file.endswith(_MARKED_TESTS) else None
            if graph.is_test(holder, file) and _may_reach(graph, e, file, edge) and not graph.resolve(file, edge):
                tests.append(_row(holder, file, edge, False, is_test=True).model_copy(
                    update={"via": f"{edge.receiver}.{edge.name} (only definition of {e.name})"}))
    sure = sum(1 for x in tests if x.resolved)
    if tests:
        note = f"{len(tests)} test site(s) reach it ({sure} resolved, {len(tests) - sure} by a name defined only once)"
    elif _unexplored(graph, frontier, seen):  # a test may sit beyond the last level walked: not "untested"
        note = f"no test reaches it within depth {depth} (raise --depth)"
    else:
        note = "no test reaches it through resolved calls"
    return _finish("impact", query, targets, rows, limit, note, sorted(tests, key=lambda r: (r.depth, r.site_file, r.site_line)))


_FOLDER_IMPORTS = frozenset({*_C_FAMILY, "rb", "lua", "zig"})  # `Graph._path_module`'s languages that read the folder


def _importer_key(module: str, source: str) -> tuple[str, str, bool, str]:
    """What `Graph.module_files(module, source)` reads of the importer: its extension (as `_path_module` and the
    `.go`/`.py` tests see it) and, for a relative import or a language that imports by path, its folder."""
    ext = source.rsplit(".", 1)[-1]
    folder = posixpath.dirname(source) if module.startswith(".") or ext in _FOLDER_IMPORTS else ""
    return module, ext, "." in source, folder


def file_importers(catalog, sources: frozenset[str] | None = None) -> dict[str, int]:
    """How many other files import each file (import edges resolved to files; a file's own imports aside), counting
    only importers with these extensions when given. Python's `from pkg import mod` imports the file `pkg/mod.py`
    when there is one, not `pkg/__init__.py`."""
    graph = Graph(catalog)
    resolved: dict[tuple[str, ...], list[str]] = {}

    def module_files(module: str, source: str) -> list[str]:
        # memoised: thousands of files import the same few modules (32k calls at 4.7k files)
        key = _importer_key(module, source)
        if key not in resolved:
            resolved[key] = graph.module_files(module, source)
        return resolved[key]

    importers: dict[str, set[str]] = {}
    for source, module, name in catalog.import_modules():
        if is_test_path(source):
            continue  # a test imports what it tests, not what the code is built on
        if sources is not None and source.rsplit(".", 1)[-1] not in sources:
            continue
        targets: list[str] = []
        if name and source.endswith((".py", ".pyi")):
            targets = module_files(module + ("" if module.endswith(".") else ".") + name, source)
        targets = targets or module_files(module, source)
        if not targets and name and source.endswith(_MEMBER_IMPORTS):
            targets = module_files(f"{module}.{name}", source)
        for target in [*targets, *(s for t in targets for s in graph.implementations(t))]:
            if target != source:
                importers.setdefault(target, set()).add(source)
    return {f: len(by) for f, by in importers.items()}


CENTRALITY_FULL_AT = 30  # importers that make a file fully central, however few the top file has


def import_centrality(catalog, full_at: int = CENTRALITY_FULL_AT) -> dict[str, float]:
    """Each imported file's importers on a log scale (0..1], a share of the most-imported file's or of `full_at`,
    whichever is more: the modules the rest of the code is built on (`dependencies/utils.py`, `core/schemas.ts`)
    answer most "how does X work". Seven importers are weak evidence: in regex, `exec.rs` (7) had been as central
    as zod's `util.ts` (57), and outranked `backtrack.rs` for "bounded backtracking" (bench_topics 0.817 -> 0.824 at
    30, regex 0.772 -> 0.808; semble dev 0.870 either way; SWE-QA unchanged; 50 cost requests a hit, 100 zod's
    architecture). Only the imports of `CENTRAL_SOURCES` count."""
    counts = file_importers(catalog, CENTRAL_SOURCES)
    top = math.log1p(max([*counts.values(), full_at]))
    return {f: math.log1p(n) / top for f, n in counts.items()} if top else {}


_CENTRALITY: dict[str, tuple[object, dict[str, float]]] = {}  # workspace -> (index generation, centrality)
CENTRALITY_FILE = "centrality.json"  # in `.assay/`: {"generation": [...], "centrality": {file: share}}


def workspace_centrality(root) -> dict[str, float]:
    """`import_centrality` of a workspace's index, once per index generation: kept in memory and in
    `.assay/centrality.json`, since resolving every import costs 0.2-0.5 s at 4.7k files (21k imports), over 2 s
    on a busy machine, and each CLI search and ask is a new process."""
    from assay.stages.index.store import index_generation, per_generation

    generation = index_generation(root)
    return per_generation(_CENTRALITY, str(root), generation, lambda: _stored_centrality(Path(root), generation))


def _stored_centrality(root: Path, generation: tuple[int, int, int] | None) -> dict[str, float]:
    """The centrality stored for this index generation, else computed and stored (best effort) for the next process."""
    stored = read_centrality(root, generation)
    if stored is not None:
        return stored
    from assay.stages.index.store import Catalog

    catalog = Catalog(root)
    try:
        computed = import_centrality(catalog)
    finally:
        catalog.close()
    if generation is not None:
        _write_centrality(root, generation, computed)
    return computed


def read_centrality(root: Path, generation: tuple[int, int, int] | None) -> dict[str, float] | None:
    """`.assay/centrality.json`'s values when it was written for this index generation; None when stale or unreadable."""
    import json

    from assay.stages.core.workspace import state_dir

    try:
        data = json.loads((state_dir(root) / CENTRALITY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or generation is None or data.get("generation") != list(generation):
        return None
    values = data.get("centrality")
    if not isinstance(values, dict) or not all(isinstance(v, float | int) for v in values.values()):
        return None
    return {str(f): float(v) for f, v in values.items()}


def _write_centrality(root: Path, generation: tuple[int, int, int], centrality: dict[str, float]) -> None:
    """Atomic (a temporary file renamed over the old); skipped where `.assay/` is not writable: only a cache."""
    import json

    from assay.stages.core.workspace import state_dir

    path = state_dir(root) / CENTRALITY_FILE
    tmp = path.with_name(f"{CENTRALITY_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(json.dumps({"generation": list(generation), "centrality": centrality}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


def _tests_line(result: GraphResult) -> str:
    """impact's tests, as many as the rows' limit allows (a popular function reaches hundreds: one line each would not do)."""
    shown = ", ".join(f"{t.entity} ({t.site_file}:{t.site_line}{'' if t.resolved else ', unresolved'}){' STALE' if t.stale else ''}"
                      for t in result.tests)
    more = result.tests_total - len(result.tests)
    return "tests: " + (shown or "none") + (f" ... and {more} more (raise --limit)" if more > 0 else "")


STALE_NAMED = 5  # stale files named on the header line; the rest are counted


def stale_line(files: list[str]) -> str:
    """The header line naming a result's stale files (the CLI prints it on stderr, MCP in the text)."""
    named = ", ".join(files[:STALE_NAMED]) + (f" and {len(files) - STALE_NAMED} more" if len(files) > STALE_NAMED else "")
    return f"STALE: {len(files)} file(s) here changed or were deleted since indexing ({named}); run `assay index`"


def render(result: GraphResult, words: Callable[[str], str] = lambda text: text) -> str:
    """One row per site: `holder  file:line  (site file:line)`, unresolved rows marked, with a count line. `words`
    rewords Assay's own lines for another door (MCP: tools, not commands); rows and names stay verbatim."""
    if not result.targets:
        return words(result.note)
    lines = [f"{result.command} {result.query}: " + "; ".join(result.targets)]
    if result.stale_files:
        lines.append(words(stale_line(result.stale_files)))
    for r in result.rows:
        mark = "" if r.resolved else f"  [unresolved: {r.via}]"
        depth = f"  depth {r.depth}" if result.command == "impact" else ""
        where = f"{r.file}:{r.line}" if r.line else r.file
        stale = "  STALE" if r.stale else ""
        lines.append(f"  {r.entity}  {where}  ({r.relation} at {r.site_file}:{r.site_line}){depth}{mark}{stale}")
    count = f"{result.total} site(s)" + (f", {result.truncated} more not shown (raise --limit)" if result.truncated else "")
    resolved = sum(1 for r in result.rows if r.resolved)
    lines.append(words(f"{count}; {resolved} resolved, {len(result.rows) - resolved} unresolved shown"))
    if result.command == "impact":
        lines.append(_tests_line(result))
    if result.note:
        lines.append(words(result.note))
    return "\n".join(lines)



COMMANDS = ("callers", "callees", "references", "impact")
MAX_DEPTH = 6  # impact's most caller levels (the CLI's `--depth` range is 1-6)
FIRST_GRAPH_PARSER = 3  # the parser version that began recording edges (`stages.index.parse.PARSER_VERSION`)


def require_name(name: str) -> None:
    """One message for an empty or blank NAME in every command that takes one (graph commands, history)."""
    if not name.strip():
        raise ValueError("NAME is empty; give a definition: `helper`, `Class.method` or `path/to/file.py:name`")


def check_arguments(command: str, query: str, depth: int, limit: int) -> None:
    """Refuse what would silently mean something else (`rows[:-1]`, a clamped depth, an empty name): the MCP door
    has no option parser to do it."""
    if command not in COMMANDS:
        raise ValueError(f"unknown graph command {command!r}; use {', '.join(COMMANDS)}")
    require_name(query)
    if limit < 1:
        raise ValueError(f"--limit must be 1 or more (got {limit})")
    if command == "impact" and not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"--depth must be between 1 and {MAX_DEPTH} (got {depth})")


def _target_file(target: str) -> str:
    """The file of a `qualname file:line` target."""
    return target.partition(" ")[2].rpartition(":")[0]


def _marked(rows: list[GraphRow], stale: set[str]) -> list[GraphRow]:
    return [r.model_copy(update={"stale": True}) if {r.file, r.site_file} & stale else r for r in rows]


def mark_stale(result: GraphResult, stale: set[str]) -> GraphResult:
    """Rows and tests whose file changed or vanished since indexing marked, and the result's stale files named:
    their lines (and edges) are the index's, not the code's."""
    if not stale:
        return result
    rows, tests = _marked(result.rows, stale), _marked(result.tests, stale)
    files = {_target_file(t) for t in result.targets} | {f for r in rows + tests for f in (r.file, r.site_file)}
    return result.model_copy(update={"rows": rows, "tests": tests, "stale_files": sorted(files & stale)})


def query_workspace(root, command: str, query: str, depth: int = 3, limit: int = 50) -> GraphResult:
    """One graph question against a workspace's catalog (the doors: CLI and MCP)."""
    from assay.stages.index.store import Catalog, read_manifest
    from assay.stages.query.freshness import check

    check_arguments(command, query, depth, limit)
    manifest = read_manifest(root)
    if manifest.parser < FIRST_GRAPH_PARSER:  # a later parser reads more edges; an index in between still has a graph
        raise ValueError("this index was built before the code graph existed; run `assay index` once to add it")
    catalog = Catalog(root)
    try:
        if command == "impact":
            result = impact(catalog, query, depth=depth, limit=limit)
        else:
            result = {"callers": callers, "callees": callees, "references": references}[command](catalog, query, limit=limit)
    finally:
        catalog.close()
    return mark_stale(result, check(root, manifest)[1])


_CALLED_BY: dict[str, tuple[object, tuple[dict[str, int], Graph]]] = {}  # workspace -> (index generation, (counts, resolver))
_CALLED_BY_LOCK = threading.Lock()


def called_by_counts(catalog, entity_ids: list[str], cap: int = 60, memo: tuple[str, object] | None = None) -> dict[str, int]:
    """Resolved call sites per entity, for the report's "called by N sites" (names with more than `cap`
    same-named sites are skipped: too common to count cheaply). `memo` = (workspace, index generation):
    counts, and the resolver's per-file lookups, are kept until the index changes, since answers keep
    citing the same definitions and their callers sit in the same files."""
    from assay.stages.index.store import per_generation

    with _CALLED_BY_LOCK:  # one resolver per workspace, lent to one query at a time
        if memo is None:
            known: dict[str, int] = {}
            graph = Graph(catalog)
        else:
            known, graph = per_generation(_CALLED_BY, memo[0], memo[1], lambda: ({}, Graph(catalog)))
            graph.catalog = catalog  # this query's open connection; the cached lookups stay valid for the generation
        todo = [i for i in dict.fromkeys(entity_ids) if i not in known]
        found = catalog.get(todo) if todo else {}
        for eid in todo:
            ent = found.get(eid)
            if ent is None or ent.kind not in DEFINITION_KINDS or catalog.count_edges(ent.name, ("call",)) > cap:
                known[eid] = -1  # not counted
                continue
            known[eid] = sum(1 for _ in sites(graph, ent, ("call",), unresolved=False))
        return {eid: known[eid] for eid in entity_ids if known.get(eid, -1) >= 0}

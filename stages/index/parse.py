"""Parse stage: source bytes -> entities, deterministically, with tree-sitter.

Bodies are indexed (not just signatures). Containers (classes, sections) keep a
skeleton body with their members elided, so no code is stored twice; long
bodies are split on line boundaries with the signature repeated in each part.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

from tree_sitter import Node, Parser, Tree

from assay.stages.core.artifacts import CodeFacts, Entity, ParsedFile
from assay.stages.index.doc_markup import strip_doc_markup
from assay.stages.index.edges import extract_edges
from assay.stages.index.facts import facts_of
from assay.stages.index.idioms import ELIXIR_DEFS, child_of, elixir_doc, elixir_head, elixir_name, zig_kind, zig_name
from assay.stages.index.languages import (
    CONTAINER_KINDS, HTML_LANDMARKS, NOTEBOOK, SPECS, LanguageSpec, node_text, refine_language, uses_tree_sitter,
)
from assay.stages.index.notebook import python_view
from assay.stages.index.source_text import source_lines, utf8_source

# Bump when what unchanged files index to changes: entities, or the BM25 tokens made from them
# (2: a file entity per code file, stemmed BM25 tokens; 3: code facts per definition, graph edges;
# 4: CommonJS `require` recorded as import edges; 5: a class passage names its decorated members;
# 6: Kotlin, Swift, Scala, Lua, Elixir, Haskell, Zig, Dart, Objective-C and shell parsed into definitions;
# 7: doc comments only in their definitions, Python module docstrings in the file row, doc markup stripped,
# C# and C++ namespaces no entities; 8: a `.h` header that reads as C++ parsed as C++; 9: C#'s file-scoped
# namespaces name what follows them; 10: doc-comment tags matched in lower case only, `Foo<A>` is a type;
# 11: doc comments above Go `type`/`const`, Rust attributes and Ruby bodies reach their definitions, Rust `//!`
# module docs, licence headers neither doc nor window, `mod x;` no entity, `impl<'a> Fsm<'a>` scopes `Fsm`;
# 12: Go embedding as bases, Go interface methods, `(s *Set[K, V])` receives on `Set`; a PHP file's header
# seen below `<?php`; a licence header found anywhere in a block; 13: no C-family window of `#if`/`#endif` only;
# 14: a Haskell or Elixir function of several equations is one definition, a Haskell type signature its first
# line, a comment ending a line of code no doc; 15: a signature stops before the body's first comment, no window
# of block words only; 16: Ruby wrapper modules are namespaces; 17: TypeScript namespaces; 18: doc-comment link
# targets dropped; 19: Go package-level vars; 20: PHP namespaces; 21: a C++ definition outside its class is named
# by its own name under its owner's, a C typedef by its name without pointer or function declarators; 22: so are
# Ruby's `class A::B` and Lua's `function M.f` / `M:f`; 23: a Ruby doc comment may sit one blank line above;
# 24: import edges for C-family includes, Ruby, PHP, Kotlin, Lua, Elixir and Zig; 25: C# call edges, which a
# misnamed grammar key had left out, and C#'s `this.f()` and `new T()`; 26: Python docstrings have their markup
# reduced too, and a doc that opens with an admonition has its summary first; 27: a comment that only instructs a
# tool, such as `// @__NO_SIDE_EFFECTS__` or `// eslint-disable-next-line`, is no part of a definition's doc;
# 28-30: trials not kept; 31: a container carries its members' doc summaries for the dense model; 32: a C# file
# with syntax errors is parsed again with each `#if`'s first branch taken (a C, C++ or Objective-C file too, when that
# parse is clean), and a C++ name's owners are split at `::` outside template arguments; 33: lines split at line
# endings only (a form feed or U+2028 had shifted passage text), a Python file decoded by its coding line, a UTF-8 or
# UTF-16 byte-order mark honoured and dropped; 34: the parts of a long container's outline span the file lines their
# text is on, not offsets into the outline, which pointed a class's later parts at its first methods' bodies).
# 35: each overload owns the calls in its own lines (edges.own_spans), not the first overload
# (35 also: a C `typedef struct x {...} x_t;` one definition; TypeScript signatures (`.d.ts`, `declare`, interface
# and abstract methods) definitions, overload signatures and member decorators lines of their definition; C++
# `ns::f()` and `f<T>()` and JSX `<Header />` call edges)
# 36: calls in Rust macro arguments, Go composite literals, Rust struct literals and bare TS decorators are call
# edges; Rust attributes (`#[test]`, a module's `#[cfg(test)]`) are facts' decorators
# 37: interface and abstract member signatures are definitions only in a `.d.ts` (semble zod)
# 38: notebooks whose cells hold one string are Python but for those cells; a JS function after a syntax error is a function
# 39: JS/TS definitions written as values (`res.send = function send`, `View.prototype.lookup = ...`, `exports.f = `,
# `const h = { onReset: () => {} }`, class-field arrows, `forwardRef`/`memo` components); a TS interface's `extends`
# as bases, JS/TS bases without type arguments (`React.Component`, not `open`, `boolean`); a function value's facts
# read from the function (`const f = () => { throw ... }` raises); TS variance (`<out T>`) no syntax error
# 40: a JS/TS `/** */` doc one blank line above its definition is its doc (express writes every one so)
# 41: JS object shorthand methods (`const h = { onReset() {} }`) as `h.onReset`; `this.x = ...` in a class method is
# the class's member; a class's last part ends with the class (it ended at its last member's `def` line)
# 42: Rust `impl Trait for Type` makes the trait a base of the file's `Type`; Kotlin `: I by x { ... }` has the base `I`
# only, not every word of the class body; C++17 `namespace a::b {` names `a.b.X` as nested namespaces do; a
# qualified base is one base (`std::runtime_error` is `std.runtime_error`), type arguments none (C++, Java, C#, PHP)
# 43: members passed as values (`register(s.handleKV)`) are refs; 44: Java refs only `this::m`, Go sentinels in `case`,
# `:=`, `pkg.ErrX ==`; notebooks: cells' own `source` only, other kernels' cells as text
PARSER_VERSION = 44

_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_IDENT_TYPES = frozenset(
    {"identifier", "field_identifier", "type_identifier", "name", "constant", "property_identifier",
     "namespace_identifier", "qualified_identifier", "destructor_name", "operator_name", "variable_name"}
)
_BASE_TYPES = frozenset(
    {"class_heritage", "superclass", "super_interfaces", "base_list", "base_class_clause", "base_clause",
     "class_interface_clause", "extends_interfaces", "extends_clause", "implements_clause",
     "delegation_specifier", "inheritance_specifier", "interfaces", "mixins", "extends_type_clause"}
)
# JS definitions written as a value: `res.send = function send() {}`, `{ onReset: (e) => {} }`, a class field
# `handleEvent = () => {}` (TS `public_field_definition`, JS `field_definition`); each names a function value only
_JS_VALUE_DEFS = frozenset({"assignment_expression", "pair", "public_field_definition", "field_definition"})
_JS_DECLARATIONS = frozenset({"function_declaration", "generator_function_declaration", "method_definition"})
_JS_COMPONENT_WRAPPERS = frozenset({"forwardRef", "memo"})  # React: `const X = memo(function X() {...})` defines X
# owner words that name no owner: `exports.f` / `module.exports.f` is `f`, `View.prototype.m` is `View.m`
_JS_OWNERLESS = frozenset({"exports", "prototype", "this"})
# TS 4.7 variance annotations (`<in T>`, `<out T>`, `<in out T>`), which the bundled grammar does not read
# (zod writes a comment before some: `<\n  /** @ts-ignore Cast variance */\n  out Shape ...`)
_TS_VARIANCE = re.compile(rb"(?<=[<,])((?:\s|/\*.*?\*/|//[^\n]*\n)*)(in\s+out|in|out)(?=\s+[A-Za-z_$])", re.DOTALL)
_CLASS_KINDS = frozenset({"class", "interface", "struct", "trait", "enum"})
# a C-family type with a body of its own, which a typedef may define in place
_TAG_SPECIFIERS = frozenset({"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"})
_JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
_JS_WRAPPERS = frozenset({"export_statement", "ambient_declaration"})  # `export` / `declare`: the doc sits above them
_JS_SIGNATURES = frozenset({"function_signature", "method_signature", "abstract_method_signature"})
_JS_OVERLOADABLE = _JS_SIGNATURES | {"function_declaration", "method_definition"}
_JS_MEMBER_BODIES = frozenset({"interface_body", "class_body"})  # not an inline object type's `{ run(): void }`
_FUNCTION_KEYWORD_BEFORE = re.compile(rb"(?<![\w$])function\s*\*?\s*$")  # the text right before a definition's name
# a definition named with its owner's path (C++'s `Frame::Throw` out of its class, Ruby's `class Api::Users`,
# Lua's `function M.find` and `M:method`) is its own name under that owner, as when written inside it
_OWNER_SEPARATORS = {"cpp": "::", "ruby": "::", "lua": "."}
_CLAUSE_LANGUAGES = frozenset({"haskell", "elixir"})  # a function may be written as several equations
_UPPER_CONST = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a type named with its owners, however the language writes them (`std::runtime_error`, `java.io.Serializable`,
# PHP's `\App\Model`): one base, never one base per part (`std` and `runtime_error` were two inherit edges)
_QUALIFIED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|\\)[A-Za-z_][A-Za-z0-9_]*)*")
_BRACKETED = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|\([^()]*\)")  # innermost type or call arguments: `Base<int>`, `Base()`
# languages whose base clauses name types whole, with `<>`/`[]`/`()` around arguments only (not Ruby's `Struct.new(...)`)
_TYPED_BASES = frozenset({"cpp", "java", "csharp", "php", "swift", "scala", "dart"})
_NOT_BASES = frozenset({"extends", "implements", "with", "public", "private", "protected", "virtual"})


@lru_cache(maxsize=None)
def _parser(language: str) -> Parser:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def entity_id(file: str, kind: str, qualname: str, ordinal: int, part: int = 0) -> str:
    raw = f"{file}\0{kind}\0{qualname}\0{ordinal}"
    base = hashlib.sha1(raw.encode()).hexdigest()[:20]
    return base if part == 0 else f"{base}-{part}"


def _end_line(node: Node) -> int:
    """1-based last line; a node ending at column 0 ends on the previous line."""
    row, col = node.end_point
    return max(node.start_point[0] + 1, row if col == 0 else row + 1)



@dataclass
class _Draft:
    node: Node
    span: Node
    kind: str
    name: str
    scope: list[str]
    parent: str | None
    signature: str
    docstring: str
    bases: list[str]
    params: list[str]
    children: list["_Draft"]
    tail: Node | None = None  # where it ends, past its node: Dart's body beside it, a function's later clauses
    doc_row: int | None = None  # where the doc comment above it starts (0-based), when its docstring came from one
    head: Node | None = None  # a line above the node that is part of it: Haskell's `f :: Int -> Int`
    function: Node | None = None  # the function a JS value definition holds (`x = () => {}`): its facts are read there

    @property
    def end_line(self) -> int:
        return _end_line(self.tail if self.tail is not None else self.span)

    @property
    def start_row(self) -> int:
        """Where its own text starts (0-based)."""
        return (self.head if self.head is not None else self.span).start_point[0]

    @property
    def first_row(self) -> int:
        """Where it starts (0-based), its doc comment included: the comment is the definition's, not code of its own."""
        return self.start_row if self.doc_row is None else min(self.doc_row, self.start_row)


class _Extractor:
    def __init__(self, source: bytes, language: str, spec: LanguageSpec, declaration_file: bool = False) -> None:
        self.source = source
        self.language = language
        self.spec = spec
        self.declaration_file = declaration_file  # a TypeScript `.d.ts`: its member signatures are its definitions
        self.lines = source_lines(source.decode("utf-8", "replace"))
        self.scope_spans: list[Node] = []
        self.namespace_scopes: set[tuple[str, ...]] = set()  # scopes that only namespaces opened: constants count there
        self.impl_traits: list[tuple[str, str]] = []  # Rust `impl Trait for Type`: (the type's qualname, the trait)
        # rows (0-based) that are no top-level code of their own: a namespace's head and closing lines, and the
        # module docstring that the file row carries
        self.not_code: set[int] = set()
        self.joiner = {"markdown": " > ", "css": " "}.get(language, ".")

    # -- naming ----------------------------------------------------------------
    def _name(self, node: Node) -> str | None:
        t = node.type
        lang = self.language
        if lang == "markdown":
            heading = next((c for c in node.named_children if c.type in ("atx_heading", "setext_heading")), None)
            if heading is None:
                return None
            content = heading.child_by_field_name("heading_content")
            text = node_text(content) if content else node_text(heading).lstrip("#").strip()
            return source_lines(text.strip())[0] if text.strip() else None
        if lang == "html":
            return self._html_name(node)
        if lang == "elixir":
            return elixir_name(node)
        if lang == "zig":
            return zig_name(node)
        if lang == "css":
            if t == "rule_set":
                sel = next((c for c in node.named_children if c.type == "selectors"), None)
                return " ".join(node_text(sel).split()) or None
            return " ".join(node_text(node).split("{", 1)[0].split()) or None
        if t == "variable_declarator":
            name = node_text(node.child_by_field_name("name"))
            if _js_function(node) is not None:
                return name or None
            return None
        if t in _JS_VALUE_DEFS and lang in _JS_LANGUAGES:
            return self._js_value_name(node)
        if t == "method_definition" and lang in _JS_LANGUAGES and _js_in_object(node):
            return _js_object_method_name(node)
        if t == "type_definition" and lang in ("c", "cpp", "objc"):
            decl = node.child_by_field_name("declarator")  # `typedef _jclass *jclass;` names `jclass`, not `*jclass`
            if decl is not None and decl.type == "primitive_type":
                return node_text(decl)  # `typedef signed char int8_t;`: the grammar knows the name as a built-in type
            return self._declarator_name(node)
        if t in ("function_definition", "preproc_function_def") and lang in ("c", "cpp", "objc"):
            return self._declarator_name(node)
        if t in ("struct_specifier", "union_specifier", "enum_specifier", "class_specifier"):
            if node.child_by_field_name("body") is None:
                return None  # a use of the type, not its definition
            name = node.child_by_field_name("name")
            if name is None:
                return None  # anonymous; a typedef names it
            return node_text(name)
        if t == "mod_item" and node.child_by_field_name("body") is None:
            return None  # `mod parser;` points at another file, as an import does: no definition here
        if t == "impl_item":
            return node_text(node.child_by_field_name("type")) or None
        if t == "method_signature" and lang == "dart":  # the signature inside names the method
            inner = node.named_children[0] if node.named_children else None
            if inner is not None and inner.type in ("factory_constructor_signature", "constructor_signature"):
                idents = [c for c in inner.named_children if c.type == "identifier"]  # `factory A.named()`: named
                return node_text(idents[-1]) if idents else None
            name = inner.child_by_field_name("name") or child_of(inner, self.spec.name_types) if inner is not None else None
            return node_text(name) or None
        if t == "instance" and lang == "haskell":  # `instance Show User`: the class and the type it is for
            return " ".join(f"{node_text(node.child_by_field_name('name'))} {node_text(node.child_by_field_name('patterns'))}".split()) or None
        name = node.child_by_field_name("name")
        if name is not None:
            if lang == "php":
                return node_text(name).strip("\\").replace("\\", ".")  # `Symfony\Component\Console` reads as dotted names
            return node_text(name).replace(":", ".") if lang == "lua" else node_text(name)  # Lua `M:method`
        if t in self.spec.fixed_names:
            return self.spec.fixed_names[t]
        ident = child_of(node, self.spec.name_types)
        return node_text(ident) if ident is not None else None

    def _js_value_name(self, node: Node) -> str | None:
        """The name a JS function value is defined under, owners dotted in front (`res.send`, `View.lookup`,
        `handlers.onReset`), or None: the value is no function, or it is no definition the code names: a member set
        inside a function (zod's `inst._zod.check = ...`, one object's state; `this.handle = ...` in a constructor
        counts), an option of a call (`z.codec(a, b, { decode: (s) => ... })`)."""
        fn = _js_function(node)
        if fn is None:
            return None
        if node.type in ("public_field_definition", "field_definition"):  # `handleEvent = () => {}`
            key = node.child_by_field_name("name") or node.child_by_field_name("property")
            return node_text(key) or None
        if node.type == "pair":
            key = node.child_by_field_name("key")
            owner = _js_object_owner(node)
            if key is None or key.type != "property_identifier" or owner is None:
                return None
            return ".".join([*owner, node_text(key)])
        path = _js_assigned_path(node)
        if path is None or not _js_defines_here(node, nested=path[:1] == ["this"]):
            return None  # `handlers[key] = ...`, `a().b = ...`: no name to look it up by
        named = [p for p in path if p not in _JS_OWNERLESS]
        if not named:  # `module.exports = function createApplication() {}`: the function's own name
            return node_text(fn.child_by_field_name("name")) or None
        return ".".join(named)

    def _declarator_name(self, node: Node) -> str | None:
        decl = node.child_by_field_name("declarator")
        while decl is not None:
            if decl.type in _IDENT_TYPES:
                return node_text(decl)
            inner = decl.child_by_field_name("declarator")
            if inner is None:  # `(*callback_t)`: a parenthesized declarator holds the name without naming a field
                inner = next((c for c in decl.named_children if c.type in _IDENT_TYPES or c.type.endswith("_declarator")), None)
            decl = inner
        name = node.child_by_field_name("name")
        return node_text(name) if name is not None else None

    def _html_name(self, node: Node) -> str | None:
        start = next((c for c in node.named_children if c.type == "start_tag"), None)
        if start is None:
            return None
        tag = node_text(next((c for c in start.named_children if c.type == "tag_name"), None))
        ident = ""
        for attr in start.named_children:
            if attr.type == "attribute":
                parts = attr.named_children
                if parts and node_text(parts[0]) == "id" and len(parts) > 1:
                    ident = node_text(parts[1]).strip("\"'")
        if node.type in ("script_element", "style_element") or tag in HTML_LANDMARKS or ident:
            return f"{tag}#{ident}" if ident else tag
        return None

    # -- facts -------------------------------------------------------------------
    def _signature(self, node: Node) -> str:
        body = node.child_by_field_name("body") or child_of(node, self.spec.body_types)
        if self.language in ("markdown",):
            return source_lines(node_text(node))[0].strip() if node_text(node) else ""
        typed = self._type_signature(node)  # `greet :: User -> String` above the equations says more than they do
        if typed is not None:
            return " ".join(node_text(typed).split())[:400]
        if self.spec.body_sibling and body is None:
            head = node_text(node)  # the node is the whole signature; its body is beside it
        elif body is not None and body.start_byte > node.start_byte:
            head = self.source[node.start_byte : body.start_byte].decode("utf-8", "replace")
            remark = body.prev_sibling  # `def f(x):  # note` and Lua put the body's first comments before the body
            while remark is not None and remark.prev_sibling is not None and remark.prev_sibling.type in self.spec.comment_types:
                remark = remark.prev_sibling
            if remark is not None and remark.type in self.spec.comment_types and remark.start_byte > node.start_byte:
                head = self.source[node.start_byte : remark.start_byte].decode("utf-8", "replace")
        else:  # the file's own text: a parse around TS variance read blanks where `in` / `out` stand
            head = self.source[node.start_byte : node.end_byte].decode("utf-8", "replace").split("\n", 1)[0]
        sig = " ".join(head.split())
        if self.language == "elixir":
            sig = sig.split(", do:", 1)[0]  # `def f(x), do: x + 1`: the head only
        elif self.language in ("kotlin", "scala", "haskell"):
            sig = sig.rstrip("=").strip()  # `def f(x: Int): Int =`
        return sig.rstrip("{:").strip()[:400]

    def _type_signature(self, node: Node) -> Node | None:
        """Haskell's `f :: Int -> Int` right above the equations of `f`."""
        if self.language != "haskell" or node.type not in ("function", "bind"):
            return None
        typed = node.prev_named_sibling
        if typed is not None and typed.type == "signature" and node_text(typed.child_by_field_name("name")) == self._name(node):
            return typed
        return None

    def _earlier_clause(self, node: Node, kind: str, name: str, docstring: str, sink: list[_Draft]) -> _Draft | None:
        """The definition that `node` is one more clause of: Haskell's `f 0 = 1` then `f n = ...` and Elixir's
        `def f(0)` then `def f(n)` are one function, written as consecutive equations with one doc above them. A
        comment between Haskell equations remarks on the next one; an Elixir `@doc` starts another function."""
        if self.language not in _CLAUSE_LANGUAGES or (docstring and self.language == "elixir") or not sink:
            return None
        last = sink[-1]
        prev = node.prev_named_sibling
        while prev is not None and prev.type in self.spec.comment_types:
            prev = prev.prev_named_sibling
        if last.kind == kind and last.name == name and prev is not None and prev == (last.tail or last.node):
            return last
        return None

    def _docstring(self, node: Node, span: Node) -> tuple[str, int | None]:
        """The doc text, and the row its doc comment starts on when it came from comments above the definition."""
        if self.language == "python":
            body = node.child_by_field_name("body")
            if body is not None and body.named_children:
                first = body.named_children[0]
                if first.type == "expression_statement" and first.named_children:
                    first = first.named_children[0]
                if first.type == "string":
                    return strip_doc_markup(_clean_doc(node_text(first))), None
        if self.language == "elixir":
            doc = elixir_doc(node)
            return ("" if doc in ("", "false") else _clean_doc(doc)), None  # `@doc false` hides a function
        comments, row = self._leading_comments(span)
        if self.language in ("lua", "haskell"):  # `--- text`, `-- | text`
            comments = [re.sub(r"(?m)^\s*--+\s?[|^]?\s?", "", c) for c in comments]
        elif self.language == "bash":
            comments = [c for c in comments if not c.startswith("#!")]  # the shebang is not documentation
        return strip_doc_markup(_clean_doc("\n".join(reversed(comments)))), row

    def _leading_comments(self, span: Node) -> tuple[list[str], int | None]:
        """The comments right above a definition (nearest first) and the row the first of them starts on (None:
        there are none). A tool's directive among them is the definition's too, but no part of its doc."""
        lead, prev = span, span.prev_sibling  # lead: where the definition starts, what it carries above it included
        while True:
            while prev is not None and (prev.type in self.spec.doc_skip or (self.language == "zig" and not prev.is_named)):
                lead, prev = prev, prev.prev_sibling  # a Haskell type signature; Zig's `pub` token
            if prev is None and span.parent is not None and span.parent.start_byte == lead.start_byte:
                # the comments above a first definition sit before the node that holds it: Ruby's body, Haskell's
                # declarations
                span = lead = span.parent
                prev = span.prev_sibling
                continue
            break
        line = first = top = lead.start_point[0]
        if self.language == "ruby":
            line -= 1  # YARD reads a comment one blank line above as the doc too (rack writes every class's so)
        elif self.language in _JS_LANGUAGES and prev is not None and node_text(prev).startswith("/**"):
            line -= 1  # so do JSDoc and TypeScript for a `/** */` block (express writes every function's so)
        while self.language in ("kotlin", "haskell") and prev is not None and prev.type not in self.spec.comment_types and prev.named_children:
            prev = prev.named_children[-1]  # both grammars file the doc of the first definition under the imports
        nodes: list[Node] = []
        while prev is not None and prev.type in self.spec.comment_types and _end_line(prev) >= line and not self._trails_code(prev):
            nodes.append(prev)
            line = first = prev.start_point[0]
            prev = prev.prev_sibling
        if not nodes or (_end_line(nodes[0]) < top and _is_banner(self.language, nodes[::-1])):
            return [], None  # a magic comment or a licence one blank line above a class is no doc
        # `// @__NO_SIDE_EFFECTS__` above 200 of zod's functions was their whole doc; a Rust line comment holds its newline
        return [node_text(n).rstrip() for n in nodes if not _is_directive(n)], first

    def _trails_code(self, comment: Node) -> bool:
        """`x = f(y)  -- remark` remarks on its own line, not on the definition below it."""
        line_start = self.source.rfind(b"\n", 0, comment.start_byte) + 1
        return bool(self.source[line_start : comment.start_byte].strip())

    def _bases(self, node: Node) -> list[str]:
        found: list[str] = []
        if self.language == "python":
            sup = node.child_by_field_name("superclasses")
            if sup is not None:
                found = [w for w in _WORD.findall(node_text(sup)) if w not in ("metaclass",)]
            return found
        if self.language == "go":
            return _go_embedded(node)
        if self.language == "objc":  # `@interface Store : NSObject <NSCopying>`: the superclass, then the protocols
            protocols = child_of(node, frozenset({"parameterized_arguments", "protocol_qualifiers"}))
            return [w for w in (node_text(node.child_by_field_name("superclass")), *_WORD.findall(node_text(protocols))) if w]
        node = self._typedef_body(node) or node  # `typedef struct A : B {...} A_t;`: the struct's bases
        for child in node.children:
            if child.type in _BASE_TYPES and self.language in _JS_LANGUAGES:
                found.extend(_js_type_names(child))
            elif child.type == "delegation_specifier" and self.language == "kotlin":
                found.extend(_kotlin_base(child))
            elif child.type in _BASE_TYPES and self.language in _TYPED_BASES:
                found.extend(_type_names(node_text(child)))
            elif child.type in _BASE_TYPES:
                found.extend(w for w in _WORD.findall(node_text(child)) if w not in _NOT_BASES)
        return found

    def _params(self, node: Node) -> list[str]:
        if self.language == "elixir":
            head = elixir_head(node)
            args = child_of(head, frozenset({"arguments"})) if head is not None and head.type == "call" else None
            return [w for w in (_first_identifier(a) for a in (args.named_children if args is not None else [])) if w]
        if self.language == "zig":
            plist = child_of(child_of(node, frozenset({"FnProto"})) or node, frozenset({"ParamDeclList"}))
            names = [_WORD.findall(node_text(p).split(":", 1)[0]) for p in (plist.named_children if plist is not None else [])]
            return [w[-1] for w in names if w]
        items = [c for c in node.named_children if c.type in self.spec.param_items]
        if items:  # Swift `parameter`, Objective-C `method_parameter`: direct children, no list around them
            return [node_text(c.child_by_field_name("name")) or _first_identifier(c) for c in items]
        if node.type == "method_signature" and self.language == "dart" and node.named_children:
            node = node.named_children[0]  # Dart: the parameters sit in the signature inside
        params = node.child_by_field_name("parameters") or child_of(node, self.spec.param_types)
        if params is None and (node.type == "variable_declarator" or node.type in _JS_VALUE_DEFS):
            value = _js_function(node)  # `const f = (a) => ...`, `res.send = function send(body)`, `memo(...)`
            params = value.child_by_field_name("parameters") if value is not None else None
            if params is None and value is not None and value.child_by_field_name("parameter") is not None:
                return [node_text(value.child_by_field_name("parameter"))]
        if params is None and self.language in ("c", "cpp", "objc"):
            decl = node.child_by_field_name("declarator")
            while decl is not None and params is None:
                params = decl.child_by_field_name("parameters")
                decl = decl.child_by_field_name("declarator")
        if params is None:
            return []
        names: list[str] = []
        for p in params.named_children:
            if p.type in ("comment",):
                continue
            ident = _first_identifier(p)
            if ident:
                names.append(ident.lstrip("$*&"))
        return names

    # -- walk --------------------------------------------------------------------
    def _typedef_body(self, node: Node) -> Node | None:
        """The struct, union or enum a C-family typedef defines in place (`typedef struct ring {...} ring_t;`)."""
        if node.type != "type_definition" or self.language not in _PREPROCESSED:
            return None
        inner = node.child_by_field_name("type")
        if inner is None or inner.type not in _TAG_SPECIFIERS or inner.child_by_field_name("body") is None:
            return None
        return inner

    def _overload_ahead(self, node: Node) -> bool:
        """A TypeScript overload signature: the next declaration is another signature or the implementation of the
        same name, which takes this one's lines (Java's overloads each have a body; these are one function)."""
        nxt = _js_outer(node).next_named_sibling
        while nxt is not None and nxt.type in ("comment", "decorator"):
            nxt = nxt.next_named_sibling
        other = _js_declared(nxt)
        return other is not None and other.type in _JS_OVERLOADABLE and self._name(other) == self._name(node)

    def _js_lead(self, node: Node) -> Node | None:
        """The first of the decorators and overload signatures right above a TypeScript function or member (None:
        there are none). They are its lines, as a Python decorator and a TS class decorator are their definition's:
        the grammar puts a member's decorators beside it in the class body, not in it."""
        lead, prev = None, _js_outer(node).prev_named_sibling
        while prev is not None:
            declared = _js_declared(prev)
            if prev.type == "decorator" or (
                declared is not None and declared.type in _JS_SIGNATURES and self._name(declared) == self._name(node)
            ):
                lead = prev
            elif prev.type != "comment":  # a comment between them is theirs; one above them is the doc
                break
            prev = prev.prev_named_sibling
        return lead

    def _function_in_error(self, node: Node) -> bool:
        """`function f() {...}` that tree-sitter's error recovery read as an object's method `f() {...}` (a syntax
        error above left a `{` open): the `function` keyword before it says it is a top-level function."""
        name = node.child_by_field_name("name")
        if self.language not in _JS_LANGUAGES or name is None or node.parent is None or node.parent.type != "ERROR":
            return False
        return _FUNCTION_KEYWORD_BEFORE.search(self.source[max(0, name.start_byte - 64):name.start_byte]) is not None

    def _def_kind(self, node: Node, in_container: bool) -> str | None:
        kind = self.spec.defs.get(node.type)
        if kind is None:
            return None
        # `typedef struct ring {...} ring_t;` is one definition, `ring_t`, of the struct's kind: as two, the struct
        # was `ring_t.ring` over the same lines and search spent its budget on those lines twice
        typedef_body = self._typedef_body(node)
        if typedef_body is not None:
            kind = self.spec.defs.get(typedef_body.type, kind)
        elif node.type in _TAG_SPECIFIERS and node.parent is not None and self._typedef_body(node.parent) == node \
                and self._name(node.parent):
            return None
        if node.type in _JS_SIGNATURES and self.language in _JS_LANGUAGES and (
            (node.type == "method_signature" and (node.parent is None or node.parent.type not in _JS_MEMBER_BODIES))
            or (node.type != "function_signature" and not self.declaration_file)
            or self._overload_ahead(node)
        ):
            # an interface's or abstract class's member signatures in a `.ts` file stay lines of their container:
            # as definitions of their own they crowded the lists (semble dev zod 0.841 -> 0.791, five queries down)
            return None
        if self.language == "elixir":
            target = node.child_by_field_name("target")
            return ELIXIR_DEFS.get(node_text(target)) if target is not None and target.type == "identifier" else None
        if self.language == "dart" and node.type == "function_signature" and node.parent is not None and node.parent.type == "method_signature":
            return None  # read through its method_signature
        if node.type == "var_spec" and not self._package_level_var(node):
            return None
        if self.language == "zig" and node.type == "Decl":
            kind = zig_kind(node)
            if kind is None:
                return None
        if kind == "class" and self.spec.keyword_kinds:  # Swift `struct X`, Kotlin `interface X` / `enum class X`
            mods = child_of(node, frozenset({"modifiers"}))
            words = [c.type for c in node.children if not c.is_named] + (node_text(mods).split() if mods is not None else [])
            kind = next((self.spec.keyword_kinds[w] for w in words if w in self.spec.keyword_kinds), kind)
        if node.type == "type_spec":
            tnode = node.child_by_field_name("type")
            ttype = tnode.type if tnode is not None else ""
            return {"struct_type": "struct", "interface_type": "interface"}.get(ttype, "type")
        if node.type in ("preproc_def",):
            return "constant"
        if node.type == "method_definition" and self._function_in_error(node):
            return "function"
        if node.type in ("assignment_expression", "pair") and _js_assigns_method(node):
            return "method"
        if node.type == "method_definition" and _js_in_object(node):  # `{ onReset() {...} }`, as `{ onReset: function }`
            return "method" if _js_assigns_method(node) else "function"
        if kind == "function" and in_container:
            return self.spec.function_kinds_in_container
        return kind

    def walk(self, root: Node, out: list[_Draft]) -> None:
        """Pre-order walk with an explicit stack: minified code nests far deeper than Python recurses."""
        stack: list[tuple[Node, list[str], str | None, bool, list[_Draft]]] = []
        scope: list[str] = []
        for c in root.named_children:
            name = self._name(c) if c.type in self.spec.namespaces and c.child_by_field_name("body") is None else None
            if name:  # C#'s file-scoped `namespace App.Jobs;` names everything after it
                scope = [name]
                self.not_code.update(range(c.start_point[0], _end_line(c)))
                continue
            stack.append((c, scope, self.joiner.join(scope) or None, False, out))
        stack.reverse()

        def push(node: Node, scope: list[str], parent: str | None, in_container: bool, sink: list[_Draft]) -> None:
            stack.extend((c, scope, parent, in_container, sink) for c in reversed(node.named_children))

        descend = self.spec.descend
        while stack:
            child, scope, parent, in_container, sink = stack.pop()
            if child.type in self.spec.namespaces:
                name, body = self._name(child), child.child_by_field_name("body")
                if name and body is not None:
                    self.not_code.update([*range(child.start_point[0], body.start_point[0] + 1), body.end_point[0]])
                    inner = [*scope, *self._namespace_parts(name)]
                    if not scope or tuple(scope) in self.namespace_scopes:
                        self.namespace_scopes.update(tuple(inner[:i]) for i in range(len(scope) + 1, len(inner) + 1))
                    push(body, inner, self.joiner.join(inner), False, sink)
                    continue
            if self._wrapper_module(child):
                name, body = self._name(child), child.child_by_field_name("body")
                if name and body is not None:
                    self.not_code.update([child.start_point[0], child.end_point[0]])  # `module Rack` and its `end`
                    inner = [*scope, name]
                    push(child, inner, self.joiner.join(inner), False, sink)
                    continue
            kind = self._def_kind(child, in_container)
            name = self._name(child) if kind else None
            if kind and name:
                wrapped = child.parent is not None and (child.parent.type == "decorated_definition" or self._sole_wrapped(child))
                span = child.parent if wrapped else child
                if child.type == "variable_declarator" and child.parent is not None:
                    span = child.parent
                    if span.parent is not None and span.parent.type == "export_statement":
                        span = span.parent
                elif span.parent is not None and span.parent.type in _JS_WRAPPERS:
                    span = _js_outer(span)
                elif child.type == "assignment_expression" and span.parent is not None \
                        and span.parent.type == "expression_statement":
                    span = span.parent  # `res.send = function send() {...};`: the statement, its `;` and the doc above
                lead = self._js_lead(child) if self.language in _JS_LANGUAGES and child.type in _JS_OVERLOADABLE else None
                own_scope, own_parent = scope, parent
                receiver = _go_receiver(child) if child.type == "method_declaration" and self.language == "go" else ""
                if receiver and not scope:
                    own_scope, own_parent = [receiver], receiver
                if child.type == "assignment_expression" and _js_in_class_method(child):
                    own_scope = scope[:-1]  # `this.render = ...` in `constructor()`: the class's member, not the method's
                    own_parent = self.joiner.join(own_scope) or None
                sep = "." if child.type in ("assignment_expression", "pair") or _js_in_object(child) \
                    else _OWNER_SEPARATORS.get(self.language)
                if sep and sep in name:  # `void JPJavaFrame::Throw()`, Lua's `function tablex.find()`: a name of its owner's
                    *owner, name = _split_outside_brackets(name, sep)
                    owners = [_without_type_arguments(o) for o in owner if o]
                    if self.language == "cpp" and not name.startswith("operator"):
                        name = _without_type_arguments(name)  # `formatter<std::tuple<T...>>` specialises `formatter`
                    if owners:
                        own_scope = [*own_scope, *owners]
                        own_parent = self.joiner.join(own_scope)
                qual = self.joiner.join([*own_scope, name])
                docstring, doc_row = self._docstring(child, lead or span)  # a decorated member's doc is above `@`
                earlier = self._earlier_clause(child, kind, name, docstring, sink)
                if earlier is not None:
                    earlier.tail = child
                    push(child, [*own_scope, name], qual, kind in _CLASS_KINDS, earlier.children)
                    continue
                draft = _Draft(
                    node=child, span=span, kind=kind, name=name, scope=list(own_scope), parent=own_parent,
                    signature=self._signature(child), docstring=docstring, doc_row=doc_row,
                    bases=self._bases(child) if kind in CONTAINER_KINDS else [],
                    params=self._params(child) if kind in ("function", "method") else [],
                    children=[], head=self._type_signature(child) or lead,
                    function=_js_function(child) if self.language in _JS_LANGUAGES else None,
                )
                tail = child.next_named_sibling
                if tail is not None and tail.type in self.spec.body_sibling:
                    draft.tail = tail  # Dart: `int f(x)` then its `{ ... }` beside it, not inside it
                sink.append(draft)
                push(child, [*own_scope, name], qual, kind in _CLASS_KINDS, draft.children)
                continue
            if child.type in self.spec.scopes:
                scope_name = _without_type_arguments(node_text(child.child_by_field_name(self.spec.scopes[child.type])))
                self.scope_spans.append(child)
                inner = [*scope, scope_name] if scope_name else scope
                trait = _rust_trait(child) if child.type == "impl_item" else ""
                if trait and scope_name:
                    self.impl_traits.append((".".join(inner), trait))
                push(child, inner, ".".join(inner) or parent, True, sink)
                continue
            if self.language == "python" and not scope and child.type in ("expression_statement", "assignment"):
                self._python_constant(child, sink)
                continue
            if self.language in ("javascript", "typescript", "tsx") and child.type == "lexical_declaration" and (
                not scope or tuple(scope) in self.namespace_scopes
            ):
                self._js_constant(child, sink, scope)
            if descend is None or child.type in descend:
                push(child, scope, parent, in_container, sink)
        self._add_impl_traits(out)

    def _add_impl_traits(self, drafts: list[_Draft]) -> None:
        """Rust's `impl Store for MemoryStore` makes `Store` a base of the `MemoryStore` this file defines, as
        `implements` does in Java: the premise check and `references Store` read a type's bases. A type defined in
        another file gets none from here (each file is parsed alone)."""
        if not self.impl_traits:
            return
        stack = list(drafts)
        while stack:
            draft = stack.pop()
            stack.extend(draft.children)
            if draft.kind not in _CLASS_KINDS:
                continue
            qual = self.joiner.join([*draft.scope, draft.name])
            for owner, trait in self.impl_traits:
                if owner == qual and trait not in draft.bases:
                    draft.bases.append(trait)

    def _namespace_parts(self, name: str) -> list[str]:
        """The scopes a namespace opens: C++17's `namespace kv::http {` opens `kv` then `http`, as the nested
        `namespace kv { namespace http {` does, so both name `kv.http.Server` (not `kv::http.Server`)."""
        if self.language != "cpp":
            return [name]
        return [part.split()[-1] for part in name.split("::") if part.split()]  # C++20 `a::inline b`: `b`

    def _wrapper_module(self, node: Node) -> bool:
        """A Ruby `module Rack` that only holds classes and modules is a namespace, as a C# one is: it names its
        members (`Rack.Auth.Basic`) but is no passage of its own. rack wraps each file in one (89 of its 104
        modules), and each was a skeleton of its members' first lines that ranked beside them."""
        if self.language != "ruby" or node.type != "module":
            return False
        body = node.child_by_field_name("body")
        return body is not None and all(c.type in ("class", "module", "comment") for c in body.named_children)

    @staticmethod
    def _package_level_var(spec: Node) -> bool:
        """Go's `var JSON = jsonBinding{}` outside any function, and not the blank `var _ Binding = ...` check."""
        name = spec.child_by_field_name("name")
        if name is None or node_text(name) == "_":
            return False
        node = spec.parent
        while node is not None:
            if node.type in ("function_declaration", "method_declaration", "func_literal"):
                return False
            node = node.parent
        return True

    def _sole_wrapped(self, node: Node) -> bool:
        """Its parent is a wrapper that its doc comment precedes (`type X struct` in Go: the comment sits above
        `type`), and the wrapper holds this definition only: in a group, `type ( A ...; B ... )`, each spec has
        its own comment inside the parentheses."""
        wrapper = node.parent
        if wrapper is None or wrapper.type not in self.spec.wrappers:
            return False
        return [c for c in wrapper.named_children if c.type not in self.spec.comment_types] == [node]

    def _python_constant(self, stmt: Node, out: list[_Draft]) -> None:
        assign = stmt if stmt.type == "assignment" else (stmt.named_children[0] if stmt.named_children else None)
        if assign is None or assign.type != "assignment":
            return
        left = assign.child_by_field_name("left")
        if left is None or left.type != "identifier" or not _UPPER_CONST.match(node_text(left)):
            return
        doc, row = _trailing_comment(stmt), None
        if not doc:
            doc, row = self._docstring(stmt, stmt)
        out.append(_Draft(stmt, stmt, "constant", node_text(left), [], None, _first_line(node_text(stmt)), doc, [], [], [], doc_row=row))

    def _js_constant(self, decl: Node, out: list[_Draft], scope: list[str]) -> None:
        for d in decl.named_children:
            if d.type != "variable_declarator":
                continue
            name = node_text(d.child_by_field_name("name"))
            if _UPPER_CONST.match(name) and _js_function(d) is None:
                exported = decl.parent is not None and decl.parent.type == "export_statement"
                doc, row = self._docstring(decl, decl.parent if exported else decl)  # the doc sits above `export`
                parent = self.joiner.join(scope) or None
                out.append(_Draft(decl, decl, "constant", name, list(scope), parent, _first_line(node_text(decl)), doc, [], [], [], doc_row=row))


def _js_outer(node: Node) -> Node:
    """A declaration with the `export` / `declare` around it, which its doc comment and its siblings sit beside."""
    while node.parent is not None and node.parent.type in _JS_WRAPPERS:
        node = node.parent
    return node


def _js_declared(node: Node | None) -> Node | None:
    """What an `export` / `declare` statement declares (the node itself when it is no such statement)."""
    while node is not None and node.type in _JS_WRAPPERS:
        node = node.child_by_field_name("declaration") or next((c for c in node.named_children if c.type != "comment"), None)
    return node


def _js_function(node: Node | None) -> Node | None:
    """The function a JS declarator, assignment, object pair or class field defines (None: its value is no function).
    A React component wrapped in `forwardRef(...)` / `memo(...)` is the function inside."""
    if node is None:
        return None
    value = node.child_by_field_name("right" if node.type == "assignment_expression" else "value")
    while value is not None and value.type == "call_expression":
        callee = node_text(value.child_by_field_name("function")).rsplit(".", 1)[-1]  # `React.memo`
        args = value.child_by_field_name("arguments")
        if callee not in _JS_COMPONENT_WRAPPERS or args is None or not args.named_children:
            return None
        value = args.named_children[0]  # `memo(forwardRef(...))` too
    return value if value is not None and value.type in _FUNCTION_VALUES else None


def _js_defines_here(node: Node, nested: bool) -> bool:
    """Whether an assignment sits where the code defines things: at the top level (an IIFE's body counts), or, when
    `nested`, in a function that is a definition itself; never in a callback passed as an argument."""
    up = node.parent
    while up is not None:
        if up.type in _JS_DECLARATIONS:
            return nested
        if up.type in _FUNCTION_VALUES:
            holder = up.parent
            if holder is not None and holder.type == "parenthesized_expression" and holder.parent is not None \
                    and holder.parent.type == "call_expression":
                up = holder.parent  # `(function () { ... })()`: the old module pattern's body is top level
                continue
            while holder is not None and holder.type in ("arguments", "call_expression"):
                holder = holder.parent  # through `memo(...)` to its declarator
            return nested and holder is not None and _js_function(holder) == up
        up = up.parent
    return True


def _js_assigned_path(node: Node) -> list[str] | None:
    """What an assignment sets, as names: `module.exports.f` -> ['exports', 'f'] (None: not names alone)."""
    path = _js_member_path(node.child_by_field_name("left"))
    return path[1:] if path is not None and path[:2] == ["module", "exports"] else path


def _js_object_owner(pair: Node) -> list[str] | None:
    """The names an object literal's functions are defined under: `const handlers = {...}` -> ['handlers'],
    `module.exports = {...}` and `export default {...}` -> [], an object inside one under its key; None for any other
    object (a call's options)."""
    obj = pair.parent
    holder = obj.parent if obj is not None and obj.type == "object" else None
    if holder is None:
        return None
    if holder.type == "export_statement":
        return []
    if holder.type == "pair" and holder.child_by_field_name("value") == obj:  # `methods: { go() {...} }`
        key, outer = holder.child_by_field_name("key"), _js_object_owner(holder)
        return None if outer is None or key is None or key.type != "property_identifier" else [*outer, node_text(key)]
    if holder.type == "variable_declarator" and holder.child_by_field_name("value") == obj:
        return [node_text(holder.child_by_field_name("name"))]
    if holder.type == "assignment_expression" and holder.child_by_field_name("right") == obj:
        path = _js_assigned_path(holder)
        if path is not None and _js_defines_here(holder, nested=path[:1] == ["this"]):
            return [p for p in path if p not in _JS_OWNERLESS]
    return None


def _js_in_object(node: Node) -> bool:
    """Whether a JS method definition is an object literal's (`{ onReset() {...} }`), not a class's."""
    return node.type == "method_definition" and node.parent is not None and node.parent.type == "object"


def _js_object_method_name(node: Node) -> str | None:
    """An object literal's shorthand method named as its `key: function` twin is (`handlers.onReset`); None for an
    object no definition names (a call's options) or a computed key."""
    key = node.child_by_field_name("name")
    owner = _js_object_owner(node)
    if key is None or key.type != "property_identifier" or owner is None:
        return None
    return ".".join([*owner, node_text(key)])


def _js_in_class_method(assignment: Node) -> bool:
    """Whether an assignment sits in a class's method (its constructor, most often) rather than in a function."""
    up = assignment.parent
    while up is not None and up.type not in _JS_DECLARATIONS and up.type not in _FUNCTION_VALUES:
        up = up.parent
    return up is not None and up.type == "method_definition" and up.parent is not None and up.parent.type == "class_body"


def _js_member_path(node: Node | None) -> list[str] | None:
    """`View.prototype.lookup` -> ['View', 'prototype', 'lookup']; None for anything but names and `this`."""
    parts: list[str] = []
    while node is not None and node.type == "member_expression":
        prop = node.child_by_field_name("property")
        if prop is None or prop.type not in ("property_identifier", "private_property_identifier"):
            return None
        parts.append(node_text(prop))
        node = node.child_by_field_name("object")
    if node is None or node.type not in ("identifier", "this"):
        return None
    return [node_text(node), *reversed(parts)]


def _js_assigns_method(node: Node) -> bool:
    """`View.prototype.lookup = function`, `this.handle = () => {}` and `Store.prototype = { dispatch() ... }` give
    the instances a method."""
    if node.type in ("pair", "method_definition"):
        obj = node.parent
        node = obj.parent if obj is not None and obj.parent is not None else node
        if node.type != "assignment_expression":
            return False
        path = (_js_member_path(node.child_by_field_name("left")) or []) + [""]
    else:
        path = _js_member_path(node.child_by_field_name("left")) or []
    return "prototype" in path[:-1] or path[:1] == ["this"]


def _js_type_names(clause: Node) -> list[str]:
    """The types a JS/TS heritage clause names, each whole and without its type arguments:
    `extends React.Component<{ open: boolean }>` is `React.Component`, never `open` or `boolean`."""
    found: list[str] = []
    for item in clause.named_children:
        if item.type in ("extends_clause", "implements_clause", "extends_type_clause"):
            found.extend(_js_type_names(item))
        elif item.type in ("type_arguments", "comment"):
            continue
        elif item.type == "generic_type":
            found.append("".join(node_text(item.child_by_field_name("name")).split()))
        elif item.type in ("identifier", "type_identifier", "member_expression", "nested_type_identifier"):
            found.append("".join(node_text(item).split()))
        else:  # `extends mixin(A, B)`: the names in it, as before
            found.extend(_WORD.findall(re.sub(r"<[^<>]*>", "", node_text(item))))
    return found


def _type_names(text: str) -> list[str]:
    """The types a base clause's text names, each whole, dotted, without its arguments: `: public std::runtime_error,
    private Base<std::map<int, X>>` is `std.runtime_error` and `Base` (an argument is no base: `Comparable<User>`)."""
    previous = None
    while previous != text:  # innermost first, so nested arguments go too
        previous, text = text, _BRACKETED.sub("", text)
    names = (re.sub(r"::|\\", ".", name) for name in _QUALIFIED.findall(text))
    return [name for name in names if name not in _NOT_BASES]


def _kotlin_base(spec: Node) -> list[str]:
    """The type a Kotlin delegation specifier names: `Base()`, `Store`, `Comparable<B>`, and `Store by backing`, whose
    delegate the grammar may read as a call taking the class body as its lambda (every word of it had been a base)."""
    item = spec.named_children[0] if spec.named_children else None
    if item is not None and item.type in ("explicit_delegation", "constructor_invocation"):
        item = child_of(item, frozenset({"user_type"}))
    if item is None or item.type != "user_type":
        return []  # a function type (`: () -> Unit`) names no class
    return [".".join(node_text(c) for c in item.named_children if c.type == "type_identifier")]


def _rust_trait(impl: Node) -> str:
    """The trait an `impl Trait for Type` block implements, dotted and without type arguments (`impl<T> fmt::Display
    for W<T>` is `fmt.Display`); '' for an inherent `impl Type` and a negative `impl !Send for Type`."""
    trait = impl.child_by_field_name("trait")
    if trait is None or any(c.type == "!" for c in impl.children):
        return ""
    names = _type_names(node_text(trait))
    return names[0] if names else ""


def _without_type_arguments(name: str) -> str:
    """`impl<'a> Fsm<'a>` scopes `Fsm.next`, not `Fsm<'a>.next`: a query names the type, never its arguments."""
    return name.split("<", 1)[0].strip() if "<" in name and not name.startswith("<") else name


def _split_outside_brackets(name: str, sep: str) -> list[str]:
    """`name` split at each `sep` outside `<>`, `()` and `[]`: `formatter<std::tuple<T>>` is one name, not a
    `tuple<T>>` owned by `formatter<std`; `Map<K, V>::find` is `find` of `Map<K, V>`."""
    parts: list[str] = []
    depth = start = i = 0
    while i < len(name):
        if depth == 0 and name.startswith(sep, i):
            parts.append(name[start:i])
            i += len(sep)
            start = i
            continue
        if name[i] in "<([":
            depth += 1
        elif name[i] in ">)]":
            depth = max(0, depth - 1)
        i += 1
    parts.append(name[start:])
    return parts


def _go_receiver(node: Node) -> str:
    """The receiver's type: `(s *Set[K, V])` is `Set`, not its last type argument."""
    recv = node.child_by_field_name("receiver")
    return _go_type_name(node_text(recv)) if recv is not None else ""


def _go_embedded(node: Node) -> list[str]:
    """What a Go struct or interface embeds (`RouterGroup`, `*log.Logger`, `io.Reader`): Go's inheritance."""
    body = node.child_by_field_name("type")
    if body is not None and body.type == "struct_type":
        fields = child_of(body, frozenset({"field_declaration_list"}))
        elems = [f.child_by_field_name("type") for f in (fields.named_children if fields is not None else [])
                 if f.type == "field_declaration" and f.child_by_field_name("name") is None]
    elif body is not None and body.type == "interface_type":
        elems = [c for c in body.named_children if c.type == "type_elem"]
    else:
        return []
    return [name for name in (_go_type_name(node_text(e)) for e in elems if e is not None) if name]


def _go_type_name(text: str) -> str:
    """The type a Go type expression names, package and type arguments aside: `*log.Logger[T]` is `Logger`."""
    words = _WORD.findall(re.sub(r"\[.*", "", text))
    return words[-1] if words else ""


def _first_identifier(node: Node) -> str:
    if node.type in ("identifier", "variable_name", "shorthand_property_identifier_pattern", "simple_identifier", "variable"):
        return node_text(node)
    for child in node.named_children:
        if child.type in ("type_identifier", "primitive_type", "type", "type_annotation", "integral_type"):
            continue
        found = _first_identifier(child)
        if found:
            return found
    return ""


def _trailing_comment(stmt: Node) -> str:
    nxt = stmt.next_sibling
    if nxt is not None and nxt.type == "comment" and nxt.start_point[0] == stmt.end_point[0]:
        return _clean_doc(node_text(nxt))
    return ""


def _first_line(text: str) -> str:
    return " ".join(text.split("\n", 1)[0].split())[:400]


def _clean_doc(raw: str) -> str:
    text = raw.strip()
    for prefix in ('"""', "'''", 'r"""', "r'''", '"', "'"):
        if text.startswith(prefix) and text.endswith(prefix[-3:] if len(prefix) > 2 else prefix[-1]) and len(text) >= 2 * len(prefix.lstrip("r")):
            text = text[len(prefix) :][: -len(prefix.lstrip("r"))]
            break
    cleaned: list[str] = []
    for line in source_lines(text):
        s = line.strip()
        s = re.sub(r"^(//!|///?|/\*!|/\*\*?|\*/|\*|#+|<!--|-->)\s?", "", s)  # `//!`, `/*!`: Rust's and Doxygen's docs
        s = s.removesuffix("*/").removesuffix("-->").strip()
        cleaned.append(s)
    return "\n".join(cleaned).strip()[:2000]


def _split_parts(lines: list[str], numbers: list[int], max_lines: int, max_chars: int) -> list[tuple[list[int], list[str]]]:
    """Split body lines into parts on line boundaries; a single over-long line is split by characters. `numbers`
    holds each line's file line (a container's outline skips its members' bodies), and each part comes back with the
    file line of each of its lines, so a part's span is where its text is in the file."""
    if len(lines) <= max_lines and sum(map(len, lines)) + len(lines) <= max_chars:
        return [(list(numbers), list(lines))]  # most bodies: one part, as the loop below would make it
    parts: list[tuple[list[int], list[str]]] = []
    current: list[str] = []
    at: list[int] = []
    size = 0
    for number, line in zip(numbers, lines):
        pieces = [line] if len(line) <= max_chars else [line[i : i + max_chars] for i in range(0, len(line), max_chars)]
        for piece in pieces:
            if current and (len(current) >= max_lines or size + len(piece) > max_chars):
                parts.append((at, current))
                current, at, size = [], [], 0
            current.append(piece)
            at.append(number)
            size += len(piece) + 1
    if current:
        parts.append((at, current))
    return parts


def _make_entities(
    drafts: list[_Draft], ex: _Extractor, path: str, max_lines: int, max_chars: int, seen: dict[str, int]
) -> list[Entity]:
    entities: list[Entity] = []
    for d in drafts:
        start = d.start_row + 1
        end = d.end_line
        lines = ex.lines[start - 1 : end]
        numbers = list(range(start, start + len(lines)))
        members = ""
        if d.kind in CONTAINER_KINDS and d.children:
            lines, numbers = _skeleton(lines, start, d.children, ex.language == "markdown")
            if ex.language != "markdown":
                members = "\n".join(f"{c.name}: {_summary(c.docstring)}" for c in d.children if c.docstring)
        qual = ex.joiner.join([*d.scope, d.name])
        key = f"{d.kind}:{qual}"
        ordinal = seen.get(key, 0)
        seen[key] = ordinal + 1
        span_text = "\n".join(ex.lines[start - 1 : end])
        chash = hashlib.sha256(span_text.encode()).hexdigest()
        parts = _split_parts(lines, numbers, max_lines, max_chars) if lines else [([start], [])]
        facts = _facts(d, ex.language)
        for i, (at, plines) in enumerate(parts):
            pstart, pend = (at[0], at[-1]) if len(parts) > 1 else (start, end)
            if i == len(parts) - 1:
                pend = end  # a class's last part ends with the class, not at its last member's `def` (the skeleton's)
            entities.append(
                Entity(
                    id=entity_id(path, d.kind, qual, ordinal, i), kind=d.kind, name=d.name, qualname=qual,  # type: ignore[arg-type]
                    parent=d.parent, signature=d.signature, docstring=d.docstring if i == 0 else "",
                    body="\n".join(plines), start_line=pstart, end_line=max(pend, pstart),
                    language=ex.language, file=path, content_hash=chash, part=i, parts=len(parts),
                    bases=d.bases, params=d.params, facts=facts, member_docs=members if i == 0 else "",
                )
            )
        entities.extend(_make_entities(d.children, ex, path, max_lines, max_chars, seen))
    return entities


def _facts(d: _Draft, language: str) -> CodeFacts | None:
    """A definition's facts. A JS value definition's raises, returns and defaults are its function's (an assignment
    or a class field has no body of its own, so `x = () => { throw ... }` raised nothing); its decorators
    (`@HostListener(...) onClick = () => {}`) are the definition's."""
    facts = facts_of(d.function if d.function is not None else d.node, d.span, language, d.kind)
    if d.function is None or facts is None:
        return facts
    own = facts_of(d.node, d.span, language, d.kind)
    return facts.model_copy(update={"decorators": own.decorators}) if own is not None and own.decorators else facts


def _summary(doc: str) -> str:
    """A doc's first sentence, within its first paragraph."""
    flat = " ".join(doc.strip().split("\n\n", 1)[0].split())
    return re.split(r"(?<=[.!?])\s", flat, maxsplit=1)[0][:200]


def _skeleton(lines: list[str], first: int, children: list[_Draft], drop_children: bool) -> tuple[list[str], list[int]]:
    """A container's own lines, each member reduced to its decorators' first lines and the line that names it
    (or dropped for Markdown), with each kept line's file line. Reduced to its first line alone, a decorated method
    showed only `@staticmethod ...` and the class passage lost the names of its members."""
    keep = [True] * len(lines)
    heads: dict[int, str] = {}
    for c in children:
        cs, ce = c.start_row + 1 - first, c.end_line - first
        for i in range(max(c.first_row + 1 - first, 0), min(ce + 1, len(lines))):
            keep[i] = False
        if drop_children or not 0 <= cs < len(lines):
            continue
        named = min(max(c.node.start_point[0] + 1 - first, cs), len(lines) - 1)  # past decorators, into the span
        for i in range(cs, named):
            if lines[i].lstrip().startswith("@"):
                heads[i] = lines[i].rstrip()
        heads[named] = lines[named].rstrip() + (" ..." if ce > named else "")
    out: list[str] = []
    numbers: list[int] = []
    for i, line in enumerate(lines):
        if i in heads or keep[i]:
            out.append(heads.get(i, line))
            numbers.append(first + i)
    return out, numbers


def _uncovered_windows(ex: _Extractor, path: str, top: list[_Draft], max_lines: int, max_chars: int,
                       trim_start: bool = False) -> list[Entity]:
    """Top-level code outside every definition (scripts, wiring) is indexed as windows, so nothing is cut."""
    covered = [i in ex.not_code for i in range(len(ex.lines))]
    for d in [*top, *ex.scope_spans]:
        start, end = (d.start_point[0], _end_line(d)) if isinstance(d, Node) else (d.first_row, d.end_line)
        for i in range(start, end):
            if i < len(covered):
                covered[i] = True
    runs: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for i, line in enumerate(ex.lines):
        if covered[i]:
            if current:
                runs.append((start, current))
                current = []
            continue
        if not current:
            start = i + 1
        current.append(line)
    if current:
        runs.append((start, current))
    return _windows(runs, path, ex.language, max_lines, max_chars, label="top-level", trim_start=trim_start)


_PREPROCESSED = frozenset({"c", "cpp", "objc"})
_CONDITIONAL_WORDS = "if|ifdef|ifndef|elif|elifdef|elifndef|else|endif"
_CONDITIONAL = re.compile(rf"^\s*#\s*(?:{_CONDITIONAL_WORDS})\b")
# a line that only opens or closes a block, or hands back the module table (Lua's `return M`): no code of its own
_BLOCK_ONLY = re.compile(r"^\s*(?:end|do|begin|else|then|fi|done|esac|return\s+[\w.]+|[{}()\[\];,]+)\s*[;,)]*\s*$")


def _windows(
    runs: list[tuple[int, list[str]]], path: str, language: str, max_lines: int, max_chars: int, label: str,
    trim_start: bool = False,
) -> list[Entity]:
    """Line windows over runs of text. `trim_start`: a window starts at its first line of text (a notebook's view,
    whose blank lines are the JSON around its cells; elsewhere the windows as every index holds them)."""
    out: list[Entity] = []
    n = 0
    for start, lines in runs:
        if not any(any(ch.isalnum() for ch in ln) for ln in lines):
            continue  # blank lines and lone braces
        if language in _PREPROCESSED and all(_CONDITIONAL.match(ln) or not ln.strip() for ln in lines):
            continue  # only `#if` / `#else` / `#endif` between definitions: no code of its own
        if all(_BLOCK_ONLY.match(ln) or not ln.strip() for ln in lines):
            continue  # `end`, `do`, `fi` around definitions (Lua's `do ... end` scopes, shell's `if` blocks)
        for at, plines in _split_parts(lines, list(range(start, start + len(lines))), max_lines, max_chars):
            while plines and not plines[-1].strip():
                plines, at = plines[:-1], at[:-1]
            if not any(p.strip() for p in plines):
                continue
            while trim_start and not plines[0].strip():
                plines, at = plines[1:], at[1:]
            pstart, end = at[0], at[-1]
            name = f"{path}:{pstart}-{end}"
            body = "\n".join(plines)
            out.append(
                Entity(
                    id=entity_id(path, "window", f"{label}:{n}", 0), kind="window", name=name,
                    qualname=f"{path} ({label} {pstart}-{end})", signature=_first_line(plines[0]) if plines else "",
                    body=body, start_line=pstart, end_line=end, language=language, file=path,
                    content_hash=hashlib.sha256(body.encode()).hexdigest(),
                )
            )
            n += 1
    return out


# Each definition's passages copy its lines (cut into parts), so definitions sharing one long line copy it once each:
# a minified stylesheet of 376 KB made 925,317 passages and 24 GB. Past this many copies of the file, it is text.
COPY_FACTOR_MAX = 20
COPY_SLACK_CHARS = 1_000_000


def _copied_chars(drafts: list[_Draft], lines: list[str]) -> int:
    """The characters the definitions' passages would copy, nested ones included (containers as skeletons count whole:
    an upper bound)."""
    ends = [0]
    for line in lines:
        ends.append(ends[-1] + len(line) + 1)
    total = 0
    stack = list(drafts)
    while stack:
        d = stack.pop()
        first, last = min(d.start_row, len(lines)), min(max(d.end_line, d.start_row), len(lines))
        total += ends[last] - ends[first]
        stack.extend(d.children)
    return total


def _copy_reason(drafts: list[_Draft]) -> str:
    """Why the definitions' passages would copy the file too often, for the report: most of them share lines with
    others (minified), or they nest so deep that each copies its parents' lines (500 nested `def`s, one a line, were
    reported as long shared lines)."""
    rows: dict[int, int] = {}
    depth = 0
    stack = [(d, 1) for d in drafts]
    while stack:
        d, level = stack.pop()
        rows[d.start_row] = rows.get(d.start_row, 0) + 1
        depth = max(depth, level)
        stack.extend((c, level + 1) for c in d.children)
    if 2 * sum(n for n in rows.values() if n > 1) >= sum(rows.values()):
        return "many definitions share a few long lines (minified?): read as text windows"
    return f"definitions nest {depth} levels deep (each one's passage would copy its parents' lines): read as text windows"


# A line ending of classic Mac OS (CR alone): Python and editors break lines there, tree-sitter counts rows on LF
# only, so every definition of a CR-only file sat at line 1.
LONE_CR = re.compile(rb"\r(?!\n)")


def parse_source(
    source: bytes, path: str, language: str, content_hash: str, max_lines: int = 60, max_chars: int = 2400
) -> ParsedFile:
    """Turn one file's bytes into entities. Never raises on bad input: it reports partial parses instead."""
    source, encoding_error = utf8_source(source, language)  # first: tree-sitter and every check below read UTF-8
    view = python_view(source) if language == NOTEBOOK else None
    notebook = view is not None
    if view is not None:  # line for line, so every entity's lines are the notebook file's
        source, language = view, "python"
    language = refine_language(language, source)
    source = LONE_CR.sub(b"\n", source)  # same length: byte offsets hold, and rows are the lines editors show
    if not uses_tree_sitter(language) or language not in SPECS:
        lines = source_lines(source.decode("utf-8", "replace"))
        ents = _windows([(1, lines)], path, language, max_lines, max_chars, label="lines")
        return ParsedFile(path=path, content_hash=content_hash, entities=ents, partial=bool(encoding_error),
                          error=encoding_error)
    spec = SPECS[language]
    ex = _Extractor(source, language, spec, declaration_file=path.endswith((".d.ts", ".d.mts", ".d.cts")))
    tree = _parser(language).parse(source)
    if tree.root_node.has_error and language in _CONDITIONAL_LANGUAGES:
        tree = _parse_around_conditionals(tree, source, language)
    if tree.root_node.has_error and language in ("typescript", "tsx"):
        tree = _parse_around_variance(tree, source, language)
    drafts: list[_Draft] = []
    ex.walk(tree.root_node, drafts)
    if _copied_chars(drafts, ex.lines) > COPY_FACTOR_MAX * len(source) + COPY_SLACK_CHARS:
        ents = _windows([(1, ex.lines)], path, language, max_lines, max_chars, label="lines")
        return ParsedFile(path=path, content_hash=content_hash, entities=ents, partial=True,
                          error=_copy_reason(drafts))
    entities = _make_entities(drafts, ex, path, max_lines, max_chars, {})
    whole = _file_entity(ex, tree.root_node, path, drafts, max_chars)  # first: it claims the module docstring's rows
    entities.extend(_uncovered_windows(ex, path, drafts, max_lines, max_chars, trim_start=notebook))
    if whole is not None:
        entities.insert(0, whole)
    edges = extract_edges(tree.root_node, language, entities)
    errors: list[str] = []
    if tree.root_node.has_error:
        errors.append(f"syntax errors near line {_first_error_line(tree.root_node)}; kept what parsed")
    if encoding_error:
        errors.append(encoding_error)
    return ParsedFile(path=path, content_hash=content_hash, entities=entities, edges=edges, partial=bool(errors),
                      error="; ".join(errors))


FILE_ENTITY_LANGUAGES_EXCLUDED = frozenset({"markdown", "html", "css"})


def _file_entity(ex: _Extractor, root: Node, path: str, drafts: list[_Draft], max_chars: int) -> Entity | None:
    """The file itself as one entity: its docstring and an outline of what it defines, so a question
    about a file or module ("how are routes registered") can reach the file, not only its parts."""
    if ex.language in FILE_ENTITY_LANGUAGES_EXCLUDED or not ex.lines:
        return None
    doc, doc_rows, banner_rows = _module_doc(ex, root, drafts)
    ex.not_code.update(banner_rows)  # a licence header as a window matched "license" and said nothing else
    outline: list[str] = []

    def add(items: list[_Draft], depth: int) -> None:
        for d in items:
            outline.append("  " * depth + (d.signature or f"{d.kind} {d.name}"))
            if d.kind in _CLASS_KINDS or d.kind == "module":
                add(d.children, depth + 1)

    add(drafts, 0)
    if not outline and not doc:
        return None
    body = "\n".join(outline)[:max_chars]
    if doc:
        ex.not_code.update(doc_rows)  # the file row carries it; as a window it was the same text again
    return Entity(
        id=entity_id(path, "file", path, 0), kind="file", name=PurePosixPath(path).name, qualname=path,
        signature=f"file {path}", docstring=doc, body=body, start_line=1, end_line=len(ex.lines),
        language=ex.language, file=path, content_hash=hashlib.sha256(ex.source).hexdigest(),
    )


def _module_doc(ex: _Extractor, root: Node, drafts: list[_Draft]) -> tuple[str, range, list[int]]:
    """A Python module docstring, or the comment blocks that open the file (but not the first definition's doc
    comment), the rows they span, and the rows of the banners among them (licence headers, linter and encoding
    directives), which are neither doc nor code."""
    children = root.named_children
    if not children:
        return "", range(0), []
    first = children[0]
    if ex.language == "python":  # the grammar leaves a module docstring bare, not in an expression statement
        string = first.named_children[0] if first.type == "expression_statement" and first.named_children else first
        if string.type == "string":
            return strip_doc_markup(_clean_doc(node_text(string))), range(first.start_point[0], _end_line(first)), []
    blocks: list[list[Node]] = []  # runs of comment nodes, split at blank lines
    tags: list[int] = []
    for node in children:
        if node.type == "php_tag":  # `<?php` opens every PHP file, above its header: alone on its line, no code
            if ex.lines[node.start_point[0]].strip() == node_text(node).strip():
                tags.append(node.start_point[0])
            continue
        if node.type not in ex.spec.comment_types:
            break
        if blocks and node.start_point[0] <= _end_line(blocks[-1][-1]):
            blocks[-1].append(node)
        else:
            blocks.append([node])
    claimed = {d.doc_row for d in drafts if d.doc_row is not None}
    blocks = [b for b in blocks if not claimed.intersection(_rows(b))]
    banners = [b for b in blocks if _is_banner(ex.language, b)]
    banner_rows = tags + [row for b in banners for row in _rows(b)]
    kept = [b for b in blocks if b not in banners]  # Go: `// Copyright ...`, then `// Package x does ...`
    if not kept:
        return "", range(0), banner_rows
    text = strip_doc_markup(_clean_doc("\n".join(node_text(c).rstrip() for b in kept for c in b)))
    return text, range(kept[0][0].start_point[0], _end_line(kept[-1][-1])), banner_rows


def _rows(block: list[Node]) -> range:
    """The rows (0-based) a run of comment nodes spans."""
    return range(block[0].start_point[0], _end_line(block[-1]))


def _is_banner(language: str, block: list[Node]) -> bool:
    """A licence header, a shebang or a linter directive opens many files, and says nothing of what the file
    holds. A JS `/*!` comment is a licence banner; Rust's `//!` and `/*!` (and Doxygen's) are the module's doc."""
    raw = node_text(block[0]).lstrip()
    if language not in ("rust", "c", "cpp") and raw.startswith(("/*!", "#!")):
        return True
    text = _clean_doc("\n".join(node_text(c) for c in block)).lower()
    return not text or text.startswith(_DIRECTIVES) or _LICENCE.search(text) is not None


# what linters, type checkers, coverage tools, formatters and bundlers read in a comment: no doc, whatever it sits on
_DIRECTIVES = ("eslint", "@ts-", "prettier-ignore", "-*-", "frozen_string_literal", "vim:", "go:", "+build", "nolint",
               "biome-ignore", "deno-lint-ignore", "istanbul ignore", "c8 ignore", "v8 ignore", "@__no_side_effects__",
               "@__pure__", "#__pure__", "noqa", "type: ignore", "pragma: no cover", "pylint:", "mypy:", "fmt:",
               "rubocop:", "swiftlint:", "noinspection", "clang-format", "nosec", "@formatter:")


def _is_directive(comment: Node) -> bool:
    """A comment that only instructs a tool (`// eslint-disable-next-line`, `/* @__PURE__ */`, `# noqa: E501`)."""
    text = _clean_doc(node_text(comment)).lower()
    return bool(text) and "\n" not in text and text.startswith(_DIRECTIVES)


_LICENCE = re.compile(r"copyright|\(c\)|©|all rights reserved|spdx-license|licen[cs]ed under|@license|^licen[cs]e\b")


_CONDITIONAL_LANGUAGES = _PREPROCESSED | {"csharp"}
_CONDITIONAL_LINE = re.compile(rf"^[ \t]*#[ \t]*({_CONDITIONAL_WORDS})\b".encode())


def _parse_around_conditionals(tree: Tree, source: bytes, language: str) -> Tree:
    """A conditional directive can cut a statement in two (pythonnet's `#if FINALIZER_CHECK` / `lock (_queueLock)` /
    `#endif` before the block it guards), or give each branch its own opening of one block, which no grammar
    parses: the file's later methods then came out of an ERROR node without their class, or were lost. Parse again
    as a preprocessor would with each conditional's first branch taken (the way ctags reads them): the directives
    and the other branches blanked, byte for byte, so every position and line holds and the text taken from
    `source` is the file's own. C# has no macros, so its parse with less code in errors is kept; a C, C++ or
    Objective-C file's only when it parses clean (with macros still in it, a parse mended in part nested fmt's
    whole `format.h` under the `FMT_BEGIN_NAMESPACE` macro, and an `#else` branch's typedefs were lost for it)."""
    blanked = _first_branches(source)
    if blanked == source:
        return tree
    other = _parser(language).parse(blanked)
    if language != "csharp" and other.root_node.has_error:
        return tree  # C's macros (`FMT_BEGIN_NAMESPACE` opens a namespace) make a part-mended parse no safer a bet
    return other if _error_bytes(other.root_node) < _error_bytes(tree.root_node) else tree


def _first_branches(source: bytes) -> bytes:
    """`source` with its conditional directive lines, and the code of every `#elif`/`#else` branch, made blank. The
    other directives stay in every branch: a `#define` there is a whole definition wherever it stands."""
    out: list[bytes] = []
    taken: list[bool] = []  # per open conditional: still in its first branch
    directive = b""  # the directive the previous line continues (it ended in a backslash): b"if" or b"other"
    for line in source.splitlines(keepends=True):
        if directive:
            kind = directive
        else:
            m = _CONDITIONAL_LINE.match(line)
            kind = b"if" if m else b"other" if line.lstrip().startswith(b"#") else b""
            if m is not None:
                word = m.group(1)
                if word.startswith(b"if"):
                    taken.append(True)
                elif word == b"endif":
                    if taken:
                        taken.pop()
                elif taken:
                    taken[-1] = False
        directive = kind if kind and line.rstrip(b"\r\n").endswith(b"\\") else b""
        if kind == b"if" or (kind != b"other" and not all(taken)):
            body = line.rstrip(b"\r\n")
            line = b" " * len(body) + line[len(body):]
        out.append(line)
    return b"".join(out)


def _parse_around_variance(tree: Tree, source: bytes, language: str) -> Tree:
    """TypeScript 4.7's variance annotations (`interface Producer<out T>`, zod's `$ZodType<out O, out I>`) are valid
    code that the bundled grammar reads as syntax errors. Parse again with those `in` / `out` words blanked, byte for
    byte (positions and lines hold, and passages are cut from the file's own lines), and keep that parse when it has
    fewer errors: a file of valid TypeScript is then no "syntax errors" file, and a real error still is one."""
    spans = [m.span(2) for m in _TS_VARIANCE.finditer(source) if _in_type_parameters(tree, m.start(2), m.end(2))]
    if not spans:
        return tree
    blanked = bytearray(source)
    for start, end in spans:
        blanked[start:end] = re.sub(rb"\S", b" ", source[start:end])
    other = _parser(language).parse(bytes(blanked))
    return other if _error_bytes(other.root_node) < _error_bytes(tree.root_node) else tree


def _in_type_parameters(tree: Tree, start: int, end: int) -> bool:
    """Whether these bytes sit in a type parameter list (not in a comment or a string that holds `<out x`)."""
    node: Node | None = tree.root_node.descendant_for_byte_range(start, end)
    while node is not None:
        if node.type == "type_parameters":
            return True
        if node.type in ("comment", "string", "template_string", "program"):
            return False
        node = node.parent
    return False


def _error_bytes(root: Node) -> int:
    """Bytes of source inside ERROR nodes, plus one per missing node (descends only where errors are)."""
    total, stack = 0, [root]
    while stack:
        n = stack.pop()
        if n.type == "ERROR":
            total += max(1, n.end_byte - n.start_byte)
        elif n.is_missing:
            total += 1
        elif n.has_error:
            stack.extend(n.children)
    return total


def _first_error_line(node: Node) -> int:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            return n.start_point[0] + 1
        stack.extend(reversed(n.children))
    return node.start_point[0] + 1

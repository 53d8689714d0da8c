"""Graph edges of one file, read at parse time with tree-sitter queries (run in C, like Aider's tag queries).

Edges: `call` (a call site: the called name and its receiver text, `self.send` -> name `send`, receiver
`self`), `import` (module, imported name, alias), `inherit` (class -> base, from the parse stage's bases) and
`ref` (a name passed or assigned as a value: `hooks=default_hooks`, `register(s.handleKV)` with its receiver `s`).
Building a value of a type (`new X()`, Go's `&X{...}`, Rust's `X { .. }`), rendering a JSX component and applying
a bare TS decorator count as calls of it; calls written in Rust macro arguments (`println!("{}", f(x))`) are read
from the token tree. Each edge records the
innermost definition it sits in. Names are resolved to entities only when asked (`stages.query.graph`), against the catalog
of the moment, so an edit in one file never leaves stale resolutions in another.

Supported: Python, JavaScript, TypeScript/TSX, Go, Rust, Java (calls, imports, inheritance, references);
C, C++, Objective-C (`#include "..."`), Ruby (`require`, `require_relative`, `autoload`), PHP (`use`), Kotlin, Lua
(`require`), Elixir (`alias`, `import`, `use`, `require`), Zig (`@import`) (calls, imports, inheritance); C#, Swift,
Scala, Dart, Haskell, shell (calls and inheritance only). Markdown, HTML, CSS and text have no edges.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tree_sitter import Node, Query, QueryCursor

from assay.stages.core.artifacts import DEFINITION_KINDS, Edge, Entity
from assay.stages.index.idioms import elixir_form
from assay.stages.index.languages import node_text

def _cpp_qualified_calls(depth: int = 3) -> tuple[str, ...]:
    """C++'s `app::run()`, `app::ident<int>()`, `Matrix<T>::identity()` and `a::b::f()`, nested up to `depth` scopes.
    The grammar nests `a::b::f` as `a :: (b :: f)`, so no one node spans `a::b`: the receiver is the innermost scope
    (`b`), which names the class of `Outer::Inner::make()` and, from inside `a`, the namespace `a.b`."""
    scope = "scope: [(namespace_identifier) @recv (template_type name: (type_identifier) @recv)]"
    names = ("(identifier) @name", "(template_function name: (identifier) @name)")
    return tuple(
        "(call_expression function: " + "(qualified_identifier name: " * outer
        + f"(qualified_identifier {scope} name: {name})" + ")" * outer + ") @site"
        for outer in range(depth) for name in names
    )


# JSX: rendering `<Header />` calls the component; a lower-case `<div>` is an HTML element, no name of the code's
_JSX_CALLS = (
    '(jsx_self_closing_element name: (identifier) @name (#match? @name "^[A-Z]")) @site',
    '(jsx_opening_element name: (identifier) @name (#match? @name "^[A-Z]")) @site',
    "(jsx_self_closing_element name: (member_expression object: (_) @recv property: (property_identifier) @name)) @site",
    "(jsx_opening_element name: (member_expression object: (_) @recv property: (property_identifier) @name)) @site",
)

# A bare `@logged` applies the function `logged` (`@withArg(1)` is a call_expression already)
_DECORATOR_CALLS = (
    "(decorator (identifier) @name) @site",
    "(decorator (member_expression object: (_) @recv property: (property_identifier) @name)) @site",
)

_CALLS: dict[str, tuple[str, ...]] = {
    "python": ("(call function: (identifier) @name) @site",
               "(call function: (attribute object: (_) @recv attribute: (identifier) @name)) @site"),
    "javascript": ("(call_expression function: (identifier) @name) @site",
                   "(call_expression function: (member_expression object: (_) @recv property: (property_identifier) @name)) @site",
                   "(new_expression constructor: (identifier) @name) @site",
                   *_DECORATOR_CALLS),
    # a composite literal (`&Server{...}`, `server.Health{}`) builds the type, as Java's `new Server()` does
    "go": ("(call_expression function: (identifier) @name) @site",
           "(call_expression function: (selector_expression operand: (_) @recv field: (field_identifier) @name)) @site",
           "(composite_literal type: (type_identifier) @name) @site",
           "(composite_literal type: (generic_type type: (type_identifier) @name)) @site",
           "(composite_literal type: (qualified_type package: (package_identifier) @recv name: (type_identifier) @name)) @site"),
    # calls inside macro arguments (`println!("{}", f(x))`) are read from the token trees (`_macro_calls`)
    "rust": ("(call_expression function: (identifier) @name) @site",
             "(call_expression function: (scoped_identifier path: (_) @recv name: (identifier) @name)) @site",
             "(call_expression function: (field_expression value: (_) @recv field: (field_identifier) @name)) @site",
             "(struct_expression name: (type_identifier) @name) @site",  # `MemStore { data, cap }` builds the type
             "(struct_expression name: (scoped_type_identifier path: (_) @recv name: (type_identifier) @name)) @site"),
    "java": ("(method_invocation object: (_) @recv name: (identifier) @name) @site",
             "(method_invocation !object name: (identifier) @name) @site",
             "(object_creation_expression type: (type_identifier) @name) @site"),
    "c": ("(call_expression function: (identifier) @name) @site",),
    "cpp": ("(call_expression function: (identifier) @name) @site",
            "(call_expression function: (field_expression argument: (_) @recv field: (field_identifier) @name)) @site",
            # `ident<long>(3)`, `w.put<int>(1)`, `::f()`
            "(call_expression function: (template_function name: (identifier) @name)) @site",
            "(call_expression function: (field_expression argument: (_) @recv field: (template_method name: (field_identifier) @name))) @site",
            "(call_expression function: (qualified_identifier !scope name: (identifier) @name)) @site",
            *_cpp_qualified_calls()),
    "csharp": ("(invocation_expression function: (identifier) @name) @site",
               "(invocation_expression function: (member_access_expression expression: (_) @recv name: (identifier) @name)) @site",
               '(invocation_expression function: (member_access_expression expression: "this" @recv name: (identifier) @name)) @site',
               "(object_creation_expression type: (identifier) @name) @site"),
    "ruby": ("(call receiver: (_) @recv method: (identifier) @name) @site", "(call !receiver method: (identifier) @name) @site"),
    "php": ("(function_call_expression function: (name) @name) @site",
            "(member_call_expression object: (_) @recv name: (name) @name) @site",
            "(scoped_call_expression scope: (_) @recv name: (name) @name) @site"),  # `self::f()`, `Foo::create()`
    "kotlin": ("(call_expression (simple_identifier) @name) @site",
               "(call_expression (navigation_expression (_) @recv (navigation_suffix (simple_identifier) @name))) @site"),
    "swift": ("(call_expression (simple_identifier) @name) @site",
              "(call_expression (navigation_expression target: (_) @recv suffix: (navigation_suffix suffix: (simple_identifier) @name))) @site"),
    "scala": ("(call_expression function: (identifier) @name) @site",
              "(call_expression function: (field_expression value: (_) @recv field: (identifier) @name)) @site"),
    "lua": ("(function_call name: (identifier) @name) @site",
            "(function_call name: (dot_index_expression table: (_) @recv field: (identifier) @name)) @site",
            "(function_call name: (method_index_expression table: (_) @recv method: (identifier) @name)) @site"),
    "elixir": ("(call target: (identifier) @name) @site",  # less the calls that define (idioms.elixir_form)
               "(call target: (dot left: (_) @recv right: (identifier) @name)) @site"),
    "haskell": ("(apply function: (variable) @name) @site",),
    "zig": ("(SuffixExpr variable_type_function: (IDENTIFIER) @name . (FnCallArguments)) @site",
            "(SuffixExpr variable_type_function: (IDENTIFIER) @recv (FieldOrFnCall function_call: (IDENTIFIER) @name)) @site"),
    "bash": ("(command name: (command_name (word) @name)) @site",),
    "objc": ("(call_expression function: (identifier) @name) @site",
             "(message_expression receiver: (_) @recv . method: (identifier) @name) @site"),
    # Dart has no call node: a name, then a selector holding the arguments
    "dart": ("(_ (identifier) @name . (selector (argument_part)) @site)",
             "(_ [(identifier) (this)] @recv . (selector (unconditional_assignable_selector (identifier) @name)) . (selector (argument_part)) @site)",
             "(_ (selector) @recv . (selector (unconditional_assignable_selector (identifier) @name)) . (selector (argument_part)) @site)"),
}
_CALLS["typescript"] = _CALLS["javascript"]  # `.ts` has no JSX (`<T>x` is a cast there)
_CALLS["javascript"] = _CALLS["tsx"] = _CALLS["javascript"] + _JSX_CALLS  # `.js` and `.jsx` share one grammar

# A member passed or assigned as a value (`register("/kv", s.handleKV)`, `Thread(target=self.run)`) is a ref to the
# member, with its receiver, resolved as a call on it would be; a member that is called is a call, and other member
# reads (`x = self.count + 1`) are no refs. Go's sentinels are refs where returned or compared (`err != ErrNotFound`).
_GO_MEMBER = "(selector_expression operand: (_) @recv field: (field_identifier) @ref)"
_GO_PACKAGE_MEMBER = "(selector_expression operand: (identifier) @package field: (field_identifier) @ref)"  # `store.ErrX`
_PY_MEMBER = "(attribute object: (_) @recv attribute: (identifier) @ref)"
_REFS: dict[str, tuple[str, ...]] = {
    "python": ("(argument_list (identifier) @ref)", "(keyword_argument value: (identifier) @ref)",
               "(assignment right: (identifier) @ref)", "(return_statement (identifier) @ref)",
               f"(argument_list {_PY_MEMBER})", f"(keyword_argument value: {_PY_MEMBER})", f"(assignment right: {_PY_MEMBER})"),
    "javascript": ("(arguments (identifier) @ref)", "(pair value: (identifier) @ref)", "(variable_declarator value: (identifier) @ref)"),
    "go": ("(argument_list (identifier) @ref)", f"(argument_list {_GO_MEMBER})",
           f"(assignment_statement right: (expression_list {_GO_MEMBER}))",
           f"(short_var_declaration right: (expression_list {_GO_MEMBER}))",
           f"(literal_element {_GO_MEMBER})",  # `Handler{Serve: s.handleKV}`
           f"(var_spec value: (expression_list {_GO_MEMBER}))",  # `var h = s.handleKV`
           # a sentinel (or any package-level name) returned, compared, switched on or held: `ErrX == err`, `case ErrX:`,
           # `x := ErrX`; `pkg.ErrX` there only after an import of `pkg` (`a.n == b.n` compares fields: no refs)
           *(f"({site} (expression_list (identifier) @ref))" for site in (
               "return_statement", "expression_case value:", "var_spec value:", "short_var_declaration right:",
               "assignment_statement right:")),
           *(f"({site} (expression_list {_GO_PACKAGE_MEMBER}))" for site in ("return_statement", "expression_case value:")),
           *(side.format(value) for value in ("(identifier) @ref", _GO_PACKAGE_MEMBER)  # fields in their written order
             for side in ('(binary_expression left: {} operator: ["==" "!="])',
                          '(binary_expression operator: ["==" "!="] right: {})'))),
    "rust": ("(arguments (identifier) @ref)",
             "(arguments (scoped_identifier path: (_) @recv name: (identifier) @ref))"),  # `.map(Self::parse)`
    # Java's fields live apart from its methods, and the index holds no fields: a name or `this.name` passed along
    # reads a field or a local, never the method `name()`. Only a method reference names a method as a value.
    "java": ("(method_reference (_) @recv . (identifier) @ref .)",),  # `this::handle`, `Server::handle`, wherever written
}
_REFS["typescript"] = _REFS["tsx"] = _REFS["javascript"]

# Macro arguments the grammar leaves as untyped token trees; `_macro_calls` reads the calls in them
_MACROS: dict[str, tuple[str, ...]] = {"rust": ("(macro_invocation (token_tree) @args)",)}

_REQUIRE = ('(variable_declarator {target} value: (call_expression function: (identifier) @req '
            'arguments: (arguments . (string (string_fragment) @module) .)) (#eq? @req "require"))')
_REQUIRE_MEMBER = ('(variable_declarator name: (identifier) @alias value: (member_expression object: (call_expression '
                   'function: (identifier) @req arguments: (arguments . (string (string_fragment) @module) .)) '
                   'property: (property_identifier) @name) (#eq? @req "require"))')
_LUA_REQUIRE = ('(function_call name: (identifier) @req arguments: (arguments . (string content: (string_content) @module) .) '
                '(#eq? @req "require"))')
_ZIG_IMPORT = ('(SuffixExpr (BUILTINIDENTIFIER) @req . (FnCallArguments . (ErrorUnionExpr (SuffixExpr (STRINGLITERALSINGLE) @module)) .) '
               '(#eq? @req "@import"))')
_IMPORTS: dict[str, tuple[str, ...]] = {
    "python": ("(import_from_statement module_name: (_) @module name: (dotted_name) @name)",
               "(import_from_statement module_name: (_) @module name: (aliased_import name: (dotted_name) @name alias: (identifier) @alias))",
               "(import_statement name: (dotted_name) @module)",
               "(import_statement name: (aliased_import name: (dotted_name) @module alias: (identifier) @alias))"),
    "javascript": ("(import_statement (import_clause (named_imports (import_specifier name: (identifier) @name alias: (identifier) @alias))) source: (string (string_fragment) @module))",
                   "(import_statement (import_clause (named_imports (import_specifier !alias name: (identifier) @name))) source: (string (string_fragment) @module))",
                   "(import_statement (import_clause (identifier) @alias) source: (string (string_fragment) @module))",
                   "(import_statement (import_clause (namespace_import (identifier) @alias)) source: (string (string_fragment) @module))",
                   # CommonJS: `const x = require('./x')`, `const { a, b: c } = require('./x')`, `var a = require('./x').a`
                   _REQUIRE.format(target="name: (identifier) @alias"),
                   _REQUIRE_MEMBER,
                   _REQUIRE.format(target="name: (object_pattern (shorthand_property_identifier_pattern) @name)"),
                   _REQUIRE.format(target="name: (object_pattern (pair_pattern key: (property_identifier) @name value: (identifier) @alias))")),
    "go": ("(import_spec name: (package_identifier) @alias path: (interpreted_string_literal) @module)",
           "(import_spec !name path: (interpreted_string_literal) @module)"),
    "rust": ("(use_declaration argument: (_) @module)",),
    "java": ("(import_declaration (scoped_identifier) @module)",),
    "kotlin": ("(import_header (identifier) @module)",),
    # a path or a namespace that names a file; the graph stage resolves it by the importer's language
    "c": ('(preproc_include path: (string_literal (string_content) @module))',),  # `<...>`: the system's headers
    "ruby": ('(call !receiver method: (identifier) @req arguments: (argument_list . (string (string_content) @module) .) '
             '(#match? @req "^require(_relative)?$"))',
             '(call !receiver method: (identifier) @req arguments: (argument_list . (simple_symbol) . (string (string_content) @module) .) '
             '(#eq? @req "autoload"))'),
    "php": ("(namespace_use_clause (qualified_name) @module)",),
    "lua": (_LUA_REQUIRE,
            f"(assignment_statement (variable_list name: (identifier) @alias) (expression_list value: {_LUA_REQUIRE}))"),
    "zig": (_ZIG_IMPORT, f"(VarDecl variable_type_function: (IDENTIFIER) @alias (ErrorUnionExpr {_ZIG_IMPORT}))"),
    "elixir": ('(call target: (identifier) @req (arguments . (alias) @module) (#match? @req "^(alias|import|use|require)$"))',),
}
_IMPORTS["cpp"] = _IMPORTS["objc"] = _IMPORTS["c"]
_IMPORTS["typescript"] = _IMPORTS["tsx"] = _IMPORTS["javascript"]
GRAPH_LANGUAGES = frozenset(_CALLS)
PATH_IMPORTS = frozenset({"c", "cpp", "objc", "ruby", "lua", "zig"})  # the module string is a path


@lru_cache(maxsize=None)
def _query(language: str) -> tuple[Query | None, dict[int, str]]:
    """All of a language's edge patterns in one query (one walk of the tree), and each pattern's group.
    A pattern the grammar cannot compile is left out: that edge kind is simply not supported there."""
    from tree_sitter_language_pack import get_language

    lang = get_language(language)  # type: ignore[arg-type]
    kept: list[tuple[str, str]] = []
    for group, table in (("call", _CALLS), ("ref", _REFS), ("import", _IMPORTS), ("macro", _MACROS)):
        for pattern in table.get(language, ()):
            try:
                Query(lang, pattern)
            except Exception:  # noqa: BLE001
                continue
            kept.append((group, pattern))
    if not kept:
        return None, {}
    return Query(lang, "\n".join(p for _, p in kept)), {i: g for i, (g, _) in enumerate(kept)}



def own_spans(entities: list[Entity]) -> dict[str, tuple[str, str, int, int]]:
    """Each definition's own span over its parts: id of part 0 -> (kind, qualname, start, end). Overloads
    (Java's `add(String)` and `add(Item)`, a Python `if/else` redefinition) share a qualname, not an id: each
    keeps its own lines, so a call in the second overload is the second's."""
    spans: dict[str, tuple[str, str, int, int]] = {}
    for e in entities:
        if e.kind not in DEFINITION_KINDS:
            continue
        eid = e.id.split("-")[0]
        _, _, start, end = spans.get(eid, (e.kind, e.qualname, e.start_line, e.end_line))
        spans[eid] = (e.kind, e.qualname, min(start, e.start_line), max(end, e.end_line))
    return spans


def definition_spans(entities: list[Entity]) -> dict[tuple[str, str], list]:
    """Each named definition's whole span, its overloads merged: (kind, qualname) -> [start, end, id of the first's
    part 0]. For reports by name (a diff's touched definitions); the call graph's scopes use `own_spans`."""
    spans: dict[tuple[str, str], list] = {}
    for eid, (kind, qual, start, end) in own_spans(entities).items():
        if (kind, qual) not in spans:
            spans[(kind, qual)] = [start, end, eid]
        else:
            spans[(kind, qual)][0] = min(spans[(kind, qual)][0], start)
            spans[(kind, qual)][1] = max(spans[(kind, qual)][1], end)
    return spans


class _Scopes:
    """Innermost enclosing definition of each line, painted once per file: outer spans first, inner ones over them
    (equal spans keep the parse order, parent before child, so the child wins)."""

    def __init__(self, entities: list[Entity]) -> None:
        self.owner: dict[int, tuple[str, str]] = {}
        spans = sorted(own_spans(entities).items(), key=lambda kv: kv[1][2] - kv[1][3])  # widest first
        for eid, (_, qual, start, end) in spans:
            for line in range(start, end + 1):
                self.owner[line] = (qual, eid)

    def at(self, line: int) -> tuple[str, str]:
        return self.owner.get(line, ("", ""))


def _rust_uses(text: str) -> list[tuple[str, str, str]]:
    """`crate::a::{b, c as d}` -> [(crate::a, b, ''), (crate::a, c, d)]."""
    text = " ".join(text.split())
    m = re.match(r"^(.*?)::\{(.*)\}$", text)
    if m:
        base, items = m.group(1), m.group(2)
        out = []
        for item in items.split(","):
            item = item.strip()
            if not item:
                continue
            name, _, alias = item.partition(" as ")
            out.append((base + ("::" + name.rsplit("::", 1)[0] if "::" in name else ""), name.rsplit("::", 1)[-1], alias.strip()))
        return out
    name, _, alias = text.partition(" as ")
    module, _, last = name.rpartition("::")
    return [(module, last, alias.strip())]


_PATH_TOKENS = frozenset({"identifier", "self", "super", "crate"})
_DEFINERS = frozenset({"fn", "struct", "enum", "union"})  # `fn g(a: u32)` in a macro defines `g`, calls nothing


def _is_args(node: Node) -> bool:
    """A `( ... )` token tree: a call's arguments, unlike `[0]` or `{ ... }`."""
    return node.type == "token_tree" and node.child_count > 0 and node.children[0].type == "("


def _token_receiver(tokens: list[Node], name_at: int) -> tuple[str, int] | None:
    """The receiver written before the name at `name_at` (`a::b` of `a::b::f`, `x.y` of `x.y.f`, `Foo::new()` of
    `Foo::new().f`) and the index of its first token: ('', name_at) for a bare name, None for a receiver the token
    walk cannot read soundly (`v[0].f`, `Vec::<u8>::new`, `format!(..).len`)."""
    if name_at == 0 or tokens[name_at - 1].type not in (".", "::"):
        return "", name_at
    k, start = name_at - 2, None
    while k >= 0:
        kind = tokens[k].type
        if kind in _PATH_TOKENS:
            start = k
            if k >= 1 and tokens[k - 1].type in (".", "::"):
                k -= 2
                continue
            break
        if _is_args(tokens[k]) and k >= 1 and tokens[k - 1].type == "identifier":  # the result of a call
            k -= 1
            continue
        return None
    if start is None:
        return None
    return "".join(node_text(t) for t in tokens[start : name_at - 1]), start


def _macro_calls(tree: Node) -> list[tuple[str, str, int]]:
    """Calls in a Rust macro's arguments, which the grammar leaves as a token tree (`println!("{}", f(x))`,
    `assert_eq!(s.get("a"), None)`, `vec![Foo::new()]`): each name right before a `( ... )` tree, with the receiver
    the tokens before it spell. (name, receiver, line) each; attributes (`#[derive(X)]`) and the names that
    definitions in a macro introduce are left out."""
    out: list[tuple[str, str, int]] = []
    stack = [tree]
    while stack:
        tokens = list(stack.pop().children)
        for i, token in enumerate(tokens):
            if token.type != "token_tree" or (i and tokens[i - 1].type == "#"):
                continue
            stack.append(token)
            if not (i and _is_args(token) and tokens[i - 1].type == "identifier"):
                continue
            if i >= 2 and tokens[i - 2].type in _DEFINERS:
                continue
            found = _token_receiver(tokens, i - 1)
            if found is not None:
                receiver, start = found
                out.append((node_text(tokens[i - 1]), receiver, tokens[start].start_point[0] + 1))
    return out


def extract_edges(root: Node, language: str, entities: list[Entity]) -> list[Edge]:
    """Every call, import, inheritance and reference edge of one parsed file."""
    if language not in GRAPH_LANGUAGES:
        return []
    scopes = _Scopes(entities)
    edges: list[Edge] = []
    defined_names = {e.name for e in entities if e.kind in DEFINITION_KINDS}

    def add(kind: str, name: str, line: int, receiver: str = "", alias: str = "", module: str = "") -> None:
        if not name:
            return
        source, source_id = scopes.at(line)
        edges.append(Edge.model_construct(kind=kind, name=name, line=line, receiver=receiver[:120], alias=alias, module=module,
                                          source=source, source_id=source_id))

    query, groups = _query(language)
    matches = QueryCursor(query).matches(root) if query is not None else []
    package_refs: list[tuple[str, int, str]] = []  # Go's `pkg.ErrX`: a ref only if `pkg` is an import, known at the end
    for index, caps in matches:
        group = groups[index]
        if group == "call":
            site = caps["site"][0]
            if language == "elixir" and elixir_form(site):
                continue
            recv = caps.get("recv")
            add("call", node_text(caps["name"][0]), site.start_point[0] + 1, receiver=node_text(recv[0]) if recv else "")
        elif group == "macro":
            for name, receiver, line in _macro_calls(caps["args"][0]):
                add("call", name, line, receiver=receiver)
        elif group == "ref":
            node = caps["ref"][0]
            name = node_text(node)
            if "package" in caps:
                package_refs.append((name, node.start_point[0] + 1, node_text(caps["package"][0])))
            elif name in defined_names or name[:1].isupper():
                recv = caps.get("recv")
                add("ref", name, node.start_point[0] + 1, receiver=node_text(recv[0]) if recv else "")
        else:
            module_node = caps["module"][0]
            module = node_text(module_node).strip("\"'")
            line = module_node.start_point[0] + 1
            alias = node_text(caps["alias"][0]) if "alias" in caps else ""
            if "name" in caps:
                add("import", node_text(caps["name"][0]), line, alias=alias, module=module)
            elif language == "rust":
                for mod, name, als in _rust_uses(module):
                    add("import", name, line, alias=als, module=mod)
            elif language in ("java", "kotlin"):
                mod, _, name = module.rpartition(".")
                add("import", name, line, module=mod)
            elif language == "php":  # `use A\\B\\C;`: the class `C`, whose file the namespace path names
                add("import", module.rsplit("\\", 1)[-1], line, module=module)
            elif language == "elixir":  # `alias Mix.Project`: `Project` names the module, `Mix.Project` its file
                add("import", module.rsplit(".", 1)[-1], line, module=module)
            elif language == "ruby" and node_text(caps["req"][0]) == "require_relative":
                path = module if module.startswith(".") else "./" + module
                add("import", path, line, module=path)
            elif language in PATH_IMPORTS:  # `#include "x.h"`, `require "pl.utils"`, `@import("x.zig")`: a file, whole
                add("import", module, line, alias=alias, module=module)
            else:  # `import a.b as c`, `import * as ns from 'x'`, a Go package: the module itself
                add("import", module.rsplit("/", 1)[-1].rsplit(".", 1)[-1] if language != "python" else module, line, alias=alias, module=module)
    packages = {edge.alias or edge.name for edge in edges if edge.kind == "import"}
    for name, line, package in package_refs:
        if package in packages:
            add("ref", name, line, receiver=package)
    for e in entities:
        if e.part == 0 and e.bases:
            for base in e.bases:
                edges.append(Edge(kind="inherit", name=base.rsplit(".", 1)[-1], receiver=base, line=e.start_line,
                                  source=e.qualname, source_id=e.id))
    return edges

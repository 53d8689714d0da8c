"""Grammar idioms the generic definition walk cannot read from node types alone.

Elixir defines with macros (`defmodule`, `def`), which its grammar parses as calls; Zig's grammar wraps every
definition in a `Decl`, and a Zig generic type is a function that returns `type`. The parse stage asks here
what such a node defines and what it is called; the graph stage asks which Elixir calls are no calls.
"""

from __future__ import annotations

from tree_sitter import Node

from assay.stages.index.languages import node_text

# the called name says what an Elixir definition defines
ELIXIR_DEFS = {
    "defmodule": "module", "defprotocol": "interface", "defimpl": "class", "def": "function", "defp": "function",
    "defmacro": "function", "defmacrop": "function", "defguard": "function", "defguardp": "function",
    "defdelegate": "function",
}
# Elixir forms that are calls in the grammar but neither definitions nor call edges
ELIXIR_DIRECTIVES = ("defstruct", "defexception", "alias", "import", "require", "use")
ZIG_CONTAINERS = {"struct": "struct", "enum": "enum", "union": "struct", "opaque": "struct"}


def child_of(node: Node, types: frozenset[str]) -> Node | None:
    """The first direct named child of one of `types` (None for none, or for no types)."""
    return next((c for c in node.named_children if c.type in types), None) if types else None


def elixir_head(node: Node) -> Node | None:
    """What a `def` / `defmodule` call defines: `name(args)`, a module alias, or `name(args) when guard`."""
    args = child_of(node, frozenset({"arguments"}))
    head = args.named_children[0] if args is not None and args.named_children else None
    if head is not None and head.type == "binary_operator":
        head = head.child_by_field_name("left")
    return head


def elixir_name(node: Node) -> str | None:
    head = elixir_head(node)
    if head is None:
        return None
    if head.type == "call":
        target = head.child_by_field_name("target")
        return node_text(target) if target is not None and target.type == "identifier" else None
    return node_text(head) if head.type in ("alias", "identifier") else None


def elixir_doc(node: Node) -> str:
    """The raw value of `@doc` just above a function, or of `@moduledoc` first in a module's body ('' for none)."""
    prev = node.prev_named_sibling
    if prev is None or prev.type != "unary_operator":
        body = child_of(node, frozenset({"do_block"}))
        prev = body.named_children[0] if body is not None and body.named_children else None
        if prev is None or not node_text(prev).startswith("@moduledoc"):
            return ""
    text = node_text(prev)
    for attr in ("@moduledoc", "@doc"):
        if text.startswith(attr):
            return text[len(attr):].strip().removeprefix("~S").removeprefix("~s")
    return ""


def elixir_form(call: Node) -> bool:
    """A call that is no call: a definition or directive itself (`def`, `alias`), the head of a definition
    (`def get(id)` is a call inside the `def` call) or a module attribute (`@doc "..."`)."""
    target = call.child_by_field_name("target")
    if target is not None and target.type == "identifier" and node_text(target) in (*ELIXIR_DEFS, *ELIXIR_DIRECTIVES):
        return True
    parent = call.parent
    if parent is not None and parent.type == "unary_operator":
        return True
    holder = parent.parent if parent is not None and parent.type == "arguments" else None
    outer = holder.child_by_field_name("target") if holder is not None and holder.type == "call" else None
    return outer is not None and node_text(outer) in ELIXIR_DEFS


def _zig_container(var: Node) -> Node | None:
    """`const Point = struct { ... }`: the ContainerDecl under a VarDecl's value, if that value is one."""
    node: Node | None = var
    for _ in range(4):
        node = child_of(node, frozenset({"ErrorUnionExpr", "SuffixExpr", "ContainerDecl"})) if node is not None else None
        if node is not None and node.type == "ContainerDecl":
            return node
    return None


def zig_kind(decl: Node) -> str | None:
    proto = child_of(decl, frozenset({"FnProto"}))
    if proto is not None:  # `fn List(comptime T: type) type { return struct {...} }` is how Zig writes a generic type
        returns = proto.named_children[-1] if proto.named_children else None
        return "struct" if returns is not None and node_text(returns) == "type" and child_of(decl, frozenset({"Block"})) else "function"
    var = child_of(decl, frozenset({"VarDecl"}))
    box = _zig_container(var) if var is not None else None
    head = child_of(box, frozenset({"ContainerDeclType"})) if box is not None else None
    word = node_text(head).split("(")[0].strip() if head is not None else ""
    return ZIG_CONTAINERS.get(word)


def zig_name(node: Node) -> str | None:
    if node.type == "TestDecl":
        label = next((c for c in node.named_children if c.type.startswith("STRINGLITERAL") or c.type == "IDENTIFIER"), None)
        return f"test {node_text(label).strip(chr(34))}" if label is not None else "test"
    inner = child_of(node, frozenset({"FnProto", "VarDecl"}))
    field = "function" if inner is not None and inner.type == "FnProto" else "variable_type_function"
    name = inner.child_by_field_name(field) if inner is not None else None
    return node_text(name) or None

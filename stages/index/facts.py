"""Code facts of a definition, read from its tree-sitter node at index time.

The premise check (`stages.query.premise`) compares what a question presupposes with these: which
decorators a definition carries, whether it is async, its return annotation, each parameter's
default, and the exceptions its own body raises (not those of nested functions or callees).
Languages give what their grammar states: decorators (Python, TypeScript; Java annotations; Rust attributes),
async (Python, JS/TS, Rust), return types (Python, TS, Go, Rust, Java), defaults (Python, JS/TS)
and raises/throws (Python, JS/TS, Java).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from assay.stages.core.artifacts import CodeFacts
from assay.stages.index.languages import SPECS, node_text

_NESTED_SCOPES = frozenset(
    {"function_definition", "class_definition", "lambda", "function_declaration", "function_expression",
     "arrow_function", "method_definition", "class_declaration", "generator_function_declaration"}
)
_RETURN_FIELDS = ("return_type", "result")
_DEFAULT_PARAMS = frozenset({"default_parameter", "typed_default_parameter", "required_parameter", "optional_parameter", "assignment_pattern"})
_NAME = re.compile(r"[A-Za-z_$][\w$]*")



def _decorator_name(node: Node) -> str:
    """`@functools.lru_cache(maxsize=2)` -> `lru_cache`; `@x.setter` -> `setter`."""
    raw = node_text(node).lstrip("@").split("(", 1)[0].strip()
    return raw.rsplit(".", 1)[-1]


def _rust_attribute(item: Node) -> str:
    """`#[test]` -> `test`, `#[tokio::test]` -> `test`; `cfg` keeps its condition (`#[cfg(test)]` -> `cfg(test)`),
    which says when the item exists at all."""
    attr = next((c for c in item.named_children if c.type == "attribute"), None)
    if attr is None or not attr.named_children:
        return ""
    name = node_text(attr.named_children[0]).rsplit("::", 1)[-1]
    if name == "cfg" and len(attr.named_children) > 1:
        return name + "".join(node_text(attr.named_children[1]).split())
    return name


def _rust_attributes(span: Node) -> list[str]:
    """The outer attributes written above a Rust item (doc comments may sit among them)."""
    found: list[str] = []
    prev = span.prev_named_sibling
    while prev is not None and prev.type in ("attribute_item", "line_comment", "block_comment"):
        if prev.type == "attribute_item":
            found.insert(0, _rust_attribute(prev))
        prev = prev.prev_named_sibling
    return found


def _decorators(node: Node, span: Node, language: str = "") -> list[str]:
    found: list[str] = _rust_attributes(span) if language == "rust" else []
    if span.type == "decorated_definition":
        found += [_decorator_name(c) for c in span.named_children if c.type == "decorator"]
    prev = node.prev_named_sibling  # TypeScript: class-member decorators are siblings before the member
    while prev is not None and prev.type == "decorator":
        found.insert(0, _decorator_name(prev))
        prev = prev.prev_named_sibling
    for child in node.children:  # TypeScript class decorators and Java annotations sit among the modifiers
        if child.type == "decorator":
            found.append(_decorator_name(child))
        elif child.type == "modifiers":
            found += [_decorator_name(m) for m in child.named_children if m.type in ("marker_annotation", "annotation")]
    return [d for d in dict.fromkeys(found) if d]


def _is_async(node: Node) -> bool:
    for child in node.children:
        if child.type == "async" or (child.type in ("function_modifiers", "modifiers") and "async" in node_text(child).split()):
            return True
    value = node.child_by_field_name("value")  # const f = async () => ...
    return value is not None and any(c.type == "async" for c in value.children)


def _returns(node: Node, language: str) -> str:
    target = node
    value = node.child_by_field_name("value")
    if node.type == "variable_declarator" and value is not None:
        target = value
    for field in _RETURN_FIELDS:
        found = target.child_by_field_name(field)
        if found is not None:
            return " ".join(node_text(found).lstrip(":").split())
    if language == "java" and node.type == "method_declaration":
        return " ".join(node_text(node.child_by_field_name("type")).split())
    return ""


def _defaults(node: Node) -> dict[str, str]:
    params = node.child_by_field_name("parameters")
    if params is None and node.type == "variable_declarator" and node.child_by_field_name("value") is not None:
        params = node.child_by_field_name("value").child_by_field_name("parameters")  # type: ignore[union-attr]
    out: dict[str, str] = {}
    if params is None:
        return out
    for p in params.named_children:
        if p.type not in _DEFAULT_PARAMS:
            continue
        value = p.child_by_field_name("value") or p.child_by_field_name("right")
        name = p.child_by_field_name("name") or p.child_by_field_name("pattern") or p.child_by_field_name("left")
        if value is not None and name is not None:
            out[node_text(name).lstrip("$")] = " ".join(node_text(value).split())[:80]
    return out


def _raised_name(stmt: Node) -> str:
    expr = next((c for c in stmt.named_children if c.type not in ("comment",)), None)
    if expr is None:
        return ""
    if expr.type == "new_expression":
        expr = expr.child_by_field_name("constructor") or expr
    elif expr.type == "call":
        expr = expr.child_by_field_name("function") or expr
    elif expr.type == "object_creation_expression":
        expr = expr.child_by_field_name("type") or expr
    name = node_text(expr).split("(", 1)[0].rsplit(".", 1)[-1].strip()
    return name if _NAME.fullmatch(name) and name[:1].isupper() else ""  # `raise err` re-raises a variable: unknown type


def _raises(node: Node, descend: frozenset[str] | None) -> list[str]:
    """Exception types the body raises itself; `descend` (the language's statement containers) skips
    expression subtrees, which cannot hold a raise in Python."""
    body = node.child_by_field_name("body")
    if body is None:
        return []
    found: list[str] = []
    stack = list(body.named_children)
    while stack:
        n = stack.pop()
        if n.type in _NESTED_SCOPES:
            continue
        if n.type in ("raise_statement", "throw_statement"):
            name = _raised_name(n)
            if name:
                found.append(name)
        elif descend is None or n.type in descend:
            stack.extend(n.named_children)
    for child in node.named_children:  # Java: `throws IOException, X`
        if child.type == "throws":
            found += [node_text(t) for t in child.named_children]
    return sorted(set(found))


def facts_of(node: Node, span: Node, language: str, kind: str) -> CodeFacts | None:
    """Facts of a function, method or class definition; None for other kinds."""
    if kind in ("function", "method"):
        return CodeFacts(decorators=_decorators(node, span, language), is_async=_is_async(node),
                         returns=_returns(node, language), defaults=_defaults(node),
                         raises=_raises(node, SPECS[language].descend if language in SPECS else None))
    if kind in ("class", "interface", "struct", "enum", "trait", "module"):  # a Rust `#[cfg(test)] mod tests` too
        decorators = _decorators(node, span, language)
        return CodeFacts(decorators=decorators) if decorators else None
    return None

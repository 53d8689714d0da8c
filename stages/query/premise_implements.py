"""Whether a type implements an interface or trait, where a language does not write that on the type.

Go satisfies an interface implicitly (a type implements it by having its methods), and Rust writes
`impl Trait for Type` apart from the type, in any file; the parse stage records a Rust impl as a base only when
the impl and the type share a file. So in these languages a type's recorded bases cannot show that it does not
implement an interface: the premise checker (`premise._check_one`) asks here instead of calling it false. For Go
the method sets can still confirm it: every method the interface declares defined on the type (or a type it
embeds) with the same parameter and result types.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from assay.stages.core.artifacts import Entity, short_name

Resolver = Callable[[str], list[Entity]]

IMPLEMENTED_APART = frozenset({"go", "rust"})
# what a type can be claimed to "inherit from" in these languages and still be decided by the recorded bases: a
# concrete type is embedded (Go, in the type's own declaration) or never a base (Rust), not implemented
_CONCRETE_KINDS = frozenset({"class", "struct", "enum"})
_GO_TYPE_WORDS = frozenset({"chan", "func", "struct", "interface", "map"})  # a Go type that starts with a word
_IDENT = re.compile(r"[A-Za-z_]\w*")


def undecidable(subject: Entity, claimed: list[Entity]) -> bool:
    """Whether a missing base of `subject` says nothing: its language implements interfaces apart from the type,
    and the claimed base is not known to be a concrete type (an interface, a trait, or not in the index)."""
    return subject.language in IMPLEMENTED_APART and not (claimed and all(d.kind in _CONCRETE_KINDS for d in claimed))


def go_implements(subject: Entity, claimed: list[Entity], owners: list[str], resolve: Resolver) -> bool | None:
    """True when a Go `claimed` interface's methods are all defined on one of `owners` (the subject's qualname and
    those of the types it embeds) with the same types; None when that cannot be told (no method sets to compare)."""
    if subject.language != "go":
        return None
    for iface in claimed:
        if iface.kind == "interface" and iface.language == "go" and _all_defined(_interface_methods(iface), owners, resolve):
            return True
    return None


def _all_defined(methods: dict[str, str] | None, owners: list[str], resolve: Resolver) -> bool:
    if not methods:  # an embedded interface, a type set, or no methods at all: nothing exact to compare
        return False
    for name, tail in methods.items():
        wanted = _go_types(tail)
        found = [_go_types(_method_tail(d.signature, name)) for owner in owners for d in resolve(f"{owner}.{name}")
                 if d.kind == "method" and d.language == "go" and d.part == 0]
        if wanted is None or wanted not in found:
            return False
    return True


def _interface_methods(iface: Entity) -> dict[str, str] | None:
    """Each method the interface body declares, by name, with the text after its name; None when the body holds
    anything else (an embedded interface or a type set: methods this text does not show)."""
    text = iface.body or iface.signature
    open_, close = text.find("{"), text.rfind("}")
    if open_ < 0 or close < open_:
        return None
    out: dict[str, str] = {}
    for element in re.split(r"[\n;]", re.sub(r"//[^\n]*|/\*.*?\*/", "", text[open_ + 1 : close], flags=re.S)):
        element = element.strip()
        if not element:
            continue
        m = re.match(r"([A-Za-z_]\w*)\s*(\(.*)", element)
        if m is None:
            return None
        out[m.group(1)] = m.group(2)
    return out


def _method_tail(signature: str, name: str) -> str:
    """The text after the method's name in `func (r *T) Name(...) ...`; '' when the signature is not of that shape."""
    m = re.match(r"\s*func\s*\((?:[^()]|\([^()]*\))*\)\s*" + re.escape(name) + r"\s*(\(.*)", signature, re.S)
    return m.group(1).rstrip().removesuffix("{") if m else ""  # a signature read up to its body's brace


def _go_types(tail: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(parameter types, result types) of `(key string) (string, error)`, names dropped; None when unreadable."""
    params, rest = _group(tail.strip())
    if params is None:
        return None
    rest = rest.strip()
    if rest.startswith("("):
        results, after = _group(rest)
        if results is None or after.strip():
            return None
    else:
        results = rest
    p, r = _list_types(params), _list_types(results)
    return None if p is None or r is None else (p, r)


def _group(text: str) -> tuple[str | None, str]:
    """The inside of the parenthesised group `text` starts with, and what follows it."""
    if not text.startswith("("):
        return None, text
    depth = 0
    for i, c in enumerate(text):
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0:
            return text[1:i], text[i + 1 :]
    return None, text


def _list_types(text: str) -> tuple[str, ...] | None:
    """The types of a Go parameter or result list, each written without spaces. Go names all items or none:
    `a, b string` is two strings, `string, error` two unnamed types."""
    items = [" ".join(i.split()) for i in _split_top(text)]
    if any(not i for i in items):
        return () if items == [""] else None
    split = [i.split(" ", 1) for i in items]
    named = any(len(s) == 2 and _IDENT.fullmatch(s[0]) and s[0] not in _GO_TYPE_WORDS for s in split)
    if not named:
        return tuple(i.replace(" ", "") for i in items)
    types: list[str] = []
    pending = 0
    for s in split:
        if len(s) == 1:
            pending += 1  # `a` of `a, b string`: typed by the next item
            continue
        types.extend([s[1].replace(" ", "")] * (pending + 1))
        pending = 0
    return tuple(types) if not pending else None


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def owner_names(subject: Entity, ancestors: set[str], resolve: Resolver, class_kinds: frozenset[str]) -> list[str]:
    """The subject's qualname and those of the indexed types it embeds (their methods are promoted to it)."""
    names = [subject.qualname]
    for a in sorted(ancestors):
        names.extend(d.qualname for d in resolve(short_name(a)) if d.kind in class_kinds and d.language == subject.language)
    return list(dict.fromkeys(names))

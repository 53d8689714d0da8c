"""Edit one member of a JSON-with-comments file in place, keeping every other byte.

Agents' configuration files are JSONC: VS Code's `mcp.json` may hold `// comments` and trailing commas, which
`json.loads` refuses and `json.dumps` would drop. `loads` reads such a file; `set_member` and `remove_member` splice
one `outer.inner` member into or out of the text, so the user's comments, order and layout stay as they were.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|[{}\[\]:,]|[^\s{}\[\]:,"/]+|/', re.S)


class JsoncError(ValueError):
    """The text is not JSON, even allowing comments and trailing commas."""


@dataclass
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int
    comma: int = -1  # the offset of the comma after the value, -1 if none
    members: list[_Member] | None = None  # the value's members when it is an object


@dataclass
class _Object:
    open: int
    close: int
    members: list[_Member] = field(default_factory=list)


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(token, start, end) for every token but comments; an unclosed string or comment is an error."""
    out = []
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok.startswith(("//", "/*")):
            continue
        if tok == "/" or (tok.startswith('"') and (len(tok) < 2 or not tok.endswith('"'))):
            raise JsoncError(f"unexpected {tok!r} at {_where(text, m.start())}")
        out.append((tok, m.start(), m.end()))
    return out


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.toks, self.i = text, _tokens(text), 0

    def _peek(self) -> tuple[str, int, int]:
        if self.i >= len(self.toks):
            raise JsoncError("unexpected end of file")
        return self.toks[self.i]

    def _expect(self, want: str) -> tuple[str, int, int]:
        tok = self._peek()
        if tok[0] != want:
            raise JsoncError(f"expected {want!r} at {_where(self.text, tok[1])}, found {tok[0]!r}")
        self.i += 1
        return tok

    def value(self) -> tuple[int, int, _Object | None]:
        tok, start, end = self._peek()
        if tok == "{":
            obj = self.object()
            return obj.open, obj.close + 1, obj
        if tok == "[":
            self.i += 1
            while self._peek()[0] != "]":
                self.value()
                if self._peek()[0] == ",":
                    self.i += 1
            return start, self._expect("]")[2], None
        if tok in "}]:,":
            raise JsoncError(f"unexpected {tok!r} at {_where(self.text, start)}")
        self._literal(tok, start)
        self.i += 1
        return start, end, None

    def _literal(self, tok: str, start: int) -> object:
        """A string, number, true, false or null."""
        try:
            return json.loads(tok)
        except ValueError:
            raise JsoncError(f"unexpected {tok[:20]!r} at {_where(self.text, start)}") from None

    def object(self) -> _Object:
        obj = _Object(self._expect("{")[1], -1)
        while self._peek()[0] != "}":
            key, key_start, _ = self._peek()
            if not key.startswith('"'):
                raise JsoncError(f"expected a quoted key at {_where(self.text, key_start)}")
            self.i += 1
            self._expect(":")
            start, end, inner = self.value()
            member = _Member(str(self._literal(key, key_start)), key_start, start, end,
                             members=inner.members if inner else None)
            obj.members.append(member)
            if self._peek()[0] == ",":
                member.comma = self._peek()[1]
                self.i += 1
            elif self._peek()[0] != "}":
                raise JsoncError(f"expected ',' or '}}' at {_where(self.text, self._peek()[1])}")
        obj.close = self._expect("}")[1]
        return obj


def _top(text: str) -> _Object:
    parser = _Parser(text if text.strip() else "{}")
    if parser._peek()[0] != "{":
        raise JsoncError("expected a JSON object at the top level")
    top = parser.object()
    if parser.i != len(parser.toks):
        raise JsoncError(f"unexpected text after the object at {_where(parser.text, parser.toks[parser.i][1])}")
    return top


def loads(text: str) -> dict:
    """The object a JSONC text holds (an empty text is `{}`)."""
    if not text.strip():
        return {}
    _top(text)  # validates, with the position of the first fault
    toks = _tokens(text)
    kept = [tok for i, (tok, _, _) in enumerate(toks) if not (tok == "," and i + 1 < len(toks) and toks[i + 1][0] in "}]")]
    return json.loads(" ".join(kept))


def _indent_at(text: str, offset: int) -> str:
    line = text[text.rfind("\n", 0, offset) + 1 : offset]
    return line[: len(line) - len(line.lstrip())]


def _body(value: object, indent: str) -> str:
    return json.dumps(value, indent=2).replace("\n", "\n" + indent)


def _dumped(key: str, value: object, indent: str) -> str:
    return f"{json.dumps(key)}: {_body(value, indent)}"


def _insert(text: str, obj: _Object, key: str, value: object, indent: str) -> str:
    """`key: value` as the object's first member, on its own line."""
    on_own_line = text[obj.open + 1 :].lstrip(" \t").startswith(("\n", "\r"))
    rest = ("," if on_own_line else ",\n" + indent) if obj.members else "\n" + indent[:-2]
    entry = "\n" + indent + _dumped(key, value, indent) + rest
    return text[: obj.open + 1] + entry + text[obj.open + 1 :]


def set_member(text: str, outer: str, inner: str, value: object) -> str:
    """The text with `outer.inner` set to `value` (added first in `outer`, `outer` first in the file if absent)."""
    source = text if text.strip() else "{}\n"
    top = _top(source)
    found = next((m for m in top.members if m.key == outer), None)
    if found is None:
        return _insert(source, top, outer, {inner: value}, "  ")
    if found.members is None:
        raise JsoncError(f"{outer!r} is not an object")
    member = next((m for m in found.members if m.key == inner), None)
    if member is None:
        base = _indent_at(source, found.key_start)
        obj = _Object(found.value_start, found.value_end - 1, found.members)
        return _insert(source, obj, inner, value, base + "  ")
    indent = _indent_at(source, member.key_start)
    return source[: member.value_start] + _body(value, indent) + source[member.value_end :]


def remove_member(text: str, outer: str, inner: str) -> str:
    """The text without `outer.inner` (and its line, when it had one to itself); unchanged when absent."""
    if not text.strip():
        return text
    top = _top(text)
    found = next((m for m in top.members if m.key == outer), None)
    members = found.members if found is not None and found.members is not None else []
    at = next((i for i, m in enumerate(members) if m.key == inner), None)
    if at is None:
        return text
    member = members[at]
    start, end = member.key_start, (member.comma + 1 if member.comma >= 0 else member.value_end)
    comma = members[at - 1].comma if member.comma < 0 and at > 0 else -1  # the last member: its predecessor's comma
    if comma >= 0 and not text[comma + 1 : start].strip():
        return text[:comma] + text[end:]  # only space between: the comma and the member go together
    line_start = text.rfind("\n", 0, start)
    if not text[line_start + 1 : start].strip():
        start = line_start  # its own line: take the line break before it too
    if comma >= 0:  # a comment sits between the comma and the member: it is the user's, so only the comma goes
        return text[:comma] + text[comma + 1 : start] + text[end:]
    return text[:start] + text[end:]

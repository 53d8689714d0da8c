"""Values an answer gives a name ("`Session.trust_env` defaults to False"), and the initial values the code gives it.

The premise checker knows parameter defaults of a named function; an attribute set in a constructor
(`self.trust_env = True`), a class attribute or a module constant holds a value too. Initial means: a parameter's
default, a constructor's or class body's assignment, a constant's definition. An assignment from a parameter
(`self.verify = verify`) takes that parameter's default; from an expression it is not simple, and the guard then
does not call a differing claim a contradiction.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

from assay.stages.core.artifacts import Candidate, Entity
from assay.stages.query.claims import Span
from assay.stages.query.premise import norm_literal

_NUMBER = r"-?(?:0[xXoObB][0-9a-fA-F_]+|\d[\d_]*(?:\.\d+)?(?:[eE]-?\d+)?)\b"
_LIT = (r"(?:`[^`\n]{1,60}`|'[^'\n]{0,40}'|\"[^\"\n]{0,40}\"|" + _NUMBER + r"|True\b|False\b|None\b|true\b|false\b|null\b|"
        r"undefined\b|nil\b|an?\s+empty\s+\w+)")
_NAME = r"(?:`[^`\n]{1,80}`|[A-Za-z_$][\w$.]*)"
_VERB = (r"(?:defaults?\s+to|is\s+set\s+to|is\s+initiali[sz]ed\s+(?:to|with|as)|starts?\s+(?:out\s+)?(?:at|as)|"
         r"(?:has\s+)?(?:a\s+)?default(?:\s+value)?\s+(?:is|of)|=|is\s+(?=" + _LIT + r"\s+by\s+default))")
_CLAIM = (r"(?:(?P<O2>" + _NAME + r")'s\s+)?(?P<S>" + _NAME + r")\s+(?:(?:parameter|argument|attribute|option|field|"
          r"setting|flag|constant|property)\s+)?(?:(?:of|on|in)\s+(?:the\s+)?(?P<O>" + _NAME + r")\s+)?"
          + r"(?P<verb>" + _VERB + r")\s*(?P<V>" + _LIT + r")")
# "`Session` sets `verify` to True by default": the owner first
_SETS = (r"(?P<O>" + _NAME + r")\s+(?:sets|initiali[sz]es|assigns|starts)\s+(?:its\s+|the\s+)?(?P<S>" + _NAME
         + r")\s+(?:attribute\s+|field\s+)?(?:to|=|at|as)\s*(?P<V>" + _LIT + r")\s+(?:by\s+default|initially)")
# `self.x = kwargs.pop('x', 5)`, `opts.get("x", 5)`: the default a lookup falls back on
_LOOKUP = re.compile(r"^[\w.]+\.(?:pop|get|setdefault)\(\s*['\"][\w-]+['\"]\s*,\s*(?P<d>[^()]+?)\s*\)$")
_SCOPE = re.compile(r"^(?:In|For|Inside|Within)\s+(?:the\s+)?(" + _NAME + r")\s*,")  # "In `f`, `p` defaults to 3"
_CUE = re.compile(r"default|\bsets?\b|initiali|\bstarts?\b|=")  # words without which no value is claimed
_SIMPLE = re.compile(r"^(?:" + _LIT + r"|[A-Za-z_$][\w$.]*(?:\(\))?|\[\]|\{\}|\(\))$")
_CONSTRUCTORS = frozenset({"__init__", "__post_init__", "constructor", "new", "__new__", "setUp", "initialize"})
_SELF = re.compile(r"^(?:self|this|cls)\.")


@dataclass(frozen=True)
class Value:
    value: str
    owner: str
    source: str
    simple: bool
    assigned: bool = False  # set by an assignment (an attribute, a constant), not a parameter's default

    def matches(self, claimed: str) -> bool:
        if norm_literal(self.value) == norm_literal(claimed):
            return True
        try:  # 0o777 and 511, 10 and 10.0, 'a' and "a"
            return bool(ast.literal_eval(self.value.strip("`")) == ast.literal_eval(claimed.strip("`")))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False


def _clean(raw: str) -> str:
    return _SELF.sub("", raw.strip("`'\" ").removesuffix("()"))


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """Compiled on first need (a sentence with a value cue): ~15 ms a cold `ask` without one does not pay."""
    return re.compile(pattern)


def value_claims(span: Span) -> Iterator[tuple[str, str, str]]:
    """(name, owner, value) of each "X defaults to V" the sentence states outside code spans."""
    if not _CUE.search(span.text):
        return
    inside = [(m.start() + 1, m.end() - 1) for m in re.finditer(r"`[^`\n]*`", span.text)]
    for m in [*_compiled(_CLAIM).finditer(span.text), *_compiled(_SETS).finditer(span.text)]:
        if any(a <= m.start() < b for a, b in inside):
            continue  # quoted code, not a statement about it
        subject = _clean(m.group("S"))
        if not subject or subject[:1].isdigit() or " " in subject:
            continue
        verb = m.groupdict().get("verb") or ""
        if (verb == "=" or verb.startswith("is set")) and not subject.split(".")[-1].isupper():
            continue  # "`delay` is set to 0" may tell what a later line does; a constant's value is its only one
        owner = _clean(m.group("O") or m.groupdict().get("O2") or "")
        scope = _SCOPE.match(span.text)
        owner = owner or (_clean(scope.group(1)) if scope and scope.end() <= m.start() else "")
        if "." in subject:
            owner, subject = subject.rsplit(".", 1)[0], subject.rsplit(".", 1)[1]
        yield subject, owner, m.group("V").strip("`")


def _qualname(e: Candidate | Entity) -> str:
    return e.entity if isinstance(e, Candidate) else e.qualname


def _owner_name(owner: str) -> str:
    """The definition an owner names: `Session` for `Session`, `Session.__init__` or `pkg.Session`."""
    parts = owner.split(".")
    return parts[-2] if len(parts) > 1 and parts[-1] in _CONSTRUCTORS else parts[-1]


def _relevant(e: Candidate | Entity, owner: str) -> bool:
    if not owner:
        return True
    q, short = _qualname(e), _owner_name(owner)
    last = q.split(".")
    return q == owner or last[-1] == short or (len(last) > 1 and last[-2] == short and last[-1] in _CONSTRUCTORS)


def initial_values(name: str, owner: str, passages: list[Candidate], resolve: Callable[[str], list[Entity]]) -> list[Value]:
    """The values the code starts `name` with, from the passages and (given an owner) its definitions in the index."""
    pool: list[Candidate | Entity] = list(passages)
    if owner:
        short = _owner_name(owner)
        pool += resolve(short) + [e for c in _CONSTRUCTORS for e in resolve(f"{short}.{c}")]
    else:
        pool += [e for e in resolve(name) if e.kind == "constant"]
    out: dict[tuple[str, str], Value] = {}
    for e in pool:
        if _relevant(e, owner):
            for v in _values_in(e, name):
                out.setdefault((v.source, v.value), v)
    found = list(out.values())
    return [v for v in found if not v.assigned] or found  # a parameter's default is what "defaults to" means


def _values_in(e: Candidate | Entity, name: str) -> Iterator[Value]:
    q = _qualname(e)
    where = f"{e.file}:{e.start_line}"
    defaults = (e.facts.defaults if e.facts else {}) or {}
    if e.kind in ("function", "method") and name in defaults:
        yield Value(defaults[name], q, where, bool(_SIMPLE.match(defaults[name])), False)
    constructor = e.kind in ("function", "method") and q.split(".")[-1] in _CONSTRUCTORS
    if not (constructor or e.kind in ("class", "struct", "constant", "enum")):
        return
    lhs = r"(?:self|this)\." if constructor else r""
    chain = r"(?:" + lhs + r"\w+\s*=(?!=)\s*)*"  # `self.hits = self.misses = 0`
    pattern = re.compile(r"^[ \t]*" + chain + lhs + re.escape(name) + r"\s*(?::[^=\n]+)?=(?!=)\s*" + chain
                         + r"(?P<v>[^\n#;]+?)\s*;?\s*(?:#.*)?$", re.M)
    for m in pattern.finditer(e.body):
        rhs = m.group("v").strip().rstrip(",")
        lookup = _LOOKUP.match(rhs)
        rhs = lookup.group("d") if lookup else rhs
        line = e.start_line + e.body.count("\n", 0, m.start())
        if constructor and rhs in (e.params or []):
            if rhs not in defaults:
                yield Value(rhs, q, f"{e.file}:{line}", False, True)  # the caller decides
                continue
            rhs = defaults[rhs]
        yield Value(rhs, q, f"{e.file}:{line}", bool(_SIMPLE.match(rhs)), True)

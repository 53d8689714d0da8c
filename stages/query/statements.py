"""What an answer's sentence states about a definition, as premises the checker can test (`premise.check`).

The question grammar (`premise.extract`) reads presuppositions in any phrasing of a question, and compiling it
costs ~0.2 s of a cold start. An answer states facts in a few plain forms ("`S` raises `E`", "`S` is defined in
`f.py`", "`S` takes a `p` argument"), read here by a dozen patterns compiled once. A name counts only when written
as code: in backticks, or code-shaped (snake_case, CamelCase, a dotted path); "the result" is no subject. A negated
statement ("never raises") is left alone.
"""

from __future__ import annotations

import re
from functools import cache

from assay.stages.core.artifacts import Premise
from assay.stages.query.claims import CODE_EXTENSIONS, path_body

_SLOT = r"(?P<{g}>`[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?`|(?<![\w$.`])[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?)"
_FILE = r"(?P<V>`?" + path_body("|".join(CODE_EXTENSIONS)) + r"`?)(?![\w/])"
_A = r"(?:(?:an?|the)\s+)?"
_PARAM_NOUN = r"(?:argument|parameter|keyword|kwarg|option)s?\b"
_FORMS: tuple[tuple[str, str], ...] = (
    ("param", r"{S}(?:'s)?\s+(?:takes|accepts|has|expects|receives|requires|gets)\s+(?:(?:an?|the|one|optional|keyword|"
              r"keyword-only|positional|extra|named)\s+)*{V}\s+" + _PARAM_NOUN),
    ("param", r"\b(?:[Tt]he|[Aa]n?|[Ii]ts)\s+{V}\s+" + _PARAM_NOUN + r"\s+(?:of|to|for|in|accepted\s+by|taken\s+by)\s+(?:the\s+)?{S}"),
    ("base", r"{S}\s+(?:inherits\s+from|extends|derives\s+from|subclasses|is\s+derived\s+from|is\s+an?\s+(?:direct\s+)?"
             r"subclass\s+of)\s+(?:the\s+)?{V}"),
    ("returns", r"{S}\s+(?:returns|gives\s+back|is\s+annotated\s+to\s+return)\s+" + _A + "{V}"),
    ("returns", r"\b[Tt]he\s+return\s+(?:type|value)\s+of\s+{S}\s+is\s+" + _A + "{V}"),
    ("raises", r"{S}\s+(?:raises|throws|(?:can|may|will|might)\s+(?:raise|throw))\s+" + _A + "{V}"),
    ("raises", r"{V}\s+is\s+(?:raised|thrown)\s+(?:by|from|in)\s+(?:the\s+)?{S}"),
    ("file", r"{S}\s+(?:is\s+(?:defined|declared|implemented|located)|lives|sits|resides)\s+in\s+(?:the\s+)?(?:file\s+|module\s+)?"
             + _FILE),
    ("file", r"(?:\b[Tt]he\s+(?:module|file)\s+)?" + _FILE + r"\s+defines\s+(?:the\s+)?{S}"),
)
# words without which a kind's forms cannot match: a sentence compiles and runs only the forms it may hold
_CUES = {"param": ("argument", "parameter", "keyword", "kwarg", "option"), "base": ("inherit", "extend", "derive", "subclass"),
         "returns": ("return", "gives back"), "raises": ("raise", "throw"), "file": CODE_EXTENSIONS}
_NEGATION = re.compile(r"\b(?:not|never|no\s+longer|cannot)\b|n't\b", re.I)
_CODE_SHAPED = re.compile(r"`|_|\.|\(\)|[a-z][A-Z]|^[A-Z][a-z0-9]+[A-Z]")


@cache
def _pattern(i: int) -> re.Pattern[str]:
    """Compiled on first need: compiling all forms took ~17 ms of every cold `ask`."""
    return re.compile(_FORMS[i][1].replace("{S}", _SLOT.format(g="S")).replace("{V}", _SLOT.format(g="V")))


def _clean(raw: str) -> str:
    return raw.strip("`").removesuffix("()")


def stated_premises(text: str) -> list[Premise]:
    """Each plain-form statement of the sentence whose subject (and, but for a file, value) is written as code."""
    out: list[Premise] = []
    low = text.lower()
    for i, (kind, _) in enumerate(_FORMS):
        if kind == "file" and not re.search(r"\.(?:" + "|".join(CODE_EXTENSIONS) + r")\b", text) or \
                kind != "file" and not any(cue in low for cue in _CUES[kind]):
            continue
        for m in _pattern(i).finditer(text):
            subject, value = m.group("S"), m.group("V")
            if not _CODE_SHAPED.search(subject) or _NEGATION.search(text[max(0, m.start() - 30) : m.end()]):
                continue
            if kind != "file" and not (_CODE_SHAPED.search(value) or kind in ("raises", "base", "returns") and value[:1].isupper()):
                continue
            v = _clean(value)
            out.append(Premise(kind=kind, subject=_clean(subject), value=v, param=v if kind == "param" else "",  # type: ignore[arg-type]
                               text=m.group(0)))
    return out

"""The code identifiers a question names. Small and import-light on purpose: the rank stage reads them for every
search, and a cold `assay search` must not load the judge (its injection detector alone took ~0.1 s to import)."""

from __future__ import annotations

import re

# snake_case is `x` + letters/digits + `_` + ...: the same words as `[A-Za-z_]+[A-Za-z0-9]*_...`, whose two runs
# could split one long word every way (a pasted 1 MB token took half an hour)
_IDENT = re.compile(r"`([^`]+)`|\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\b|\b([A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)\b|\b([A-Za-z_][A-Za-z0-9_]*)\(\)")


def question_identifiers(question: str) -> list[str]:
    """Code identifiers named in a question: `backticked`, dotted.paths, snake_case, camelCase, call()."""
    found: list[str] = []
    for m in _IDENT.finditer(question):
        raw = next(g for g in m.groups() if g)
        raw = raw.strip().rstrip("()")
        for part in re.split(r"[\s,]+", raw):
            part = part.strip("`'\".,:;()")
            if part and re.match(r"^[A-Za-z_][\w.]*$", part):
                found.append(part)
    return list(dict.fromkeys(found))

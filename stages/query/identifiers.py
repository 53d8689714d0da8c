"""The code identifiers a question names. Small and import-light on purpose: the rank stage reads them for every
search, and a cold `assay search` must not load the judge (its injection detector alone took ~0.1 s to import)."""

from __future__ import annotations

import re
import unicodedata

# snake_case is `x` + letters/digits + `_` + ...: the same words as `[A-Za-z_]+[A-Za-z0-9]*_...`, whose two runs
# could split one long word every way (a pasted 1 MB token took half an hour)
_IDENT = re.compile(r"`([^`]+)`|\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\b|\b([A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)\b|\b([A-Za-z_][A-Za-z0-9_]*)\(\)")


def question_identifiers(question: str) -> list[str]:
    """Code identifiers named in a question: `backticked`, dotted.paths, snake_case, camelCase, call(); in a
    question that is not all ASCII, names with non-ASCII letters too (`_non_ascii_names`)."""
    found: list[str] = []
    for m in _IDENT.finditer(question):
        raw = next(g for g in m.groups() if g)
        raw = raw.strip().rstrip("()")
        for part in re.split(r"[\s,]+", raw):
            part = part.strip("`'\".,:;()")
            if part and _NAME_PART.match(part):
                found.append(part)
    if not question.isascii():  # an ASCII question's identifiers stay exactly what the rank models learned from
        found += _non_ascii_names(question)
    return list(dict.fromkeys(found))


# A backticked name: `[^\W\d]` is `[A-Za-z_]` on ASCII, and any letter else (`計算する`, `Ünïcödé`)
_NAME_PART = re.compile(r"^[^\W\d][\w.]*$")
# A word that may be a name, in any script; `_IDENT`'s ASCII classes and word boundaries never match a part of one
_WIDE_NAME = re.compile(r"(?<![\w.])[^\W\d]\w*(?:\.[^\W\d]\w*)*(?:\(\))?")
_SNAKE = re.compile(r"[^\W\d][^\W_]*_\w+")  # `_IDENT`'s snake_case, any letters
_ASCII_WORD = re.compile(r"[A-Za-z]+")


def _non_ascii_names(question: str) -> list[str]:
    """Names holding a non-ASCII letter, read as `_IDENT` reads ASCII ones: call(), dotted, snake_case or camelCase
    (`größe_fehlt`, `Ünïcödé.método`, `getÜberData`); and a word wholly in a non-Latin script (`存在しない`,
    `вычислить`) inside a question written in ASCII words, where it can only be a name. A capitalised Latin word
    (`Ünïcödé`) is prose here, as `Unicode` is."""
    words = [w for w in _WIDE_NAME.findall(question) if not w.isascii()]
    english = len(_ASCII_WORD.findall(question)) > max(1, sum(_foreign(w) for w in words))
    names = []
    for word in words:
        name = word.removesuffix("()")
        if word != name or "." in name or _SNAKE.fullmatch(name) or _camel(name) or (english and _foreign(name)):
            names.append(name)
    return names


def _camel(name: str) -> bool:
    """`_IDENT`'s camelCase in any cased script: lower then an upper (`getÜber`), or Upper, lower, Upper (`ÜberData`)."""
    if not name.isalnum() or len(name) < 2:
        return False
    if name[0].islower():
        return any(c.isupper() for c in name[1:])
    return name[0].isupper() and (name[1].islower() or name[1].isdigit()) and any(c.isupper() for c in name[2:])


def _foreign(word: str) -> bool:
    """Every letter of the word is outside the Latin script (CJK, Cyrillic, Greek, ...)."""
    letters = [c for c in word if c.isalpha()]
    return bool(letters) and not any("LATIN" in unicodedata.name(c, "") for c in letters)

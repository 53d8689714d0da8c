"""Code-aware BM25 tokens: `HTTPAdapter.send_request` yields httpadapter, http, adapter, send_request, send,
request. Words are stemmed (Snowball English), so "dependency injection" meets `dependencies/` and `inject`.

Apart from the BM25 index (`lexical`) because parse workers tokenize too, and a worker that imports only this
starts ~0.14 s sooner (no bm25s, no numpy).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

import Stemmer

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
# An acronym's plural is one word (`URLs`, `UUIDs`, `userIDs`: url, uuid, user + id), not `UR` + `Ls`.
_CAMEL = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i if in into is it its of on or should so that the "
    "their them then there these this to was what when where which who why will with would you your".split()
)


TOKENIZER_VERSION = 4  # bump when `lexical_tokens` changes: the catalog's cached tokens are keyed by it
_STEMMER = Stemmer.Stemmer("english")
_stem = _STEMMER.stemWord
stem_word = _stem  # the stemmer the index uses, for the rank stage's word roots


def word_parts(word: str) -> list[str]:
    """An identifier's words, lowercased: `HTTPAdapter_send` -> http, adapter, send."""
    return [p.lower() for chunk in word.split("_") for p in _CAMEL.findall(chunk)]


def tokenize(text: str) -> list[str]:
    """Identifiers whole and split (snake and camel case), lowercased and stemmed, minus English stop words.
    A bag of words (BM25 ignores order): each distinct word is looked up once, times its count."""
    out: list[str] = []
    for word, count in Counter(_TOKEN.findall(text)).items():
        tokens = _word_tokens(word)
        out.extend(tokens * count if count > 1 else tokens)
    return out


# a word holding a letter outside ASCII (`größe_berechnen`, `計算する`, `método`): `_TOKEN` reads only its ASCII runs
_UNICODE_WORD = re.compile(r"(?:[^\W\d]|_)\w*")


def lexical_tokens(text: str) -> list[str]:
    """BM25's tokens: `tokenize`'s, and words holding non-ASCII letters whole (lowercased) with their snake-case
    parts, in place of the ASCII fragments `tokenize` cuts from them (`método` read as `todo`, `計算する` as
    nothing). `tokenize` itself is unchanged: the learned models' features were trained on it."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)  # `café` typed composed or decomposed is one name, as for Python
    words = [w for w in _UNICODE_WORD.findall(text) if not w.isascii()] if not text.isascii() else []
    if not words:
        return tokenize(text)
    out = tokenize(_UNICODE_WORD.sub(lambda m: m.group(0) if m.group(0).isascii() else " ", text))
    for word in words:
        parts = [p.lower() for chunk in word.split("_") for p in _unicode_camel(chunk)]
        out.append(word.lower())
        if len(parts) > 1:
            out.extend(t for p in parts for t in (_word_tokens(p) if p.isascii() else (p,)))
    return out


def _unicode_camel(chunk: str) -> list[str]:
    """A word's camel-case parts by Unicode case (`naïveBayesModel`: naïve, Bayes, Model; `getÜberData`: get,
    Über, Data); `_CAMEL` knows ASCII letters only. Digits and caseless scripts (CJK) stay in their part."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(chunk)):
        prev, cur, nxt = chunk[i - 1], chunk[i], chunk[i + 1] if i + 1 < len(chunk) else ""
        if cur.isupper() and (prev.islower() or (prev.isupper() and nxt.islower())):
            parts.append(chunk[start:i])
            start = i
    parts.append(chunk[start:])
    return [p for p in parts if p]


def token_string(text: str) -> str:
    """`lexical_tokens` joined by spaces: how the catalog stores a passage's tokens."""
    return " ".join(lexical_tokens(text))


@lru_cache(maxsize=200_000)
def _word_tokens(word: str) -> tuple[str, ...]:
    """One word's tokens, memoised: code repeats a small vocabulary, so this turns 9k passages from
    seconds into a fraction of one."""
    low = word.lower()
    if low in STOPWORDS or len(low) < 2:
        return ()
    parts = word_parts(word)
    if len(parts) > 1:
        return (low, *(_stem(p) for p in parts if len(p) > 1 and p not in STOPWORDS))
    return (_stem(low),)

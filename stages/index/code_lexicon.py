"""The words programmers write about code, for telling on-topic prose from off-topic requests.

Shipped as `data/code_words.txt`, built once from two corpora nobody evaluates Assay on: the comments, docstrings
and identifiers of the Python standard library (a word counts when at least three modules use it), and the names
in the Python files of 72 PyPI sdists (a word counts when at least `MIN_PACKAGES` of them name things with it:
"dataset", "numpy", "dimension", which the standard library never says, while "sonnet" or "relativity" name
nothing). `python -m tests.benchmarks.build_code_lexicon --write` rebuilds the file byte for byte (same interpreter).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from assay.stages.core.config import DATA_DIR

PATH = DATA_DIR / "code_words.txt"
_WORD = re.compile(r"[A-Za-z][a-z]{2,}")
MIN_MODULES = 3
MIN_PACKAGES = 8  # of the 72 sdists: a word one domain's packages use ("weather", "capital") stays foreign


def words_of(text: str) -> set[str]:
    """Lower-case words of three letters or more; identifiers split on `_` and case changes."""
    return {w.lower() for w in _WORD.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", text.replace("_", " ")))}


def build(root: Path) -> list[str]:
    counts: Counter[str] = Counter()
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts or "test" in path.parts or "tests" in path.parts:
            continue
        try:
            counts.update(words_of(path.read_text("utf-8", "replace")))
        except OSError:
            continue
    return sorted(w for w, n in counts.items() if n >= MIN_MODULES)


def identifier_words(source: str) -> set[str]:
    """The words of a Python file's names (its tokenizer's NAME tokens): what code calls things, not what its
    prose talks about. An untokenizable file gives the words read before the error."""
    found: set[str] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME:
                found |= words_of(token.string)
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def combine(stdlib: Iterable[str], packages: Iterable[set[str]], min_packages: int = MIN_PACKAGES) -> list[str]:
    """The lexicon: the standard library's words, and each word the names of `min_packages` packages share."""
    counts: Counter[str] = Counter()
    for words in packages:
        counts.update(words)
    return sorted(set(stdlib) | {w for w, n in counts.items() if n >= min_packages})


@lru_cache(maxsize=1)
def code_words() -> frozenset[str]:
    try:
        return frozenset(PATH.read_text(encoding="utf-8").split())
    except OSError:
        return frozenset()


def inflections(word: str) -> set[str]:
    """A lower-case word and the bases its inflection may hide ("prompting" -> prompt, "calculated" -> calculate,
    "stopped" -> stop, "classes" -> class); derivations ("relativity") are left alone."""
    found = {word}
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            base = word[: -len(suffix)]
            found |= {base, base + "e"}
            if len(base) > 2 and base[-1] == base[-2]:
                found.add(base[:-1])
    if word.endswith("s"):
        found.add(word[:-1])
        if word.endswith("es"):
            found.add(word[:-2])
    return found


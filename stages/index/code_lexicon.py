"""The words programmers write about code, for telling on-topic prose from off-topic requests.

Built once from the comments, docstrings and identifiers of the Python standard library (a corpus
nobody evaluates Assay on) and shipped as `data/code_words.txt`: a word counts when at least three
modules use it. `python -m assay.stages.index.code_lexicon` rebuilds the file from the running interpreter's
standard library.
"""

from __future__ import annotations

import re
import sysconfig
from collections import Counter
from functools import lru_cache
from pathlib import Path

from assay.stages.core.config import DATA_DIR

PATH = DATA_DIR / "code_words.txt"
_WORD = re.compile(r"[A-Za-z][a-z]{2,}")
MIN_MODULES = 3


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


@lru_cache(maxsize=1)
def code_words() -> frozenset[str]:
    try:
        return frozenset(PATH.read_text().split())
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


if __name__ == "__main__":
    words = build(Path(sysconfig.get_paths()["stdlib"]))
    PATH.write_text("\n".join(words) + "\n")
    print(f"{len(words)} words -> {PATH}")

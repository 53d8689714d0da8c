"""Which words of a question the index cannot read: a question mostly in words no indexed passage holds (a question
in Chinese or Russian naming one English identifier) was answered from that one word alone, rated trust high."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from assay.stages.index.tokens import _UNICODE_WORD

UNREAD_SHARE = 0.5  # at least half the question's words unread: it was not understood, whatever the passages say


def unread_words(question: str, vocabulary_holds) -> tuple[list[str], list[str]]:
    """(words read, words unread): a word holding non-ASCII letters is unread when the index's vocabulary lacks it
    (BM25 keeps such words whole, lowercased); ASCII words are always read (English is tokenized, stemmed and
    matched in parts: a paraphrase's words are not unread because no identifier spells them)."""
    read: list[str] = []
    unread: list[str] = []
    for word in _UNICODE_WORD.findall(unicodedata.normalize("NFC", question)):
        if word.isascii() or vocabulary_holds(word.lower()):
            read.append(word)
        else:
            unread.append(word)
    return read, unread


def unread_line(question: str, root: Path | str) -> str:
    """A guidance line when most of the question is unread (empty otherwise): what it was read as, and what not."""
    if question.isascii():
        return ""
    try:
        from assay.stages.query.retrieve import load_lexical

        index = load_lexical(Path(root))
    except Exception:  # noqa: BLE001 - no index to ask: nothing to say about it
        return ""
    read, unread = unread_words(question, index.knows)
    if not read or not unread or len(unread) < UNREAD_SHARE * (len(read) + len(unread)):
        return ""  # no word read at all: nothing was answered from a part of it (the report is unsupported)
    shown = ", ".join(unread[:5]) + (f" and {len(unread) - 5} more" if len(unread) > 5 else "")
    return (f"question: read only as \"{' '.join(read)}\"; no indexed passage holds {shown}: the answer is about "
            "those words alone (ask in the code's own words, or name a function, class or file)")

"""Each passage's distinct terms and how often each occurs: the state BM25's scores are computed from.

It is kept beside the BM25 index, so a re-index after a one-file change updates it (drop the changed passages,
count their new tokens) instead of reading and counting all 9k passages of a repository again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from assay.stages.index.tokens import TOKENIZER_VERSION

EMPTY_PASSAGE = ("_empty_",)  # a passage without tokens still gets a row, so ids and rows stay aligned
_ARRAYS = "terms.npz"
_VOCAB = "terms.json"
CHUNK = 4096  # passages counted at a time: ~400k tokens, a few MB of numpy, as fast as one pass


@dataclass(frozen=True)
class TermCounts:
    """Passage-major counts: passage i (of `ids`, sorted) holds terms `term[ptr[i]:ptr[i+1]]` (ascending), each
    occurring `tf` times, and `length[i]` tokens in all."""

    ids: list[str]
    vocab: list[str]
    ptr: np.ndarray
    term: np.ndarray
    tf: np.ndarray
    length: np.ndarray

    @classmethod
    def count(cls, ids: list[str], tokens: list[list[str]], vocab: list[str] | None = None) -> "TermCounts":
        """Count passages given in id order; new terms extend `vocab` (a copy)."""
        return cls.count_rows(zip(ids, tokens), vocab)

    @classmethod
    def count_rows(cls, rows: Iterable[tuple[str, list[str]]], vocab: list[str] | None = None,
                   chunk: int = CHUNK) -> "TermCounts":
        """Count (id, tokens) passages given in id order, `chunk` at a time: a full build never holds every
        passage's tokens as Python strings (55k passages: ~5M tokens, ~360 MB, the index run's peak memory)."""
        index = {w: i for i, w in enumerate(vocab or ())}
        ids: list[str] = []
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        batch: list[list[str] | tuple[str, ...]] = []
        for pid, tokens in rows:
            ids.append(pid)
            batch.append(tokens or EMPTY_PASSAGE)
            if len(batch) >= chunk:
                parts.append(_count_chunk(batch, index))
                batch = []
        if batch or not parts:
            parts.append(_count_chunk(batch, index))
        sizes, term, tf, length = (np.concatenate(arrays) for arrays in zip(*parts))
        return cls(ids, list(index), offsets(sizes), term, tf, length)

    def update(self, changed: set[str], ids: list[str], tokens: list[list[str]]) -> "TermCounts":
        """These counts with every `changed` passage dropped, then `ids` (those of them that still exist, in id
        order) counted from `tokens` and merged in id order. Terms no passage uses any more leave the vocabulary,
        as in a full build: a purged file's words (an ignored `.env`'s secrets) must not stay on disk."""
        added = TermCounts.count(ids, tokens, self.vocab)
        kept = [i for i, pid in enumerate(self.ids) if pid not in changed]
        pool_ids = self.ids + added.ids
        rows = sorted(kept + list(range(len(self.ids), len(pool_ids))), key=pool_ids.__getitem__)
        ptr = np.concatenate([self.ptr[:-1], added.ptr + self.ptr[-1]])
        term, tf = np.concatenate([self.term, added.term]), np.concatenate([self.tf, added.tf])
        take = np.asarray(rows, dtype=np.int64)
        sizes = ptr[take + 1] - ptr[take]
        out_ptr = offsets(sizes)
        at = np.repeat(ptr[take] - out_ptr[:-1], sizes) + np.arange(int(out_ptr[-1]), dtype=np.int64)
        return TermCounts([pool_ids[r] for r in rows], added.vocab, out_ptr, term[at], tf[at],
                          np.concatenate([self.length, added.length])[take]).without_unused()

    def without_unused(self) -> "TermCounts":
        """These counts with the terms no passage uses dropped and the rest renumbered in their order. Scores do
        not change: such a term has no postings, so no column in BM25's matrix and no match for a query."""
        used = np.bincount(self.term, minlength=len(self.vocab)) > 0
        if used.all():
            return self
        renumber = np.cumsum(used) - 1
        vocab = [w for w, keep in zip(self.vocab, used.tolist()) if keep]
        return TermCounts(self.ids, vocab, self.ptr, renumber[self.term].astype(np.int32), self.tf, self.length)

    def unused_share(self) -> float:
        """The share of the vocabulary no passage uses (0 after `update`, which drops such terms)."""
        used = np.count_nonzero(np.bincount(self.term, minlength=len(self.vocab)))
        return 1.0 - used / max(len(self.vocab), 1)

    def postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(term, passage, tf) ordered by term, then passage: the column order of BM25's score matrix."""
        doc = np.repeat(np.arange(len(self.ids), dtype=np.int64), np.diff(self.ptr))
        key = self.term.astype(np.uint16) if len(self.vocab) <= 1 << 16 else self.term  # 16 bits: a radix sort
        order = np.argsort(key, kind="stable")
        return self.term[order].astype(np.int64), doc[order], self.tf[order]

    def save(self, folder: Path) -> None:
        """Into the BM25 index's folder (its `ids.json` holds the ids)."""
        np.savez(folder / _ARRAYS, ptr=self.ptr, term=self.term, tf=self.tf, length=self.length)
        (folder / _VOCAB).write_text(json.dumps({"tokenizer": TOKENIZER_VERSION, "vocab": self.vocab}), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> "TermCounts | None":
        """The counts a build left, or None when absent, from another tokenizer, or inconsistent."""
        try:
            meta = json.loads((folder / _VOCAB).read_text(encoding="utf-8"))
            ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
            with np.load(folder / _ARRAYS) as arrays:
                ptr, term, tf, length = (arrays[k] for k in ("ptr", "term", "tf", "length"))
        except (OSError, ValueError, KeyError):
            return None
        if meta.get("tokenizer") != TOKENIZER_VERSION or len(ptr) != len(ids) + 1 or len(length) != len(ids):
            return None
        if int(ptr[-1]) != len(term) or len(tf) != len(term):
            return None
        return cls(ids, meta["vocab"], ptr, term, tf, length)


def _count_chunk(rows: list, index: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One chunk of passages' (distinct terms per passage, term, tf, length), passage-major; new terms join `index`
    numbered by first occurrence, so chunks give the numbers and order one pass over all passages would."""
    for w in dict.fromkeys(chain.from_iterable(rows)):  # C loops: a Python loop per token took twice as long
        index.setdefault(w, len(index))
    n_docs, n_vocab = len(rows), max(len(index), 1)
    length = np.fromiter(map(len, rows), dtype=np.int64, count=n_docs)
    flat = np.fromiter(map(index.__getitem__, chain.from_iterable(rows)), dtype=np.int64, count=int(length.sum()))
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), length)
    pairs, tf = np.unique(doc * n_vocab + flat, return_counts=True)  # by passage, then term
    pair_doc, term = np.divmod(pairs, n_vocab)
    return np.bincount(pair_doc, minlength=n_docs), term.astype(np.int32), tf.astype(np.int32), length


def offsets(sizes: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive runs of these sizes, plus the end: a CSR/CSC pointer array."""
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out

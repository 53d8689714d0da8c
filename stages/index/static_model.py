"""A static embedder distilled from the shipped MiniLM weights (the Model2Vec recipe, numpy + onnxruntime).

Each vocabulary token is run through all-MiniLM-L6-v2 once (`[CLS] token [SEP]`, mean pooled); the
30,522 vectors are reduced to 256 dimensions with PCA and weighted by the token's estimated frequency. A
text's vector is then the mean of its tokens' rows: no transformer at index or query time, so embedding runs
~20x faster and sees up to 512 tokens instead of 128. The table is built on first use (about 30 s on 2 cores)
and cached in ASSAY_HOME; it needs no download. Measured on the dev sets it ranks code search almost as well as
MiniLM and natural-language questions worse, so it is an option (`ASSAY_EMBEDDER=static`), not the default.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

STATIC_DIMS = 256
STATIC_RECIPE = 2  # bump when the table's recipe changes (2: rows weighted by estimated token frequency)
SIF_COEFFICIENT = 1e-4  # Model2Vec's default; 1e-3 and 1e-5 measured worse on the dev sets together
STATIC_MAX_TOKENS = 512  # gathering token rows is the cost; 512 scored as 1,024 on the dev sets (0.858 vs 0.862)


def distill_table(session, tokenizer, dims: int = STATIC_DIMS, ids: Iterable[int] | None = None,
                  batch: int = 1024, progress=None, sif: float | None = SIF_COEFFICIENT) -> np.ndarray:
    """Rows of the static table: every token id (or only `ids`, for tests) through the model, then PCA, then
    each row scaled by its token's frequency weight (`sif_weights`; None leaves rows unweighted). Rows of ids
    left out stay zero."""
    vocab = tokenizer.get_vocab()
    size = vocab_rows(tokenizer)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    wanted = np.array(sorted(set(ids)) if ids is not None else range(size), dtype=np.int64)
    raw = np.zeros((len(wanted), 384), dtype=np.float32)
    for start in range(0, len(wanted), batch):
        chunk = wanted[start : start + batch]
        inputs = np.stack([np.full_like(chunk, cls), chunk, np.full_like(chunk, sep)], axis=1)
        (hidden,) = session.run(["last_hidden_state"], {"input_ids": inputs, "attention_mask": np.ones_like(inputs),
                                                        "token_type_ids": np.zeros_like(inputs)})
        raw[start : start + len(chunk)] = hidden.mean(axis=1)
        if progress is not None:
            progress(len(chunk))
    centred = raw - raw.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    dims = min(dims, components.shape[0])
    table = np.zeros((size, dims), dtype=np.float32)
    table[wanted] = centred @ components[:dims].T
    return table if sif is None else table * sif_weights(size, sif)[:, None]


def vocab_rows(tokenizer) -> int:
    """Rows of the full table: one per token id of the vocabulary."""
    return max(tokenizer.get_vocab().values()) + 1


def sif_weights(size: int, coefficient: float = SIF_COEFFICIENT) -> np.ndarray:
    """Model2Vec's frequency weighting: a token's probability estimated from its rank in the vocabulary
    (WordPiece vocabularies list frequent pieces first, Zipf's law gives the rest), weighted a / (a + p), so
    punctuation and stop words count less in a text's mean than rare identifiers do."""
    inverse_rank = 1.0 / np.arange(2, size + 2, dtype=np.float64)
    probability = inverse_rank / inverse_rank.sum()
    return (coefficient / (coefficient + probability)).astype(np.float32)


class StaticEmbedder:
    """Mean of static token vectors, L2-normalised (special tokens left out)."""

    min_batch = 1024  # no padding to waste, so large batches only save per-call overhead

    def __init__(self, table: np.ndarray, tokenizer, name: str, max_tokens: int = STATIC_MAX_TOKENS) -> None:
        self.table = table.astype(np.float32, copy=False)
        self.dimension = int(table.shape[1])
        self.name = name
        self._tokenizer = tokenizer
        self._max_tokens = max_tokens

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), 0
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        truncated = 0
        for row, enc in enumerate(encodings):  # a small gather per text stays in cache: 7x faster than one big one
            ids = enc.ids
            if len(ids) > self._max_tokens:
                ids, truncated = ids[: self._max_tokens], truncated + 1
            if ids:
                out[row] = self.table[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None), truncated


_build_lock = threading.Lock()


def table_path(weights_version: str) -> Path:
    from assay.stages.core.registry import assay_home

    return assay_home() / "models" / f"static-minilm-l6-v2-{weights_version}-{STATIC_DIMS}-r{STATIC_RECIPE}.npy"


def table_missing(weights_version: str) -> bool:
    """Whether this ASSAY_HOME has still to build the table: the first static run spends a minute or more on it."""
    return not table_path(weights_version).exists()


def load_or_build(weights_version: str, load_model: Callable[[], Any], progress=None,
                  on_build: Callable[[int], None] | None = None) -> np.ndarray:
    """The cached table, or build it once (atomically, one builder per process and per file lock).
    `load_model()` returns the MiniLM embedder; it is called only to build, never to load the cache. A build
    calls `on_build(rows)` as it starts, then `progress(n)` as each batch of rows is done."""
    from filelock import FileLock

    path = table_path(weights_version)
    with _build_lock:
        if path.exists():
            return np.load(path).astype(np.float32)
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock", timeout=600):
            if path.exists():
                return np.load(path).astype(np.float32)
            model = load_model()
            if on_build is not None:
                on_build(vocab_rows(model._tokenizer))
            table = distill_table(model._session, model._tokenizer, progress=progress)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npy")
            np.save(tmp, table.astype(np.float16))
            os.replace(tmp, path)
            return table

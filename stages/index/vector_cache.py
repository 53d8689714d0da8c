"""Vectors remembered by content: switching back to a branch, or undoing an edit, costs no re-embedding.

Keyed by a hash of the embedder's name and the exact text it embeds (`Entity.embed_text`), so a vector is
reused only for identical input to the same model. Lives in the workspace's `.assay/embed_cache.sqlite`;
the oldest rows go once it holds more than `MAX_ROWS`. Each model batch's vectors are kept as soon as they are
embedded, so an index run that is killed mid-way is resumed by the next one, not started over.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from assay.stages.core.artifacts import EmbeddedBatch, Entity, IndexManifest
from assay.stages.index.state_db import open_state_db
from assay.stages.index.store import Catalog

MAX_ROWS = 400_000


def text_key(embedder: str, text: str) -> str:
    return hashlib.sha1(f"{embedder}\0{text}".encode("utf-8", "replace")).hexdigest()


class EmbedCache:
    def __init__(self, root: Path) -> None:
        self._db = open_state_db(root, "embed_cache.sqlite")
        # A commit per model batch: WAL's NORMAL sync survives a killed process (only power loss can drop the
        # last commits, which cost a re-embedding, nothing more) without an fsync per batch.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._db.commit()

    def get(self, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            rows = self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            out.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return out

    def put(self, keys: list[str], vectors: np.ndarray) -> None:
        """Keep vectors, committed at once (one transaction; trimming waits for `close`: counting rows per batch
        would cost more than the insert)."""
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                                 [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in zip(keys, vectors)])

    def trim(self) -> None:
        """Drop the oldest rows beyond `MAX_ROWS`."""
        with self._db:
            count = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
            if count > MAX_ROWS:
                self._db.execute("DELETE FROM vectors WHERE rowid IN (SELECT rowid FROM vectors ORDER BY rowid LIMIT ?)",
                                 (count - MAX_ROWS,))

    def close(self) -> None:
        try:
            self.trim()
        finally:
            self._db.close()


Remember = Callable[[list[Entity], np.ndarray], None]


def embed_with_cache(entities: list[Entity], embed: Callable[[list[Entity], Remember | None], EmbeddedBatch],
                     embedder_name: str, cache: EmbedCache | None,
                     progress: Callable[[int], None] | None = None) -> EmbeddedBatch:
    """Vectors for `entities`: remembered ones from the cache (counted to `progress` at once), the rest from
    `embed(missing, remember)`, which hands each model batch to `remember` as it finishes: those vectors are
    cached there and then, so a run killed mid-way leaves them for the next."""
    if cache is None or not entities:
        return embed(entities, None)
    known, missing = split_cached(entities, embedder_name, cache)
    if progress is not None and known is not None:
        progress(len(known.ids))
    fresh = embed(missing, lambda done, vectors: remember(cache, embedder_name, done, vectors)) if missing else None
    by_id = {**(dict(zip(known.ids, known.vectors)) if known is not None else {}),
             **(dict(zip(fresh.ids, fresh.vectors)) if fresh is not None else {})}
    vectors = [by_id[e.id] for e in entities]
    return EmbeddedBatch.model_construct(
        embedder=fresh.embedder if fresh is not None else embedder_name,
        dimension=fresh.dimension if fresh is not None else (len(vectors[0]) if vectors else 0),
        ids=[e.id for e in entities], vectors=vectors, truncated=fresh.truncated if fresh is not None else 0,
        cached=len(entities) - len(missing),
    )


def split_cached(entities: list[Entity], embedder_name: str, cache: EmbedCache) -> tuple[EmbeddedBatch | None, list[Entity]]:
    """The remembered vectors as one batch (None when there are none), and the entities still to embed, in order: an
    index run reads the cache here, whether this process or task runners elsewhere embed the rest."""
    keys = [text_key(embedder_name, e.embed_text()) for e in entities]
    known = cache.get(keys)
    hits = [(e, known[k]) for e, k in zip(entities, keys) if k in known]
    missing = [e for e, k in zip(entities, keys) if k not in known]
    if not hits:
        return None, missing
    batch = EmbeddedBatch.model_construct(embedder=embedder_name, dimension=len(hits[0][1]), ids=[e.id for e, _ in hits],
                                          vectors=[v.tolist() for _, v in hits], truncated=0, cached=len(hits))
    return batch, missing


def stored_samples(root: Path, manifest: IndexManifest, n: int = 8) -> list[list[float]]:
    """Vectors the store must hold, as the cache remembers them: up to `n` passages spread over the manifest's
    stored ones (what `prepare_dense` queries to tell a damaged segment). [] when the cache no longer has them."""
    pending = set(manifest.dense_pending)
    ids = [i for i in sorted(manifest.entity_ids) if i not in pending]
    picked = ids[:: max(len(ids) // n, 1)][:n]
    if not picked:
        return []
    catalog = Catalog(root)
    try:
        entities = list(catalog.get(picked).values())
    finally:
        catalog.close()
    keys = [text_key(manifest.embedder, e.embed_text()) for e in entities]
    cache = EmbedCache(root)
    try:
        found = cache.get(keys)
    finally:
        cache.close()
    return [found[k].tolist() for k in keys if k in found]


def remember(cache: EmbedCache, embedder_name: str, entities: list[Entity], vectors) -> None:
    """Keep the vectors of `entities` (in order), keyed by the embedder's name and each one's text."""
    cache.put([text_key(embedder_name, e.embed_text()) for e in entities], np.asarray(vectors, dtype=np.float32))

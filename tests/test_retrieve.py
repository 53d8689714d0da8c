"""Retrieval: reciprocal rank fusion, modes, and one row per entity for search."""

from __future__ import annotations

from pathlib import Path

from flows.index import run_index
from stages.core.config import Settings
from stages.index.embed import embedder_for
from stages.index.store import load_manifest
from stages.query.retrieve import collapse_parts, fuse, retrieve


def test_rrf_by_hand() -> None:
    fused = fuse([("a", 0.1), ("b", 0.2)], [("b", 9.0), ("c", 5.0)], k=60)
    assert [eid for eid, _ in fused] == ["b", "a", "c"]
    assert dict(fused)["b"] == 1 / 62 + 1 / 61 and dict(fused)["a"] == 1 / 61 and dict(fused)["c"] == 1 / 62


def test_modes_and_collapsed_parts(project: Path) -> None:
    long_body = "\n".join(f"    step_{i} = compute_checksum_part({i})" for i in range(90))
    (project / "pkg" / "checksum.py").write_text(f"def compute_checksum(data):\n    '''Checksum data.'''\n{long_body}\n    return data\n")
    run_index(str(project))
    manifest, emb = load_manifest(project), embedder_for(Settings())
    bm25 = retrieve(project, "compute_checksum_part", manifest, emb, mode="bm25")
    dense = retrieve(project, "checksum the data", manifest, emb, mode="dense")
    assert all(c.bm25 is not None and c.distance is None for c in bm25.candidates)
    assert all(c.distance is not None and c.bm25 is None for c in dense.candidates)
    parts = [c for c in bm25.candidates if c.entity == "compute_checksum"]
    assert len(parts) >= 2 and {p.parts for p in parts} == {len(parts)}
    rows = [c for c in collapse_parts(project, bm25.candidates) if c.entity == "compute_checksum"]
    assert len(rows) == 1 and (rows[0].start_line, rows[0].end_line) == (1, 93)


def test_search_ranks_code_aware_and_reaches_files(indexed_project: Path) -> None:
    from stages.query.retrieve import search

    settings = Settings()
    symbol = search(indexed_project, "RetryError", settings, k=5).candidates
    assert (symbol[0].file, symbol[0].entity) == ("pkg/retry.py", "RetryError")
    assert symbol[0].rank_signals.get("defines") == 1.0  # receipts: why it ranks first
    files = search(indexed_project, "retry helpers module", settings, k=10).candidates
    assert any(c.kind == "file" and c.file == "pkg/retry.py" and c.start_line == 1 for c in files)
    plain = search(indexed_project, "RetryError", settings.model_copy(update={"ranking": "rrf"}), k=5).candidates
    assert all(c.rank_score is None for c in plain)  # the rrf setting really turns the rank stage off


def test_dense_search_keeps_one_collection_handle_and_replaces_a_failing_one(indexed_project: Path, monkeypatch) -> None:
    from stages.index import store

    manifest = load_manifest(indexed_project)
    vector = [1.0 / manifest.dimension**0.5] * manifest.dimension
    first = store.dense_search(indexed_project, None, manifest.collection, vector, 3)
    assert len(first) == 3
    key = (str(indexed_project), None, manifest.collection)
    handle = store._READERS[key]
    real = store.VectorStore
    opened: list[tuple] = []
    monkeypatch.setattr(store, "VectorStore", lambda *a: opened.append(a) or real(*a))
    assert store.dense_search(indexed_project, None, manifest.collection, vector, 3) == first and not opened

    def dropped(*_a, **_k):
        raise RuntimeError("collection does not exist")

    monkeypatch.setattr(handle, "query", dropped)  # another process dropped and re-created the collection
    assert store.dense_search(indexed_project, None, manifest.collection, vector, 3) == first
    assert len(opened) == 1 and store._READERS[key] is not handle

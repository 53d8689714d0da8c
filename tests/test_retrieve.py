"""Retrieval: reciprocal rank fusion, modes, and one row per entity for search."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.index.embed import embedder_for
from assay.stages.index.store import load_manifest
from assay.stages.query.retrieve import collapse_parts, fuse, retrieve


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
    from assay.stages.query.retrieve import search

    settings = Settings()
    symbol = search(indexed_project, "RetryError", settings, k=5).candidates
    assert (symbol[0].file, symbol[0].entity) == ("pkg/retry.py", "RetryError")
    assert symbol[0].rank_signals.get("defines") == 1.0  # receipts: why it ranks first
    files = search(indexed_project, "retry helpers module", settings, k=10).candidates
    assert any(c.kind == "file" and c.file == "pkg/retry.py" and c.start_line == 1 for c in files)
    plain = search(indexed_project, "RetryError", settings.model_copy(update={"ranking": "rrf"}), k=5).candidates
    assert all(c.rank_score is None for c in plain)  # the rrf setting really turns the rank stage off


def test_dense_search_keeps_one_collection_handle_and_replaces_a_failing_one(indexed_project: Path, monkeypatch) -> None:
    from assay.stages.index import store

    manifest = load_manifest(indexed_project)
    vector = [1.0 / manifest.dimension**0.5] * manifest.dimension
    first = store.dense_search(indexed_project, None, manifest.collection, vector, 3)
    assert len(first) == 3
    key = (str(indexed_project), None, manifest.collection, store.store_identity(indexed_project),
           store.index_generation(indexed_project))
    handle = store._READERS[key]
    real = store.EmbeddedReader
    opened: list[tuple] = []
    monkeypatch.setattr(store, "EmbeddedReader", lambda *a: opened.append(a) or real(*a))
    assert store.dense_search(indexed_project, None, manifest.collection, vector, 3) == first and not opened

    def dropped(*_a, **_k):
        raise RuntimeError("collection does not exist")

    monkeypatch.setattr(handle, "query", dropped)  # another process dropped and re-created the collection
    assert store.dense_search(indexed_project, None, manifest.collection, vector, 3) == first
    assert len(opened) == 1 and store._READERS[key] is not handle


def test_the_embedded_reader_answers_as_chromas_client_does(indexed_project: Path) -> None:
    """Queries skip Chroma's Python client (its import is ~1 s of a cold command) and read the same store through
    Chroma's Rust bindings: the exact nearest neighbours of every stored record, the client's distances. (Held to
    the records themselves, not to the client's own HNSW search: in two full runs of the suite, this process's
    long-lived client missed one of the 20 records while the reader had all of them.)"""
    import pytest

    from assay.stages.index import store

    manifest = load_manifest(indexed_project)
    client = store.VectorStore(indexed_project, None, manifest.collection)
    reader = store.EmbeddedReader(indexed_project, manifest.collection)
    stored = client.collection.get(include=[])["ids"]  # every record, read from its table, not through a graph
    assert len(stored) == len(manifest.entity_ids)
    for seed in range(3):
        vector = [((i * 7 + seed * 13) % 11 - 5) / 10 for i in range(manifest.dimension)]
        exact = sorted(client.distances(vector, stored).items(), key=lambda pair: pair[1])[:8]
        read = reader.query(vector, 8)
        assert [i for i, _ in read] == [i for i, _ in exact]
        assert [d for _, d in read] == pytest.approx([d for _, d in exact], abs=1e-5)
        ids = stored[seed::3]
        assert reader.distances(vector, ids) == client.distances(vector, ids)
    assert store.EmbeddedReader(indexed_project, "no_such_collection").query(vector, 5) == []


def test_a_store_another_process_replaced_is_read_and_written_afresh(tmp_path: Path) -> None:
    """`.assay` deleted and indexed again by another process (here with a 3-d embedder after a 4-d one): Chroma's
    system cached in this process still held the deleted files, so this process read the old vectors and could not
    write the new ones ("expecting embedding with dimension of 4")."""
    import shutil
    import subprocess
    import sys

    from assay.stages.core.artifacts import EmbeddedBatch
    from assay.stages.core.workspace import state_dir
    from assay.stages.index import store

    def batch(ids: list[str], dim: int) -> EmbeddedBatch:
        return EmbeddedBatch(embedder="e", dimension=dim, ids=ids, vectors=[[1.0] + [0.0] * (dim - 1) for _ in ids])

    store.VectorStore(tmp_path, None, "c_g1").upsert(batch(["old"], 4))
    assert [i for i, _ in store.dense_search(tmp_path, None, "c_g1", [1.0, 0, 0, 0], 5)] == ["old"]
    shutil.rmtree(state_dir(tmp_path) / "chroma")
    code = ("import sys; from pathlib import Path; from assay.stages.index.store import VectorStore; from assay.stages.core.artifacts "
            "import EmbeddedBatch; VectorStore(Path(sys.argv[1]), None, 'c_g1').upsert(EmbeddedBatch(embedder='e', "
            "dimension=3, ids=['new'], vectors=[[1.0, 0.0, 0.0]]))")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    assert [i for i, _ in store.dense_search(tmp_path, None, "c_g1", [1.0, 0.0, 0.0], 5)] == ["new"]
    store.VectorStore(tmp_path, None, "c_g1").upsert(batch(["newer"], 3))
    assert store.VectorStore(tmp_path, None, "c_g1").count() == 2


def test_array_built_bm25_scores_as_bm25s_does(tmp_path: Path) -> None:
    """The whole-array index build must give bm25s's own scores, for every passage and query, and survive save/load."""
    import random

    import bm25s
    import numpy as np

    from assay.stages.index.lexical import LexicalIndex

    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    docs = [[rng.choice(words[: rng.randint(5, 300)]) for _ in range(rng.randint(0, 60))] for _ in range(400)]
    ids = [f"id{i}" for i in range(len(docs))]
    ours = LexicalIndex.from_tokens(ids, docs)
    reference = bm25s.BM25()
    reference.index([d or ["_empty_"] for d in docs], show_progress=False)
    ours.save(tmp_path / "lexical")
    loaded = LexicalIndex.load(tmp_path / "lexical")
    for _ in range(50):
        query = rng.sample(words, rng.randint(1, 4))
        want = reference.get_scores(query)
        for index in (ours, loaded):
            got = index._retriever.get_scores(query)
            assert np.array_equal(got, want)
    assert max(reference.get_scores(["w1"])) > 0  # the comparison is not between two empty score lists


def test_the_vector_store_returns_nearly_the_exact_nearest_passages(tmp_path: Path) -> None:
    """Chroma's HNSW defaults miss ~4% of the exact 60 nearest here (and which ones moves with each rebuild);
    the store's settings must keep dense lists within 1% of exact search."""
    import numpy as np

    from assay.stages.core.artifacts import EmbeddedBatch
    from assay.stages.index.store import VectorStore

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(40, 384))
    vectors = centres[rng.integers(0, 40, 3000)] + 0.6 * rng.normal(size=(3000, 384))  # clustered, like code
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    queries = vectors[rng.integers(0, 3000, 30)] + 0.3 * rng.normal(size=(30, 384)).astype(np.float32)
    ids = [f"e{i}" for i in range(len(vectors))]
    store = VectorStore(tmp_path, None, "recall-check")
    store.upsert(EmbeddedBatch.model_construct(embedder="test", dimension=384, ids=ids, vectors=vectors.tolist(), truncated=0))
    recall = []
    for q in queries:
        exact = {ids[j] for j in np.argsort(-(vectors @ (q / np.linalg.norm(q))))[:60]}
        recall.append(len(exact & {eid for eid, _ in store.query(q.tolist(), 60)}) / 60)
    assert float(np.mean(recall)) >= 0.99


def test_a_named_definition_joins_the_pool_below_both_lists_depth(project: Path) -> None:
    """Found on gin: `Context` is repeated by each of its ~90 methods, so BM25 and the dense model fill their depth
    with mentions and the struct itself was in neither list. The definition of the name a query uses joins the
    pool, scored by both lists."""
    from assay.stages.query.rank import RankConfig

    attrs = "\n".join(f"        self.setting_{i} = None" for i in range(30))
    helpers = "\n\n".join(f'def open_channel_{i}(url):\n    """Open a Channel for call {i}."""\n    channel = Channel()\n'
                          f"    return channel.get(url)\n" for i in range(12))
    (project / "pkg" / "channels.py").write_text(f'class Channel:\n    """Keeps cookies across calls."""\n\n'
                                                 f"    def __init__(self):\n{attrs}\n\n\n{helpers}")
    run_index(str(project))
    manifest, emb = load_manifest(project), embedder_for(Settings())

    def pool(look_up: bool) -> list:
        return retrieve(project, "Channel", manifest, emb, pool=10, ranking=RankConfig(), depth=3, look_up=look_up).candidates

    assert "Channel" not in [c.entity for c in pool(False)]  # the lists alone miss it at this depth
    top = pool(True)[0]
    assert (top.entity, top.kind) == ("Channel", "class") and top.rank_signals.get("defines") == 1.0
    assert top.bm25 is not None and top.distance is not None  # scored by both lists, not by neither


def test_scores_and_distances_of_named_passages_match_the_lists(indexed_project: Path) -> None:
    """What the pool's late joiners are scored with is what the lists would have said at any depth."""
    from assay.stages.index.store import dense_distances, dense_search
    from assay.stages.query.retrieve import load_lexical

    manifest = load_manifest(indexed_project)
    lexical = load_lexical(indexed_project)
    listed = lexical.search("session cookies retry", 20)
    assert len(listed) >= 3
    scored = lexical.scores_for("session cookies retry", [eid for eid, _ in listed] + ["no-such-id"])
    assert scored == pytest.approx(dict(listed)) and "no-such-id" not in scored
    vector = embedder_for(Settings()).embed(["session cookies retry"])[0][0].tolist()
    near = dense_search(indexed_project, None, manifest.collection, vector, 5)
    far = dense_distances(indexed_project, None, manifest.collection, vector, [eid for eid, _ in near] + ["no-such-id"])
    assert far == pytest.approx(dict(near), abs=1e-4)


def test_named_definers_are_the_owners_member_or_every_definition_of_the_name(indexed_project: Path) -> None:
    """`Session.send` looks up that owner's `send`; `s.close` (an owner no qualified name holds, like zod's `z`) every
    `close`; a sentence looks up nothing (its names are many and often incidental)."""
    from assay.stages.index.store import Catalog
    from assay.stages.query.rank import query_shape
    from assay.stages.query.retrieve import named_definers

    catalog = Catalog(indexed_project)
    qualname = {eid: e.qualname for eid, e in catalog.get(list(catalog.ids())).items()}

    def found(query: str) -> list[str]:
        return [qualname[eid] for eid in named_definers(catalog, query_shape(query))]

    assert found("Session.send") == ["Session.send"] and found("Session::send") == ["Session.send"]
    assert found("s.close") == ["BaseSession.close"]
    assert found("Session") == ["Session"]
    assert found("how does Session send a request") == []
    catalog.close()


def test_the_ranked_pool_carries_every_passages_dense_distance(indexed_project: Path) -> None:
    """Found on rxjs: a passage only BM25 ranked came with no distance, which the judge reads as no likeness at all
    (`innerFrom`, 4th in `search`, was 16th of the judged pool). The rank stage reads list positions and is
    given none; the pool it returns carries each passage's distance, as the lists would have said at any depth."""
    from assay.stages.index.store import dense_distances
    from assay.stages.query.rank import RankConfig

    manifest, emb = load_manifest(indexed_project), embedder_for(Settings())
    query = "parse the config file"

    def pooled(ranking: RankConfig | None) -> list:
        return retrieve(indexed_project, query, manifest, emb, pool=10, depth=1, ranking=ranking).candidates

    assert any(c.distance is None for c in pooled(None))  # one deep, a BM25-only passage has none
    ranked = pooled(RankConfig())
    assert len(ranked) == len(pooled(None)) and all(c.distance is not None for c in ranked)
    vector = emb.embed([query])[0][0].tolist()
    truth = dense_distances(indexed_project, None, manifest.collection, vector, [c.id for c in ranked])
    assert all(abs(c.distance - truth[c.id]) < 1e-6 for c in ranked)


def test_a_store_failing_after_the_search_leaves_distances_unknown(indexed_project: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The late fetch of distances is an improvement, not a requirement: if the store fails then, the pool is
    returned as ranked, the missing distances unknown, rather than the question failing."""
    from assay.stages.query import retrieve as retrieve_module
    from assay.stages.query.rank import RankConfig

    def broken(*args: object, **kwargs: object) -> dict[str, float]:
        raise RuntimeError("store went away")

    monkeypatch.setattr(retrieve_module, "dense_distances", broken)
    manifest, emb = load_manifest(indexed_project), embedder_for(Settings())
    pool = retrieve(indexed_project, "parse the config file", manifest, emb, pool=10, depth=1, ranking=RankConfig())
    assert pool.candidates and pool.dense_available and any(c.distance is None for c in pool.candidates)


def test_a_long_questions_bm25_list_is_read_deeper(indexed_project: Path) -> None:
    """Each term of a long question draws its own matches: the BM25 list is read `LEXICAL_DEPTH_PER_TERM` passages
    per term when that is deeper than the depth asked for (SWE-QA requests' `RequestException` sat 63rd of 60)."""
    from assay.stages.query.rank import query_shape
    from assay.stages.query.retrieve import LEXICAL_DEPTH_PER_TERM, load_lexical

    manifest, emb = load_manifest(indexed_project), embedder_for(Settings())
    question = "How does the client retry a failed request, keep session cookies and parse the config file?"
    terms = len(query_shape(question).terms)
    assert terms >= 5

    def listed(query: str) -> int:
        return len(retrieve(indexed_project, query, manifest, emb, pool=1000, depth=1, mode="bm25").candidates)

    matching = len(load_lexical(indexed_project).search(question, 10**4))
    assert matching > 1 and listed(question) == min(matching, LEXICAL_DEPTH_PER_TERM * terms)
    assert len(retrieve(indexed_project, question, manifest, emb, pool=1000, depth=matching, mode="bm25").candidates) == matching


def test_a_question_in_words_gets_the_learned_order_of_the_rank_stages_first_passages(indexed_project: Path) -> None:
    """`retrieve` ranks a question naming no code `learned_rank.DEPTH` deep, fills in distances, lets the learned
    model re-order that, then cuts to the pool; a question naming code gets the rank stage's order as before."""
    from assay.stages.query import learned_rank
    from assay.stages.query.rank import RankConfig

    manifest, emb = load_manifest(indexed_project), embedder_for(Settings())

    def ids(query: str, ranking: RankConfig, pool: int) -> list[str]:
        return [c.id for c in retrieve(indexed_project, query, manifest, emb, pool=pool, ranking=ranking).candidates]

    words = "how are failed calls retried with a growing delay between the attempts until the caller gives up"
    assert learned_rank.applies(words)
    deep = retrieve(indexed_project, words, manifest, emb, pool=learned_rank.DEPTH, ranking=RankConfig(learned=False)).candidates
    expected = [c.id for c in learned_rank.reorder(words, deep)[:5]]
    assert ids(words, RankConfig(), 5) == expected != [c.id for c in deep[:5]]  # the model moved something here
    named = "how does retry_call grow the delay between the attempts until the caller finally gives up on them"
    assert not learned_rank.applies(named)
    assert ids(named, RankConfig(), 5) == ids(named, RankConfig(learned=False), 5)
    lexical = [[c.id for c in retrieve(indexed_project, words, manifest, emb, pool=5, mode="bm25", ranking=ranking).candidates]
               for ranking in (RankConfig(), RankConfig(learned=False))]
    assert lexical[0] == lexical[1]  # the model reads dense similarity: BM25 alone keeps the rank stage's order


def test_a_reader_racing_a_save_gets_one_whole_generation(tmp_path: Path, monkeypatch) -> None:
    """Two processes share a workspace: one loads the BM25 folder while the other's re-index swaps it. The reader
    must come back with ids and scores of one save, not crash on the vanished `.old` folder nor mix the two."""
    import bm25s

    from assay.stages.index.lexical import LexicalIndex

    folder = tmp_path / "lexical"
    first = LexicalIndex.from_tokens(["a", "b"], [["alpha"], ["beta"]])
    second = LexicalIndex.from_tokens(["c", "d", "e"], [["gamma"], ["delta"], ["alpha", "gamma"]])
    first.save(folder)
    real_load = bm25s.BM25.load
    swaps = iter([second])

    def load_while_a_writer_swaps(path: str, *args, **kwargs):
        writer = next(swaps, None)
        if writer is not None:  # the other process's save lands between reading ids.json and the matrix
            writer.save(folder)
        return real_load(path, *args, **kwargs)

    monkeypatch.setattr(bm25s.BM25, "load", staticmethod(load_while_a_writer_swaps))
    loaded = LexicalIndex.load(folder)
    assert loaded.ids == ["c", "d", "e"]
    assert loaded.search("gamma", 5)[0][0] in {"c", "e"}

    # a reader that fell back to `.old` (the folder was between renames) while the writer deletes it
    folder.rename(folder.with_name("lexical.old"))
    swaps = iter([first])
    loaded = LexicalIndex.load(folder)
    assert loaded.ids == ["a", "b"] and loaded.search("beta", 5)[0][0] == "b"

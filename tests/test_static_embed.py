"""The static embedder: distilled rows, mean pooling, the cache, and a whole index run on it; MiniLM's two sessions.

Tests distil only the tokens they use (the full 30,522-token table takes ~20 s and is built once per user)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assay.stages.index.embed import MiniLMEmbedder
from assay.stages.index.static_model import StaticEmbedder, distill_table

TEXTS = ["retry the call with exponential backoff", "def retry_call(func, attempts): sleep between attempts",
         "render an html table of rows", "cookies merged into the session jar"]


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def subset_table(model: MiniLMEmbedder, texts: list[str]) -> np.ndarray:
    ids = {i for e in model._tokenizer.encode_batch(texts) for i in e.ids}
    return distill_table(model._session, model._tokenizer, dims=16, ids=ids)


def plain_tokenizer(model: MiniLMEmbedder):
    from tokenizers import Tokenizer

    from assay.stages.core.config import DATA_DIR

    tok = Tokenizer.from_file(str(DATA_DIR / "minilm-tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def test_a_text_is_the_normalised_mean_of_its_token_rows(model: MiniLMEmbedder) -> None:
    table = subset_table(model, TEXTS)
    tok = plain_tokenizer(model)
    emb = StaticEmbedder(table, tok, "static-test")
    vectors, truncated = emb.embed(TEXTS + [""])
    ids = tok.encode(TEXTS[0], add_special_tokens=False).ids
    expected = table[ids].mean(axis=0)
    assert np.allclose(vectors[0], expected / np.linalg.norm(expected), atol=1e-5) and truncated == 0
    assert np.allclose(np.linalg.norm(vectors[:4], axis=1), 1.0, atol=1e-5) and not vectors[4].any()
    sims = vectors[:4] @ vectors[:4].T
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[0, 3]  # the two texts about retrying are closest
    short = StaticEmbedder(table, tok, "static-test", max_tokens=3)
    assert short.embed([TEXTS[0]])[1] == 1  # longer than the window is counted


def test_the_table_is_built_once_and_cached(model: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from assay.stages.index import static_model as static_embed

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path))
    calls = []

    def fake_distill(session, tokenizer, progress=None, **kw):
        calls.append(1)
        return subset_table(model, TEXTS)

    monkeypatch.setattr(static_embed, "distill_table", fake_distill)
    first = static_embed.load_or_build("t1", lambda: model)
    second = static_embed.load_or_build("t1", lambda: pytest.fail("the cached table must not load the model"))
    assert len(calls) == 1 and static_embed.table_path("t1").exists()
    assert np.allclose(first, second, atol=1e-2)  # stored as float16


def test_index_and_search_on_the_static_embedder(project: Path, model: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows.index import run_index
    from assay.stages.index import static_model as static_embed
    from assay.stages.core.config import Settings
    from assay.stages.index.embed import get_embedder
    from assay.stages.query.retrieve import search
    from assay.stages.index.store import Catalog, load_manifest

    texts = [e.embed_text() for e in Catalog(project).all()] if (project / ".assay").exists() else []
    texts += [p.read_text(errors="replace") for p in project.rglob("*.py")] + ["how are retries backed off"]
    table = subset_table(model, texts)
    monkeypatch.setattr(static_embed, "load_or_build", lambda *a, **k: table)
    get_embedder.cache_clear()
    try:
        settings = Settings(embedder="static")
        report = run_index(str(project), settings)
        assert report.embedder.startswith("static-minilm") and report.entities_embedded == report.entities_total
        assert load_manifest(project).dimension == 16
        hits = search(project, "how are retries backed off", settings, k=5, mode="dense").candidates
        assert hits and all(c.distance is not None for c in hits)
        assert all("retr" in f"{c.file} {c.entity}".lower() for c in hits[:3])  # the retry module and its guide
        # queried from a process whose settings name the default embedder (an IDE's MCP server, say): the query is
        # embedded as the index was, not with MiniLM's 384 dimensions against 16 (BM25 alone, before)
        from assay.flows.query import run_query

        default = Settings(embedder="minilm")
        found = search(project, "how are retries backed off", default, k=5)
        assert found.note == "" and [c.entity for c in found.candidates[:3]] == [
            c.entity for c in search(project, "how are retries backed off", settings, k=5).candidates[:3]]
        assert all(c.distance is not None for c in found.candidates[:3])
        answer = run_query(str(project), "how are retries backed off?", default)
        assert "dense index unavailable" not in answer.text and answer.selection.included
        # an index run that names no embedder (an IDE's watcher) keeps the workspace's; naming one re-embeds
        (project / "pkg" / "extra.py").write_text("def extra_helper():\n    return 1\n")
        unnamed = Settings()
        assert "embedder" not in unnamed.model_fields_set
        kept = run_index(str(project), unnamed)
        assert kept.embedder == report.embedder and not kept.rebuild_reason and kept.files_parsed == 1
        named = run_index(str(project), default)
        assert named.embedder.startswith("minilm") and "embedder changed" in named.rebuild_reason
    finally:
        get_embedder.cache_clear()


def test_index_runs_embed_on_the_unoptimised_session_and_queries_on_the_optimised_one() -> None:
    """An index run in a fresh process must not pay for the graph optimisation (it folds the int8 weights into
    float32 ones: ~0.3 s and 70 MB), a query must not pay the per-run dequantize it saves; both give the
    same vectors."""
    from assay.stages.core.artifacts import Entity
    from assay.stages.index.embed import embed_entities

    fresh = MiniLMEmbedder()
    entities = [Entity(id=f"e{i}", kind="function", name=f"f{i}", qualname=f"f{i}", body=text, start_line=1, end_line=2,
                       language="python", file="m.py", content_hash=str(i)) for i, text in enumerate(TEXTS)]
    passages = np.asarray(embed_entities(entities, fresh).vectors, dtype=np.float32)
    assert set(fresh._sessions) == {False}
    queries, _ = fresh.embed([e.embed_text() for e in entities])
    assert set(fresh._sessions) == {False, True}
    assert np.allclose((passages * queries).sum(axis=1), 1.0, atol=1e-5)
    fresh._sessions.pop(False)
    embed_entities(entities[:1], fresh)  # the optimised session, once loaded, serves index runs too
    assert set(fresh._sessions) == {True}


def test_frequent_tokens_weigh_less_so_noise_moves_a_text_less(model: MiniLMEmbedder) -> None:
    """The table's rows are scaled by Model2Vec's frequency weight (rank in the vocabulary as the estimate):
    punctuation and stop words pull a text's mean away from its identifiers less than unweighted rows do."""
    from assay.stages.index.static_model import sif_weights

    clean, noisy = "retry backoff", "the ( retry ) . , the backoff ; : of the and"
    ids = {i for e in model._tokenizer.encode_batch([clean, noisy]) for i in e.ids}
    weighted = distill_table(model._session, model._tokenizer, dims=16, ids=ids)
    plain = distill_table(model._session, model._tokenizer, dims=16, ids=ids, sif=None)
    weights = sif_weights(len(plain))
    assert np.allclose(weighted, plain * weights[:, None], atol=1e-6)
    comma, the, cookies = (model._tokenizer.token_to_id(t) for t in (",", "the", "cookies"))
    assert weights[comma] < weights[the] < 0.7 < 0.9 < weights[cookies]
    tok = plain_tokenizer(model)

    def closeness(table: np.ndarray) -> float:
        vectors, _ = StaticEmbedder(table, tok, "static-test").embed([clean, noisy])
        return float(vectors[0] @ vectors[1])

    assert closeness(weighted) > closeness(plain)


def test_an_index_run_keeps_the_workspaces_embedder_unless_one_is_named_and_an_evaluation_always_names_it() -> None:
    from assay.flows.evaluate import measured
    from assay.stages.core.config import Settings
    from assay.stages.index.embed import kept_embedder

    static, wide = "static-minilm-l6-v2@1.0.0:256:r2", "minilm-l6-v2-int8@1.0.0:256"
    unnamed = Settings()
    assert kept_embedder(unnamed, static).embedder == "static"
    assert (kept_embedder(unnamed, wide).embedder, kept_embedder(unnamed, wide).embed_tokens) == ("minilm", 256)
    assert kept_embedder(unnamed, "someone-else's-model@2").embedder == "minilm"  # unknown: the settings decide
    assert kept_embedder(Settings(embedder="minilm"), static).embedder == "minilm"
    assert kept_embedder(Settings(embed_tokens=256), static).embedder == "minilm"
    assert kept_embedder(measured(unnamed), static).embedder == "minilm"  # results say what they measured

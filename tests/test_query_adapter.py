"""The query adapter: which vectors it turns, what the search and the later stages see, the fit's maths on packages
made by hand, and the shipped matrix rebuilt byte for byte from the committed training set."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from assay.stages.core.config import Settings
from assay.stages.evaluate import adapter_training as at
from assay.stages.index.embed import embedder_for
from assay.stages.index.store import VectorStore, load_manifest
from assay.stages.query import query_adapter as qa
from assay.stages.query.learned_rank import applies
from assay.stages.query.rank import RankConfig
from assay.stages.query.retrieve import retrieve

SET = Path(__file__).resolve().parent / "benchmarks" / "rank_training" / "adapter_set.npz"
WORDS = "how are failed calls retried with a growing delay between the attempts until the caller gives up"


def test_only_the_vectors_it_was_fitted_on_are_turned() -> None:
    matrix = qa.shipped()
    assert matrix is not None and matrix.shape == (384, 384)
    v = np.random.default_rng(3).normal(size=384)
    v = (v / np.linalg.norm(v)).tolist()
    turned = qa.turn(v, "minilm-l6-v2-int8@0.1.0:256")
    assert turned != v and abs(np.linalg.norm(turned) - 1.0) < 1e-5
    assert qa.turn(v, "ollama:nomic-embed-text") is v  # another model's space
    assert qa.turn(v[:128], "minilm-l6-v2-int8@0.1.0:256") == v[:128]  # another dimension
    assert qa.turn(v, None) is v


def test_a_question_in_words_searches_with_the_turned_vector_and_the_later_stages_read_its_own(indexed_project: Path) -> None:
    manifest, emb = load_manifest(indexed_project), embedder_for(Settings())
    q = np.asarray(emb.embed([WORDS])[0][0], dtype=np.float64)
    plain = retrieve(indexed_project, WORDS, manifest, emb, pool=30, ranking=RankConfig(learned=False, adapter=False))
    target = next(c for c in reversed(plain.candidates) if c.dense_rank and c.dense_rank > 3)  # far down the dense list
    stored = np.asarray(VectorStore(indexed_project, None, manifest.collection).collection.get(
        ids=[target.id], include=["embeddings"])["embeddings"][0], dtype=np.float64)
    towards = 5.0 * np.outer(stored, q) / (q @ q)  # (I + A) q = q + 5 x: the target's own direction, nearly
    assert applies(WORDS)
    with qa.fitted(towards):
        turned = retrieve(indexed_project, WORDS, manifest, emb, pool=30, ranking=RankConfig(learned=False))
        named = "how does retry_call grow the delay between the attempts until the caller finally gives up on them"
        assert not applies(named)
        assert [c.id for c in retrieve(indexed_project, named, manifest, emb, pool=10, ranking=RankConfig(learned=False)).candidates] == \
            [c.id for c in retrieve(indexed_project, named, manifest, emb, pool=10,
                                    ranking=RankConfig(learned=False, adapter=False)).candidates]
    found = {c.id: c for c in turned.candidates}[target.id]
    assert found.dense_rank == 1  # the search went where the turned vector points
    assert abs(found.distance - target.distance) < 1e-4  # but the distance is the question's own, as before
    assert found.turned_distance is not None and found.turned_distance < 0.05  # the learned order reads both
    assert all(c.turned_distance is None for c in plain.candidates)


def synthetic_packages(seed: int) -> list[at.AdapterPackage]:
    """Questions that point at their answers through a fixed turn of the space, plus noise: what an adapter can
    learn, and on a package it has not seen too."""
    rng = np.random.default_rng(seed)
    dim = 16
    turn = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    packages = []
    for p in range(4):
        passages = rng.normal(size=(200, dim))
        answers = [[int(i)] for i in rng.choice(200, size=30, replace=False)]
        questions = np.array([turn @ passages[a[0]] + 0.6 * rng.normal(size=dim) for a in answers])
        packages.append(at.AdapterPackage(f"p{p}", at.quantised(passages), questions.astype(np.float32), answers))
    return packages


def test_the_fit_turns_questions_towards_their_answers_on_a_package_it_did_not_see_and_is_deterministic() -> None:
    packages = synthetic_packages(11)
    held, seen = packages[0], packages[1:]
    a = at.fit_adapter(seen, l2=0.01, steps=200, learning_rate=0.01)
    before, after = np.mean(at.answer_ranks(None, held)), np.mean(at.answer_ranks(a, held))
    assert after < before / 2
    assert at.adapter_bytes(at.fit_adapter(seen, l2=0.01, steps=200, learning_rate=0.01)) == at.adapter_bytes(a)


def test_the_training_set_survives_the_file(tmp_path: Path) -> None:
    packages = synthetic_packages(5)[:2]
    packages[1].answers[3] = []  # a question whose answer the index lacks: kept, and left out of the fit
    at.save_packages(packages, tmp_path / "set.npz")
    back = at.load_packages(tmp_path / "set.npz")
    assert [(p.name, p.answers) for p in back] == [(p.name, p.answers) for p in packages]
    assert all((b.passages == p.passages).all() and b.passages.dtype == np.int8 for b, p in zip(back, packages))
    assert len(at.answer_ranks(None, back[1])) == 29


def test_the_shipped_matrix_is_what_the_committed_training_set_fits() -> None:
    assert at.adapter_bytes(at.fit_adapter(at.load_packages(SET))) == qa.ADAPTER_PATH.read_bytes()


def test_a_late_store_failure_leaves_the_turned_distances_unknown_and_the_answer_stands(monkeypatch, indexed_project: Path) -> None:
    import assay.stages.query.retrieve as retrieve_module

    manifest, emb = load_manifest(indexed_project), embedder_for(Settings())
    pool = retrieve(indexed_project, WORDS, manifest, emb, pool=10, ranking=RankConfig(learned=False, adapter=False)).candidates

    def broken(*args, **kwargs):
        raise RuntimeError("the store went away")

    monkeypatch.setattr(retrieve_module, "dense_distances", broken)
    kept = retrieve_module.with_turned_distances(indexed_project, None, manifest.collection, [0.0] * 384, pool)
    assert kept == pool and all(c.turned_distance is None for c in kept)

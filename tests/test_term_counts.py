"""BM25 updated from the last build's term counts must score exactly as a build from every passage would."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.index.lexical import LexicalIndex
from assay.stages.index.store import Catalog, lexical_dir, rebuild_lexical
from assay.stages.index.term_counts import TermCounts


def _corpus(rng: random.Random, n: int, words: list[str]) -> tuple[list[str], list[list[str]]]:
    ids = sorted(f"id{rng.randrange(10**9):09d}" for _ in range(n))
    return ids, [[rng.choice(words) for _ in range(rng.randint(0, 40))] for _ in ids]


def test_an_update_equals_counting_everything_again() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(200)]
    ids, tokens = _corpus(rng, 300, words)
    before = TermCounts.count(ids, tokens)
    by_id = dict(zip(ids, tokens))
    deleted = set(rng.sample(ids, 20))
    rewritten = set(rng.sample(sorted(set(ids) - deleted), 30))
    for i in rewritten:
        by_id[i] = [rng.choice(words + ["fresh", "terms"]) for _ in range(rng.randint(0, 30))]
    added = {f"id{rng.randrange(10**9):09d}x": ["fresh", "w1", "w1"] for _ in range(15)}
    by_id.update(added)
    for i in deleted:
        del by_id[i]
    changed = deleted | rewritten | set(added)
    present = sorted(changed & set(by_id))
    updated = before.update(changed, present, [by_id[i] for i in present])
    full = TermCounts.count(sorted(by_id), [by_id[i] for i in sorted(by_id)])

    def bags(c: TermCounts) -> list[dict[str, int]]:  # term numbering may differ: compare by term
        return [{c.vocab[t]: int(f) for t, f in zip(c.term[a:b], c.tf[a:b])} for a, b in zip(c.ptr[:-1], c.ptr[1:])]

    assert updated.ids == full.ids and np.array_equal(updated.ptr, full.ptr)
    assert np.array_equal(updated.length, full.length) and bags(updated) == bags(full)
    ours, reference = LexicalIndex.from_counts(updated), LexicalIndex.from_counts(full)
    for query in (["fresh"], ["w1", "w7"], ["terms", "w3", "w150"]):
        want = reference._retriever.get_scores(query)
        assert np.array_equal(ours._retriever.get_scores(query), want) and want.max() > 0


def test_an_index_run_updates_bm25_from_the_changed_passages_only(project: Path, monkeypatch) -> None:
    run_index(str(project), Settings())
    catalog = Catalog(project)
    assert catalog.lexical_changes() == set()  # the build consumed the log
    updates: list[int] = []
    real_update = TermCounts.update
    monkeypatch.setattr(TermCounts, "update",
                        lambda self, changed, *a: updates.append(len(changed)) or real_update(self, changed, *a))
    target = next(p for p in sorted(project.rglob("*.py")) if "def " in p.read_text())
    original = target.read_text()
    target.write_text(original + "\n\ndef zebrafinch_marker():\n    return 'okapi'\n")
    run_index(str(project), Settings())
    target.write_text(original)  # the marker's passage is gone again
    run_index(str(project), Settings())

    assert len(updates) == 2 and all(0 < n < len(catalog.ids()) / 2 for n in updates)  # updated, not rebuilt
    vocab = json.loads((lexical_dir(project) / "terms.json").read_text())["vocab"]
    assert "zebrafinch" not in vocab  # a term no passage uses leaves the vocabulary, as in a full build
    index = LexicalIndex.load(lexical_dir(project))
    assert index.search("zebrafinch okapi", 5) == []
    fresh = LexicalIndex.from_tokens(*catalog.lexical_tokens())
    assert index.ids == fresh.ids
    for query in ("retry backoff", "parse config file", "zebrafinch"):
        assert index.search(query, 20) == fresh.search(query, 20)
    assert any(index.search(q, 5) for q in ("retry", "config", "def"))


def test_a_cleared_catalog_or_missing_counts_build_from_everything(project: Path, monkeypatch) -> None:
    run_index(str(project), Settings())
    catalog = Catalog(project)
    updates: list[int] = []
    real_update = TermCounts.update
    monkeypatch.setattr(TermCounts, "update",
                        lambda self, changed, *a: updates.append(len(changed)) or real_update(self, changed, *a))
    with catalog._db:  # a change logged, so the next build could update
        catalog._db.execute("INSERT INTO lexical_changes (id) VALUES ('some-id')")
    rebuild_lexical(project, catalog)
    assert updates == [1]  # updated from the counts

    entities = list(catalog.all())
    catalog.clear()
    catalog.replace(entities, [])
    rebuild_lexical(project, catalog)
    assert updates == [1]  # cleared: built from everything

    (lexical_dir(project) / "terms.npz").unlink()
    catalog.replace(entities[:1], [])
    rebuild_lexical(project, catalog)
    assert TermCounts.load(lexical_dir(project)) is not None and catalog.lexical_changes() == set()
    assert LexicalIndex.load(lexical_dir(project)).ids == sorted(e.id for e in entities)


def test_a_vocabulary_mostly_left_behind_by_updates_is_built_afresh(project: Path) -> None:
    run_index(str(project), Settings())
    catalog = Catalog(project)
    entities = sorted(catalog.all(), key=lambda e: e.id)
    one = entities[0]
    churn = one.model_copy(update={"body": " ".join(f"churnterm{i}" for i in range(3000))})
    catalog.replace([churn], [])
    rebuild_lexical(project, catalog)
    counts = TermCounts.load(lexical_dir(project))
    assert counts is not None and "churnterm5" in counts.vocab and counts.unused_share() < 0.5

    catalog.replace([one], [])  # its 3,000 terms are now used by no passage
    rebuild_lexical(project, catalog)
    counts = TermCounts.load(lexical_dir(project))
    assert counts is not None and "churnterm5" not in counts.vocab and counts.unused_share() == 0.0

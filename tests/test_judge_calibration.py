"""The local judge's calibrated models: the fitting and calibration maths by hand, the labelled set's shape, the
shipped weights rebuilt byte for byte from it, and what the judge and the report do with the probabilities."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from assay.stages.core.artifacts import Judgment, PassageScores, RankedPassage, Selection, Thresholds
from assay.stages.core.config import Settings
from assay.stages.evaluate import calibration as cal
from assay.stages.evaluate import judge_calibration as jc
from assay.stages.query.gaps import missing_lines
from assay.stages.query.judge.backends import run_judge
from assay.stages.query.judge.calibrated import MODEL_PATH, load_models
from assay.stages.query.judge.local import judge_local
from tests.test_judge import cand

LABELS = Path(__file__).resolve().parent / "benchmarks" / "judge_labels"


def test_logistic_fit_recovers_a_known_model_and_is_calibrated() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4000, 2))
    truth = 1 / (1 + np.exp(-(0.5 + 2.0 * x[:, 0] - 1.0 * x[:, 1])))
    y = rng.random(4000) < truth
    model = cal.fit_logistic(("a", "b"), x.tolist(), y.tolist(), l2=0.0)
    raw = np.array(model.weights) / np.array(model.scale)  # back to the unstandardised slopes
    assert raw == pytest.approx([2.0, -1.0], abs=0.15)
    predicted = [model.probability(row) for row in x.tolist()]
    assert cal.ece(predicted, y.tolist()) < 0.03
    assert cal.ece([0.9] * 10, [False] * 10) == 0.9  # confidently wrong: the whole gap


def test_ece_floor_and_precision_at_recall_by_hand() -> None:
    floor = cal.ece_floor([0.5] * 100)
    assert 0.02 < floor < 0.08  # 100 fair coins stray ~0.04 from a half
    scores, labels = [0.9, 0.8, 0.7, 0.6, 0.5], [True, False, True, False, True]
    assert cal.precision_at_recall(scores, labels, 0.6) == (round(2 / 3, 4), 0.7)  # keep 3: two of the three positives
    assert cal.precision_at_recall(scores, labels, 1.0) == (0.6, 0.5)


def test_labelled_set_has_both_sides_of_the_boundary_in_every_repo() -> None:
    rows = {c: jc.load(LABELS, c) for c in jc.CORPORA}
    assert sum(map(len, rows.values())) >= 600
    for corpus, pairs in rows.items():
        relevant = sum(r["relevant"] for r in pairs)
        assert 0.1 * len(pairs) < relevant < 0.9 * len(pairs), corpus
        assert all(r["candidate"]["rank_score"] is not None and r["before"] is not None for r in pairs)
    assert (LABELS / "README.md").read_text().count("relevant = 1") == 1  # the labelling rule is written down
    held_out = sorted((LABELS / "held-out").glob("*.jsonl"))
    assert len(held_out) == 8 and not {p.stem for p in held_out} & set(jc.CORPORA)  # never fitted on
    for path in held_out:
        pairs = jc.load(path.parent, path.stem)
        assert 0 < sum(r["relevant"] for r in pairs) < len(pairs) and all(r["before"] is not None for r in pairs)


def test_shipped_weights_rebuild_byte_for_byte_from_the_labels() -> None:
    fitted = jc.fit_all([r for c in jc.CORPORA for r in jc.load(LABELS, c)])
    assert jc.model_json(fitted) == MODEL_PATH.read_text(encoding="utf-8")
    assert json.loads(MODEL_PATH.read_text())["thresholds"]["answerable_min"] == jc.TRUST_PRECISION


def test_judge_scores_are_probabilities_that_favour_the_named_definition() -> None:
    send = cand("a", "Session.send", "def send(self, request):\n    return retry_call(request)\n", kind="method",
                docstring="Send a request.", rank_score=2.0, rank_signals={"lexical": 1.0, "dense": 0.9, "name": 0.6, "defines": 1.0})
    noise = cand("c", "parse_colour", "def parse_colour(x):\n    return x\n", fused_rank=5, rank_score=0.3,
                 rank_signals={"lexical": 0.1, "dense": 0.5})
    j = judge_local("How does Session.send retry?", [send, noise])
    th = load_models().thresholds
    assert j.model == load_models().name
    assert j.scores["a"].relevance > 0.5 > j.scores["c"].relevance
    assert j.scores["c"].relevance < th["relevance_min"] <= j.scores["a"].relevance
    assert 0.0 <= j.answerable <= 1.0 and "defines a named identifier" in j.reasons["a"]
    unranked = judge_local("How does Session.send retry?", [s.model_copy(update={"rank_score": None, "rank_signals": {}})
                                                            for s in (send, noise)])
    assert unranked.scores["a"].relevance > unranked.scores["c"].relevance  # the unranked pair of models, same order
    assert not j.orders_kept  # what it keeps stays in the rank stage's order


def test_answerable_speaks_of_the_passages_the_users_thresholds_keep(tmp_path) -> None:
    """A user's ASSAY_THRESHOLDS reaches the local judge: answerable reads the passages that threshold keeps."""
    send = cand("a", "Session.send", "def send(self, request):\n    return retry_call(request)\n", kind="method",
                docstring="Send a request.", rank_score=2.0, rank_signals={"lexical": 1.0, "dense": 0.9, "name": 0.6, "defines": 1.0})
    strict = tmp_path / "thresholds.json"
    strict.write_text(json.dumps({"local": {"relevance_min": 0.999}}))
    shipped = run_judge("local", "How does Session.send retry?", [send], Settings())
    overridden = run_judge("local", "How does Session.send retry?", [send], Settings(thresholds=str(strict)))
    assert shipped.scores["a"].relevance < 0.999
    assert shipped.answerable > 0.0 and shipped.coverage >= 1
    assert (overridden.answerable, overridden.coverage) == (0.0, 0)  # nothing clears 0.999: nothing to answer from


def _selection(*passages) -> Selection:
    th = Thresholds(relevance_min=0.2, evidence_min=0.1, injection_max=0.5, contradicts_min=0.5, answerable_min=0.9, top_k=5)
    return Selection(included=[RankedPassage(candidate=c, scores=PassageScores(relevance=r, evidence=0.5, contradicts=0, injection=0),
                                             verdict="include", rank_score=r) for c, r in passages], dropped=[], thresholds=th)


def test_a_low_trust_report_says_what_is_missing() -> None:
    local = Judgment(backend="local", scores={})
    caller = cand("a", "handle", "def handle(req):\n    return merge_settings(req)\n", file="app.py")
    lines = missing_lines("How does merge_settings combine values?", _selection((caller, 0.6)), local)
    assert lines == ["missing: no included passage defines merge_settings; they only use or mention it "
                     "(look up its definition: assay search \"merge_settings\")"]
    only_tests = _selection((cand("t", "test_merge", "def test_merge():\n    assert merge()\n", file="tests/test_merge.py"), 0.3))
    lines = missing_lines("How are settings merged?", only_tests, local)
    assert lines[0].startswith("missing: only tests were found") and "best relevance 0.30" in lines[1]
    docs = _selection((cand("d", "Merging", "Settings merge left to right.", kind="section", file="docs/merge.md"), 0.7))
    assert missing_lines("How are settings merged?", docs, local) == ["missing: only documentation was found, no code that implements it"]
    defined = _selection((cand("m", "merge_settings", "def merge_settings(a, b):\n    return {**a, **b}\n"), 0.8))
    assert missing_lines("How does merge_settings combine values?", defined, local) == []
    elsewhere = _selection((cand("o", "other", "def other():\n    return 1\n"), 0.8))
    elsewhere.dropped = [RankedPassage(candidate=cand("m", "merge_settings", "def merge_settings(a, b): ..."), verdict="drop",
                                       rank_score=0.0, drop_reason="irrelevant")]
    assert missing_lines("How does merge_settings combine values?", elsewhere, local) == [
        "missing: merge_settings only in passages the judge dropped; check them under Evidence"]
    assert missing_lines("How does unknown_thing work?", elsewhere, local) == []  # the report's `gap:` line says it


def test_support_needs_a_judge_that_judged_and_every_named_thing_found() -> None:
    """"supported, cite it directly" beside "gap: not found in the index", or with nothing judged, told an agent
    two things at once."""
    from assay.stages.query.report import status_of

    sure = Judgment(backend="local", scores={}, answerable=0.95, coverage=3)
    send = _selection((cand("s", "Session.send", "def send(self, request):\n    return adapter.send(request)\n"), 0.9))
    assert status_of(send, sure, "How does Session.send pick an adapter?") == ("supported", 3)
    assert status_of(send, sure, "How does Session.send_batch group requests?") == ("partial", 3)  # not in the index
    assert status_of(send, sure.model_copy(update={"backend": "none", "coverage": None}), "How are requests sent?")[0] == "partial"
    assert status_of(send, sure) == ("supported", 3)  # no question given: as before
    assert status_of(send, sure, "When does Session.send raise KeyError?")[0] == "supported"  # Python's, not missing


def test_the_judge_suite_measures_any_backend_on_labelled_pairs(tmp_path: Path) -> None:
    for corpus in ("requests", "sphinx"):
        rows = (LABELS / f"{corpus}.jsonl").read_text().splitlines()[:60]
        (tmp_path / f"{corpus}.jsonl").write_text("\n".join(rows) + "\n")

    def half(question: str, candidates: list) -> Judgment:  # a judge that knows nothing and says so
        return Judgment(backend="half", scores={c.id: PassageScores(relevance=0.5, evidence=0.5, contradicts=0, injection=0)
                                                for c in candidates[1:]})  # ...and gives the first passage no verdict

    result = jc.evaluate(tmp_path, {"local": judge_local, "half": half})
    rows = [r for c in ("requests", "sphinx") for r in jc.load(tmp_path, c)]
    scored = [r for r in rows if r["position"] != 0]
    rate = sum(r["relevant"] for r in scored) / len(scored)
    assert result["pairs"] == 120 and result["backends"]["half"]["all"]["scored"] == len(scored)
    assert result["backends"]["half"]["all"]["ece_relevance"] == pytest.approx(abs(0.5 - rate), abs=1e-3)
    assert result["backends"]["local"]["all"]["ece_relevance"] < result["backends"]["half"]["all"]["ece_relevance"]
    assert set(result["local_held_out"]) == {"requests", "sphinx"}
    text = jc.render_section(result)
    assert "| half | sphinx | " in text and "measured on each held-out one" in text
    assert "No labelled pairs" in jc.render_section(jc.evaluate(tmp_path / "none", {"local": judge_local}))


def test_the_judge_suite_flow_reports_calibration_with_a_reliability_diagram(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow wiring: the premise and injection parts are stubbed (they need sdists); calibration runs for real."""
    from assay.flows import evaluate as flow
    from assay.flows.runtime import direct_call
    from assay.stages.core.config import Settings
    from assay.stages.evaluate import planted_attacks, premise_set
    from assay.tasks import evaluate as tasks

    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "pylint.jsonl").write_text("\n".join((LABELS / "pylint.jsonl").read_text().splitlines()[:30]) + "\n")
    stubs = {tasks.prepare_corpus: tmp_path, tasks.evaluate_premises: {}, tasks.evaluate_injection_planted: {}}
    monkeypatch.setenv("ASSAY_EVAL_DIR", str(tmp_path / "eval"))
    monkeypatch.setattr(premise_set, "render", lambda result: "")
    monkeypatch.setattr(planted_attacks, "render", lambda result: "")
    data = flow.evaluate_judge_pipeline(Settings(), call=lambda task, *a, **k: stubs[task] if task in stubs else direct_call(task, *a, **k),
                                        judges=["local", "none"], labels_dir=str(labels))
    out = Path(data["output_dir"])
    assert data["calibration"]["pairs"] == 30 and set(data["calibration"]["backends"]) == {"local"}
    assert "| local | pylint | 30 of 30 |" in (out / "results.md").read_text()
    assert (out / "reliability.png").exists() and "![reliability](reliability.png)" in (out / "results.md").read_text()


def test_audit_reads_labelled_pairs_with_the_signals_retrieval_gave_them(tmp_path: Path) -> None:
    from assay.stages.audit import stats as audit_stats

    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join((LABELS / "requests.jsonl").read_text().splitlines()[:12]) + "\n")
    items = audit_stats.load_labels(path)
    assert [it.relevant for it in items] == [bool(r["relevant"]) for r in jc.load(tmp_path, "labels")]
    kept = audit_stats.with_retrieval_signals(items, embedder=None)  # nothing to reconstruct: no embedder is asked
    assert [it.candidate.rank_score for it in kept] == [r["candidate"]["rank_score"] for r in jc.load(tmp_path, "labels")]
    judgments = {q: judge_local(q, [it.candidate for it in kept if it.question == q]) for q in {it.question for it in kept}}
    result = audit_stats.calibrate(kept, judgments)
    assert result["scored"] == 12 and result["ece"] is not None and sum(b["n"] for b in result["reliability"]) == 12

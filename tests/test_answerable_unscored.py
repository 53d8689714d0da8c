"""`answerable` is a claim about the passages an answer is built from: a judge that scored none of them (every score
out of range, or none given) used to leave its set-level answerable in `ask --json` beside `coverage: 0`."""

from __future__ import annotations

from assay.stages.core.artifacts import (Answer, Candidate, Judgment, PassageScores, RankedPassage, RouteDecision, Selection,
                                         Thresholds)
from assay.stages.query.report import make_report


def _report(scores: PassageScores | None):
    cand = Candidate(id="a", file="a.py", start_line=1, end_line=2, entity="f", kind="function", body="def f(): pass",
                     fused_rank=1, fused_score=0.016)
    th = Thresholds(relevance_min=0.3, evidence_min=0.2, injection_max=0.5, contradicts_min=0.5)
    sel = Selection(included=[RankedPassage(candidate=cand, scores=scores, verdict="include", rank_score=1.0)],
                    dropped=[], thresholds=th, fail_open=scores is None)
    judgment = Judgment(backend="ollama", scores={"a": scores} if scores else {}, coverage=3, answerable=0.9)
    return make_report("q1", "what does f do?", "/w", Answer(text="f passes.", backend="extractive"), sel, judgment,
                       RouteDecision(target="local", reason="local mode", mode="local"), {})


def test_a_judge_that_scored_nothing_reports_no_answerable() -> None:
    report = _report(None)
    assert report.judgment.answerable is None and report.coverage == 0 and report.status == "partial"
    assert report.model_dump(mode="json")["judgment"]["answerable"] is None


def test_a_judge_that_scored_a_passage_keeps_its_answerable() -> None:
    report = _report(PassageScores(relevance=0.9, evidence=0.9, contradicts=0.0, injection=0.0))
    assert report.judgment.answerable == 0.9 and report.coverage == 3

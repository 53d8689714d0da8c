"""The audit's judging jobs: re-judge stored snapshots, calibrate on labels, score the injection baseline.

Each takes a `judge(question, candidates) -> Judgment` callable, so the caller decides how a model is
held (the Prefect task holds the `gpu` slot around it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from assay.stages.audit import stats as audit_stats
from assay.stages.audit.snapshots import selection_rows, write_rows
from assay.stages.core.artifacts import Candidate, Entity, Judgment
from assay.stages.query.report import status_of
from assay.stages.query.retrieve import to_candidate
from assay.stages.query.threshold import default_thresholds, select

Judge = Callable[[str, list[Candidate]], Judgment]
BASELINE_QUESTION = "Describe what this code does."


def rejudge(root: Path, table: pa.Table, backend: str, judge: Judge, thresholds_file: str | None, top_k: int) -> int:
    """Re-score every stored query's passages with another judge; write its snapshots beside the originals."""
    by_query: dict[str, list[dict]] = {}
    for r in table.to_pylist():
        if r["judge_backend"] != backend:
            by_query.setdefault(r["query_id"], []).append(r)
    th = default_thresholds(backend, thresholds_file, top_k)
    for qid, items in sorted(by_query.items()):
        question = items[0]["query"]
        candidates = audit_stats.rows_to_candidates(items)
        judgment = judge(question, candidates)
        selection = select(candidates, judgment, th, question)
        status, _ = status_of(selection, judgment, question)
        when = items[0]["timestamp"].astimezone(timezone.utc) if items[0]["timestamp"] else datetime.now(timezone.utc)
        write_rows(root, selection_rows(qid, question, judgment, selection, status, when), qid, when, f"-rejudge-{backend}")
    return len(by_query)


def calibrate(labels: Path, backend: str, judge: Judge, embedder, thresholds_file: str | None) -> dict:
    """Judge labelled passages (with reconstructed retrieval signals) and sweep the thresholds."""
    items = audit_stats.with_retrieval_signals(audit_stats.load_labels(labels), embedder)
    by_q: dict[str, list[Candidate]] = {}
    for it in items:
        by_q.setdefault(it.question, []).append(it.candidate)
    th = default_thresholds(backend, thresholds_file)
    result = audit_stats.calibrate(items, {q: judge(q, cands) for q, cands in by_q.items()},
                                   current=(th.relevance_min, th.evidence_min))
    result.update({"judge": backend, "labels": str(labels)})
    return result


def baseline(functions: list[Entity], backend: str, judge: Judge) -> dict:
    """Score clean functions of the workspace itself; an unscored function counts as 1.0 (untrusted)."""
    candidates = [to_candidate(e, fused_rank=i + 1, fused_score=1 / (61 + i)) for i, e in enumerate(functions)]
    judgment = judge(BASELINE_QUESTION, candidates) if candidates else None
    scores = []
    for c in candidates:
        s = judgment.scores.get(c.id) if judgment else None
        scores.append((f"{c.file}:{c.start_line} {c.entity}", s.injection if s else 1.0))
    result = audit_stats.injection_baseline(scores)
    result.update({"judge": backend, "judge_failure": judgment.failure if judgment else ""})
    return result

"""The audit's judging jobs: re-judge stored snapshots, calibrate on labels, score the injection baseline.

Each takes a `judge(question, candidates) -> Judgment` callable, so the caller decides how a model is
held (the Prefect task holds the `gpu` slot around it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from assay.stages.audit import stats as audit_stats
from assay.stages.audit.snapshots import judgments_dir, selection_rows, write_rows
from assay.stages.core.artifacts import Candidate, Entity, Judgment, LLMCall
from assay.stages.query.ledger import record_calls
from assay.stages.query.report import status_of
from assay.stages.query.retrieve import to_candidate
from assay.stages.query.threshold import default_thresholds, select

Judge = Callable[[str, list[Candidate]], Judgment]
BASELINE_QUESTION = "Describe what this code does."


@contextmanager
def ledgered(judge: Judge, root: Path, key: str, prices: dict[str, list[float]]) -> Iterator[Judge]:
    """The judge, its model calls written to the workspace's usage ledger under `key` when the job ends, failed or
    not: an audit's Ollama and cloud calls cost what an answer's do, and `assay usage` must show them."""
    calls: list[LLMCall] = []

    def recording(question: str, candidates: list[Candidate]) -> Judgment:
        judgment = judge(question, candidates)
        calls.extend(judgment.usage)
        return judgment

    try:
        yield recording
    finally:
        record_calls(root, key, calls, prices)


def rejudge(root: Path, table: pa.Table, backend: str, judge: Judge, thresholds_file: str | None, top_k: int | None) -> dict:
    """Re-score every stored query's passages with another judge; write its snapshots beside the originals.
    Each query's passages come from its original snapshot (never from earlier re-judgments, which hold the same
    passages again), and a query `backend` already judged is skipped: one candidate per (query, passage), once.
    Only passages the judge scored are written: a failed judge's fail-open rows are lexical order, not its verdicts,
    and stored they would count as its judgments in every later audit. Returns what was sent, scored and stored."""
    originals = audit_stats.load_snapshots(judgments_dir(root), rejudged=False)
    by_query = audit_stats.rejudge_pending(table, originals, backend)
    th = default_thresholds(backend, thresholds_file, top_k)
    summary = {"backend": backend, "pending": len(by_query), "queries": 0, "passages": 0, "stored": 0, "failure": "",
               "unsent": 0, "unsent_failure": ""}
    for qid, items in sorted(by_query.items()):
        question = items[0]["query"]
        candidates = audit_stats.rows_to_candidates(items)
        judgment = judge(question, candidates)
        selection = select(candidates, judgment, th, question)
        status, _ = status_of(selection, judgment, question)
        when = items[0]["timestamp"].astimezone(timezone.utc) if items[0]["timestamp"] else datetime.now(timezone.utc)
        rows = [r for r in selection_rows(qid, question, judgment, selection, status, when) if audit_stats.holds_judgment(r)]
        summary["passages"] += len(candidates)
        summary["stored"] += len(rows)
        summary["failure"] = summary["failure"] or one_each(judgment.failure)
        if judgment.failure and not judgment.calls and not rows:  # never sent: the breaker skipped it, or no key
            summary["unsent"] += 1
            summary["unsent_failure"] = summary["unsent_failure"] or one_each(judgment.failure)
        if rows:
            write_rows(root, rows, qid, when, f"{audit_stats.REJUDGE_TAG}{backend}")
            summary["queries"] += 1
    return summary


def one_each(failure: str) -> str:
    """A judgment's failure with each batch's repeated line said once (two batches skipped by the breaker gave
    the same line twice)."""
    return "; ".join(dict.fromkeys(failure.split("; ")))


def calibrate(labels: Path, backend: str, judge: Judge, embedder, thresholds_file: str | None) -> dict:
    """Judge labelled passages (with reconstructed retrieval signals) and sweep the thresholds."""
    items = audit_stats.with_retrieval_signals(audit_stats.load_labels(labels), embedder)
    by_q: dict[str, list[Candidate]] = {}
    for it in items:
        by_q.setdefault(it.question, []).append(it.candidate)
    th = default_thresholds(backend, thresholds_file)
    judgments = {q: judge(q, cands) for q, cands in by_q.items()}
    result = audit_stats.calibrate(items, judgments, current=(th.relevance_min, th.evidence_min))
    failure = next((one_each(j.failure) for j in judgments.values() if j.failure), "")
    result.update({"judge": backend, "labels": str(labels), "judge_failure": failure})
    return result


def baseline(functions: list[Entity], backend: str, judge: Judge) -> dict:
    """Score clean functions of the workspace itself; an unscored function counts as 1.0 (untrusted) and is named so.
    When the judge scored none of them the baseline is not measured (`passed` None): a failed judge is no injection
    finding, and its report says the judge failed instead of failing the audit."""
    candidates = [to_candidate(e, fused_rank=i + 1, fused_score=1 / (61 + i)) for i, e in enumerate(functions)]
    judgment = judge(BASELINE_QUESTION, candidates) if candidates else None
    scores, scored = [], 0
    for c in candidates:
        s = judgment.scores.get(c.id) if judgment else None
        scored += s is not None
        name = f"{c.file}:{c.start_line} {c.entity}" + ("" if s else " (not scored)")
        scores.append((name, s.injection if s else 1.0))
    measured = scored > 0 or not candidates
    result = audit_stats.injection_baseline(scores if measured else [])
    result.update({"functions": len(candidates), "scored": scored, "measured": measured, "judge": backend,
                   "judge_failure": one_each(judgment.failure) if judgment else ""})
    if not measured:
        result.update({"passed": None, "max": None, "mean": None})
    return result

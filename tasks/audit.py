"""Prefect tasks of the audit flow (LLM judges hold the `gpu` slot while they score)."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from stages import audit_stats
from stages.audit import judgments_dir, selection_rows, write_rows
from stages.config import Settings
from stages.embed import embedder_for
from stages.judging import run_judge
from stages.report import status_of
from stages.retrieve import to_candidate
from stages.store import Catalog
from stages.threshold import default_thresholds, select
from tasks.gpu import gpu_slot


def _judge(backend: str, question: str, candidates, settings: Settings):
    if backend == "ollama":
        with gpu_slot(settings.llm_timeout * 4):
            return run_judge(backend, question, candidates, settings)
    return run_judge(backend, question, candidates, settings)


@task(name="load-snapshots", cache_policy=NO_CACHE)
def load(root: Path, start: date | None, end: date | None) -> pa.Table:
    return audit_stats.load_snapshots(judgments_dir(root), start, end)


@task(name="rejudge", cache_policy=NO_CACHE)
def rejudge(root: Path, table: pa.Table, backend: str, settings: Settings) -> int:
    """Re-score every stored query's passages with another judge; write its snapshots beside the originals."""
    rows = [r for r in table.to_pylist() if r["judge_backend"] != backend]
    by_query: dict[str, list[dict]] = {}
    for r in rows:
        by_query.setdefault(r["query_id"], []).append(r)
    written = 0
    for qid, items in sorted(by_query.items()):
        candidates = audit_stats.rows_to_candidates(items)
        judgment = _judge(backend, items[0]["query"], candidates, settings)
        selection = select(candidates, judgment, default_thresholds(backend, settings.thresholds, settings.top_k), items[0]["query"])
        status, _ = status_of(selection, judgment)
        when = items[0]["timestamp"].astimezone(timezone.utc) if items[0]["timestamp"] else datetime.now(timezone.utc)
        write_rows(root, selection_rows(qid, items[0]["query"], judgment, selection, status, when), qid, when, f"-rejudge-{backend}")
        written += 1
    return written


@task(name="calibrate", cache_policy=NO_CACHE)
def calibrate(labels: Path, backend: str, settings: Settings) -> dict:
    items = audit_stats.with_retrieval_signals(audit_stats.load_labels(labels), embedder_for(settings))
    by_q: dict[str, list] = {}
    for it in items:
        by_q.setdefault(it.question, []).append(it.candidate)
    judgments = {q: _judge(backend, q, cands, settings) for q, cands in by_q.items()}
    result = audit_stats.calibrate(items, judgments)
    th = default_thresholds(backend, settings.thresholds)
    current = next((g for g in result["grid"] if abs(g["relevance_min"] - th.relevance_min) < 1e-6
                    and abs(g["evidence_min"] - th.evidence_min) < 1e-6), None)
    result.update({"judge": backend, "labels": str(labels),
                   "current": current or {"relevance_min": th.relevance_min, "evidence_min": th.evidence_min,
                                          "precision": 0.0, "recall": 0.0, "f1": 0.0}})
    return result


@task(name="injection-baseline", cache_policy=NO_CACHE)
def baseline(root: Path, backend: str, n: int, settings: Settings) -> dict:
    """Score N clean functions of the workspace itself with the judge; the audit fails above 0.15."""
    funcs = [e for e in Catalog(root).all() if e.kind in ("function", "method") and e.part == 0][:n]
    candidates = [to_candidate(e, fused_rank=i + 1, fused_score=1 / (61 + i)) for i, e in enumerate(funcs)]
    judgment = _judge(backend, "Describe what this code does.", candidates, settings) if candidates else None
    scores = []
    for c in candidates:
        s = judgment.scores.get(c.id) if judgment else None
        scores.append((f"{c.file}:{c.start_line} {c.entity}", s.injection if s else 1.0))
    result = audit_stats.injection_baseline(scores)
    result["judge"] = backend
    result["judge_failure"] = judgment.failure if judgment else ""
    return result

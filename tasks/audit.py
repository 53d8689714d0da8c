"""Prefect tasks of the audit flow (LLM judges hold the `gpu` slot while they score)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pyarrow as pa

from assay.stages.audit import rejudge as audit_jobs
from assay.stages.audit import stats as audit_stats
from assay.stages.audit.snapshots import judgments_dir
from assay.stages.core.config import Settings
from assay.stages.index.embed import embedder_for
from assay.stages.index.store import Catalog
from assay.tasks.gpu import judge_holding_gpu
from assay.tasks.lazy import task


@task(name="load-snapshots")
def load(root: Path, start: date | None, end: date | None) -> pa.Table:
    return audit_stats.load_snapshots(judgments_dir(root), start, end)


@task(name="rejudge")
def rejudge(root: Path, table: pa.Table, backend: str, settings: Settings) -> int:
    return audit_jobs.rejudge(root, table, backend, judge_holding_gpu(backend, settings), settings.thresholds, settings.top_k)


@task(name="calibrate")
def calibrate(labels: Path, backend: str, settings: Settings) -> dict:
    return audit_jobs.calibrate(labels, backend, judge_holding_gpu(backend, settings), embedder_for(settings), settings.thresholds)


@task(name="injection-baseline")
def baseline(root: Path, backend: str, n: int, settings: Settings) -> dict:
    """Score N clean functions of the workspace itself with the judge; the audit fails above 0.15."""
    functions = [e for e in Catalog(root).all() if e.kind in ("function", "method") and e.part == 0][:n]
    return audit_jobs.baseline(functions, backend, judge_holding_gpu(backend, settings))

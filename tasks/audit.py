"""Prefect tasks of the audit flow (LLM judges hold the `gpu` slot while they score)."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa

from assay.stages.audit import rejudge as audit_jobs
from assay.stages.audit import stats as audit_stats
from assay.stages.audit.snapshots import judgments_dir
from assay.stages.core.config import Settings
from assay.stages.index.embed import embedder_for
from assay.stages.index.store import Catalog
from assay.stages.query.ledger import prices_from
from assay.tasks.gpu import judge_holding_gpu
from assay.tasks.lazy import task


@task(name="load-snapshots")
def load(root: Path, start: date | None, end: date | None) -> pa.Table:
    return audit_stats.load_snapshots(judgments_dir(root), start, end)


def _ledgered_judge(root: Path, job: str, backend: str, settings: Settings):
    """The job's judge, its model calls recorded in the workspace's usage ledger as `audit-<time>-<job>-<backend>`
    (the prices are read first: a bad ASSAY_PRICES is named before any call is paid for)."""
    prices = prices_from(settings.prices)
    key = f"audit-{datetime.now(timezone.utc):%Y%m%dT%H%M%S%f}-{job}-{backend}"
    return audit_jobs.ledgered(judge_holding_gpu(backend, settings), root, key, prices)


@task(name="rejudge")
def rejudge(root: Path, table: pa.Table, backend: str, settings: Settings) -> dict:
    with _ledgered_judge(root, "rejudge", backend, settings) as judge:
        return audit_jobs.rejudge(root, table, backend, judge, settings.thresholds, settings.chosen_top_k())


@task(name="calibrate")
def calibrate(root: Path, labels: Path, backend: str, settings: Settings) -> dict:
    with _ledgered_judge(root, "calibrate", backend, settings) as judge:
        return audit_jobs.calibrate(labels, backend, judge, embedder_for(settings), settings.thresholds)


@task(name="injection-baseline")
def baseline(root: Path, backend: str, n: int, settings: Settings) -> dict:
    """Score N clean functions of the workspace itself with the judge; the audit fails above 0.15."""
    functions = [e for e in Catalog(root).all() if e.kind in ("function", "method") and e.part == 0][:n]
    with _ledgered_judge(root, "baseline", backend, settings) as judge:
        return audit_jobs.baseline(functions, backend, judge)

"""The `gpu` slot: one local model resident at a time, across flows and processes.

Under Prefect this is a global concurrency limit named `gpu` with one slot, created on first
use (a fresh machine has none, and Prefect silently skips unknown limits). Without Prefect
(ASSAY_ORCHESTRATION=direct) a file lock in ~/.assay gives the same guarantee.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from filelock import FileLock

from assay.stages.core.registry import assay_home
from assay.tasks.lazy import in_prefect_run

GPU_LIMIT = "gpu"
_created = threading.Event()


def ensure_gpu_limit() -> None:
    if _created.is_set():
        return
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(GPU_LIMIT)
        except ObjectNotFound:
            try:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=GPU_LIMIT, limit=1))
            except Exception:  # noqa: BLE001 - another process created it first
                client.read_global_concurrency_limit_by_name(GPU_LIMIT)
    _created.set()


@contextmanager
def gpu_slot(timeout: float = 600.0) -> Iterator[str]:
    """Hold the single GPU slot; yields which mechanism held it (for the report and tests)."""
    if in_prefect_run():
        from prefect.concurrency.sync import concurrency

        ensure_gpu_limit()
        with concurrency(GPU_LIMIT, occupy=1, timeout_seconds=timeout, strict=True):
            yield "prefect"
        return
    with FileLock(str(assay_home() / "gpu.lock"), timeout=timeout):
        yield "filelock"


def judge_holding_gpu(backend: str, settings):
    """A judge callable for batch jobs: an Ollama judge holds the `gpu` slot for each batched call."""
    from assay.stages.query.judge.backends import run_judge

    def judge(question: str, candidates: list):
        if backend == "ollama":
            with gpu_slot(settings.llm_timeout * 4):
                return run_judge(backend, question, candidates, settings)
        return run_judge(backend, question, candidates, settings)

    return judge

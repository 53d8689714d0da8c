"""The `gpu` slot: one local model resident at a time, across flows and processes.

Under Prefect this is a global concurrency limit named `gpu` with one slot, created on first
use (a fresh machine has none, and Prefect silently skips unknown limits). A file lock in
~/.assay is held as well, with or without Prefect: it is what a direct run waits on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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
    """Hold the single GPU slot; yields which mechanism held it (for the report and tests). A Prefect run takes the
    file lock too, inside the Prefect slot: a direct run (ASSAY_ORCHESTRATION=direct, the MCP server's first calls)
    sees only the file lock, and both would otherwise load a model at once. Direct runs never wait on the Prefect
    slot, so taking the two in this order cannot deadlock."""
    if in_prefect_run():
        with prefect_slot(timeout), file_slot(timeout):
            yield "prefect"
        return
    with file_slot(timeout):
        yield "filelock"


def file_slot(timeout: float) -> FileLock:
    """The machine-wide lock every process takes, with or without Prefect."""
    return FileLock(str(assay_home() / "gpu.lock"), timeout=timeout)


@contextmanager
def prefect_slot(timeout: float) -> Iterator[None]:
    """The `gpu` concurrency limit's slot; a limit of 0 slots is one line with the fix, not Prefect's raw 422."""
    from prefect.concurrency.sync import concurrency
    from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError  # what the sync `concurrency` raises

    ensure_gpu_limit()
    with ExitStack() as held:
        try:
            held.enter_context(concurrency(GPU_LIMIT, occupy=1, timeout_seconds=timeout, strict=True))
        except ConcurrencySlotAcquisitionError as exc:
            if "greater than the limit" in str(exc):
                raise ValueError(f"the Prefect concurrency limit `{GPU_LIMIT}` has 0 slots, so no local model can "
                                 f"run: set it to 1 (`prefect gcl update {GPU_LIMIT} --limit 1`)") from exc
            raise
        yield


def judge_holding_gpu(backend: str, settings):
    """A judge callable for batch jobs: an Ollama judge holds the `gpu` slot for each batched call."""
    from assay.stages.query.judge.backends import run_judge

    def judge(question: str, candidates: list):
        if backend == "ollama":
            with gpu_slot(settings.llm_timeout * 4):
                return run_judge(backend, question, candidates, settings)
        return run_judge(backend, question, candidates, settings)

    return judge

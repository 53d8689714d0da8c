"""The `gpu` slot: one local model resident at a time, across flows and processes.

Under Prefect this is a global concurrency limit named `gpu` with one slot, created on first
use (a fresh machine has none, and Prefect silently skips unknown limits). A file lock in
~/.assay is held as well, with or without Prefect: it is what a direct run waits on.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from filelock import FileLock, Timeout

from assay.stages.core.registry import assay_home
from assay.tasks.lazy import in_prefect_run

GPU_LIMIT = "gpu"
INDEX_WAIT = 600.0  # an Ollama embedder's wait (index runs): fixed, no setting scales it
# Prefect's shortest lease (the server refuses < 60 s); renewed every 45 s while held, so a killed run's slot is
# reclaimed within ~75 s (lease + the server's 15 s repossessor loop), not after the 300 s default
LEASE_SECONDS = 60.0
WAIT_NOTE_AFTER = 2.0  # seconds of waiting before the one-line "waiting for the slot" note
_created = threading.Event()


class GpuSlotTimeout(TimeoutError):
    """The `gpu` slot stayed held for the whole wait."""


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
def gpu_slot(timeout: float | None = None) -> Iterator[str]:
    """Hold the single GPU slot; yields which mechanism held it (for the report and tests). A Prefect run takes the
    file lock too, inside the Prefect slot: a direct run (ASSAY_ORCHESTRATION=direct, the MCP server's first calls)
    sees only the file lock, and both would otherwise load a model at once. Direct runs never wait on the Prefect
    slot, so taking the two in this order cannot deadlock. `timeout`: the LLM callers' multiple of ASSAY_LLM_TIMEOUT;
    None is the index's fixed wait (the time-out error names what sets the wait)."""
    wait = INDEX_WAIT if timeout is None else timeout
    knob = "" if timeout is None else "ASSAY_LLM_TIMEOUT"
    if in_prefect_run():
        with prefect_slot(wait, knob), file_slot(wait, knob):
            yield "prefect"
        return
    with file_slot(wait, knob):
        yield "filelock"


@contextmanager
def file_slot(timeout: float, knob: str = "") -> Iterator[None]:
    """The machine-wide lock every process takes, with or without Prefect. A wait is said in one line; a time-out is
    one line naming the lock, who may hold it and what to do, not filelock's bare "could not be acquired"."""
    path = assay_home() / "gpu.lock"
    lock = FileLock(str(path), timeout=timeout)
    with waiting_note(f"the `{GPU_LIMIT}` slot (lock file {path})", timeout):
        try:
            lock.acquire()
        except Timeout:
            raise GpuSlotTimeout(slot_timeout_message(f"lock file {path}", timeout, knob,
                                                      "the lock is released when its process ends (a killed run "
                                                      f"frees it at once): find the holder with `lsof {path}`")) from None
    try:
        yield
    finally:
        lock.release()


@contextmanager
def prefect_slot(timeout: float, knob: str = "") -> Iterator[None]:
    """The `gpu` concurrency limit's slot; a limit of 0 slots and a time-out are one line with the fix, not Prefect's
    raw 422 or "Attempt to acquire concurrency slots timed out". The lease is Prefect's shortest (renewed while held),
    so a killed run blocks the next one for about a minute, not five."""
    from prefect.concurrency.sync import concurrency
    from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError  # what the sync `concurrency` raises

    ensure_gpu_limit()
    with ExitStack() as held:
        try:
            with waiting_note(f"the Prefect concurrency limit `{GPU_LIMIT}`", timeout):
                # a lost renewal must not cancel a judge mid-call: the file lock still keeps this machine to one model
                held.enter_context(concurrency(GPU_LIMIT, occupy=1, timeout_seconds=timeout, strict=True,
                                               lease_duration=LEASE_SECONDS, raise_on_lease_renewal_failure=False))
        except ConcurrencySlotAcquisitionError as exc:
            if "greater than the limit" in str(exc):
                raise ValueError(f"the Prefect concurrency limit `{GPU_LIMIT}` has 0 slots, so no local model can "
                                 f"run: set it to 1 (`prefect gcl update {GPU_LIMIT} --limit 1`)") from exc
            raise
        except TimeoutError as exc:
            raise GpuSlotTimeout(slot_timeout_message(
                f"Prefect concurrency limit `{GPU_LIMIT}`", timeout, knob,
                f"a killed run's slot is freed when its lease lapses (~{LEASE_SECONDS + 15:.0f} s); see who holds it "
                f"with `prefect gcl inspect {GPU_LIMIT}`, or free it now with `prefect gcl update {GPU_LIMIT} "
                f"--active-slots 0` if no Assay run is using a model")) from exc
        yield


def slot_timeout_message(what: str, timeout: float, knob: str, free: str) -> str:
    """One line: the slot, how long it waited and what sets that, and how to free a slot a killed run left."""
    sets = f"raise {knob} to wait longer (the wait is a multiple of it)" if knob else "the index's wait is fixed"
    return (f"the `{GPU_LIMIT}` slot ({what}) stayed held by another Assay run for {timeout:.0f} s, so no local "
            f"model was loaded: wait for that run, or {sets}; {free}")


@contextmanager
def waiting_note(what: str, timeout: float) -> Iterator[None]:
    """One stderr line when acquiring takes longer than a moment: a silent wait of minutes looked like a hang."""
    note = threading.Timer(WAIT_NOTE_AFTER, lambda: print(
        f"waiting for {what}: another Assay run holds it (a local model is loaded one at a time); "
        f"waiting up to {timeout:.0f} s", file=sys.stderr, flush=True))
    note.daemon = True
    note.start()
    try:
        yield
    finally:
        note.cancel()


def judge_holding_gpu(backend: str, settings):
    """A judge callable for batch jobs: an Ollama judge holds the `gpu` slot for each batched call."""
    from assay.stages.query.judge.backends import run_judge

    def judge(question: str, candidates: list):
        if backend == "ollama":
            with gpu_slot(settings.llm_timeout * 4):
                return run_judge(backend, question, candidates, settings)
        return run_judge(backend, question, candidates, settings)

    return judge

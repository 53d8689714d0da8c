"""Index runs spread over Dask through Prefect's DaskTaskRunner (prefect-dask): `ASSAY_DASK=local:N` starts a
LocalCluster of N worker processes on this machine, `ASSAY_DASK=tcp://host:8786` uses a running scheduler, whose
workers must see the workspace at the same path (they read the source files). The flow keeps what lives in the
workspace (catalog, vector cache, manifest, Chroma writes); the workers parse shares of files and embed slices."""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Any

from assay.stages.core.llm_clients import require_loopback

REMOTE_SHARES = 16  # parse shares for a scheduler whose worker count this process does not know


@dataclass(frozen=True)
class Spread:
    """How the index flow deals its work: `shares` parse tasks, each embedding task with `threads` onnxruntime
    threads (None: every core of its machine)."""

    workers: int | None
    shares: int
    threads: int | None


def spread_for(spec: str) -> Spread:
    """`local:N` or `tcp://host:port`; anything else names the setting and its two forms."""
    spec = spec.strip()
    if spec.startswith("local:") and spec[6:].isdigit() and int(spec[6:]) > 0:
        workers = int(spec[6:])
        return Spread(workers, shares=2 * workers, threads=max(1, (os.cpu_count() or 1) // workers))
    if spec.startswith("tcp://") and len(spec) > 6:
        from assay.flows.runtime import local_mode

        if local_mode():  # the workers read the code (`ASSAY_MODE=` is local too, as Settings reads it)
            require_loopback(spec.replace("tcp://", "http://", 1), "the Dask scheduler (ASSAY_DASK)")
        return Spread(None, shares=REMOTE_SHARES, threads=None)
    raise ValueError(f"ASSAY_DASK={spec!r} is neither local:N (N worker processes here) nor tcp://host:port (a scheduler)")


def check_scheduler(spec: str) -> None:
    """A `tcp://` scheduler must accept a connection before the run starts: Dask retries a refused one for 30 s and
    then names no fix, and a run with nothing to submit would never notice it is gone."""
    from urllib.parse import urlsplit

    from assay.flows.prefect_api import answers

    url = spec.strip().replace("tcp://", "http://", 1)
    if ":" not in urlsplit(url).netloc.rsplit("]", 1)[-1]:
        url += ":8786"  # Dask's default scheduler port
    if spread_for(spec).workers is None and not answers(url, timeout=2.0):
        raise RuntimeError(f"the Dask scheduler at {spec.strip()} does not answer (ASSAY_DASK): start it "
                           "(`dask scheduler`), or unset ASSAY_DASK to index in this process")


def task_runner(spec: str) -> Any:
    """Prefect's DaskTaskRunner for the spec: a LocalCluster it starts and stops, or the scheduler at the address."""
    # Dask's own lines are not for a user's terminal: its INFO (scheduler, nanny, workers), and the WARNINGs of a worker
    # that died, which the run survives (its tasks run again) but which read as a crash. Errors still show. Read when
    # distributed is imported, here and in the workers; a level the user set is theirs.
    quiet = not os.environ.get("ASSAY_DEBUG") and "DASK_LOGGING__DISTRIBUTED" not in os.environ
    if quiet:
        os.environ["DASK_LOGGING__DISTRIBUTED"] = "error"
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as exc:
        raise RuntimeError("ASSAY_DASK needs the Dask task runner: pip install 'assay[dask]'") from exc
    if quiet:
        _say_worker_deaths()
    spread = spread_for(spec)
    if spread.workers is None:
        return DaskTaskRunner(address=spec.strip())
    return DaskTaskRunner(cluster_class="distributed.LocalCluster", cluster_kwargs={
        "n_workers": spread.workers, "threads_per_worker": 1, "processes": True, "dashboard_address": None})


WORKER_DIED = "note: a Dask worker process died; Dask restarted it and runs its tasks again"


class _WorkerDeaths(logging.Handler):
    """On the nanny's logger (in this process for a LocalCluster): its "Restarting worker" warning as one line; its
    errors to Dask's own handler, as before."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            for handler in logging.getLogger("distributed").handlers:
                handler.handle(record)
        elif record.getMessage().startswith("Restarting worker"):
            print(WORKER_DIED, file=sys.stderr, flush=True)


def _say_worker_deaths() -> None:
    """Hear the nanny's warnings (the rest of Dask says only errors): a worker that died is told in one line."""
    nanny = logging.getLogger("distributed.nanny")
    if any(isinstance(h, _WorkerDeaths) for h in nanny.handlers):
        return
    nanny.addHandler(_WorkerDeaths())
    nanny.setLevel(logging.WARNING)
    nanny.propagate = False  # else Dask's handler on `distributed` prints the warning too

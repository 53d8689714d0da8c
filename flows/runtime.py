"""Prefect settings for a local, offline, low-overhead run, applied before Prefect is imported.

Measured on a 2-core box: the flow heartbeat thread adds ~1 s to every flow run and cannot be
turned off from the environment, so flows run inside `quiet_prefect()`, which disables it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from assay.tasks.lazy import LazyPrefect
from assay.tasks.lazy import flow as lazy_flow  # noqa: F401 - the flows' decorator: Prefect is built on first run

DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # a failed flow logs its traceback at ERROR: errors are one line unless ASSAY_DEBUG=1 asks for tracebacks
    "PREFECT_LOGGING_LEVEL": "WARNING" if os.environ.get("ASSAY_DEBUG") else "CRITICAL",
    # Prefect's own services (events, concurrency slots) log at ERROR on a logger of their own: a lost API printed
    # ~20 KB of them before the one-line error
    "PREFECT_LOGGING_INTERNAL_LEVEL": "ERROR" if os.environ.get("ASSAY_DEBUG") else "CRITICAL",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",  # the temporary server logs harmless flush errors at exit
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "PREFECT_CLI_PROMPT": "false",
    "ANONYMIZED_TELEMETRY": "False",
}


def configure() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)


configure()

T = TypeVar("T")


@contextmanager
def quiet_prefect() -> Iterator[None]:
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    updates: dict[Any, Any] = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    if os.environ.get("PREFECT_API_URL"):  # set after Prefect was imported (the MCP server's own API): honour it
        updates[PREFECT_API_URL] = os.environ["PREFECT_API_URL"]
    with temporary_settings(updates=updates):
        yield


def orchestration_mode() -> str:
    """ASSAY_ORCHESTRATION: `auto` (the default), `prefect` or `direct`."""
    mode = os.environ.get("ASSAY_ORCHESTRATION", "auto").strip().lower() or "auto"
    if mode not in ("auto", "prefect", "direct"):
        raise ValueError(f"ASSAY_ORCHESTRATION={mode!r} is not one of auto, prefect, direct")
    return mode


def orchestrated() -> bool:
    """True when flows run on Prefect. `auto` does so only when a Prefect API is there to record the run
    (PREFECT_API_URL, or a running `assay server`, whose URL is then handed to Prefect); `prefect` always does
    (without an API, on a server of this process's own: 10-15 s); `direct` never."""
    mode = orchestration_mode()
    if mode == "direct":
        return False
    from assay.flows.prefect_api import configured_api, current_api, local_server_api, process_api

    configured = configured_api()
    if configured and os.environ.get("ASSAY_MODE", "local") == "local":  # run records hold questions and paths
        from assay.stages.core.llm_clients import require_loopback

        require_loopback(configured, "the Prefect API (PREFECT_API_URL)")
    if configured and configured_answers(configured, mode):
        return True
    url = local_server_api() or (process_api() if mode == "prefect" and not current_api() else None)
    if url:
        os.environ["PREFECT_API_URL"] = url  # read by Prefect when it is first imported, or by quiet_prefect
        return True
    return mode == "prefect"  # on the API a test harness set in Prefect's settings


_noted: set[str] = set()


def configured_answers(url: str, mode: str) -> bool:
    """Whether the configured API can record the run. A dead one (a stale profile, a stopped server, another web
    server on the port) fails `prefect` mode in one line; `auto` runs without it, saying so once per process."""
    from assay.flows.prefect_api import configured_fix, configured_source, serves_prefect

    if serves_prefect(url):
        return True
    what = f"{configured_source(url)} does not answer as a Prefect API"
    if mode == "prefect":
        raise RuntimeError(f"{what}: start that server, {configured_fix()}, or set ASSAY_ORCHESTRATION=auto")
    if url not in _noted:
        _noted.add(url)
        print(f"note: {what}; running without it (start that server, or {configured_fix()})", file=sys.stderr)
    return False


def prefect_call(task: Any, *args: Any, **kwargs: Any) -> Any:
    return task(*args, **kwargs)


def direct_call(task: Any, *args: Any, **kwargs: Any) -> Any:
    return task.fn(*args, **kwargs)


Caller = Callable[..., Any]


class Stopwatch:
    """Accumulates wall time per stage name between successive `lap` calls."""

    def __init__(self) -> None:
        import time

        self._now = time.perf_counter
        self._clock = self._now()
        self.timings: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = self._now()
        self.timings[name] = round(self.timings.get(name, 0.0) + now - self._clock, 4)
        self._clock = now


def flow_exports(**flows: LazyPrefect) -> Callable[[str], Any]:
    """A module `__getattr__` that hands out the real Prefect flows (for `prefect.yaml` entrypoints)."""

    def module_getattr(name: str) -> Any:
        if name in flows:
            return flows[name].prefect
        raise AttributeError(name)

    return module_getattr


def run_flow(flow: LazyPrefect, body: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a pipeline body as a Prefect flow (tasks tracked) or directly (same stages, no API)."""
    if orchestrated():
        with quiet_prefect(), api_watch():
            return flow(*args, **kwargs)
    return body(*args, call=direct_call, **kwargs)


@contextmanager
def api_watch() -> Iterator[None]:
    """A run that fails because its Prefect API went away (a stopped `assay server`) says so in one line with the
    fix; Prefect's own error is a bare "Connection refused". Other failures pass through unchanged."""
    from assay.flows.prefect_api import current_api, serves_prefect

    url = current_api()
    try:
        yield
    except Exception as exc:
        if url and not serves_prefect(url, timeout=2.0):
            raise RuntimeError(f"the Prefect API at {url} stopped answering during the run: run the command again "
                               "(in-process while no server answers), or first start the server again "
                               "(`assay server`)") from exc
        raise

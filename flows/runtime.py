"""Prefect settings for a local, offline, low-overhead run, applied before Prefect is imported.

Measured on a 2-core box: the flow heartbeat thread adds ~1 s to every flow run and cannot be
turned off from the environment, so flows run inside `quiet_prefect()`, which disables it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
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
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def orchestrated() -> bool:
    """True when flows run on Prefect (the default), False for ASSAY_ORCHESTRATION=direct."""
    return os.environ.get("ASSAY_ORCHESTRATION", "prefect") != "direct"


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


class LazyFlow:
    """A Prefect flow built on first orchestrated use, so the direct path never imports Prefect (~1.6 s
    of start-up). Modules export the real flow under its public name through `flow_exports`."""

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        self.fn = fn
        self.name = name
        self._flow: Any = None

    @property
    def flow(self) -> Any:
        if self._flow is None:
            from prefect import flow

            self._flow = flow(name=self.name, log_prints=False, validate_parameters=False)(self.fn)
        return self._flow

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.flow(*args, **kwargs)


def lazy_flow(name: str) -> Callable[[Callable[..., Any]], LazyFlow]:
    """Drop-in for `prefect.flow(name=..., log_prints=False, validate_parameters=False)`."""
    return lambda fn: LazyFlow(fn, name)


def flow_exports(**flows: LazyFlow) -> Callable[[str], Any]:
    """A module `__getattr__` that hands out the real Prefect flows (for `prefect.yaml` entrypoints)."""

    def module_getattr(name: str) -> Any:
        if name in flows:
            return flows[name].flow
        raise AttributeError(name)

    return module_getattr


def run_flow(flow: LazyFlow, body: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a pipeline body as a Prefect flow (tasks tracked) or directly (same stages, no API)."""
    if orchestrated():
        with quiet_prefect():
            return flow(*args, **kwargs)
    return body(*args, call=direct_call, **kwargs)

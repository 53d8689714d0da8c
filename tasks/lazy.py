"""Prefect tasks and flows that are built on first orchestrated use.

Importing Prefect costs ~1.6 s of every process start. The direct path (`ASSAY_ORCHESTRATION=direct`,
benchmarks, a one-shot `assay index`) calls `.fn` and never needs it, so the import waits until a flow
really runs. Every Assay task opts out of Prefect's result cache (inputs are large, unhashable artifacts
and reruns must recompute).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cached_property
from typing import Any


class LazyPrefect:
    """The plain function (`.fn`) now; the Prefect task or flow (`.prefect`, or any of its attributes) on demand."""

    def __init__(self, fn: Callable[..., Any], build: Callable[[Callable[..., Any]], Any], name: str) -> None:
        self.fn = fn
        self.name = name
        self._build = build
        self.__doc__ = fn.__doc__

    @cached_property
    def prefect(self) -> Any:
        return self._build(self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.prefect(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # submit, map, with_options, serve, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.prefect, name)


def task(**options: Any) -> Callable[[Callable[..., Any]], LazyPrefect]:
    """Drop-in for `prefect.task(...)` with `cache_policy=NO_CACHE`; options go to Prefect unchanged."""

    def build(fn: Callable[..., Any]) -> Any:
        from prefect import task as prefect_task
        from prefect.cache_policies import NO_CACHE

        return prefect_task(cache_policy=NO_CACHE, **options)(fn)

    return lambda fn: LazyPrefect(fn, build, options.get("name", fn.__name__))


def flow(name: str) -> Callable[[Callable[..., Any]], LazyPrefect]:
    """Drop-in for `prefect.flow(name=..., log_prints=False, validate_parameters=False)`."""

    def build(fn: Callable[..., Any]) -> Any:
        from prefect import flow as prefect_flow

        return prefect_flow(name=name, log_prints=False, validate_parameters=False)(fn)

    return lambda fn: LazyPrefect(fn, build, name)


def in_prefect_run() -> bool:
    """True inside a Prefect flow or task run. A process that never imported Prefect is not in one."""
    if "prefect" not in sys.modules:
        return False
    from prefect.context import FlowRunContext, TaskRunContext

    return FlowRunContext.get() is not None or TaskRunContext.get() is not None

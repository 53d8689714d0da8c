"""`@task` that builds its Prefect task on first orchestrated call.

Importing Prefect costs ~1.6 s of every process start. The direct path (`ASSAY_ORCHESTRATION=direct`,
benchmarks, a one-shot `assay index`) calls `.fn` and never needs it, so the import waits until a flow
really runs the task. Every Assay task opts out of Prefect's result cache (inputs are large, unhashable
artifacts and reruns must recompute).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cached_property
from typing import Any


class LazyTask:
    """The plain function (`.fn`) now, the Prefect task (`.task`, or any of its attributes) on demand."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self.fn = fn
        self.name: str = options.get("name", fn.__name__)
        self._options = options
        self.__doc__ = fn.__doc__

    @cached_property
    def task(self) -> Any:
        from prefect import task
        from prefect.cache_policies import NO_CACHE

        return task(cache_policy=NO_CACHE, **self._options)(self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.task(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # submit, map, with_options, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.task, name)


def task(**options: Any) -> Callable[[Callable[..., Any]], LazyTask]:
    """Drop-in for `prefect.task(...)` with `cache_policy=NO_CACHE`; options go to Prefect unchanged."""
    return lambda fn: LazyTask(fn, options)


def in_prefect_run() -> bool:
    """True inside a Prefect flow or task run. A process that never imported Prefect is not in one."""
    if "prefect" not in sys.modules:
        return False
    from prefect.context import FlowRunContext, TaskRunContext

    return FlowRunContext.get() is not None or TaskRunContext.get() is not None

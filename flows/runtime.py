"""Prefect settings for a local, offline, low-overhead run, applied before Prefect is imported.

Measured on a 2-core box: the flow heartbeat thread adds ~1 s to every flow run and cannot be
turned off from the environment, so flows run inside `quiet_prefect()`, which disables it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any, TypeVar
from urllib.parse import urlparse

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

    updates: dict[Any, Any] = {}
    # off unless asked for: the heartbeat costs ~1 s of every run, and the server marks nothing Crashed by it on its
    # own; a user who set up Prefect's zombie-flow automation sets PREFECT_FLOWS_HEARTBEAT_FREQUENCY and gets them
    if not os.environ.get("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "").strip():
        updates[PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
    if os.environ.get("PREFECT_API_URL"):  # set after Prefect was imported (the MCP server's own API): honour it
        updates[PREFECT_API_URL] = os.environ["PREFECT_API_URL"]
    with temporary_settings(updates=updates):
        from assay.flows.prefect_api import current_api

        direct_to_api(current_api())  # whichever API the run's clients (built after this) will use
        yield


def direct_to_api(url: str | None) -> None:
    """A loopback Prefect API is reached directly: its host goes into NO_PROXY. Prefect's clients read the environment's
    HTTP(S)_PROXY (trust_env) and have no switch of their own, so every API call, an ask report's artifact with its
    code included, went through whatever proxy the shell names."""
    from assay.stages.core.llm_clients import proxy_free
    from assay.stages.index.chroma_http import bypass_proxy_for

    if url and proxy_free(url):
        bypass_proxy_for(urlparse(url if "://" in url else f"http://{url}").hostname or "127.0.0.1")


def orchestration_mode() -> str:
    """ASSAY_ORCHESTRATION: `auto` (the default), `prefect` or `direct`, read as Settings reads it (empty is unset)."""
    from assay.stages.core.config import env_setting

    return env_setting("orchestration")


def local_mode() -> bool:
    """ASSAY_MODE is `local`, read as Settings reads it: `ASSAY_MODE=` (empty) is unset, so local. A raw read took
    it for another mode and skipped the loopback refusal of a remote Prefect API or Dask scheduler."""
    from assay.stages.core.config import env_setting

    return env_setting("mode") == "local"


def orchestrated() -> bool:
    """True when flows run on Prefect. `auto` does so only when a Prefect API is there to record the run
    (PREFECT_API_URL, or a running `assay server`, whose URL is then handed to Prefect); `prefect` always does
    (without an API, on a server of this process's own: 10-15 s); `direct` never."""
    mode = orchestration_mode()
    if mode == "direct":
        return False
    from assay.flows.prefect_api import configured_api, current_api, local_server_api, process_api

    configured = configured_api()
    if configured and local_mode():  # run records hold questions and paths
        from assay.stages.core.llm_clients import require_loopback

        require_loopback(configured, "the Prefect API (PREFECT_API_URL)")
    if configured and configured_answers(configured, mode):
        direct_to_api(configured)
        return True
    url = local_server_api() or (process_api() if mode == "prefect" and not current_api() else None)
    if url:
        os.environ["PREFECT_API_URL"] = url  # read by Prefect when it is first imported, or by quiet_prefect
        direct_to_api(url)
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
    """A module `__getattr__` that hands out the real Prefect flows for `prefect.yaml` entrypoints: each a flow of the
    same name whose parameters are checked and converted first (`deployment_flow`), built once."""
    built: dict[str, Any] = {}

    def module_getattr(name: str) -> Any:
        if name not in flows:
            raise AttributeError(name)
        if name not in built:
            built[name] = deployment_flow(flows[name])
        return built[name]

    return module_getattr


def deployment_flow(lazy: LazyPrefect) -> Any:
    """The flow a deployment runs. A deployment run hands its parameters over as JSON (a day as "2030-01-01", the
    settings as an object) and the flows skip Prefect's validation (`tasks.lazy.flow`), so each is converted to its
    annotated type here, with a one-line error naming the parameter: they reached the flow raw and failed deep inside
    (`'>=' not supported between 'datetime.date' and 'str'`)."""
    import functools
    import inspect

    from prefect import flow as prefect_flow

    fn = lazy.fn
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        return fn(**deployment_parameters(fn, signature.bind(*args, **kwargs).arguments))

    return prefect_flow(name=lazy.name, log_prints=False, validate_parameters=False)(checked)


def deployment_parameters(fn: Callable[..., Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` converted to `fn`'s annotations (pydantic's lax rules), or a one-line ValueError."""
    import typing

    hints = typing.get_type_hints(fn)
    return {name: _parameter(name, hints.get(name), value) for name, value in arguments.items()}


def _parameter(name: str, hint: Any, value: Any) -> Any:
    from pydantic import TypeAdapter, ValidationError

    from assay.stages.core.config import Settings

    if value is None or hint is None:
        return value
    if Settings in typing_args(hint):
        return deployment_settings(value)
    try:
        return TypeAdapter(hint).validate_python(value)
    except ValidationError as exc:
        msg = exc.errors()[0].get("msg", "invalid")
        day = "; give a day as YYYY-MM-DD" if date in typing_args(hint) else ""
        raise ValueError(f"deployment parameter {name}: {msg} (got {repr(value)[:120]}){day}") from None


def typing_args(hint: Any) -> tuple[Any, ...]:
    """The types a hint allows: `X | None` -> (X, NoneType), `X` -> (X,)."""
    import typing

    return typing.get_args(hint) or (hint,)


def deployment_settings(value: Any) -> Any:
    """A deployment's `settings` object as Settings: the worker's ASSAY_* environment with the object's fields over
    it (as the CLI's options override the environment); an unknown or invalid field is one line naming it."""
    from pydantic import ValidationError

    from assay.stages.core.config import Settings

    if isinstance(value, Settings):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"deployment parameter settings: must be an object of Assay settings, e.g. "
                         f'{{"judge": "none"}} (got {value!r})'[:300])
    unknown = sorted(set(value) - set(Settings.model_fields))
    if unknown:
        raise ValueError(f"deployment parameter settings: no such setting {', '.join(map(repr, unknown))}; the "
                         "fields are those of the ASSAY_* variables, in lower case without ASSAY_ (e.g. judge, top_k)")
    try:
        return Settings(**value)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ()))
        got = f" (got {first['input']!r})"[:120] if "input" in first else ""
        raise ValueError(f"deployment parameter settings.{field}: "
                         f"{str(first.get('msg', 'invalid')).removeprefix('Value error, ')}{got}") from None


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

"""Which Prefect API, if any, a flow run can be recorded on, and a long-lived local one to start.

A command runs its flow on Prefect only when an API is there to record it: `PREFECT_API_URL` (the environment or
the active Prefect profile), or the server `assay server` started and still runs. Otherwise the same stages run
directly: Prefect's temporary per-process server cost 10-15 s of every command on a 2-core machine.
Nothing here imports Prefect (1.6 s): a command that runs directly never pays for it.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from assay.stages.core.registry import assay_home
from assay.stages.core.writer import pid_alive


def record_path() -> Path:
    """Where `assay server` says which server it runs (read by every command)."""
    return assay_home() / "prefect-server.json"


def configured_api() -> str | None:
    """PREFECT_API_URL from the environment, else from the active Prefect profile (read without Prefect)."""
    url = os.environ.get("PREFECT_API_URL", "").strip()
    if url:
        return url
    home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect")).expanduser()
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml")).expanduser()
    try:
        data = tomllib.loads(profiles.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or data.get("active")
    value = str(data.get("profiles", {}).get(active or "", {}).get("PREFECT_API_URL") or "").strip()
    return value or None


def local_server_api() -> str | None:
    """The API of the server `assay server` runs, when its process is alive and its port accepts connections."""
    try:
        record = json.loads(record_path().read_text(encoding="utf-8"))
        url, pid = str(record["url"]), int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if pid_alive(pid) and answers(url) else None


def answers(url: str, timeout: float = 0.2) -> bool:
    """True when the URL's host and port accept a TCP connection (a loopback check: ~0.1 ms)."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return True
    except (OSError, ValueError):  # ValueError: a port out of range
        return False


def serves_prefect(url: str, timeout: float = 5.0) -> bool:
    """True when a Prefect API answers at the URL: its port accepts a connection and `<url>/health` says 200 (a
    plain web server on that port is no API). Loopback only: a remote API is trusted as configured, since checking
    it would resolve its name (a lookup) and it may want a key."""
    from assay.stages.core.llm_clients import is_loopback_url

    if not is_loopback_url(url):
        return True
    return answers(url) and healthy(url, timeout)  # refused: no need to wait on HTTP


def healthy(url: str, timeout: float) -> bool:
    """Whether `<url>/health` answers 200 (a Prefect API, not just any web server on the port). Never through the
    environment's proxy: the APIs asked are on this machine."""
    import httpx

    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            return client.get(f"{url.rstrip('/')}/health").status_code == 200
    except httpx.HTTPError:
        return False


def configured_source(url: str) -> str:
    """The configured URL and where `configured_api()` found it, in the words a user changes it by."""
    if os.environ.get("PREFECT_API_URL", "").strip():
        return f"PREFECT_API_URL={url}"
    return f"PREFECT_API_URL={url} (the active Prefect profile's)"


def configured_fix() -> str:
    """How to stop using the configured URL."""
    if os.environ.get("PREFECT_API_URL", "").strip():
        return "unset PREFECT_API_URL"
    return "run `prefect config unset PREFECT_API_URL`"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The server gets SIGTERM when the process that started it dies, even by SIGKILL (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _die_with_parent_niced() -> None:  # pragma: no cover - runs in the child between fork and exec
    """As `_die_with_parent`, at a lower CPU priority: a background server's start (~10 s of CPU) must not slow
    the tool calls its parent answers meanwhile on a 2-core machine."""
    _die_with_parent()
    os.nice(10)


def start_server(host: str, port: int, background: bool = False, niced: bool | None = None) -> subprocess.Popen:
    """`prefect server start` in the foreground of a child process (one process: uvicorn runs in it) that
    ends with this one. Its database is Prefect's own (PREFECT_HOME). `background`: a private server for this
    process alone: no UI, no scheduling services, silent and (unless `niced` is false) at a lower CPU priority."""
    niced = background if niced is None else niced
    args = [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)]
    if background:
        args.append("--no-services")
    env = {**os.environ, "PREFECT_UI_ENABLED": "false" if background else "true",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)  # the server serves an API; it is no client of another
    sink = subprocess.DEVNULL if background else None
    preexec = (_die_with_parent_niced if niced else _die_with_parent) if sys.platform.startswith("linux") else None
    return subprocess.Popen(args, env=env, stdout=sink, stderr=sink, stdin=subprocess.DEVNULL, preexec_fn=preexec)


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP raise KeyboardInterrupt, so `assay server` stops its server and clears its record."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)


def wait_until_healthy(url: str, proc: subprocess.Popen, timeout: float = 180.0) -> bool:
    """Poll `<api>/health` until the server answers; False when it exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if healthy(url, timeout=2):
            return True
        time.sleep(0.5)
    return False


def api_url(host: str, port: int) -> str:
    return f"http://{host}:{port}/api"


def write_record(url: str, pid: int) -> None:
    path = record_path()  # in ASSAY_HOME, which `assay_home` creates
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"url": url, "pid": pid}), encoding="utf-8")
    os.replace(tmp, path)


def clear_record(pid: int) -> None:
    """Remove the record if it is still this server's (another `assay server` may have replaced it)."""
    try:
        if json.loads(record_path().read_text(encoding="utf-8")).get("pid") == pid:
            record_path().unlink()
    except (OSError, ValueError):
        pass


def start_private_api() -> threading.Thread | None:
    """For a long-lived process (the MCP server) in `auto` orchestration with no API to record on: start a
    private Prefect server in the background. Calls run directly until it answers, then on Prefect: the first
    tool call never waits for a server start. The server ends with this process (and falls back to direct
    if it dies)."""
    from assay.flows.runtime import orchestration_mode

    if orchestration_mode() != "auto" or configured_api() or local_server_api():
        return None
    thread = threading.Thread(target=_run_private_api, name="prefect-api", daemon=True)
    thread.start()
    return thread


def _private_server(niced: bool = True) -> tuple[str, subprocess.Popen] | None:
    """A background server on a free loopback port, once it answers (None, and stopped, when it does not)."""
    host = "127.0.0.1"
    port = free_port(host)
    url = api_url(host, port)
    proc = start_server(host, port, background=True, niced=niced)
    if not wait_until_healthy(url, proc):
        proc.terminate()
        return None
    return url, proc


def _run_private_api() -> None:
    started = _private_server()  # this thread lives as long as the server does
    if started is None:
        return
    url, proc = started
    try:  # Prefect and the flows built before the first orchestrated call needs them (~2 s)
        from assay.flows.index import _index_flow
        from assay.flows.query import _query_flow

        _query_flow.prefect, _index_flow.prefect  # noqa: B018
    except Exception:  # noqa: BLE001 - warming is best effort
        pass
    os.environ["PREFECT_API_URL"] = url
    proc.wait()
    if os.environ.get("PREFECT_API_URL") == url:
        os.environ.pop("PREFECT_API_URL", None)


_process_api: str | None = None
_process_api_lock = threading.Lock()


def process_api() -> str:
    """The API for `ASSAY_ORCHESTRATION=prefect` when none is configured and `assay server` runs none: a loopback
    server of this process's own, started once (~10 s, what Prefect's temporary server cost) and ended with the
    process, even by SIGKILL (Linux). Prefect's temporary server, which it started otherwise, outlived a killed
    command."""
    global _process_api
    with _process_api_lock:
        if _process_api is None or not answers(_process_api):
            ready: queue.Queue[str | None] = queue.Queue(maxsize=1)
            # a thread of its own starts and holds the server: the kernel's parent-death signal follows the thread
            # that started a child, and a caller's thread (an MCP tool call's worker) may end before the process does
            threading.Thread(target=_hold_process_api, args=(ready,), name="prefect-api", daemon=True).start()
            _process_api = ready.get()
        if _process_api is None:
            raise RuntimeError("the Prefect server for ASSAY_ORCHESTRATION=prefect did not start; set PREFECT_API_URL, "
                               "run `assay server`, or use ASSAY_ORCHESTRATION=auto")
        return _process_api


def _hold_process_api(ready: queue.Queue[str | None]) -> None:
    started = _private_server(niced=False)  # the command waits on it: no lower priority
    ready.put(started[0] if started else None)
    if started is None:
        return
    atexit.register(_stop, started[1])
    started[1].wait()


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextmanager
def api_for_workers() -> Iterator[None]:
    """A Prefect API that other processes reach too, for a run whose tasks go to Dask workers: the configured one,
    `assay server`'s, or a server started for this run and stopped after it. Prefect's temporary server lives in
    this process's settings, which spawned workers do not inherit: each worker started a server of its own."""
    from assay.flows.runtime import orchestrated

    orchestrated()  # checks a configured API (loopback in local mode) and hands `assay server`'s URL to Prefect
    current = current_api()
    if current and not serves_prefect(current):  # `auto` past a dead configured API: a server of the run's own
        current = None
    started = None if current else _private_server()
    if not current and started is None:
        raise RuntimeError("the Prefect server for the Dask run did not start; set PREFECT_API_URL or run `assay server`")
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = current or started[0]  # the workers inherit this process's environment
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous
        if started is not None:
            _stop(started[1])


def current_api() -> str | None:
    """The API this process's Prefect runs report to: the environment's, the active profile's, or one set in Prefect's
    settings at run time (a test harness)."""
    if "prefect" in sys.modules:
        from prefect.settings import get_current_settings

        url = get_current_settings().api.url
        if url:
            return str(url)
    return os.environ.get("PREFECT_API_URL") or configured_api()

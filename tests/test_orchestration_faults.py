"""Orchestration when something around it is wrong: a dead or foreign Prefect API, a Prefect server that dies,
a `gpu` limit of 0, a direct run beside a Prefect one, a bad `assay server --port`, a dead Dask scheduler."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import prefect_api, runtime
from assay.flows.cli import app
from assay.flows.runtime import orchestrated

runner = CliRunner()


@contextmanager
def web_server(health: int) -> Iterator[str]:
    """A loopback web server whose `/api/health` answers `health` (200: looks like Prefect; 404: some other server).
    Yields its API URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(health if self.path.rstrip("/").endswith("/health") else 404)
            self.end_headers()
            self.wfile.write(b"true")

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/api"
    finally:
        httpd.shutdown()
        httpd.server_close()


def dead_url() -> str:
    return prefect_api.api_url("127.0.0.1", prefect_api.free_port())  # nothing listens there


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No Prefect API anywhere but what a test sets, auto orchestration, and no note printed yet."""
    for key in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH"):
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "assay"))
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "auto")
    monkeypatch.setattr(runtime, "_noted", set())
    return tmp_path


# --- 3: a configured API that does not answer -------------------------------------------------------------------


def test_auto_runs_in_process_past_a_dead_api_with_one_note(clean_env: Path, capsys: pytest.CaptureFixture) -> None:
    url = dead_url()
    os.environ["PREFECT_API_URL"] = url
    assert not orchestrated() and not orchestrated()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # once per process, not once per run
    assert f"PREFECT_API_URL={url} does not answer" in err[0] and "unset PREFECT_API_URL" in err[0]


def test_auto_runs_in_process_past_a_web_server_that_is_no_prefect_api(clean_env: Path, capsys: pytest.CaptureFixture) -> None:
    with web_server(404) as url:
        os.environ["PREFECT_API_URL"] = url
        assert not orchestrated()
    assert "does not answer as a Prefect API" in capsys.readouterr().err


def test_auto_still_runs_on_a_configured_api_that_answers(clean_env: Path, capsys: pytest.CaptureFixture) -> None:
    with web_server(200) as url:
        os.environ["PREFECT_API_URL"] = url
        assert orchestrated()
    assert capsys.readouterr().err == ""


def test_a_stale_profile_is_named_with_its_fix(clean_env: Path, capsys: pytest.CaptureFixture) -> None:
    url = dead_url()
    profiles = clean_env / "prefect" / "profiles.toml"
    profiles.parent.mkdir(parents=True)
    profiles.write_text(f'active = "dead"\n[profiles.dead]\nPREFECT_API_URL = "{url}"\n')
    assert not orchestrated()
    err = capsys.readouterr().err
    assert "active Prefect profile" in err and "prefect config unset PREFECT_API_URL" in err


def test_prefect_mode_fails_in_one_line_naming_the_variable_and_the_fix(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "prefect")
    url = dead_url()
    monkeypatch.setenv("PREFECT_API_URL", url)
    with pytest.raises(RuntimeError, match=rf"PREFECT_API_URL={url} does not answer.*start that server, unset PREFECT_API_URL"):
        orchestrated()


def test_ask_and_index_succeed_in_process_past_a_dead_api(clean_env: Path, project: Path) -> None:
    env = {"PREFECT_API_URL": dead_url(), "ASSAY_ORCHESTRATION": "auto"}
    indexed = runner.invoke(app, ["index", str(project)], env=env)
    assert indexed.exit_code == 0, indexed.output
    asked = runner.invoke(app, ["ask", "how does retry_call back off?", str(project)], env=env)
    assert asked.exit_code == 0, asked.output
    assert "retry" in asked.stdout


# --- 2: the API going away during a run ----------------------------------------------------------------------


def test_a_run_whose_api_went_away_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    url = dead_url()
    monkeypatch.setattr(prefect_api, "current_api", lambda: url)
    with pytest.raises(RuntimeError, match=rf"the Prefect API at {url} stopped answering during the run: run the command again"):
        with runtime.api_watch():
            raise ConnectionRefusedError(111, "Connection refused")


def test_other_failures_pass_through_while_the_api_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    with web_server(200) as url:
        monkeypatch.setattr(prefect_api, "current_api", lambda: url)
        with pytest.raises(ValueError, match="the question is empty"):
            with runtime.api_watch():
                raise ValueError("the question is empty")


def test_prefects_internal_error_records_are_quiet() -> None:
    """Prefect's services log a lost API at ERROR on `prefect._internal` (~20 KB per run): not without ASSAY_DEBUG."""
    code = ("import assay.flows.runtime\nfrom prefect._internal.concurrency import logger\n"
            "print(logger.isEnabledFor(40))")
    env = {k: v for k, v in os.environ.items() if k not in ("ASSAY_DEBUG", "PREFECT_LOGGING_INTERNAL_LEVEL",
                                                            "PREFECT_INTERNAL_LOGGING_LEVEL")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


# --- 8, 9: `assay server` -----------------------------------------------------------------------------------


@pytest.mark.parametrize("port", ["0", "99999", "-1"])
def test_server_refuses_a_port_out_of_range_at_once(port: str) -> None:
    res = runner.invoke(app, ["server", "--port", port])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [f"error: --port must be 1-65535 (got {port})"]


def test_server_exits_non_zero_with_a_line_when_its_prefect_server_dies(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dying = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5); raise SystemExit(3)"])
    monkeypatch.setattr(prefect_api, "start_server", lambda host, port: dying)
    monkeypatch.setattr(prefect_api, "wait_until_healthy", lambda url, proc: True)
    monkeypatch.setattr(prefect_api, "stop_on_signals", lambda: None)  # the test process keeps its own handlers
    res = runner.invoke(app, ["server", "--port", str(prefect_api.free_port())])
    assert res.exit_code == 2
    assert "error: the Prefect server exited (code 3)" in res.stderr and "assay server" in res.stderr
    assert not prefect_api.record_path().exists()  # later commands do not wait on a dead server


# --- 12: a Dask scheduler that does not answer ---------------------------------------------------------------


def test_a_dead_dask_scheduler_is_one_line_before_the_run(clean_env: Path, project: Path) -> None:
    address = f"tcp://127.0.0.1:{prefect_api.free_port()}"
    started = time.monotonic()
    res = runner.invoke(app, ["index", str(project)], env={"ASSAY_DASK": address, "ASSAY_ORCHESTRATION": "auto"})
    assert time.monotonic() - started < 10  # Dask itself retried a refused connection for 30 s
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        f"error: the Dask scheduler at {address} does not answer (ASSAY_DASK): start it (`dask scheduler`), "
        "or unset ASSAY_DASK to index in this process"]
    assert not (project / ".assay" / "status.json").exists()  # checked before the run, which never started


# --- 11: the MCP server's stderr ------------------------------------------------------------------------------


def test_the_mcp_server_does_not_log_every_http_request() -> None:
    import assay.flows.mcp_server  # noqa: F401 - its SDK puts an INFO handler on the root logger

    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)


# --- 4, 6: the `gpu` slot under Prefect -----------------------------------------------------------------------


def file_lock_is_free(path: Path) -> bool:
    """Whether another process can take the file lock at once (what a direct run does)."""
    code = ("import sys\nfrom filelock import FileLock, Timeout\n"
            "try:\n    FileLock(sys.argv[1], timeout=0.2).acquire()\nexcept Timeout:\n    print('held')\nelse:\n    print('free')")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() == "free"


@pytest.mark.prefect
def test_a_prefect_run_holding_the_gpu_slot_holds_the_file_lock_too(prefect_server) -> None:
    from prefect import flow

    from assay.stages.core.registry import assay_home
    from assay.tasks.gpu import gpu_slot

    lock = assay_home() / "gpu.lock"

    @flow(name="gpu-slot-probe")
    def probe() -> tuple[str, bool]:
        with gpu_slot(60) as held:
            return held, file_lock_is_free(lock)

    held, free = probe()
    assert held == "prefect"
    assert not free, "a direct run could load a model while the Prefect run holds the gpu slot"
    assert file_lock_is_free(lock)  # released with the slot


@pytest.mark.prefect
def test_a_gpu_limit_of_zero_is_one_line_with_the_fix(prefect_server) -> None:
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

    from assay.tasks.gpu import GPU_LIMIT, ensure_gpu_limit, gpu_slot

    @flow(name="gpu-slot-probe")
    def probe() -> None:
        with gpu_slot(20):
            pass

    probe()  # creates the limit
    ensure_gpu_limit()
    with get_client(sync_client=True) as client:
        client.update_global_concurrency_limit(GPU_LIMIT, GlobalConcurrencyLimitUpdate(limit=0))
    try:
        with pytest.raises(ValueError, match=r"has 0 slots.*prefect gcl update gpu --limit 1"):
            probe()
    finally:
        with get_client(sync_client=True) as client:
            client.update_global_concurrency_limit(GPU_LIMIT, GlobalConcurrencyLimitUpdate(limit=1))

"""When a command runs on Prefect: only with an API to record it (no temporary server per command), and the
MCP server moves onto a private API of its own once that answers, leaving nothing running after it."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from assay.flows import prefect_api
from assay.flows.runtime import orchestrated
from tests.processes import process_tree, still_running

ASSAY = str(Path(sys.executable).with_name("assay"))


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No Prefect API anywhere: an empty Prefect home and Assay home, auto orchestration."""
    for key in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH"):
        monkeypatch.setenv(key, "")  # recorded, so the teardown restores what was there before, even a value
        monkeypatch.delenv(key)      # `orchestrated()` itself sets (the URL of `assay server`)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "assay"))
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "auto")
    return tmp_path


def test_auto_runs_directly_when_no_api_is_there(clean_env: Path) -> None:
    assert not orchestrated()


def test_direct_and_prefect_are_obeyed_and_a_typo_is_an_error(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "direct")
    assert not orchestrated()
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "prefect")
    assert orchestrated()
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "prefec")
    with pytest.raises(ValueError, match="ASSAY_ORCHESTRATION: Input should be 'auto', 'prefect' or 'direct'"):
        orchestrated()


def test_auto_uses_an_api_from_the_environment_or_the_active_profile(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_orchestration_faults import web_server

    with web_server(200) as url:  # an API that answers (a dead one: tests/test_orchestration_faults.py)
        monkeypatch.setenv("PREFECT_API_URL", url)
        assert orchestrated()
        monkeypatch.delenv("PREFECT_API_URL")
        profiles = clean_env / "prefect" / "profiles.toml"
        profiles.parent.mkdir(parents=True)
        profiles.write_text(f'active = "team"\n[profiles.ephemeral]\n[profiles.team]\nPREFECT_API_URL = "{url}"\n')
        assert prefect_api.configured_api() == url and orchestrated()
    profiles.write_text('active = "ephemeral"\n[profiles.ephemeral]\nPREFECT_SERVER_ALLOW_EPHEMERAL_MODE = "true"\n')
    assert not orchestrated()


def test_local_mode_refuses_a_prefect_api_beyond_loopback(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.stages.core.llm_clients import LocalModeViolation

    monkeypatch.setenv("PREFECT_API_URL", "https://prefect.example.com/api")
    with pytest.raises(LocalModeViolation, match="not loopback"):
        orchestrated()
    monkeypatch.setenv("ASSAY_MODE", "hybrid")
    assert orchestrated()


def test_auto_uses_the_server_assay_server_runs_only_while_it_is_alive(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as listener:  # stands in for the server's port
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = prefect_api.api_url("127.0.0.1", listener.getsockname()[1])
        prefect_api.write_record(url, os.getpid())
        assert orchestrated() and os.environ["PREFECT_API_URL"] == url  # handed to Prefect
        monkeypatch.delenv("PREFECT_API_URL")
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        prefect_api.write_record(url, dead.pid)  # the server's process is gone
        assert not orchestrated()
    prefect_api.write_record(url, os.getpid())  # alive, but its port no longer answers
    assert not orchestrated()
    prefect_api.clear_record(os.getpid())
    assert not prefect_api.record_path().exists()


@pytest.mark.prefect
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_mcp_answers_at_once_then_runs_on_its_own_prefect_api_and_leaves_nothing_behind(
    project: Path, tmp_path: Path
) -> None:
    from mcp import Client

    from tests.test_mcp import call, params

    subprocess.run([ASSAY, "index", str(project)], check=True, capture_output=True,
                   env={**os.environ, "ASSAY_ORCHESTRATION": "direct"})
    env = {"ASSAY_ORCHESTRATION": "auto", "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": ""}
    server_pids: dict[int, str] = {}  # pid -> start time

    async def scenario() -> list[str | None]:
        runs: list[str | None] = []
        async with Client(params(project.parent, tmp_path / "home", **env)) as client:
            first = await call(client, "ask", question="how does retry_call back off?", path=str(project))
            assert not first.is_error, first.content[0].text
            assert "pkg/retry.py" in first.content[0].text.splitlines()[0]  # the answer opens the report
            runs.append(first.structured_content["flow_run_id"])
            deadline = time.time() + 240
            while runs[-1] is None and time.time() < deadline:  # direct until the private API answers
                await asyncio.sleep(2)
                res = await call(client, "ask", question="how are cookies merged?", path=str(project))
                assert not res.is_error, res.content[0].text
                runs.append(res.structured_content["flow_run_id"])
            mcp = [p for p in process_tree(os.getpid()) if b"mcp" in Path(f"/proc/{p}/cmdline").read_bytes()]
            for pid in mcp:
                server_pids.update(process_tree(pid))
        return runs

    runs = asyncio.run(scenario())
    assert runs[-1] is not None and uuid.UUID(runs[-1]), "the MCP server never ran a flow on its Prefect API"
    assert server_pids, "no Prefect server process was found under the MCP server"
    deadline = time.time() + 30
    while time.time() < deadline and any(still_running(*p) for p in server_pids.items()):
        time.sleep(0.5)
    assert not [p for p in server_pids.items() if still_running(*p)], "a process the MCP server started outlived it"


@pytest.mark.prefect
def test_a_cli_command_records_its_run_on_a_configured_api_and_errors_stay_one_line(
    prefect_server, project: Path
) -> None:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "ASSAY_ORCHESTRATION": "auto", "PREFECT_API_URL": PREFECT_API_URL.value()}
    env.pop("ASSAY_DEBUG", None)
    subprocess.run([ASSAY, "index", str(project)], check=True, capture_output=True, env=env, timeout=300)
    done = subprocess.run([ASSAY, "ask", "how does retry_call back off?", str(project), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert uuid.UUID(json.loads(done.stdout)["flow_run_id"])
    failed = subprocess.run([ASSAY, "ask", "   ", str(project)], capture_output=True, text=True, env=env, timeout=300)
    assert failed.returncode == 2
    assert failed.stderr.strip().splitlines() == ["error: the question is empty: ask what you want to know about the code"]


def prefect_servers_under(pid: int) -> dict[int, str]:
    """The `prefect server start` processes among `pid`'s descendants (pid -> start time)."""
    found = {}
    for child, started in process_tree(pid).items():
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"prefect\0server\0start" in cmdline:
            found[child] = started
    return found


@pytest.mark.prefect
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_prefect_orchestration_without_an_api_records_on_a_server_that_ends_with_the_command(
    project: Path, tmp_path: Path
) -> None:
    """ASSAY_ORCHESTRATION=prefect with no API: the command starts a loopback server of its own, records its run
    there, and the server is gone when the command ends, even by SIGKILL (Prefect's temporary server outlived it)."""
    env = {**os.environ, "ASSAY_ORCHESTRATION": "prefect", "PREFECT_HOME": str(tmp_path / "prefect"),
           "ASSAY_HOME": str(tmp_path / "assay"), "PREFECT_API_URL": ""}
    subprocess.run([ASSAY, "index", str(project)], check=True, capture_output=True, timeout=300,
                   env={**env, "ASSAY_ORCHESTRATION": "direct"})
    ask = [ASSAY, "ask", "how does retry_call back off?", str(project), "--json"]
    proc = subprocess.Popen(ask, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    servers: dict[int, str] = {}
    while proc.poll() is None:
        servers.update(prefect_servers_under(proc.pid))
        time.sleep(0.2)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert uuid.UUID(json.loads(out)["flow_run_id"]) and servers, "the run was not recorded on a server of its own"
    assert not [p for p in servers.items() if still_running(*p)], "the server outlived the command"

    killed = subprocess.Popen(ask, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers = {}
    deadline = time.time() + 120
    while not servers and time.time() < deadline and killed.poll() is None:
        servers = prefect_servers_under(killed.pid)
        time.sleep(0.1)
    killed.kill()
    killed.wait(timeout=30)
    assert servers, "the command started no Prefect server"
    deadline = time.time() + 15
    while time.time() < deadline and any(still_running(*p) for p in servers.items()):
        time.sleep(0.2)
    left = [pid for pid, started in servers.items() if still_running(pid, started)]
    for pid in left:
        os.kill(pid, 9)
    assert left == [], "the Prefect server outlived a killed command"

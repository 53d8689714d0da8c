"""prefect.yaml for real: a Prefect server on loopback, the process work pool, `prefect deploy --all`, a worker, the
index and query deployments run through it, and the query's report artifact read back through the API."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from assay.flows.prefect_api import free_port, wait_until_healthy
from assay.stages.index.store import load_manifest
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.prefect


def _prefect(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).with_name("prefect")), *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)}: {(done.stdout + done.stderr)[-3000:]}"
    return done


@pytest.fixture()
def prefect_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A Prefect server of this test's own (its database in tmp_path) and the environment that points at it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_UI_ENABLED="false",
               ASSAY_ORCHESTRATION="auto", ASSAY_HOME=str(tmp_path / "assay-home"))
    server = subprocess.Popen([str(Path(sys.executable).with_name("prefect")), "server", "start", "--host", "127.0.0.1",
                               "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until_healthy(env["PREFECT_API_URL"], server), "the Prefect server did not start within 180 s"
        yield env
    finally:
        server.kill()
        server.wait(timeout=30)


def _api(env: dict[str, str], path: str, body: dict) -> list[dict]:
    reply = httpx.post(f"{env['PREFECT_API_URL']}{path}", json=body, timeout=30)
    reply.raise_for_status()
    return reply.json()


def test_deployments_run_through_a_process_worker_and_publish_the_report(prefect_env: dict[str, str],
                                                                          tmp_path: Path) -> None:
    env = prefect_env
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", project)
    _prefect("work-pool", "create", "assay-local", "--type", "process", env=env)
    _prefect("--no-prompt", "deploy", "--all", env={**env, "ASSAY_WORKSPACE": str(project)})
    names = {d["name"] for d in _api(env, "/deployments/filter", {})}
    assert names == {"scheduled-reindex", "query", "nightly-audit"}

    worker = subprocess.Popen([str(Path(sys.executable).with_name("prefect")), "worker", "start", "--pool", "assay-local"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _prefect("deployment", "run", "assay-index/scheduled-reindex", "--watch", "--watch-timeout", "400", env=env, timeout=420)
        assert load_manifest(project).entity_count > 0  # the worker's run indexed the workspace the deployment names
        question = "How are failed requests retried with backoff?"
        _prefect("deployment", "run", "assay-query/query", "--param", f"question={question}", "--watch",
                 "--watch-timeout", "400", env=env, timeout=420)
    finally:
        worker.kill()
        worker.wait(timeout=30)

    runs = _api(env, "/flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}})
    completed = {r["deployment_id"] for r in runs}
    by_name = {d["name"]: d["id"] for d in _api(env, "/deployments/filter", {})}
    assert {by_name["scheduled-reindex"], by_name["query"]} <= completed
    artifacts = _api(env, "/artifacts/filter", {"artifacts": {"key": {"any_": ["query-report"]}}})
    assert artifacts, "the query flow published no report artifact"
    report = artifacts[-1]["data"]
    assert question in report and "retry" in report.lower()  # the answer with its receipts, about the fixture's code

"""The flows on a real Prefect API server: task graph, artifacts, and the `gpu` concurrency limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.stages.core.config import Settings
from tests.fakes import FakeOllama

pytestmark = pytest.mark.prefect


@pytest.fixture()
def on_prefect(prefect_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "prefect")


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def test_index_and_query_flows_run_as_prefect_task_graphs(project: Path, on_prefect: None) -> None:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    report = run_index(str(project))
    assert report.entities_total > 0
    with FakeOllama() as ollama:
        answer = run_query(str(project), "how does retry_call back off?",
                           Settings(judge="ollama", synth="ollama", ollama_host=ollama.url))
    assert answer.selection.included and answer.judgment.calls == 1
    with _client() as client:
        runs = {r.name: r for r in client.read_flow_runs() if r.parameters.get("workspace") == str(project)}  # this test's
        flows = {client.read_flow(r.flow_id).name: r for r in runs.values()}
        assert {"assay-index", "assay-query"} <= set(flows)
        assert all(r.state.is_completed() for r in flows.values())
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flows["assay-query"].id])))
        names = {t.name.rsplit("-", 1)[0] for t in tasks}
        assert {"retrieve", "route", "judge", "threshold", "synthesize", "report", "audit-snapshot"} <= names
        index_tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flows["assay-index"].id])))
        assert {"discover", "plan", "parse", "purge", "prepare-dense", "embed", "store-vectors", "report"} <= {t.name.rsplit("-", 1)[0] for t in index_tasks}
        keys = {a.key for a in client.read_artifacts()}
        assert {"index-report", "query-report"} <= keys
        gpu = client.read_global_concurrency_limit_by_name("gpu")
        assert gpu.limit == 1 and gpu.active_slots == 0  # created on first use, released after


def test_mcp_ask_triggers_the_query_flow(prefect_server, project: Path, tmp_path: Path) -> None:
    """The MCP server (a subprocess) runs its tools' work as Prefect flows on the same API server."""
    import asyncio
    import os

    from mcp import Client
    from prefect.settings import PREFECT_API_URL

    from tests.test_mcp import call, params, wait_indexed

    async def scenario() -> str:
        env = {"ASSAY_ORCHESTRATION": "prefect", "PREFECT_API_URL": PREFECT_API_URL.value()}
        async with Client(params(project.parent, tmp_path / "home", **env)) as client:
            await call(client, "index_workspace", path=str(project))
            assert (await wait_indexed(client, str(project)))["state"] == "done"
            res = await call(client, "ask", question="how are cookies merged?", path=str(project))
            assert not res.is_error, res.content[0].text
            return res.structured_content["query_id"]

    query_id = asyncio.run(scenario())
    with _client() as client:
        runs = [r for r in client.read_flow_runs() if r.parameters.get("question") == "how are cookies merged?"]
        assert runs and all(r.state.is_completed() for r in runs)
        assert client.read_flow(runs[0].flow_id).name == "assay-query"
    assert os.environ.get("ASSAY_ORCHESTRATION") == "direct"  # the test process itself stayed direct
    assert query_id


def test_the_cloud_key_never_reaches_prefects_database(project: Path, on_prefect: None) -> None:
    from tests.fakes import FakeCloud

    run_index(str(project))
    with FakeCloud() as cloud:
        s = Settings(mode="hybrid", route="cloud", cloud_base_url=cloud.url + "/v1", cloud_api_key="sk-live-TOPSECRET-123456")
        report = run_query(str(project), "what does the guide say about retries?", s)
        assert report.answer.backend == "cloud" and cloud.requests[0][1]["_auth"] == "Bearer sk-live-TOPSECRET-123456"
    with _client() as client:
        stored = str([r.parameters for r in client.read_flow_runs()])
    assert "TOPSECRET" not in stored and "**********" in stored

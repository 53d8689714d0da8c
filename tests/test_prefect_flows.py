"""The flows on a real Prefect API server: task graph, artifacts, and the `gpu` concurrency limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.index import run_index
from flows.query import run_query
from stages.config import Settings
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
        runs = {r.name: r for r in client.read_flow_runs()}
        flows = {client.read_flow(r.flow_id).name: r for r in runs.values()}
        assert {"assay-index", "assay-query"} <= set(flows)
        assert all(r.state.is_completed() for r in flows.values())
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flows["assay-query"].id])))
        names = {t.name.rsplit("-", 1)[0] for t in tasks}
        assert {"retrieve", "route", "judge", "threshold", "synthesize", "report", "audit-snapshot"} <= names
        index_tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flows["assay-index"].id])))
        assert {"discover", "plan", "parse", "embed", "store", "purge", "report"} <= {t.name.rsplit("-", 1)[0] for t in index_tasks}
        keys = {a.key for a in client.read_artifacts()}
        assert {"index-report", "query-report"} <= keys
        gpu = client.read_global_concurrency_limit_by_name("gpu")
        assert gpu.limit == 1 and gpu.active_slots == 0  # created on first use, released after

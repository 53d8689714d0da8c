"""ASSAY_DASK: the index flow's parse shares and embedding slices run as Prefect tasks on prefect-dask's
DaskTaskRunner (a LocalCluster here) and give the same index as an in-process run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.flows.dask import spread_for
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import LocalModeViolation
from assay.stages.index.store import Catalog, VectorStore, load_manifest
from assay.stages.query.retrieve import search
from tests.conftest import FIXTURES


def test_spread_specs_are_checked() -> None:
    assert spread_for("local:2").workers == 2 and spread_for("local:2").shares == 4
    assert spread_for("tcp://127.0.0.1:8786").workers is None
    with pytest.raises(ValueError, match="ASSAY_DASK"):
        spread_for("local:zero")
    with pytest.raises(LocalModeViolation):
        spread_for("tcp://10.1.2.3:8786")  # the workers read the code: local mode keeps it on this machine


def test_direct_orchestration_cannot_spread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="ASSAY_ORCHESTRATION=direct"):
        run_index(str(tmp_path), Settings(dask="local:1"))


@pytest.mark.prefect
def test_an_index_spread_over_a_local_dask_cluster_equals_the_in_process_one(
        prefect_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here, spread = tmp_path / "here", tmp_path / "spread"
    for dest in (here, spread):
        shutil.copytree(FIXTURES / "project", dest)
    run_index(str(here))
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "prefect")
    settings = Settings(dask="local:2", store_batch=8)
    report = run_index(str(spread), settings)
    assert report.entities_embedded == report.entities_total > 0 and report.dense_pending == 0

    def index_of(root: Path) -> tuple[set, int, list[str]]:
        ids = {(e.file, e.qualname, e.part) for e in Catalog(root).all()}
        vectors = VectorStore(root, None, load_manifest(root).collection).count()
        top = [c.entity for c in search(root, "retry with exponential backoff", Settings(), k=5).candidates]
        return ids, vectors, top

    assert index_of(spread) == index_of(here)

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        names = {r.name.rsplit("-", 1)[0] for r in client.read_task_runs()}
    assert {"parse-share", "embed-slice"} <= names  # the work went through the runner's tasks

    again = run_index(str(spread), settings)  # incremental: nothing to parse or embed
    assert again.files_parsed == 0 and again.entities_embedded == 0

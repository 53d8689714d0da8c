"""prefect.yaml: every deployment points at a real flow and passes parameters the flow accepts."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml
from prefect import Flow

ROOT = Path(__file__).resolve().parents[1]


def test_deployments_resolve_to_flows_with_matching_parameters() -> None:
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    names = {d["name"] for d in spec["deployments"]}
    assert names == {"scheduled-reindex", "query", "nightly-audit"}
    for dep in spec["deployments"]:
        path, func = dep["entrypoint"].split(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        flow = getattr(module, func)
        assert isinstance(flow, Flow), dep["entrypoint"]
        accepted = set(inspect.signature(flow.fn).parameters)
        assert set(dep.get("parameters", {})) <= accepted, (dep["name"], accepted)
        assert dep["work_pool"]["name"] == "assay-local"
    reindex = next(d for d in spec["deployments"] if d["name"] == "scheduled-reindex")
    assert reindex["schedules"][0]["interval"] > 0

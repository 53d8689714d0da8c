"""prefect.yaml: every deployment points at a real flow and passes parameters the flow accepts."""

from __future__ import annotations

import inspect
from pathlib import Path

import yaml
from prefect import Flow
from prefect.flows import load_flow_from_entrypoint

ROOT = Path(__file__).resolve().parents[1]


def test_deployments_resolve_to_flows_with_matching_parameters() -> None:
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    names = {d["name"] for d in spec["deployments"]}
    assert names == {"scheduled-reindex", "query", "nightly-audit"}
    for dep in spec["deployments"]:
        assert not dep["entrypoint"].endswith(".py"), "a module entrypoint works from a wheel, without the checkout"
        flow = load_flow_from_entrypoint(dep["entrypoint"])  # how `prefect deploy` and workers load it
        assert isinstance(flow, Flow), dep["entrypoint"]
        accepted = set(inspect.signature(flow.fn).parameters)
        assert set(dep.get("parameters", {})) <= accepted, (dep["name"], accepted)
        assert dep["work_pool"]["name"] == "assay-local"
    reindex = next(d for d in spec["deployments"] if d["name"] == "scheduled-reindex")
    assert reindex["schedules"][0]["interval"] > 0


def test_the_direct_path_never_imports_prefect(tmp_path: Path) -> None:
    """Importing Prefect costs ~1.6 s of every start; a direct index and query must not pay it, while the
    flows' public names still hand out real Prefect flows."""
    import subprocess
    import sys

    (tmp_path / "a.py").write_text("def retry_request(url):\n    '''Retry a request.'''\n    return url\n")
    code = (
        "import sys\n"
        "from assay.flows.index import run_index\nfrom assay.flows.query import run_query\n"
        "import assay.flows.cli, assay.flows.audit, assay.flows.evaluate\n"
        f"run_index({str(tmp_path)!r})\nreport = run_query({str(tmp_path)!r}, 'how are requests retried?')\n"
        "assert report.answer.text, report\n"
        "print('prefect' in sys.modules)\n"
        "from assay.flows.index import index_flow\nprint(type(index_flow).__name__)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("PREFECT_API")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**env, "ASSAY_ORCHESTRATION": "direct"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "Flow"]

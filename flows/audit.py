"""The audit flow: load snapshots -> (re-judge) -> distributions, agreement, calibration -> injection baseline -> report."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

from assay.flows import runtime  # noqa: F401

from assay.flows.runtime import Caller, flow_exports, lazy_flow, prefect_call, run_flow
from assay.stages.audit import stats as audit_stats
from assay.stages.audit.charts import calibration_heatmap, reliability_diagram, score_histograms, verdict_bars
from assay.stages.audit.report import render_markdown
from assay.stages.core.config import DATA_DIR, Settings
from assay.stages.core.workspace import resolve_workspace, state_dir
from assay.tasks import audit as t
from assay.tasks.artifacts import publish_markdown


def audit_pipeline(
    workspace: str, settings: Settings, start: date | None = None, end: date | None = None,
    rejudge: str | None = None, labels: str | None = None, baseline_n: int = 50, judge: str | None = None,
    call: Caller = prefect_call,
) -> dict:
    from assay.stages.index.store import require_manifest

    root = resolve_workspace(workspace)
    require_manifest(root)  # its snapshots and baseline come from an index; a folder never indexed gets no `.assay/`
    table = call(t.load, root, start, end)
    rejudged = 0
    if rejudge:
        rejudged = call(t.rejudge, root, table, rejudge, settings)
        table = call(t.load, root, start, end)
    rows = table.to_pylist()
    backends = sorted({r["judge_backend"] for r in rows})
    data: dict = {
        "workspace": str(root), "snapshots": {"passages": len(rows), "queries": len({r["query_id"] for r in rows}),
                                              "unreadable": audit_stats.unreadable_snapshots(table)},
        "distributions": audit_stats.distributions(table), "rejudged_queries": rejudged,
    }
    if rejudge and len(backends) > 1:
        original = max((b for b in backends if b != rejudge), key=lambda b: sum(r["judge_backend"] == b for r in rows))
        data["agreement"] = audit_stats.agreement(table, original, rejudge)
    used = judge or settings.judge
    if used == "none":  # nothing is scored, so there is nothing to calibrate or guard
        data["calibration"] = {"judge": "none", "labelled": 0, "scored": 0, "grid": [], "best": None}
        data["injection_baseline"] = {"judge": "none", "functions": 0, "limit": audit_stats.INJECTION_BASELINE_MAX,
                                      "max": 0.0, "mean": 0.0, "offenders": [], "passed": True, "judge_failure": ""}
    else:
        data["calibration"] = call(t.calibrate, Path(labels) if labels else DATA_DIR / "calibration.jsonl", used, settings)
        data["injection_baseline"] = call(t.baseline, root, used, baseline_n, settings)
    folder = state_dir(root) / "audits" / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    folder.mkdir(parents=True, exist_ok=True)
    charts: dict[str, str] = {}
    if rows:
        charts["score distributions"] = score_histograms(data["distributions"], folder / "scores.png").name
        charts["verdicts"] = verdict_bars(data["distributions"], folder / "verdicts.png").name
    if data["calibration"]["grid"]:
        charts["calibration"] = calibration_heatmap(data["calibration"]["grid"], folder / "calibration.png").name
    if data["calibration"].get("reliability"):
        curve = {data["calibration"]["judge"]: data["calibration"]["reliability"]}
        charts["reliability"] = reliability_diagram(curve, folder / "reliability.png").name
    markdown = render_markdown(data, charts)
    (folder / "audit.md").write_text(markdown)
    data["report_path"] = str(folder / "audit.md")
    data["passed"] = data["injection_baseline"]["passed"]
    publish_markdown("judgment-audit", markdown, "Assay judgment audit")
    return data


@lazy_flow("assay-audit")
def _audit_flow(
    workspace: str, rejudge: str | None = None, labels: str | None = None, baseline_n: int = 50,
    judge: str | None = None, start: date | None = None, end: date | None = None, settings: Settings | None = None,
) -> dict:
    """Audit a workspace's judgment snapshots; `passed` is False when the injection baseline fails."""
    return audit_pipeline(workspace, settings or Settings(), start, end, rejudge, labels, baseline_n, judge)


def run_audit(workspace: str, settings: Settings | None = None, **options) -> dict:
    def body(workspace: str, settings: Settings, call: Caller, **kw) -> dict:
        return audit_pipeline(workspace, settings, call=call, **kw)

    return run_flow(_audit_flow, body, workspace, settings=settings or Settings(), **options)


__getattr__ = flow_exports(audit_flow=_audit_flow)  # the Prefect flow, built on first access (prefect.yaml)

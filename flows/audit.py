"""The audit flow: load snapshots -> (re-judge) -> distributions, agreement, calibration -> injection baseline -> report."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, timezone
from pathlib import Path

from assay.flows import runtime  # noqa: F401

from assay.flows.query import check_local_mode
from assay.flows.runtime import Caller, flow_exports, lazy_flow, prefect_call, run_flow
from assay.stages.audit import stats as audit_stats
from assay.stages.audit.charts import calibration_heatmap, reliability_diagram, score_histograms, verdict_bars
from assay.stages.audit.report import render_markdown
from assay.stages.core.config import DATA_DIR, Settings
from assay.stages.core.llm_clients import LLMError, timeout_breaker
from assay.stages.core.workspace import resolve_workspace, state_dir
from assay.tasks import audit as t
from assay.tasks.artifacts import publish_markdown


def check_judges_local_mode(settings: Settings, judges: Iterable[str | None]) -> None:
    """Local mode binds a batch job's judges (audit, eval) as it binds `ask`'s: a cloud judge, or an Ollama / System One
    server off loopback, is refused with `ask`'s one line before any passage is sent. These jobs write no answer and
    run no guard, so the settings' writer and guard are left out of the check."""
    for backend in judges:
        if backend == "cloud" and settings.mode == "local":  # ask's line names ask's --judge; a job's judge is its own
            raise LLMError("local mode: the cloud judge is not allowed for this job; choose local, ollama or systemone, "
                           "or set ASSAY_MODE=hybrid")
        if backend:
            check_local_mode(settings.model_copy(update={"judge": backend, "synth": "extractive", "guard": "local"}))


def audit_pipeline(
    workspace: str, settings: Settings, start: date | None = None, end: date | None = None,
    rejudge: str | None = None, labels: str | None = None, baseline_n: int = 50, judge: str | None = None,
    call: Caller = prefect_call,
) -> dict:
    from assay.stages.index.store import require_manifest

    used = judge or settings.judge
    if start and end and start > end:
        raise ValueError(f"the first day {start} (--since, or a deployment's start) is after the last {end} (--until, or "
                         "end): no day lies between them; swap the two days")
    check_judges_local_mode(settings, [rejudge, used])  # before a snapshot is read or a passage sent
    if labels:  # a bad or empty labels file is named before any passage is re-judged
        audit_stats.load_labels(Path(labels))
    root = resolve_workspace(workspace)
    require_manifest(root)  # its snapshots and baseline come from an index; a folder never indexed gets no `.assay/`
    # ask's breaker, around the whole job: a hung server is waited on once, not once per batch of every stored query
    # (then again by the calibration and the baseline); its later calls fail at once and their reports say so
    with timeout_breaker("audit"):
        data = _judged(root, settings, start, end, rejudge, labels, baseline_n, used, call)
    return _published(root, data)


def _judged(
    root: Path, settings: Settings, start: date | None, end: date | None, rejudge: str | None, labels: str | None,
    baseline_n: int, used: str, call: Caller,
) -> dict:
    """The audit's figures: distributions, the re-judge's agreement, calibration and the injection baseline."""
    table = call(t.load, root, start, end)
    summary: dict | None = None
    if rejudge:
        audit_stats.check_rejudge(table, rejudge, ranged=bool(start or end))
        summary = call(t.rejudge, root, table, rejudge, settings)
        table = call(t.load, root, start, end)
    rows = table.to_pylist()
    data: dict = {  # the header counts what the distributions table counts: passages a judge scored
        "workspace": str(root), "snapshots": {**audit_stats.snapshot_counts(table),
                                              "unreadable": audit_stats.unreadable_snapshots(table),
                                              "ranged": bool(start or end)},
        "distributions": audit_stats.distributions(table), "rejudged_queries": summary["queries"] if summary else 0,
    }
    if rejudge and summary:
        data["rejudge"] = summary
        data["agreement"] = audit_stats.agreement(table, _original_backend(rows, rejudge), rejudge)
    if used == "none":  # nothing is scored, so there is nothing to calibrate or guard
        data["calibration"] = {"judge": "none", "labelled": 0, "scored": 0, "grid": [], "best": None}
        data["injection_baseline"] = {"judge": "none", "functions": 0, "limit": audit_stats.INJECTION_BASELINE_MAX,
                                      "max": 0.0, "mean": 0.0, "offenders": [], "passed": True, "judge_failure": ""}
    else:
        labelled = Path(labels) if labels else DATA_DIR / "calibration.jsonl"
        data["calibration"] = call(t.calibrate, root, labelled, used, settings)
        data["injection_baseline"] = call(t.baseline, root, used, baseline_n, settings)
    return data


def _published(root: Path, data: dict) -> dict:
    """Charts and the markdown report written under `.assay/audits/<time>/`; `passed` set from the baseline (one the
    judge could not measure fails nothing: its report says the judge failed)."""
    folder = state_dir(root) / "audits" / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    folder.mkdir(parents=True, exist_ok=True)
    charts: dict[str, str] = {}
    if data["snapshots"]["passages"]:
        charts["score distributions"] = score_histograms(data["distributions"], folder / "scores.png").name
        charts["verdicts"] = verdict_bars(data["distributions"], folder / "verdicts.png").name
    if data["calibration"]["grid"]:
        charts["calibration"] = calibration_heatmap(data["calibration"]["grid"], folder / "calibration.png").name
    if data["calibration"].get("reliability"):
        curve = {data["calibration"]["judge"]: data["calibration"]["reliability"]}
        charts["reliability"] = reliability_diagram(curve, folder / "reliability.png").name
    markdown = render_markdown(data, charts)
    (folder / "audit.md").write_text(markdown, encoding="utf-8")
    data["report_path"] = str(folder / "audit.md")
    data["passed"] = data["injection_baseline"]["passed"] is not False  # None: not measured, so nothing failed
    publish_markdown("judgment-audit", markdown, "Assay judgment audit")
    return data


def _original_backend(rows: list[dict], rejudge: str) -> str:
    """The judge the re-judge is compared with: the backend, other than the re-judge's, that judged most passages
    (`check_rejudge` made sure there is one)."""
    others = [r["judge_backend"] for r in rows if r["judge_backend"] != rejudge]
    return max(sorted(set(others)), key=others.count)


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

"""Sweep 5 (flows): the `gpu` slot's wait and time-out, snapshots of another schema, fail-open rows in the audit,
deployment parameters, the scheduled re-index in status, the heartbeat opt-in, and the judge suite's labels note."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assay.stages.audit import stats as audit_stats
from assay.stages.audit.report import render_markdown
from assay.stages.audit.snapshots import SNAPSHOT_SCHEMA, judgments_dir
from tests.test_audit import row

# ---- 1: the `gpu` slot ---------------------------------------------------------------------------------------------


def _hold_file_lock(path: Path, seconds: float) -> subprocess.Popen:
    """Another process holding the gpu lock file (as a running Assay would)."""
    code = ("import sys, time\nfrom filelock import FileLock\nl = FileLock(sys.argv[1]); l.acquire()\n"
            "print('held', flush=True); time.sleep(float(sys.argv[2]))")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_held_gpu_lock_is_announced_then_fails_in_one_line_naming_the_slot_and_the_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from assay.tasks import gpu

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(gpu, "WAIT_NOTE_AFTER", 0.2)
    (tmp_path / "home").mkdir()
    holder = _hold_file_lock(tmp_path / "home" / "gpu.lock", 30)
    try:
        with pytest.raises(gpu.GpuSlotTimeout) as caught:
            with gpu.gpu_slot(1.5):
                pass
    finally:
        holder.kill()
        holder.wait()
    msg = str(caught.value)
    assert "\n" not in msg and "`gpu` slot" in msg and str(tmp_path / "home" / "gpu.lock") in msg
    assert "ASSAY_LLM_TIMEOUT" in msg and "killed run" in msg
    err = capsys.readouterr().err
    assert err.count("waiting for the `gpu` slot") == 1 and "up to 2 s" in err
    with gpu.gpu_slot(5) as held:  # the holder is gone: a killed process frees the lock at once
        assert held == "filelock"


def test_the_index_wait_names_no_setting_and_a_free_slot_prints_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from assay.tasks import gpu

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path))
    monkeypatch.setattr(gpu, "WAIT_NOTE_AFTER", 0.2)
    monkeypatch.setattr(gpu, "INDEX_WAIT", 0.5)
    with gpu.gpu_slot():
        time.sleep(0.4)  # held past the note's delay: the note is about waiting, not holding
    assert capsys.readouterr().err == ""
    holder = _hold_file_lock(tmp_path / "gpu.lock", 30)
    try:
        with pytest.raises(gpu.GpuSlotTimeout, match="the index's wait is fixed") as caught:
            with gpu.gpu_slot():
                pass
    finally:
        holder.kill()
        holder.wait()
    assert "ASSAY_LLM_TIMEOUT" not in str(caught.value)


@pytest.mark.prefect
def test_a_held_prefect_gpu_slot_times_out_in_one_line_with_the_fix(prefect_server, capsys) -> None:
    from prefect import flow
    from prefect.concurrency.sync import concurrency

    from assay.tasks import gpu

    gpu.ensure_gpu_limit()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with concurrency(gpu.GPU_LIMIT, occupy=1, strict=True):
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(30)

    @flow(name="gpu-slot-probe")
    def probe() -> None:
        with gpu.gpu_slot(4):
            pass

    try:
        with pytest.raises(gpu.GpuSlotTimeout) as caught:
            probe()
    finally:
        release.set()
        holder.join(30)
    msg = str(caught.value)
    assert "\n" not in msg and "Prefect concurrency limit `gpu`" in msg and "ASSAY_LLM_TIMEOUT" in msg
    assert "prefect gcl inspect gpu" in msg and "lease" in msg
    assert "waiting for the Prefect concurrency limit `gpu`" in capsys.readouterr().err
    probe()  # released: the slot is free again


def test_the_prefect_slot_asks_for_the_shortest_lease_and_keeps_running_when_renewal_fails(monkeypatch) -> None:
    """A killed run's slot lapses with its lease: 60 s (Prefect's minimum, renewed while held), not the 300 s default
    that outlasted the 240 s wait."""
    import contextlib

    import prefect.concurrency.sync as sync

    from assay.tasks import gpu

    seen: dict = {}

    @contextlib.contextmanager
    def fake(*args, **kwargs):
        seen.update(kwargs)
        yield

    monkeypatch.setattr(sync, "concurrency", fake)
    monkeypatch.setattr(gpu, "ensure_gpu_limit", lambda: None)
    with gpu.prefect_slot(10):
        pass
    assert seen["lease_duration"] == 60 and seen["raise_on_lease_renewal_failure"] is False


# ---- 2, 3, 7: the audit's snapshots --------------------------------------------------------------------------------


def _write(folder: Path, name: str, table: pa.Table) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / name)
    return folder / name


def _snapshots(tmp_path: Path, rows: list[dict]) -> Path:
    folder = tmp_path / "judgments" / "date=2026-11-01"
    _write(folder, "000000000001-q1.parquet", pa.Table.from_pylist(rows, schema=SNAPSHOT_SCHEMA))
    return folder


def test_a_snapshot_of_another_schema_is_left_out_and_named_not_fatal(tmp_path: Path) -> None:
    good = [row("q1", "a", "local", "include", 0.9, 0.8), row("q1", "b", "local", "drop", 0.1, 0.2)]
    folder = _snapshots(tmp_path, good)
    wrong = _write(folder, "000000000003-wrongtype.parquet",
                   pa.table({"relevance": ["x", "y"], "query_id": ["q", "q"]}))
    foreign = _write(folder, "000000000002-other.parquet", pa.table({"a": [1, 2]}))
    # every key column present, but a score stored as text: the cast is what fails
    typed = dict(good[0], relevance=None)
    bad_cast = pa.Table.from_pylist([typed], schema=SNAPSHOT_SCHEMA).set_column(
        SNAPSHOT_SCHEMA.get_field_index("relevance"), "relevance", pa.array(["high"]))
    cast = _write(folder, "000000000004-q9.parquet", bad_cast)
    table = audit_stats.load_snapshots(tmp_path / "judgments")
    assert table.num_rows == 2
    assert set(audit_stats.unreadable_snapshots(table)) == {str(wrong), str(foreign), str(cast)}
    counts = audit_stats.snapshot_counts(table)
    assert (counts["passages"], counts["queries"]) == (2, 1)


def test_a_file_whose_values_fail_the_cast_is_found_by_reading_each_file(tmp_path: Path, monkeypatch) -> None:
    """Past the footer check (stubbed to pass every file, as before the fix), the one dataset read fails: each file is
    then read alone, so the bad one is named and the others are still audited."""
    folder = _snapshots(tmp_path, [row("q1", "a", "local", "include", 0.9, 0.8)])
    _write(folder, "000000000005-q2.parquet",
           pa.Table.from_pylist([row("q2", "b", "cloud", "drop", 0.2, 0.1)], schema=SNAPSHOT_SCHEMA))
    _write(folder, "000000000006-bad.parquet", pa.table({"query_id": ["q"], "relevance": ["y"]}))
    monkeypatch.setattr(audit_stats, "_readable", lambda p: True)
    table = audit_stats.load_snapshots(tmp_path / "judgments")
    assert sorted(table.column("query_id").to_pylist()) == ["q1", "q2"]
    assert [Path(p).name for p in audit_stats.unreadable_snapshots(table)] == ["000000000006-bad.parquet"]


def test_fail_open_rows_are_not_counted_as_the_judges_verdicts(tmp_path: Path) -> None:
    scored = [row("q1", f"p{i}", "ollama", "include", 0.8, 0.7) for i in range(3)]
    unscored = [dict(row("q2", f"p{i}", "ollama", "drop" if i else "include", 0, 0), fail_open=True, relevance=None,
                     evidence=None, contradicts=None, injection=None) for i in range(4)]
    table = pa.Table.from_pylist(scored + unscored, schema=SNAPSHOT_SCHEMA)
    dist = audit_stats.distributions(table)
    assert dist["ollama/-"]["passages"] == 3 and dist["ollama/-"]["verdicts"] == {"include": 3}
    counts = audit_stats.snapshot_counts(table)
    assert counts == {"passages": 3, "queries": 1, "unscored": {"ollama/-": 4}}
    text = render_markdown({"workspace": "w", "snapshots": {**counts, "unreadable": []}, "distributions": dist,
                            "calibration": {"judge": "none", "labelled": 0, "grid": [], "best": None},
                            "injection_baseline": {"judge": "none", "functions": 0, "limit": 0.15, "max": 0.0,
                                                   "mean": 0.0, "offenders": [], "passed": True}}, {})
    assert "3 judged passages over 1 queries." in text
    assert "Not counted as judged: 4 passage(s) the ollama/- judge failed to score" in text
    assert "| ollama/- | 3 |" in text


def test_audit_header_adds_up_with_its_table_over_a_foreign_file(project: Path) -> None:
    from typer.testing import CliRunner

    from assay.flows.cli import app
    from assay.flows.index import run_index
    from assay.flows.query import run_query
    from assay.stages.core.config import Settings

    run_index(str(project))
    run_query(str(project), "how does retry_call back off?", Settings(judge="none"))
    day = next(judgments_dir(project).glob("date=*"))
    foreign = _write(day, "000000000002-other.parquet", pa.table({"a": [1, 2]}))
    wrong = _write(day, "000000000003-wrongtype.parquet", pa.table({"relevance": ["x", "y"], "query_id": ["q", "q"]}))
    out = CliRunner().invoke(app, ["audit", str(project), "--json"], env={"ASSAY_ORCHESTRATION": "direct"})
    assert out.exit_code == 0, out.output
    import json

    data = json.loads(out.stdout)
    assert data["snapshots"]["queries"] == 1
    assert data["snapshots"]["passages"] == sum(v["passages"] for v in data["distributions"].values()) > 0
    assert set(data["snapshots"]["unreadable"]) == {str(foreign), str(wrong)}


# ---- 4, 5: deployments -------------------------------------------------------------------------------------------


def test_deployment_parameters_are_converted_or_refused_in_one_line() -> None:
    from assay.flows.audit import _audit_flow
    from assay.flows.index import _deployed_index_flow
    from assay.flows.runtime import deployment_parameters
    from assay.stages.core.config import Settings

    got = deployment_parameters(_audit_flow.fn, {"workspace": "/w", "start": "2030-01-01", "end": None,
                                                 "settings": {"judge": "none"}})
    assert got["start"] == date(2030, 1, 1) and got["end"] is None
    assert isinstance(got["settings"], Settings) and got["settings"].judge == "none"
    for bad, says in (({"start": "soon"}, "deployment parameter start: .*YYYY-MM-DD"),
                      ({"settings": {"judg": "none"}}, "no such setting 'judg'"),
                      ({"settings": {"judge": "nope"}}, r"settings\.judge: .*got 'nope'"),
                      ({"settings": "none"}, "settings: must be an object"),
                      ({"baseline_n": "many"}, "deployment parameter baseline_n")):
        with pytest.raises(ValueError, match=says) as caught:
            deployment_parameters(_audit_flow.fn, bad)
        assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="deployment parameter rebuild"):
        deployment_parameters(_deployed_index_flow.fn, {"workspace": "/w", "rebuild": "perhaps"})


def test_the_exported_deployment_flow_converts_before_the_body_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.flows.audit as audit

    seen: dict = {}
    monkeypatch.setattr(audit, "audit_pipeline", lambda workspace, settings, start, end, *a: seen.update(
        start=start, end=end, judge=settings.judge) or {})
    monkeypatch.setattr(audit, "__getattr__", audit.flow_exports(audit_flow=audit._audit_flow))  # a fresh build
    deployed = audit.audit_flow
    assert deployed.name == "assay-audit" and not deployed.should_validate_parameters
    deployed.fn("/w", start="2030-01-01", end="2030-02-01", settings={"judge": "none"})
    assert seen == {"start": date(2030, 1, 1), "end": date(2030, 2, 1), "judge": "none"}
    with pytest.raises(ValueError, match="deployment parameter end"):
        deployed.fn("/w", end="2020-13-01")


def test_a_scheduled_reindex_is_tracked_in_status_and_registered(project: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The deployment entry's own wrapping (the flow body stubbed to the direct pipeline): status and registry."""
    from types import SimpleNamespace

    import assay.flows.index as index
    from assay.flows.runtime import direct_call
    from assay.stages.core import registry
    from assay.stages.core.progress import read_status

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    index.run_index(str(project))
    first = read_status(project)
    (project / "extra.py").write_text("def added_later():\n    '''A new function.'''\n    return 1\n")
    registered: list[Path] = []
    monkeypatch.setattr(registry, "register", registered.append)
    monkeypatch.setattr(index, "_index_flow", SimpleNamespace(
        fn=lambda workspace, rebuild, settings: index.index_pipeline(workspace, settings, rebuild, direct_call)))
    report = index._deployed_index_flow.fn(str(project))
    status = read_status(project)
    assert status["state"] == "done" and status["started"] != first["started"]
    assert status["summary"]["entities"] == report.entities_total > first["summary"]["entities"]
    assert registered == [project.resolve()]


def test_a_failed_scheduled_reindex_reads_failed_in_status(project: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import assay.flows.index as index
    from assay.stages.core.progress import read_status

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))

    def broken(workspace, rebuild, settings):
        raise RuntimeError("the embedder went away")

    monkeypatch.setattr(index, "_index_flow", SimpleNamespace(fn=broken))
    with pytest.raises(RuntimeError):
        index._deployed_index_flow.fn(str(project))
    status = read_status(project)
    assert status["state"] == "failed" and "the embedder went away" in status["last_error"]


@pytest.mark.prefect
def test_deployment_flows_run_on_prefect_with_json_parameters(prefect_server, project: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """As a worker runs them: the exported flows, with the parameters a deployment run passes (JSON values)."""
    import assay.flows.audit as audit
    import assay.flows.index as index
    from assay.stages.core.progress import read_status

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    report = index.index_flow(workspace=str(project), rebuild="false")
    status = read_status(project)
    assert status["state"] == "done" and status["summary"]["entities"] == report.entities_total
    data = audit.audit_flow(workspace=str(project), start="2030-01-01", settings={"judge": "none"})
    assert data["snapshots"]["passages"] == 0 and data["snapshots"]["ranged"]
    with pytest.raises(ValueError, match="deployment parameter end: .*YYYY-MM-DD"):
        audit.audit_flow(workspace=str(project), end="yesterday", settings={"judge": "none"})


# ---- 6: heartbeats ---------------------------------------------------------------------------------------------


def test_heartbeats_stay_off_unless_the_user_asks_for_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off by default (~1 s a run, and the server marks nothing Crashed by them alone); a user who set up Prefect's
    zombie-flow automation sets PREFECT_FLOWS_HEARTBEAT_FREQUENCY, and then a killed run can be marked Crashed."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY

    from assay.flows.runtime import quiet_prefect

    monkeypatch.delenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", raising=False)
    with quiet_prefect():
        assert PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() is None
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "45")
    with quiet_prefect():
        assert PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() is not None


# ---- wheel 9: the judge suite's labels ---------------------------------------------------------------------------


def test_missing_judge_labels_say_they_ship_only_in_a_checkout_and_how_to_pass_them(tmp_path: Path) -> None:
    from assay.stages.evaluate import judge_calibration as jc

    missing = jc.render_section(jc.evaluate(tmp_path / "absent", {}))
    assert "does not exist" in missing and "holds no" not in missing
    assert "only in a checkout" in missing and "--suite judge --questions DIR" in missing
    (tmp_path / "empty").mkdir()
    empty = jc.render_section(jc.evaluate(tmp_path / "empty", {}))
    assert "holds no <name>.jsonl" in empty and "does not exist" not in empty

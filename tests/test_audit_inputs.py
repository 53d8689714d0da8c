"""`assay audit` on bad or empty inputs: a failed re-judge is not reported as agreement (nor stored), thresholds
files stay in range, labels files name the file and row, and empty or impossible ranges say so in one line."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from assay.flows.audit import run_audit
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.audit import stats as audit_stats
from assay.stages.audit.report import render_markdown
from assay.stages.audit.snapshots import SNAPSHOT_SCHEMA, judgments_dir
from assay.stages.core.artifacts import Judgment
from assay.stages.core.config import Settings
from assay.stages.query.threshold import default_thresholds
from tests.conftest import judged_project
from tests.fakes import FakeOllama
from tests.test_audit import row

runner = CliRunner()
NO_JUDGE = {"ASSAY_JUDGE": "none"}  # calibration and the injection baseline are skipped: these tests need neither


@pytest.fixture(scope="module")
def asked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An indexed project with two answers judged by `none` (copied per test that writes re-judgments)."""
    return judged_project(tmp_path_factory, "audit-inputs", ("how does retry_call back off?", "merge cookies"))


@pytest.fixture()
def workspace(asked: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(asked, dest)
    return dest


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rejudged_files(root: Path, backend: str) -> list[Path]:
    return sorted(judgments_dir(root).rglob(f"*-rejudge-{backend}.parquet"))


# ---- 1. a re-judge whose judge failed


def test_a_rejudge_with_an_unreachable_judge_reports_no_agreement_and_stores_nothing(workspace: Path) -> None:
    settings = Settings(judge="none", ollama_host=f"http://127.0.0.1:{_closed_port()}", llm_retries=0, llm_timeout=3)
    data = run_audit(str(workspace), settings, rejudge="ollama")
    assert _rejudged_files(workspace, "ollama") == []  # fail-open rows are not ollama's judgments
    agree = data["agreement"]
    assert agree["pairs"] == 0 and agree["agreement"] is None and agree["kappa"] is None and not agree["meets_bar"]
    assert data["rejudge"]["stored"] == 0 and data["rejudge"]["passages"] > 0 and "not reachable" in data["rejudge"]["failure"]
    assert data["rejudged_queries"] == 0
    text = Path(data["report_path"]).read_text()
    assert "verdict agreement -" in text and ": met" not in text and "not reachable" in text
    assert f"ollama scored 0 of the {data['rejudge']['passages']} passages sent" in text


def test_a_rejudge_stores_only_the_passages_its_judge_scored(workspace: Path) -> None:
    with FakeOllama(mode="partial") as ollama:  # scores half of each batch
        data = run_audit(str(workspace), Settings(judge="none", ollama_host=ollama.url), rejudge="ollama")
    summary = data["rejudge"]
    stored = sum(pq.read_metadata(p).num_rows for p in _rejudged_files(workspace, "ollama"))
    assert 0 < summary["stored"] < summary["passages"] and stored == summary["stored"]
    table = pq.read_table(_rejudged_files(workspace, "ollama")).to_pylist()
    assert all(r["relevance"] is not None for r in table)
    assert data["agreement"]["pairs"] == stored and data["agreement"]["agreement"] is not None


def test_agreement_and_pending_leave_out_failed_rows_but_keep_judge_none() -> None:
    failed = [dict(row("q1", p, "ollama", "include", 0, 0), fail_open=True, relevance=None) for p in "ab"]
    rows = [dict(row("q1", p, "none", "include", 0, 0), relevance=None) for p in "ab"] + failed
    table = pa.Table.from_pylist(rows, schema=SNAPSHOT_SCHEMA)
    agree = audit_stats.agreement(table, "none", "ollama")
    assert agree["pairs"] == 0 and agree["agreement"] is None and agree["kappa"] is None and not agree["meets_bar"]
    assert agree["unscored"] == {"none": 0, "ollama": 2} and "ollama failed to score 2" in agree["reason"]
    originals = table.filter(pa.array([r["judge_backend"] == "none" for r in rows]))
    assert set(audit_stats.rejudge_pending(table, originals, "ollama")) == {"q1"}  # failed rows are no judgment
    scored = table.to_pylist()[:3] + [row("q1", "b", "ollama", "drop", 0.1, 0.1)]
    agree = audit_stats.agreement(pa.Table.from_pylist(scored, schema=SNAPSHOT_SCHEMA), "none", "ollama")
    assert agree["pairs"] == 1 and agree["agreement"] == 0.0  # only passage b: none keeps it, ollama drops it


# ---- 6. thresholds in range


@pytest.mark.parametrize(("text", "words"), [
    ('{"injection_max": -1}', "injection_max: must be between 0 and 1 (got -1)"),
    ('{"relevance_min": 1.5}', "relevance_min: must be between 0 and 1 (got 1.5)"),
    ('{"relevance_min": NaN}', "relevance_min: must be between 0 and 1 (got nan)"),
    ('{"ollama": {"evidence_min": Infinity}}', "ollama.evidence_min: must be between 0 and 1 (got inf)"),
    ('{"contradicts_min": true}', "contradicts_min: must be a number (got true)"),
    ('{"answerable_min": "2"}', "answerable_min: must be between 0 and 1 (got '2')"),
    ('{"top_k": 0}', "top_k: must be a whole number from 1 to 1000 (got 0)"),
])
def test_threshold_values_out_of_range_are_a_one_line_error_naming_the_key(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "th.json"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        default_thresholds("local", str(path))
    message = str(info.value)
    assert message.startswith(f"ASSAY_THRESHOLDS ({path}): {words}") and "\n" not in message


def test_threshold_bounds_themselves_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "th.json"
    path.write_text('{"relevance_min": 0, "injection_max": 1, "ollama": {"evidence_min": 1.0}}')
    th = default_thresholds("ollama", str(path), 5)
    assert (th.relevance_min, th.injection_max, th.evidence_min) == (0.0, 1.0, 1.0)


def test_ask_and_audit_refuse_an_out_of_range_thresholds_file(asked: Path, tmp_path: Path) -> None:
    path = tmp_path / "neg.json"
    path.write_text('{"injection_max": -1}')
    env = {"ASSAY_THRESHOLDS": str(path)}
    ask = runner.invoke(app, ["ask", "how does retry_call back off?", str(asked)], env=env)
    assert ask.exit_code == 2 and ask.output.strip() == (
        f"error: ASSAY_THRESHOLDS ({path}): injection_max: must be between 0 and 1 (got -1); judge scores lie in [0, 1]")
    audit = runner.invoke(app, ["audit", str(asked), "--baseline", "1"], env=env)
    assert audit.exit_code == 2 and "injection_max: must be between 0 and 1" in audit.output


# ---- 7, 8. labels files


@pytest.mark.parametrize(("name", "content"), [("empty.jsonl", ""), ("blank.jsonl", "  \n\n"),
                                                ("header.csv", "question,relevant,body\n")])
def test_a_labels_file_with_no_rows_is_an_error_not_a_best_threshold(asked: Path, tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    before = set((asked / ".assay").rglob("*"))
    result = runner.invoke(app, ["audit", str(asked), "--labels", str(path), "--baseline", "1"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (f"error: labels file {path} holds no labelled passages; each row needs question, "
                                     "relevant (true or false) and the passage (file, entity, body...)")
    assert set((asked / ".assay").rglob("*")) == before  # no report, no calibration.png


@pytest.mark.parametrize(("name", "content", "words"), [
    ("latin1.jsonl", b'\xff\xfe{"question": "x"}\n', "labels file {path}: not UTF-8 text (byte 0xff at offset 0)"),
    ("badline.jsonl", b'{"question": "q", "relevant": true, "body": "x"}\n\n{"question": "q", "relevant": true, '
     b'"start_line": "abc"}\n', '{path} line 3: start_line must be a line number, a whole number from 1 (got "abc")'),
    ("maybe.jsonl", b'{"question": "q", "relevant": "maybe"}\n', '{path} line 1: relevant must be true or false (got "maybe")'),
    ("norel.jsonl", b'{"question": "q", "body": "x"}\n', "{path} line 1: relevant must be true or false (got null)"),
    ("array.jsonl", b"[1, 2]\n", "{path} line 1: not a JSON object"),
    ("bad.csv", b"question,relevant,end_line\nq,yes,3\nq,no,-2\n", '{path} line 3: end_line must be a line number'),
    ("cand.jsonl", b'{"question": "q", "relevant": 1, "candidate": {"id": "a"}}\n', "{path} line 1: candidate.file: Field required"),
])
def test_labels_file_errors_name_the_file_and_the_row(tmp_path: Path, name: str, content: bytes, words: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        audit_stats.load_labels(path)
    assert str(info.value).startswith(words.format(path=path)) and "\n" not in str(info.value)


def test_labels_files_that_cannot_be_read_say_so_with_the_file(tmp_path: Path) -> None:
    for path, reason in ((tmp_path / "missing.jsonl", "No such file or directory"), (tmp_path, "Is a directory")):
        with pytest.raises(ValueError, match=rf"^labels file {path}: cannot read it \({reason}\)"):
            audit_stats.load_labels(path)


def test_labels_accept_the_usual_truth_values(tmp_path: Path) -> None:
    path = tmp_path / "ok.csv"
    path.write_text("question,relevant,body\nq,TRUE,a\nq,0,b\nq,yes,c\nq,No,d\n")
    assert [it.relevant for it in audit_stats.load_labels(path)] == [True, False, True, False]


def test_a_calibration_whose_judge_scored_nothing_names_no_best_threshold(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text('{"question": "q", "relevant": true, "body": "x"}\n')
    items = audit_stats.load_labels(path)
    result = audit_stats.calibrate(items, {"q": Judgment(backend="ollama", scores={})}, current=(0.4, 0.4))
    assert result["best"] is None and result["grid"] == [] and result["scored"] == 0
    result.update({"judge": "ollama", "judge_failure": "Ollama is not reachable"})
    data = {"workspace": "w", "snapshots": {"passages": 0, "queries": 0}, "distributions": {}, "calibration": result,
            "injection_baseline": {"passed": True, "judge": "ollama", "functions": 0, "max": 0.0, "mean": 0.0,
                                   "limit": 0.15, "offenders": []}}
    text = render_markdown(data, {})
    assert "scored none of the labelled passages (Ollama is not reachable): calibration skipped" in text
    assert "Best:" not in text


# ---- 9, 14. nothing to compare, nothing stored, an impossible range


def test_rejudge_with_the_backend_that_made_every_judgment_says_so(asked: Path) -> None:
    before = sorted(judgments_dir(asked).rglob("*.parquet"))
    result = runner.invoke(app, ["audit", str(asked), "--rejudge", "none"], env=NO_JUDGE)
    assert result.exit_code == 2
    assert result.output.strip() == ("error: --rejudge none: every stored judgment is already none's, so there is "
                                     "nothing to compare; re-judge with another backend (local, ollama, cloud, systemone)")
    assert sorted(judgments_dir(asked).rglob("*.parquet")) == before


def test_since_after_until_is_an_error(asked: Path) -> None:
    result = runner.invoke(app, ["audit", str(asked), "--since", "2027-01-01", "--until", "2026-01-01"], env=NO_JUDGE)
    assert result.exit_code == 2
    assert result.output.strip() == ("error: the first day 2027-01-01 (--since, or a deployment's start) is after the last "
                                     "2026-01-01 (--until, or end): no day lies between them; swap the two days")


def test_an_audit_with_no_judgments_says_to_ask_first(project: Path) -> None:
    run_index(str(project))
    plain = runner.invoke(app, ["audit", str(project)], env=NO_JUDGE)
    assert plain.exit_code == 0, plain.output
    assert "No judgments stored yet: each `assay ask` records one" in plain.stdout
    assert "## Score distributions" not in plain.stdout
    rejudge = runner.invoke(app, ["audit", str(project), "--rejudge", "local"], env=NO_JUDGE)
    assert rejudge.exit_code == 2 and rejudge.output.strip().startswith(
        "error: --rejudge local: no judgments stored yet; each `assay ask` records one")


def test_an_empty_date_range_says_it_is_the_range(asked: Path) -> None:
    result = runner.invoke(app, ["audit", str(asked), "--since", "2000-01-01", "--until", "2000-01-02"], env=NO_JUDGE)
    assert result.exit_code == 0 and "No judgments stored in that date range" in result.stdout

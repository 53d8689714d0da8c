"""An audit on a hung or failing judge, and what reports show of it: the audit waits out one timeout, not one per
stored query; a judge that scored nothing neither fails the injection baseline nor claims coverage; a host's
user:password is never printed; `assay usage` times only the calls that were answered."""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.audit import run_audit
from assay.flows.cli import app
from assay.stages.audit import rejudge as audit_jobs
from assay.stages.audit.report import render_markdown
from assay.stages.core.artifacts import Candidate, Judgment, PassageScores, RankedPassage, Selection, Thresholds
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import (
    ChatResult, LLMError, LocalModeViolation, OllamaBackend, require_loopback, sent_calls, shown_url,
)
from assay.stages.index.store import Catalog
from assay.stages.query.ledger import record_calls, render, summary
from assay.stages.query.report import status_of
from tests.conftest import judged_project
from tests.fakes import FakeOllama, SilentServer

runner = CliRunner()
SECRET = "hunter2pass"


@pytest.fixture(scope="module")
def asked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An indexed project with three answers judged by `none` (copied per test: audits write into it)."""
    return judged_project(tmp_path_factory, "audit-breaker", ("how does retry_call back off?", "merge cookies", "where is the session sent?"))


@pytest.fixture()
def workspace(asked: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(asked, dest)
    return dest


@pytest.fixture()
def labels(tmp_path: Path) -> Path:
    """Three labelled questions: an unprotected calibration would wait out one timeout for each."""
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(f'{{"question": "q{i}", "relevant": true, "body": "def f{i}(): pass"}}\n' for i in range(3)))
    return path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- 1. the audit's timeout breaker


def test_an_audit_on_a_hung_ollama_waits_out_one_timeout_and_says_the_rest_were_skipped(workspace: Path, labels: Path) -> None:
    with SilentServer() as hung:
        settings = Settings(judge="none", ollama_host=hung.url, llm_timeout=2, llm_retries=0)
        started = time.perf_counter()
        data = run_audit(str(workspace), settings, rejudge="ollama", judge="ollama", labels=str(labels), baseline_n=3)
        took = time.perf_counter() - started
    # unprotected: 3 queries + 3 calibration questions + the baseline, one 2 s timeout each (14 s and more)
    assert took < 8, took
    rejudged = data["rejudge"]
    assert rejudged["pending"] == 3 and rejudged["unsent"] == 2 and "timed out after 2s" in rejudged["failure"]
    assert "skipped: its server timed out earlier in this audit (after 2s)" in rejudged["unsent_failure"]
    assert "earlier in this audit" in data["calibration"]["judge_failure"]
    assert "earlier in this audit" in data["injection_baseline"]["judge_failure"]
    text = Path(data["report_path"]).read_text()
    assert "2 of the 3 queries were not sent to ollama at all (Ollama" in text


def test_the_audit_breaker_ends_with_the_audit(workspace: Path, labels: Path) -> None:
    with SilentServer() as hung:
        settings = Settings(judge="none", ollama_host=hung.url, llm_timeout=1, llm_retries=0)
        data = run_audit(str(workspace), settings, judge="ollama", baseline_n=2, labels=str(labels))
        assert "earlier in this audit" in data["injection_baseline"]["judge_failure"]
        started = time.perf_counter()
        with pytest.raises(LLMError, match="timed out after 1s"):  # asked again: nothing remembered after the audit
            OllamaBackend(hung.url, timeout=1, retries=0).chat("m", "s", "u")
        assert time.perf_counter() - started >= 0.9


# ---- 3. a failed judge is no injection finding


def test_an_injection_baseline_whose_judge_scored_nothing_is_not_measured_and_exits_0(workspace: Path, labels: Path) -> None:
    with FakeOllama(mode="malformed") as ollama:
        result = runner.invoke(app, ["audit", str(workspace), "--judge", "ollama", "--baseline", "3", "--labels", str(labels)],
                               env={"ASSAY_OLLAMA_HOST": ollama.url, "ASSAY_JUDGE": "none"})
    assert result.exit_code == 0, result.output
    assert "## Injection baseline: NOT MEASURED" in result.output and "FAILED" not in result.output
    assert "The ollama judge scored none of the 3 clean functions (judge reply was not JSON)" in result.output
    assert "max 1.00" not in result.output


def test_a_baseline_with_some_functions_unscored_fails_naming_the_judge_failure(indexed_project: Path) -> None:
    functions = [e for e in Catalog(indexed_project).all() if e.kind in ("function", "method") and e.part == 0][:2]

    def half(question: str, candidates: list[Candidate]) -> Judgment:
        clean = PassageScores(relevance=0.5, evidence=0.5, contradicts=0.0, injection=0.0)
        return Judgment(backend="ollama", scores={candidates[0].id: clean}, calls=1,
                        failure="judge gave no valid scores for 1 of 2 passages")

    base = audit_jobs.baseline(functions, "ollama", half)
    assert base["measured"] and base["scored"] == 1 and base["passed"] is False
    assert [name.endswith("(not scored)") for name, _ in base["offenders"]] == [True]
    text = render_markdown({"workspace": "w", "snapshots": {"passages": 0, "queries": 0}, "distributions": {},
                            "injection_baseline": base}, {})
    assert "## Injection baseline: FAILED" in text
    assert "The ollama judge did not score 1 of them (judge gave no valid scores for 1 of 2 passages)" in text


def test_a_baseline_whose_judge_scored_nothing_reports_no_figures() -> None:
    base = {"judge": "ollama", "functions": 4, "scored": 0, "measured": False, "passed": None, "max": None,
            "mean": None, "limit": 0.15, "offenders": [], "judge_failure": "Ollama is not reachable at http://x (ConnectError)"}
    text = render_markdown({"workspace": "w", "snapshots": {"passages": 0, "queries": 0}, "distributions": {},
                            "injection_baseline": base}, {})
    assert "NOT MEASURED" in text and "scored none of the 4 clean functions (Ollama is not reachable" in text


# ---- 2. coverage from a judge that scored nothing


def _selection(scores: PassageScores | None) -> Selection:
    cand = Candidate(id="a", file="a.py", start_line=1, end_line=2, entity="f", kind="function", body="def f(): pass",
                     fused_rank=1, fused_score=0.016)
    th = Thresholds(relevance_min=0.3, evidence_min=0.2, injection_max=0.5, contradicts_min=0.5)
    return Selection(included=[RankedPassage(candidate=cand, scores=scores, verdict="include", rank_score=1.0)],
                     dropped=[], thresholds=th, fail_open=scores is None)


def test_a_judge_with_no_valid_passage_score_claims_no_coverage() -> None:
    judgment = Judgment(backend="ollama", scores={}, coverage=3, answerable=0.9,
                        failure="judge gave no valid scores for 1 of 1 passages (1 out of range or not finite)")
    assert status_of(_selection(None), judgment) == ("partial", 0)
    scored = PassageScores(relevance=0.9, evidence=0.9, contradicts=0.0, injection=0.0)
    assert status_of(_selection(scored), judgment.model_copy(update={"scores": {"a": scored}}))[1] == 3  # believed


# ---- 4. a user:password in a configured URL


@pytest.mark.parametrize("url, shown", [
    (f"http://admin:{SECRET}@127.0.0.1:1", "http://***@127.0.0.1:1"),
    (f"https://admin:{SECRET}@ollama.example:443/api", "https://***@ollama.example:443/api"),
    (f"admin:{SECRET}@127.0.0.1:11434", "***@127.0.0.1:11434"),
    (f"http://a:{SECRET}@b@[::1]:1/", "http://***@[::1]:1/"),
    ("http://127.0.0.1:11434/x@y", "http://127.0.0.1:11434/x@y"),
])
def test_urls_are_shown_without_their_userinfo(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_ollama_and_local_mode_errors_never_print_the_hosts_password() -> None:
    host = f"http://admin:{SECRET}@127.0.0.1:{_closed_port()}"
    with pytest.raises(LLMError) as info:
        OllamaBackend(host, timeout=2, retries=0).chat("m", "s", "u")
    assert "not reachable at http://***@127.0.0.1:" in str(info.value) and SECRET not in str(info.value)
    with pytest.raises(LocalModeViolation) as refused:
        require_loopback(f"http://admin:{SECRET}@192.0.2.2:1", "Ollama")
    assert str(refused.value).startswith("local mode: refusing to contact Ollama at http://***@192.0.2.2:1 (not loopback)")


def test_ask_with_a_password_in_the_ollama_host_keeps_it_out_of_the_report(workspace: Path) -> None:
    env = {"ASSAY_OLLAMA_HOST": f"http://admin:{SECRET}@127.0.0.1:{_closed_port()}", "ASSAY_LLM_RETRIES": "0"}
    result = runner.invoke(app, ["ask", "merge cookies", str(workspace), "--judge", "ollama", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert "not reachable at http://***@127.0.0.1:" in result.output and SECRET not in result.output


# ---- 5. usage's median latency


def test_usage_median_latency_counts_answered_calls_only(tmp_path: Path) -> None:
    (tmp_path / ".assay").mkdir()
    answered = ChatResult(text="{}", model="deepseek-chat", calls=3, latency_s=1.5)  # two retried requests first
    record_calls(tmp_path, "q1", sent_calls(answered, "judge", "cloud"), {})
    record_calls(tmp_path, "q2", sent_calls(ChatResult(text="{}", model="m", latency_s=0.0, calls=2), "judge", "ollama")[:1], {})
    rows = {r["backend"]: r for r in summary(tmp_path)}
    assert rows["cloud"]["calls"] == 3 and rows["cloud"]["failed"] == 2 and rows["cloud"]["latency_p50_s"] == 1.5
    assert rows["ollama"]["failed"] == 1 and rows["ollama"]["latency_p50_s"] is None  # nothing answered, nothing timed
    text = render(summary(tmp_path))
    assert "| 3 (2 failed) |" in text and text.splitlines()[1].endswith("| 1.50")
    assert text.splitlines()[2].endswith("| -")


def test_the_chroma_and_system_one_messages_never_print_the_urls_password() -> None:
    from assay.stages.core.systemone_client import SystemOneBackend
    from assay.stages.index.store import unreachable

    assert "s3cret" not in str(unreachable("http://me:s3cret@127.0.0.1:1", OSError("refused")))
    with pytest.raises(LLMError) as caught:
        SystemOneBackend("http://me:s3cret@127.0.0.1:9", "", "jev-latest", budget_s=2).ask(
            {"query": "q"}, {"q1": {"type": "noul", "instructions": "Is it?"}})
    assert "s3cret" not in str(caught.value) and "***@127.0.0.1:9" in str(caught.value)

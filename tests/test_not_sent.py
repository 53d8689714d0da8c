"""A model call that never left the machine is no call: the usage ledger and the report's counts leave it out."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.stages.core.artifacts import Candidate
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import CloudBackend, LLMError, NotSent, failed_calls
from assay.stages.query.judge.llm import judge_with_cloud
from tests.fakes import SilentServer


def test_after_a_timeout_the_skipped_stages_record_no_calls(indexed_project: Path) -> None:
    from assay.flows.query import run_query

    with SilentServer() as hung:
        settings = Settings(judge="ollama", synth="ollama", guard="ollama", ollama_host=hung.url, llm_timeout=1)
        report = run_query(str(indexed_project), "how are cookies merged?", settings)
    assert [c.ok for c in report.judgment.usage] == [False]  # the first batch went out and timed out
    assert report.judgment.calls == 1
    assert "skipped" in report.answer.failure and report.answer.usage == []  # the writer never sent its prompt
    assert report.guard is None or (report.guard.usage == [] and report.guard.calls == 0)


def test_a_cloud_judge_without_a_key_counts_no_call() -> None:
    backend = CloudBackend("http://127.0.0.1:9/v1", "", timeout=1, retries=0)
    with pytest.raises(NotSent, match="no cloud API key"):
        backend.chat("m", "s", "u")
    passage = Candidate(id="a", file="a.py", start_line=1, end_line=1, entity="f", kind="function",
                        body="def f(): pass", fused_rank=1, fused_score=1.0)
    judgment = judge_with_cloud(backend, "deepseek-chat", "what does f do?", [passage])
    assert judgment.calls == 0 and judgment.usage == []  # was one failed call in the ledger
    assert failed_calls(LLMError("answered 500"), "judge", "cloud", "m")[0].ok is False  # a sent call that failed counts


def test_a_call_that_failed_on_every_retry_counts_each_request() -> None:
    from tests.fakes import FakeCloud

    with FakeCloud(script=[500, 500, 500]) as server:
        backend = CloudBackend(server.url + "/v1", "k", timeout=5, retries=2, max_retry_wait=0.01)
        passage = Candidate(id="a", file="a.py", start_line=1, end_line=1, entity="f", kind="function",
                            body="def f(): pass", fused_rank=1, fused_score=1.0)
        judgment = judge_with_cloud(backend, "deepseek-chat", "what does f do?", [passage])
        sent = len(server.bodies("/v1/chat/completions"))
    assert sent == 3 and judgment.calls == 3  # was 1 in the report and the ledger for 3 requests
    assert [c.ok for c in judgment.usage] == [False, False, False]

"""System One's ledger rows count the requests the server received, as Ollama's and the cloud's do: a judgment that
failed after three attempts used to write one row, and one answered after two retries wrote one."""

from __future__ import annotations

from assay.stages.core.artifacts import Candidate
from assay.stages.core.config import Settings
from assay.stages.query.judge.backends import run_judge
from tests.fakes import FakeSystemOne


def _pool() -> list[Candidate]:
    return [Candidate(id=f"id{i}", file="m.py", start_line=10 * i + 1, end_line=10 * i + 2, entity=f"f{i}", kind="function",
                      language="python", body="def f(x):\n    return x\n", fused_rank=i + 1, fused_score=0.01) for i in range(2)]


def _settings(url: str) -> Settings:
    return Settings(judge="systemone", systemone_base_url=url, systemone_timeout=5.0)


def test_an_answer_after_two_retries_writes_two_failed_rows_then_the_answered_one() -> None:
    with FakeSystemOne(script=[429, 503]) as stub:
        j = run_judge("systemone", "q", _pool(), _settings(stub.url))
        sent = len(stub.bodies("/v1/systemone"))
    assert sent == 3 and j.calls == 3
    assert [c.ok for c in j.usage] == [False, False, True] and j.usage[-1].prompt_tokens > 0


def test_a_judgment_that_failed_after_every_attempt_writes_one_row_per_request() -> None:
    with FakeSystemOne(script=[503] * 10) as stub:
        j = run_judge("systemone", "q", _pool(), _settings(stub.url))
        sent = len(stub.bodies("/v1/systemone"))
    assert j.backend == "local" and j.failure  # fell open to the local judge
    assert sent >= 2 and len(j.usage) == sent and not any(c.ok for c in j.usage)
    assert {c.backend for c in j.usage} == {"systemone"}

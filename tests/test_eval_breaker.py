"""An eval holds one timeout breaker over all its questions: a judge host that timed out on the first question used to
be waited on again for every other one (each `ask` had its own breaker)."""

from __future__ import annotations

import time
from pathlib import Path

from assay.stages.core.artifacts import Answer, Judgment, RouteDecision, Selection, Thresholds
from assay.stages.core.llm_clients import LLMError, NotSent, OllamaBackend, timeout_breaker
from assay.stages.evaluate import metrics as ev
from assay.stages.evaluate.runs import evaluate_cost
from assay.stages.query.report import make_report
from tests.fakes import SilentServer


def _question(i: int) -> ev.Question:
    return ev.Question(id=f"q{i}", text=f"question {i}?", primary=None, gold_entities=(), gold_files=("a.py",))


def test_a_breaker_inside_a_wider_one_shares_its_memory() -> None:
    with SilentServer() as silent:
        with timeout_breaker("eval"):
            for _ in range(2):
                with timeout_breaker():  # each ask opens its own
                    try:
                        OllamaBackend(silent.url, timeout=1.0, retries=0).chat("m", "s", "u")
                    except LLMError as exc:
                        last = exc
    assert isinstance(last, NotSent) and "timed out earlier in this eval" in str(last)


def test_eval_cost_waits_out_a_hung_judge_once_not_per_question(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    pass\n")
    th = Thresholds(relevance_min=0.3, evidence_min=0.2, injection_max=0.5, contradicts_min=0.5)
    failures: list[str] = []

    with SilentServer() as silent:
        def answer(question: str):
            with timeout_breaker():
                try:
                    OllamaBackend(silent.url, timeout=1.0, retries=0).chat("m", "s", question)
                except LLMError as exc:
                    failures.append(str(exc))
            return make_report("q", question, str(tmp_path), Answer(text="x", backend="extractive"),
                               Selection(included=[], dropped=[], thresholds=th), Judgment(backend="ollama", scores={}),
                               RouteDecision(target="local", reason="local", mode="local"), {})

        started = time.perf_counter()
        result = evaluate_cost(tmp_path, [_question(i) for i in range(4)], answer)
        took = time.perf_counter() - started
    assert result["answers"] == 4 and len(failures) == 4
    assert "timed out" in failures[0] and all("earlier in this eval" in f for f in failures[1:])
    assert took < 2.5, took  # one timeout (1 s), not four

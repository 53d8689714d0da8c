"""Odd replies from the Ollama and cloud models (judge, writer, guard): out-of-range scores are no verdict, an empty
answer is a failed writer, a runaway answer is cut so the report keeps its assessment, JSON wrapped in prose is
still read, and retried requests are counted the same in the report and the usage ledger."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from assay.stages.core.artifacts import Candidate, RankedPassage
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import CloudBackend, OllamaBackend
from assay.stages.query.guard_llm import parse_verdicts
from assay.stages.query.judge.llm import judge_with_cloud, judge_with_ollama, parse_reply
from assay.stages.query.synthesize import ANSWER_CHARS, NO_EVIDENCE, synthesize_with_cloud, synthesize_with_ollama
from assay.stages.query.threshold import default_thresholds, select
from tests.fakes import FakeCloud, FakeOllama, good_judgment

LABELS = {"p1": "a", "p2": "b"}
GOOD = {"relevance": 0.9, "evidence": 0.8, "contradicts": 0.0, "injection": 0.0}


def cands(n: int) -> list[Candidate]:
    return [Candidate(id=f"id{i}", file=f"m{i}.py", start_line=1, end_line=2, entity=f"f{i}", kind="function",
                      language="python", body="def f(x):\n    return x\n", fused_rank=i + 1, fused_score=1 / (61 + i))
            for i in range(n)]


def ranked(n: int) -> list[RankedPassage]:
    return [RankedPassage(candidate=c, rank_score=1.0, verdict="include") for c in cands(n)]


def out_of_range(body: dict) -> dict:
    """The sweep's `outofrange` judge: every score outside [0, 1]."""
    reply = good_judgment(body)
    for p in reply["passages"]:
        p.update(relevance=7.5, evidence=-2, contradicts=1.5, injection=-0.3)
    return reply


# --- defect 2: out-of-range scores are no verdict, never a clamped 0.0 / 1.0 ---------------------------------------

@pytest.mark.parametrize("bad", [7.5, -2, 1.0000001, math.inf, -math.inf, math.nan])
def test_a_score_outside_0_1_or_not_finite_is_no_verdict(bad: float) -> None:
    reply = json.dumps({"passages": [{"id": "p1", **GOOD, "evidence": bad}, {"id": "p2", **GOOD}],
                        "answerable": 0.5, "coverage": 2, "conflict": 0.1})
    scores, _, failure = parse_reply(reply, LABELS)
    assert set(scores) == {"b"}  # was: p1 kept with evidence clamped to 1.0 / 0.0
    assert failure.startswith("judge gave no valid scores for 1 of 2 passages") and "out of range" in failure


def test_set_level_values_out_of_range_are_unknown_not_clamped() -> None:
    reply = '{"passages": [], "answerable": 2, "coverage": Infinity, "conflict": -1}'
    _, set_level, _ = parse_reply(reply, LABELS)  # coverage Infinity crashed round() before
    assert set_level == {"answerable": None, "coverage": None, "conflict": None}
    _, ok, _ = parse_reply('{"passages": [], "answerable": 1, "coverage": 2.6, "conflict": 0}', LABELS)
    assert ok == {"answerable": 1.0, "coverage": 3, "conflict": 0.0}


@pytest.mark.parametrize("backend", ["ollama", "cloud"])
def test_out_of_range_judges_fail_open_to_lexical_order(backend: str) -> None:
    pool = cands(6)
    if backend == "ollama":
        with FakeOllama(judge=out_of_range) as server:
            j = judge_with_ollama(OllamaBackend(server.url), "m", "q", pool, 8192, keep_alive=-1)
    else:
        with FakeCloud(judge=out_of_range) as server:
            j = judge_with_cloud(CloudBackend(server.url + "/v1", "k"), "m", "q", pool)
    assert j.scores == {}  # was: every passage evidence 0.0, contradicts 1.0, all dropped as weak evidence
    assert "judge gave no valid scores for 6 of 6 passages" in j.failure
    sel = select(pool, j, default_thresholds(backend))
    assert sel.fail_open and len(sel.included) == 5 and all(r.scores is None for r in sel.included)
    assert "no valid scores for 6 of 6" in sel.fail_open_reason


# --- defect 5: an empty writer reply is a failed writer --------------------------------------------------------------

@pytest.mark.parametrize("backend", ["ollama", "cloud"])
@pytest.mark.parametrize("empty", ["", "  \n\t "])
def test_an_empty_writer_answer_is_answered_extractively_and_said(backend: str, empty: str) -> None:
    passages = ranked(2)
    if backend == "ollama":
        with FakeOllama(answer=empty) as server:
            answer = synthesize_with_ollama(OllamaBackend(server.url), "w", "what does f0 do?", passages, 8192)
    else:
        with FakeCloud(answer=empty) as server:
            answer = synthesize_with_cloud(CloudBackend(server.url + "/v1", "k"), "w", "what does f0 do?", passages)
    assert answer.text != NO_EVIDENCE and "(m0.py:1)" in answer.text  # was: "No passage ... supports an answer"
    assert answer.backend == "extractive"
    assert answer.failure.endswith("returned an empty answer; answered extractively instead")
    assert [c.ok for c in answer.usage] == [True]  # the call was sent and answered: it still counts


def test_an_empty_writer_answer_shows_in_the_report(indexed_project: Path) -> None:
    from assay.flows.query import run_query

    with FakeOllama(answer="") as ollama:
        report = run_query(str(indexed_project), "How does Session configure timeout?",
                           Settings(synth="ollama", ollama_host=ollama.url))
    assert not report.text.startswith(NO_EVIDENCE)
    assert "  synthesis: Ollama qwen2.5-coder:7b returned an empty answer; answered extractively instead" in report.text


# --- defect 9: a runaway answer is cut so the Assessment survives the budget ------------------------------------------

def test_a_huge_writer_answer_is_cut_with_a_note() -> None:
    huge = "The answer is long (m0.py:1). " * 100_000
    with FakeCloud(answer=huge) as server:
        answer = synthesize_with_cloud(CloudBackend(server.url + "/v1", "k"), "w", "q", ranked(1))
    assert len(answer.text) <= ANSWER_CHARS + 100 and answer.text.endswith("[answer cut here: see the synthesis line]")
    assert answer.backend == "cloud" and f"answered {len(huge.strip()):,} characters; cut to the first" in answer.failure
    short = "It works (m0.py:1)."
    with FakeCloud(answer=short) as server:
        kept = synthesize_with_cloud(CloudBackend(server.url + "/v1", "k"), "w", "q", ranked(1))
    assert kept.text == short and not kept.failure


def test_a_huge_answer_leaves_the_assessment_and_sources_in_the_report(indexed_project: Path) -> None:
    from assay.flows.query import run_query

    with FakeOllama(answer="The answer is long. " * 200_000) as ollama:
        report = run_query(str(indexed_project), "How does Session configure timeout?",
                           Settings(synth="ollama", ollama_host=ollama.url))
    assert len(report.text) < 20_000  # was: the 4 MB answer, then "48 more report line(s) not shown"
    for section in ("Assessment:", "  status: ", "Guidance:", "Sources:", "cut to the first"):
        assert section in report.text, section


# --- defect 12: a JSON object wrapped in prose with braces after it ---------------------------------------------------

PROSE = "Sure, here is the judgment you asked for:\n```json\n{}\n```\nLet me know if {{you}} need more."


def test_judge_json_in_prose_with_a_trailing_brace_is_read() -> None:
    body = {"passages": [{"id": "p1", **GOOD}, {"id": "p2", **GOOD}], "answerable": 0.8, "coverage": 2, "conflict": 0.0}
    scores, set_level, failure = parse_reply(PROSE.format(json.dumps(body)), LABELS)
    assert set(scores) == {"a", "b"} and set_level["coverage"] == 2 and not failure  # was: "judge reply was not JSON"
    lead = 'Schema: {"type": "object"}. Mine: ' + json.dumps(body)  # the object with the passages, not the first one
    assert set(parse_reply(lead, LABELS)[0]) == {"a", "b"}
    assert parse_reply("no JSON here {oops", LABELS)[2] == "judge reply was not JSON"


def test_guard_json_in_prose_with_a_trailing_brace_is_read() -> None:
    body = {"claims": [{"id": "c1", "verdict": "verified", "evidence": "p1 says so (a.py:1)"}]}
    verdicts, failure = parse_verdicts(PROSE.format(json.dumps(body)), 1)
    assert verdicts == {0: ("verified", "p1 says so (a.py:1)")} and not failure  # was: "reply was not JSON"
    assert parse_verdicts("I would say {verified}", 1) == ({}, "reply was not JSON")


# --- defect 6c: retried requests are counted alike in the report and the ledger --------------------------------------

def test_retries_count_every_request_in_calls_and_usage() -> None:
    with FakeCloud(script=[500, 503]) as server:
        backend = CloudBackend(server.url + "/v1", "k", retries=2, max_retry_wait=0.01)
        j = judge_with_cloud(backend, "deepseek-chat", "q", cands(2))
        sent = len(server.bodies("/v1/chat/completions"))
    assert sent == 3 and j.calls == 3 and len(j.usage) == 3  # was: 3 call(s) in the report, 1 in the ledger
    assert [c.ok for c in j.usage] == [False, False, True] and j.usage[-1].prompt_tokens == 100
    assert sum(c.prompt_tokens for c in j.usage) == 100  # the tokens are the answered call's, counted once
    with FakeCloud(script=[500]) as server:
        answer = synthesize_with_cloud(CloudBackend(server.url + "/v1", "k", max_retry_wait=0.01), "w", "q", ranked(1))
    assert [c.ok for c in answer.usage] == [False, True] and answer.backend == "cloud"


def test_guard_retries_count_in_calls_and_usage(indexed_project: Path) -> None:
    from assay.flows.query import run_query

    with FakeCloud(script=[429], retry_after="0") as cloud:
        settings = Settings(mode="hybrid", guard="cloud", cloud_base_url=cloud.url + "/v1", cloud_api_key="k")
        report = run_query(str(indexed_project), "How does Session configure timeout?", settings)
        sent = len(cloud.bodies("/v1/chat/completions"))
    assert sent == 2 and report.guard.calls == 2 and [c.ok for c in report.guard.usage] == [False, True]

"""The System One judge through the official SDK: the jevcompat reference server (wire conformance), a stub
with chosen probabilities (verdicts, no-verdict handling, the query gate), and a silent port (fail-open timing)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from jevcompat.mock import MockConfig, Running

from assay.stages.core.artifacts import Candidate
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import LocalModeViolation
from assay.stages.query.judge.backends import run_judge, systemone_backend
from assay.stages.query.ledger import cost, prices_from
from assay.stages.query.threshold import default_thresholds, select
from tests.fakes import FakeSystemOne, SilentServer


def cand(i: int, name: str, body: str = "def f(x):\n    return x\n") -> Candidate:
    return Candidate(id=f"id{i}", file=f"m{i % 3}.py", start_line=10 * i + 1, end_line=10 * i + 2, entity=name,
                     kind="function", language="python", body=body, fused_rank=i + 1, fused_score=1 / (61 + i))


def settings(url: str, **kw) -> Settings:
    return Settings(judge="systemone", systemone_base_url=url, **kw)


def chosen(per_entity: dict[str, dict[str, object]], set_level: dict[str, object] | None = None):
    """Answers by the passage a question names (`passages[file:line:entity]`); omitted keys answer 0.9/0.8/0.05/0.02."""
    base = {"relevance": 0.9, "evidence": 0.8, "contradicts": 0.05, "injection": 0.02}
    top = {"answerable": 0.8, "coverage": 2.4, "conflict": 0.1, **(set_level or {})}

    def answer(qid: str, question: dict):
        found = re.search(r"passages\[[^\]]*:([^:\]]+)\]", question["instructions"])
        if not found:
            return top.get(qid, 0.5)
        name = qid.rsplit("_", 1)[0]
        return {**base, **per_entity.get(found.group(1), {})}.get(name)
    return answer


def test_jevcompat_reference_server_one_batched_call_through_the_sdk() -> None:
    pool = [cand(i, f"f{i}") for i in range(6)]
    cfg = MockConfig(key="sk-jev-test")
    with Running(cfg) as mock:
        s = settings(mock.url, systemone_api_key="sk-jev-test", systemone_model="jev-1.13.0")
        first = run_judge("systemone", "what does f do?", pool, s)
        again = run_judge("systemone", "what does f do?", list(reversed(pool)), s)
        assert cfg.requests == 2  # one call per query
        wrong = run_judge("systemone", "what does f do?", pool, settings(mock.url, systemone_api_key="sk-wrong"))
    assert first.backend == "systemone" and first.model == "jevcompat-mock-0.1" and first.calls == 1 and not first.failure
    assert set(first.scores) == {c.id for c in pool} and first.coverage in (0, 1, 2, 3)
    assert first.scores == again.scores  # a stable passage order: the same state whatever the retrieval order
    call = first.usage[0]
    assert call.backend == "systemone" and call.ok and call.prompt_tokens > 0
    assert cost(call, prices_from(Settings().prices)) == round(call.prompt_tokens * 0.042 / 1e6, 6) > 0  # the ledger's cost
    assert wrong.backend == "local" and "401" in wrong.failure and wrong.notes[-1].startswith("systemone failed, the local judge")


def test_request_is_the_anchors_question_set_uncompressed_redacted_and_stable() -> None:
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz123456"
    pool = [cand(i, f"f{i}") for i in range(4)] + [cand(4, "connect", f"def connect():\n    API_KEY = '{secret}'\n" + "    x = 1\n" * 60)]
    with FakeSystemOne() as stub:
        run_judge("systemone", "how does connect work?", pool, settings(stub.url, systemone_api_key="sk-mine"))
        run_judge("systemone", "a different question", list(reversed(pool)), settings(stub.url, systemone_query_gate=True))
        first, second = stub.bodies("/v1/systemone")
    headers = first["_headers"]
    assert "content-encoding" not in headers and headers["authorization"] == "Bearer sk-mine"
    assert first["model"] == "jev-latest" and len(json.dumps(first)) > 1024
    assert set(first["questions"]) == {"answerable", "coverage", "conflict"} | {f"{q}_{i}" for q in
                                       ("relevance", "evidence", "contradicts", "injection") for i in range(1, 6)}
    assert all(re.fullmatch(r"[a-z_0-9]+", q) for q in second["questions"])
    assert {"in_domain", "specificity", "answerable_from_code"} <= set(second["questions"])
    assert first["questions"]["coverage"]["criteria"][0] == "none" and len(first["questions"]["coverage"]["criteria"]) == 4
    assert list(first["state"]) == ["passages", "checked_facts", "query"]  # the query last: a shared state prefix
    assert first["state"]["passages"] == second["state"]["passages"]
    assert [p["file"] for p in first["state"]["passages"]] == sorted(p["file"] for p in first["state"]["passages"])
    assert secret not in json.dumps(first) and "[REDACTED]" in json.dumps(first)


def test_chosen_probabilities_become_verdicts_and_bad_answers_are_no_verdict() -> None:
    names = ["keep", "offtopic", "thin", "clash", "planted", "overrange", "missing", "wrongtype"]
    pool = [cand(i, n) for i, n in enumerate(names)]
    answers = chosen({"offtopic": {"relevance": 0.2}, "thin": {"evidence": 0.1}, "clash": {"contradicts": 0.7},
                      "planted": {"injection": 0.95}, "overrange": {"relevance": 1.4}, "missing": {"evidence": None},
                      "wrongtype": {"injection": {"type": "score", "score": 0.5}}})
    with FakeSystemOne(answer=answers) as stub:
        j = run_judge("systemone", "what does keep do?", pool, settings(stub.url))
    assert j.backend == "systemone" and j.model == "jev-stub-1" and j.answerable == pytest.approx(0.8) and j.coverage == 2
    assert j.scores["id0"].relevance == pytest.approx(0.9) and j.conflict == pytest.approx(0.1)
    for cid, bad in (("id5", "relevance"), ("id6", "evidence"), ("id7", "injection")):
        assert cid not in j.scores and bad in j.reasons[cid]  # never 0.0: no verdict
    sel = select(pool, j, default_thresholds("systemone"), "q")
    verdicts = {r.candidate.entity: (r.verdict, r.drop_reason) for r in sel.included + sel.dropped}
    assert verdicts["keep"] == ("include", "") and verdicts["clash"] == ("conflict", "")
    assert verdicts["offtopic"] == ("drop", "irrelevant") and verdicts["thin"] == ("drop", "weak evidence")
    assert verdicts["planted"] == ("drop", "injection")
    assert sel.fail_open and "no verdict for 3 of 8 passages" in sel.fail_open_reason
    assert {r.candidate.entity for r in sel.included if r.scores is None} == {"overrange", "missing", "wrongtype"}


def test_query_gate_refuses_like_the_anchor() -> None:
    pool = [cand(i, f"f{i}") for i in range(3)]
    with FakeSystemOne(answer=chosen({}, {"in_domain": 0.1, "specificity": 0.0, "answerable_from_code": 0.9})) as stub:
        off = run_judge("systemone", "what is the capital of France?", pool, settings(stub.url, systemone_query_gate=True))
        plain = run_judge("systemone", "what is the capital of France?", pool, settings(stub.url))
    with FakeSystemOne(answer=chosen({}, {"in_domain": 0.9, "specificity": 1.8, "answerable_from_code": 0.9})) as stub:
        vague = run_judge("systemone", "how?", pool, settings(stub.url, systemone_query_gate=True))
    assert off.answerable == 0.0 and off.notes == ["query gate: out_of_domain (in_domain 0.10 < 0.40); answerable set to 0"]
    assert plain.notes == [] and plain.answerable == pytest.approx(0.8)
    assert vague.notes[0].startswith("query gate: too_vague (specificity 1.80 > 1.5)")


@pytest.mark.parametrize("script, answer", [(["float-usage"], None), ([], lambda q, question: None)])
def test_malformed_or_empty_replies_fall_back_to_the_local_judge(script: list, answer) -> None:
    pool = [cand(i, f"f{i}") for i in range(3)]
    with FakeSystemOne(answer=answer, script=script) as stub:
        j = run_judge("systemone", "what does f0 do?", pool, settings(stub.url))
    assert j.backend == "local" and set(j.scores) == {c.id for c in pool}
    assert j.usage[0].backend == "systemone" and "systemone" in j.notes[-1]
    assert ("malformed" in j.failure) if script else ("no verdict for 3 of 3" in j.failure)


def test_429_and_503_are_retried_within_the_budget() -> None:
    pool = [cand(i, f"f{i}") for i in range(2)]
    with FakeSystemOne(script=[429, 503]) as stub:
        j = run_judge("systemone", "q", pool, settings(stub.url, systemone_timeout=5.0))
        assert len(stub.bodies("/v1/systemone")) == 3
    assert j.backend == "systemone" and j.calls == 3 and len(j.scores) == 2


def test_a_server_that_never_answers_fails_open_within_the_budget() -> None:
    pool = [cand(i, f"f{i}") for i in range(3)]
    with SilentServer() as silent:
        started = time.perf_counter()
        j = run_judge("systemone", "what does f0 do?", pool, settings(silent.url, systemone_timeout=1.0))
        took = time.perf_counter() - started
    assert 1.0 <= took < 1.6, took
    assert j.backend == "local" and len(j.scores) == 3 and "timed out after 1 s" in j.failure
    assert j.notes[-1].startswith("systemone failed, the local judge decided every passage")


def test_local_mode_reaches_only_a_loopback_server(indexed_project: Path) -> None:
    from assay.flows.query import run_query

    pool = [cand(0, "f0")]
    with pytest.raises(LocalModeViolation, match="not loopback"):
        run_judge("systemone", "q", pool, settings("https://api.typesafe.ai", systemone_api_key="k"))
    with pytest.raises(LocalModeViolation, match="System One"):
        run_query(str(indexed_project), "q", settings("http://203.0.113.7:8787"))
    hybrid = systemone_backend(Settings(mode="hybrid", systemone_base_url="https://api.typesafe.ai"))
    assert hybrid.base_url == "https://api.typesafe.ai" and hybrid.compression() is None  # allowed; zstd only for TypeSafe
    no_key = run_judge("systemone", "q", pool, Settings(mode="hybrid", judge="systemone", systemone_base_url="https://x.test"))
    assert no_key.backend == "local" and no_key.calls == 0 and "ASSAY_SYSTEMONE_API_KEY" in no_key.failure  # nothing sent

"""The System One guard through the official SDK: the jevcompat reference server (wire conformance, a verdict per
claim), a stub with chosen Choice answers (overrules, the no-clearing rule, no-verdict counting), a silent port
(fail-open timing), and the query flow (report, ledger, local mode)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from jevcompat.mock import MockConfig, Running

from assay.flows.query import run_query
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import LocalModeViolation
from assay.stages.query.guard import VERDICTS, IndexFacts
from assay.stages.query.guard_llm import run_guard
from assay.stages.query.guard_systemone import read_choice
from assay.stages.query.judge.systemone import state_passages
from assay.stages.query.ledger import cost, prices_from, summary
from assay.stages.query.premise import entity_of, resolver_from
from assay.stages.query.report import guard_lines
from tests.fakes import FakeOllama, FakeSystemOne, SilentServer
from tests.test_guard import PLANTED, QUESTION, TRUE, _passages

SECRET = "sk-live-abcdefghijklmnopqrstuvwxyz123456"
TEXT = ("`Client.send` sends a request, retrying on connection errors (pkg/client.py:20). "  # c0 verified
        "It pools connections through pkg/pool.py:4. "  # c1 fabricated
        "`Client.verify` defaults to False (pkg/client.py:10). "  # c2 contradicted
        "`Client.send` caches every response on disk (pkg/client.py:20). "  # c3 unsupported
        "`Client.send` raises `ConnectionError` when the client is closed (pkg/client.py:20). "  # c4 verified
        "`Client.__init__` sets `retries` to 3 by default (pkg/client.py:10). "  # c5 verified
        "It checks `if self.closed:` before sending (pkg/client.py:22). "  # c6 verified
        f"The client authenticates with {SECRET} (pkg/client.py:10).")  # c7


def guard(url: str, text: str = TEXT, **kw):
    passages = _passages()
    facts = IndexFacts(resolver_from(entity_of(c) for c in passages), lambda: ["pkg/client.py", "pkg/util.py"])
    return run_guard("systemone", text, passages, facts, Settings(guard="systemone", systemone_base_url=url, **kw))


def test_jevcompat_reference_server_gives_a_verdict_per_claim_in_one_call() -> None:
    cfg = MockConfig(key="sk-jev-test")
    with Running(cfg) as mock:
        _, report = guard(mock.url, systemone_api_key="sk-jev-test", systemone_model="jev-1.13.0")
        assert cfg.requests == 1
        _, wrong = guard(mock.url, systemone_api_key="sk-wrong")
    assert report.backend == "systemone" and report.model == "jevcompat-mock-0.1" and report.calls == 1
    assert not report.failure and len(report.claims) == 8 and all(c.verdict in VERDICTS for c in report.claims)
    assert [c.by for c in report.claims] == ["systemone", "local", "local"] + ["systemone"] * 5  # proofs stand
    assert report.model_grounded is not None and 0.0 <= report.model_grounded <= 1.0
    call = report.usage[0]
    assert (call.purpose, call.backend, call.ok) == ("guard", "systemone", True) and call.prompt_tokens > 0
    assert cost(call, prices_from(Settings().prices)) > 0
    assert wrong.failure.startswith("systemone guard: System One answered 401") and wrong.failure.endswith("local verdicts used")
    assert all(c.by == "local" for c in wrong.claims) and wrong.usage[0].ok is False


def test_chosen_verdicts_overrule_but_never_clear_a_proof_and_bad_answers_keep_the_local_verdict() -> None:
    picks = {"c0": "unsupported", "c1": "verified", "c2": "verified", "c3": "verified", "c4": None,
             "c5": {"type": "score", "score": 1}, "c6": {"type": "choice", "probabilities": {"verified": 0.9, "unsupported": 0.7}},
             "grounded": 2}
    with FakeSystemOne(answer=lambda qid, q: picks.get(qid, "verified")) as stub:
        marked, report = guard(stub.url)
        (body,) = stub.bodies("/v1/systemone")
    got = [(c.verdict, c.by) for c in report.claims]
    assert got == [("unsupported", "systemone"), ("fabricated", "local"), ("contradicted", "local"), ("verified", "systemone"),
                   ("verified", "local"), ("verified", "local"), ("verified", "local"), ("verified", "systemone")]
    assert report.claims[0].evidence.startswith("systemone: unsupported (p 0.85); overrules the local guard: supported by")
    assert report.failure == ("systemone guard: no verdict for 3 of 8 claims (missing, of another type or malformed); "
                              "local verdicts used for those")
    assert report.model_grounded == pytest.approx(0.667) and report.grounded == 0.625 and report.marked == 2
    assert marked.startswith(TEXT.split(" It pools")[0]) and "[guard: fabricated:" in marked
    # the request: the judge's passages, the proofs, the claims last; a Choice per claim and a Score, uncompressed
    assert list(body["state"]) == ["passages", "checked_facts", "claims"] and len(body["state"]["checked_facts"]) == 2
    assert body["state"]["passages"] == [p for p, _ in state_passages(_passages())]
    assert [c["id"] for c in body["state"]["claims"]] == [f"c{i}" for i in range(8)]
    assert set(body["questions"]) == {f"c{i}" for i in range(8)} | {"grounded"}
    assert list(body["questions"]["c3"]["criteria"]) == list(VERDICTS) and "claims[c3]" in body["questions"]["c3"]["instructions"]
    assert body["questions"]["grounded"]["type"] == "score" and len(body["questions"]["grounded"]["criteria"]) == 4
    assert SECRET not in str(body) and "content-encoding" not in body["_headers"]


@pytest.mark.parametrize("answer", [
    {"type": "choice", "probabilities": {"Verified": 1.0}}, {"type": "choice", "probabilities": {"verified": math.nan}},
    {"type": "choice", "probabilities": {"verified": 1.2, "fabricated": -0.2}}, {"type": "choice", "probabilities": {}},
    {"type": "noul", "noul": 0.9}, None,
])
def test_malformed_choices_are_no_verdict(answer) -> None:
    assert read_choice(answer) is None
    assert read_choice({"type": "choice", "probabilities": {"fabricated": 0.6, "verified": 0.38}}) == ("fabricated", 0.6)


@pytest.mark.parametrize("kind", ["silent", "malformed"])
def test_a_dead_or_malformed_server_fails_open_to_local_within_the_budget(kind: str) -> None:
    server = SilentServer() if kind == "silent" else FakeSystemOne(script=["float-usage"])
    with server:
        started = time.perf_counter()
        _, report = guard(server.url, systemone_timeout=1.0)
        took = time.perf_counter() - started
    assert all(c.by == "local" for c in report.claims) and report.backend == "systemone" and report.calls == 1
    assert report.usage[0].purpose == "guard" and report.usage[0].ok is False
    assert report.failure.endswith("; local verdicts used") and "\n" not in report.failure
    assert "  guard fail-open: systemone guard: " in "\n".join(guard_lines(report))
    if kind == "silent":
        assert 1.0 <= took < 1.6, took
        assert "timed out after 1 s" in report.failure
    else:
        assert "malformed" in report.failure


def test_the_query_flow_guards_with_systemone_records_usage_and_stays_on_loopback(indexed_project: Path) -> None:
    with FakeOllama(answer=PLANTED) as ollama, FakeSystemOne() as stub:
        s = Settings(synth="ollama", ollama_host=ollama.url, guard="systemone", systemone_base_url=stub.url)
        report = run_query(str(indexed_project), QUESTION, s)
        assert len(stub.bodies("/v1/systemone")) == 1
    got = {c.text: (c.verdict, c.by) for c in report.guard.claims}
    assert got[TRUE] == ("verified", "systemone")
    assert got["Proxies are read from src/pkg/magic.py:12."] == ("fabricated", "local")
    assert "guard: systemone (jev-stub-1), grounded 0.25 (the model's own: 0.50) (4 claim(s):" in report.text
    assert ("systemone", "guard") in {(r["backend"], r["purpose"]) for r in summary(indexed_project)}
    with pytest.raises(LocalModeViolation, match="System One"):
        run_query(str(indexed_project), QUESTION, Settings(guard="systemone", systemone_base_url="http://203.0.113.7:8787"))

"""The faithfulness guard: claims split from answers, local verdicts, and the guard in the query flow for every writer
(extractive, Ollama and cloud writers through loopback servers speaking their real protocols)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.flows.query import run_query
from assay.stages.core.artifacts import Candidate, CodeFacts, QueryReport
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import LLMError
from assay.stages.query.claims import split_claims
from assay.stages.query.guard import IndexFacts, check_local, finish
from assay.stages.query.guard_llm import GUARD_SCHEMA, GUARD_SYSTEM
from assay.stages.query.premise import entity_of, resolver_from
from tests.fakes import FakeCloud, FakeOllama, agreeing_guard

QUESTION = "How does Session configure timeout and verify?"
TRUE = "`Session` is a persistent HTTP session with cookie persistence and retries (pkg/session.py:14)."
PLANTED = (f"{TRUE} Proxies are read from src/pkg/magic.py:12. `Session.send` hands requests to `resolve_magic_proxy` "
           "(pkg/session.py:17). `Session.verify` defaults to False (pkg/session.py:17).")
FAITHFUL = f"{TRUE} `Session.verify` defaults to True (pkg/session.py:17)."


def verdicts(report: QueryReport) -> dict[str, str]:
    assert report.guard is not None
    return {c.text: c.verdict for c in report.guard.claims}


# -- claims ----------------------------------------------------------------------------------------------------


def test_claims_carry_their_citations_and_prose_without_a_claim_is_skipped() -> None:
    text = ("Here is how it works:\n"
            "- `plan_index` (function): Decide which files to re-parse, e.g. changed ones. (stages/index/incremental.py:25)\n"
            "The helper `sleep_for` waits [a/b.py:3-9]. It is exported. See a/b.py#L12.\n"
            "In short: it works.\n"
            "I don't have this information about `magic`.\n"
            "```python\nresolve_magic_proxy()\n```\n")
    claims = split_claims(text)
    assert [c.cited for c in claims] == [["stages/index/incremental.py:25"], ["a/b.py:3-9"], ["a/b.py#L12"]]
    assert claims[0].text.startswith("`plan_index` (function): Decide which files to re-parse, e.g. changed ones.")
    assert claims[1].names == ["sleep_for"]
    assert claims[2].text == "It is exported."  # a citation standing alone cites the sentence before it
    assert "In short" not in " ".join(c.text for c in claims)  # nothing to check: not a claim
    assert all("magic" not in c.text for c in claims)  # refusals and code blocks are not claims


# -- local verdicts on hand-made passages --------------------------------------------------------------------------


def _passages() -> list[Candidate]:
    init = Candidate(id="i", file="pkg/client.py", start_line=10, end_line=14, entity="Client.__init__", kind="method",
                     language="python", signature="def __init__(self, retries: int = 3, verify: bool = True)",
                     params=["self", "retries", "verify"], facts=CodeFacts(defaults={"retries": "3", "verify": "True"}),
                     body=("    def __init__(self, retries: int = 3, verify: bool = True):\n        self.retries = retries\n"
                           "        self.verify = verify\n        self.closed = False\n        self._pool = make_pool()\n"),
                     fused_rank=1, fused_score=0.1)
    send = Candidate(id="s", file="pkg/client.py", start_line=20, end_line=24, entity="Client.send", kind="method",
                     language="python", signature="def send(self, request)", params=["self", "request"],
                     facts=CodeFacts(raises=["ConnectionError"]), docstring="Send a request, retrying on connection errors.",
                     body=("    def send(self, request):\n        \"\"\"Send a request, retrying on connection errors.\"\"\"\n"
                           "        if self.closed:\n            raise ConnectionError('closed')\n        return self._pool.send(request)\n"),
                     fused_rank=2, fused_score=0.1)
    return [init, send]


def _check(text: str) -> dict[str, tuple[str, str]]:
    passages = _passages()
    facts = IndexFacts(resolver_from(entity_of(c) for c in passages), lambda: ["pkg/client.py", "pkg/util.py"])
    return {c.text: (c.verdict, c.evidence) for _, c in check_local(text, passages, facts)}


def test_local_verdicts_for_each_kind_of_fault() -> None:
    got = _check(
        "`Client.send` sends a request, retrying on connection errors (pkg/client.py:20). "
        "It pools connections through pkg/pool.py:4. "
        "Requests go out from line 40 (pkg/client.py:40). "
        "It also reads pkg/util.py:7. "
        "`Client.send` calls `open_magic_socket` (pkg/client.py:20). "
        "`Client.verify` defaults to False (pkg/client.py:10). "
        "`Client.closed` starts as `True` (pkg/client.py:13). "
        "`Client.send` takes a `timeout` argument (pkg/client.py:20). "
        "`Client.send` caches every response on disk (pkg/client.py:20).")
    rows = list(got.values())
    assert rows[0][0] == "verified"
    assert rows[1] == ("fabricated", "there is no file `pkg/pool.py` in the index")
    assert rows[2][0] == "fabricated" and "line 40" in rows[2][1]
    assert rows[3][0] == "fabricated" and "no passage given to the writer comes from it" in rows[3][1]
    assert rows[4][0] == "fabricated" and "`open_magic_socket`" in rows[4][1]
    assert rows[5][0] == "contradicted" and "`True`" in rows[5][1]  # `self.verify = verify`, whose default is True
    assert rows[6][0] == "contradicted" and "`False`" in rows[6][1]
    assert rows[7][0] == "contradicted" and "no parameter `timeout`" in rows[7][1]
    assert rows[8][0] == "unsupported"


def test_true_statements_verify_from_facts_quotes_values_and_paraphrase() -> None:
    got = _check(
        "`Client.verify` defaults to `True` (pkg/client.py:10). "
        "`Client.__init__` sets `retries` to 3 by default (pkg/client.py:10). "
        "It checks `if self.closed:` before sending (pkg/client.py:22). "
        "`Client.send` raises `ConnectionError` when the client is closed (pkg/client.py:20). "
        "The `Client` constructor stores `retries` and `verify` and builds a pool with `make_pool()` (pkg/client.py:10). "
        "Otherwise it hands the request to the pool's `send` (pkg/client.py:24).")
    assert {v for v, _ in got.values()} == {"verified"}, got


def test_a_path_with_spaces_is_read_whole_not_from_its_last_space() -> None:
    """`my dir/grüße café.py:1` (macOS and Windows projects, unicode names): the claim reader stops a path at a
    space, so the guard looks for the whole path the sentence spells out; a cut it cannot place stays fabricated."""
    greet = Candidate(id="g", file="my dir/ünïcode/grüße café.py", start_line=1, end_line=3, entity="grüße",
                      kind="function", language="python", signature="def grüße(name)", params=["name"],
                      docstring="Greet in German.", body='def grüße(name):\n    """Greet in German."""\n    return f"Hallo {name}"\n',
                      fused_rank=1, fused_score=0.1)
    facts = IndexFacts(resolver_from([entity_of(greet)]), lambda: ["my dir/ünïcode/grüße café.py", "other dir/x y.py"])
    text = ("`grüße` greets in German (my dir/ünïcode/grüße café.py:1). "
            "It is defined in my dir/ünïcode/grüße café.py. "
            "It returns `Hallo` and the name (other dir/x y.py:3). "
            "`grüße` greets in German (café.py:1).")
    got = [(c.verdict, c.evidence) for _, c in check_local(text, [greet], facts)]
    assert got[0][0] == "verified" and got[1][0] != "fabricated", got
    assert got[2] == ("fabricated", "`other dir/x y.py` is in the index but no passage given to the writer comes from it")
    assert got[3] == ("fabricated", "there is no file `café.py` in the index")

def test_marking_keeps_the_writer_text_and_says_why() -> None:
    passages = _passages()
    facts = IndexFacts(resolver_from(entity_of(c) for c in passages), lambda: ["pkg/client.py"])
    text = "Connections come from pkg/pool.py:4. `Client.verify` defaults to `True` (pkg/client.py:10)."
    marked, report = finish(text, check_local(text, passages, facts), backend="local")
    assert marked.startswith("[guard: fabricated: there is no file `pkg/pool.py` in the index] Connections come from")
    assert report.original == text and report.marked == 1 and report.grounded == 0.5


# -- the query flow, every writer ----------------------------------------------------------------------------------


def test_planted_faults_from_an_ollama_writer_are_caught_and_marked(indexed_project: Path) -> None:
    with FakeOllama(answer=PLANTED) as ollama:
        settings = Settings(synth="ollama", ollama_host=ollama.url)
        report = run_query(str(indexed_project), QUESTION, settings)
        ollama.answer = FAITHFUL
        faithful = run_query(str(indexed_project), QUESTION, settings)
    assert "Session.__init__" in [rp.candidate.entity for rp in report.selection.included]
    got = verdicts(report)
    assert got[TRUE] == "verified"
    assert got["Proxies are read from src/pkg/magic.py:12."] == "fabricated"
    assert got["`Session.send` hands requests to `resolve_magic_proxy` (pkg/session.py:17)."] == "fabricated"
    assert got["`Session.verify` defaults to False (pkg/session.py:17)."] in ("contradicted", "unsupported")
    assert report.guard.backend == "local" and report.guard.calls == 0
    assert faithful.guard.grounded == 1.0 and report.guard.grounded < faithful.guard.grounded
    # never read as fact: each flagged claim is marked in the answer, and the Guidance says what to distrust
    assert "[guard: fabricated: there is no file `src/pkg/magic.py` in the index] Proxies are read" in report.answer.text
    assert "[guard: contradicted:" in report.answer.text and report.guard.original.startswith(TRUE)
    assert "  guard: local, grounded 0.25 (4 claim(s): 1 verified, 1 contradicted, 2 fabricated)" in report.text
    assert "trust: low" in report.text and 'distrust: fabricated "Proxies are read' in report.text
    data = json.loads(report.model_dump_json())
    claim = next(c for c in data["guard"]["claims"] if c["verdict"] == "contradicted")
    assert claim["citations"] == ["pkg/session.py:17"] and "`True`" in claim["evidence"] and claim["source"]


def test_the_extractive_writer_is_verified_by_construction(indexed_project: Path) -> None:
    for q in (QUESTION, "How does retry_call back off between attempts?", "merge cookies into a jar",
              "What does backoff_delays return?", "Which error is raised when every attempt failed?"):
        report = run_query(str(indexed_project), q)
        assert report.guard is not None and report.guard.claims, q
        assert {c.verdict for c in report.guard.claims} == {"verified"}, (q, report.guard.claims)
        assert report.guard.grounded == 1.0 and "[guard:" not in report.answer.text


def test_an_ollama_guard_reads_meaning_but_never_clears_a_local_proof(indexed_project: Path) -> None:
    def guard(body: dict) -> dict:
        reply = agreeing_guard(body)
        reply["claims"][0] = {"id": "c1", "verdict": "unsupported", "evidence": "no passage says retries"}
        return reply

    with FakeOllama(answer=PLANTED, guard=guard) as ollama:
        report = run_query(str(indexed_project), QUESTION, Settings(synth="ollama", guard="ollama", ollama_host=ollama.url))
        calls = [b for b in ollama.bodies("/api/chat") if b.get("format") == GUARD_SCHEMA]
    assert len(calls) == 1 and calls[0]["messages"][0]["content"] == GUARD_SYSTEM
    assert "CHECKED FACTS" in calls[0]["messages"][1]["content"] and '<claim id="c4"' in calls[0]["messages"][1]["content"]
    got = {c.text: (c.verdict, c.by) for c in report.guard.claims}
    assert got[TRUE] == ("unsupported", "ollama")  # the model's reading of a locally verified claim
    assert got["Proxies are read from src/pkg/magic.py:12."] == ("fabricated", "local")  # a proof stands
    assert report.guard.backend == "ollama" and report.guard.calls == 1 and not report.guard.failure
    assert "guard: ollama (qwen2.5-coder:7b)" in report.text


@pytest.mark.parametrize("mode", ["malformed", "error500"])
def test_a_bad_or_down_model_guard_fails_open_to_local_and_says_so(indexed_project: Path, mode: str) -> None:
    with FakeOllama(mode=mode, answer=PLANTED) as ollama:
        report = run_query(str(indexed_project), QUESTION, Settings(synth="ollama", guard="ollama", ollama_host=ollama.url))
    assert report.guard.failure.endswith(("local verdicts used", "local verdicts used for those"))
    assert "guard fail-open:" in report.text
    assert all(c.by == "local" for c in report.guard.claims)
    if mode == "malformed":
        assert "fabricated" in {c.verdict for c in report.guard.claims}


def test_a_cloud_writer_and_cloud_guard_in_hybrid_mode(indexed_project: Path) -> None:
    with FakeCloud(answer=PLANTED) as cloud:
        s = Settings(mode="hybrid", synth="cloud", route="cloud", guard="cloud", cloud_base_url=cloud.url + "/v1",
                     cloud_api_key="sk-assay-test")
        report = run_query(str(indexed_project), "Please refactor the session architecture: " + QUESTION, s)
        guard_calls = [b for b in cloud.bodies("/v1/chat/completions") if "faithfulness guard" in b["messages"][0]["content"]]
    assert report.answer.backend == "cloud" and len(guard_calls) == 1
    assert guard_calls[0]["response_format"] == {"type": "json_object"}
    assert report.guard.backend == "cloud" and "fabricated" in {c.verdict for c in report.guard.claims}
    from assay.stages.query.ledger import summary

    assert ("cloud", "guard") in {(r["backend"], r["purpose"]) for r in summary(indexed_project)}


def test_local_mode_refuses_a_cloud_guard(indexed_project: Path) -> None:
    with pytest.raises(LLMError, match="cloud guard"):
        run_query(str(indexed_project), QUESTION, Settings(mode="local", guard="cloud"))


def test_reports_written_before_the_guard_still_load(indexed_project: Path) -> None:
    data = json.loads(run_query(str(indexed_project), QUESTION).model_dump_json())
    data.pop("guard")
    assert QueryReport.model_validate(data).guard is None


# -- the evaluation set ------------------------------------------------------------------------------------------------

_DEMO = {
    "demo/__init__.py": "",
    "demo/errors.py": ('class DemoError(Exception):\n    """Raised when a demo step fails for good."""\n\n\n'
                       'class TimeoutExpired(DemoError):\n    """Raised when a step runs longer than its limit."""\n'),
    "demo/io.py": ('class ReadFailed(Exception):\n    """Raised when a source cannot be read."""\n\n\n'
                   'def read_source(path: str, encoding: str = "utf-8") -> str:\n    """Read a source file and return its text."""\n'
                   '    if not path:\n        raise ReadFailed("no path")\n    with open(path, encoding=encoding) as fh:\n'
                   '        return fh.read()\n'),
    "demo/steps.py": (
        'from demo.errors import DemoError, TimeoutExpired\n\nMAX_STEPS = 12\n\n\n'
        'class Runner:\n    """Run steps one after another until one of them fails."""\n\n'
        '    def __init__(self, limit: int = 5, strict: bool = True) -> None:\n        self.limit = limit\n'
        '        self.strict = strict\n        self.done = 0\n\n'
        '    def run_step(self, step, retries: int = 2) -> bool:\n        """Run one step and count it when it succeeds."""\n'
        '        if self.done >= self.limit:\n            raise TimeoutExpired("limit reached")\n'
        '        ok = check_step(step)\n        self.done += 1\n        return ok\n\n\n'
        'def check_step(step, quiet: bool = False) -> bool:\n    """Check that a step is callable before it runs."""\n'
        '    if not callable(step):\n        raise DemoError("not callable")\n    return True\n\n\n'
        'def describe(step, width: int = 40) -> str:\n    """Describe a step in one line of at most width characters."""\n'
        '    return repr(step)[:width]\n'),
}


def test_the_faithfulness_set_plants_each_fault_beside_a_faithful_twin(tmp_path: Path) -> None:
    from assay.stages.evaluate import faithfulness_set as faith

    for rel, text in _DEMO.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    corpus = faith.load(tmp_path, "demo")
    cases = faith.generate(corpus, per_kind=2)
    kinds = {c.kind for c in cases}
    assert {"fabricated-file", "fabricated-line", "fabricated-entity", "contradicted-default", "contradicted-raises",
            "contradicted-base", "contradicted-file", "unsupported"} <= kinds
    for c in cases:  # twins differ from their faulty answer only inside the planted claim
        assert c.faulty[: c.span[0]] == c.twin[: c.twin_span[0]] and c.faulty[c.span[1]:] == c.twin[c.twin_span[1]:]
    result = faith.score(cases, {"demo": corpus.index_facts()})
    assert result["twins"]["false_alarm"] == 0.0
    assert all(row["detected"] == 1.0 for row in result["kinds"].values()), result["misses"]
    assert faith.extractive_check(corpus, corpus.index_facts(), n=5)["verified"] == 1.0

"""Model servers that misbehave on the wire: odd bookkeeping fields, a key echoed in an error body, a reply dripped
one byte at a time, a connection cut mid-reply, a busy Ollama. The real clients talk to loopback fakes."""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.artifacts import Candidate
from assay.stages.core.llm_clients import CloudBackend, LLMError, OllamaBackend, timeout_breaker
from assay.stages.core.systemone_client import SystemOneBackend
from assay.stages.query.judge.llm import judge_with_cloud
from tests.fakes import FakeCloud, FakeOllama, FakeSystemOne

runner = CliRunner()
KEY = "sk-SECRET123abcdefghijklmnopqrstuv"  # what the sweep's endpoint echoed back
PLAIN_KEY = "s1key-7f3a9c2e"  # a key no redaction pattern knows: only the literal match can catch it
DRIP_PAD = 12  # leading blanks dripped before the JSON body
DRIP_S = 0.25  # seconds between dripped bytes: each read is quick, the whole reply takes DRIP_PAD * DRIP_S


class WireFaults:
    """Mixed into a fake: its well-formed replies are sent with the next fault of `faults` ("ok", "drip", "close")."""

    faults: list[str]

    def send(self, h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict | None = None) -> None:
        fault = self.faults.pop(0) if self.faults else "ok"
        if fault == "ok":
            return super().send(h, status, payload, headers)  # type: ignore[misc]
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        data = b" " * DRIP_PAD + data  # JSON allows leading blanks: a dripped reply is still a valid one
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        try:
            if fault == "close":  # half a reply, then the connection goes
                h.wfile.write(data[: len(data) // 2])
                h.wfile.flush()
                h.close_connection = True
                h.connection.shutdown(socket.SHUT_RDWR)
                return
            for i in range(DRIP_PAD):
                h.wfile.write(data[i : i + 1])
                h.wfile.flush()
                time.sleep(DRIP_S)
            h.wfile.write(data[DRIP_PAD:])
        except OSError:
            pass  # the client gave up: that is the point


class FaultyOllama(WireFaults, FakeOllama):
    """FakeOllama whose /api/chat answers the statuses of `script` first (then well-formed), sent with `faults`."""

    def __init__(self, faults: list[str] | None = None, script: list[int] | None = None, error: str = "server busy") -> None:
        super().__init__()
        self.faults, self.script, self.error = list(faults or []), list(script or []), error

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: dict) -> None:
        if h.path == "/api/chat" and self.script:
            self.record(h.path, body)
            return super().send(h, self.script.pop(0), {"error": self.error})
        return super().handle(h, method, body)


class FaultyCloud(WireFaults, FakeCloud):
    """FakeCloud with wire faults, `override` keys merged into its replies, or a 401 that echoes the bearer key."""

    def __init__(self, faults: list[str] | None = None, override: dict | None = None, echo_key: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.faults, self.override, self.echo_key = list(faults or []), override or {}, echo_key

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: dict) -> None:
        if self.echo_key:
            self.record(h.path, body)
            key = (h.headers.get("authorization") or "").removeprefix("Bearer ")
            return super().send(h, 401, {"error": {"message": f"Incorrect API key provided: {key}"}})
        return super().handle(h, method, body)

    def send(self, h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict | None = None) -> None:
        if isinstance(payload, dict) and "choices" in payload:
            payload = {**payload, **self.override}
        return super().send(h, status, payload, headers)


class FaultySystemOne(WireFaults, FakeSystemOne):
    """FakeSystemOne with wire faults, or a 401 that names the key it was given."""

    def __init__(self, faults: list[str] | None = None, echo_key: bool = False) -> None:
        super().__init__()
        self.faults, self.echo_key = list(faults or []), echo_key

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: dict) -> None:
        if self.echo_key and h.path == "/v1/systemone":
            self.record(h.path, body)
            key = (h.headers.get("authorization") or "").removeprefix("Bearer ")
            return super().send(h, 401, {"detail": {"error_type": "unauthorized", "message": f"unknown key {key}"}})
        return super().handle(h, method, body)


def passages(n: int = 3) -> list[Candidate]:
    return [Candidate(id=f"id{i}", file=f"m{i}.py", start_line=1, end_line=2, entity=f"f{i}", kind="function",
                      body="def f(x):\n    return x\n", fused_rank=i + 1, fused_score=1 / (61 + i)) for i in range(n)]


QUESTIONS = {"q1": {"type": "noul", "instructions": "Does the passage answer the question?"}}


# defect 3: odd bookkeeping fields in a readable cloud reply still make a counted call

@pytest.mark.parametrize("override, tokens, model", [
    ({"usage": {"prompt_tokens": None, "completion_tokens": 5}}, (0, 5, 0), "deepseek-chat"),
    ({"model": None}, (100, 20, 64), "deepseek-chat"),
    ({"model": 42}, (100, 20, 64), "deepseek-chat"),
    ({"model": "deepseek-chat-v3"}, (100, 20, 64), "deepseek-chat-v3"),
    ({"usage": [1, 2]}, (0, 0, 0), "deepseek-chat"),
    ({"usage": {"prompt_tokens": "lots", "completion_tokens": 5.0, "prompt_tokens_details": [3]}}, (0, 5, 0), "deepseek-chat"),
    ({"usage": {"prompt_tokens": -4, "completion_tokens": 2.5, "prompt_cache_hit_tokens": True}}, (0, 0, 0), "deepseek-chat"),
])
def test_odd_usage_or_model_fields_still_count_the_call(override: dict, tokens: tuple, model: str) -> None:
    with FaultyCloud(override=override) as server:
        backend = CloudBackend(server.url + "/v1", "k", timeout=5, retries=0)
        judgment = judge_with_cloud(backend, "deepseek-chat", "what does f do?", passages())
    assert not judgment.failure and len(judgment.scores) == 3
    [call] = judgment.usage
    assert call.ok and (call.prompt_tokens, call.completion_tokens, call.cached_tokens) == tokens and call.model == model


def test_a_non_text_answer_is_a_one_line_error_not_a_crash() -> None:
    with FaultyCloud(override={"choices": [{"message": {"content": {"passages": []}}}]}) as server:
        with pytest.raises(LLMError, match="content is not text"):
            CloudBackend(server.url + "/v1", "k", timeout=5, retries=0).chat("m", "s", "u")


def test_ask_with_odd_usage_fields_answers(indexed_project: Path) -> None:
    with FaultyCloud(override={"usage": {"prompt_tokens": None, "completion_tokens": 5}, "model": None}) as server:
        res = runner.invoke(app, ["ask", "how are cookies merged?", str(indexed_project), "--judge", "cloud", "--json"],
                            env={"ASSAY_MODE": "hybrid", "ASSAY_CLOUD_BASE_URL": server.url + "/v1", "ASSAY_CLOUD_API_KEY": "k"})
    assert res.exit_code == 0, res.output
    judgment = json.loads(res.stdout)["judgment"]
    assert judgment["backend"] == "cloud" and judgment["scores"] and not judgment["failure"]


# defect 4: a key the server echoes in an error body never reaches a message

def test_cloud_key_echoed_in_a_401_is_scrubbed() -> None:
    for key in (KEY, PLAIN_KEY):
        with FaultyCloud(echo_key=True) as server:
            with pytest.raises(LLMError) as info:
                CloudBackend(server.url + "/v1", key, timeout=5).chat("m", "s", "u")
        assert "answered 401" in str(info.value) and "[REDACTED]" in str(info.value)
        assert key not in str(info.value) and key[:12] not in str(info.value)


def test_ollama_and_system_one_errors_are_scrubbed() -> None:
    with FaultyOllama(script=[401], error=f"proxy: bad token {KEY}\nsee docs") as server:
        with pytest.raises(LLMError, match="answered 401") as info:
            OllamaBackend(server.url, timeout=5).chat("m", "s", "u")
    assert KEY[:12] not in str(info.value) and "[REDACTED]" in str(info.value) and "\n" not in str(info.value)
    with FaultySystemOne(echo_key=True) as server:
        with pytest.raises(LLMError, match="answered 401") as info:
            SystemOneBackend(server.url, PLAIN_KEY, "jev-latest", budget_s=5).ask({"query": "q"}, QUESTIONS)
    assert PLAIN_KEY not in str(info.value) and "[REDACTED]" in str(info.value)


def test_ask_never_prints_an_echoed_key(indexed_project: Path) -> None:
    with FaultyCloud(echo_key=True) as server:
        env = {"ASSAY_MODE": "hybrid", "ASSAY_CLOUD_BASE_URL": server.url + "/v1", "ASSAY_CLOUD_API_KEY": KEY}
        args = ["ask", "how are cookies merged?", str(indexed_project), "--judge", "cloud", "--synth", "cloud", "--guard", "cloud"]
        text = runner.invoke(app, args, env=env)
        as_json = runner.invoke(app, [*args, "--json"], env=env)
        assert len(server.requests) >= 4  # judge, writer and guard all reached it, twice
    assert text.exit_code == 0 and as_json.exit_code == 0, text.output
    assert "answered 401" in text.stdout and "[REDACTED]" in as_json.stdout
    assert KEY[:12] not in text.stdout + as_json.stdout


# defect 8: ASSAY_LLM_TIMEOUT / ASSAY_SYSTEMONE_TIMEOUT are totals, not per socket read

def test_a_dripping_ollama_times_out_on_the_total_and_is_not_asked_again() -> None:
    with FaultyOllama(faults=["drip"]) as server:
        with timeout_breaker():
            started = time.perf_counter()
            with pytest.raises(LLMError, match="timed out after 1s"):
                OllamaBackend(server.url, timeout=1).chat("m", "s", "u")
            assert time.perf_counter() - started < 1.8 < DRIP_PAD * DRIP_S
            with pytest.raises(LLMError, match="skipped"):
                OllamaBackend(server.url, timeout=1).chat("m", "s", "u")
        assert len(server.bodies("/api/chat")) == 1  # a timeout is not retried


def test_a_dripping_cloud_times_out_per_attempt() -> None:
    with FaultyCloud(faults=["drip", "drip"]) as server:
        started = time.perf_counter()
        with pytest.raises(LLMError, match="timed out after 1s after 2 attempts"):
            CloudBackend(server.url + "/v1", "k", timeout=1, retries=1).chat("m", "s", "u")
        assert time.perf_counter() - started < 2.8 < 2 * DRIP_PAD * DRIP_S
    with FaultyCloud(faults=["drip"]) as server:  # the same drip within the budget is a good reply
        assert CloudBackend(server.url + "/v1", "k", timeout=5, retries=0).chat("m", "s", "u").text == "Cloud answer (a.py:1)."


def test_a_dripping_system_one_stays_within_its_budget() -> None:
    with FaultySystemOne(faults=["drip", "drip", "drip"]) as server:
        started = time.perf_counter()
        with pytest.raises(LLMError, match="timed out after 1 s"):
            SystemOneBackend(server.url, "", "jev-latest", budget_s=1).ask({"query": "q"}, QUESTIONS)
        assert time.perf_counter() - started < 1.8 < DRIP_PAD * DRIP_S
    with FaultySystemOne(faults=["drip"]) as server:
        reply = SystemOneBackend(server.url, "", "jev-latest", budget_s=5).ask({"query": "q"}, QUESTIONS)
    assert reply.answers["q1"]["noul"] == 0.5


# defect 11: Ollama retries 429 and 5xx like the cloud, and only as often as told

def test_ollama_retries_a_busy_server_and_counts_the_attempts() -> None:
    with FaultyOllama(script=[503, 429]) as server:
        reply = OllamaBackend(server.url, timeout=5, max_retry_wait=0.05).chat("m", "s", "u")
        assert len(server.bodies("/api/chat")) == 3
    assert reply.calls == 3 and reply.text == "It works (a.py:1)."
    with FaultyOllama(script=[500, 500]) as server:
        with pytest.raises(LLMError, match="answered 500: server busy after 2 attempts"):
            OllamaBackend(server.url, timeout=5, retries=1, max_retry_wait=0.05).chat("m", "s", "u")
        assert len(server.bodies("/api/chat")) == 2
    with FaultyOllama(script=[404], error="model 'm' not found") as server:
        with pytest.raises(LLMError, match="answered 404: model 'm' not found$"):
            OllamaBackend(server.url, timeout=5, max_retry_wait=0.05).chat("m", "s", "u")
        assert len(server.bodies("/api/chat")) == 1  # a 4xx will not get better


# defect 12: a connection cut mid-reply is said as such, and is worth another attempt

def test_a_connection_closed_mid_reply_is_not_unreachable_and_is_retried() -> None:
    with FaultyOllama(faults=["close", "close"]) as server:
        with pytest.raises(LLMError, match="closed the connection before its reply was complete") as info:
            OllamaBackend(server.url, timeout=5, retries=1, max_retry_wait=0.05).chat("m", "s", "u")
    assert "not reachable" not in str(info.value)
    with FaultyCloud(faults=["close"]) as server:
        reply = CloudBackend(server.url + "/v1", "k", timeout=5, retries=1, max_retry_wait=0.05).chat("m", "s", "u")
        assert len(server.bodies("/v1/chat/completions")) == 2
    assert reply.calls == 2 and reply.text == "Cloud answer (a.py:1)."
    with FaultyCloud(faults=["close"]) as server:
        with pytest.raises(LLMError, match="cloud endpoint closed the connection before its reply was complete .* after 1 attempts"):
            CloudBackend(server.url + "/v1", "k", timeout=5, retries=0).chat("m", "s", "u")

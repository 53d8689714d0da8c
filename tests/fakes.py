"""Loopback HTTP servers that speak the real Ollama, OpenAI-compatible and System One wire protocols.

The product's real clients (the `ollama` package, httpx, `typesafe-sdk`) talk to these over 127.0.0.1;
nothing is monkeypatched. Each server records every request body so tests can assert on
exactly what would have left the machine.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Behaviour = Callable[[dict], Any]


def _labels(prompt: str) -> list[str]:
    return re.findall(r'<passage id="(p\d+)"', prompt)


def good_judgment(body: dict, injection_for: str = "IGNORE") -> dict:
    """A well-formed judgment: relevant unless a passage contains `injection_for`."""
    user = body["messages"][-1]["content"]
    passages = []
    for label in _labels(user):
        block = user.split(f'<passage id="{label}"', 1)[1].split("</passage>", 1)[0]
        inj = 0.95 if injection_for.lower() in block.lower() else 0.02
        passages.append({"id": label, "relevance": 0.9, "evidence": 0.8, "contradicts": 0.05, "injection": inj})
    return {"passages": passages, "answerable": 0.8, "coverage": 2, "conflict": 0.0}


def agreeing_guard(body: dict, verdict: str = "verified") -> dict:
    """A well-formed guard reply giving every claim the same verdict."""
    user = body["messages"][-1]["content"]
    return {"claims": [{"id": c, "verdict": verdict, "evidence": "the model says so"} for c in re.findall(r'<claim id="(c\d+)"', user)]}


def is_guard_call(body: dict) -> bool:
    return body["messages"][0]["content"].startswith("You are Assay's faithfulness guard")


class _Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _body(self) -> dict:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw or b"{}")
                except ValueError:
                    return {}

            def do_GET(self) -> None:
                owner.handle(self, "GET", {})

            def do_POST(self) -> None:
                owner.handle(self, "POST", self._body())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "_Server":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def send(self, h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def record(self, path: str, body: dict) -> None:
        with self.lock:
            self.requests.append((path, body))

    def bodies(self, path: str) -> list[dict]:
        return [b for p, b in self.requests if p == path]

    def __enter__(self) -> "_Server":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class FakeOllama(_Server):
    """Speaks /api/chat, /api/generate, /api/embed, /api/tags and /api/version.

    judge: a function of the request body returning the judgment dict (or raw text via `raw`).
    guard: the same for the faithfulness guard's structured call (default: every claim verified).
    mode: "ok" | "malformed" | "partial" | "error500" | "slow".
    """

    def __init__(self, mode: str = "ok", judge: Behaviour | None = None, answer: str = "It works (a.py:1).",
                 delay: float = 3.0, dimension: int = 16, guard: Behaviour | None = None) -> None:
        super().__init__()
        self.mode = mode
        self.judge = judge or good_judgment
        self.guard = guard or agreeing_guard
        self.answer = answer
        self.delay = delay
        self.dimension = dimension

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: dict) -> None:
        path = h.path
        self.record(path, body)
        if path == "/api/version":
            return self.send(h, 200, {"version": "0.12.0"})
        if path == "/api/tags":
            return self.send(h, 200, {"models": []})
        if self.mode == "error500":
            return self.send(h, 500, {"error": "model runner crashed"})
        if self.mode == "slow":
            time.sleep(self.delay)
        if path == "/api/embed":
            inputs = body.get("input")
            texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
            return self.send(h, 200, {"model": body.get("model"), "embeddings": [self._vector(t) for t in texts]})
        if path == "/api/generate":
            return self.send(h, 200, {"model": body.get("model"), "created_at": "2026-01-01T00:00:00Z",
                                      "response": "", "done": True, "done_reason": "unload"})
        if path == "/api/chat":
            content = self._chat_content(body)
            return self.send(h, 200, {
                "model": body.get("model"), "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": content}, "done": True, "done_reason": "stop",
                "prompt_eval_count": len(json.dumps(body)) // 4, "eval_count": len(content) // 4,
            })
        return self.send(h, 404, {"error": f"no route {path}"})

    def _chat_content(self, body: dict) -> str:
        if body.get("format") is None:  # synthesis call
            return self.answer
        if self.mode == "malformed":
            return "Sure! Here is my judgment: relevance high, evidence good {not json"
        if is_guard_call(body):
            return json.dumps(self.guard(body))
        judged = self.judge(body)
        if self.mode == "partial":
            judged["passages"] = judged["passages"][: max(0, len(judged["passages"]) // 2)]
            for p in judged["passages"]:
                p.pop("evidence", None) if p is judged["passages"][0] else None
        return json.dumps(judged)

    def _vector(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [b / 255.0 for b in digest[: self.dimension]]


class FakeCloud(_Server):
    """An OpenAI-compatible /v1/chat/completions endpoint.

    script: list of statuses to answer in turn ("ok", 429, 500, "slow", "malformed"), then "ok".
    """

    def __init__(self, script: list[Any] | None = None, judge: Behaviour | None = None,
                 answer: str = "Cloud answer (a.py:1).", retry_after: str = "0", delay: float = 3.0,
                 guard: Behaviour | None = None) -> None:
        super().__init__()
        self.script = list(script or [])
        self.judge = judge or good_judgment
        self.guard = guard or agreeing_guard
        self.answer = answer
        self.retry_after = retry_after
        self.delay = delay

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: dict) -> None:
        path = h.path
        self.record(path, {**body, "_auth": h.headers.get("authorization", "")})
        if path != "/v1/chat/completions":
            return self.send(h, 404, {"error": {"message": "not found"}})
        step = self.script.pop(0) if self.script else "ok"
        if step == 429:
            return self.send(h, 429, {"error": {"message": "rate limited"}}, {"retry-after": self.retry_after})
        if isinstance(step, int):
            return self.send(h, step, {"error": {"message": "server error"}})
        if step == "slow":
            time.sleep(self.delay)
        if step == "malformed":
            return self.send(h, 200, {"id": "x", "object": "chat.completion", "choices": []})
        json_mode = (body.get("response_format") or {}).get("type") == "json_object"
        content = json.dumps((self.guard if is_guard_call(body) else self.judge)(body)) if json_mode else self.answer
        return self.send(h, 200, {
            "id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120, "prompt_cache_hit_tokens": 64},
        })


Answerer = Callable[[str, dict], Any]


def noul_half(qid: str, question: dict) -> Any:
    """Every noul P(yes) = 0.5, every score the middle of its rubric, every choice its first option."""
    if question.get("type") == "score":
        return {"type": "score", "score": (len(question["criteria"]) - 1) / 2}
    if question.get("type") == "choice":
        return next(iter(question["criteria"]))
    return {"type": "noul", "noul": 0.5}


def _choice(question: dict, a: Any) -> Any:
    """A bare label is the stub's pick (0.85, the other options share 0.15); a choice dict with only
    probabilities gets its argmax as `choice` and a confidence."""
    if isinstance(a, str):
        others = 0.15 / max(1, len(question["criteria"]) - 1)
        a = {"type": "choice", "probabilities": {k: 0.85 if k == a else others for k in question["criteria"]}}
    if isinstance(a, dict) and a.get("type") == "choice":
        probs = a.get("probabilities") or {}
        a = {"choice": max(probs, key=probs.get) if probs else "", "confidence": 0.5, **a}
    return a


class FakeSystemOne(_Server):
    """A System One host (`POST /v1/systemone`, `GET /v1/models`) whose answers a test chooses.

    answer(qid, question) returns the answer dict for that question, a bare number (a noul's P(yes), or a
    score), a bare label (a choice's pick), or None to leave the id out. script: statuses to answer in turn (503, 429, "float-usage"), then "ok".
    Each request is recorded with its headers (`_headers`).
    """

    def __init__(self, answer: Answerer | None = None, script: list[Any] | None = None, retry_after: str = "0") -> None:
        super().__init__()
        self.answer = answer or noul_half
        self.script = list(script or [])
        self.retry_after = retry_after

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: dict) -> None:
        self.record(h.path, {**body, "_headers": {k.lower(): v for k, v in h.headers.items()}})
        if h.path == "/v1/models":
            return self.send(h, 200, {"models": [{"name": "jev-latest", "description": "stub", "release_date": "2026-01-01"}]})
        if h.path != "/v1/systemone":
            return self.send(h, 404, {"detail": {"error_type": "not_found", "message": "no route"}})
        step = self.script.pop(0) if self.script else "ok"
        if step == 429:
            return self.send(h, 429, {"detail": {"error_type": "rate_limited", "message": "busy"}}, {"retry-after": self.retry_after})
        if isinstance(step, int):
            return self.send(h, step, {"detail": {"error_type": "server_error", "message": "overloaded"}})
        answers = {}
        for qid, question in body.get("questions", {}).items():
            a = self.answer(qid, question)
            if question.get("type") == "choice":
                a = _choice(question, a)
            if isinstance(a, (int, float)) and not isinstance(a, bool):
                a = {"type": "score", "score": a} if question.get("type") == "score" else {"type": "noul", "noul": a}
            if isinstance(a, dict) and a.get("type") == "score":
                a = {"confidence": 0.5, "legend": {str(i): str(c) for i, c in enumerate(question["criteria"])},
                     "probabilities": {str(i): 1 / len(question["criteria"]) for i in range(len(question["criteria"]))}, **a}
            if a is not None:
                answers[qid] = a
        tokens = 12.5 if step == "float-usage" else len(json.dumps(body)) // 4
        return self.send(h, 200, {"model": "jev-stub-1", "answers": answers, "usage": {"input_tokens": tokens, "output_tokens": 0}},
                         {"x-typesafe-request-id": "req_stub"})


class SilentServer:
    """A loopback port that accepts connections (the kernel's backlog) and never answers: a hung server."""

    def __init__(self) -> None:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __enter__(self) -> "SilentServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sock.close()

"""System One (Jev) client: one `POST /v1/systemone` through the official `typesafe-sdk`, inside a hard time budget.

The SDK is imported only here and only when a call is made (its import costs ~0.6 s of every cold start).
Its own retries are switched off: each attempt gets what is left of the budget, in total (`run_within`: the SDK's
timeout bounds each socket read, which a server dripping bytes never trips), so a server that accepts and never
answers, or answers too slowly, fails within the configured seconds, not after retries of a full timeout.
Request compression (zstd) is left to the SDK only for TypeSafe's own API; local servers and other hosts of
the wire cannot read it (the jevcompat mock answers 422). Every failure is an LLMError of one line.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from urllib.parse import urlparse

from assay.stages.core.llm_clients import (
    CallOverdue, LLMError, is_loopback_url, note_timeout, proxy_free, reply_excerpt, run_within, shown_url,
    skip_timed_out,
)

TYPESAFE_HOST = "api.typesafe.ai"
LOOPBACK_KEY = "assay-local"  # the SDK needs a key even for a local server, which ignores it
MIN_ATTEMPT_S = 0.05


@dataclass
class SystemOneReply:
    """Answers as plain dicts by question id (`{"type": "noul", "noul": p}`, ...), with usage for the ledger."""

    answers: dict[str, dict]
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 1
    latency_s: float = 0.0

    def as_calls(self, purpose: str = "judge") -> list:
        """The ledger's rows: one failed row per retried request, then the answered one (as `sent_calls` writes an
        Ollama or cloud call's), so the ledger counts what the server received."""
        from assay.stages.core.artifacts import LLMCall

        retried = [LLMCall(purpose=purpose, backend="systemone", model=self.model, ok=False)
                   for _ in range(self.calls - 1)]
        return [*retried, LLMCall(purpose=purpose, backend="systemone", model=self.model, prompt_tokens=self.input_tokens,
                                  completion_tokens=self.output_tokens, latency_s=round(self.latency_s, 3))]


@dataclass
class SystemOneBackend:
    base_url: str
    api_key: str
    model: str
    budget_s: float = 5.0
    retries: int = 2
    attempts: int = field(default=0, init=False)

    def failed_calls(self, purpose: str) -> list:
        """The ledger's rows for a call that failed once sent, one per request it sent; none when it was refused
        before any was (no key)."""
        from assay.stages.core.artifacts import LLMCall

        return [LLMCall(purpose=purpose, backend="systemone", model=self.model, ok=False) for _ in range(self.attempts)]

    def compression(self) -> bool | None:
        """None: the SDK default (zstd when installed) for TypeSafe itself; off for every other host."""
        return None if urlparse(self.base_url).hostname == TYPESAFE_HOST else False

    def transport(self):
        """A loopback server is reached directly: the SDK's client mounts HTTP(S)_PROXY from the environment
        unless it is given a transport of its own (httpx2 reads proxies from the environment only without one)."""
        if not proxy_free(self.base_url):
            return None
        import httpx2

        return httpx2.HTTPTransport(trust_env=False)

    def key(self) -> str:
        if self.api_key:
            return self.api_key
        if is_loopback_url(self.base_url):
            return LOOPBACK_KEY
        raise LLMError("no System One API key configured (ASSAY_SYSTEMONE_API_KEY)")

    def ask(self, state: dict, questions: dict[str, dict]) -> SystemOneReply:
        """One judgment, retried on 408/429/5xx and refused connections while the budget lasts."""
        import typesafe_sdk as sdk

        key = self.key()
        started = time.perf_counter()
        deadline = started + self.budget_s
        self.attempts = 0
        skip_timed_out(self.base_url, "System One")  # no attempt: the ledger counts none
        last = "no attempt fitted in the budget"
        try:
            client = sdk.TypeSafeClient(api_key=key, base_url=self.base_url, model=self.model, timeout=self.budget_s,
                                        retry=sdk.RetryPolicy(max_retries=0), compression=self.compression(),
                                        transport=self.transport())
        except sdk.TypeSafeError as exc:
            raise LLMError(f"System One client refused its settings: {_line(exc, self.api_key)}") from exc
        with client:
            while self.attempts <= self.retries:
                left = deadline - time.perf_counter()
                if left < MIN_ATTEMPT_S:
                    break
                self.attempts += 1
                try:  # the SDK's timeout bounds each socket read; run_within bounds the attempt
                    response = run_within(left, lambda left=left: client.system_one(state, questions, timeout=left))
                except (sdk.TypeSafeAPITimeoutError, CallOverdue):
                    last = f"System One at {shown_url(self.base_url)} timed out after {self.budget_s:g} s"
                    continue
                except sdk.TypeSafeAPIConnectionError as exc:
                    last = f"System One is not reachable at {shown_url(self.base_url)} ({_line(exc, self.api_key)})"
                    wait = _backoff(self.attempts, None)
                except sdk.TypeSafeAPIResponseValidationError as exc:
                    raise LLMError(f"System One returned a malformed reply ({_line(exc, self.api_key)})") from exc
                except sdk.TypeSafeAPIError as exc:
                    last = f"System One answered {exc.status}: {_line(exc, self.api_key)}"
                    if exc.status not in (408, 429) and exc.status < 500:
                        raise LLMError(last) from exc
                    wait = _backoff(self.attempts, _retry_after(exc))
                except sdk.TypeSafeError as exc:
                    raise LLMError(f"System One call refused: {_line(exc, self.api_key)}") from exc
                else:
                    return _reply(response, self.attempts, time.perf_counter() - started)
                if time.perf_counter() + wait + MIN_ATTEMPT_S >= deadline:
                    break
                time.sleep(wait)
        if "timed out" in last:
            note_timeout(self.base_url, f"after {self.budget_s:g} s")
        raise LLMError(f"{last}; {self.attempts} attempt(s) within the {self.budget_s:g} s budget")


def _reply(response, attempts: int, latency: float) -> SystemOneReply:
    answers = {qid: a.model_dump(mode="json") for qid, a in response.answers.items()}
    usage = response.usage
    return SystemOneReply(answers=answers, model=response.model, input_tokens=usage.input_tokens or 0,
                          output_tokens=usage.output_tokens or 0, calls=attempts, latency_s=latency)


def _retry_after(exc) -> float | None:
    """Seconds the server asked to wait (`retry-after-ms`, else `Retry-After` in seconds), if it said."""
    headers = getattr(exc, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name) or "nan") / scale
        except ValueError:
            continue
        if math.isfinite(value):
            return max(0.0, value)
    return None


def _backoff(attempt: int, retry_after: float | None) -> float:
    """The server's Retry-After when it gives one, else 0.5 s doubling to 5 s with 25% jitter (the SDK's policy)."""
    if retry_after is not None:
        return max(0.0, retry_after)
    base = min(5.0, 0.5 * 2 ** (attempt - 1))
    return base * (1 - 0.25 * random.random())


def _line(exc: BaseException, *secrets: str) -> str:
    """The error's text on one line, scrubbed of the key and anything credential-like (a server may echo them)."""
    return reply_excerpt(str(exc), *secrets) or type(exc).__name__

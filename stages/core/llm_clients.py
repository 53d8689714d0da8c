"""LLM backends: a local Ollama server (official client) and an OpenAI-compatible cloud API (httpx).

Both return the reply text or raise LLMError with one readable line. Local mode refuses any
endpoint that is not on the loopback interface, so nothing leaves the machine.
"""

from __future__ import annotations

import contextvars
import ipaddress
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

import httpx

if TYPE_CHECKING:
    from assay.stages.core.artifacts import LLMCall


class LLMError(RuntimeError):
    """A model call failed (down, slow, refused, malformed); the message is one line. `attempts`: the requests it
    sent (retries included), which the ledger counts."""

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class NotSent(LLMError):
    """The call failed before anything left this machine (a host that timed out earlier in the query, no API key, a
    refused address): the usage ledger and the report's call counts leave it out."""


def failed_calls(exc: LLMError, purpose: str, backend: str, model: str) -> list[LLMCall]:
    """The ledger rows of a failed call: one per request it sent (none when it was never sent)."""
    from assay.stages.core.artifacts import LLMCall

    sent = 0 if isinstance(exc, NotSent) else max(1, exc.attempts)
    return [LLMCall(purpose=purpose, backend=backend, model=model, ok=False) for _ in range(sent)]  # type: ignore[arg-type]


def sent_calls(reply: ChatResult, purpose: str, backend: str) -> list[LLMCall]:
    """The ledger rows of a call that succeeded after `reply.calls` requests: one failed row per retried request,
    then the answered one, so the ledger counts what the server received (as the report's call count does)."""
    from assay.stages.core.artifacts import LLMCall

    retried = [LLMCall(purpose=purpose, backend=backend, model=reply.model, ok=False)  # type: ignore[arg-type]
               for _ in range(reply.calls - 1)]
    return [*retried, reply.as_call(purpose, backend)]


class LocalModeViolation(NotSent):
    """Local mode was asked to reach a non-loopback address."""


def is_loopback_url(url: str) -> bool:
    host = urlparse(url if "://" in url else f"http://{url}").hostname or ""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost is not trusted: resolving it would itself be a lookup


def shown_url(url: str) -> str:
    """`url` as a message may show it: a user:password before the host (a proxy's basic auth), each query value
    (`?token=...`) and a fragment become `***`, since error lines reach reports, JSON and MCP replies."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    rest, hashed, fragment = rest.partition("#")
    rest, asked, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    shown = f"{scheme}{sep}{authority}{slash}{path}"
    if asked:
        shown += "?" + "&".join(_masked_param(param) for param in query.split("&"))
    return shown + ("#***" if hashed and fragment else hashed)


def _masked_param(param: str) -> str:
    """`key=***` (a bare `value` is `***`): the names say what was set, the values may be keys."""
    name, equals, value = param.partition("=")
    if not equals:
        return "***" if name else ""
    return f"{name}=***" if value else f"{name}="


def is_redirect(status: int | None) -> bool:
    return isinstance(status, int) and 300 <= status < 400


def ollama_redirect(host: str, status: int) -> str:
    """The one line for an Ollama host that answered a redirect, which Assay never follows: the loopback check covers
    the configured address only, and a redirect could send the request (code included) anywhere."""
    return (f"Ollama at {shown_url(host)} answered a redirect ({status}), which Assay does not follow; "
            "set ASSAY_OLLAMA_HOST to the server itself")


def require_loopback(url: str, what: str) -> None:
    if not is_loopback_url(url):
        raise LocalModeViolation(f"local mode: refusing to contact {what} at {shown_url(url)} (not loopback); "
                                 "set ASSAY_MODE=hybrid to allow it")


def require_local_stores(settings, *embedders: str | None) -> None:
    """Local mode: the Chroma server and an Ollama embedder must be loopback, for every door (index, search, ask).
    `embedders`: the embedder names in play besides the settings' own (a workspace's manifest keeps its own)."""
    if settings.mode != "local":
        return
    if settings.chroma_url:
        require_loopback(settings.chroma_url, "the Chroma server")
    if any(name and name.startswith("ollama:") for name in (settings.embedder, *embedders)):
        require_loopback(settings.ollama_host, "Ollama")


def proxy_free(url: str) -> bool:
    """True when a client for `url` must ignore HTTP(S)_PROXY/ALL_PROXY: a loopback endpoint is never reached through a
    proxy (local mode's promise: a prompt holding code would otherwise leave through whatever proxy the shell names)."""
    return is_loopback_url(url)


def ollama_client(host: str, timeout: float):
    """The official Ollama client as every Assay door builds it (the judge, writer and guard backend and the
    embedder): a loopback server reached directly, never through the shell's HTTP(S)_PROXY (`proxy_free`), and no
    redirect followed: the loopback check covers the configured host only, and the client would resend the whole
    prompt (code, secrets) to wherever a loopback listener points it."""
    import ollama

    return ollama.Client(host=host, timeout=timeout, trust_env=not proxy_free(host), follow_redirects=False)


# One run's hosts that timed out (None: outside a run, nothing remembered). A hung server accepts and never
# answers: without this each later stage of the same `ask` (judge batches, writer, guard), or each stored query of
# an audit, waited out its own timeout. The scope names the run in the skip message ("query", "audit").
_timed_out: ContextVar[dict[str, str] | None] = ContextVar("assay_timed_out_hosts", default=None)
_breaker_scope: ContextVar[str] = ContextVar("assay_breaker_scope", default="query")


@contextmanager
def timeout_breaker(scope: str = "query") -> Iterator[None]:
    """Within this block (one `ask`, one audit, one eval), a host that timed out once is not asked again: later calls
    fail at once. Inside a wider block (an eval's asks) the wider one holds: each ask used to wait out the timeout."""
    if _timed_out.get() is not None:
        yield
        return
    token, named = _timed_out.set({}), _breaker_scope.set(scope)
    try:
        yield
    finally:
        _breaker_scope.reset(named)
        _timed_out.reset(token)


def skip_timed_out(host: str, what: str) -> None:
    """Raise at once when `host` already timed out in this run (the caller fails open, as it would on a timeout)."""
    down = _timed_out.get()
    if down is not None and _host_key(host) in down:
        raise NotSent(f"{what} skipped: its server timed out earlier in this {_breaker_scope.get()} "
                      f"({down[_host_key(host)]})")


def note_timeout(host: str, message: str) -> None:
    down = _timed_out.get()
    if down is not None:
        down.setdefault(_host_key(host), message)


def _host_key(url: str) -> str:
    return url.strip().rstrip("/").lower()


T = TypeVar("T")

# The connection was made and then cut before the reply was complete: the server was reached, so this is no
# "not reachable"; like a 5xx it is worth another attempt (a restarting or overloaded server drops connections).
DROPPED: tuple[type[Exception], ...] = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class CallOverdue(TimeoutError):
    """A call ran past its total time budget."""


def run_within(seconds: float, call: Callable[[], T]) -> T:
    """Return `call()`'s result, or raise CallOverdue once `seconds` have passed in total.

    HTTP clients' timeouts bound each socket read, not the reply: a server that drips a byte a second would hold the
    caller as long as it liked. So the call runs in a daemon thread (in a copy of this context) that the caller stops
    waiting for; an overdue thread ends by itself when the reply ends or its client's read timeout fires."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which decides what it means
            box["error"] = exc

    worker = threading.Thread(target=contextvars.copy_context().run, args=(work,), name="assay-model-call", daemon=True)
    worker.start()
    worker.join(max(0.0, seconds))
    if worker.is_alive():
        raise CallOverdue(f"no complete reply within {seconds:g}s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def scrub(text: str, *secrets: str) -> str:
    """`text` with the given keys and anything the redaction patterns catch replaced: some endpoints echo the key
    they refused, and error text ends up in reports an agent reads. Keys under 4 characters are no credential."""
    from assay.stages.core.redact import PLACEHOLDER, redact

    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, PLACEHOLDER)
    return redact(text)[0]


def reply_excerpt(body: str, *secrets: str, limit: int = 160) -> str:
    """One scrubbed line of at most `limit` characters from a server's reply body, for an error message.
    Scrubbed before it is cut, so a key cut in two cannot slip past both the literal match and the patterns."""
    line = " ".join(body.split())[:65536]
    return scrub(line, *secrets)[:limit]


def token_count(value: object) -> int:
    """A token count as a server reported it; 0 when it is missing or unreadable (null, text, negative, absurd):
    the call still counts, only its bookkeeping is unknown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or value != int(value) or not 0 <= value < 10**12:
        return 0
    return int(value)


@dataclass
class ChatResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 1
    latency_s: float = 0.0

    def as_call(self, purpose: str, backend: str):
        from assay.stages.core.artifacts import LLMCall

        return LLMCall(purpose=purpose, backend=backend, model=self.model, prompt_tokens=self.prompt_tokens,  # type: ignore[arg-type]
                       completion_tokens=self.completion_tokens, cached_tokens=self.cached_tokens, latency_s=round(self.latency_s, 3))


@dataclass
class OllamaBackend:
    """The official client. Each attempt has `timeout` seconds in total; 429, 5xx and a dropped connection are tried
    again (`retries`, like the cloud), a timeout is not: the breaker then skips the host for the rest of the query."""

    host: str
    timeout: float = 60.0
    retries: int = 2
    max_retry_wait: float = 30.0

    def __post_init__(self) -> None:
        self._client = ollama_client(self.host, self.timeout)

    def chat(
        self, model: str, system: str, user: str, schema: dict | None = None, num_ctx: int | None = None,
        keep_alive: int | str | None = None,
    ) -> ChatResult:
        import ollama

        skip_timed_out(self.host, f"Ollama {model}")
        started = time.perf_counter()
        options: dict = {"temperature": 0, "seed": 0}
        if num_ctx:
            options["num_ctx"] = num_ctx
        request: dict = {"model": model, "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                         "format": schema, "options": options, "keep_alive": keep_alive, "stream": False}
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(_backoff(attempt - 1, self.max_retry_wait))
            try:
                reply = run_within(self.timeout, lambda: self._client.chat(**request))
            except ollama.ResponseError as exc:
                if is_redirect(exc.status_code):
                    raise LLMError(ollama_redirect(self.host, exc.status_code), attempt + 1) from exc
                last = f"Ollama {model} answered {exc.status_code}: {reply_excerpt(str(exc.error))}"
                if exc.status_code == 429 or exc.status_code >= 500:
                    continue
                raise LLMError(last, attempt + 1) from exc
            except (httpx.TimeoutException, CallOverdue) as exc:
                note_timeout(self.host, f"after {self.timeout:g}s")
                raise LLMError(f"Ollama {model} timed out after {self.timeout:g}s", attempt + 1) from exc
            except DROPPED as exc:
                last = f"Ollama at {shown_url(self.host)} closed the connection before its reply was complete ({type(exc).__name__})"
                continue
            except (httpx.HTTPError, ConnectionError) as exc:
                raise LLMError(f"Ollama is not reachable at {shown_url(self.host)} ({type(exc).__name__})", attempt + 1) from exc
            except Exception as exc:  # noqa: BLE001 - the client can raise pydantic errors on odd replies
                raise LLMError(f"Ollama {model} returned an unreadable reply ({type(exc).__name__})", attempt + 1) from exc
            return ChatResult(
                text=reply.message.content or "", model=model, prompt_tokens=token_count(reply.prompt_eval_count),
                completion_tokens=token_count(reply.eval_count), calls=attempt + 1, latency_s=time.perf_counter() - started,
            )
        raise LLMError(f"{last} after {self.retries + 1} attempts", self.retries + 1)

    def release(self, model: str) -> None:
        """Unload a model now (keep_alive=0) so the next one has the GPU to itself."""
        try:
            skip_timed_out(self.host, "Ollama")  # a hung server would hold this up for a whole timeout
            run_within(self.timeout, lambda: self._client.generate(model=model, prompt="", keep_alive=0, stream=False))
        except Exception:  # noqa: BLE001 - releasing is best effort; the server evicts anyway
            pass


@dataclass
class CloudBackend:
    """OpenAI-compatible /chat/completions with JSON output, a timeout and bounded retries."""

    base_url: str
    api_key: str
    timeout: float = 60.0
    retries: int = 2
    max_retry_wait: float = 30.0

    def chat(self, model: str, system: str, user: str, json_output: bool = False) -> ChatResult:
        if not self.api_key:
            raise NotSent("no cloud API key configured (ASSAY_CLOUD_API_KEY)")
        body: dict = {
            "model": model, "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        if json_output:
            body["response_format"] = {"type": "json_object"}
        url = self.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {self.api_key}"}
        skip_timed_out(self.base_url, "the cloud endpoint")
        started = time.perf_counter()
        last, wait = "", 0.0
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(wait)
            try:
                resp = run_within(self.timeout, lambda: self._post(url, body, headers))
            except (httpx.TimeoutException, CallOverdue):
                last, wait = f"cloud endpoint timed out after {self.timeout:g}s", 0.0
                continue
            except DROPPED as exc:
                last = f"cloud endpoint closed the connection before its reply was complete ({type(exc).__name__})"
                wait = _backoff(attempt, self.max_retry_wait)
                continue
            except httpx.HTTPError as exc:
                raise LLMError(f"cloud endpoint not reachable ({type(exc).__name__})", attempt + 1) from exc
            if resp.status_code == 429 or resp.status_code >= 500:
                last, wait = f"cloud endpoint answered {resp.status_code}", _retry_after(resp, attempt, self.max_retry_wait)
                continue
            if resp.status_code >= 400:
                raise LLMError(f"cloud endpoint answered {resp.status_code}: {reply_excerpt(resp.text, self.api_key)}",
                               attempt + 1)
            return _cloud_result(resp, model, attempt + 1, time.perf_counter() - started)
        if last.startswith("cloud endpoint timed out"):
            note_timeout(self.base_url, f"after {self.timeout:g}s")
        raise LLMError(f"{last} after {self.retries + 1} attempts", self.retries + 1)

    def _post(self, url: str, body: dict, headers: dict[str, str]) -> httpx.Response:
        """One request on a client of its own: an attempt abandoned by `run_within` closes only what it opened."""
        with httpx.Client(timeout=self.timeout, trust_env=not proxy_free(self.base_url)) as client:
            return client.post(url, json=body, headers=headers)


def _cloud_result(resp: httpx.Response, model: str, calls: int, latency: float) -> ChatResult:
    """The reply's text, strictly; its bookkeeping (usage, model) leniently: odd fields there cost the ledger its
    token counts, never the answer."""
    try:
        data = resp.json()
        text = data["choices"][0]["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMError("cloud endpoint returned a reply without choices[0].message.content") from exc
    if not isinstance(text, str):
        raise LLMError(f"cloud endpoint returned a reply whose choices[0].message.content is not text ({type(text).__name__})")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    cached = token_count(usage.get("prompt_cache_hit_tokens")) or token_count(details.get("cached_tokens"))
    named = data.get("model")
    return ChatResult(
        text=text, model=named.strip() if isinstance(named, str) and named.strip() else model,
        prompt_tokens=token_count(usage.get("prompt_tokens")), completion_tokens=token_count(usage.get("completion_tokens")),
        cached_tokens=cached, calls=calls, latency_s=latency,
    )


def _retry_after(resp: httpx.Response, attempt: int, cap: float) -> float:
    header = resp.headers.get("retry-after")
    if header:
        try:
            return min(cap, max(0.0, float(header)))
        except ValueError:
            pass
    return _backoff(attempt, cap)


def _backoff(attempt: int, cap: float) -> float:
    """0.5 s doubling per attempt, at most `cap`."""
    return min(cap, 0.5 * (2**attempt))

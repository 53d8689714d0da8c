"""LLM backends: a local Ollama server (official client) and an OpenAI-compatible cloud API (httpx).

Both return the reply text or raise LLMError with one readable line. Local mode refuses any
endpoint that is not on the loopback interface, so nothing leaves the machine.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import urlparse

import httpx


class LLMError(RuntimeError):
    """A model call failed (down, slow, refused, malformed); the message is one line."""


class LocalModeViolation(LLMError):
    """Local mode was asked to reach a non-loopback address."""


def is_loopback_url(url: str) -> bool:
    host = urlparse(url if "://" in url else f"http://{url}").hostname or ""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost is not trusted: resolving it would itself be a lookup


def require_loopback(url: str, what: str) -> None:
    if not is_loopback_url(url):
        raise LocalModeViolation(f"local mode: refusing to contact {what} at {url} (not loopback); set ASSAY_MODE=hybrid to allow it")


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


# One query's hosts that timed out (None: outside a query, nothing remembered). A hung server accepts and never
# answers: without this each later stage of the same `ask` (judge batches, writer, guard) waited out its own timeout.
_timed_out: ContextVar[dict[str, str] | None] = ContextVar("assay_timed_out_hosts", default=None)


@contextmanager
def timeout_breaker() -> Iterator[None]:
    """Within this block (one `ask`), a host that timed out once is not asked again: later calls fail at once."""
    token = _timed_out.set({})
    try:
        yield
    finally:
        _timed_out.reset(token)


def skip_timed_out(host: str, what: str) -> None:
    """Raise at once when `host` already timed out in this query (the caller fails open, as it would on a timeout)."""
    down = _timed_out.get()
    if down is not None and _host_key(host) in down:
        raise LLMError(f"{what} skipped: its server timed out earlier in this query ({down[_host_key(host)]})")


def note_timeout(host: str, message: str) -> None:
    down = _timed_out.get()
    if down is not None:
        down.setdefault(_host_key(host), message)


def _host_key(url: str) -> str:
    return url.strip().rstrip("/").lower()


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
    host: str
    timeout: float = 60.0

    def __post_init__(self) -> None:
        import ollama

        # trust_env is httpx's: off, proxies from the environment are not used (a loopback server needs none)
        self._client = ollama.Client(host=self.host, timeout=self.timeout, trust_env=not proxy_free(self.host))

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
        try:
            reply = self._client.chat(
                model=model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                format=schema, options=options, keep_alive=keep_alive, stream=False,
            )
        except ollama.ResponseError as exc:
            raise LLMError(f"Ollama {model} answered {exc.status_code}: {str(exc.error)[:160]}") from exc
        except httpx.TimeoutException as exc:
            note_timeout(self.host, f"after {self.timeout:g}s")
            raise LLMError(f"Ollama {model} timed out after {self.timeout:g}s") from exc
        except (httpx.HTTPError, ConnectionError) as exc:
            raise LLMError(f"Ollama is not reachable at {self.host} ({type(exc).__name__})") from exc
        except Exception as exc:  # noqa: BLE001 - the client can raise pydantic errors on odd replies
            raise LLMError(f"Ollama {model} returned an unreadable reply ({type(exc).__name__})") from exc
        return ChatResult(
            text=reply.message.content or "", model=model,
            prompt_tokens=reply.prompt_eval_count or 0, completion_tokens=reply.eval_count or 0,
            latency_s=time.perf_counter() - started,
        )

    def release(self, model: str) -> None:
        """Unload a model now (keep_alive=0) so the next one has the GPU to itself."""
        try:
            skip_timed_out(self.host, "Ollama")  # a hung server would hold this up for a whole timeout
            self._client.generate(model=model, prompt="", keep_alive=0, stream=False)
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
            raise LLMError("no cloud API key configured (ASSAY_CLOUD_API_KEY)")
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
        last = ""
        with httpx.Client(timeout=self.timeout, trust_env=not proxy_free(self.base_url)) as client:
            for attempt in range(self.retries + 1):
                try:
                    resp = client.post(url, json=body, headers=headers)
                except httpx.TimeoutException:
                    last = f"cloud endpoint timed out after {self.timeout:.0f}s"
                    continue
                except httpx.HTTPError as exc:
                    raise LLMError(f"cloud endpoint not reachable ({type(exc).__name__})") from exc
                if resp.status_code == 429 or resp.status_code >= 500:
                    last = f"cloud endpoint answered {resp.status_code}"
                    if attempt < self.retries:
                        time.sleep(_retry_after(resp, attempt, self.max_retry_wait))
                    continue
                if resp.status_code >= 400:
                    raise LLMError(f"cloud endpoint answered {resp.status_code}: {resp.text[:160]}")
                try:
                    data = resp.json()
                    text = data["choices"][0]["message"]["content"] or ""
                except (ValueError, KeyError, IndexError, TypeError) as exc:
                    raise LLMError("cloud endpoint returned a reply without choices[0].message.content") from exc
                usage = data.get("usage") or {}
                cached = usage.get("prompt_cache_hit_tokens") or (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
                return ChatResult(
                    text=text, model=data.get("model", model), prompt_tokens=usage.get("prompt_tokens", 0),
                    completion_tokens=usage.get("completion_tokens", 0), cached_tokens=cached, calls=attempt + 1,
                    latency_s=time.perf_counter() - started,
                )
        if last.startswith("cloud endpoint timed out"):
            note_timeout(self.base_url, f"after {self.timeout:g}s")
        raise LLMError(f"{last} after {self.retries + 1} attempts")


def _retry_after(resp: httpx.Response, attempt: int, cap: float) -> float:
    header = resp.headers.get("retry-after")
    if header:
        try:
            return min(cap, max(0.0, float(header)))
        except ValueError:
            pass
    return min(cap, 0.5 * (2**attempt))

"""Settings, read once from ASSAY_* environment variables (and overridable per call)."""

from __future__ import annotations

import json
import math
import os
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


# Shipped data (tokenizer, thresholds, word lists, the learned phrasing model), found through the installed
# package `assay.data` so a wheel works from any directory; a checkout's editable install maps it to `data/`.
DATA_DIR = Path(str(files("assay.data")))

# Upper bounds of the count-like knobs, checked up front: a huge value passed the `ge` checks and then failed late
# (top_k >= 2**31 lost the answer at the int32 snapshot write; a search pool >= 2**32 overflowed the vector store
# and blamed the index; a debounce beyond C's long overflowed in watchfiles). Far above any useful value.
MAX_RESULTS = 1000  # ASSAY_TOP_K, ASSAY_POOL_SIZE, `search -k`
MAX_DEBOUNCE_MS = 600_000  # ten minutes of quiet


class Settings(BaseSettings):
    """Every knob Assay has. The README's configuration table is generated from these fields."""

    model_config = SettingsConfigDict(env_prefix="ASSAY_", extra="ignore", env_ignore_empty=True)  # `ASSAY_X=` is unset

    mode: Literal["local", "hybrid", "cloud"] = Field(
        "local", description="local: nothing leaves the machine (loopback only); hybrid/cloud allow a cloud endpoint"
    )
    max_file_bytes: int = Field(1_000_000, ge=1, description="files larger than this are skipped (counted as too_large)")
    index_generated: bool = Field(
        False, description="index generated files (`DO NOT EDIT`, `@generated`) and minified JS/CSS"
    )
    chunk_lines: int = Field(40, ge=1, description="bodies longer than this are split on line boundaries")
    chunk_chars: int = Field(1200, ge=1, description="bodies longer than this many characters are split too")
    parse_workers: int = Field(
        0, ge=0, description="processes that parse a large index run (0: one per CPU core, at most 4; 1: in-process)"
    )
    dask: str = Field("", description="spread index runs over Dask through Prefect: local:N or tcp://host:port (Scale-out)")
    embedder: str = Field(
        "minilm", description="minilm (ONNX, offline), static (from MiniLM: ~100x faster indexing, weaker on long "
        "questions) or ollama:<model>; unset, an indexed workspace keeps its own"
    )
    embed_batch: int = Field(16, ge=1, description="texts per embedding call")
    embed_tokens: int = Field(  # MiniLM has 512 positions: a longer window fails inside ONNX
        128, ge=16, le=512, description="model window of the default embedder"
    )
    store_batch: int = Field(1024, ge=1, description="records per Chroma upsert")
    chroma_url: str | None = Field(None, description="use a Chroma server (HttpClient) instead of .assay/chroma")
    pool_size: int = Field(30, ge=1, le=MAX_RESULTS, description="candidates retrieved per query (dense and BM25 each)")
    ranking: Literal["code", "rrf"] = Field(
        "code", description="code: code-aware ranking (definitions, paths, files, penalties); rrf: plain rank fusion"
    )
    distance_floor: float | None = Field(None, ge=0, description="drop dense hits with cosine distance above this")
    top_k: int = Field(5, ge=1, le=MAX_RESULTS, description="passages kept for synthesis after ranking")
    max_tokens: int | None = Field(
        2000, ge=0, description="budget of the `ask` report text (whole lines, most useful first)"
    )
    judge: Literal["local", "ollama", "cloud", "systemone", "none"] = Field("local", description="passage judge backend")
    synth: Literal["extractive", "ollama", "cloud"] = Field("extractive", description="answer writer backend")
    route: Literal["auto", "local", "cloud"] = Field("auto", description="force synthesis routing")
    guard: Literal["local", "ollama", "cloud", "systemone"] = Field(
        "local", description="answer guard backend"
    )
    ollama_host: str = Field("http://127.0.0.1:11434", description="Ollama server")
    ollama_judge_model: str = Field("qwen2.5-coder:7b", description="Ollama model that judges passages")
    ollama_synth_model: str = Field("qwen2.5-coder:7b", description="Ollama model that writes answers")
    ollama_num_ctx_max: int = Field(8192, ge=512, description="largest context window to ask Ollama for")
    cloud_base_url: str = Field("https://api.deepseek.com/v1", description="OpenAI-compatible endpoint")
    cloud_api_key: SecretStr = Field(SecretStr(""), description="API key for the cloud endpoint (never logged or stored)")
    cloud_model: str = Field("deepseek-chat", description="cloud model for synthesis")
    cloud_judge_model: str = Field("deepseek-chat", description="cloud model for judging")
    systemone_base_url: str = Field(
        "https://api.typesafe.ai", description="System One (Jev) server (TypeSafe's or a local one)"
    )
    systemone_api_key: SecretStr = Field(SecretStr(""), description="its API key (never logged or stored; loopback needs none)")
    systemone_model: str = Field("jev-latest", description="System One judge model")
    systemone_timeout: float = Field(
        5.0, gt=0, description="seconds for one System One judgment, retries included; then the local judge decides"
    )
    systemone_query_gate: bool = Field(
        False, description="also ask the anchor's query gate (in_domain, specificity, answerable_from_code)"
    )
    prices: str | None = Field(
        '{"deepseek-chat": [0.27, 1.10, 0.07], "systemone": [0.042, 0]}',
        description="JSON {model or backend: [input, output, cached input]}, USD per million tokens",
    )
    llm_timeout: float = Field(60.0, gt=0, description="seconds per LLM call")
    llm_retries: int = Field(2, ge=0, description="retries: 429/5xx, cloud timeouts")
    thresholds: str | None = Field(None, description="JSON file overriding data/thresholds.json")
    allowed_roots: str | None = Field(
        None, description="os.pathsep-separated roots the MCP server may touch (default: the client's roots, else its working directory)"
    )
    watch: bool = Field(True, description="the MCP server keeps each workspace it indexes fresh")
    watch_debounce_ms: int = Field(1600, ge=0, le=MAX_DEBOUNCE_MS, description="changes within this window are one re-index")
    orchestration: Literal["auto", "prefect", "direct"] = Field(
        "auto", description="auto: on Prefect when an API records runs, else in-process; prefect: always; direct: never"
    )

    def chosen_top_k(self) -> int | None:
        """top_k when the user chose it (ASSAY_TOP_K, --top-k), else None: an ASSAY_THRESHOLDS file's `top_k`, then
        the backend's default, apply only to a run that did not choose."""
        return self.top_k if "top_k" in self.model_fields_set else None

    @field_validator("prices")
    @classmethod
    def _prices_readable(cls, value: str | None) -> str | None:
        """Checked when settings load: a bad price table used to fail `ask` after the answer was made."""
        parse_prices(value)
        return value

    @field_validator("embedder")
    @classmethod
    def _embedder_has_model(cls, value: str) -> str:
        """`ollama:` with no model failed every index run in pydantic's words, and the workspace kept that embedder."""
        if value.startswith("ollama:") and not value[len("ollama:"):].strip():
            raise ValueError("'ollama:' names no model; use ollama:<model> (e.g. ollama:nomic-embed-text)")
        return value

    @field_validator("ollama_host", "chroma_url", "cloud_base_url", "systemone_base_url")
    @classmethod
    def _url_readable(cls, value: str | None) -> str | None:
        """Checked when settings load: a bad port or bracket failed at the first request in words naming no
        variable (`Port out of range 0-65535`, `Invalid IPv6 URL`)."""
        if value is not None:
            check_url(value)
        return value

    @field_validator("allowed_roots")
    @classmethod
    def _roots_readable(cls, value: str | None) -> str | None:
        """`:` alone refused every workspace ("outside the allowed roots ()"), and ` /x` became the root `<cwd>/ /x`."""
        if value is not None:
            check_roots(value)
        return value


def check_url(url: str) -> None:
    """A one-line ValueError when `url` cannot be read as a URL (its host and port)."""
    try:
        urlsplit(url.strip()).port  # noqa: B018 - reading the port is the check
    except ValueError as exc:
        raise ValueError(f"not a valid URL ({exc}); expected e.g. http://127.0.0.1:8000") from None


def check_roots(spec: str) -> None:
    """ASSAY_ALLOWED_ROOTS: folders separated by os.pathsep; a one-line ValueError when none is named or one has
    spaces around it (a separator followed by a space, most likely)."""
    named = [part for part in spec.split(os.pathsep) if part.strip()]
    if not named:
        raise ValueError(f"names no folder; list the allowed folders separated by {os.pathsep!r}, or unset it")
    for part in named:
        if part != part.strip():
            raise ValueError(f"the root {part!r} has spaces around it; separate the folders with {os.pathsep!r} alone")


def variable_error(err: Any, variable: bool = True) -> str:
    """One pydantic error in one line: `ASSAY_TOP_K: Input should be ... (got '0')` for a setting read from its
    ASSAY_* variable (the variable to fix named; the CLI and the MCP server word it alike), else the field's name."""
    field = ".".join(str(part) for part in err.get("loc", ()))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    got = f" (got {repr(err['input'])[:80]})" if "input" in err else ""
    return f"{'ASSAY_' + field.upper() if variable else field}: {msg}{got}"


def env_setting(name: str) -> Any:
    """One setting as Settings() reads it (ASSAY_<NAME>; empty is unset, so the default), checked alone. For the
    doors that decide where a run goes (mode, orchestration): they must agree with Settings (`ASSAY_MODE=` is local,
    and was read as 'not local'), but must not fail on another variable's bad value (the MCP server starts before a
    tool call can report it). A bad value is a one-line ValueError naming the variable, whatever the door."""
    from pydantic import ValidationError
    from pydantic_settings import EnvSettingsSource

    given = EnvSettingsSource(Settings)()
    settings = Settings.model_construct()
    if name in given:
        try:
            Settings.__pydantic_validator__.validate_assignment(settings, name, given[name])
        except ValidationError as exc:
            raise ValueError(variable_error({**exc.errors()[0], "loc": (name,), "input": given[name]})) from None
    return getattr(settings, name)


def eval_dir() -> Path:
    """ASSAY_EVAL_DIR, where `assay eval` keeps corpora and results. Empty is unset (~/.assay/eval), as for every other
    variable: `Path("")` was the current folder, where corpora were downloaded and results written. `~` is expanded."""
    raw = os.environ.get("ASSAY_EVAL_DIR", "").strip()
    return Path(raw).expanduser() if raw else Path.home() / ".assay" / "eval"


PRICES_FORM = '{"model or backend": [input, output, cached input]} in USD per million tokens'


def parse_prices(setting: str | None) -> dict[str, list[float]]:
    """ASSAY_PRICES as {name: [input, output(, cached input)]}; a ValueError of one line says what is wrong."""
    if not setting:
        return {}
    data = json_object(setting, f"expected {PRICES_FORM}")
    return {str(name): _price(name, value) for name, value in data.items()}


def json_object(text: str, form: str, label: str = "") -> dict:
    """A setting's JSON object, or a one-line error (`label: ` first) that says what was wrong and the form wanted."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{label}not valid JSON ({exc}); {form}") from None
    if not isinstance(data, dict):
        kind = "null" if data is None else type(data).__name__  # JSON's word, not Python's `NoneType`
        raise ValueError(f"{label}holds a JSON {kind}, not an object; {form}")
    return data


def _price(name: str, value: object) -> list[float]:
    numbers = value if isinstance(value, list) else []
    ok = 2 <= len(numbers) <= 3 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0 for x in numbers)
    if not ok:
        raise ValueError(f"the price of {name!r} must be 2 or 3 numbers >= 0 (got {json.dumps(value)}); expected {PRICES_FORM}")
    return [float(x) for x in numbers]


def settings_table() -> str:
    """The README's configuration table, generated from the fields above."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.default
        empty = default == "" or (isinstance(default, SecretStr) and not default.get_secret_value())
        shown = "(none)" if default is None else "(empty)" if empty else f"`{default}`"
        rows.append(f"| `ASSAY_{name.upper()}` | {shown} | {field.description or ''} |")
    return "\n".join(rows)

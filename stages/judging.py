"""Choose and run a judge backend by name (local, ollama, cloud, none) with one batched call."""

from __future__ import annotations

from stages import judge as local_judge
from stages import judge_llm
from stages.artifacts import Candidate, Judgment
from stages.config import Settings
from stages.llm import CloudBackend, OllamaBackend


def ollama_backend(settings: Settings) -> OllamaBackend:
    return OllamaBackend(settings.ollama_host, timeout=settings.llm_timeout)


def cloud_backend(settings: Settings) -> CloudBackend:
    return CloudBackend(settings.cloud_base_url, settings.cloud_api_key.get_secret_value(), settings.llm_timeout, settings.llm_retries)


def run_judge(
    backend: str, question: str, candidates: list[Candidate], settings: Settings,
    keep_alive: int | str | None = -1, ollama: OllamaBackend | None = None,
) -> Judgment:
    if backend == "local":
        return local_judge.judge_local(question, candidates)
    if backend == "none":
        return Judgment(backend="none", scores={}, calls=0)
    if backend == "cloud":
        return judge_llm.judge_with_cloud(cloud_backend(settings), settings.cloud_judge_model, question, candidates)
    if backend == "ollama":
        return judge_llm.judge_with_ollama(
            ollama or ollama_backend(settings), settings.ollama_judge_model, question, candidates,
            settings.ollama_num_ctx_max, keep_alive=keep_alive,
        )
    raise ValueError(f"unknown judge {backend!r}; use local, ollama, cloud or none")

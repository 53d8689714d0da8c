"""Choose and run a judge backend by name (local, ollama, cloud, systemone, none) with one batched call."""

from __future__ import annotations

from assay.stages.core.artifacts import Candidate, Judgment, PassageScores, PremiseFinding, Thresholds
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import CloudBackend, OllamaBackend, require_loopback
from assay.stages.core.systemone_client import SystemOneBackend
from assay.stages.query.judge import local as local_judge
from assay.stages.query.judge import llm as judge_llm
from assay.stages.query.judge import systemone as judge_systemone
from assay.stages.query.premise import check_question, entity_of, resolver_from
from assay.stages.query.threshold import default_thresholds


def ollama_backend(settings: Settings) -> OllamaBackend:
    return OllamaBackend(settings.ollama_host, timeout=settings.llm_timeout, retries=settings.llm_retries)


def cloud_backend(settings: Settings) -> CloudBackend:
    return CloudBackend(settings.cloud_base_url, settings.cloud_api_key.get_secret_value(), settings.llm_timeout, settings.llm_retries)


def systemone_backend(settings: Settings) -> SystemOneBackend:
    """Local mode reaches only a loopback server (a local Jev-compatible one); hybrid/cloud any host of the wire."""
    if settings.mode == "local":
        require_loopback(settings.systemone_base_url, "the System One server")
    return SystemOneBackend(settings.systemone_base_url, settings.systemone_api_key.get_secret_value(),
                            settings.systemone_model, settings.systemone_timeout, settings.llm_retries)


def with_local_floor(judgment: Judgment, candidates: list[Candidate], premises: list[PremiseFinding]) -> Judgment:
    """An LLM judge may miss what the local checks prove: a failed premise and an injection signal stay as floors
    under its contradicts and injection scores, and the checked premises travel with the judgment."""
    contra = local_judge.premise_scores(premises)
    scores: dict[str, PassageScores] = {}
    for c in candidates:
        s = judgment.scores.get(c.id)
        if s is None:
            continue  # the judge failed for this passage: the threshold stage fails open, with the reason
        injection = local_judge.passage_injection(c)[0]
        scores[c.id] = s.model_copy(update={"contradicts": max(s.contradicts, contra.get(c.id, 0.0)),
                                            "injection": max(s.injection, injection)})
    conflict = max([judgment.conflict or 0.0, *contra.values()]) if judgment.conflict is not None or contra else None
    return judgment.model_copy(update={"scores": scores, "premises": premises, "conflict": conflict})


def local_thresholds(settings: Settings) -> Thresholds:
    """The thresholds the threshold stage holds the local judge's scores to, a user's override included."""
    return default_thresholds("local", settings.thresholds, settings.chosen_top_k())


def run_judge(
    backend: str, question: str, candidates: list[Candidate], settings: Settings,
    keep_alive: int | str | None = -1, ollama: OllamaBackend | None = None, premises: list[PremiseFinding] | None = None,
) -> Judgment:
    """`premises`: the question's premises checked against the whole index (None: against the passages only)."""
    if backend == "local":
        return local_judge.judge_local(question, candidates, premises, local_thresholds(settings))
    if backend == "none":
        return Judgment(backend="none", scores={}, calls=0)
    if premises is None:
        premises = check_question(question, resolver_from(entity_of(c) for c in candidates))
    facts = [f.fact for f in premises if not f.holds]
    if backend == "cloud":
        judged = judge_llm.judge_with_cloud(cloud_backend(settings), settings.cloud_judge_model, question, candidates, facts)
    elif backend == "systemone":
        judged = judge_systemone.judge_with_systemone(systemone_backend(settings), question, candidates, facts,
                                                      settings.systemone_query_gate)
        if candidates and not judged.scores:  # dead, malformed or no verdict at all: the local judge decides
            return judge_systemone.fall_back(judged, local_judge.judge_local(question, candidates, premises,
                                                                             local_thresholds(settings)))
    elif backend == "ollama":
        judged = judge_llm.judge_with_ollama(
            ollama or ollama_backend(settings), settings.ollama_judge_model, question, candidates,
            settings.ollama_num_ctx_max, keep_alive=keep_alive, facts=facts,
        )
    else:
        raise ValueError(f"unknown judge {backend!r}; use local, ollama, cloud, systemone or none")
    return with_local_floor(judged, candidates, premises)

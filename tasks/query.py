"""Prefect tasks of the query flow. Tasks that run a local GPU model hold the `gpu` slot."""

from __future__ import annotations

from pathlib import Path

from assay.stages.audit.snapshots import write_snapshot
from assay.stages.core.artifacts import (Answer, Candidate, GuardReport, Judgment, PremiseCheck, PremiseFinding, QueryReport,
                                         Retrieval, RouteDecision, Selection)
from assay.stages.core.config import Settings
from assay.stages.index.embed import index_embedder
from assay.stages.index.store import read_manifest
from assay.stages.query import synthesize as synth
from assay.stages.query.judge.backends import cloud_backend, ollama_backend, run_judge
from assay.stages.query.premise import check_workspace
from assay.stages.query.report import render_markdown
from assay.stages.query.retrieve import ranking_for
from assay.stages.query.retrieve import retrieve as retrieve_stage
from assay.stages.query.route import route_for
from assay.stages.query.threshold import default_thresholds, select
from assay.tasks.artifacts import publish_markdown
from assay.tasks.gpu import gpu_slot
from assay.tasks.lazy import task


@task(name="retrieve")
def retrieve(root: Path, question: str, settings: Settings) -> Retrieval:
    manifest = read_manifest(root)
    return retrieve_stage(
        root, question, manifest, index_embedder(manifest.embedder, settings), settings.pool_size,
        settings.distance_floor, settings.chroma_url, ranking=ranking_for(settings),
    )


@task(name="premises")
def premises(root: Path, question: str, candidates: list[Candidate]) -> PremiseCheck:
    return check_workspace(root, question, candidates)


@task(name="called-by")
def called_by(root: Path, ids: list[str]) -> dict[str, int]:
    from assay.stages.index.store import Catalog, index_generation
    from assay.stages.query.graph import called_by_counts

    catalog = Catalog(root)
    try:
        return called_by_counts(catalog, ids, memo=(str(root), index_generation(root)))
    finally:
        catalog.close()


@task(name="route")
def route(question: str, settings: Settings) -> RouteDecision:
    return route_for(question, settings)


@task(name="judge")
def judge(question: str, candidates: list[Candidate], settings: Settings, decision: RouteDecision,
          premises: list[PremiseFinding] | None = None) -> Judgment:
    """One batched judgment. Ollama: pinned while cloud synthesis follows, released before a local model loads."""
    if settings.judge != "ollama":
        return run_judge(settings.judge, question, candidates, settings, premises=premises)
    backend = ollama_backend(settings)
    local_synth_model = decision.target == "local" and settings.synth == "ollama"
    with gpu_slot(settings.llm_timeout * 4):
        try:
            return run_judge("ollama", question, candidates, settings, keep_alive=0 if local_synth_model else -1, ollama=backend,
                             premises=premises)
        finally:
            if local_synth_model and settings.ollama_judge_model != settings.ollama_synth_model:
                backend.release(settings.ollama_judge_model)


@task(name="threshold")
def threshold(question: str, candidates: list[Candidate], judgment: Judgment, settings: Settings) -> Selection:
    th = default_thresholds(judgment.backend, settings.thresholds, settings.chosen_top_k())
    return select(candidates, judgment, th, question)


@task(name="synthesize")
def synthesize(question: str, selection: Selection, decision: RouteDecision, settings: Settings) -> Answer:
    passages = selection.included
    if decision.target == "cloud":
        return synth.synthesize_with_cloud(cloud_backend(settings), settings.cloud_model, question, passages)
    if settings.synth == "ollama":
        with gpu_slot(settings.llm_timeout * 4):
            return synth.synthesize_with_ollama(
                ollama_backend(settings), settings.ollama_synth_model, question, passages, settings.ollama_num_ctx_max
            )
    return synth.extractive(question, passages)


@task(name="guard")
def guard(root: Path, answer: Answer, selection: Selection, settings: Settings) -> tuple[Answer, GuardReport]:
    """The answer's claims checked against its passages and the index; fabricated and contradicted ones marked."""
    from assay.stages.index.store import Catalog
    from assay.stages.query.guard import IndexFacts
    from assay.stages.query.guard_llm import run_guard
    from assay.stages.query.premise import catalog_resolver

    catalog = Catalog(root)
    try:
        facts = IndexFacts(catalog_resolver(catalog.by_name), catalog.files)
        passages = [rp.candidate for rp in selection.included]
        if settings.guard == "ollama":
            with gpu_slot(settings.llm_timeout * 2):
                text, report = run_guard("ollama", answer.text, passages, facts, settings)
        else:
            text, report = run_guard(settings.guard, answer.text, passages, facts, settings)
    finally:
        catalog.close()
    return answer.model_copy(update={"text": text}), report


@task(name="report")
def publish(report: QueryReport) -> QueryReport:
    publish_markdown("query-report", render_markdown(report), "Assay answer with receipts")
    return report


@task(name="usage-ledger", retries=2, retry_delay_seconds=1)
def ledger(root: Path, report: QueryReport, settings: Settings) -> str:
    from assay.stages.query.ledger import prices_from, record

    return str(record(root, report, prices_from(settings.prices)) or "")


@task(name="audit-snapshot", retries=2, retry_delay_seconds=1)
def snapshot(root: Path, report: QueryReport) -> str:
    return str(write_snapshot(root, report))

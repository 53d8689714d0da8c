"""The query flow: retrieve -> premises -> route -> batch-judge -> threshold -> synthesize -> guard -> report -> audit snapshot."""

from __future__ import annotations

import uuid

from assay.flows import runtime  # noqa: F401

from assay.flows.runtime import Caller, Stopwatch, flow_exports, lazy_flow, prefect_call, run_flow
from assay.stages.core.artifacts import QueryReport
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import LLMError, require_local_stores, require_loopback, timeout_breaker
from assay.stages.core.workspace import resolve_workspace, state_dir, state_writable
from assay.stages.index.store import read_manifest
from assay.stages.query.budget import file_tokens
from assay.stages.query.report import make_report
from assay.stages.query.retrieve import check_query_text
from assay.stages.query.synthesize import state_corrections
from assay.stages.query.threshold import override_values
from assay.tasks import query as t


def check_local_mode(settings: Settings) -> None:
    """Local mode: every endpoint must be loopback and no cloud backend may be chosen."""
    if settings.mode != "local":
        return
    if settings.judge == "cloud":
        raise LLMError("local mode: the cloud judge is not allowed; use --judge local|ollama|none or ASSAY_MODE=hybrid")
    if settings.guard == "cloud":
        raise LLMError("local mode: the cloud guard is not allowed; use --guard local|ollama or ASSAY_MODE=hybrid")
    if "ollama" in (settings.judge, settings.synth, settings.guard):
        require_loopback(settings.ollama_host, "Ollama")
    if "systemone" in (settings.judge, settings.guard):  # a local Jev-compatible server only
        require_loopback(settings.systemone_base_url, "the System One server")
    require_local_stores(settings)


def query_pipeline(workspace: str, question: str, settings: Settings, call: Caller = prefect_call) -> QueryReport:
    question = check_query_text(question, "question")  # empty or past the length limit: one line
    question = " ".join(question.split())
    check_local_mode(settings)
    root = resolve_workspace(workspace)
    require_local_stores(settings, read_manifest(root).embedder)  # the workspace's own embedder embeds the question
    if settings.thresholds:  # a bad ASSAY_THRESHOLDS file is named before any model is asked
        override_values(settings.thresholds, settings.judge)
    with timeout_breaker():  # a host that timed out in one stage is not waited on again by a later one
        return _answer(root, question, settings, call)


def _answer(root, question: str, settings: Settings, call: Caller) -> QueryReport:
    watch = Stopwatch()
    lap = watch.lap

    retrieval = call(t.retrieve, root, question, settings)
    lap("retrieve")
    checked = call(t.premises, root, question, retrieval.candidates)
    candidates = retrieval.candidates + checked.added  # a definition a failed premise cites is judged and cited too
    lap("premises")
    decision = call(t.route, question, settings)
    lap("route")
    judgment = call(t.judge, question, candidates, settings, decision, checked.findings)
    lap("judge")
    selection = call(t.threshold, question, candidates, judgment, settings)
    lap("threshold")
    answer = call(t.synthesize, question, selection, decision, settings)
    lap("synthesize")
    answer, guard = call(t.guard, root, answer, selection, settings)
    answer = state_corrections(answer, judgment.premises)  # the checker's own corrections need no guard
    lap("guard")
    notes = [retrieval.note] if retrieval.note else []
    recorded = state_writable(root)
    if not recorded:
        notes.append(f"{state_dir(root)} is read-only: this answer's judgments and model usage are not recorded "
                     "(`assay audit` and `assay usage` will not see it)")
    called_by = call(t.called_by, root, [rp.candidate.id for rp in selection.included])
    report = make_report(uuid.uuid4().hex[:12], question, str(root), answer, selection, judgment, decision, watch.timings, notes,
                         called_by, retrieval.freshness, settings.max_tokens,
                         file_tokens(root, [rp.candidate.file for rp in selection.included]), guard)
    report = call(t.publish, report)
    if recorded:
        call(t.snapshot, root, report)
        call(t.ledger, root, report, settings)
    lap("report")
    report.timings = watch.timings
    return report


@lazy_flow("assay-query")
def _query_flow(workspace: str, question: str, settings: Settings | None = None) -> QueryReport:
    """Answer a question about a workspace with judged, cited evidence."""
    from prefect.runtime import flow_run

    report = query_pipeline(workspace, question, settings or Settings())
    report.flow_run_id = str(flow_run.id) if flow_run.id else None  # the receipt says where the run is recorded
    return report


def run_query(workspace: str, question: str, settings: Settings | None = None) -> QueryReport:
    s = settings or Settings()
    return run_flow(_query_flow, lambda workspace, question, settings, call: query_pipeline(workspace, question, settings, call),
                    workspace, question, settings=s)


__getattr__ = flow_exports(query_flow=_query_flow)  # the Prefect flow, built on first access (prefect.yaml)

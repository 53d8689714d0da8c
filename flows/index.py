"""The index flow: discover -> plan -> parse -> embed -> store -> purge stale -> report."""

from __future__ import annotations

from flows import runtime  # noqa: F401  (Prefect settings before Prefect loads)
from prefect import flow

from flows.runtime import Caller, Stopwatch, prefect_call, run_flow
from stages.artifacts import IndexReport
from stages.config import Settings
from stages.embed import embedder_for
from stages.incremental import build_report, next_collection, next_manifest
from stages.progress import progress_for
from stages.store import Catalog, VectorStore, write_lock
from stages.workspace import collection_name, resolve_workspace
from tasks import index as t


EMBED_STORE_BATCH = 1024


def index_pipeline(workspace: str, settings: Settings, rebuild: bool = False, call: Caller = prefect_call) -> IndexReport:
    root = resolve_workspace(workspace)
    watch = Stopwatch()
    lap = watch.lap

    discovery = call(t.discover, root, settings)
    lap("discover")
    with write_lock(root):
        previous, plan = call(t.plan, root, discovery, settings, rebuild)
        lap("plan")
        parsed = call(t.parse, root, plan, settings)
        lap("parse")
        collection = next_collection(previous, plan, collection_name(root))
        entities = [e for pf in parsed.files for e in pf.entities]
        if plan.rebuild and previous is not None and previous.notes:
            entities.extend(Catalog(root).get(previous.notes).values())
        sink = progress_for(root)
        sink.start("embed", len(entities))
        truncated = 0
        for start in range(0, max(len(entities), 1), EMBED_STORE_BATCH):
            batch = entities[start : start + EMBED_STORE_BATCH]  # bounded memory: embed and store in slices
            embedded = call(t.embed, root, batch, settings)
            truncated += embedded.truncated
            lap("embed")
            call(t.store, root, collection, embedded, batch, settings)
            lap("store")
        embedder = embedder_for(settings)
        sources = {f.path: f for f in plan.to_parse}
        manifest = next_manifest(root, previous, plan, parsed, sources, embedder.name, embedder.dimension, collection)
        call(t.purge, root, collection, manifest, settings)
        lap("purge")
        if previous is not None and previous.collection and previous.collection != collection:
            VectorStore(root, settings.chroma_url).drop(previous.collection)
    catalog = Catalog(root)
    data = build_report(
        root, discovery, plan, parsed, manifest, len(entities), truncated, watch.timings,
        catalog.counts("kind"), catalog.counts("language"),
    )
    return call(t.report, data)


@flow(name="assay-index", log_prints=False, validate_parameters=False)
def index_flow(workspace: str, rebuild: bool = False, settings: Settings | None = None) -> IndexReport:
    """Index (or incrementally re-index) a workspace into its own `.assay/` store."""
    return index_pipeline(workspace, settings or Settings(), rebuild)


def run_index(workspace: str, settings: Settings | None = None, rebuild: bool = False) -> IndexReport:
    """Entry point for the CLI and MCP server: a Prefect flow run, or direct stage calls."""
    s = settings or Settings()
    return run_flow(index_flow, lambda workspace, rebuild, settings, call: index_pipeline(workspace, settings, rebuild, call),
                    workspace, rebuild=rebuild, settings=s)

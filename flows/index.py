"""The index flow: discover -> plan -> parse + records -> purge stale + BM25 (queryable) -> open vectors -> embed -> vectors
(injection scan beside them) -> report."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from assay.flows import runtime  # noqa: F401  (Prefect settings before Prefect loads)

from assay.flows.dask import Spread, spread_for
from assay.flows.runtime import Caller, Stopwatch, flow_exports, lazy_flow, orchestration_mode, prefect_call, run_flow
from assay.stages.core import registry
from assay.stages.core.artifacts import IndexReport
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import require_local_stores
from assay.stages.core.progress import LEXICAL, STORED, ProgressSink, StatusSink, progress_for, status_run
from assay.stages.core.workspace import collection_name, narrow_state_dir, resolve_workspace
from assay.stages.index.embed import check_switch, embedder_for
from assay.stages.index.incremental import (
    build_report, carried_pending, merge_shares, moved_reason, next_collection, next_manifest, refuse_newer, shares,
    stored_vectors,
)
from assay.stages.index.notes import backfill_notes_log, recover_notes, rescue_notes
from assay.stages.index.report import skipped_named
from assay.stages.index.state_db import QUICK_CHECK_BYTES, damaged_dbs, set_aside_damaged_dbs
from assay.stages.index.storage_errors import storage_failure
from assay.stages.index.store import Catalog, VectorStore, mark_embedded, write_lock
from assay.stages.index.vector_cache import EmbedCache, remember, split_cached
from assay.tasks import index as t


EMBED_STORE_BATCH = 1024


def index_pipeline(workspace: str, settings: Settings, rebuild: bool = False, call: Caller = prefect_call,
                   spread: Spread | None = None) -> IndexReport:
    """Two phases under the write lock. Lexical: parsed entities go to the catalog (share by share, as parse
    workers finish), stale ones are purged, BM25 is rebuilt and the manifest written (listing every id still
    without a vector, and purged ids whose vectors are still stored): from here the index answers, and Chroma
    has not been opened yet. Dense: purged vectors are deleted, then pending ids are embedded and stored in
    slices, each slice crossed off the manifest, so an interruption leaves a consistent index that the next
    run completes. Passages without a current injection scan are scanned beside the embedding (a cache for the
    judge: a run cut short there loses nothing but time). With `spread` (a Prefect run on a task runner), parsing
    and embedding are submitted as tasks over shares of files and slices of passages."""
    root = resolve_workspace(workspace)
    watch = Stopwatch()
    lap = watch.lap

    discovery = call(t.discover, root, settings)
    lap("discover")
    if t.static_table_pending(root, settings):  # its one-time build: a stage and a timing of its own, not "plan"
        call(t.static_table, root)
        lap("static table")
    waited: list[int | None] = []

    def wait_turn(pid: int | None) -> None:  # another index run holds the workspace: its status stays until it ends
        waited.append(pid)
        progress_for(root).start("waiting", 1)

    with write_lock(root, on_wait=wait_turn):
        if waited:  # the queue behind another run: a timing of its own, not "plan"
            lap("wait")
        narrow_state_dir(root, (f.path for f in discovery.files))  # before any passage text is written
        if waited:
            progress_for(root).advance("waiting")
        rescued, damage = (rescue_notes(root), "") if rebuild else _set_aside_damaged(root)
        previous, plan, settings = call(t.plan, root, discovery, settings, rebuild)
        if damage and plan.rebuild:  # the fresh catalog is empty: the plan re-parses every file; say why
            plan = plan.model_copy(update={"rebuild_reason": damage})
        require_local_stores(settings)  # the embedder the workspace keeps may be an Ollama one: before it is asked
        check_switch(embedder_for(settings), previous.embedder if previous is not None else None)  # before any write
        lap("plan")
        parsed = _parse_spread(root, plan.to_parse, settings, spread) if spread else call(t.parse, root, plan, settings)
        lap("parse")
        collection = next_collection(previous, plan, root, shared=bool(settings.chroma_url))
        if moved := moved_reason(root, previous, plan, collection):
            plan = plan.model_copy(update={"rebuild_reason": moved})
        entities = [e for pf in parsed.files for e in pf.entities]
        if plan.rebuild and previous is not None and previous.notes:
            previous, plan, notes = _carry_notes(root, previous, plan, rescued)
            entities.extend(notes)
        carried = carried_pending(previous, plan, collection)
        embedder = embedder_for(settings)
        sources = {f.path: f for f in discovery.files}
        manifest = next_manifest(root, previous, plan, parsed, sources, embedder.name, embedder.dimension, collection,
                                 to_embed=[e.id for e in entities] + carried)
        progress_for(root).start(LEXICAL, 1)
        call(t.purge, root, manifest)  # BM25 and the manifest: queryable from here on
        progress_for(root).advance(LEXICAL)  # written at once: a run killed from here on says the index answers
        backfill_notes_log(root, manifest.notes)  # notes from before the log: logged now, so they outlive the catalog
        lap("lexical")
        manifest, lost = call(t.prepare_vectors, root, previous, plan, settings)
        lap("store")
        if lost:
            plan = plan.model_copy(update={"rebuild_reason": lost})
            pending = list(Catalog(root).get(manifest.dense_pending).values())
        else:
            pending = entities + list(Catalog(root).get(carried).values())
        scan = call(t.start_scan, root, pending)
        sink = progress_for(root)
        stored, in_index = stored_vectors(manifest)
        sink.start(STORED, in_index)  # counted as a search counts it: an interrupted run's status says the same
        sink.skip(STORED, stored)
        sink.start("embed", len(pending))
        if spread:
            manifest, truncated, cached = _embed_spread(root, collection, pending, settings, spread, manifest)
            lap("embed")
        else:
            manifest, truncated, cached = _embed_in_slices(root, collection, pending, settings, call, lap, manifest)
        _drop_replaced(root, settings, previous, collection)
        if pending:
            _settle(root, settings, collection)
        call(t.finish_scan, root, scan)
        lap("scan")
    catalog = Catalog(root)
    data = build_report(
        root, discovery, plan, parsed, manifest, len(pending), truncated, watch.timings,
        catalog.counts("kind"), catalog.counts("language"),
    )
    return call(t.report, data.model_copy(update={"embed_cached": cached}))


def _set_aside_damaged(root) -> tuple[dict | None, str]:
    """A plain run's check of the catalog (where quick: `QUICK_CHECK_BYTES`): one SQLite cannot read past its header
    answers every query with "malformed", while a run that changes nothing would report success over it. A damaged
    one is set aside (its notes read first, from it or the notes log) and rebuilt from the files. (A damaged
    embedding cache still fails the run with the `--rebuild` advice.) Returns (the rescued notes or None, the
    reason to report or "")."""
    damaged = damaged_dbs(root, QUICK_CHECK_BYTES, names=("catalog.sqlite",))
    if not damaged:
        return None, ""
    rescued = rescue_notes(root)
    set_aside_damaged_dbs(root, damaged)
    return rescued, (f"catalog.sqlite was damaged ({damaged['catalog.sqlite']}): set aside as catalog.sqlite.damaged; "
                     "the catalog is rebuilt from the files")


def _carry_notes(root, previous, plan, rescued: dict | None):
    """A rebuild re-stores the notes (user data: no parse brings them back), read from the catalog or, where a
    damaged one was set aside, from the notes log (`rescued`, read before that). A note in neither is dropped from
    the manifest, so `status` does not count it, and the report says so. Returns (previous, plan, notes)."""
    found = rescued if rescued is not None else recover_notes(root, previous.notes)
    notes = [found[i] for i in previous.notes if i in found]
    Catalog(root).replace(notes, [])  # a fresh catalog (the damaged one set aside) has none of them
    lost = len(previous.notes) - len(notes)
    if lost:
        previous = previous.model_copy(update={"notes": [n.id for n in notes]})
        said = (f"{lost} note{'s' if lost > 1 else ''} could not be recovered: neither the catalog nor the notes log "
                f"holds {'them' if lost > 1 else 'it'} (a damaged catalog is kept as catalog.sqlite.damaged)")
        plan = plan.model_copy(update={"rebuild_reason": "; ".join(filter(None, (plan.rebuild_reason, said)))})
    return previous, plan, notes


def _settle(root, settings: Settings, collection: str) -> None:
    """The store's whole HNSW index on disk, so every process answers alike (`VectorStore.settle`). Best effort: the
    vectors are stored either way, and a failure here must not fail a run whose index is whole."""
    try:
        VectorStore(root, settings.chroma_url, collection).settle()
    except Exception:  # noqa: BLE001 - a later write or query meets a real store fault and reports it
        pass


def _drop_replaced(root, settings: Settings, previous, collection: str) -> None:
    """Delete the collections this run replaced, never another workspace's. Every other collection named for this
    workspace goes, not only the previous run's: one a rebuild cut short after its switch would otherwise stay, a full
    copy of the vectors, since the resuming run's previous is the new one. A collection named for another workspace
    (the manifest came with a copied folder) is dropped only from the embedded store, which the copy owns. On a server,
    only collections of this workspace's token-named base go: a path-only name (before tokens) may be another user's
    at the same path, and it stays; in the embedded store both are this workspace's."""
    from assay.stages.core.workspace import collection_token, path_collection_name

    store = VectorStore(root, settings.chroma_url)
    if collection_token(root) is not None:  # made by this run's `next_collection`; without one nothing is surely ours
        store.drop_others(collection, collection_name(root))
    if not settings.chroma_url:
        store.drop_others(collection, path_collection_name(root))
    if not settings.chroma_url and previous is not None and previous.collection not in ("", collection):
        store.drop(previous.collection)
    store.remove_orphan_segments()  # the dropped collections' folders (and those earlier versions left)


def _embed_in_slices(root, collection: str, pending: list, settings: Settings, call: Caller, lap, manifest):
    """Embed and store in slices, in this process (bounded memory). Returns (manifest, truncated, cached)."""
    truncated = cached = 0
    for start in range(0, len(pending), EMBED_STORE_BATCH):
        embedded = call(t.embed, root, pending[start : start + EMBED_STORE_BATCH], settings)
        truncated += embedded.truncated
        cached += embedded.cached
        lap("embed")
        call(t.store_vectors, root, collection, embedded, settings)
        manifest = _mark_stored(root, embedded, manifest)
        lap("store")
    return manifest, truncated, cached


def _mark_stored(root, batch, manifest):
    """Cross a stored slice off the manifest, and count it in the run's status the way a search's dense note does
    (`stored_vectors`), so a run cut short reports what a search finds."""
    before = stored_vectors(manifest)[0]
    manifest = mark_embedded(root, batch, manifest)
    progress_for(root).advance(STORED, stored_vectors(manifest)[0] - before)
    return manifest


def _parse_spread(root, files, settings: Settings, spread: Spread):
    """Shares of the planned files parsed as tasks on the runner; each share's records stored here as it comes in."""
    sink = progress_for(root)
    sink.start("parse", len(files))
    catalog = Catalog(root)
    dealt = shares(files, spread.shares)
    futures = [t.parse_share.submit(root, share, settings) for share in dealt]
    results = []
    for share, future in zip(dealt, futures):
        results.append(future.result())
        catalog.store_parsed(results[-1])
        sink.advance("parse", len(share))
    return merge_shares(files, results)


def _embed_spread(root, collection: str, pending: list, settings: Settings, spread: Spread, manifest):
    """Remembered vectors stored at once; the rest embedded in slices as tasks on the runner, each stored, cached and
    crossed off the manifest here as it comes in. Returns (manifest, truncated, cached)."""
    sink = progress_for(root)
    cache = EmbedCache(root)
    truncated = 0
    try:
        name = embedder_for(settings).name
        known, missing = split_cached(pending, name, cache)
        if known is not None:
            t.store_vectors(root, collection, known, settings)
            manifest = _mark_stored(root, known, manifest)
            sink.skip("embed", len(known.ids))
        slices = [missing[i : i + EMBED_STORE_BATCH] for i in range(0, len(missing), EMBED_STORE_BATCH)]
        futures = [t.embed_slice.submit(piece, settings, spread.threads) for piece in slices]
        for piece, future in zip(slices, futures):
            batch = future.result()
            remember(cache, name, piece, batch.vectors)
            t.store_vectors(root, collection, batch, settings)
            manifest = _mark_stored(root, batch, manifest)
            truncated += batch.truncated
            sink.advance("embed", len(piece))
    finally:
        cache.close()
    return manifest, truncated, len(known.ids) if known is not None else 0


@lazy_flow("assay-index")
def _index_flow(workspace: str, rebuild: bool = False, settings: Settings | None = None) -> IndexReport:
    """Index (or incrementally re-index) a workspace into its own `.assay/` store; with ASSAY_DASK set, parsing and
    embedding are spread as tasks over the flow's task runner."""
    s = settings or Settings()
    return index_pipeline(workspace, s, rebuild, spread=spread_for(s.dask) if s.dask else None)


def run_index(workspace: str, settings: Settings | None = None, rebuild: bool = False,
              watcher: ProgressSink | None = None, status: StatusSink | None = None) -> IndexReport:
    """Entry point for the CLI, the MCP server and the watcher: a Prefect flow run, or direct stage calls. The run's
    progress goes to `.assay/status.json` (through `status`, when the caller made it already) and to `watcher`; the
    file ends "done" with a summary, or "failed" with the error, whichever door started the run."""
    s = settings or Settings()
    root = resolve_workspace(workspace)
    if s.dask and orchestration_mode() == "direct":
        raise ValueError("ASSAY_DASK spreads the index over Prefect tasks: unset ASSAY_ORCHESTRATION=direct")
    if s.dask:
        from assay.flows.dask import check_scheduler

        check_scheduler(s.dask)  # before the run: Dask retries a refused scheduler for 30 s, then names no fix
    require_local_stores(s)  # local mode: a Chroma server or Ollama embedder beyond loopback, refused before any socket
    if not rebuild:  # before the status file: the newer Assay's last run stays its own, not this one's refusal
        refuse_newer_index(root)
    with status_run(root, watcher, status) as tracked, machine_limits(root):
        if s.dask:  # a Prefect run on a DaskTaskRunner, recorded by an API its workers reach too
            from assay.flows.dask import task_runner
            from assay.flows.prefect_api import api_for_workers
            from assay.flows.runtime import api_watch, quiet_prefect

            with api_for_workers(), quiet_prefect(), api_watch():
                report = _index_flow.prefect.with_options(task_runner=task_runner(s.dask))(workspace, rebuild=rebuild, settings=s)
        else:
            report = run_flow(_index_flow, lambda workspace, rebuild, settings, call: index_pipeline(workspace, settings, rebuild, call),
                              workspace, rebuild=rebuild, settings=s)
        tracked.finish("done", run_summary(report))
    registry.register(root)  # whichever door indexed it, the MCP server's list_workspaces shows it
    return report


def refuse_newer_index(root) -> None:
    """Raise `NewerIndex` when a newer Assay wrote the workspace's index (a missing or damaged manifest: the run
    itself says so and mends it). Every door checks before it writes a run's status."""
    from assay.stages.index.store import StoreError, load_manifest

    try:
        manifest = load_manifest(root)
    except StoreError:
        return
    refuse_newer(manifest)


@contextmanager
def machine_limits(root) -> Iterator[None]:
    """A run that a limit of the machine stopped (a full disk Chroma's writer does not name, a file-size limit SQLite
    calls "disk I/O error") fails with that said and its remedy, in the status file too (inside `status_run`)."""
    try:
        yield
    except Exception as exc:
        failure = storage_failure(root, exc)
        if failure is None:
            raise
        raise failure from exc


def run_summary(report: IndexReport) -> dict:
    """What a finished run's status keeps of its report."""
    return {"files": report.files_seen, "files_parsed": report.files_parsed, "entities": report.entities_total,
            "embedded": report.entities_embedded, "embed_cached": report.embed_cached,
            "dense_pending": report.dense_pending, "skipped": report.skipped,
            "skipped_named": skipped_named(report)}


@lazy_flow("assay-index")
def _deployed_index_flow(workspace: str, rebuild: bool = False, settings: Settings | None = None) -> IndexReport:
    """Index (or incrementally re-index) a workspace into its own `.assay/` store, as a deployment run (prefect.yaml's
    scheduled-reindex): tracked in `.assay/status.json` and registered as `run_index` does for every other door, so
    `assay status` and MCP `index_status` show a scheduled run (running, done or failed) like a CLI one."""
    s = settings or Settings()
    root = resolve_workspace(workspace)
    require_local_stores(s)
    with status_run(root) as tracked:
        report = _index_flow.fn(workspace, rebuild=rebuild, settings=s)
        tracked.finish("done", run_summary(report))
    registry.register(root)
    return report


__getattr__ = flow_exports(index_flow=_deployed_index_flow)  # the Prefect flow, built on first access (prefect.yaml)

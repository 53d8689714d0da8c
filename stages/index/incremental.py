"""Plan an index run: compare what discovery found with what the manifest says is indexed.

Only changed files are re-parsed and re-embedded; deleted or newly ignored files are removed;
files that exist but could not be read now keep their entities (a transient error must not purge).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from assay.stages.core.artifacts import (
    DiscoveryResult, FileRecord, IndexManifest, IndexPlan, IndexReport, ParsedFile, ParseResult, SkippedFile,
    SourceFile,
)
from assay.stages.core.fs_names import nameable
from assay.stages.core.workers import worker_pool
from assay.stages.core.workspace import collection_name, owns_collection
from assay.stages.index.discover import file_hash, held_still
from assay.stages.index.languages import NOTEBOOK
from assay.stages.index.notebook import view_problem
from assay.stages.index.report import EXAMPLES_PER_REASON
from assay.stages.index.source_text import utf8_source
from assay.stages.index.tokens import TOKENIZER_VERSION, token_string
from assay.stages.index.parse import PARSER_VERSION, parse_source
from assay.stages.query.freshness import git_head


def older_parser(manifest: IndexManifest) -> str:
    """What `status` says of an index another parser version built (empty when it is this one's): the next run
    re-indexes everything, which a user who just upgraded should expect before it takes minutes."""
    if manifest.parser == PARSER_VERSION:
        return ""
    if manifest.parser > PARSER_VERSION:
        return newer_index(manifest)
    return (f"the index was built by parser version {manifest.parser}, this Assay's is {PARSER_VERSION}: the next "
            "`assay index` (or `assay watch`) re-indexes everything; searches answer from the older index until then")


class NewerIndex(ValueError):
    """A newer Assay (a later parser) wrote the index: this older process (an MCP server or `assay watch` started
    before an upgrade) must not re-parse it with its older parser, downgrading it (then the newer one upgrades it
    again: two full re-indexes per edit). Its queries still answer from that index."""


def newer_index(manifest: IndexManifest) -> str:
    """The one line an older process says of an index a newer Assay wrote."""
    return (f"a newer Assay wrote this index (parser version {manifest.parser}, this process's is {PARSER_VERSION}): "
            "index with the newer Assay, and restart this process if it is an MCP server or `assay watch` started "
            "before the upgrade; searches still answer from it (`assay index --rebuild` goes back to this version)")


def refuse_newer(manifest: IndexManifest | None) -> None:
    """Raise `NewerIndex` when a newer Assay wrote `manifest`; an older one is this version's to upgrade."""
    if manifest is not None and manifest.parser > PARSER_VERSION:
        raise NewerIndex(newer_index(manifest))


def plan_index(discovery: DiscoveryResult, manifest: IndexManifest | None, embedder: str, rebuild: bool = False,
               catalog_entities: int | None = None) -> IndexPlan:
    """Decide which files this run re-parses and re-embeds: those whose content hash changed since the manifest,
    or every file when there is no index yet, the catalog lost the manifest's passages (`catalog_entities`, its
    count, is 0: deleted or emptied, so "unchanged" files would stay unsearchable), the parser or the embedder
    changed, or a rebuild was asked for (the reason is reported). Deleted files are removed; files unreadable
    right now are kept as they were. An index a newer Assay wrote is refused (`NewerIndex`) unless rebuilt."""
    if not rebuild:
        refuse_newer(manifest)
    reason = ""
    if rebuild:
        reason = "rebuild requested"
    elif manifest is None:
        reason = "no previous index"
    elif catalog_entities == 0 and manifest.entity_count:
        reason = (f"the catalog is missing or empty although the manifest lists {manifest.entity_count} passages: "
                  "re-indexing everything")
    elif manifest.parser != PARSER_VERSION:
        reason = f"the parser changed (version {manifest.parser} to {PARSER_VERSION}): re-indexing everything"
    elif manifest.embedder and manifest.embedder != embedder:
        reason = f"embedder changed from {manifest.embedder} to {embedder}: re-embedding everything"
    if reason:
        return IndexPlan(to_parse=list(discovery.files), unchanged=[], removed=[], kept_unreadable=[],
                         rebuild=True, rebuild_reason=reason)
    assert manifest is not None
    old = manifest.files
    to_parse: list[SourceFile] = []
    unchanged: list[str] = []
    for f in discovery.files:
        rec = old.get(f.path)
        if rec is not None and rec.content_hash == f.content_hash:
            unchanged.append(f.path)
        else:
            to_parse.append(f)
    present = {f.path for f in discovery.files}
    unreadable = {u for u in discovery.unreadable if not u.endswith("/") and u}
    folders = tuple(u for u in discovery.unreadable if u.endswith("/") or u == "")

    def unreadable_now(path: str) -> bool:
        # a UTF-8 name indexed under a UTF-8 locale is invisible to a run under an ASCII one (LC_ALL=C,
        # PYTHONUTF8=0): unreadable now, not deleted, so it keeps its entities
        return path in unreadable or any(path.startswith(f) for f in folders) or not nameable(path)

    kept = sorted(p for p in old if p not in present and unreadable_now(p))
    removed = sorted(p for p in old if p not in present and not unreadable_now(p))
    return IndexPlan(to_parse=to_parse, unchanged=unchanged, removed=removed, kept_unreadable=kept)


PARALLEL_MIN_BYTES = 2_000_000  # below this, starting a worker process costs more than it saves


def parse_workers(requested: int, files: list[SourceFile]) -> int:
    """How many processes to parse with: one per core (at most 4) for a large run, else 1."""
    if sum(f.size for f in files) < PARALLEL_MIN_BYTES or len(files) < 2:
        return 1
    return max(1, requested or min(4, os.cpu_count() or 1))


def parse_files(root: Path, files: list[SourceFile], max_lines: int, max_chars: int,
                progress: Callable[[int], None] | None = None, workers: int = 1,
                on_share: Callable[[ParseResult], None] | None = None) -> ParseResult:
    """Read and parse each planned file; a file that vanished, became unreadable or fails to parse is
    skipped, not fatal. With `workers` > 1 the files are dealt into shares: this process parses the
    first while spawned processes parse the rest, and the merge restores file order, so the result is
    the same as in one process. `on_share` gets each share's result as soon as it is in: this process's
    own before it waits for the workers (the index stores its records in that wait)."""
    if workers <= 1:
        result = parse_share(root, files, max_lines, max_chars, progress)
        if on_share is not None:
            on_share(result)
        return result
    dealt = shares(files, workers)
    pool = worker_pool(len(dealt) - 1)
    try:
        futures = [pool.submit(parse_share, root, share, max_lines, max_chars) for share in dealt[1:]]
        results = [parse_share(root, dealt[0], max_lines, max_chars, progress)]
        if on_share is not None:
            on_share(results[0])
        for future, share in zip(futures, dealt[1:]):
            try:
                results.append(future.result())
            except Exception:  # noqa: BLE001 - a worker that cannot start or dies: parse its share here
                results.append(parse_share(root, share, max_lines, max_chars))
            if on_share is not None:
                on_share(results[-1])
            if progress is not None:
                progress(len(share))
    finally:  # the results are in: let the workers exit on their own (joining them took 0.1-0.2 s)
        pool.shutdown(wait=False, cancel_futures=True)
    return merge_shares(files, results)


def merge_shares(files: list[SourceFile], results: list[ParseResult]) -> ParseResult:
    """The shares' results in the planned files' order: the same as one process parsing them all."""
    order = {f.path: i for i, f in enumerate(files)}
    return ParseResult(files=sorted((pf for r in results for pf in r.files), key=lambda pf: order[pf.path]),
                       skipped=sorted((s for r in results for s in r.skipped), key=lambda s: order[s.path]))


def shares(files: list[SourceFile], n: int) -> list[list[SourceFile]]:
    """Every n-th file to each share: cost is mixed evenly (docs parse far faster than code)."""
    return [share for share in (files[i::n] for i in range(n)) if share]


def parse_share(root: Path, files: list[SourceFile], max_lines: int, max_chars: int,
                progress: Callable[[int], None] | None = None) -> ParseResult:
    """One share of the planned files, parsed where this runs (this process, a worker process, or a Dask worker that
    sees the workspace at the same path); nothing is stored."""
    parsed = []
    skipped: list[SkippedFile] = []
    for f in files:
        try:
            data = (root / f.path).read_bytes()
        except FileNotFoundError:
            skipped.append(SkippedFile(path=f.path, reason="vanished", detail="deleted between discovery and parse"))
            continue
        except OSError as exc:
            skipped.append(SkippedFile(path=f.path, reason="unreadable", detail=str(exc)))
            continue
        try:
            pf = parse_source(data, f.path, f.language, file_hash(data), max_lines, max_chars)
            if f.language == NOTEBOOK:
                _say_notebook_problem(pf, data)
            pf.lexical_tokens = [token_string(e.lexical_text()) for e in pf.entities]
            parsed.append(pf)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
            skipped.append(SkippedFile(path=f.path, reason="parse_error", detail=f"{type(exc).__name__}: {exc}"))
        if progress is not None:
            progress(1)
    return ParseResult(files=parsed, skipped=skipped)


def _say_notebook_problem(pf: ParsedFile, data: bytes) -> None:
    """A notebook read as text windows (no Python view) or with cells kept only as words is partly parsed: the
    report names it with why (the parser's text fallback said nothing, so its raw JSON was indexed silently)."""
    problem = view_problem(utf8_source(data, NOTEBOOK)[0])  # the bytes the parser built its view from (cached)
    if problem:
        pf.partial = True
        pf.error = "; ".join(part for part in (pf.error, problem) if part)


def next_collection(previous: IndexManifest | None, plan: IndexPlan, root: Path, shared: bool) -> str:
    """Same collection for an incremental run; a fresh generation for a rebuild, swapped in by the manifest. On a
    shared Chroma server (`shared`) a collection the manifest names but another workspace owns (the manifest came
    with a copy of its folder) is never reused: this run starts its own and stores every vector there
    (`carried_pending`). An embedded store came with the copy too, so every collection in it is the copy's. Names
    carry the workspace's token (made here on its first run): on a server, one named by the path alone (before tokens)
    may be another user's at that path too, so this run moves to its own and leaves that one there."""
    base = collection_name(root, create=True)
    reusable = previous is not None and bool(previous.collection) and (
        not shared or owns_collection(root, previous.collection))
    if not reusable:
        return f"{base}_g1"
    assert previous is not None
    if not plan.rebuild:
        return previous.collection
    gen = int(previous.collection.rsplit("_g", 1)[1]) if "_g" in previous.collection else 0
    return f"{base}_g{gen + 1}"


def moved_reason(root: Path, previous: IndexManifest | None, plan: IndexPlan, collection: str) -> str:
    """Why an incremental run stores every vector again: it left the manifest's collection ('' when it did not)."""
    if previous is None or plan.rebuild or collection == previous.collection:
        return ""
    own = f"storing every vector in this workspace's own collection {collection}"
    if previous.workspace == str(root):
        return own
    return f"the index came from {previous.workspace} (copied or moved), whose collection stays untouched: {own}"


def next_manifest(
    root: Path, previous: IndexManifest | None, plan: IndexPlan, parsed: ParseResult,
    sources: dict[str, SourceFile], embedder: str, dimension: int, collection: str, to_embed: list[str],
) -> IndexManifest:
    """The manifest after this run's lexical phase: unchanged and kept files carry over, parsed files are
    replaced, every id still waiting for a vector (`to_embed`) is listed as dense_pending, and vectors an
    interrupted run had still to delete from this collection stay listed."""
    files: dict[str, FileRecord] = {}
    old = previous.files if previous is not None and not plan.rebuild else {}
    for path in plan.unchanged + plan.kept_unreadable:
        if path in old:
            # touched but unchanged: remember the new time (and size: it mends a record an earlier run got wrong), so
            # freshness checks stay quiet; discovery's stat describes the bytes it hashed
            seen = sources.get(path)
            now = {"mtime_ns": seen.mtime_ns, "size": seen.size, "ctime_ns": seen.ctime_ns} if seen is not None else {}
            files[path] = old[path].model_copy(update=now)
    failed = {s.path for s in parsed.skipped}
    for path in failed:
        if path in old:
            files[path] = old[path]  # could not read it now: keep what we had
    for pf in parsed.files:
        src = sources[pf.path]
        size, mtime_ns = ((src.size, src.mtime_ns) if pf.content_hash == src.content_hash  # discovery read these bytes
                          else parsed_stat(root / pf.path, pf.content_hash))
        files[pf.path] = FileRecord(
            content_hash=pf.content_hash, size=size, language=src.language,
            entity_ids=[e.id for e in pf.entities], partial=pf.partial, mtime_ns=mtime_ns,
            ctime_ns=src.ctime_ns if pf.content_hash == src.content_hash else 0,  # 0: not known, not compared
        )
    manifest = IndexManifest(
        workspace=str(root), parser=PARSER_VERSION, tokenizer=TOKENIZER_VERSION, embedder=embedder, dimension=dimension,
        collection=collection,
        files=dict(sorted(files.items())),
        notes=previous.notes if previous is not None else [],
        dense_pending=sorted(set(to_embed)),
        updated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **dict(zip(("git_commit", "git_branch"), git_head(root))),
    )
    if previous is not None and not plan.rebuild and previous.collection == collection:  # same vector store
        kept = manifest.entity_ids
        manifest.vectors_stale = [i for i in previous.vectors_stale if i not in kept]
    return manifest


UNSETTLED = (-1, 0)  # (size, mtime_ns) no file has: freshness reads it as changed until the next run compares hashes


def parsed_stat(path: Path, content_hash: str) -> tuple[int, int]:
    """(size, mtime_ns) of the bytes parse read, for a file written between discovery and parse: the file's own when it
    still holds those bytes and held still while read again; else UNSETTLED, so the record's hash never sits beside
    another version's size (the next run then keeps the record and mends its size and time, or parses again)."""
    try:
        before = path.stat()
        data = path.read_bytes()
    except OSError:
        return UNSETTLED
    if held_still(before, data, path) and file_hash(data) == content_hash:
        return before.st_size, before.st_mtime_ns
    return UNSETTLED


def carried_pending(previous: IndexManifest | None, plan: IndexPlan, collection: str | None = None) -> list[str]:
    """Ids in files this run keeps as they are whose vectors `collection` lacks: those an interrupted dense fill
    left without, or every kept id and note when the run moves to another collection than the manifest's (a copied
    workspace starting its own; the embedding cache, copied too, supplies most vectors)."""
    moved = collection is not None and previous is not None and collection != previous.collection
    if previous is None or plan.rebuild or not (moved or previous.dense_pending):
        return []
    kept = {i for path in plan.unchanged + plan.kept_unreadable if path in previous.files
            for i in previous.files[path].entity_ids}
    if moved:
        return sorted(kept | set(previous.notes))
    return [i for i in previous.dense_pending if i in kept or i in previous.notes]


def stored_vectors(manifest: IndexManifest) -> tuple[int, int]:
    """(passages whose vectors are stored, passages in the index): the one count of "searchable by meaning" that a
    search's dense note and an ended index run's status line (`flows.index` reports it as the run stores) both show."""
    total = manifest.entity_count + len(manifest.notes)
    return max(total - len(manifest.dense_pending), 0), total


def dense_note(manifest: IndexManifest) -> str:
    """What a reader must know while vectors are still being filled in ('' when they are complete). It counts
    vectors stored (searchable), in the status line's words ("stored as vectors"); not "embedded", the word a
    running index's progress line (`status`, `index_status`) uses for its own count, which runs ahead of this one."""
    if not manifest.dense_pending:
        return ""
    done, total = stored_vectors(manifest)
    return (f"dense index partial: {done} of {total} passages stored as vectors so far (searchable by meaning); BM25 "
            "covers all of them (the index run stores the rest as it embeds them; run `assay index` again if it was "
            "interrupted)")


def stale_ids(stored: set[str], manifest: IndexManifest, note_ids: set[str]) -> list[str]:
    """Ids the catalog holds that the new index does not (notes are never stale)."""
    return sorted(stored - manifest.entity_ids - note_ids)


# `skipped_examples` names every skipped and partly parsed file up to EXAMPLES_PER_REASON of each reason (the text
# report names a few of each and points here, saying when the list is cut); past it, one last entry with reason
# NOT_LISTED says how many went unnamed.
NOT_LISTED = "not_listed"


def listed_examples(skipped: list[SkippedFile], partial: list[SkippedFile]) -> list[SkippedFile]:
    """The files the report names: each reason's first EXAMPLES_PER_REASON, then a NOT_LISTED entry when some were
    cut (a list that stopped silently at 20 let a reader think it was all)."""
    seen: Counter[str] = Counter()
    listed: list[SkippedFile] = []
    for s in [*skipped, *partial]:
        seen[s.reason] += 1
        if seen[s.reason] <= EXAMPLES_PER_REASON:
            listed.append(s)
    cut = {reason: n - EXAMPLES_PER_REASON for reason, n in seen.items() if n > EXAMPLES_PER_REASON}
    if cut:
        more = ", ".join(f"{reason} {n}" for reason, n in sorted(cut.items()))
        listed.append(SkippedFile(
            path="", reason=NOT_LISTED, detail=f"not named here: {more} (`skipped` and `files_partial` count all)"))
    return listed


def build_report(
    root: Path, discovery: DiscoveryResult, plan: IndexPlan, parsed: ParseResult, manifest: IndexManifest,
    embedded: int, truncated: int, timings: dict[str, float], kinds: dict[str, int], languages: dict[str, int],
) -> IndexReport:
    skipped = [*discovery.skipped, *parsed.skipped]
    reasons = Counter(s.reason for s in skipped)  # a partly parsed file is parsed, not skipped: `files_partial` counts it
    partial = [pf for pf in parsed.files if pf.partial]
    examples = listed_examples(skipped, [SkippedFile(path=pf.path, reason="partial_parse", detail=pf.error)
                                         for pf in partial])
    return IndexReport(
        workspace=str(root), files_seen=len(discovery.files) + len(discovery.skipped), files_parsed=len(parsed.files),
        files_unchanged=len(plan.unchanged), files_removed=len(plan.removed), files_partial=len(partial),
        skipped=dict(sorted(reasons.items())), kept_unreadable=len(plan.kept_unreadable) + len(
            [s for s in parsed.skipped if s.path in manifest.files]),
        entities_total=manifest.entity_count, dense_pending=len(manifest.dense_pending),
        entities_embedded=embedded, entities_by_kind=kinds, entities_by_language=languages, embed_truncated=truncated,
        timings={k: round(v, 3) for k, v in timings.items()}, embedder=manifest.embedder,
        rebuild_reason=plan.rebuild_reason, skipped_examples=examples,
    )

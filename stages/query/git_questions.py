"""Git questions about an indexed workspace, by name: an entity's history, what a diff touches.

The doors call these. They join the index (catalog, manifest, the graph's name resolution) to `git_history`,
which stays free of them: the graph marks stale rows through `freshness`, which runs git through `git_history`.
"""

from __future__ import annotations

from pathlib import Path

from assay.stages.core.artifacts import Entity
from assay.stages.index.store import Catalog, load_manifest, require_manifest
from assay.stages.query.git_history import ChangedSymbols, History, changed_symbols, history, stale_files
from assay.stages.query.graph import Graph, named_targets


def resolve_definition(catalog, name: str) -> Entity:
    """The one definition a name means, resolved as the graph commands do (`name`, `Class.method`,
    `path/to/file.py:name`); a one-line error naming the candidates when several definitions match."""
    if not name.strip():
        raise ValueError(f"no definition named {name!r} in the index")
    found: dict[tuple[str, str], Entity] = {}
    for e in named_targets(Graph(catalog), name.strip()):  # none: the graph commands' one-line error
        found.setdefault((e.file, e.qualname), e)
    if len(found) > 1:
        listed = sorted(found.values(), key=lambda e: (e.file, e.start_line))
        shown = ", ".join(f"{e.qualname} ({e.file}:{e.start_line})" for e in listed[:8]) + (" ..." if len(listed) > 8 else "")
        raise ValueError(f"{len(listed)} definitions named {name!r}: {shown}; {_pick_one(listed)}")
    return next(iter(found.values()))


def _pick_one(listed: list[Entity]) -> str:
    """How to name one of several candidates, shown on a real one: a Go or Rust user is shown their own file, not
    a Python `path/to/file.py`; its qualified name too where that alone tells it from the others."""
    first = listed[0]
    unique = "." in first.qualname and sum(e.qualname == first.qualname for e in listed) == 1
    return f"pass one as file:name, e.g. {first.file}:{first.qualname}" + (f", or as {first.qualname}" if unique else "")


def entity_history(root: Path, name: str, limit: int = 20) -> History:
    """History of an indexed definition by name (`Class.method`, `name`, `file.py:name`), over its whole span."""
    manifest = require_manifest(root)  # one line of error, and no `.assay/` left in a folder never indexed
    catalog = Catalog(root)
    try:
        first = resolve_definition(catalog, name)
        parts = catalog.parts_of(first.file, first.qualname, first.kind)
    finally:
        catalog.close()
    whole = first.model_copy(update={"start_line": min(p.start_line for p in parts), "end_line": max(p.end_line for p in parts)})
    result = history(root, whole, limit)
    if stale_files(root, {whole.file}, manifest.files):
        result.note = "; ".join(filter(None, [f"warning: {whole.file} changed since indexing, so its lines (and these "
                                              "commits) may be off; re-index to refresh", result.note]))
    return result


def history_stale_files(root: Path, file: str) -> list[str]:
    """The entity's file when it changed since indexing (its lines, and so its commits, may be off), as a list both
    doors put in `stale_files` the way the graph commands and `changed` carry it: `History` says so only in prose."""
    manifest = load_manifest(root)
    return sorted(stale_files(root, {file}, manifest.files)) if manifest is not None else []


def workspace_changed(root: Path, since: str) -> ChangedSymbols:
    """`changed_symbols` against an indexed workspace's catalog (one line of error when it is not indexed)."""
    manifest = require_manifest(root)
    catalog = Catalog(root)
    try:
        return changed_symbols(root, since, catalog.by_file, manifest.files)
    finally:
        catalog.close()

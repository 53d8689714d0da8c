"""Verbatim notes (decisions, conventions) stored as searchable entities of kind `note`.

Unlike the anchor system, a note is never summarised: the text you store is the text you get.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from assay.stages.core.artifacts import Entity, IndexManifest
from assay.stages.core.visible import visible
from assay.stages.core.workspace import make_state_dir, owns_collection, state_dir
from assay.stages.index.embed import Embedder, embed_entities
from assay.stages.index.store import (
    Catalog, StoreError, VectorStore, load_manifest, rebuild_lexical, require_manifest, write_lock, write_manifest,
)

NOTES_FILE = ".assay/notes"  # the pseudo-file every note cites (not a file on disk)
# Every note's entity, one JSON line each: notes are user data, not derived from the code, so they must outlive a
# damaged catalog that `assay index --rebuild` sets aside (the catalog is what queries read; this is the backup).
NOTES_LOG = "notes.jsonl"
MAX_NOTE_CHARS = 20_000


def label(text: str) -> str:
    """A note's first words on one line, as its name. Control characters are shown as symbols (ESC as U+241B):
    the name is printed in reports and terminals, where a raw ESC or BEL would drive the terminal. The body
    keeps them: it is verbatim."""
    return visible(" ".join(text.split()))[:80]


def make_note(text: str, when: datetime | None = None) -> Entity:
    when = when or datetime.now(timezone.utc)
    digest = hashlib.sha256(f"{when.isoformat()}\0{text}".encode()).hexdigest()
    first = label(text)
    return Entity(
        id=f"note-{digest[:20]}", kind="note", name=first, qualname=f"note {when:%Y-%m-%d %H:%M:%S}: {first}",
        signature=first, body=text, start_line=1, end_line=text.count("\n") + 1, language="text",
        file=NOTES_FILE, content_hash=digest,
    )


def add_note(root: Path, text: str, embedder: Embedder, chroma_url: str | None = None) -> Entity:
    if not text.strip():
        raise ValueError("the note is empty")
    if len(text) > MAX_NOTE_CHARS:
        raise ValueError(f"the note is {len(text)} characters; the limit is {MAX_NOTE_CHARS}")
    with write_lock(root):
        manifest = require_manifest(root)
        if chroma_url and not owns_collection(root, manifest.collection):
            raise ValueError(f"this workspace's index came from {manifest.workspace} (copied or moved), and its Chroma "
                             "server collection is that workspace's: run `assay index` here first, then add the note")
        note = make_note(text)
        batch = embed_entities([note], embedder)
        VectorStore(root, chroma_url, manifest.collection).upsert(batch)
        backfill_notes_log(root, manifest.notes)  # notes an older Assay added: logged before this one, kept alike
        append_notes_log(root, [note])  # before the manifest lists it: a listed note is always in the log
        catalog = Catalog(root)
        catalog.replace([note], [])
        updated = IndexManifest.model_validate({**manifest.model_dump(), "notes": [*manifest.notes, note.id]})
        rebuild_lexical(root, catalog)
        write_manifest(root, updated)
    return note


def list_notes(root: Path) -> list[Entity]:
    manifest = load_manifest(root)
    if manifest is None or not manifest.notes:
        return []
    found = Catalog(root).get(manifest.notes)
    return [found[i] for i in manifest.notes if i in found]


def notes_log(root: Path) -> Path:
    return state_dir(root) / NOTES_LOG


def append_notes_log(root: Path, notes: list[Entity]) -> None:
    """Add notes to the log, synced to disk (a note is written once, by hand: its cost is nothing)."""
    if not notes:
        return
    make_state_dir(root)
    with open(notes_log(root), "a", encoding="utf-8") as fh:
        fh.write("".join(note.model_dump_json() + "\n" for note in notes))
        fh.flush()
        os.fsync(fh.fileno())


def logged_notes(root: Path) -> dict[str, Entity]:
    """The notes in the log by id; a line that does not parse (a write cut short) is skipped."""
    try:
        lines = notes_log(root).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    found: dict[str, Entity] = {}
    for line in lines:
        try:
            note = Entity.model_validate_json(line)
        except ValueError:
            continue
        found[note.id] = note
    return found


def recover_notes(root: Path, ids: list[str]) -> dict[str, Entity]:
    """The entities of these notes: from the catalog where it can read them (a damaged one may still hold some),
    the rest from the notes log. An id in neither is lost."""
    found: dict[str, Entity] = {}
    try:
        catalog = Catalog(root)
        try:
            found = catalog.get(ids)
        finally:
            catalog.close()
    except (StoreError, sqlite3.DatabaseError):  # damaged: the log has them
        pass
    missing = [i for i in ids if i not in found]
    if missing:
        logged = logged_notes(root)
        found.update({i: logged[i] for i in missing if i in logged})
    return found


def rescue_notes(root: Path) -> dict[str, Entity]:
    """The notes the last manifest lists, read before a rebuild sets a damaged catalog aside ({} when there are none
    or the manifest cannot be read)."""
    try:
        manifest = load_manifest(root)
    except StoreError:
        return {}
    return recover_notes(root, manifest.notes) if manifest is not None and manifest.notes else {}


def backfill_notes_log(root: Path, ids: list[str]) -> None:
    """Log the listed notes the log lacks (notes added before it was kept), read from the catalog: from then on they
    survive a damaged catalog too. Costs one small file read when nothing is missing."""
    if not ids:
        return
    logged = logged_notes(root)
    missing = [i for i in ids if i not in logged]
    if missing:
        found = recover_notes(root, missing)
        append_notes_log(root, [found[i] for i in missing if i in found])

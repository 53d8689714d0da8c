"""Verbatim notes (decisions, conventions) stored as searchable entities of kind `note`.

Unlike the anchor system, a note is never summarised: the text you store is the text you get.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path

from assay.stages.core.artifacts import Entity, IndexManifest
from assay.stages.core.visible import visible
from assay.stages.core.workspace import owns_collection
from assay.stages.index.embed import Embedder, embed_entities
from assay.stages.index.store import Catalog, VectorStore, load_manifest, rebuild_lexical, require_manifest, write_lock, write_manifest

NOTES_FILE = ".assay/notes"
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

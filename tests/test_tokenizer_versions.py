"""Two Assay versions on one workspace (an IDE's MCP server still on the old install, the CLI on the new): each keeps
its BM25 tokens in its own table keyed by entity id, so an entity the other version changed kept its old words here,
and keyword search missed the new ones after a "successful" index."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.index.store import Catalog, load_manifest, manifest_path
from assay.stages.index.tokens import TOKENIZER_VERSION
from assay.stages.query.retrieve import search

SETTINGS = Settings(embedder="static")


def _hits(root: Path, query: str) -> list[str]:
    return [c.entity for c in search(root, query, SETTINGS, k=5, mode="bm25").candidates]


def test_an_index_after_another_version_re_tokenizes_what_it_may_have_changed(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def handler():\n    return zebra_count()\n")
    run_index(str(tmp_path), SETTINGS)
    assert load_manifest(tmp_path).tokenizer == TOKENIZER_VERSION
    # another version edits the function and indexes: the entity changes, this version's token row does not
    (tmp_path / "m.py").write_text("def handler():\n    return giraffe_count()\n")
    run_index(str(tmp_path), SETTINGS)
    db = sqlite3.connect(tmp_path / ".assay" / "catalog.sqlite")
    with db:
        db.execute(f"UPDATE lexical_tokens_v{TOKENIZER_VERSION} SET tokens = 'def handler return zebra_count zebra count'"
                   " WHERE id IN (SELECT id FROM entities WHERE name = 'handler')")
    db.close()
    path = manifest_path(tmp_path)
    old = json.loads(path.read_text())
    del old["tokenizer"]  # an older Assay wrote it
    path.write_text(json.dumps(old))
    terms = tmp_path / ".assay" / "lexical" / "terms.json"  # and its BM25 counts, from its own tokens
    terms.write_text(terms.read_text().replace(f'"tokenizer": {TOKENIZER_VERSION}', '"tokenizer": 1'))
    run_index(str(tmp_path), SETTINGS)
    assert "handler" in _hits(tmp_path, "giraffe") and "handler" not in _hits(tmp_path, "zebra")


def test_a_write_drops_other_versions_rows_for_the_entities_it_changes(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def handler():\n    return 1\n")
    run_index(str(tmp_path), SETTINGS)
    catalog = Catalog(tmp_path)
    try:
        (entity,) = [e for e in catalog.all() if e.name == "handler"]
        with catalog._db:
            catalog._db.execute("CREATE TABLE lexical_tokens_v1 (id TEXT PRIMARY KEY, tokens TEXT NOT NULL)")
            catalog._db.execute("INSERT INTO lexical_tokens_v1 VALUES (?, 'old words')", (entity.id,))
        catalog._others = None
        catalog.replace([entity], [])
        assert catalog._db.execute("SELECT COUNT(*) FROM lexical_tokens_v1").fetchone()[0] == 0
    finally:
        catalog.close()

"""Damaged or half-lost `.assay/` state: every door says which file and what mends it, and the advised command
mends it (a status file of the wrong shape, a lost or garbled catalog, a garbled embedding cache, a damaged or
deleted BM25 index, the old collection an interrupted rebuild leaves in Chroma).

Index runs use a stand-in embedder (hashed vectors, as in test_index_resume) so they take a second each."""

from __future__ import annotations

import gc
import json
import shutil
from pathlib import Path

import chromadb
import pytest
from typer.testing import CliRunner

import assay.flows.index as index_flow
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.core.progress import read_status
from assay.stages.core.workspace import collection_name
from assay.stages.index.lexical import LexicalIndex
from assay.stages.index.state_db import DamagedDatabase
from assay.stages.index.store import Catalog, lexical_dir, load_manifest
from assay.stages.query.retrieve import search
from tests.test_index_resume import SLICE, Killed, StandInEmbedder, use

runner = CliRunner()


@pytest.fixture()
def indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "direct")
    dest = tmp_path / "project"
    shutil.copytree(Path(__file__).parent / "fixtures" / "project", dest)
    use(monkeypatch, StandInEmbedder())
    run_index(str(dest), Settings())
    return dest


def garble(path: Path) -> None:
    """Overwrite the SQLite header, as a crash or a bad disk might: SQLite says "file is not a database". Earlier
    runs' connections are closed first: SQLite shares its view of a file among a process's connections to it."""
    gc.collect()
    for wal in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        wal.unlink(missing_ok=True)
    data = bytearray(path.read_bytes())
    data[:100] = b"x" * 100
    path.write_bytes(bytes(data))


# 3. status.json of the wrong shape

@pytest.mark.parametrize("text", ['{"state": "done", "stages": 5}', '{"state":"done","stages":{"embed":{"done":"a","total":5}}}',
                                  "[]", '{"state": 3}', '{"state": "done", "summary": []}'])
def test_a_status_file_of_the_wrong_shape_reads_as_no_status(indexed: Path, text: str) -> None:
    (indexed / ".assay" / "status.json").write_text(text)
    assert read_status(indexed) is None
    shown = runner.invoke(app, ["status", str(indexed)])
    assert shown.exit_code == 0 and "entities" in shown.output and "run:" not in shown.output
    as_json = runner.invoke(app, ["status", "--json", str(indexed)])
    assert as_json.exit_code == 0 and json.loads(as_json.output)["last_run"] is None


# 1. a lost catalog

@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_an_index_run_re_parses_everything_when_the_catalog_lost_the_manifests_entities(indexed: Path, how: str) -> None:
    total = load_manifest(indexed).entity_count
    if how == "deleted":
        for path in (indexed / ".assay").glob("catalog.sqlite*"):
            path.unlink()
    else:
        Catalog(indexed).clear()
    report = run_index(str(indexed), Settings())
    assert "catalog is missing or empty" in report.rebuild_reason
    assert report.files_parsed == len(load_manifest(indexed).files)
    assert Catalog(indexed).count() == total == load_manifest(indexed).entity_count


# 2. a damaged SQLite state file

def test_a_garbled_catalog_names_the_file_and_a_rebuild_sets_it_aside(indexed: Path) -> None:
    catalog = indexed / ".assay" / "catalog.sqlite"
    total = Catalog(indexed).count()
    garble(catalog)
    with pytest.raises(DamagedDatabase, match=r"catalog\.sqlite is damaged \(file is not a database\); run `assay index --rebuild`"):
        Catalog(indexed)
    shown = runner.invoke(app, ["status", str(indexed)])
    assert shown.exit_code == 2 and "catalog.sqlite is damaged" in shown.output and "--rebuild" in shown.output, shown.output
    assert run_index(str(indexed), Settings(), rebuild=True).entities_total == total
    assert Catalog(indexed).count() == total
    assert (indexed / ".assay" / "catalog.sqlite.damaged").exists()  # kept, not deleted


def test_a_garbled_embedding_cache_is_named_and_a_rebuild_replaces_it(indexed: Path) -> None:
    cache = indexed / ".assay" / "embed_cache.sqlite"
    garble(cache)
    (indexed / "pkg" / "extra.py").write_text("def extra_helper(x):\n    return x + 1\n")
    with pytest.raises(DamagedDatabase, match=r"embed_cache\.sqlite is damaged"):
        run_index(str(indexed), Settings())
    report = run_index(str(indexed), Settings(), rebuild=True)
    assert report.dense_pending == 0 and (indexed / ".assay" / "embed_cache.sqlite.damaged").exists()


# 4. a damaged or deleted BM25 index

def test_a_damaged_bm25_index_names_its_folder_and_advises_an_index_run(indexed: Path) -> None:
    folder = lexical_dir(indexed)
    (folder / "ids.json").write_text("{garbage")
    with pytest.raises(ValueError, match=r"BM25 index in .*lexical is damaged .*; run `assay index`"):
        LexicalIndex.load(folder)
    run_index(str(indexed), Settings())  # the advice mends it
    assert LexicalIndex.load(folder).ids


def test_searching_without_the_bm25_index_says_so(indexed: Path) -> None:
    shutil.rmtree(lexical_dir(indexed))
    result = search(indexed, "helper", Settings(), k=3, mode="bm25")
    assert "BM25 index" in result.note and "missing" in result.note and "assay index" in result.note


# 5. an interrupted rebuild's old collection

def test_the_run_after_an_interrupted_rebuild_drops_the_old_collection(indexed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_flow, "EMBED_STORE_BATCH", SLICE)
    for path in (indexed / ".assay").glob("embed_cache.sqlite*"):
        path.unlink()  # so the rebuild really embeds, and dies doing it
    use(monkeypatch, StandInEmbedder(calls_left=2))
    with pytest.raises(Killed):
        run_index(str(indexed), Settings(embed_batch=4), rebuild=True)
    base = collection_name(indexed)
    assert load_manifest(indexed).collection == f"{base}_g2"  # switched before it died
    use(monkeypatch, StandInEmbedder())
    run_index(str(indexed), Settings(embed_batch=4))
    client = chromadb.PersistentClient(str(indexed / ".assay" / "chroma"))
    assert [getattr(c, "name", c) for c in client.list_collections()] == [f"{base}_g2"]

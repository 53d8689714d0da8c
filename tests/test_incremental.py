"""Index behaviour across runs: only changed files re-embedded, deletes purge, failures keep memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.index.embed import embedder_for
from assay.stages.index.store import Catalog, VectorStore, load_manifest, manifest_path
from assay.stages.query.retrieve import retrieve
from tests.conftest import make_unreadable
from tests.fakes import FakeOllama


def entity_names(root: Path) -> set[str]:
    return {e.qualname for e in Catalog(root).all()}


def search_names(root: Path, query: str, settings: Settings | None = None) -> list[str]:
    s = settings or Settings()
    res = retrieve(root, query, load_manifest(root), embedder_for(s), pool=10, chroma_url=s.chroma_url)
    return [c.entity for c in res.candidates]


def test_first_index_then_no_change_embeds_nothing(project: Path) -> None:
    first = run_index(str(project))
    assert first.files_parsed == 5 and first.entities_embedded == first.entities_total > 0
    again = run_index(str(project))
    assert again.files_parsed == 0 and again.entities_embedded == 0 and again.files_unchanged == 5
    assert again.entities_total == first.entities_total


def test_editing_one_file_reembeds_only_that_file(project: Path) -> None:
    run_index(str(project))
    before = {e.id: e for e in Catalog(project).all()}
    retry = project / "pkg" / "retry.py"
    retry.write_text(retry.read_text() + "\n\ndef jitter(delay: float) -> float:\n    return delay * 1.1\n")
    report = run_index(str(project))
    assert report.files_parsed == 1 and report.files_unchanged == 4
    retry_entities = [e for e in Catalog(project).all() if e.file == "pkg/retry.py"]
    assert report.entities_embedded == len(retry_entities)
    assert "jitter" in entity_names(project)
    after = {e.id: e for e in Catalog(project).all()}
    untouched = {i for i, e in before.items() if e.file != "pkg/retry.py"}
    assert all(after[i] == before[i] for i in untouched)
    assert "jitter" in search_names(project, "jitter delay")


def test_deleted_and_newly_ignored_files_are_purged(project: Path) -> None:
    run_index(str(project))
    (project / "pkg" / "session.py").unlink()
    (project / ".assayignore").write_text("docs/\n")
    report = run_index(str(project))
    assert report.files_removed == 2
    names = entity_names(project)
    assert "Session" not in names and "merge_cookies" not in names
    assert not any(n.startswith("Guide") for n in names)
    manifest = load_manifest(project)
    ids = {i for rec in manifest.files.values() for i in rec.entity_ids}
    assert VectorStore(project, None, manifest.collection).count() == len(ids)
    assert "Session" not in search_names(project, "persistent HTTP session cookies")


def test_the_index_answers_before_chroma_opens_and_purged_vectors_go_in_the_dense_phase(project: Path) -> None:
    """The lexical phase needs no vector store: with Chroma unreachable, a change is searchable by BM25 and the
    purged passages' vectors are listed in the manifest; the next run that reaches Chroma deletes them."""
    from assay.stages.query.retrieve import search

    run_index(str(project))
    gone = set(load_manifest(project).files["pkg/session.py"].entity_ids)
    (project / "pkg" / "session.py").unlink()
    with (project / "pkg" / "retry.py").open("a") as fh:
        fh.write("\n\ndef brand_new_helper():\n    return 42\n")
    with pytest.raises(Exception):
        run_index(str(project), Settings(chroma_url="http://127.0.0.1:9"))
    manifest = load_manifest(project)
    assert gone and gone <= set(manifest.vectors_stale) and "pkg/session.py" not in manifest.files
    hits = search(project, "brand_new_helper", Settings(), k=3)
    assert hits.candidates[0].entity == "brand_new_helper" and "Session" not in entity_names(project)
    store = VectorStore(project, None, manifest.collection)
    assert set(store.collection.get(ids=sorted(gone))["ids"]) == gone  # not deleted yet
    run_index(str(project))
    manifest = load_manifest(project)
    assert manifest.vectors_stale == [] and manifest.dense_pending == []
    assert store.collection.get(ids=sorted(gone))["ids"] == []
    assert store.count() == sum(len(rec.entity_ids) for rec in manifest.files.values())


def test_unreadable_file_keeps_its_entities(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_index(str(project))
    locked = project / "pkg" / "session.py"
    make_unreadable(monkeypatch, locked)
    report = run_index(str(project))
    assert report.kept_unreadable == 1 and report.skipped.get("unreadable") == 1
    assert {"Session", "merge_cookies"} <= entity_names(project)
    assert "pkg/session.py" in load_manifest(project).files


def test_crash_before_manifest_leaves_previous_index_queryable(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_index(str(project))
    old_manifest = manifest_path(project).read_text()
    (project / "pkg" / "retry.py").write_text("def brand_new_helper():\n    return 42\n")
    import assay.tasks.index as index_tasks

    def boom(*args, **kwargs):
        raise RuntimeError("simulated crash before the manifest is written")

    monkeypatch.setattr(index_tasks, "write_manifest", boom)
    with pytest.raises(RuntimeError):
        run_index(str(project))
    assert manifest_path(project).read_text() == old_manifest
    assert "Session" in search_names(project, "persistent HTTP session")
    monkeypatch.undo()
    report = run_index(str(project))
    assert report.files_parsed == 1
    assert "brand_new_helper" in entity_names(project) and "retry_call" not in entity_names(project)


def test_embedder_change_forces_a_clean_reembed(project: Path) -> None:
    run_index(str(project))
    first = load_manifest(project)
    with FakeOllama(dimension=16) as ollama:
        settings = Settings(embedder="ollama:fake-embed", ollama_host=ollama.url)
        report = run_index(str(project), settings)
        assert report.rebuild_reason.startswith("embedder changed")
        manifest = load_manifest(project)
        assert manifest.embedder == "ollama:fake-embed" and manifest.dimension == 16
        assert manifest.collection != first.collection
        store = VectorStore(project, None, manifest.collection)
        got = store.collection.get(include=["embeddings"], limit=3)
        assert all(len(v) == 16 for v in got["embeddings"])
        assert store.count() == report.entities_total
        assert ollama.bodies("/api/embed")
        assert search_names(project, "cookie", settings)  # queries use the same embedder
    existing = [c.name for c in VectorStore(project).collection._client.list_collections()]
    assert first.collection not in existing  # the old vectors were dropped, never mixed


def test_rebuild_flag_and_damaged_manifest(project: Path) -> None:
    run_index(str(project))
    report = run_index(str(project), rebuild=True)
    assert report.rebuild_reason == "rebuild requested" and report.files_parsed == 5
    manifest_path(project).write_text("{not json")
    with pytest.raises(Exception, match="run `assay index --rebuild`"):
        run_index(str(project))
    report = run_index(str(project), rebuild=True)
    assert json.loads(manifest_path(project).read_text())["files"]


def test_unreadable_folder_keeps_everything_below_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from assay.stages.index import discover as discover_mod

    run_index(str(project))
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("/pkg"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(discover_mod.os, "scandir", scandir)
    report = run_index(str(project))
    assert report.skipped["unreadable_dir"] == 1 and report.files_removed == 0 and report.kept_unreadable == 3
    assert {"retry_call", "Session", "merge_cookies"} <= entity_names(project)


def test_an_index_made_by_an_older_parser_is_rebuilt_once(project: Path) -> None:
    run_index(str(project))
    path = manifest_path(project)
    old = json.loads(path.read_text())
    old["parser"] = 1
    path.write_text(json.dumps(old))
    report = run_index(str(project))
    assert report.rebuild_reason.startswith("the parser changed") and report.files_parsed == 5
    assert load_manifest(project).parser >= 2 and run_index(str(project)).files_parsed == 0
    assert any(e.kind == "file" and e.file == "pkg/retry.py" for e in Catalog(project).all())


def test_a_query_during_the_dense_fill_gets_bm25_results_and_says_dense_is_partial(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    import assay.flows.index as index_flow_module
    import assay.tasks.index as index_task_module
    from assay.stages.query.retrieve import search

    real = index_task_module.embed_entities
    release = threading.Event()

    def slow_embed(*args, **kwargs):
        release.wait(30)  # hold the dense phase open until the test has queried
        return real(*args, **kwargs)

    monkeypatch.setattr(index_task_module, "embed_entities", slow_embed)
    monkeypatch.setattr(index_flow_module, "EMBED_STORE_BATCH", 4)
    runner = threading.Thread(target=run_index, args=(str(project),))
    runner.start()
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not ((m := load_manifest(project)) and m.dense_pending):
            time.sleep(0.05)
        assert load_manifest(project).dense_pending, "the lexical phase never committed"
        hits = search(project, "retry_call", Settings(), k=5)
        assert hits.candidates and hits.candidates[0].entity == "retry_call" and hits.candidates[0].bm25 is not None
        assert hits.note.startswith("dense index partial: 0 of")
    finally:
        release.set()
        runner.join(60)
    assert load_manifest(project).dense_pending == []
    assert search(project, "retry_call", Settings(), k=5).note == ""


def test_parsing_in_worker_processes_gives_the_same_result_in_the_same_order(tmp_path: Path) -> None:
    from assay.stages.index.discover import discover
    from assay.stages.index.incremental import parse_files, parse_workers

    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(f"class C{i}:\n    def m(self):\n        return {i}\n")
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\ntext {i}\n")
    (tmp_path / "broken.py").write_bytes(b"def ok():\n    return 1\n\ndef bad(:\n")
    files = discover(tmp_path, 1_000_000).files
    one = parse_files(tmp_path, files, 40, 1200)
    two = parse_files(tmp_path, files, 40, 1200, workers=2)
    assert [pf.path for pf in two.files] == [pf.path for pf in one.files] == [f.path for f in files]
    assert two.model_dump() == one.model_dump()
    assert parse_workers(0, files) == 1  # a small run is not worth a process
    big = [f.model_copy(update={"size": 1_000_000}) for f in files]
    assert parse_workers(0, big) >= 1 and parse_workers(3, big) == 3


def test_the_catalog_keeps_bm25_tokens_and_fills_in_missing_ones(project: Path) -> None:
    from assay.stages.index.tokens import tokenize
    from assay.stages.index.store import _TOKENS

    run_index(str(project), Settings())
    catalog = Catalog(project)
    ids, tokens = catalog.lexical_tokens()
    entities = catalog.get(ids)
    assert ids == sorted(ids) and len(ids) == catalog.count()
    assert all(sorted(t) == sorted(tokenize(entities[i].lexical_text())) for i, t in zip(ids, tokens))
    with catalog._db:  # an index stored by an older tokenizer has no cached tokens
        catalog._db.execute(f"DELETE FROM {_TOKENS}")
    again_ids, again = catalog.lexical_tokens()
    assert again_ids == ids and [sorted(t) for t in again] == [sorted(t) for t in tokens]
    assert catalog._db.execute(f"SELECT COUNT(*) FROM {_TOKENS}").fetchone()[0] == len(ids)


def test_queries_read_the_manifest_once_per_version(project: Path) -> None:
    from assay.stages.index.store import read_manifest, write_manifest

    run_index(str(project), Settings())
    first = read_manifest(project)
    assert read_manifest(project) is first  # unchanged file: parsed once, shared
    changed = first.model_copy(update={"notes": ["note-x"]})
    write_manifest(project, changed)
    again = read_manifest(project)
    assert again is not first and again.notes == ["note-x"]


def test_threads_opening_one_vector_store_at_once_all_get_a_working_one(tmp_path: Path) -> None:
    """The MCP server indexes in one thread while others query: Chroma registers a folder's client before it has
    started it, so without Assay's lock a second thread got a half-started one (failed 10 of 10 trials)."""
    import threading

    for trial in range(3):
        root = tmp_path / f"w{trial}"
        root.mkdir()
        barrier = threading.Barrier(4)
        errors: list[Exception] = []

        def open_and_count() -> None:
            barrier.wait()
            try:
                VectorStore(root, None, "assay_test").count()
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=open_and_count) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []

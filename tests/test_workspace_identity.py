"""A workspace is its path: a copied folder (its `.assay/` and manifest copied too) gets its own Chroma collection on a
shared server and never writes to or deletes from the original's; an empty workspace path is an error, never the
working folder (an unset ASSAY_WORKSPACE in prefect.yaml); a Chroma server that does not answer gives searches a whole,
short note."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.artifacts import IndexManifest, IndexPlan
from assay.stages.core.config import Settings
from assay.stages.core.workspace import WorkspaceError, collection_name, owns_collection, resolve_workspace
from assay.stages.index.incremental import carried_pending, next_collection
from assay.stages.index.store import VectorStore, load_manifest, unreachable
from assay.stages.query.retrieve import dense_unavailable, search
from tests.conftest import FIXTURES
from tests.processes import ChromaServer

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path_factory.mktemp("chroma-identity")).start()
    yield server
    server.stop()


def _indexed_copy(tmp_path: Path, settings: Settings) -> tuple[Path, Path]:
    """The fixture project indexed, then copied with its `.assay/`; the copy lacks pkg/retry.py."""
    original = tmp_path / "original"
    shutil.copytree(FIXTURES / "project", original)
    run_index(str(original), settings)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    (copy / "pkg" / "retry.py").unlink()
    return original, copy


def _files(root: Path, query: str, settings: Settings) -> set[str]:
    return {c.file for c in search(root, query, settings, k=10, mode="dense").candidates}


def test_a_copied_workspace_on_a_server_gets_its_own_collection_and_leaves_the_original_whole(
        chroma: ChromaServer, tmp_path: Path) -> None:
    settings = Settings(chroma_url=chroma.url)
    original, copy = _indexed_copy(tmp_path, settings)
    first = load_manifest(original)
    before = VectorStore(original, chroma.url, first.collection).count()

    report = run_index(str(copy), settings)

    mine = load_manifest(copy).collection
    assert mine != first.collection and owns_collection(copy, mine)
    assert VectorStore(original, chroma.url, first.collection).count() == before  # the copy deleted nothing there
    assert load_manifest(original).collection == first.collection
    assert report.entities_embedded == report.entities_total and report.embed_cached == report.entities_total
    assert "came from" in report.rebuild_reason and str(original) in report.rebuild_reason
    assert VectorStore(copy, chroma.url, mine).count() == report.entities_total
    assert "pkg/retry.py" in _files(original, "retry with exponential backoff", settings)
    assert "pkg/retry.py" not in _files(copy, "retry with exponential backoff", settings)
    again = run_index(str(copy), settings)  # from now on an ordinary incremental run on its own collection
    assert again.entities_embedded == 0 and load_manifest(copy).collection == mine
    assert {first.collection, mine} <= set(chroma.collections())


def test_a_copied_workspace_keeps_using_the_embedded_store_it_carries(tmp_path: Path) -> None:
    original, copy = _indexed_copy(tmp_path, Settings())
    name = load_manifest(original).collection
    report = run_index(str(copy), Settings())
    assert load_manifest(copy).collection == name  # its own store, copied with the folder: nothing to store again
    assert report.entities_embedded == 0 and not report.rebuild_reason
    assert "pkg/retry.py" not in _files(copy, "retry with exponential backoff", Settings())
    assert "pkg/retry.py" in _files(original, "retry with exponential backoff", Settings())
    rebuilt = run_index(str(copy), Settings(), rebuild=True)  # a rebuild moves to its own name and drops the copied one
    own = load_manifest(copy).collection
    assert owns_collection(copy, own) and rebuilt.dense_pending == 0
    import chromadb

    client = chromadb.PersistentClient(path=str(copy / ".assay" / "chroma"))
    assert [getattr(c, "name", c) for c in client.list_collections()] == [own]


def _manifest(root: Path, collection: str) -> IndexManifest:
    return IndexManifest.model_validate({
        "workspace": str(root), "parser": 1, "embedder": "e", "dimension": 3, "collection": collection,
        "files": {"a.py": {"content_hash": "h", "size": 1, "language": "python", "entity_ids": ["a1", "a2"]}},
        "notes": ["note-1"],
    })


def test_next_collection_never_reuses_another_workspaces_collection_on_a_server(tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    incremental = IndexPlan(to_parse=[], unchanged=["a.py"], removed=[], kept_unreadable=[])
    foreign = _manifest(there, f"{collection_name(there)}_g3")
    assert next_collection(foreign, incremental, here, shared=True) == f"{collection_name(here)}_g1"
    assert next_collection(foreign, incremental, here, shared=False) == foreign.collection  # the copy's own store
    own = _manifest(here, f"{collection_name(here)}_g2")
    assert next_collection(own, incremental, here, shared=True) == own.collection
    rebuild = incremental.model_copy(update={"rebuild": True})
    assert next_collection(own, rebuild, here, shared=True) == f"{collection_name(here)}_g3"
    moved = next_collection(foreign, incremental, here, shared=True)
    assert carried_pending(foreign, incremental, moved) == ["a1", "a2", "note-1"]  # every vector, stored again
    assert carried_pending(own, incremental, own.collection) == []


@pytest.mark.parametrize("given", ["", "   "])
def test_an_empty_workspace_is_an_error_naming_what_to_set(given: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the working folder must not be taken for the workspace
    with pytest.raises(WorkspaceError, match="ASSAY_WORKSPACE"):
        resolve_workspace(given)
    with pytest.raises(WorkspaceError, match="no workspace given"):
        run_index(given)  # the door a prefect.yaml deployment calls
    result = CliRunner().invoke(app, ["index", given])
    assert result.exit_code == 2 and "error: no workspace given" in result.output, result.output
    assert not (tmp_path / ".assay").exists()


def _require_workspace_script() -> str:
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    step = spec["build"][0]["prefect.deployments.steps.run_shell_script"]
    assert step["shell"] is True  # run by a shell, as below
    return step["script"]


def test_prefect_deploy_stops_without_assay_workspace() -> None:
    """The build step runs at `prefect deploy`; unset, every deployment got workspace '' (the deploy folder)."""
    script = _require_workspace_script()
    env = {k: v for k, v in os.environ.items() if k != "ASSAY_WORKSPACE"}
    unset = subprocess.run(script, shell=True, env=env, capture_output=True, text=True, timeout=30)
    assert unset.returncode != 0 and "ASSAY_WORKSPACE is not set" in unset.stderr
    given = subprocess.run(script, shell=True, env={**env, "ASSAY_WORKSPACE": "/srv/repo"}, capture_output=True,
                           text=True, timeout=30)
    assert given.returncode == 0, given.stderr


def test_prefect_yaml_says_how_the_interval_really_changes() -> None:
    """`--interval` is ignored with `deploy --all` and adds a second schedule with `--name`."""
    header = (ROOT / "prefect.yaml").read_text().split("\nname:")[0]
    assert "pass --interval" not in header and "edit `interval`" in header


def test_the_search_note_for_a_silent_chroma_server_is_whole_and_about_the_server(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"
    note = dense_unavailable(unreachable(url, ValueError("Could not connect to a Chroma server. " * 20)))
    assert note.endswith("BM25 only.") and url in note and "start it" in note and "ASSAY_CHROMA_URL" in note
    assert "assay index" not in note and len(note) < 200
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", project)
    run_index(str(project))
    found = search(project, "retry with exponential backoff", Settings(chroma_url=url), k=3)
    assert found.note == note and not found.dense_available and found.candidates  # BM25 still answers


def test_a_copy_not_yet_indexed_neither_notes_into_nor_forgets_the_originals_collection(
        chroma: ChromaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows import mcp_server
    from assay.stages.index.embed import index_embedder
    from assay.stages.index.notes import add_note

    settings = Settings(chroma_url=chroma.url)
    original = tmp_path / "original"
    shutil.copytree(FIXTURES / "project", original)
    run_index(str(original), settings)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    manifest = load_manifest(original)
    before = VectorStore(original, chroma.url, manifest.collection).count()
    with pytest.raises(ValueError, match="run `assay index` here first"):
        add_note(copy, "we retry twice", index_embedder(manifest.embedder, settings), chroma.url)
    monkeypatch.setenv("ASSAY_CHROMA_URL", chroma.url)
    mcp_server._delete_state(copy)
    assert manifest.collection in chroma.collections()  # the forget of a copy dropped the original's collection
    assert VectorStore(original, chroma.url, manifest.collection).count() == before

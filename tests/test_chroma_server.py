"""Assay through a real Chroma server (`chroma run` on loopback, started here): index, incremental re-index, search,
ask and two workspaces on one server; a server that dies mid-index; nothing in the workspace's embedded store."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.stages.core.config import Settings
from assay.stages.core.progress import NullSink
from assay.stages.index.store import Catalog, VectorStore, load_manifest
from assay.stages.query.retrieve import search
from tests.conftest import FIXTURES
from tests.processes import ChromaServer


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path_factory.mktemp("chroma-data")).start()
    yield server
    server.stop()


def _copy_project(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / "project", dest)
    return dest


def _names(root: Path, query: str, settings: Settings) -> list[str]:
    return [c.entity for c in search(root, query, settings, k=10).candidates]


def test_index_search_ask_and_reindex_through_the_server(chroma: ChromaServer, tmp_path: Path) -> None:
    project = _copy_project(tmp_path, "project")
    settings = Settings(chroma_url=chroma.url)
    first = run_index(str(project), settings)
    assert first.entities_embedded == first.entities_total > 0 and first.dense_pending == 0
    manifest = load_manifest(project)
    assert manifest.collection in chroma.collections()
    assert VectorStore(project, chroma.url, manifest.collection).count() == first.entities_total
    assert not (project / ".assay" / "chroma").exists()  # the embedded store is never opened

    dense = [c for c in search(project, "retry with exponential backoff", settings, k=5, mode="dense").candidates]
    assert dense and dense[0].distance is not None  # the server answered the vector search
    report = run_query(str(project), "How are failed requests retried?", settings)
    assert report.selection.included and report.answer.text

    retry = project / "pkg" / "retry.py"
    retry.write_text(retry.read_text() + "\n\ndef jitter_delay(delay: float) -> float:\n    return delay * 1.1\n")
    again = run_index(str(project), settings)
    retry_entities = [e for e in Catalog(project).all() if e.file == "pkg/retry.py"]
    assert again.files_parsed == 1 and again.entities_embedded == len(retry_entities)
    assert "jitter_delay" in _names(project, "jitter delay", settings)
    assert VectorStore(project, chroma.url, manifest.collection).count() == again.entities_total


def test_two_workspaces_share_a_server_but_not_their_passages(chroma: ChromaServer, tmp_path: Path) -> None:
    settings = Settings(chroma_url=chroma.url)
    one, two = _copy_project(tmp_path, "one"), _copy_project(tmp_path, "two")
    (two / "pkg" / "only_here.py").write_text('def quasar_lattice():\n    """Fold the quasar lattice."""\n    return 7\n')
    run_index(str(one), settings)
    run_index(str(two), settings)
    first, second = load_manifest(one).collection, load_manifest(two).collection
    assert first != second and {first, second} <= set(chroma.collections())
    assert "quasar_lattice" in _names(two, "quasar lattice", settings)
    assert all(c.file != "pkg/only_here.py" for c in search(one, "quasar lattice", settings, k=10, mode="dense").candidates)


class _KillAfterFirstBatch(NullSink):
    """Stops the server once the embedding stage reports its first embedded batch (the vectors are not stored yet)."""

    def __init__(self, server: ChromaServer) -> None:
        self.server = server

    def advance(self, stage: str, n: int = 1) -> None:
        if stage == "embed" and self.server.process is not None:
            self.server.stop()


def test_a_server_that_dies_mid_index_gives_one_line_and_the_next_run_completes(tmp_path: Path) -> None:
    project = _copy_project(tmp_path, "project")
    server = ChromaServer(tmp_path / "chroma-data").start()
    try:
        settings = Settings(chroma_url=server.url, embed_batch=4, store_batch=4)
        with pytest.raises(Exception) as failed:
            run_index(str(project), settings, watcher=_KillAfterFirstBatch(server))
        from assay.stages.core.errors import one_line

        message = one_line(failed.value)
        assert "\n" not in message and f"the Chroma server at {server.url} does not answer" in message, message
        assert "assay index" in message  # what to do next
        assert not (project / ".assay" / "chroma").exists()
        server = ChromaServer(tmp_path / "chroma-data", server.port).start()  # same data, same address
        report = run_index(str(project), settings)
        assert report.dense_pending == 0
        manifest = load_manifest(project)
        assert VectorStore(project, server.url, manifest.collection).count() == report.entities_total
        assert "retry" in " ".join(_names(project, "retry with exponential backoff", settings))
    finally:
        server.stop()


def test_a_loopback_server_is_reached_without_the_environment_proxy(chroma: ChromaServer, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """chromadb's own HTTP client reads HTTP_PROXY: every passage stored on a loopback server went through the proxy."""
    from tests.test_settings_doors import Proxy

    proxy = Proxy()
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    project = _copy_project(tmp_path, "proxied")
    settings = Settings(chroma_url=chroma.url)
    report = run_index(str(project), settings)
    assert report.entities_embedded == report.entities_total > 0 and report.dense_pending == 0
    assert search(project, "retry with exponential backoff", settings, k=3, mode="dense").candidates
    proxy.sock.close()
    assert proxy.hits == 0

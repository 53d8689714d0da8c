"""Crashes, concurrent writers and damaged state (sweep3 crash report): notes outlive a damaged catalog's rebuild, a
finished run reads "done" whoever takes the lock as it ends, a damaged vector segment is named and mended by a plain
index run, a full disk or a file-size limit is said with its remedy, and an interrupted run's status counts stored
vectors as a search does.

Index runs use the stand-in embedder of test_index_resume (hashed vectors), so each takes a second or two."""

from __future__ import annotations

import errno
import gc
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import chromadb
import pytest
from typer.testing import CliRunner

import assay.flows.index as index_flow
import assay.stages.index.embed as embed_module
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core import progress as prog
from assay.stages.core.config import Settings
from assay.stages.core.writer import other_writer
from assay.stages.index import storage_errors, store
from assay.stages.index.incremental import dense_note, stored_vectors
from assay.stages.index.notes import add_note, list_notes, notes_log
from assay.stages.index.store import VectorStore, forget_cached_client, load_manifest, vector_damage
from assay.stages.index.vector_cache import stored_samples
from assay.stages.query.retrieve import search
from tests.conftest import FIXTURES
from tests.test_index_resume import BATCH, SLICE, Killed, StandInEmbedder, use

runner = CliRunner()
NOTE = "we never retry POSTs"


@pytest.fixture()
def indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "direct")
    dest = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", dest)
    embedder = StandInEmbedder()
    use(monkeypatch, embedder)
    monkeypatch.setattr(embed_module, "index_embedder", lambda embedded_with, settings: embedder)  # search's
    run_index(str(dest), Settings())
    return dest


def ruin_catalog(root: Path) -> None:
    """Random bytes where the catalog was, as in the report (SQLite: "file is not a database")."""
    gc.collect()  # earlier connections closed: SQLite shares its view of a file among a process's connections
    state = root / ".assay"
    for part in state.glob("catalog.sqlite-*"):
        part.unlink()
    (state / "catalog.sqlite").write_bytes(os.urandom(4096))


def fresh_chroma(root: Path) -> None:
    """Forget this process's open Chroma systems and readers, as a new process would start (damage made on disk is
    otherwise hidden by what they hold in memory)."""
    store._READERS.clear()
    forget_cached_client(root)
    gc.collect()


# 1. notes and a damaged catalog

def test_notes_survive_the_rebuild_a_damaged_catalog_asks_for(indexed: Path) -> None:
    note = add_note(indexed, NOTE, StandInEmbedder())
    ruin_catalog(indexed)
    assert runner.invoke(app, ["status", str(indexed)]).exit_code == 2  # damaged: the advice is --rebuild
    report = run_index(str(indexed), Settings(), rebuild=True)
    assert [n.body for n in list_notes(indexed)] == [NOTE]
    assert load_manifest(indexed).notes == [note.id] and "could not be recovered" not in report.rebuild_reason
    found = search(indexed, NOTE, Settings(), k=3, mode="bm25").candidates
    assert found and found[0].id == note.id
    assert json.loads(runner.invoke(app, ["status", "--json", str(indexed)]).output)["notes"] == 1


def test_a_note_from_before_the_notes_log_is_logged_by_the_next_run_and_survives(indexed: Path) -> None:
    add_note(indexed, NOTE, StandInEmbedder())
    notes_log(indexed).unlink()  # as a workspace indexed before the log was kept
    run_index(str(indexed), Settings())
    assert NOTE in notes_log(indexed).read_text()
    ruin_catalog(indexed)
    run_index(str(indexed), Settings(), rebuild=True)
    assert [n.body for n in list_notes(indexed)] == [NOTE]


def test_a_note_from_before_the_notes_log_is_logged_by_the_next_remember(indexed: Path) -> None:
    """An older Assay's note was logged only by the next index run: a `remember` first, then a damaged catalog, lost it."""
    add_note(indexed, NOTE, StandInEmbedder())
    notes_log(indexed).unlink()  # as a workspace whose notes an older Assay added
    add_note(indexed, "a second note", StandInEmbedder())
    assert NOTE in notes_log(indexed).read_text() and "a second note" in notes_log(indexed).read_text()


def test_a_note_nothing_holds_any_more_is_reported_and_not_counted(indexed: Path) -> None:
    add_note(indexed, NOTE, StandInEmbedder())
    notes_log(indexed).unlink()
    ruin_catalog(indexed)
    report = run_index(str(indexed), Settings(), rebuild=True)
    assert "1 note could not be recovered" in report.rebuild_reason and "catalog.sqlite.damaged" in report.rebuild_reason
    assert load_manifest(indexed).notes == []
    assert json.loads(runner.invoke(app, ["status", "--json", str(indexed)]).output)["notes"] == 0


# 2. another writer takes the lock as a run ends

HOLDER = (  # takes the write lock as a `remember` does (no status of its own) and lets go once told to
    "import sys, time\nfrom pathlib import Path\nfrom assay.stages.index.store import write_lock\n"
    "root, go = Path(sys.argv[1]), Path(sys.argv[2])\n"
    "with write_lock(root):\n    while not go.exists(): time.sleep(0.05)\n")


def test_a_finished_run_reads_done_when_another_writer_takes_the_lock_as_it_ends(indexed: Path, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    go = tmp_path / "go"
    holders: list[subprocess.Popen] = []
    summary = index_flow.run_summary

    def lock_taken_meanwhile(report):  # after the run let go of the lock, before it writes "done"
        holders.append(subprocess.Popen([sys.executable, "-c", HOLDER, str(indexed), str(go)]))
        deadline = time.time() + 60
        while other_writer(indexed) != holders[0].pid:
            assert time.time() < deadline and holders[0].poll() is None, "the holder never took the lock"
            time.sleep(0.05)
        return summary(report)

    monkeypatch.setattr(index_flow, "run_summary", lock_taken_meanwhile)
    (indexed / "pkg" / "extra.py").write_text("def extra_helper(x):\n    return x + 1\n")
    try:
        run_index(str(indexed), Settings())
        state = prog.read_status(indexed)
        assert state["state"] == "done" and state["pid"] == os.getpid() and state["summary"]["entities"] > 0
    finally:
        go.touch()
        for holder in holders:
            holder.wait(60)


def test_a_run_waiting_for_the_lock_still_leaves_the_holders_status_alone(tmp_path: Path) -> None:
    """The other side of the rule above: a run that never wrote the file does not take it from the lock's holder."""
    go = tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), str(go)])
    try:
        deadline = time.time() + 60
        while other_writer(tmp_path) != holder.pid:
            assert time.time() < deadline and holder.poll() is None
            time.sleep(0.05)
        (tmp_path / ".assay" / "status.json").write_text(json.dumps({"state": "running", "pid": holder.pid,
                                                                      "started": 1.0, "stages": {}}))
        prog.StatusSink(tmp_path).finish("done")
        assert json.loads((tmp_path / ".assay" / "status.json").read_text())["pid"] == holder.pid
    finally:
        go.touch()
        holder.wait(60)


# 3. a damaged vector segment

@pytest.fixture()
def large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Over 1,000 passages: Chroma keeps fewer in its log, and writes the HNSW segment files only past that."""
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "direct")
    dest = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", dest)
    generate(dest, files=60, functions=20)
    embedder = StandInEmbedder()
    use(monkeypatch, embedder)
    monkeypatch.setattr(embed_module, "index_embedder", lambda embedded_with, settings: embedder)
    run_index(str(dest), Settings())
    return dest


def generate(root: Path, files: int, functions: int) -> None:
    for i in range(files):
        (root / "pkg" / f"gen_{i}.py").write_text("\n".join(
            f"def generated_{i}_{j}(x):\n    '''Generated helper {j}.'''\n    return x * {j}\n" for j in range(functions)))


def segment_files(root: Path, pattern: str) -> list[Path]:
    files = sorted((root / ".assay" / "chroma").glob(f"*/{pattern}"))
    assert files, "no HNSW segment on disk"
    return files


def test_a_truncated_segment_is_named_with_advice_and_a_plain_index_run_mends_it(large: Path) -> None:
    indexed = large
    fresh_chroma(indexed)
    for path in segment_files(indexed, "*.bin") + segment_files(indexed, "*.pickle"):
        path.write_bytes(b"")
    fresh_chroma(indexed)
    note = search(indexed, "helper", Settings(), k=3).note
    assert "the vector store in" in note and "is damaged" in note and "run `assay index --rebuild`" in note, note
    assert "Error executing plan" not in note  # Chroma's chain, cut to its last causes
    report = run_index(str(indexed), Settings())
    assert "the vector store was damaged" in report.rebuild_reason and report.dense_pending == 0
    assert list((indexed / ".assay").glob("chroma.damaged-*"))  # set aside, not deleted
    fresh_chroma(indexed)
    assert search(indexed, "helper", Settings(), k=3).note == ""
    manifest = load_manifest(indexed)
    assert vector_damage(VectorStore(indexed, None, manifest.collection), stored_samples(indexed, manifest), 8) == ""


def scramble_vectors(path: Path, dimension: int) -> None:
    """Random bytes over every stored vector of an HNSW level-0 file, its graph links left whole: Chroma answers, with
    wrong neighbours (garbage links as well can crash hnswlib itself, in any process that queries). Each element is
    its links (4 + 4 * 2M bytes, M = 16), its vector (4 bytes a dimension), its label (8 bytes)."""
    links, size = 4 + 4 * 2 * 16, 4 + 4 * 2 * 16 + 4 * dimension + 8
    data = bytearray(path.read_bytes())
    assert data and len(data) % size == 0, "not the level-0 layout this test knows"
    for start in range(0, len(data), size):
        data[start + links : start + links + 4 * dimension] = os.urandom(4 * dimension)
    path.write_bytes(bytes(data))


def test_garbage_in_a_segment_is_found_by_the_index_runs_probe_and_mended(large: Path) -> None:
    indexed = large
    manifest = load_manifest(indexed)
    known = stored_samples(indexed, manifest)
    assert known, "the embedding cache holds the stored vectors"
    fresh_chroma(indexed)
    for path in segment_files(indexed, "data_level0.bin"):
        scramble_vectors(path, manifest.dimension)
    fresh_chroma(indexed)
    assert vector_damage(VectorStore(indexed, None, manifest.collection), known, manifest.dimension)
    fresh_chroma(indexed)
    report = run_index(str(indexed), Settings())
    assert "the vector store was damaged" in report.rebuild_reason and report.dense_pending == 0
    fresh_chroma(indexed)
    hits = [VectorStore(indexed, None, manifest.collection).query(v, 1) for v in known]
    assert all(h and h[0][1] < 1e-3 for h in hits)  # each stored vector found again, as in a clean index


# 4. a full disk, a file-size limit

def test_a_full_disk_while_chroma_stores_says_so_with_its_remedy(indexed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    def compaction_fails(self, *args, **kwargs):
        raise InternalError("Error in compaction: Error purging logs")

    monkeypatch.setattr(Collection, "upsert", compaction_fails)
    monkeypatch.setattr(storage_errors, "free_bytes", lambda path: 100_000)
    (indexed / "pkg" / "extra.py").write_text("def extra_helper(x):\n    return x + 1\n")
    shown = runner.invoke(app, ["index", str(indexed)])
    assert shown.exit_code == 2, shown.output
    assert "no space left on device for" in shown.output and "free space on that disk" in shown.output, shown.output
    assert "Error purging logs" in shown.output  # Chroma's own words kept, after the cause
    status = prog.read_status(indexed)
    assert status["state"] == "failed" and "no space left on device" in status["last_error"]


def test_the_same_chroma_error_with_space_to_spare_is_left_as_chroma_said_it(tmp_path: Path) -> None:
    exc = chromadb.errors.InternalError("Error in compaction: Error purging logs")
    assert storage_errors.vector_failure(tmp_path, exc, writing=True) is exc  # this test's disk is not nearly full


def test_a_status_write_that_finds_the_disk_full_leaves_no_temporary_file(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    sink = prog.StatusSink(tmp_path)
    real = Path.write_text

    def full(self: Path, data: str, *args, **kwargs):
        real(self, data[:10])
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError):
        sink.finish("done")
    assert not list((tmp_path / ".assay").glob("status.json.*.tmp"))
    with pytest.raises(RuntimeError, match="the run's own error"):  # not the status write's
        with prog.status_run(tmp_path, status=sink):
            raise RuntimeError("the run's own error")


FSIZE_RUN = (  # an index run under a file-size limit the catalog outgrows (`ulimit -f`)
    "import resource, sys\nfrom assay.flows.index import run_index\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (48 * 1024, resource.RLIM_INFINITY))\n"
    "try:\n    run_index(sys.argv[1])\nexcept Exception as exc:\n    print('ERROR', exc)\n")


def test_a_file_size_limit_is_named_with_the_limit_not_as_a_bare_disk_io_error(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", project)
    generate(project, files=30, functions=20)  # a catalog well past 48 KB
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct"}
    out = subprocess.run([sys.executable, "-c", FSIZE_RUN, str(project)], capture_output=True, text=True, env=env,
                         timeout=600).stdout
    assert "ERROR" in out, out
    assert "file-size limit" in out and "ulimit -f" in out and "raise the limit" in out, out


# 5. an interrupted run counts stored vectors as a search does

def test_an_interrupted_runs_status_counts_the_vectors_a_search_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", workspace)
    generate(workspace, files=12, functions=8)
    monkeypatch.setattr(index_flow, "EMBED_STORE_BATCH", SLICE)
    use(monkeypatch, StandInEmbedder(calls_left=15))  # dies in the second slice: 60 embedded, 40 stored
    with pytest.raises(Killed):
        run_index(str(workspace), Settings(embed_batch=BATCH))
    stored, total = stored_vectors(load_manifest(workspace))
    assert (stored, total) == (SLICE, load_manifest(workspace).entity_count)
    line = prog.run_line(prog.run_view(prog.read_status(workspace)))
    assert f"passages {stored}/{total} stored as vectors (20 more embedded and cached, not yet stored)" in line, line
    assert f"{stored} of {total} passages" in dense_note(load_manifest(workspace))

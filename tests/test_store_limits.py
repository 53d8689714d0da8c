"""The store under a constrained machine: a long-lived process keeps a bounded number of Chroma systems and readers
open (an MCP server touching 50 workspaces aborted at `ulimit -n 256`), a rebuild does not leave the dropped
collection's files open, a read-only workspace's private store copy is writable (dense search works there), and an
exhausted open-file limit is named as such, never as a damaged store to rebuild."""

from __future__ import annotations

import errno
import os
import resource
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from assay.stages.index import storage_errors
from assay.stages.index.storage_errors import DamagedVectors, StoreError, too_many_files, vector_failure
from assay.stages.index.store import readable_copy, unopenable

SPY = '''
import gc, os
def counts():
    return len(os.listdir("/proc/self/fd")), int(open("/proc/self/status").read().split("Threads:")[1].split()[0])
'''


def _run(code: str, nofile: int | None = None, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`code` in a fresh Python (this test process's own Chroma systems must not count), optionally under a low
    open-file limit."""
    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    return subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          preexec_fn=limit, env=os.environ.copy())


def _copies(indexed_project: Path, tmp_path: Path, n: int) -> list[Path]:
    roots = []
    for i in range(n):
        root = tmp_path / f"w{i:02d}"
        shutil.copytree(indexed_project, root)
        roots.append(root)
    return roots


def _last_counts(out: str) -> dict[str, tuple[int, int]]:
    return {line.split()[0]: tuple(int(x) for x in line.split()[1:3]) for line in out.splitlines()
            if line.startswith("at")}


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_open_stores_and_readers_stay_bounded_over_many_workspaces(indexed_project: Path, tmp_path: Path) -> None:
    roots = _copies(indexed_project, tmp_path, 14)
    code = SPY + f'''
from pathlib import Path
from assay.stages.index.store import VectorStore, dense_search, read_manifest
for i, root in enumerate(map(Path, {[str(r) for r in roots]!r}), 1):
    m = read_manifest(root)
    assert dense_search(root, None, m.collection, [1.0] + [0.0] * (m.dimension - 1), 3)
    VectorStore(root, None, m.collection).count()
    if i in (7, 14):
        print("at" + str(i), *counts(), flush=True)
'''
    done = _run(code)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = _last_counts(done.stdout)
    # before: each workspace kept ~13 descriptors and ~11 threads open (7 more workspaces: ~90 and ~75)
    assert seen["at14"][0] - seen["at7"][0] <= 6, seen
    assert seen["at14"][1] - seen["at7"][1] <= 6, seen


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_rebuilds_do_not_keep_dropped_collections_open(project: Path) -> None:
    code = SPY + f'''
from assay.flows.index import run_index
from assay.stages.index.store import dense_search, read_manifest
from pathlib import Path
root = Path({str(project)!r})
for i in range(1, 9):
    run_index(str(root), rebuild=True)
    m = read_manifest(root)
    dense_search(root, None, m.collection, [1.0] + [0.0] * (m.dimension - 1), 3)
    gc.collect()  # SQLite connections that wait for the collector are not what this is about
    if i in (2, 8):
        print("at" + str(i), *counts(), flush=True)
'''
    done = _run(code)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = _last_counts(done.stdout)
    assert seen["at8"][0] - seen["at2"][0] <= 8, seen  # before: 4 more descriptors per rebuild (24), never closed


def test_rebuilds_leave_one_vector_folder_on_disk(project: Path) -> None:
    """Chroma's `delete_collection` leaves the dropped collection's HNSW folder: each rebuild left a full copy."""
    from assay.flows.index import run_index

    for _ in range(3):
        run_index(str(project), rebuild=True)
    chroma = project / ".assay" / "chroma"
    with sqlite3.connect(f"file:{chroma / 'chroma.sqlite3'}?mode=ro", uri=True) as db:
        vector = {s for (s,) in db.execute("SELECT id FROM segments WHERE scope = 'VECTOR'")}
    assert len(vector) == 1
    assert {p.name for p in chroma.iterdir() if p.is_dir()} <= vector


def _writable_everywhere(folder: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IWUSR for p in (folder, *folder.rglob("*")))


def test_private_copy_of_a_read_only_store_is_writable(indexed_project: Path, tmp_path: Path) -> None:
    store = tmp_path / "chroma"
    shutil.copytree(indexed_project / ".assay" / "chroma", store)
    for p in (*store.rglob("*"), store):
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))  # `chmod -R a-w`
    try:
        copy = readable_copy(store)
        assert _writable_everywhere(copy)  # before: 0444 files in 0555 folders, which Chroma refused to open
        assert (copy / "chroma.sqlite3").read_bytes() == (store / "chroma.sqlite3").read_bytes()
    finally:
        for p in (store, *store.rglob("*")):
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def _without_capabilities() -> tuple[str, ...] | None:
    """A prefix under which file modes apply to this user (root ignores them); None where none can be had."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        return None
    probe = subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "true"], capture_output=True)
    return ("setpriv", "--bounding-set=-all", "--inh-caps=-all") if probe.returncode == 0 else None


def test_read_only_workspace_searches_dense(indexed_project: Path, tmp_path: Path) -> None:
    prefix = _without_capabilities()
    if prefix is None:
        pytest.skip("running as root without setpriv: file modes cannot be made to apply")
    root = tmp_path / "ro"
    shutil.copytree(indexed_project, root)
    subprocess.run(["chmod", "-R", "a-w", str(root)], check=True)
    code = f'''
from pathlib import Path
from assay.stages.index.store import dense_search, read_manifest
root = Path({str(root)!r})
m = read_manifest(root)
print("found", len(dense_search(root, None, m.collection, [1.0] + [0.0] * (m.dimension - 1), 3)))
'''
    try:
        done = _run(code, prefix=prefix)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(root)], check=True)
    # before: "attempt to write a readonly database" in the private copy, advising `assay index --rebuild`
    assert done.returncode == 0, done.stderr[-2000:]
    assert "found 3" in done.stdout


def test_read_only_store_failure_does_not_advise_a_rebuild(tmp_path: Path) -> None:
    said = str(unopenable(tmp_path / ".assay" / "chroma", sqlite3.OperationalError("file is not a database"),
                          read_only=True))
    assert "--rebuild" not in said and "read-only" in said


def test_exhausted_descriptors_are_named_not_damage(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    emfile = OSError(errno.EMFILE, "Too many open files")
    assert "too many open files (limit" in str(too_many_files(emfile))
    monkeypatch.setattr(storage_errors, "open_files", lambda: (14, 16))
    sqlite_said = unopenable(tmp_path / "chroma", sqlite3.OperationalError("unable to open database file"))
    assert "too many open files (limit 16)" in str(sqlite_said) and "--rebuild" not in str(sqlite_said)
    hnsw = RuntimeError("Error constructing hnsw segment reader: Error loading hnsw index")
    failure = vector_failure(tmp_path / "chroma", hnsw, writing=False)
    assert isinstance(failure, StoreError) and not isinstance(failure, DamagedVectors)
    assert "ulimit -n" in str(failure)


def test_damage_with_descriptors_to_spare_is_still_damage(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(storage_errors, "open_files", lambda: (30, 20000))
    assert too_many_files(sqlite3.OperationalError("unable to open database file")) is None
    hnsw = RuntimeError("Error constructing hnsw segment reader: Error loading hnsw index")
    assert isinstance(vector_failure(tmp_path / "chroma", hnsw, writing=False), DamagedVectors)


def test_reader_at_a_tiny_open_file_limit_names_the_limit(indexed_project: Path, tmp_path: Path) -> None:
    (root,) = _copies(indexed_project, tmp_path, 1)  # Chroma's engine writes as it opens: not the shared fixture
    code = f'''
from pathlib import Path
from assay.stages.index.store import EmbeddedReader, read_manifest
root = Path({str(root)!r})
m = read_manifest(root)
try:
    EmbeddedReader(root, m.collection).query([1.0] + [0.0] * (m.dimension - 1), 3)
    print("SAID: answered")
except Exception as exc:
    print("SAID:", exc)
'''
    done = _run(code, nofile=11)
    said = next((line for line in done.stdout.splitlines() if line.startswith("SAID:")), done.stderr[-1500:])
    if said == "SAID: answered":
        pytest.skip("this machine's Chroma opened the store within 11 descriptors")
    # before: "the vector store ... is damaged (Error constructing hnsw segment reader ...); run `assay index --rebuild`"
    assert "too many open files (limit 11)" in said and "--rebuild" not in said, said


def test_a_manifest_that_cannot_be_opened_is_not_called_damaged(project: Path) -> None:
    """Out of descriptors, reading the manifest failed with EMFILE, and the message advised `--rebuild`."""
    from unittest import mock

    from assay.flows.index import run_index
    from assay.stages.index.store import load_manifest

    run_index(str(project))
    real = Path.read_text

    def no_descriptor(self: Path, *args, **kwargs) -> str:
        if self.name == "manifest.json":
            raise OSError(errno.EMFILE, "Too many open files", str(self))
        return real(self, *args, **kwargs)

    with mock.patch.object(Path, "read_text", no_descriptor), pytest.raises(StoreError) as caught:
        load_manifest(project)
    assert "damaged" not in str(caught.value) and "--rebuild" not in str(caught.value)
    assert "ulimit -n 4096" in str(caught.value)

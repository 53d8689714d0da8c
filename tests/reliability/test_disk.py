"""The disk under `.assay/`: full (one line that says to free space, not to rebuild; the index stays whole and
the rerun goes on) or read-only (one line that says so, from every command, never a traceback)."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.stages.core.errors import DISK_FULL_ADVICE, disk_full, one_line
from assay.stages.index.store import unopenable
from tests.conftest import FIXTURES

ASSAY = str(Path(sys.executable).with_name("assay"))


def sqlite_full_error(tmp_path: Path) -> sqlite3.OperationalError:
    """SQLite's own 'database or disk is full', from a database capped at a few pages."""
    db = sqlite3.connect(tmp_path / "capped.sqlite")
    db.execute("PRAGMA max_page_count = 3")
    db.execute("CREATE TABLE t (x TEXT)")
    try:
        for _ in range(100):
            db.execute("INSERT INTO t VALUES (?)", ("x" * 4000,))
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        db.close()
    raise AssertionError("the capped database never filled")


def test_a_full_disk_reads_as_one_line_that_says_to_free_space(tmp_path: Path) -> None:
    sqlite_full = sqlite_full_error(tmp_path)
    no_space = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    try:
        try:
            raise no_space
        except OSError as inner:
            raise RuntimeError("writing the vector cache failed") from inner
    except RuntimeError as exc:
        wrapped = exc
    for exc in (sqlite_full, no_space, wrapped):
        assert disk_full(exc)
        line = one_line(exc)
        assert line.startswith("the disk is full (") and line.endswith(DISK_FULL_ADVICE) and "\n" not in line
    other = sqlite3.OperationalError("no such table: entities")
    assert not disk_full(other) and one_line(other) == "no such table: entities"
    assert "--rebuild" in str(unopenable(tmp_path, other))  # a damaged store: start it over
    full = str(unopenable(tmp_path, sqlite_full))
    assert "--rebuild" not in full and "the disk is full" in full  # a rebuild would throw a whole store away


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs (root on Linux only): room for the fixture and its index, and little more."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small disk here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    filler = disk / f"filler-{uuid.uuid4().hex}"
    with filler.open("wb") as out:
        block = b"\0" * 65536
        while shutil.disk_usage(disk).free > leave:
            out.write(block[: max(4096, min(len(block), shutil.disk_usage(disk).free - leave))])
            out.flush()
            os.fsync(out.fileno())
    return filler


needs_mount = pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0, reason="mounts a tmpfs")


@needs_mount
def test_an_index_run_on_a_full_disk_fails_in_one_line_keeps_the_index_and_the_rerun_goes_on(small_disk: Path) -> None:
    project = small_disk / "project"
    shutil.copytree(FIXTURES / "project", project)
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct", "ASSAY_EMBEDDER": "static", "ASSAY_HOME": str(small_disk / "home")}
    run = lambda *args: subprocess.run([ASSAY, *args], capture_output=True, text=True, env=env, timeout=300)  # noqa: E731
    assert run("index", str(project)).returncode == 0
    for i in range(40):  # enough new code that the re-index must write more than the space left
        (project / "pkg" / f"more_{i}.py").write_text(
            "\n".join(f"def more_{i}_{j}(x):\n    '''Helper {j} of batch {i}.'''\n    return x + {j}\n" for j in range(20)))
    filler = fill(small_disk, leave=64 * 1024)
    failed = run("index", str(project))
    assert failed.returncode == 2
    assert failed.stderr.strip().splitlines()[-1].startswith("error: the disk is full (")
    assert DISK_FULL_ADVICE in failed.stderr
    found = run("search", "how does retry_call back off?", str(project))  # the old index still answers
    assert found.returncode == 0 and "pkg/retry.py" in found.stdout
    assert "--rebuild" not in found.stdout + found.stderr
    filler.unlink()
    again = run("index", "--json", str(project))
    assert again.returncode == 0, again.stderr
    found = run("search", "more_39_19", str(project), "-k", "3")
    assert found.returncode == 0 and "pkg/more_39.py" in found.stdout


@needs_mount
def test_a_read_only_index_answers_and_a_write_says_so_in_one_line(small_disk: Path) -> None:
    project = small_disk / "project"
    shutil.copytree(FIXTURES / "project", project)
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct", "ASSAY_EMBEDDER": "static", "ASSAY_HOME": str(small_disk.parent / "home")}
    run = lambda *args: subprocess.run([ASSAY, *args], capture_output=True, text=True, env=env, timeout=300)  # noqa: E731
    remount = lambda how: subprocess.run(["mount", "-o", f"remount,{how}", str(small_disk)], check=True)  # noqa: E731
    said = f"error: cannot write the index at {project / '.assay'} (read-only file system): "
    remount("ro")
    try:
        never_indexed = run("index", str(project))
    finally:
        remount("rw")
    assert never_indexed.returncode == 2 and never_indexed.stderr.startswith(said), never_indexed.stderr
    assert len(never_indexed.stderr.strip().splitlines()) == 1
    assert run("index", str(project)).returncode == 0
    assert run("ask", "how does retry_call back off?", str(project)).returncode == 0
    audits_before = sorted((project / ".assay").rglob("*.parquet"))
    # an index built, then mounted read-only (a container's image, a shared checkout): SQLite has no WAL files to
    # share and Chroma's engine writes as it opens, yet every reader answers from it
    remount("ro")
    try:
        done = {command: run(*args, str(project)) for command, args in
                {"index": ("index",), "status": ("status",), "search": ("search", "retry_call back off"),
                 "ask": ("ask", "how does retry_call back off?"), "brief": ("brief",),
                 "callers": ("callers", "retry_call"), "audit": ("audit",)}.items()}
    finally:
        remount("rw")
    for command in ("index", "audit"):  # these write
        result = done[command]
        assert result.returncode == 2 and result.stderr.startswith(said), (command, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and "make that folder writable" in result.stderr
    for command in ("status", "search", "ask", "brief", "callers"):
        assert done[command].returncode == 0, (command, done[command].stderr)
    assert "pkg/retry.py" in done["search"].stdout and "distance=" in done["search"].stdout  # the dense half too
    assert "pkg/retry.py" in done["ask"].stdout
    assert "is read-only: this answer's judgments and model usage are not recorded" in done["ask"].stdout
    assert sorted((project / ".assay").rglob("*.parquet")) == audits_before  # nothing was written meanwhile
    assert "pkg/retry.py" in run("search", "retry_call", str(project)).stdout  # writable again: nothing was lost

"""The edit loop while Assay keeps the index fresh: the watcher reacts only to what the index takes (never to an
editor's swap file or its own log), reads the root ignore files again when they change, an older Assay leaves a newer
one's index alone, and a same-size edit that kept its mtime (`cp -p`, `touch -r`) reads as changed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import assay.stages.index.incremental as inc
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.flows.mcp_server import _changed_since_indexing
from assay.flows.watch import watch_workspace
from assay.stages.core import artifacts
from assay.stages.core.config import Settings
from assay.stages.core.progress import read_status
from assay.stages.index.incremental import NewerIndex
from assay.stages.index.store import Catalog, load_manifest
from assay.stages.index.watch import batches, change_filter
from assay.stages.query.freshness import check
from assay.stages.query.git_questions import workspace_changed

SETTINGS = Settings(embedder="static", watch_debounce_ms=200)
ENV = {**os.environ, "ASSAY_EMBEDDER": "static", "ASSAY_ORCHESTRATION": "direct"}


def _indexed(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.py").write_text("def alpha_one():\n    return 1\n")
    run_index(str(root), SETTINGS)
    return root


# --- 1: only what the index takes starts a run -----------------------------------------------------------------------

def test_editor_temp_files_and_logs_are_no_change_but_code_and_indexed_files_are(tmp_path: Path) -> None:
    from watchfiles import Change

    root = _indexed(tmp_path / "ws")
    (root / "tool").write_text("#!/usr/bin/env python3\ndef tool_main():\n    return 0\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "b.py").write_text("def beta():\n    return 2\n")
    run_index(str(root), SETTINGS)
    for name in (".a.py.swp", "#a.py#", "a.py~", "a.py___jb_tmp___", "a.py___jb_old___", "4913", "watch.log"):
        (root / name).write_text("x")
    os.symlink("user@host.1234:1", root / ".#a.py")  # Emacs' lock: a dangling link
    keep = change_filter(root)
    base = str(root.resolve())
    for name in (".a.py.swp", "#a.py#", "a.py~", "a.py___jb_tmp___", "a.py___jb_old___", "4913", "watch.log", ".#a.py"):
        assert not keep(Change.added, f"{base}/{name}") and not keep(Change.modified, f"{base}/{name}"), name
    assert not keep(Change.deleted, f"{base}/.a.py.swp") and not keep(Change.deleted, f"{base}/gone.log")
    assert keep(Change.modified, f"{base}/a.py") and keep(Change.added, f"{base}/new.py")
    assert keep(Change.modified, f"{base}/tool")  # extensionless, read by its `#!` line
    os.remove(root / "tool")
    assert keep(Change.deleted, f"{base}/tool")  # indexed: its deletion counts whatever its name
    assert keep(Change.deleted, f"{base}/pkg")  # a folder holding indexed files
    assert keep(Change.modified, f"{base}/.gitignore") and keep(Change.added, f"{base}/pkg/.assayignore")


def test_swap_files_and_logs_written_during_a_watch_make_no_batch(tmp_path: Path) -> None:
    root = _indexed(tmp_path / "ws")
    stop = threading.Event()
    seen: list[list[str]] = []

    def listen() -> None:
        for batch in batches(root, 200, stop):
            seen.append(batch)

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    try:
        time.sleep(0.6)
        for n in range(3):  # vim rewriting its swap file while one types; a log written by a tool
            (root / ".a.py.swp").write_bytes(b"swap %d" % n)
            (root / "#a.py#").write_text(f"autosave {n}")
            (root / "build.log").write_text(f"line {n}\n")
            time.sleep(0.3)
        time.sleep(1.0)
        assert seen == []
        (root / "a.py").write_text("def alpha_two():\n    return 2\n")
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.1)
        assert seen == [["a.py"]]
    finally:
        stop.set()
        thread.join(timeout=10)


def test_the_watch_does_not_feed_on_its_own_output_inside_the_workspace(tmp_path: Path) -> None:
    root = _indexed(tmp_path / "ws")
    assay = Path(sys.executable).parent / "assay"
    with open(root / "watch.txt", "w") as out:  # a `.txt` the index takes: only its identity keeps it out
        proc = subprocess.Popen([str(assay), "watch", str(root), "--debounce", "200"], stdout=out, stderr=out, env=ENV)
        try:
            deadline = time.monotonic() + 90
            while "what changed before" not in (root / "watch.txt").read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(6)  # 30 debounce windows
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    lines = (root / "watch.txt").read_text().splitlines()
    assert len(lines) == 2 and "what changed before" in lines[1], lines  # was a line (a run) every ~0.5 s for ever


# --- 2: the root ignore files as they are now ------------------------------------------------------------------------

def test_un_ignoring_a_folder_during_a_watch_makes_later_edits_inside_it_count(tmp_path: Path) -> None:
    from watchfiles import Change

    root = _indexed(tmp_path / "ws")
    (root / "gen").mkdir()
    (root / "gen" / "mod.py").write_text("def alpha_gen():\n    return 1\n")
    (root / ".gitignore").write_text("gen/\n")
    keep = change_filter(root)
    inside = f"{root.resolve()}/gen/mod.py"
    assert not keep(Change.modified, inside)
    (root / ".gitignore").write_text("")
    assert keep(Change.modified, inside)
    (root / ".assayignore").write_text("gen/\n")
    assert not keep(Change.modified, inside)


def test_a_watch_indexes_edits_in_a_folder_un_ignored_while_it_ran(tmp_path: Path) -> None:
    root = _indexed(tmp_path / "ws")
    (root / "gen").mkdir()
    (root / "gen" / "mod.py").write_text("def alpha_gen():\n    return 1\n")
    (root / ".gitignore").write_text("gen/\n")
    run_index(str(root), SETTINGS)
    runs: list = []
    stop = threading.Event()
    thread = threading.Thread(target=watch_workspace, args=(root, SETTINGS, stop, lambda c, r, e: runs.append((c, r, e))))
    thread.start()

    def wait_for(done) -> None:
        deadline = time.monotonic() + 30
        while not done() and time.monotonic() < deadline:
            time.sleep(0.1)

    try:
        time.sleep(0.8)
        (root / ".gitignore").write_text("")
        wait_for(lambda: "gen/mod.py" in (load_manifest(root).files))
        time.sleep(0.5)
        (root / "gen" / "mod.py").write_text("def beta_gen():\n    return 2\n")
        wait_for(lambda: Catalog(root).by_name("beta_gen"))
    finally:
        stop.set()
        thread.join(timeout=30)
    assert [e.qualname for e in Catalog(root).by_name("beta_gen")] == ["beta_gen"], runs


# --- 3: an older Assay leaves a newer one's index alone --------------------------------------------------------------

def _older(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here this process plays an Assay one parser version older than the one that wrote the index."""
    monkeypatch.setattr(inc, "PARSER_VERSION", inc.PARSER_VERSION - 1)


def test_an_older_assay_refuses_to_re_index_a_newer_index_and_still_answers(tmp_path: Path, monkeypatch) -> None:
    root = _indexed(tmp_path / "ws")
    _older(monkeypatch)
    root.joinpath("a.py").write_text("def alpha_one():\n    return 1\n# e1\n")
    before, status = load_manifest(root), read_status(root)
    with pytest.raises(NewerIndex, match="newer Assay wrote this index .*restart this process if it is an MCP server"):
        run_index(str(root), SETTINGS)
    after = load_manifest(root)
    assert read_status(root) == status  # the newer Assay's last run, not "failed" with this process's refusal
    assert after.parser == before.parser == inc.PARSER_VERSION + 1 and after.files == before.files  # not downgraded
    assert [e.qualname for e in Catalog(root).by_name("alpha_one")] == ["alpha_one"]  # queries still answer
    result = CliRunner().invoke(app, ["index", str(root)], env={"ASSAY_EMBEDDER": "static"})
    assert result.exit_code == 2 and result.output.strip().splitlines()[0].startswith("error: a newer Assay wrote")
    from assay.flows import mcp_server

    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(root.parent))
    refused = mcp_server.index_workspace(str(root))  # an IDE's server started before the upgrade
    assert refused.is_error and "a newer Assay wrote" in refused.content[0].text
    assert read_status(root) == status  # not "failed" with the older server's refusal (verify5)


def test_an_older_assay_may_still_rebuild_on_request_and_a_newer_one_upgrades(tmp_path: Path, monkeypatch) -> None:
    root = _indexed(tmp_path / "ws")
    monkeypatch.setattr(inc, "PARSER_VERSION", inc.PARSER_VERSION - 1)
    report = run_index(str(root), SETTINGS, rebuild=True)
    assert report.rebuild_reason == "rebuild requested" and load_manifest(root).parser == inc.PARSER_VERSION
    monkeypatch.setattr(inc, "PARSER_VERSION", inc.PARSER_VERSION + 1)
    report = run_index(str(root), SETTINGS)
    assert "the parser changed" in report.rebuild_reason and load_manifest(root).parser == inc.PARSER_VERSION


def test_an_older_watch_ends_with_one_line_and_leaves_the_status_alone(tmp_path: Path, monkeypatch) -> None:
    root = _indexed(tmp_path / "ws")
    _older(monkeypatch)
    status = read_status(root)
    runs: list = []
    errors: list[BaseException] = []

    def watch() -> None:
        try:
            watch_workspace(root, SETTINGS, threading.Event(), lambda c, r, e: runs.append((c, r, e)), catch_up=True)
        except BaseException as exc:  # noqa: BLE001 - what the test checks
            errors.append(exc)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive() and len(errors) == 1 and isinstance(errors[0], NewerIndex), errors
    assert runs == [] and read_status(root) == status  # no failed run recorded over the newer process's status


# --- 4: a same-size edit that kept its mtime ------------------------------------------------------------------------

def _same_size_edit_keeping_mtime(path: Path, old: str, new: str) -> None:
    st = path.stat()
    text = path.read_text()
    assert len(old) == len(new)
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # what `cp -p`, `rsync -t`, `touch -r` do


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_a_same_size_edit_that_kept_its_mtime_reads_as_changed_everywhere(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    _git(root, "init", "-q")
    (root / ".gitignore").write_text(".assay/\n")
    (root / "m.py").write_text("def old_name_aa():\n    return 1\n")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "i")
    run_index(str(root), SETTINGS)
    time.sleep(0.05)  # a change time the clock can tell from the indexed one
    _same_size_edit_keeping_mtime(root / "m.py", "old_name_aa", "new_name_bb")
    manifest = load_manifest(root)
    fresh, changed = check(root, manifest)
    assert fresh.changed_count == 1 and changed == {"m.py"}
    assert _changed_since_indexing(root, manifest, "m.py")
    res = workspace_changed(root, "HEAD")
    assert [(t.entity, t.stale) for t in res.entities] == [("new_name_bb", True)]


def test_a_chmod_or_copy_is_confirmed_unchanged_by_the_hash_once_and_the_next_run_records_it(tmp_path: Path) -> None:
    root = _indexed(tmp_path / "ws")
    time.sleep(0.05)
    os.chmod(root / "a.py", 0o600)  # the change time moves, the bytes do not
    manifest = load_manifest(root)
    assert manifest.files["a.py"].stat_differs((root / "a.py").stat())  # the cheap fingerprint moved
    artifacts._holds.cache_clear()
    for _ in range(3):  # every query
        fresh, changed = check(root, manifest)
        assert fresh.changed_count == 0 and changed == set()
        assert not _changed_since_indexing(root, manifest, "a.py")
    assert artifacts._holds.cache_info().misses == 1  # hashed once in this process, not on every query
    run_index(str(root), SETTINGS)
    manifest = load_manifest(root)
    assert manifest.files["a.py"].ctime_ns == (root / "a.py").stat().st_ctime_ns  # recorded: no hash any more
    assert not manifest.files["a.py"].stat_differs((root / "a.py").stat())

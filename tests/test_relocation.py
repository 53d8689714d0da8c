"""A workspace moved, renamed, copied with a linked `.assay`, too deep for SQLite, or not writable: every door says
what happened in one line, and nothing is written at a path the workspace left."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import index as index_flow
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.flows.watch import ensure_watching, stop_watching, watch_workspace
from assay.stages.core import registry
from assay.stages.core.config import Settings
from assay.stages.core.workspace import WorkspaceError, WorkspaceGone, make_state_dir, path_too_long
from assay.stages.index.discover import discover
from assay.stages.index.store import load_manifest, unopenable
from assay.stages.index.watch import WatchedFolderGone, batches

SETTINGS = Settings(embedder="static", watch_debounce_ms=200)
STATIC = {"ASSAY_EMBEDDER": "static"}
runner = CliRunner()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def small(folder: Path, name: str = "alpha_one") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.py").write_text(f"def {name}():\n    return 1\n")
    return folder


def deep_folder(base: Path, size: int) -> Path:
    """A folder whose real path is exactly `size` bytes (components under 255 bytes)."""
    path = str(base.resolve())
    while len(path) < size - 51:
        path += "/" + "b" * 50
    path += "/" + "c" * (size - len(path) - 1)
    os.makedirs(path)
    return small(Path(path))


# 1. a workspace moved while `assay index` runs


def test_state_folder_is_never_made_for_a_workspace_that_is_gone(tmp_path: Path) -> None:
    root = small(tmp_path / "ws")
    shutil.rmtree(root)
    with pytest.raises(WorkspaceGone, match="moved or deleted during the run: index it at its new path"):
        make_state_dir(root)
    assert not root.exists()


def test_an_index_run_whose_workspace_is_moved_fails_and_leaves_no_ghost(tmp_path: Path, monkeypatch) -> None:
    root, moved = small(tmp_path / "mi"), tmp_path / "mi2"
    for i in range(5):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    real_mark = index_flow._mark_stored

    def move_then_mark(*args):  # the move lands in the embed phase, as a `mv` during a long run does
        if root.exists():
            root.rename(moved)
        return real_mark(*args)

    monkeypatch.setattr(index_flow, "_mark_stored", move_then_mark)
    res = runner.invoke(app, ["index", str(root)], env=STATIC)
    assert res.exit_code != 0
    assert res.output.strip().splitlines() == [
        f"error: the workspace {root} was moved or deleted during the run: index it at its new path"]
    assert not root.exists()  # no ghost `.assay/` at the old path
    assert str(root) not in registry.known()
    assert (moved / ".assay" / "manifest.json").is_file()


def test_an_index_run_whose_folder_is_replaced_fails(tmp_path: Path, monkeypatch) -> None:
    root = small(tmp_path / "P")
    real_mark = index_flow._mark_stored

    def replace_then_mark(*args):  # `mv P P.bak && git clone ... P` during the run
        if not (tmp_path / "P.bak").exists():
            root.rename(tmp_path / "P.bak")
            small(root, "beta_new_clone")
        return real_mark(*args)

    monkeypatch.setattr(index_flow, "_mark_stored", replace_then_mark)
    with pytest.raises(WorkspaceGone):
        run_index(str(root), SETTINGS)


# 2. `assay watch` / the MCP watcher after its folder is renamed


def _watch_in_thread(root: Path, runs: list, errors: list) -> threading.Thread:
    def target() -> None:
        try:
            watch_workspace(root, SETTINGS, on_run=lambda c, r, e: runs.append((c, r, e)))
        except Exception as exc:  # noqa: BLE001 - what the CLI would print
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    time.sleep(1.0)  # the watcher is listening
    return thread


def test_a_renamed_watch_stops_and_never_indexes_the_new_folder_at_its_path(tmp_path: Path) -> None:
    root = small(tmp_path / "P")
    run_index(str(root), SETTINGS)
    runs: list = []
    errors: list = []
    thread = _watch_in_thread(root, runs, errors)
    root.rename(tmp_path / "P.bak")
    small(root, "beta_new_clone")  # a fresh clone at the old path
    (tmp_path / "P.bak" / "a.py").write_text("def gamma_edit_in_bak():\n    return 3\n")
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], WatchedFolderGone)
    assert str(errors[0]) == f"{root} was moved or deleted; run `assay watch NEWPATH` (its new path)"
    assert runs == []  # nothing indexed for the moved folder's events
    assert not (root / ".assay").exists()


def test_batches_stop_when_the_folder_is_deleted(tmp_path: Path) -> None:
    root = small(tmp_path / "Q")
    threading.Timer(0.5, shutil.rmtree, args=(root,)).start()
    with pytest.raises(WatchedFolderGone):
        for _ in batches(root, 200):
            pass


def test_the_cli_watch_of_a_renamed_folder_fails_with_one_line(tmp_path: Path) -> None:
    root = small(tmp_path / "P")
    run_index(str(root), SETTINGS)
    threading.Timer(2.0, root.rename, args=(tmp_path / "P2",)).start()
    res = runner.invoke(app, ["watch", str(root), "--debounce", "200"], env=STATIC)
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1] == f"error: {root} was moved or deleted; run `assay watch NEWPATH` (its new path)"


def test_the_background_watcher_of_a_renamed_folder_just_ends(tmp_path: Path) -> None:
    root = small(tmp_path / "C")
    run_index(str(root), SETTINGS)
    settings = SETTINGS.model_copy(update={"watch": True})
    try:
        assert ensure_watching(root, settings)
        time.sleep(0.8)
        root.rename(tmp_path / "C2")
        (tmp_path / "C2" / "a.py").write_text("def edited_after_move():\n    return 2\n")
        from assay.flows import watch as w

        thread = w._watchers[str(root)][0]
        thread.join(timeout=10)
        assert not thread.is_alive()
        assert not root.exists()
    finally:
        stop_watching(root)


# 3. a workspace path too long for SQLite


def test_a_path_too_long_for_sqlite_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    fits, deep = deep_folder(tmp_path / "a", 475), deep_folder(tmp_path / "b", 476)
    assert path_too_long(fits) is None and path_too_long(deep) is not None
    for args in (["index", str(deep)], ["index", "--rebuild", str(deep)]):
        res = runner.invoke(app, args, env=STATIC)
        assert res.exit_code == 2
        line = res.output.strip()
        assert len(line.splitlines()) == 1 and "too long" in line and "at most 475 bytes" in line
        assert "rebuild" not in line and "damaged" not in line
        assert not (deep / ".assay").exists()
    assert "cannot be indexed in place" in runner.invoke(app, ["status", str(deep)]).output


def test_a_workspace_moved_too_deep_is_not_called_damaged(tmp_path: Path) -> None:
    deep = deep_folder(tmp_path, 480)
    error = unopenable(deep / ".assay" / "chroma", OSError("unable to open database file"))
    assert isinstance(error, WorkspaceError) and "too long" in str(error) and "rebuild" not in str(error)


# 4. a `.assay` that is a symlink


def test_a_linked_state_folder_is_not_a_skipped_file(tmp_path: Path) -> None:
    root = small(tmp_path / "E")
    (tmp_path / "state").mkdir()
    (root / ".assay").symlink_to(tmp_path / "state")
    found = discover(root)
    assert [f.path for f in found.files] == ["a.py"]
    assert found.skipped == []


def test_a_copy_sharing_a_linked_state_folder_is_refused(tmp_path: Path) -> None:
    e, f = small(tmp_path / "E", "only_in_e"), tmp_path / "F"
    (tmp_path / "state").mkdir()
    (e / ".assay").symlink_to(tmp_path / "state")
    run_index(str(e), SETTINGS)
    shutil.copytree(e, f, symlinks=True)
    (f / "a.py").write_text("def only_in_f():\n    return 2\n")
    refusal = (f"error: {f / '.assay'} is a link to {tmp_path / 'state'}, the state folder of the workspace {e} too: "
               f"indexing here would overwrite its index; remove the link (`rm {f / '.assay'}`) and index again")
    for args in (["index", str(f)], ["status", str(f)], ["search", "only_in_f", str(f)]):  # every door, alike
        res = runner.invoke(app, args, env=STATIC)
        assert res.exit_code == 2 and res.output.strip().splitlines() == [refusal], (args, res.output)
    res = runner.invoke(app, ["search", "only_in_e", str(e), "-k", "1"], env=STATIC)
    assert res.exit_code == 0 and "only_in_e" in res.output  # the owner still answers
    assert load_manifest(e).workspace == str(e)
    assert json.loads((tmp_path / "state" / "status.json").read_text())["state"] == "done"  # E's, untouched
    shutil.rmtree(e)  # the owner gone: the copy may take the folder over
    assert runner.invoke(app, ["index", str(f)], env=STATIC).exit_code == 0


# 5. forget_workspace of a moved workspace


def test_forget_workspace_removes_a_moved_workspace_from_the_list(tmp_path: Path, monkeypatch) -> None:
    from assay.flows import mcp_server as m

    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    root = small(tmp_path / "ws")
    run_index(str(root), SETTINGS)
    assert str(root) in registry.known()
    root.rename(tmp_path / "moved-ws")
    res = m.forget_workspace(str(root))
    assert not res.is_error
    assert res.content[0].text == f"{root} is not on disk (moved or deleted): removed it from the workspace list"
    assert str(root) not in registry.known()
    again = m.forget_workspace(str(root))  # no longer listed: the plain error
    assert again.is_error and "workspace does not exist" in again.content[0].text


def test_registering_a_workspace_drops_entries_whose_folder_is_gone(tmp_path: Path) -> None:
    gone, kept = small(tmp_path / "gone"), small(tmp_path / "kept")
    registry.register(gone)
    shutil.rmtree(gone)
    registry.register(kept)
    assert str(gone) not in registry.known() and str(kept) in registry.known()


# 6. a git worktree's `.git` file


def test_a_worktree_git_file_is_pruned_like_the_git_folder(tmp_path: Path, monkeypatch) -> None:
    main = small(tmp_path / "main")
    git(main, "init", "-q", "-b", "main")
    git(main, "-c", "user.email=a@b", "-c", "user.name=t", "add", "-A")
    git(main, "-c", "user.email=a@b", "-c", "user.name=t", "commit", "-qm", "init")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt1"), "-b", "feat1")
    assert (tmp_path / "wt1" / ".git").is_file()
    opened: list[str] = []
    from assay.stages.index import discover as d

    real = d._script_language
    monkeypatch.setattr(d, "_script_language", lambda path: opened.append(path) or real(path))
    found = discover(tmp_path / "wt1")
    assert [f.path for f in found.files] == ["a.py"] and found.skipped == []
    assert not any(p.endswith(".git") for p in opened)


# 7. status / search on an unwritable, never-indexed folder


def test_status_and_search_say_an_unwritable_folder_cannot_be_indexed_in_place(tmp_path: Path, monkeypatch) -> None:
    ro = small(tmp_path / "ro3")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if (mode & os.W_OK and Path(p) == ro)
                        else real_access(p, mode, **kw))  # tests run as root, whom chmod does not stop
    status = runner.invoke(app, ["status", str(ro)])
    assert status.exit_code == 0
    assert status.output.strip() == (f"{ro}: not indexed, and cannot be indexed in place: {ro} is not writable "
                                     "(permission denied); index a writable copy of the workspace")
    search = runner.invoke(app, ["search", "alpha", str(ro)])
    assert search.exit_code == 2
    assert "cannot be indexed in place" in search.output and "assay index" not in search.output
    assert not (ro / ".assay").exists()

"""Everyday git workflows against a real repository: a commit that changes no file, a staged `git mv`, a `chmod +x`,
a deleted file after a re-index, and `git clean -fdx` removing `.assay/` under a running watch."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.flows.watch import INDEX_DELETED, watch_workspace
from assay.stages.core.config import Settings
from assay.stages.index.store import Catalog, load_manifest
from assay.stages.index.watch import change_filter
from assay.stages.query.git_diff import diff_raw, mode_changes, renames
from assay.stages.query.git_questions import entity_history, workspace_changed
from assay.stages.query.retrieve import search
from tests.test_git_changes import git, init_repo

SETTINGS = Settings(embedder="static", watch_debounce_ms=300)
HOOKS = ("HOOKS = ['response']\n\n\ndef default_hooks():\n    return {event: [] for event in HOOKS}\n\n\n"
         "def dispatch_hook(key, hooks, data):\n    hooks = hooks or {}\n    for hook in hooks.get(key, []):\n"
         "        data = hook(data) or data\n    return data\n")
UTIL = "def slugify(text):\n    return text.lower().replace(' ', '-')\n"
runner = CliRunner()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """`first` adds hooks.py and util.py, `second` edits dispatch_hook; indexed at `second`."""
    root = init_repo(tmp_path / "repo")
    (root / ".gitignore").write_text(".assay/\n")
    (root / "hooks.py").write_text(HOOKS)
    (root / "util.py").write_text(UTIL)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    (root / "hooks.py").write_text(HOOKS.replace("or data", "or data  # keep the old data"))
    git(root, "commit", "-qam", "second")
    run_index(str(root), SETTINGS)
    return root


# -- 1: HEAD moved, no file changed: no call to re-index ----------------------------------------------------------------

def test_a_commit_that_changes_no_indexed_file_asks_for_no_reindex(repo: Path) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "empty")
    git(repo, "checkout", "-q", "-b", "newbranch")
    line = search(repo, "dispatch_hook", SETTINGS, k=1).freshness.line()
    assert "HEAD is now" in line and "(newbranch)" in line and "0 file(s) changed since" in line
    assert "assay index" not in line and "assay watch" not in line
    (repo / "util.py").write_text(UTIL + "\n\ndef dashes(text):\n    return text\n")
    assert "1 file(s) changed since — run `assay index` or `assay watch`" in search(repo, "slugify", SETTINGS, k=1).freshness.line()


# -- 2: history through a staged (uncommitted) rename -------------------------------------------------------------------

def test_history_follows_a_staged_rename_to_the_old_path_in_head(repo: Path) -> None:
    git(repo, "mv", "hooks.py", "hooks_renamed.py")
    run_index(str(repo), SETTINGS)
    hist = entity_history(repo, "dispatch_hook")
    assert hist.file == "hooks_renamed.py"
    assert [c.subject for c in hist.commits] == ["second", "first"]
    assert "uncommitted rename from hooks.py" in hist.note and "not committed yet" not in hist.note
    out = runner.invoke(app, ["history", "dispatch_hook", str(repo)])
    assert out.exit_code == 0 and "2 commit(s)" in out.output and "not committed yet" not in out.output


def test_history_follows_a_staged_rename_with_edits_above_the_definition(repo: Path) -> None:
    git(repo, "mv", "hooks.py", "hooks_renamed.py")
    (repo / "hooks_renamed.py").write_text('"""Hooks."""\n\n' + (repo / "hooks_renamed.py").read_text())
    git(repo, "add", "hooks_renamed.py")
    run_index(str(repo), SETTINGS)
    hist = entity_history(repo, "dispatch_hook")
    assert hist.start_line == 10 and [c.subject for c in hist.commits] == ["second", "first"]
    assert "rename from hooks.py" in hist.note and "traced HEAD's lines 8-12" in hist.note


# -- 3: pure renames and mode changes are changes -----------------------------------------------------------------------

def test_changed_lists_a_pure_rename_and_a_mode_change(repo: Path) -> None:
    git(repo, "mv", "hooks.py", "hooks_renamed.py")
    (repo / "util.py").chmod(0o755)
    run_index(str(repo), SETTINGS)
    res = workspace_changed(repo, "HEAD")
    assert [(r.old, r.new) for r in res.renamed_files] == [("hooks.py", "hooks_renamed.py")]
    assert [(m.file, m.old_mode, m.new_mode) for m in res.mode_changed] == [("util.py", "100644", "100755")]
    assert res.files == ["hooks_renamed.py", "util.py"] and res.entities == [] and res.deleted_files == []
    out = runner.invoke(app, ["changed", str(repo)])
    assert out.exit_code == 0 and "nothing changed" not in out.output
    assert "renamed: hooks.py -> hooks_renamed.py" in out.output and "mode changed: util.py (100644 -> 100755)" in out.output
    data = json.loads(runner.invoke(app, ["changed", "--json", str(repo)]).output)
    assert data["renamed_files"] == [{"old": "hooks.py", "new": "hooks_renamed.py"}]


def test_changed_since_a_branch_names_a_committed_rename_even_when_renames_are_off(repo: Path) -> None:
    git(repo, "config", "diff.renames", "false")  # a user setting must not turn the rename into a delete and an add
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "mv", "hooks.py", "hookz.py")
    git(repo, "commit", "-qm", "rename")
    run_index(str(repo), SETTINGS)
    res = workspace_changed(repo, "main")
    assert [(r.old, r.new) for r in res.renamed_files] == [("hooks.py", "hookz.py")]
    assert res.deleted_files == [] and "hookz.py" in res.files


def test_raw_lines_give_renames_and_mode_changes_but_not_submodules() -> None:
    raw = diff_raw(":100644 100644 " + "a" * 40 + " " + "a" * 40 + " R100\told.py\tnew.py\n"
                   ":100644 100755 " + "b" * 40 + " " + "b" * 40 + " M\tbin/run.py\n"
                   ":000000 100644 " + "0" * 40 + " " + "c" * 40 + " A\tadded.py\n"
                   ":160000 160000 " + "d" * 40 + " " + "e" * 40 + " M\tlibs/sub\n"
                   "diff --git a/x b/x\n:100644 100755 " + "f" * 40 + " " + "f" * 40 + " M\tnot-raw.py\n")
    assert renames(raw) == [("old.py", "new.py")]
    assert mode_changes(raw) == [("bin/run.py", "100644", "100755")]
    assert [r.path for r in raw] == ["new.py", "bin/run.py", "added.py"]


# -- 4: a deleted file's definitions stay "removed" after a re-index ----------------------------------------------------

def test_a_deleted_files_definitions_are_removed_before_and_after_a_reindex(repo: Path) -> None:
    git(repo, "rm", "-q", "hooks.py")
    before = [(t.entity, t.change) for t in workspace_changed(repo, "HEAD").entities]
    run_index(str(repo), SETTINGS)
    assert Catalog(repo).by_file("hooks.py") == []  # the index no longer holds them
    after = workspace_changed(repo, "HEAD")
    assert [(t.entity, t.change) for t in after.entities] == before == [
        ("HOOKS", "removed"), ("default_hooks", "removed"), ("dispatch_hook", "removed")]
    assert [(t.start_line, t.end_line) for t in after.entities][-1] == (8, 12)
    out = runner.invoke(app, ["changed", str(repo)])
    assert "dispatch_hook (function)  hooks.py:8-12  removed (file deleted)" in out.output


def test_a_file_deleted_on_a_branch_is_read_from_the_since_commit(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "hooks.py").write_text("def only_on_feature():\n    return 1\n")  # not what `main` held
    git(repo, "commit", "-qam", "rewrite")
    git(repo, "rm", "-q", "hooks.py")
    git(repo, "commit", "-qm", "delete")
    run_index(str(repo), SETTINGS)
    assert [t.entity for t in workspace_changed(repo, "main").entities] == ["HOOKS", "default_hooks", "dispatch_hook"]
    assert [t.entity for t in workspace_changed(repo, "HEAD~1").entities] == ["only_on_feature"]


def test_a_deleted_file_the_root_ignore_rules_skip_lists_no_definitions(repo: Path) -> None:
    (repo / "gen").mkdir()
    (repo / "gen" / "made.py").write_text("def generated():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "generated")
    (repo / ".assayignore").write_text("gen/\n")
    git(repo, "rm", "-q", "gen/made.py")
    run_index(str(repo), SETTINGS)
    res = workspace_changed(repo, "HEAD")
    assert res.deleted_files == ["gen/made.py"] and res.entities == []


# -- 6: the watch notices `.assay/` itself being deleted ----------------------------------------------------------------

def test_the_filter_keeps_only_the_deletion_of_the_state_folder_itself(tmp_path: Path) -> None:
    from watchfiles import Change

    keep = change_filter(tmp_path)
    base = str(tmp_path.resolve())
    assert keep(Change.deleted, f"{base}/.assay")
    assert not keep(Change.added, f"{base}/.assay") and not keep(Change.modified, f"{base}/.assay")
    assert not keep(Change.deleted, f"{base}/.assay/manifest.json") and not keep(Change.deleted, f"{base}/.assay/chroma")
    assert keep(Change.modified, f"{base}/a.py")


def test_the_watch_rebuilds_an_index_whose_folder_was_deleted(repo: Path) -> None:
    runs: list = []
    stop = threading.Event()
    thread = threading.Thread(target=watch_workspace, args=(repo, SETTINGS, stop, lambda c, r, e: runs.append((c, r, e))))
    thread.start()
    try:
        time.sleep(0.8)  # let the watcher register before the deletion
        shutil.rmtree(repo / ".assay")  # what `git clean -fdx` does
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not runs:
            time.sleep(0.2)
        time.sleep(1.5)  # the rebuild's own writes under .assay/ must start no further run
    finally:
        stop.set()
        thread.join(timeout=30)
    assert len(runs) == 1, runs
    changed, report, error = runs[0]
    assert error is None and changed == [INDEX_DELETED] and report.files_parsed == 2
    assert set(load_manifest(repo).files) == {"hooks.py", "util.py"}


# -- 5: mid-merge, a conflicted file is flagged (its definitions may be cut short at the markers) -----------------------

def test_a_file_with_an_unresolved_merge_conflict_is_flagged_in_changed_and_history(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "util.py").write_text(UTIL.replace("lower()", "casefold()"))
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "util.py").write_text(UTIL.replace("lower()", "upper()"))
    git(repo, "commit", "-qam", "main")
    assert subprocess.run(["git", "-C", str(repo), "merge", "other"], capture_output=True).returncode != 0  # a conflict
    run_index(str(repo), SETTINGS)
    res = workspace_changed(repo, "HEAD")
    assert res.conflicted_files == ["util.py"]
    assert "warning: unresolved merge conflict in util.py" in runner.invoke(app, ["changed", str(repo)]).output
    assert "util.py has an unresolved merge conflict" in entity_history(repo, "slugify").note
    assert "merge conflict" not in entity_history(repo, "dispatch_hook").note

"""`changed` and `history` against real git repositories: revisions that are not options, deleted and untracked
files, monorepo sub-folders, quoted paths and user diff settings, uncommitted edits, stale indexes, ambiguous names."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.query.git_diff import head_span, unquote_path
from assay.stages.query.git_questions import entity_history, workspace_changed

SETTINGS = Settings(embedder="static")
CORE = ('"""Core engine."""\n\n\ndef helper(x):\n    """Double x."""\n    return x * 2\n\n\nclass Engine:\n'
        "    def run(self, x):\n        return helper(x) + self.step(x)\n\n    def step(self, x):\n        return x + 1\n\n\n"
        "class Other:\n    def run(self, y):\n        return helper(y)\n")
UTIL = "from pkg.core import helper\n\n\ndef wrapper():\n    return helper(1)\n"
runner = CliRunner()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def init_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    return root


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    """Two commits: `first` adds everything, `second` changes helper's body; indexed at `second`."""
    root = init_repo(tmp_path / "ws")
    (root / ".gitignore").write_text(".assay/\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "core.py").write_text(CORE)
    (root / "pkg" / "util.py").write_text(UTIL)
    commit_all(root, "first")
    (root / "pkg" / "core.py").write_text(CORE.replace("x * 2", "x * 3"))
    commit_all(root, "second")
    run_index(str(root), SETTINGS)
    return root


def changed(root: Path, *args: str):
    return runner.invoke(app, ["changed", str(root), *args])


# -- 1: a `since` that is not a revision is refused, and nothing is written --------------------------------------------

@pytest.mark.parametrize("since", ["--output={out}", "--all", "HEAD~1..HEAD", "nosuchbranch", ""])
def test_since_that_is_not_a_commit_is_refused_and_writes_nothing(ws: Path, tmp_path: Path, since: str) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("precious\n")
    (ws / "pkg" / "core.py").write_text(CORE + "# edit\n")  # a diff git could write somewhere
    res = changed(ws, f"--since={since.format(out=target)}")
    assert res.exit_code == 2 and "is not a commit, branch or tag" in res.output and len(res.output.splitlines()) == 1
    assert target.read_text() == "precious\n"
    with pytest.raises(ValueError, match="is not a commit"):
        workspace_changed(ws, f"--output={tmp_path / 'injected'}")
    assert not (tmp_path / "injected").exists()


def test_since_accepts_commits_branches_and_tags(ws: Path) -> None:
    git(ws, "tag", "v1", "HEAD~1")
    for since in ("HEAD~1", "v1", git(ws, "rev-parse", "HEAD~1")):
        assert [t.entity for t in workspace_changed(ws, since).entities] == ["helper"]
    assert workspace_changed(ws, "main").note == "nothing changed since main"


# -- 2: history maps the working tree's span to HEAD's lines --------------------------------------------------------

def test_history_with_uncommitted_lines_above_traces_the_right_definition(ws: Path) -> None:
    shifted = CORE.replace('"""Core engine."""\n', '"""Core engine."""\n\nimport os\n\n\ndef newfunc():\n    return 1\n', 1)
    (ws / "pkg" / "core.py").write_text(shifted)
    run_index(str(ws), SETTINGS)
    helper = entity_history(ws, "helper")
    assert [c.subject for c in helper.commits] == ["second", "first"] and "HEAD's lines 4-6" in helper.note
    new = entity_history(ws, "newfunc")
    assert new.commits == [] and "not committed yet" in new.note
    assert [c.subject for c in entity_history(ws, "Engine.run").commits] == ["first"]


def test_head_span_maps_unchanged_lines_and_refuses_pure_additions() -> None:
    hunks = [(3, 0, 4, 4)]  # four lines (4-7) added after HEAD's line 3
    assert head_span(hunks, 8, 10) == (4, 6)
    assert head_span(hunks, 4, 7) is None
    assert head_span([(5, 1, 5, 1)], 5, 5) == (5, 5)  # a one-line definition rewritten in place
    assert head_span([(2, 1, 1, 0)], 3, 4) == (4, 5)  # a line deleted above it


def test_history_in_a_repository_without_commits_says_not_committed(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "empty")
    (root / "a.py").write_text("def f():\n    pass\n")
    run_index(str(root), SETTINGS)
    res = runner.invoke(app, ["history", "f", str(root)])
    assert res.exit_code == 0 and "0 commit(s)" in res.output and "not committed yet" in res.output
    out = changed(root)
    assert out.exit_code == 2 and "no commits yet" in out.output and "fatal" not in out.output


# -- 3: deleted and untracked files ---------------------------------------------------------------------------------

def test_deleted_file_lists_its_definitions_removed(ws: Path) -> None:
    (ws / "pkg" / "util.py").unlink()
    res = workspace_changed(ws, "HEAD")
    assert res.deleted_files == ["pkg/util.py"] and res.note == ""
    assert [(t.entity, t.change) for t in res.entities] == [("wrapper", "removed")]
    assert "wrapper (function)  pkg/util.py:4-5  removed (file deleted)" in changed(ws).output


def test_untracked_indexed_file_lists_its_definitions_added(ws: Path) -> None:
    (ws / "pkg" / "newfile.py").write_text("def brand_new():\n    pass\n")
    (ws / "notes.txt").write_text("not code, never indexed\n")
    run_index(str(ws), SETTINGS)
    res = json.loads(changed(ws, "--json").output)
    assert res["untracked_files"] == ["pkg/newfile.py"] and res["files"] == ["pkg/newfile.py"]
    assert [(t["entity"], t["change"]) for t in res["entities"]] == [("brand_new", "added")]


# -- 4: a workspace that is a sub-folder of the repository ----------------------------------------------------------

def test_workspace_inside_a_larger_repository(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "mono")
    (repo / "svc").mkdir()
    (repo / "other").mkdir()
    (repo / "svc" / "core.py").write_text("def helper(x):\n    return x\n")
    (repo / "other" / "x.py").write_text("def elsewhere():\n    return 1\n")
    commit_all(repo, "init")
    run_index(str(repo / "svc"), SETTINGS)
    (repo / "svc" / "core.py").write_text("def helper(x):\n    return x + 1\n")
    (repo / "other" / "x.py").write_text("def elsewhere():\n    return 2\n")
    res = workspace_changed(repo / "svc", "HEAD")
    assert [(t.entity, t.file, t.lines) for t in res.entities] == [("helper", "core.py", [2])]
    assert res.files == ["core.py"] and res.outside == []


# -- 5: quoted paths and the user's diff settings -------------------------------------------------------------------

@pytest.mark.parametrize("setting", [None, "diff.mnemonicPrefix", "diff.noprefix"])
def test_non_ascii_paths_and_user_diff_settings(tmp_path: Path, setting: str | None) -> None:
    root = init_repo(tmp_path / "uni")
    (root / "dïr x").mkdir()
    (root / "dïr x" / "cöre.py").write_text("def hélper(x):\n    return x\n")
    commit_all(root, "init")
    run_index(str(root), SETTINGS)
    if setting:
        git(root, "config", setting, "true")
    (root / "dïr x" / "cöre.py").write_text("def hélper(x):\n    return x + 1\n")
    res = workspace_changed(root, "HEAD")
    assert [(t.entity, t.file, t.lines) for t in res.entities] == [("hélper", "dïr x/cöre.py", [2])] and res.outside == []


def test_unquote_path_reads_git_c_quoting() -> None:
    assert unquote_path('"b/d\\303\\257r x/q\\"t\\\\.py"') == 'b/dïr x/q"t\\.py'
    assert unquote_path("b/plain name.py") == "b/plain name.py"


# -- 6: files changed since indexing --------------------------------------------------------------------------------

def test_file_changed_since_indexing_is_marked_stale(ws: Path) -> None:
    (ws / "pkg" / "core.py").write_text(CORE.replace('"""Core engine."""\n', '"""Core engine."""\n\n\n\n# moved\n', 1))
    res = workspace_changed(ws, "HEAD")
    assert res.stale_files == ["pkg/core.py"] and res.entities and all(t.stale for t in res.entities)
    text = changed(ws).output
    assert "STALE (file changed since indexing)" in text and "warning: 1 file(s) changed since indexing" in text
    run_index(str(ws), SETTINGS)
    fresh = workspace_changed(ws, "HEAD")
    assert fresh.stale_files == [] and not any(t.stale for t in fresh.entities)


# -- 12: names resolve as the graph commands resolve them -----------------------------------------------------------

def test_history_resolves_file_qualified_and_refuses_ambiguous_names(ws: Path) -> None:
    res = runner.invoke(app, ["history", "pkg/core.py:helper", str(ws)])
    assert res.exit_code == 0 and "history of helper (pkg/core.py:4-6): 2 commit(s)" in res.output
    amb = runner.invoke(app, ["history", "run", str(ws)])
    assert amb.exit_code == 2 and "2 definitions named 'run'" in amb.output
    assert "Engine.run" in amb.output and "Other.run" in amb.output and len(amb.output.splitlines()) == 1
    assert entity_history(ws, "Other.run").entity == "Other.run"


# -- 16: git errors say what to do, in words that fit both doors ----------------------------------------------------

def test_shallow_clone_and_not_a_repository_errors(ws: Path, tmp_path: Path) -> None:
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ws}", str(clone)], check=True)
    run_index(str(clone), SETTINGS)
    res = changed(clone, "--since", "HEAD~1")
    assert res.exit_code == 2 and "fetch --unshallow" in res.output
    plain = tmp_path / "nogit"
    plain.mkdir()
    (plain / "a.py").write_text("def f():\n    pass\n")
    run_index(str(plain), SETTINGS)
    out = changed(plain)
    assert out.exit_code == 2 and "not a git repository" in out.output and "changed_symbols" not in out.output

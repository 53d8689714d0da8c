"""`changed` and `history` across git submodules and nested repositories: a submodule is one gitlink entry in its
parent's diff, so both must follow into its own repository (or say in one line why they cannot), never cite the
submodule folder as `libs/sub:1` or call committed code "not committed yet"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.query.git_diff import Gitlink, diff_gitlinks
from assay.stages.query.git_questions import entity_history, workspace_changed

SETTINGS = Settings(embedder="static")
SUB = "def submodule_func():\n    return 3\n\n\ndef other_func():\n    return 4\n"
runner = CliRunner()


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.email=dev@example.com", "-c", "user.name=Dev", "-c", "protocol.file.allow=always",
           "-C", str(repo), *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def new_repo(root: Path, files: dict[str, str], message: str) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    commit(root, message)
    return root


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


@pytest.fixture()
def sup(tmp_path: Path) -> Path:
    """A superproject: commit `base` (src/main.py), then commit `add sub` adds the submodule libs/sub."""
    source = new_repo(tmp_path / "subsrc", {"sub.py": SUB}, "s")
    root = new_repo(tmp_path / "ws", {".gitignore": ".assay/\n", "src/main.py": "def top():\n    return 1\n"}, "base")
    git(root, "submodule", "add", "-q", str(source), "libs/sub")
    commit(root, "add sub")
    return root


def bump_submodule(root: Path, sub_files: dict[str, str], message: str) -> None:
    """Commit `sub_files` inside the submodule, then record its new commit in the superproject."""
    sub = root / "libs" / "sub"
    for name, text in sub_files.items():
        (sub / name).write_text(text)
    commit(sub, message)
    commit(root, "bump sub")


def test_edit_inside_a_submodule_lists_the_edited_function_and_marks_it_stale(sup: Path) -> None:
    run_index(str(sup), SETTINGS)
    (sup / "libs" / "sub" / "sub.py").write_text(SUB.replace("return 3", "return 30"))
    result = workspace_changed(sup, "HEAD")
    assert [(t.entity, t.file, t.change, t.lines, t.stale) for t in result.entities] == [
        ("submodule_func", "libs/sub/sub.py", "modified", [2], True)]
    assert result.files == ["libs/sub/sub.py"] and result.outside == [] and result.not_followed == []
    assert result.stale_files == ["libs/sub/sub.py"]  # what search marks STALE as well
    out = runner.invoke(app, ["changed", str(sup)])
    assert out.exit_code == 0 and "submodule_func (function)  libs/sub/sub.py:1-2" in out.output
    assert "libs/sub:1" not in out.output
    search = runner.invoke(app, ["search", "submodule_func", str(sup), "-k", "1"])
    assert search.exit_code == 0 and "libs/sub/sub.py" in search.output and "STALE" in search.output


def test_changed_since_an_older_commit_diffs_the_submodule_from_the_commit_the_parent_recorded(sup: Path) -> None:
    bump_submodule(sup, {"sub.py": SUB.replace("return 4", "return 40"), "new.py": "def new_func():\n    return 5\n"},
                   "tweak other")
    (sup / "libs" / "sub" / "untracked.py").write_text("def loose_func():\n    return 6\n")
    run_index(str(sup), SETTINGS)
    older = workspace_changed(sup, "HEAD~1")
    assert {(t.entity, t.file, t.change) for t in older.entities} == {
        ("other_func", "libs/sub/sub.py", "modified"), ("new_func", "libs/sub/new.py", "added"),
        ("loose_func", "libs/sub/untracked.py", "added")}
    assert older.untracked_files == ["libs/sub/untracked.py"] and older.outside == [] and "libs/sub" not in older.files
    # at HEAD the submodule's commit is the recorded one: only its untracked file is new
    now = workspace_changed(sup, "HEAD")
    assert [(t.entity, t.change) for t in now.entities] == [("loose_func", "added")] and now.outside == []


def test_submodule_added_since_lists_all_its_definitions_added(sup: Path) -> None:
    run_index(str(sup), SETTINGS)
    result = workspace_changed(sup, "HEAD~1")
    assert [(t.entity, t.file, t.change) for t in result.entities] == [
        ("submodule_func", "libs/sub/sub.py", "added"), ("other_func", "libs/sub/sub.py", "added")]
    assert "libs/sub" not in result.files and "libs/sub/sub.py" in result.files
    assert not any(o.startswith("libs/sub:") for o in result.outside)  # .gitmodules' and blank new lines only


def test_submodule_not_checked_out_is_named_in_one_line_never_cited_as_a_line(sup: Path) -> None:
    bump_submodule(sup, {"sub.py": SUB.replace("return 4", "return 40")}, "tweak other")
    git(sup, "submodule", "deinit", "-q", "-f", "libs/sub")  # the folder stays, empty: no `.git` inside
    run_index(str(sup), SETTINGS)
    result = workspace_changed(sup, "HEAD~1")
    assert result.entities == [] and result.outside == [] and result.files == []
    assert result.not_followed == ["libs/sub: a submodule that is not checked out (`git submodule update --init`)"]
    out = runner.invoke(app, ["changed", str(sup), "--since", "HEAD~1"])
    assert out.exit_code == 0 and "not listed: libs/sub: a submodule that is not checked out" in out.output
    assert "libs/sub:1" not in out.output and "nothing changed" not in out.output


def test_embedded_repository_is_followed_and_an_untracked_nested_repository_is_named(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "ws", {".gitignore": ".assay/\n", "src/main.py": "def top():\n    return 1\n"}, "base")
    new_repo(root / "vendor" / "inner", {"lib.py": SUB}, "inner")
    commit(root, "embed inner")  # `git add` of a repository records a gitlink without .gitmodules
    # vendor/other: a nested repository the workspace's repository does not track (never added)
    new_repo(root / "vendor" / "other", {"o.py": "def other_repo_func():\n    return 1\n"}, "other")
    run_index(str(root), SETTINGS)
    (root / "vendor" / "inner" / "lib.py").write_text(SUB.replace("return 4", "return 44"))
    result = workspace_changed(root, "HEAD")
    assert [(t.entity, t.file) for t in result.entities] == [("other_func", "vendor/inner/lib.py")]
    assert result.outside == [] and result.stale_files == ["vendor/inner/lib.py"]
    assert result.not_followed == ["vendor/other: a nested git repository that its parent repository does not track"]


def test_history_of_a_submodule_function_reads_the_submodule_log(sup: Path) -> None:
    bump_submodule(sup, {"sub.py": SUB.replace("return 3", "return 33")}, "tweak submodule_func")
    run_index(str(sup), SETTINGS)
    result = entity_history(sup, "submodule_func")
    assert [c.subject for c in result.commits] == ["tweak submodule_func", "s"]
    assert "not committed" not in result.note and "in libs/sub, a submodule or nested repository" in result.note
    out = runner.invoke(app, ["history", "submodule_func", str(sup)])
    assert out.exit_code == 0 and "2 commit(s)" in out.output and "tweak submodule_func" in out.output
    assert [c.subject for c in entity_history(sup, "top").commits] == ["base"]  # the parent's own files: its log


def test_diff_gitlinks_reads_submodule_entries_from_raw_lines() -> None:
    a, b, zero = "a" * 40, "b" * 40, "0" * 40
    diff = "\n".join([
        f":160000 160000 {a} {b} M\tlibs/sub",  # moved to another commit (or dirty)
        f":000000 160000 {zero} {b} A\tnew sub",  # added since
        f":160000 000000 {a} {zero} D\tgone",  # removed
        f":100644 160000 {a} {b} T\twas_file",  # a file replaced by a submodule
        f":100644 100644 {a} {b} M\tsrc/main.py",  # an ordinary file
        f':160000 160000 {a} {b} R100\told\t"d\\303\\251p"',  # renamed, quoted name
        "",
        "diff --git a/libs/sub b/libs/sub",
        f":160000 160000 {a} {b} M\tnot/a/raw/line",  # inside the patches: never read as a raw line
    ])
    assert diff_gitlinks(diff) == [
        Gitlink("libs/sub", a, True, "libs/sub"), Gitlink("new sub", None, True, None), Gitlink("gone", a, False, "gone"),
        Gitlink("was_file", None, True, None), Gitlink("dép", a, True, "old")]

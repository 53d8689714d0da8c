"""An untrusted repository (an archive someone handed over, with its `.git/`) must not run code through `changed` or
`history`: each trap below is a real repository whose config names a program that creates a marker file. Each test
first proves the trap fires under plain git, then asserts that Assay's answer is still right and that no marker was
made, through the CLI and the stage functions the MCP door's `changed_symbols` and `history` call. Also: the text
output of both commands shows the repository's strings (commit subjects, authors, file names) with control pictures,
never raw escapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.query.git_history import render_changed, render_history
from assay.stages.query.git_questions import entity_history, workspace_changed

SETTINGS = Settings(embedder="static")
APP = 'def greet(name):\n    """Say hello."""\n    return "hello " + name\n'
runner = CliRunner()
CONTROL = ("\x1b", "\x07", "\r", "\x9b")


def git(repo: Path, *args: str, check: bool = True) -> str:
    cmd = ["git", "-c", "user.email=dev@example.com", "-c", "user.name=Dev", "-c", "protocol.file.allow=always",
           "-C", str(repo), *args]
    return subprocess.run(cmd, check=check, capture_output=True, text=True).stdout.strip()


def trap(tmp_path: Path, body: str = "") -> tuple[Path, str]:
    """(marker, program): an executable outside the repository that creates `marker`, then runs `body`."""
    marker = tmp_path / "PWNED"
    program = tmp_path / "evil.sh"
    program.write_text(f"#!/bin/sh\ntouch '{marker}'\n{body}\n")
    program.chmod(0o755)
    return marker, str(program)


def committed(root: Path, attributes: str = "") -> Path:
    """A repository with `greet` committed twice (`first`, `second`), indexed before its config turns hostile."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".assay/\n")
    if attributes:
        (root / ".gitattributes").write_text(attributes)
    (root / "app.py").write_text(APP.replace("hello ", "hi "))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    (root / "app.py").write_text(APP)
    git(root, "commit", "-qam", "second")
    run_index(str(root), SETTINGS)
    return root


def edit(root: Path, n: int) -> None:
    """An uncommitted edit inside `greet` (line 3); `n` makes each edit new, so git must read the file again."""
    (root / "app.py").write_text(APP.replace("hello ", f"hello {n} "))


def armed(marker: Path, plain_git: Callable[[], object]) -> None:
    """The trap fires under plain git (so a passing test means Assay defused it); the marker is then cleared."""
    plain_git()
    assert marker.exists(), "the trap did not fire under plain git: the test would prove nothing"
    marker.unlink()


def assert_safe_and_right(root: Path, marker: Path) -> None:
    """`changed` and `history` through the CLI and the MCP door's stage functions: right answers, no marker."""
    res = workspace_changed(root, "HEAD")
    assert [(t.entity, t.file, t.lines) for t in res.entities] == [("greet", "app.py", [3])]
    assert "greet (function)  app.py:1-3  lines 3" in render_changed(res)
    hist = entity_history(root, "greet")
    assert [c.subject for c in hist.commits] == ["second", "first"]
    assert "second" in render_history(hist)
    out = runner.invoke(app, ["changed", str(root)])
    assert out.exit_code == 0, out.output
    assert "greet (function)  app.py:1-3  lines 3" in out.output
    out = runner.invoke(app, ["history", "greet", str(root), "--json"])
    assert out.exit_code == 0, out.output
    assert [c["subject"] for c in json.loads(out.stdout)["commits"]] == ["second", "first"]
    assert not marker.exists(), "a program the repository's config names was run"


def test_core_fsmonitor_is_never_run(tmp_path: Path) -> None:
    root = committed(tmp_path / "ws")
    marker, program = trap(tmp_path, "exit 1")
    git(root, "config", "core.fsmonitor", program)
    edit(root, 1)
    armed(marker, lambda: git(root, "status", "--porcelain"))
    edit(root, 2)
    assert_safe_and_right(root, marker)


def test_clean_filter_named_by_gitattributes_is_never_run_even_when_required(tmp_path: Path) -> None:
    root = committed(tmp_path / "ws", "*.py filter=evil\n")
    marker, program = trap(tmp_path, "cat")
    git(root, "config", "filter.evil.clean", program)
    git(root, "config", "filter.evil.smudge", program)
    git(root, "config", "filter.evil.required", "true")  # a filter that runs nothing must not become "filter failed"
    edit(root, 1)
    armed(marker, lambda: git(root, "diff", "HEAD"))
    edit(root, 2)
    assert_safe_and_right(root, marker)


def test_filter_whose_name_holds_an_equals_sign_is_switched_off_too(tmp_path: Path) -> None:
    """`-c filter.a=b.clean=` would split at the wrong `=`: the override must still name the filter exactly."""
    root = committed(tmp_path / "ws", "*.py filter=a=b.c\n")
    marker, program = trap(tmp_path, "cat")
    git(root, "config", "filter.a=b.c.clean", program)
    edit(root, 1)
    armed(marker, lambda: git(root, "diff", "HEAD"))
    edit(root, 2)
    assert_safe_and_right(root, marker)


def test_process_filter_is_never_run(tmp_path: Path) -> None:
    root = committed(tmp_path / "ws", "*.py filter=long\n")
    marker, program = trap(tmp_path, "exit 1")
    git(root, "config", "filter.long.process", program)
    edit(root, 1)
    armed(marker, lambda: git(root, "diff", "HEAD", check=False))
    edit(root, 2)
    assert_safe_and_right(root, marker)


def test_textconv_driver_is_never_run(tmp_path: Path) -> None:
    root = committed(tmp_path / "ws", "*.py diff=evil\n")
    marker, program = trap(tmp_path, 'cat "$1"')
    git(root, "config", "diff.evil.textconv", program)
    edit(root, 1)
    armed(marker, lambda: git(root, "diff", "HEAD"))
    edit(root, 2)
    assert_safe_and_right(root, marker)


def test_diff_external_and_diff_driver_command_are_never_run(tmp_path: Path) -> None:
    root = committed(tmp_path / "ws", "*.py diff=ext\n")
    marker, program = trap(tmp_path)
    git(root, "config", "diff.external", program)
    git(root, "config", "diff.ext.command", program)
    edit(root, 1)
    armed(marker, lambda: git(root, "diff", "HEAD"))
    edit(root, 2)
    assert_safe_and_right(root, marker)


def test_gpg_program_is_never_run_for_a_signed_commit(tmp_path: Path) -> None:
    root = committed(tmp_path / "ws")
    marker, program = trap(tmp_path)
    (root / "app.py").write_text(APP.replace("hello ", "hey "))
    git(root, "add", "app.py")
    tree, parent = git(root, "write-tree"), git(root, "rev-parse", "HEAD")
    signed = (f"tree {tree}\nparent {parent}\nauthor Dev <dev@example.com> 1700000000 +0000\n"
              "committer Dev <dev@example.com> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQ\n"
              " -----END PGP SIGNATURE-----\n\nsigned\n")
    obj = subprocess.run(["git", "-C", str(root), "hash-object", "-t", "commit", "-w", "--stdin"], input=signed,
                         check=True, capture_output=True, text=True).stdout.strip()
    git(root, "update-ref", "HEAD", obj)
    (root / "app.py").write_text(APP)  # the index's version again: the signed commit is now an uncommitted change
    git(root, "config", "log.showSignature", "true")
    git(root, "config", "gpg.program", program)
    armed(marker, lambda: git(root, "log", "-1", check=False))
    edit(root, 2)
    res = workspace_changed(root, "HEAD")
    assert [(t.entity, t.lines) for t in res.entities] == [("greet", [3])]
    assert [c.subject for c in entity_history(root, "greet").commits] == ["signed", "second", "first"]
    out = runner.invoke(app, ["history", "greet", str(root)])
    assert out.exit_code == 0 and "3 commit(s)" in out.output, out.output
    assert not marker.exists()


def test_post_index_change_hook_is_never_run(tmp_path: Path) -> None:
    """`git diff` rewrites the index after refreshing it, which runs this hook."""
    root = committed(tmp_path / "ws")
    marker, program = trap(tmp_path)
    hook = root / ".git" / "hooks" / "post-index-change"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(Path(program).read_text())
    hook.chmod(0o755)
    edit(root, 1)
    os.utime(root / ".gitignore", (1, 1))  # stat-dirty, bytes unchanged: git refreshes its entry, rewriting the index
    armed(marker, lambda: git(root, "diff", "HEAD"))
    edit(root, 2)
    os.utime(root / ".gitignore", (2, 2))
    assert_safe_and_right(root, marker)


def test_bare_repository_files_in_a_plain_folder_are_not_used_as_a_repository(tmp_path: Path) -> None:
    """No `.git` at all: a folder holding HEAD, objects/, refs/ and a `config` (an unpacked archive) is a bare
    repository to git, whose config then applies. Assay refuses it in one line and runs nothing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text(APP)
    marker, program = trap(tmp_path, "exit 1")
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare")], check=True)
    for name in ("HEAD", "objects", "refs"):
        subprocess.run(["cp", "-r", str(tmp_path / "bare" / name), str(ws)], check=True)
    (ws / "config").write_text(f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
                               f"\tfsmonitor = {program}\n")
    run_index(str(ws), SETTINGS)
    armed(marker, lambda: subprocess.run(["git", "-C", str(ws), "status"], capture_output=True))
    for args in (["changed", str(ws)], ["history", "greet", str(ws)]):
        out = runner.invoke(app, args)
        assert out.exit_code == 2, out.output
        assert "bare repository" in out.output and "not a git checkout" in out.output
    for call in (lambda: workspace_changed(ws, "HEAD"), lambda: entity_history(ws, "greet")):
        with pytest.raises(ValueError, match="not a git checkout"):
            call()
    assert not marker.exists()


def test_a_submodules_own_filter_is_never_run(tmp_path: Path) -> None:
    """git would run `git status` inside a submodule (its own config, its own filters) to see whether it is dirty:
    Assay follows the submodule itself instead, and still finds the edit there."""
    source = tmp_path / "subsrc"
    source.mkdir()
    git(source, "init", "-q", "-b", "main")
    (source / "sub.py").write_text("def sub_func():\n    return 3\n")
    (source / ".gitattributes").write_text("*.py filter=subevil\n")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "s")
    root = committed(tmp_path / "ws")
    git(root, "submodule", "add", "-q", str(source), "libs/sub")
    git(root, "commit", "-qm", "add sub")
    run_index(str(root), SETTINGS)
    marker, program = trap(tmp_path, "cat")
    sub = root / "libs" / "sub"
    git(sub, "config", "filter.subevil.clean", program)
    git(root, "config", "diff.submodule", "diff")  # and `diff` would run `git diff` in it
    os.utime(sub / "sub.py", (1, 1))
    armed(marker, lambda: git(root, "diff", "HEAD"))
    (sub / "sub.py").write_text("def sub_func():\n    return 4\n")  # the same size: only its bytes tell
    os.utime(sub / "sub.py", (2, 2))
    res = workspace_changed(root, "HEAD")
    assert [(t.entity, t.file, t.lines) for t in res.entities] == [("sub_func", "libs/sub/sub.py", [2])]
    out = runner.invoke(app, ["changed", str(root)])
    assert out.exit_code == 0 and "sub_func (function)  libs/sub/sub.py:1-2" in out.output, out.output
    assert not marker.exists()


def test_partial_clone_never_fetches_through_the_repositorys_upload_pack(tmp_path: Path) -> None:
    """A blobless clone fetches missing objects on demand, through `remote.origin.uploadpack` (a program) here:
    Assay never fetches; it says in one line what to do instead."""
    source = tmp_path / "src"
    source.mkdir()
    git(source, "init", "-q", "-b", "main")
    git(source, "config", "uploadpack.allowFilter", "true")
    (source / "app.py").write_text(APP)
    (source / ".gitignore").write_text(".assay/\n")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "first")
    clone = tmp_path / "ws"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{source}", str(clone))
    marker, program = trap(tmp_path, 'exec git upload-pack "$@"')
    git(clone, "config", "remote.origin.uploadpack", program)
    git(clone, "read-tree", "HEAD")  # the index, with no blob fetched
    (clone / "app.py").write_text(APP.replace("hello ", "hello 1 "))
    run_index(str(clone), SETTINGS)
    probe = tmp_path / "probe"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{source}", str(probe))
    git(probe, "config", "remote.origin.uploadpack", program)
    armed(marker, lambda: git(probe, "cat-file", "blob", "HEAD:app.py"))
    out = runner.invoke(app, ["history", "greet", str(clone)])
    assert out.exit_code == 2 and "Assay never fetches" in out.output, out.output
    assert not marker.exists()


# Terminal escapes from the repository (defects: history printed subjects raw, changed printed file names raw).

def test_history_shows_escapes_in_subjects_and_authors_as_symbols_and_keeps_json_exact(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".assay/\n")
    (root / "pay.py").write_text("def pay(amount):\n    return amount\n")
    git(root, "add", "-A")
    subject = "msg \x1b]0;TITLE\x07 \x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[31mred\x1b[0m \rtail\ttab"
    author = "ev\x1b[8mil"
    subprocess.run(["git", "-C", str(root), "-c", f"user.name={author}", "-c", "user.email=e@x", "commit", "-qm",
                    subject], check=True)
    run_index(str(root), SETTINGS)
    out = runner.invoke(app, ["history", "pay", str(root)], color=True)  # color: Click would strip CSI itself
    assert out.exit_code == 0, out.output
    assert not any(ch in out.output for ch in CONTROL), repr(out.output)
    assert "ev\u241b[8mil: msg \u241b]0;TITLE\u2407 \u241b]52;c;ZWNobyBwd25lZA==\u2407" in out.output
    assert "\u241b[31mred\u241b[0m \u240dtail\ttab" in out.output  # the CR no longer cuts the subject short
    commit = json.loads(runner.invoke(app, ["history", "pay", str(root), "--json"]).stdout)["commits"][0]
    assert (commit["subject"], commit["author"]) == (subject, author)
    assert not any(ch in render_history(entity_history(root, "pay")) for ch in CONTROL)  # the MCP door's text


def test_changed_shows_escapes_in_file_names_as_symbols_and_keeps_json_exact(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".assay/\n")
    evil, cr, renamed, newline = "evil\x1b[31mname.py", "cr\rname.py", "ren\x1b]0;T2\x07name.py", "new\nline.txt"
    (root / evil).write_text("def f():\n    return 1\n")
    (root / cr).write_text("def g():\n    return 2\n")
    (root / newline).write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "i")
    run_index(str(root), SETTINGS)
    with open(root / evil, "a") as fh:
        fh.write("# x\n")
    (root / newline).write_text("a\nb\n")
    git(root, "mv", cr, renamed)
    out = runner.invoke(app, ["changed", str(root)], color=True)
    assert out.exit_code == 0, out.output
    assert not any(ch in out.output for ch in CONTROL), repr(out.output)
    assert "evil\u241b[31mname.py:3" in out.output
    assert "cr\u240dname.py -> ren\u241b]0;T2\u2407name.py" in out.output
    assert "new\u240aline.txt" in out.output  # a newline in a name cannot start a line of its own
    assert all(not line.startswith("line.txt") for line in out.output.splitlines())
    data = json.loads(runner.invoke(app, ["changed", str(root), "--json"]).stdout)
    assert {(r["old"], r["new"]) for r in data["renamed_files"]} == {(cr, renamed)}
    assert f"{evil}:3" in data["outside"] and newline in data["files"]
    assert not any(ch in render_changed(workspace_changed(root, "HEAD")) for ch in CONTROL)  # the MCP door's text


# Filters: only those the repository's own config defines are switched off (verify1 N1: the user's own, such as Git
# LFS's in the global config, were switched off too, and a clean tree listed its filtered files as changed).

def user_filter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """A filter `name` in the user's global config (as `git lfs install` puts one) that stores `hello` as `HOWDY`,
    and touches the returned marker each time it runs."""
    used = tmp_path / "USER_FILTER_RAN"
    clean, smudge = tmp_path / "clean.sh", tmp_path / "smudge.sh"
    clean.write_text(f"#!/bin/sh\ntouch '{used}'\nsed s/hello/HOWDY/\n")
    smudge.write_text("#!/bin/sh\nsed s/HOWDY/hello/\n")
    for script in (clean, smudge):
        script.chmod(0o755)
    config = tmp_path / "global.gitconfig"
    config.write_text(f'[filter "{name}"]\n\tclean = {clean}\n\tsmudge = {smudge}\n\trequired = true\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    return used


def test_a_filter_from_the_users_global_config_is_run_so_a_clean_tree_lists_nothing(tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    used = user_filter(tmp_path, monkeypatch, "lfs")
    root = committed(tmp_path / "ws", "*.py filter=lfs\n")
    assert "HOWDY" in git(root, "show", "HEAD:app.py")  # the commit holds the filtered bytes
    os.utime(root / "app.py", (1, 1))  # stat-dirty, bytes unchanged: git must read the file and clean it again
    used.unlink()
    res = workspace_changed(root, "HEAD")
    assert (res.files, res.entities, res.note) == ([], [], "nothing changed since HEAD")
    assert used.exists(), "the user's own filter was not run"
    edit(root, 1)
    res = workspace_changed(root, "HEAD")
    assert [(t.entity, t.lines) for t in res.entities] == [("greet", [3])] and "filter" not in res.note
    out = runner.invoke(app, ["changed", str(root)])
    assert out.exit_code == 0 and "greet (function)  app.py:1-3  lines 3" in out.output, out.output


def test_a_filter_the_repository_defines_stays_off_under_a_users_name_or_an_include_and_the_note_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_filter(tmp_path, monkeypatch, "lfs")
    root = committed(tmp_path / "ws", "*.py filter=lfs\n*.txt filter=inc\n")
    (root / "notes.txt").write_text("hello\n")
    git(root, "add", "notes.txt")
    git(root, "commit", "-qm", "notes")
    marker, program = trap(tmp_path, "cat")
    git(root, "config", "filter.lfs.clean", program)  # the repository's own wins over the user's same-named filter
    (root / ".git" / "more.config").write_text(f'[filter "inc"]\n\tclean = {program}\n')
    git(root, "config", "include.path", "more.config")  # a file the repository's config includes is its own too
    for name in ("notes.txt", "app.py"):
        os.utime(root / name, (1, 1))  # stat-dirty: git must clean the file again
        armed(marker, lambda: git(root, "diff", "HEAD", "--", name))
        os.utime(root / name, (2, 2))
    res = workspace_changed(root, "HEAD")
    assert not marker.exists(), "a filter the repository's config defines was run"
    assert res.files == ["app.py"]  # compared unfiltered: `HOWDY` committed, `hello` on disk; notes.txt is unchanged
    assert "compared unfiltered" in res.note and "app.py" in res.note and "`lfs`" in res.note, res.note
    out = runner.invoke(app, ["changed", str(root)])
    assert out.exit_code == 0 and "compared unfiltered" in out.output, out.output
    assert not marker.exists()


def test_git_never_reads_assays_stdin(tmp_path: Path) -> None:
    """A repository's config can name /dev/stdin as a file to read; git, given Assay's own stdin (a terminal, an
    open pipe), waited on it until the 30-second timeout, then `changed` said "no commits yet"."""
    root = committed(tmp_path / "ws")
    git(root, "config", "include.path", "/dev/stdin")
    edit(root, 1)
    read_end, write_end = os.pipe()  # held open, never written: a read on it blocks
    try:
        done = subprocess.run([sys.executable, "-c", "import sys; from assay.flows.cli import app; "
                               "sys.argv = ['assay', 'changed', sys.argv[1]]; app()", str(root)],
                              stdin=read_end, capture_output=True, text=True, timeout=25,
                              env={**os.environ, "ASSAY_ORCHESTRATION": "direct"})
    finally:
        os.close(read_end)
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert "greet (function)  app.py:1-3  lines 3" in done.stdout


def test_a_broken_config_gives_gits_own_error_not_no_commits(tmp_path: Path) -> None:
    root = committed(tmp_path / "ws")
    with open(root / ".git" / "config", "a") as fh:
        fh.write("[core\n bad")
    out = runner.invoke(app, ["changed", str(root)])
    assert out.exit_code == 2 and "bad config line" in out.output and "no commits" not in out.output, out.output
    with pytest.raises(ValueError, match="bad config line"):
        workspace_changed(root, "HEAD")


def test_bare_repository_files_inside_a_clone_point_to_the_clones_root(tmp_path: Path) -> None:
    """git stops at the bare-repository files before it reaches the clone's `.git`: the user is in a clone already,
    so the advice is to run from its root, not to find "a clone that has a .git folder"."""
    clone = committed(tmp_path / "clone")
    fake = clone / "fake"
    fake.mkdir()
    (fake / "app.py").write_text(APP)
    marker, program = trap(tmp_path, "exit 1")
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare")], check=True)
    for name in ("HEAD", "objects", "refs"):
        subprocess.run(["cp", "-r", str(tmp_path / "bare" / name), str(fake)], check=True)
    (fake / "config").write_text(f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
                                 f"\tfsmonitor = {program}\n")
    run_index(str(fake), SETTINGS)
    for args in (["changed", str(fake)], ["history", "greet", str(fake)]):
        out = runner.invoke(app, args)
        assert out.exit_code == 2, out.output
        line = " ".join(out.output.split())
        assert f"git stops at them before it reaches the clone around them ({clone})" in line, line
        assert f"run this from the clone's root, {clone}" in line and "has a .git folder" not in line
    assert not marker.exists()

"""Which folders are workspaces: never Assay's own home (forget would delete it), never a `.assay/` or `.git/`
folder, a `file://` URI read as its path, a file as PATH explained; the not-indexed advice pastes into a shell and
points a subfolder at its indexed workspace; `watch` prints one clean line per run. Every test runs on a throwaway
HOME and ASSAY_HOME, never the real ~/.assay."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import mcp_server as m
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.workspace import WorkspaceError, resolve_workspace, state_dir
from assay.stages.index.store import NotIndexed, require_manifest

runner = CliRunner()


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME whose `~/.assay` (ASSAY_HOME unset) holds what a user keeps there, and may be served by MCP."""
    fake = tmp_path / "home"
    precious = fake / ".assay" / "eval" / "corpora" / "precious"
    precious.mkdir(parents=True)
    (precious / "f.txt").write_text("data\n")
    (fake / ".assay" / "workspaces.json").write_text("[]")
    monkeypatch.setenv("HOME", str(fake))
    monkeypatch.delenv("ASSAY_HOME", raising=False)
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("ASSAY_WATCH", "false")
    return fake


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def one_line_error(res) -> str:
    assert res.is_error, res.content[0].text
    body = res.content[0].text
    assert "\n" not in body and body.startswith("error: "), body
    return body


def cli_error(args: list[str]) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


# 1: Assay's home is never a workspace, and forget deletes only an indexed workspace's state


def test_forget_of_the_home_folder_is_refused_and_deletes_nothing(home: Path) -> None:
    before = files_under(home / ".assay")
    body = one_line_error(m.forget_workspace(str(home)))
    assert "Assay's own home" in body and "ASSAY_HOME" in body
    assert files_under(home / ".assay") == before  # no write.lock either: refused before the lock


def test_the_default_home_is_kept_when_assay_home_points_elsewhere(home: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "other-home"))
    before = files_under(home / ".assay")
    assert "Assay's own home" in one_line_error(m.forget_workspace("~"))
    assert files_under(home / ".assay") == before


def test_a_state_folder_that_holds_assay_home_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    (ws / ".assay" / "home").mkdir(parents=True)
    monkeypatch.setenv("ASSAY_HOME", str(ws / ".assay" / "home"))
    with pytest.raises(WorkspaceError, match=r"its state folder .* holds .*Assay's own home"):
        resolve_workspace(ws)


def test_index_of_the_home_folder_or_of_assay_home_is_refused_by_cli_and_mcp(home: Path) -> None:
    before = files_under(home / ".assay")
    assert "Assay's own home" in cli_error(["index", str(home)])
    assert "is Assay's own home (ASSAY_HOME), not a project" in cli_error(["index", str(home / ".assay")])
    assert "Assay's own home" in one_line_error(m.index_workspace(str(home)))
    assert files_under(home / ".assay") == before  # neither a manifest nor a `.assay/.assay/` was written


def test_a_workspace_inside_assay_home_is_still_one(home: Path) -> None:
    """The eval corpora live in ~/.assay/eval/corpora and are indexed as workspaces of their own."""
    corpus = home / ".assay" / "eval" / "corpora" / "precious"
    assert resolve_workspace(corpus) == corpus.resolve()


def test_forget_of_a_folder_whose_state_folder_has_no_manifest_deletes_nothing(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    folder = tmp_path / "plain"
    (folder / ".assay").mkdir(parents=True)
    (folder / ".assay" / "mine.txt").write_text("not Assay's\n")
    res = m.forget_workspace(str(folder))
    assert not res.is_error and res.structured_content["forgotten"] is False
    assert res.content[0].text == f"nothing to forget: {folder.resolve()} is not indexed"
    assert (folder / ".assay" / "mine.txt").read_text() == "not Assay's\n"


def test_forget_of_an_indexed_workspace_inside_assay_home_deletes_only_its_state(home: Path) -> None:
    corpus = home / ".assay" / "eval" / "corpora" / "proj"
    shutil.copytree(Path(__file__).parent / "fixtures" / "project", corpus)
    run_index(str(corpus))
    res = m.forget_workspace(str(corpus))
    assert not res.is_error and res.structured_content["forgotten"] is True, res.content[0].text
    assert not (state_dir(corpus) / "manifest.json").exists()
    assert (home / ".assay" / "eval" / "corpora" / "precious" / "f.txt").read_text() == "data\n"
    assert (corpus / "pkg").is_dir()  # the project itself is untouched


# 9: `.assay/` and `.git/` are not workspaces


def test_state_and_git_folders_are_refused_naming_their_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".assay" / "chroma").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    real = ws.resolve()
    with pytest.raises(WorkspaceError, match=rf"^{real}/.assay is Assay's state folder of {real}, not a workspace; pass {real}$"):
        resolve_workspace(ws / ".assay")
    with pytest.raises(WorkspaceError, match=rf"lies inside {real}/.assay, Assay's state folder of {real}"):
        resolve_workspace(ws / ".assay" / "chroma")
    with pytest.raises(WorkspaceError, match=rf"lies inside {real}/.git, git's folder of {real}.*pass {real}$"):
        resolve_workspace(ws / ".git" / "objects")
    assert "Assay's state folder" in cli_error(["index", str(ws / ".assay")])
    assert not (ws / ".assay" / ".assay").exists()


# 7: a file:// URI is the path it names


def test_a_file_uri_is_read_as_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "a b [x]"
    folder.mkdir()
    assert resolve_workspace(f"file://{tmp_path}/a%20b%20%5Bx%5D") == folder.resolve()
    assert resolve_workspace(f"file://localhost{tmp_path}/a%20b%20%5Bx%5D") == folder.resolve()
    with pytest.raises(WorkspaceError, match="another host"):
        resolve_workspace("file://elsewhere/tmp")
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    res = m.index_status(f"file://{tmp_path}/a%20b%20%5Bx%5D")
    assert not res.is_error and res.structured_content["workspace"] == str(folder.resolve())


# 10: a file as PATH


def test_a_file_as_path_says_path_is_the_project_folder(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "utils.py").write_text("x = 1\n")
    line = cli_error(["search", "auth", str(tmp_path / "src" / "utils.py")])
    assert "PATH is the project folder" in line and f"this file's folder is {(tmp_path / 'src').resolve()}" in line


# 8: not-indexed advice


def test_not_indexed_advice_is_shell_quoted(tmp_path: Path) -> None:
    folder = tmp_path / "new [x]"
    folder.mkdir()
    real = folder.resolve()
    assert f"(`assay index '{real}'` or the index_workspace tool)" in cli_error(["search", "foo", str(folder)])
    out = runner.invoke(app, ["status", str(folder)]).output
    assert out.strip() == f"{real}: not indexed (run `assay index '{folder}'`)"


def test_a_subfolder_of_an_indexed_workspace_is_pointed_at_it(indexed_project: Path) -> None:
    sub = indexed_project / "pkg"
    with pytest.raises(NotIndexed, match=rf"inside the indexed workspace {indexed_project.resolve()}; pass that path"):
        require_manifest(sub.resolve())
    line = cli_error(["search", "retry", str(sub)])
    assert "assay index" not in line and str(indexed_project.resolve()) in line
    out = runner.invoke(app, ["status", str(sub)]).output
    assert "inside the indexed workspace" in out and "assay index" not in out


# 3: watch prints one clean line per run


def test_watch_shows_control_characters_in_names_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from assay.flows import watch

    def fake_watch(root, settings, on_run, catch_up):
        on_run(["esc\x1b]0;PWNED\x07\x1b[31mRED.py", "nl\nname.py"], SimpleNamespace(files_parsed=2, entities_total=5, files_removed=0, rebuild_reason=""), None)
        on_run(["bad\x1b[2J.py"], None, RuntimeError("boom"))

    monkeypatch.setattr(watch, "watch_workspace", fake_watch)
    res = runner.invoke(app, ["watch", str(tmp_path)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert len(lines) == 3, lines  # "watching ...", then one line per run
    assert "\x1b" not in res.output and "\x07" not in res.output
    assert lines[1] == "esc\u241b]0;PWNED\u2407\u241b[31mRED.py, nl\u240aname.py: re-indexed 2 file(s), 5 entities"
    assert lines[2].startswith("bad\u241b[2J.py: re-index failed:")

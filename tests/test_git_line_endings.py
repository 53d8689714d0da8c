"""`changed` and `history` on files git does not number as editors do: UTF-16 (git diffs it as binary, no hunks) and
lone-CR line ends (old Mac: git counts only "\\n", so the whole file is its line 1); git errors as one line of advice."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.query import git_history
from assay.stages.query.git_diff import binary_files, diff_hunks, hunk_lines, line_hunks
from assay.stages.query.git_history import GitError, git_span
from assay.stages.query.git_questions import entity_history, workspace_changed

SETTINGS = Settings(embedder="static")
MAC = b"def mac_a():\r    return 1\r\rdef mac_b():\r    return 2\r"
U16 = 'def u16_a():\r\n    return 1\r\n\r\ndef u16_b():\r\n    return "\u010a"\r\n'  # U+010A holds a 0x0A byte
runner = CliRunner()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    """A lone-CR file and a UTF-16 file, committed and indexed."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".assay/\n")
    (root / "mac.py").write_bytes(MAC)
    (root / "u16.py").write_bytes(U16.encode("utf-16"))
    commit(root, "init")
    run_index(str(root), SETTINGS)
    return root


def test_edited_utf16_file_is_listed_with_the_edited_entity_and_stale(ws: Path) -> None:
    (ws / "u16.py").write_bytes(U16.replace("return 1", "return 11").encode("utf-16"))
    result = workspace_changed(ws, "HEAD")
    assert result.files == ["u16.py"] and result.stale_files == ["u16.py"]
    assert [(t.entity, t.lines, t.stale) for t in result.entities] == [("u16_a", [2], True)]
    assert not result.note and not result.outside


def test_cli_changed_json_lists_the_utf16_file(ws: Path) -> None:
    (ws / "u16.py").write_bytes(U16.replace('"\u010a"', '"z"').encode("utf-16"))
    done = runner.invoke(app, ["changed", str(ws), "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert [t["entity"] for t in data["entities"]] == ["u16_b"] and data["note"] == ""


def test_deleted_utf16_file_reports_its_definitions_removed(ws: Path) -> None:
    (ws / "u16.py").unlink()
    result = workspace_changed(ws, "HEAD")
    assert result.deleted_files == ["u16.py"]
    assert {(t.entity, t.change) for t in result.entities} == {("u16_a", "removed"), ("u16_b", "removed")}


def test_changed_binary_file_is_listed_without_lines(ws: Path) -> None:
    (ws / "img.bin").write_bytes(b"\x00\x01\r\x02")
    commit(ws, "image")
    (ws / "img.bin").write_bytes(b"\x00\x03\r\x04")
    result = workspace_changed(ws, "HEAD")
    assert result.files == ["img.bin"] and not result.entities and not result.outside


def test_a_text_file_marked_binary_in_gitattributes_names_its_edited_function(ws: Path) -> None:
    """`*.ipynb -diff` keeps notebook JSON out of diffs: git says "Binary files differ", which listed no entity."""
    (ws / ".gitattributes").write_text("gen.py -diff\n")
    (ws / "gen.py").write_text("def g1():\n    return 1\n\n\ndef g2():\n    return 2\n")
    commit(ws, "gen")
    run_index(str(ws), SETTINGS)
    (ws / "gen.py").write_text("def g1():\n    return 1\n\n\ndef g2():\n    return 22\n")
    result = workspace_changed(ws, "HEAD")
    assert [(t.entity, t.lines) for t in result.entities] == [("g2", [6])] and not result.outside


def test_lone_cr_edit_names_the_edited_function(ws: Path) -> None:
    (ws / "mac.py").write_bytes(MAC.replace(b"return 2", b"return 22"))
    result = workspace_changed(ws, "HEAD")
    assert [(t.entity, t.lines) for t in result.entities] == [("mac_b", [5])]


def test_lone_cr_history_lists_the_commit_and_says_why_it_is_the_whole_file(ws: Path) -> None:
    done = runner.invoke(app, ["history", "mac_b", str(ws)])
    assert done.exit_code == 0, done.output
    assert "1 commit(s)" in done.output and "init" in done.output
    assert "lone-CR" in done.output and "fatal" not in done.output


def test_utf16_history_traces_git_lines_past_a_character_holding_a_newline_byte(ws: Path) -> None:
    (ws / "u16.py").write_bytes(("# head\r\n" + U16.replace("return 1", "return 11")).encode("utf-16"))
    commit(ws, "moves u16_b, edits u16_a")
    (ws / "u16.py").write_bytes(("# head\r\n# more\r\n" + U16.replace("return 1", "return 11")).encode("utf-16"))
    run_index(str(ws), SETTINGS)
    assert [c.subject for c in entity_history(ws, "u16_b").commits] == ["init"]  # the second commit left it alone
    assert [c.subject for c in entity_history(ws, "u16_a").commits] == ["moves u16_b, edits u16_a", "init"]


def test_git_span_maps_editor_lines_to_gits() -> None:
    data = U16.encode("utf-16-le")
    data = b"\xff\xfe" + data
    assert git_span(data, (4, 5)) == ((4, 6), False)  # "Ċ" splits editor line 5 in two for git
    assert git_span(MAC, (4, 5)) == ((1, 1), True)
    assert git_span(b"a\nb\n", (2, 2)) == ((2, 2), False)


def test_history_git_errors_are_one_line_advice(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError) as raised:
        git_history._log_lines(ws, (4, 5), "mac.py", 5)  # git's own count: one line
    message = str(raised.value)
    assert "\n" not in message and "fatal" not in message and "re-index" in message and "git log -- mac.py" in message

    def broken(*args, **kwargs):
        raise GitError("git ls-files: fatal: index file corrupt")
    monkeypatch.setattr(git_history, "unmerged_paths", broken)
    done = runner.invoke(app, ["history", "mac_a", str(ws)])
    assert done.exit_code == 2 and "index file corrupt" in done.output and "git status" in done.output


def test_binary_files_reads_quoted_new_deleted_and_and_named_paths() -> None:
    diff = ("diff --git a/x b/x\nBinary files a/u.py and b/u.py differ\n"
            "Binary files /dev/null and b/new and old.py differ\n"
            'Binary files "a/d\\303\\251.py" and /dev/null differ\n'
            "+Binary files a/not and b/this differ\n")
    assert binary_files(diff) == [("u.py", "u.py"), (None, "new and old.py"), ("dé.py", None)]


def test_line_hunks_number_lines_as_git_does(tmp_path: Path) -> None:
    old, new = ["a", "b", "c", "d", "e"], ["a", "B", "c", "e", "f"]
    (tmp_path / "old").write_text("\n".join(old) + "\n")
    (tmp_path / "new").write_text("\n".join(new) + "\n")
    done = subprocess.run(["git", "diff", "--no-index", "-U0", "--no-color", "old", "new"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert line_hunks(old, new) == diff_hunks(done.stdout)
    assert hunk_lines(line_hunks(old, new)) == {2, 3, 5}  # the deletion of "d" marks the line git puts it at

"""Re-test verify1's new defects: an MCP index_workspace that cannot start fails at once (never "running" forever),
forget of a workspace whose manifest is gone, names holding a backslash, the graph's reasons for a line that is no
line, pasteable advice for a folder starting with `-`, MCP settings errors naming their variable, and
ASSAY_ALLOWED_ROOTS / `assay install --root` with the roots separator."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import mcp_server as m
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core import progress as prog
from assay.stages.core.install import allowed_roots as install_roots
from assay.stages.core.workspace import WorkspaceError, parse_roots, state_dir

runner = CliRunner()
SOURCE = "def back_fn():\n    return 1\n\n\ndef other():\n    return back_fn()\n"


@pytest.fixture()
def allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("ASSAY_WATCH", "false")
    return tmp_path


@pytest.fixture()
def tiny(allowed: Path) -> Path:
    root = allowed / "tiny"
    root.mkdir()
    (root / "m.py").write_text(SOURCE)
    run_index(str(root))
    return root


def text(res) -> str:
    return res.content[0].text


def error(res) -> str:
    assert res.is_error, text(res)
    body = text(res)
    assert "\n" not in body and body.startswith("error: "), body
    return body


def cli(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.output


# N1: index_workspace with a bad setting


@pytest.mark.parametrize("var, value, words", [
    ("ASSAY_TOP_K", "0", "ASSAY_TOP_K: Input should be greater than or equal to 1 (got '0')"),
    ("ASSAY_WATCH_DEBOUNCE_MS", "700000", "ASSAY_WATCH_DEBOUNCE_MS: Input should be less than or equal to 600000"),
])
def test_index_workspace_with_a_bad_setting_fails_at_once(tiny: Path, monkeypatch: pytest.MonkeyPatch, var: str,
                                                         value: str, words: str) -> None:
    before = prog.read_status(tiny)
    monkeypatch.setenv(var, value)
    assert words in error(m.index_workspace(str(tiny)))
    assert m._jobs.get(str(tiny)) is None  # no background run was started
    assert prog.read_status(tiny) == before  # and status.json was not set "running"


def test_index_workspace_refused_by_local_mode_fails_at_once(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_MODE", "local")
    monkeypatch.setenv("ASSAY_CHROMA_URL", "http://10.255.0.1:8000")
    assert "local mode" in error(m.index_workspace(str(tiny))).lower()
    assert m._jobs.get(str(tiny)) is None


def test_a_background_run_that_fails_before_it_starts_ends_failed(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.flows.index as flows_index

    def broken(*args, **kwargs):  # a check at the start of run_index, before it tracks the run
        raise ValueError("the Dask scheduler is gone; unset ASSAY_DASK")

    monkeypatch.setattr(flows_index, "run_index", broken)
    assert not m.index_workspace(str(tiny)).is_error
    job = m._jobs[str(tiny)]
    job.join(timeout=60)
    state = prog.read_status(tiny)
    assert state["state"] == "failed" and state["last_error"] == "the Dask scheduler is gone; unset ASSAY_DASK"
    shown = text(m.index_status(str(tiny)))
    assert "running" not in shown and "the Dask scheduler is gone" in shown, shown
    assert m.forget_workspace(str(tiny)).structured_content["forgotten"]  # no run in progress to refuse it


# N6: MCP names the variable


def test_mcp_tools_name_a_bad_setting_by_its_variable(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_POOL_SIZE", "5000")
    said = error(asyncio.run(m.server.call_tool("search", {"query": "add", "path": str(tiny)})))
    assert "ASSAY_POOL_SIZE: " in said and "5000" in said, said
    code, out = cli("search", "add", str(tiny))
    assert code == 2 and "ASSAY_POOL_SIZE: " in out


def test_a_tool_argument_keeps_its_own_name(tiny: Path) -> None:
    with pytest.raises(ValueError, match=r"^max_tokens must be 0 or more") as caught:
        m._settings(max_tokens=-5)
    assert "ASSAY_" not in str(caught.value)


# N3: forget without a manifest


def test_forget_deletes_assays_state_files_when_the_manifest_is_gone(tiny: Path) -> None:
    folder = state_dir(tiny)
    (folder / "manifest.json").unlink()
    (folder / "mine.txt").write_text("not Assay's")
    res = m.forget_workspace(str(tiny))
    assert not res.is_error and res.structured_content["forgotten"], text(res)
    left = {p.name for p in folder.iterdir()}
    assert left == {"mine.txt", "write.lock", ".gitignore"}, left  # only Assay's own files, by name


def test_forget_leaves_a_dot_assay_holding_no_state_of_assay(allowed: Path) -> None:
    root = allowed / "other"
    (root / ".assay").mkdir(parents=True)
    (root / ".assay" / "config.toml").write_text("someone else's")
    res = m.forget_workspace(str(root))
    assert not res.structured_content["forgotten"] and "nothing to forget" in text(res)
    assert (root / ".assay" / "config.toml").exists()


def test_forget_still_refuses_assays_home(allowed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = allowed / "fakehome"
    (home / ".assay" / "models").mkdir(parents=True)
    (home / ".assay" / "catalog.sqlite").write_text("")
    monkeypatch.setenv("ASSAY_HOME", str(home / ".assay"))
    assert "Assay's own home" in error(m.forget_workspace(str(home)))
    assert (home / ".assay" / "catalog.sqlite").exists() and (home / ".assay" / "models").is_dir()


# N2: a file whose name holds a backslash


@pytest.fixture()
def backslash(allowed: Path) -> Path:
    root = allowed / "bs"
    root.mkdir()
    (root / "we\\ird.py").write_text(SOURCE)
    (root / "sub").mkdir()
    (root / "sub" / "x.py").write_text("def in_sub():\n    return 2\n")
    run_index(str(root))
    return root


def test_a_backslash_in_a_file_name_is_a_name_character(backslash: Path) -> None:
    got = m.get_entity(str(backslash), file="we\\ird.py", line=1)
    assert not got.is_error and got.structured_content["entity"] == "back_fn", text(got)
    assert m.get_entity(str(backslash), name="we\\ird.py:back_fn").structured_content["file"] == "we\\ird.py"
    code, out = cli("callers", "we\\ird.py:back_fn", str(backslash))
    assert code == 0 and "other" in out, out
    # a Windows-style separator still names the file under a folder
    assert m.get_entity(str(backslash), file="sub\\x.py", line=1).structured_content["entity"] == "in_sub"
    code, out = cli("callees", "sub\\x.py:in_sub", str(backslash))
    assert code == 0, out


# N4: the graph's reasons for a line that is no line


def test_graph_commands_say_a_line_is_past_the_end_or_not_a_line(tiny: Path) -> None:
    code, out = cli("callers", "m.py:99999", str(tiny))
    assert code == 2 and "line 99999 is past the end of m.py (the index holds lines 1-6)" in out, out
    code, out = cli("callees", "m.py:0", str(tiny))
    assert code == 2 and "line must be 1 or more" in out and "no definition covers" not in out, out
    code, out = cli("callers", "m.py:3", str(tiny))  # a blank line inside the file keeps its own reason
    assert code == 2 and "no definition covers m.py:3" in out, out
    same = error(m.get_entity(str(tiny), file="m.py", line=99999))
    assert "line 99999 is past the end of m.py (the index holds lines 1-6)" in same


# N5: advice for a folder starting with `-`


def test_not_indexed_advice_for_a_dash_folder_can_be_pasted(allowed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (allowed / "-dash").mkdir()
    monkeypatch.chdir(allowed)
    code, out = cli("status", "--", "-dash")
    assert "run `assay index ./-dash`" in out, out
    code, out = cli("index", "./-dash")
    assert code == 0, out


# options 12: ASSAY_ALLOWED_ROOTS and install --root with the separator


@pytest.mark.parametrize("spec, words", [(os.pathsep, "names no folder"), (" /tmp/x", "has spaces around it")])
def test_allowed_roots_naming_no_folder_or_spaced_is_refused(tmp_path: Path, spec: str, words: str) -> None:
    with pytest.raises(WorkspaceError, match=f"^ASSAY_ALLOWED_ROOTS: .*{words}"):
        parse_roots(spec, tmp_path)
    assert parse_roots("", tmp_path) == [tmp_path.resolve()]
    assert parse_roots(f"{tmp_path}{os.pathsep}{tmp_path}", tmp_path) == [tmp_path.resolve()] * 2


def test_mcp_tool_with_allowed_roots_naming_no_folder_says_so(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", os.pathsep)
    assert "ASSAY_ALLOWED_ROOTS: names no folder" in error(m.index_status(str(tiny)))
    assert "ASSAY_ALLOWED_ROOTS: names no folder" in error(m.list_workspaces())


def test_install_root_holding_the_separator_is_refused(tmp_path: Path) -> None:
    odd = tmp_path / f"a{os.pathsep}b"
    odd.mkdir()
    with pytest.raises(ValueError, match="separates ASSAY_ALLOWED_ROOTS") as caught:
        install_roots([odd])
    assert "\n" not in str(caught.value)
    code, out = cli("install", "--root", str(odd), "--dry-run")
    assert code == 2 and "separates ASSAY_ALLOWED_ROOTS" in out, out
    assert install_roots([tmp_path]) == [tmp_path.resolve()]

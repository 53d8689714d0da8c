"""The terminal and environment a command runs in: another user's index, a cp1252 console, closed streams,
Rich markup in paths."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from assay.flows.cli import app

FIXTURES = Path(__file__).parent / "fixtures"
ASSAY = str(Path(sys.executable).with_name("assay"))


@pytest.fixture(scope="module")
def odd_names(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project fixture plus a bracketed route folder and a file name outside cp1252, indexed once."""
    from assay.flows.index import run_index

    dest = tmp_path_factory.mktemp("termenv") / "project"
    shutil.copytree(FIXTURES / "project", dest)
    (dest / "[id]").mkdir()
    (dest / "[id]" / "page.py").write_text("def page_handler_xyz():\n    return 1\n")
    (dest / "arrow\u2192.py").write_text("def arrow_handler_xyz():\n    return 2\n")
    run_index(str(dest))
    return dest


def _shell(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    """Run through a shell, so a test can close a stream the way a user does (`>&-`, `<&-`)."""
    return subprocess.run(["bash", "-c", command], capture_output=True, cwd=cwd, timeout=300,
                          env={**os.environ, "ASSAY": ASSAY, **env})


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_lexical_folder_gets_the_mode_the_umask_gives(tmp_path: Path, umask: int) -> None:
    from assay.stages.index.lexical import LexicalIndex

    old = os.umask(umask)
    try:
        LexicalIndex.build(["a", "b"], ["def alpha(): pass", "def beta(): pass"]).save(tmp_path / ".assay" / "lexical")
    finally:
        os.umask(old)
    assert (tmp_path / ".assay" / "lexical").stat().st_mode & 0o777 == 0o777 & ~umask


def test_a_cp1252_console_gets_a_replacement_not_a_crash(odd_names: Path) -> None:
    done = _shell('"$ASSAY" search arrow_handler_xyz . -k 3', odd_names, PYTHONIOENCODING="cp1252")
    assert done.returncode == 0, done.stderr
    assert b"arrow\\u2192.py" in done.stdout and b"Traceback" not in done.stderr


def test_search_table_shows_bracketed_paths_as_they_are(odd_names: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows import cli

    screen = io.StringIO()
    monkeypatch.setattr(cli, "out", Console(file=screen, force_terminal=True, width=220, color_system=None))
    result = CliRunner().invoke(app, ["search", "page_handler_xyz", str(odd_names), "-k", "1"])
    assert result.exit_code == 0, result.output
    assert "[id]/page.py:1-2" in screen.getvalue()


def test_mcp_with_stdin_closed_says_one_line(tmp_path: Path) -> None:
    done = _shell('"$ASSAY" mcp <&-', tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == (
        "error: stdin is closed: assay mcp talks MCP over stdin/stdout; launch it from an IDE")


def test_a_query_whose_answer_went_to_a_closed_stdout_fails(odd_names: Path) -> None:
    done = _shell('"$ASSAY" search page_handler_xyz . -k 1 >&-', odd_names)
    assert done.returncode == 1
    assert b"output was lost" in done.stderr and b"Traceback" not in done.stderr


def test_a_closed_stderr_does_not_fail_a_command_that_succeeded(odd_names: Path) -> None:
    done = _shell('"$ASSAY" status . 2>&-', odd_names)
    assert done.returncode == 0
    assert str(odd_names).encode() in done.stdout

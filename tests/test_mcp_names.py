"""Names and files as a user or agent pastes them: get_entity's innermost definition at a line, file-qualified names
(`./`, absolute, `\\`, either Unicode normal form, a `file:line` receipt) in the graph tools, history and get_entity,
one-line errors that say which part is wrong, and MCP text that never advises a CLI command or flag."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import mcp_server as m
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.index.store import lexical_dir
from assay.stages.query.git_questions import entity_history
from assay.stages.query.graph import query_workspace

CAFE = "café_mod.py"
FILES = {
    "pkg/inner.py": "def inner_func():\n    return 1\n",
    "app/[id]/page.py": 'def bracket_page(req):\n    """Page for an id."""\n    return str(req)\n',
    "src/requests/utils.py": ('import os\n\n\ndef get_auth_from_url(url):\n    """Auth from a URL."""\n    return url\n\n\n'
                              'class Session:\n    def send(self):\n        return get_auth_from_url("x")\n'),
    "src/requests/api.py": "from .utils import get_auth_from_url\n\n\ndef use():\n    return get_auth_from_url(1)\n",
    "client.py": "def fetch(resp):\n    \"\"\"Read the reply's body.\"\"\"\n    return resp.json()\n",
    "uni/" + unicodedata.normalize("NFD", CAFE): "def cafe_nfd():\n    return 1\n\n\ndef use_cafe():\n    return cafe_nfd()\n",
    "skipped.bin": "\x00\x01binary",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=T", *args], cwd=root, check=True)


def committed_and_indexed(root: Path, files: dict[str, str], links: dict[str, str] | None = None) -> Path:
    """`files` (and folder `links`, name -> target) written under `root`, committed in a new git repository, indexed."""
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    for name, target in (links or {}).items():
        (root / name).symlink_to(target, target_is_directory=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "first")
    run_index(str(root))
    return root


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return committed_and_indexed(tmp_path_factory.mktemp("names") / "ws", FILES, {"linkdir_in": "pkg"})


@pytest.fixture(autouse=True)
def _allowed(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path_factory.getbasetemp()))


def text(res) -> str:
    return res.content[0].text


def error(res) -> str:
    assert res.is_error, text(res)
    return text(res)


def entity(res) -> tuple[str, str]:
    assert not res.is_error, text(res)
    return res.structured_content["entity"], res.structured_content["kind"]


# paths 4: the definition at a line, not the file entity of the same span


def test_get_entity_at_a_line_of_a_one_definition_file_gives_the_definition(ws: Path) -> None:
    assert entity(m.get_entity(str(ws), file="pkg/inner.py", line=1)) == ("inner_func", "function")
    assert entity(m.get_entity(str(ws), file="app/[id]/page.py", line=2)) == ("bracket_page", "function")
    assert entity(m.get_entity(str(ws), file="src/requests/utils.py", line=11)) == ("Session.send", "method")
    assert entity(m.get_entity(str(ws), file="src/requests/utils.py", line=2))[1] == "file"  # no definition there


# paths 5: file-qualified names as pasted


@pytest.mark.parametrize("file", ["./src/requests/utils.py", "src\\requests\\utils.py", "requests/utils.py",
                                  "src/requests/./utils.py", "ABS"])
def test_file_qualified_names_take_the_file_as_pasted(ws: Path, file: str) -> None:
    file = str(ws / "src/requests/utils.py") if file == "ABS" else file
    res = query_workspace(ws, "callers", f"{file}:get_auth_from_url")
    assert res.targets == ["get_auth_from_url src/requests/utils.py:4"]
    assert {r.entity for r in res.rows} == {"use", "Session.send"}
    assert entity(m.get_entity(str(ws), name=f"{file}:get_auth_from_url")) == ("get_auth_from_url", "function")


def test_file_qualified_names_match_either_unicode_normal_form(ws: Path) -> None:
    for form in ("NFC", "NFD"):
        name = f"uni/{unicodedata.normalize(form, CAFE)}:cafe_nfd"
        assert query_workspace(ws, "callers", name).targets[0].startswith("cafe_nfd uni/"), form
        assert entity(m.get_entity(str(ws), name=name)) == ("cafe_nfd", "function")


def test_a_receipt_names_the_definition_at_its_line(ws: Path) -> None:
    assert query_workspace(ws, "callers", "src/requests/utils.py:5").targets == ["get_auth_from_url src/requests/utils.py:4"]
    assert query_workspace(ws, "callees", "src/requests/utils.py:10-11").targets[0].startswith("Session.send ")
    assert entity(m.get_entity(str(ws), name="src/requests/utils.py:11")) == ("Session.send", "method")
    assert "no definition covers src/requests/utils.py:2" in error(m.callers(str(ws), "src/requests/utils.py:2"))


def test_cli_callers_and_history_take_a_dot_path_and_a_receipt(ws: Path) -> None:
    runner = CliRunner()
    for name in ("./src/requests/utils.py:get_auth_from_url", "src/requests/utils.py:5"):
        out = runner.invoke(app, ["callers", name, str(ws)])
        assert out.exit_code == 0 and "use  src/requests/api.py:4" in out.output, out.output
    assert entity_history(ws, "./src/requests/utils.py:get_auth_from_url").commits


def test_a_wrong_file_part_is_named_as_the_problem(ws: Path) -> None:
    res = error(m.callers(str(ws), "nope.py:get_auth_from_url"))
    assert "'nope.py' is not an indexed file" in res and "is defined in src/requests/utils.py" in res, res
    res = error(m.callers(str(ws), "src/requests/api.py:get_auth_from_url"))
    assert "no definition named 'get_auth_from_url' in src/requests/api.py" in res and "defined in src/requests/utils.py" in res
    res = error(m.get_entity(str(ws), name="nope.py:send"))
    assert "'nope.py' is not an indexed file" in res and "Session.send" not in res and "defined in src/requests/utils.py" in res
    cli = CliRunner().invoke(app, ["history", "src/requests/api.py:nothing_here", str(ws)])
    assert cli.exit_code == 2 and "no definition named 'nothing_here' in src/requests/api.py" in cli.output, cli.output


# paths 6: get_entity's errors say what is wrong; a symlinked folder inside the workspace


def test_get_entity_says_what_is_wrong_with_a_file_or_line(ws: Path) -> None:
    cases = {
        ("src/requests", 1): "src/requests is a folder",
        ("nope.py", 1): "nope.py is not an indexed file (not found",
        ("utils.py", 1): "did you mean src/requests/utils.py",
        ("skipped.bin", 1): "skipped.bin is not an indexed file: the last index run skipped it as unsupported_type",
        ("src/requests/utils.py", 0): "line must be 1 or more",
        ("src/requests/utils.py", 99999): "line 99999 is past the end of src/requests/utils.py (the index holds lines 1-11)",
        ("src/requests/utils.py:11", 3): "names line 11 and line is 3",
        ("../outside.py", 1): "escapes the workspace",
    }
    for (file, line), words in cases.items():
        res = error(m.get_entity(str(ws), file=file, line=line))
        assert words in res and "\n" not in res, (file, line, res)
    assert "give file and line" in error(m.get_entity(str(ws), file="src/requests/utils.py"))


def test_get_entity_takes_a_receipt_backslashes_and_a_symlinked_folder(ws: Path) -> None:
    assert entity(m.get_entity(str(ws), file="src/requests/utils.py:11")) == ("Session.send", "method")
    assert entity(m.get_entity(str(ws), file="src\\requests\\utils.py", line=5)) == ("get_auth_from_url", "function")
    for file in ("linkdir_in/inner.py", str(ws / "linkdir_in" / "inner.py")):
        res = m.get_entity(str(ws), file=file, line=1)
        assert entity(res) == ("inner_func", "function") and res.structured_content["file"] == "pkg/inner.py", file


# answers 5: MCP text never advises a CLI command or flag

_CLI = re.compile(r"\bassay (?:index|search|ask|watch|status|history|callers|brief)\b|(?<![\w-])--[a-z]")


def _no_cli(body: str) -> str:
    assert not _CLI.search(body), body
    return body


def test_mcp_words_reword_the_phrases_the_stages_write_for_the_cli() -> None:
    assert _no_cli(m.mcp_words('missing: no included passage defines Response.json; they only use or mention it '
                               '(look up its definition: assay search "Response.json")')).endswith(
        '(look up its definition: the search tool, query "Response.json")')
    assert m.mcp_words("dense only. Run `assay index` (it rebuilds it).") == "dense only. Call index_workspace (it rebuilds it)."
    assert _no_cli(m.mcp_words("local mode: the cloud judge is not allowed; use --judge local|ollama|none or "
                               "ASSAY_MODE=hybrid", flags=True)) == ("local mode: the cloud judge is not allowed; use judge "
                                                                     "local|ollama|none or ASSAY_MODE=hybrid")
    assert "use guard local|ollama" in m.mcp_words("use --guard local|ollama or ASSAY_MODE=hybrid", flags=True)


def test_every_mcp_tool_text_for_the_testers_cases_advises_tools_not_cli(ws: Path, tmp_path: Path) -> None:
    asked = m.ask  # ask and search are coroutines taking the MCP context
    question = "Does the Response.json method take a default parameter for the encoding?"
    answer = text(asyncio.run(asked(question, str(ws), None, judge="none")))
    assert "missing:" in answer and "the search tool" in answer, answer
    _no_cli(answer)
    _no_cli(error(asyncio.run(asked("x", str(ws), None, judge="cloud"))))
    degraded = tmp_path / "degraded"
    shutil.copytree(ws, degraded, symlinks=True, ignore=shutil.ignore_patterns(".assay"))
    run_index(str(degraded))  # its own state, then the BM25 index removed: search falls back to dense only
    shutil.rmtree(lexical_dir(degraded))
    found = text(asyncio.run(m.search("get_auth_from_url", str(degraded), None, k=2)))
    assert "BM25 index" in found and "call index_workspace" in found.lower(), found
    _no_cli(found)
    for res in (m.callers(str(ws), "nosuch"), m.callers(str(ws), "src/requests/api.py:zzz"), m.impact(str(ws), "use", depth=0),
                m.history(str(ws), "get_auth_from_url", limit=0), m.get_entity(str(ws), name="nope.py:zzz"),
                m.get_entity(str(ws), file="nope.py", line=1)):
        _no_cli(error(res))

"""The CLI as a person uses it: help that teaches, readable output, JSON for tools, the README in step."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.config import settings_table

runner = CliRunner()
README = Path(__file__).resolve().parents[1] / "README.md"


def test_help_teaches_the_commands() -> None:
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0
    for command in ("index", "status", "search", "ask", "audit", "eval", "mcp"):
        assert command in res.stdout
    ask = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "160"}).stdout  # one help line, unwrapped
    assert "local (default) | ollama | cloud | systemone | none" in ask and "--json" in ask
    for command in app.registered_commands:  # every command's help shows how it is run
        name = command.name or command.callback.__name__
        text = runner.invoke(app, [name, "--help"]).stdout
        assert "Examples:" in text and f"assay {name}" in text.split("Examples:", 1)[1], name


def test_index_status_search_ask(project: Path) -> None:
    res = runner.invoke(app, ["index", str(project)])
    assert res.exit_code == 0 and "entities:" in res.stdout and "full re-index: no previous index" in res.stdout
    status = json.loads(runner.invoke(app, ["status", str(project), "--json"]).stdout)
    assert status["files"] == 5 and status["by_kind"]["function"] >= 3
    line = next(x for x in runner.invoke(app, ["status", str(project)]).stdout.splitlines() if x.startswith("entities: "))
    counted = sum(status["by_kind"].values())  # the text's counts add up: passages, and the entities by kind
    assert line == (f"entities: {status['entities']} in index" if counted == status["entities"] else
                    f"entities: {status['entities']} passages in index ({counted} entities; a long one is split into passages)")
    hits = json.loads(runner.invoke(app, ["search", "exponential backoff delays", str(project), "-k", "3", "--json"]).stdout)["results"]
    assert hits[0]["entity"] == "backoff_delays" and hits[0]["start_line"] == 12
    table = runner.invoke(app, ["search", "merge cookies", str(project)]).stdout
    assert "merge_cookies" in table and "pkg/session.py" in table
    text = runner.invoke(app, ["ask", "how are cookies merged?", str(project)]).stdout
    assert "(pkg/session.py:" in text and "Assessment:" in text
    report = json.loads(runner.invoke(app, ["ask", "how are cookies merged?", str(project), "--json", "--judge", "none"]).stdout)
    assert report["judgment"]["backend"] == "none" and report["selection"]["included"]


def test_commands_on_a_folder_never_indexed_say_so_and_leave_nothing_there(tmp_path: Path, monkeypatch) -> None:
    """A command run in the wrong folder writes no `.assay/` into it: only `index` makes one."""
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "direct")
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "notes.py").write_text("def f():\n    return 1\n")
    for args in (["search", "f"], ["ask", "what does f return?"], ["callers", "f"], ["callees", "f"],
                 ["references", "f"], ["impact", "f"], ["history", "f"], ["brief"], ["changed"], ["audit"]):
        res = runner.invoke(app, [*args, str(folder)])
        assert res.exit_code == 2, (args, res.output)
        assert res.output.strip().splitlines() == [f"error: {folder} is not indexed yet; index it first "
                                                    f"(`assay index {folder}` or the index_workspace tool)"], args
    assert runner.invoke(app, ["status", str(folder)]).exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["notes.py"]

def test_readme_configuration_table_matches_the_code() -> None:
    assert settings_table() in README.read_text()


def test_readme_commands_are_the_ci_command() -> None:
    ci = (README.parent / ".ci" / "run").read_text()
    test_cmd = "python3 -m venv .venv && . .venv/bin/activate && pip install -q -e '.[test]' && python -m pytest -q"
    assert test_cmd in README.read_text() and test_cmd in ci

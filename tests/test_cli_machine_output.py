"""The CLI as scripts read it: rows on stdout and notices on stderr, the same JSON keys in every case, whole rows on a
narrow terminal, and one message per kind of bad argument."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from assay.flows import cli
from assay.flows.cli import app

runner = CliRunner()


def _git_repo(project: Path) -> Path:
    """The project as a committed git repository (history and changed need one)."""
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    return project


@pytest.fixture()
def stale_repo(project: Path) -> Path:
    """An indexed git workspace whose pkg/retry.py changed after indexing."""
    _git_repo(project)
    assert runner.invoke(app, ["index", str(project)]).exit_code == 0
    with (project / "pkg" / "retry.py").open("a") as fh:
        fh.write("\n# edited after indexing\n")
    return project


def test_search_on_a_narrow_terminal_prints_whole_rows(indexed_project: Path, monkeypatch) -> None:
    """At 20 columns the table had blank cells; a terminal too narrow gets the piped one-line-per-row form."""
    monkeypatch.setattr(cli, "out", Console(force_terminal=True, width=20))
    res = runner.invoke(app, ["search", "merge cookies", str(indexed_project), "-k", "3"])
    assert res.exit_code == 0, res.output
    rows = res.stdout.splitlines()
    assert len(rows) == 3 and rows[0].startswith("1. pkg/session.py:") and "[merge_cookies]" in rows[0]
    assert not any(ch in res.stdout for ch in "┏┃│")  # no table borders
    monkeypatch.setattr(cli, "out", Console(force_terminal=True, width=200))
    wide = runner.invoke(app, ["search", "merge cookies", str(indexed_project), "-k", "3"]).stdout
    assert "┃" in wide and "merge_cookies" in wide  # a wide terminal keeps the table


def test_stale_notices_go_to_stderr_in_graph_history_and_changed(stale_repo: Path) -> None:
    for args in (["callers", "retry_call"], ["history", "retry_call"], ["changed"]):
        res = runner.invoke(app, [*args, str(stale_repo)])
        assert res.exit_code == 0, (args, res.output)
        assert "changed since indexing" in res.stderr or "STALE:" in res.stderr, (args, res.stderr)
        for line in res.stdout.splitlines():
            assert not line.startswith(("warning:", "STALE:")), (args, line)
    callers = runner.invoke(app, ["callers", "retry_call", str(stale_repo)]).stdout
    assert "Session.send" in callers  # the rows themselves stay on stdout


def test_history_json_names_stale_files(stale_repo: Path) -> None:
    stale = json.loads(runner.invoke(app, ["history", "retry_call", str(stale_repo), "--json"]).stdout)
    assert stale["stale_files"] == ["pkg/retry.py"] and stale["commits"]
    assert stale["note"].startswith("warning: pkg/retry.py changed since indexing")  # the prose is kept
    fresh = json.loads(runner.invoke(app, ["history", "merge_cookies", str(stale_repo), "--json"]).stdout)
    assert fresh["stale_files"] == []


def test_status_json_has_the_same_keys_with_or_without_an_index(project: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "a.py").write_text("x = 1\n")
    empty = json.loads(runner.invoke(app, ["status", str(bare), "--json"]).stdout)
    assert runner.invoke(app, ["index", str(project)]).exit_code == 0
    full = json.loads(runner.invoke(app, ["status", str(project), "--json"]).stdout)
    assert set(empty) == set(full)
    assert empty["indexed"] is False and empty["entities"] == 0 and empty["files"] == 0 and empty["by_kind"] == {}
    # every time reads one way: `*_at` ISO 8601 text beside the epoch seconds that were there before
    run = full["run"]
    assert isinstance(run["started"], float) and isinstance(run["ended"], float)
    assert datetime.fromisoformat(run["started_at"]) == datetime.fromtimestamp(int(run["started"]), timezone.utc)
    assert run["ended_at"] is not None and full["last_run"]["started_at"] == run["started_at"]


def test_empty_name_reads_the_same_in_history_and_graph_commands(stale_repo: Path) -> None:
    said = set()
    for command in ("history", "callers", "impact"):
        res = runner.invoke(app, [command, " ", str(stale_repo), "--json"])
        assert res.exit_code == 2 and res.stdout == ""
        said.add(res.stderr.strip())
    assert len(said) == 1 and said.pop().startswith("error: NAME is empty")


def test_indexing_a_folder_whose_name_is_not_utf8_says_rename_not_retype(tmp_path: Path) -> None:
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    try:
        folder.mkdir()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    (folder / "a.py").write_text("def f():\n    return 1\n")
    res = runner.invoke(app, ["index", str(folder), "--json"])
    if res.exit_code == 0:  # the index learned to record such paths: then it must be a report
        assert json.loads(res.stdout)["entities_total"] >= 1
        return
    assert res.exit_code == 2 and "retype" not in res.stderr
    assert "caf\\xe9" in res.stderr and "not valid UTF-8" in res.stderr and "rename the folder" in res.stderr
    assert not (folder / ".assay").exists()  # refused before anything is written: no failed run to show
    for command in (["status", str(folder)], ["search", "f", str(folder)]):  # the same reason, not "run assay index"
        res = runner.invoke(app, command)
        assert "rename the folder" in res.output and "assay index" not in res.output, res.output


def test_search_json_echoes_a_non_utf8_query_as_ask_reads_it(tmp_path: Path) -> None:
    """A Latin-1 terminal's paste reaches argv as a lone surrogate: `search --json` echoed `caf\\udce9`, which a
    consumer cannot encode, while `ask` read `caf\\ufffd`."""
    (tmp_path / "cafe.py").write_text("def cafe():\n    return 1\n")
    assert runner.invoke(app, ["index", str(tmp_path)], env={"ASSAY_EMBEDDER": "static"}).exit_code == 0
    res = runner.invoke(app, ["search", os.fsdecode(b"caf\xe9"), str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["query"] == "caf\ufffd"

"""The MCP door's answers to bad or badly timed calls, in-process (the tool functions and the server's call_tool):
one-line errors in MCP words, forget that stays forgotten, get_entity that says when its lines are stale."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from assay.flows import mcp_server as m
from assay.flows.index import run_index
from assay.stages.core import progress as prog
from assay.stages.core.workspace import state_dir
from assay.stages.index.store import NotIndexed, require_manifest, write_lock
from assay.stages.query.budget import count_tokens, fit

KEPT = {"write.lock", ".gitignore"}


@pytest.fixture()
def allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("ASSAY_WATCH_DEBOUNCE_MS", "200")
    return tmp_path


@pytest.fixture()
def indexed(project: Path, allowed: Path) -> Path:
    run_index(str(project))
    return project


def text(res) -> str:
    return res.content[0].text


def one_line_error(res, *words: str) -> str:
    """The error of a tool result: isError, one line, the same words in the structured content."""
    assert res.is_error, text(res)
    body = text(res)
    assert "\n" not in body and body.startswith("error: "), body
    assert res.structured_content == {"error": body.removeprefix("error: ")}
    for word in words:
        assert word in body, body
    return body


def call(name: str, **args):
    return asyncio.run(m.server.call_tool(name, args))


def wait_job(root: Path) -> None:
    job = m._jobs.get(str(root))
    if job is not None:
        job.join(timeout=240)
        assert not job.is_alive()


def leftover(root: Path) -> set[str]:
    folder = state_dir(root)
    return {p.name for p in folder.iterdir()} - KEPT if folder.is_dir() else set()


# 7: arguments of the wrong type


def test_invalid_arguments_are_one_line_structured_errors(indexed: Path) -> None:
    one_line_error(call("search", query="send", path=str(indexed), k="abc"), "k must be an integer (got 'abc')")
    one_line_error(call("search", query="send"), "path is required")
    one_line_error(call("search", query=123, path=str(indexed)), "query must be a string")
    one_line_error(call("index_workspace", path=str(indexed), rebuild="maybe"), "rebuild must be true or false")
    assert not call("search", query="retry", path=str(indexed), k=2).is_error  # valid calls pass through


# 3 and 4: forget stays forgotten


def test_forget_stops_the_watcher_so_an_edit_does_not_rebuild_the_index(indexed: Path) -> None:
    from assay.flows import watch
    from assay.stages.core import registry

    assert not m.index_workspace(str(indexed)).is_error
    wait_job(indexed)
    assert str(indexed.resolve()) in watch._watchers
    gone = m.forget_workspace(str(indexed))
    assert not gone.is_error and gone.structured_content["forgotten"], text(gone)
    assert str(indexed.resolve()) not in watch._watchers
    (indexed / "pkg" / "retry.py").write_text((indexed / "pkg" / "retry.py").read_text() + "\n# edit\n")
    time.sleep(3)  # a live watcher re-indexes within its 0.2 s debounce
    assert leftover(indexed) == set()
    assert str(indexed) not in registry.known()


def test_forget_refuses_while_an_index_run_is_queued(indexed: Path) -> None:
    with write_lock(indexed):  # the job waits its turn behind this lock: queued, status "running"
        assert not m.index_workspace(str(indexed), rebuild=True).is_error
        one_line_error(m.forget_workspace(str(indexed)), "an index run is in progress", "index_status says done")
    wait_job(indexed)
    assert prog.read_status(indexed)["state"] == "done"  # the refused forget deleted nothing under the run
    assert m.forget_workspace(str(indexed)).structured_content["forgotten"]
    assert leftover(indexed) == set()


def test_forget_of_a_folder_never_indexed_creates_nothing(allowed: Path) -> None:
    empty = allowed / "empty"
    empty.mkdir()
    res = m.forget_workspace(str(empty))
    assert not res.is_error and "nothing to forget" in text(res) and res.structured_content["forgotten"] is False
    assert list(empty.iterdir()) == []


# 5: get_entity on a file changed or deleted since indexing


def test_get_entity_marks_a_changed_file_stale_and_refuses_a_deleted_one(indexed: Path) -> None:
    fresh = m.get_entity(str(indexed), name="retry_call")
    assert fresh.structured_content["stale"] is False and "STALE" not in text(fresh).splitlines()[0]
    retry = indexed / "pkg" / "retry.py"
    retry.write_text("# pad\n" * 10 + retry.read_text())
    stale = m.get_entity(str(indexed), name="retry_call")
    assert stale.structured_content["stale"] is True and "STALE" in text(stale).splitlines()[0]
    retry.unlink()
    one_line_error(m.get_entity(str(indexed), name="retry_call"), "pkg/retry.py was deleted since indexing",
                   "index_workspace")


# 11: paths


def test_get_entity_takes_absolute_and_dot_paths_inside_the_workspace(indexed: Path) -> None:
    for file in (str(indexed / "pkg" / "retry.py"), "./pkg/retry.py", "pkg/retry.py"):
        res = m.get_entity(str(indexed), file=file, line=20)
        assert not res.is_error and res.structured_content["entity"] == "retry_call", (file, text(res))
    one_line_error(m.get_entity(str(indexed), file="../elsewhere.py", line=1), "escapes the workspace")


def test_get_entity_quotes_the_lines_the_index_cites_past_a_form_feed_and_in_a_declared_coding(allowed: Path) -> None:
    ws = allowed / "odd"
    ws.mkdir()
    (ws / "paged.py").write_text("def first():\n    return 1\n\f\ndef second():\n    return 2\n")
    (ws / "latin.py").write_bytes("# -*- coding: latin-1 -*-\ndef caf\u00e9():\n    return '\u00e9t\u00e9'\n".encode("latin-1"))
    run_index(str(ws))
    res = m.get_entity(str(ws), name="second")
    assert not res.is_error and res.structured_content["source"] == "def second():\n    return 2", text(res)
    res = m.get_entity(str(ws), file="latin.py", line=3)
    assert res.structured_content["source"] == "def caf\u00e9():\n    return '\u00e9t\u00e9'", text(res)


def test_get_entity_on_an_unindexed_workspace_says_not_indexed_and_creates_nothing(allowed: Path) -> None:
    empty = allowed / "empty"
    empty.mkdir()
    one_line_error(m.get_entity(str(empty), name="x"), "is not indexed yet")
    assert list(empty.iterdir()) == []


def test_a_relative_workspace_that_does_not_exist_hints_at_an_absolute_path(allowed: Path) -> None:
    one_line_error(m.index_status("no-such-folder"), "workspace does not exist: no-such-folder",
                   f"resolves against {os.getcwd()}", "pass an absolute path")
    absolute = one_line_error(m.index_status(str(allowed / "missing")))
    assert "pass an absolute path" not in absolute


# 6: budgets and writers validated


def test_ask_validates_its_budget_and_writers(indexed: Path) -> None:
    q = "How does retry_call back off between attempts?"
    one_line_error(asyncio.run(m.ask(q, str(indexed), None, max_tokens=-1)), "max_tokens must be 0 (no limit) or more")
    one_line_error(asyncio.run(m.ask(q, str(indexed), None, synth="bogus")),
                   "unknown synth 'bogus'; use extractive, ollama or cloud")
    one_line_error(asyncio.run(m.ask(q, str(indexed), None, judge="bogus")), "unknown judge 'bogus'")
    tiny = asyncio.run(m.ask(q, str(indexed), None, max_tokens=1))
    lines = text(tiny).splitlines()
    assert not tiny.is_error and len(lines) == 2 and lines[0].strip(), lines
    assert "more report line(s) not shown" in lines[1] and "--json" not in lines[1]
    whole = asyncio.run(m.ask(q, str(indexed), None, max_tokens=0))
    assert "not shown" not in text(whole) and "Legend" in text(whole)


def test_search_budget_zero_means_no_limit_and_too_small_keeps_the_best_hit(indexed: Path) -> None:
    unlimited = asyncio.run(m.search("retry backoff", str(indexed), None, k=3, max_tokens=0))
    assert "not shown" not in text(unlimited) and text(unlimited).startswith("1. ")
    tiny = asyncio.run(m.search("retry backoff", str(indexed), None, k=3, max_tokens=1))
    lines = text(tiny).splitlines()
    assert lines[0].startswith("1. ") and lines[1].startswith("2 more result(s) not shown")
    one_line_error(asyncio.run(m.search("retry", str(indexed), None, max_tokens=-5)), "max_tokens must be 0")


def test_fit_keeps_the_first_line_and_the_count_when_nothing_fits() -> None:
    blocks = [["the answer, which is a long first line of many words"], ["row one", "row two"]]
    assert fit(blocks, 3).splitlines() == [blocks[0][0], "2 more line(s) not shown: ask with a larger max_tokens"]
    assert count_tokens(fit(blocks, 40)) <= 40  # a budget that fits anything is still kept


# 8: empty search query


@pytest.mark.parametrize("query", ["", "  \n\t", "\x00", "\x00\x1b"])
def test_search_with_an_empty_query_is_the_error_the_cli_search_gives(indexed: Path, query: str) -> None:
    searched = one_line_error(asyncio.run(m.search(query, str(indexed), None)), "the query is empty")
    assert searched.endswith("the query is empty: say what you are looking for in the code")
    one_line_error(asyncio.run(m.ask(query, str(indexed), None)), "the question is empty")


# 9: calls during the first index run


def test_calls_during_the_first_index_run_say_it_is_in_progress(project: Path, allowed: Path) -> None:
    status = prog.StatusSink(project)  # a live run (this process) that has committed nothing yet
    with pytest.raises(NotIndexed, match="indexing in progress .* retry shortly"):
        require_manifest(project)
    one_line_error(asyncio.run(m.search("retry", str(project), None)), "indexing in progress", "index_status tool")
    line = text(m.index_status(str(project)))
    assert ": ;" not in line and "start-up;" in line
    status.finish("failed")
    one_line_error(asyncio.run(m.search("retry", str(project), None)), "is not indexed yet")


# 10: MCP words and bounds


def test_errors_and_notes_name_mcp_arguments_and_tools(indexed: Path) -> None:
    for res in (m.callers(str(indexed), "retry_call", limit=0), m.impact(str(indexed), "retry_call", depth=0),
                m.history(str(indexed), "retry_call", limit=0), m.history(str(indexed), "retry_call", limit=-1),
                m.update_brief(str(indexed), ""), asyncio.run(m.search("retry", str(indexed), None, k=0))):
        assert "--" not in one_line_error(res)
    assert "limit must be 1 or more (got 0)" in text(m.history(str(indexed), "retry_call", limit=0))
    assert "the search tool" in one_line_error(m.callers(str(indexed), "NoSuchThing"))
    (indexed / "pkg" / "retry.py").write_text("# changed\n" + (indexed / "pkg" / "retry.py").read_text())
    called = text(m.callers(str(indexed), "retry_call"))
    assert "STALE" in called and "call index_workspace" in called and "`assay" not in called
    found = text(asyncio.run(m.search("retry", str(indexed), None, k=2)))
    assert "changed since" in found and "`assay" not in found


def test_mcp_words_leave_quoted_flags_alone_outside_errors() -> None:
    assert m.mcp_words("3 more not shown (raise --limit)") == "3 more not shown (raise limit)"
    assert m.mcp_words('parser.add_argument("--limit")') == 'parser.add_argument("--limit")'
    assert m.mcp_words("--limit must be 1 or more", flags=True) == "limit must be 1 or more"


def test_a_workspace_indexed_from_the_cli_is_listed_by_the_mcp_server(allowed: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's path: `assay index .`, then `assay install`: the IDE's list_workspaces showed nothing."""
    from typer.testing import CliRunner

    from assay.flows.cli import app

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    ws = allowed / "cli-indexed"
    ws.mkdir()
    (ws / "a.py").write_text("def alpha():\n    return 1\n")
    assert CliRunner().invoke(app, ["index", str(ws)]).exit_code == 0
    assert m.list_workspaces().structured_content["workspaces"] == [str(ws.resolve())]

"""Notes through the MCP door (and the CLI's ask): a note's receipt leads back to that note, its id is accepted,
`ask` quotes it verbatim (only Assay's own advice is put in MCP terms), and control characters it holds are shown,
never sent raw, in text (the structured content keeps them exactly)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import mcp_server as m
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.index.embed import index_embedder
from assay.stages.index.notes import NOTES_FILE, add_note, make_note
from assay.stages.index.store import read_manifest

CLI_ADVICE = "To refresh, run `assay index --rebuild` then try `assay search foo`"
PATTERN = "Pattern:\n```python\ndef retry_adapter():\n    return 3\n```\nnever raw urllib3."
CONTROL = "control chars \x00 \x07 \x1b[31mred\x1b[0m here"


@pytest.fixture()
def indexed(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    run_index(str(project))
    return project


def call(tool: str, **args):
    return asyncio.run(m.server.call_tool(tool, args))


def text(res) -> str:
    assert not res.is_error, res.content[0].text
    return res.content[0].text


def remember(root: Path, note: str) -> str:
    return call("remember", path=str(root), note=note).structured_content["id"]


def test_get_entity_reads_a_note_back_by_the_id_remember_gives(indexed: Path) -> None:
    ident = remember(indexed, PATTERN)
    remember(indexed, "Use pooled sessions for every HTTP call.")
    res = call("get_entity", path=str(indexed), name=ident)
    assert res.structured_content["source"] == PATTERN and res.structured_content["id"] == ident, text(res)
    assert res.structured_content["kind"] == "note" and res.structured_content["end_line"] == 6
    assert call("get_entity", path=str(indexed), name=ident, file=NOTES_FILE).structured_content["source"] == PATTERN
    reply = call("remember", path=str(indexed), note="x")
    assert f"get_entity with name {reply.structured_content['id']}" in text(reply)  # the reply says what reads it


def test_a_notes_search_receipt_leads_back_to_that_note_never_another(indexed: Path) -> None:
    short = remember(indexed, "Use pooled sessions for every HTTP call.")
    pattern = remember(indexed, PATTERN)
    hits = call("search", path=str(indexed), query="retry_adapter pattern urllib3", k=5).structured_content["results"]
    hit = next(h for h in hits if h["kind"] == "note")
    assert hit["id"] == pattern and hit["file"] == NOTES_FILE and hit["start_line"] == 1
    assert f"id={pattern}" in text(call("search", path=str(indexed), query="retry_adapter pattern urllib3", k=5))
    # every note starts at .assay/notes:1: the line alone no longer picks the shortest note (it was `short`)
    at_line = call("get_entity", path=str(indexed), file=hit["file"], line=hit["start_line"])
    assert at_line.is_error and "\n" not in at_line.content[0].text and "note's id" in at_line.content[0].text
    assert short not in str(at_line.structured_content)
    assert call("get_entity", path=str(indexed), name=hit["id"]).structured_content["source"] == PATTERN
    assert call("get_entity", path=str(indexed), name=hit["entity"]).structured_content["source"] == PATTERN
    # a line only one note covers names that note
    assert call("get_entity", path=str(indexed), file=NOTES_FILE, line=4).structured_content["id"] == pattern


def test_ask_quotes_a_note_verbatim_and_puts_only_its_own_advice_in_mcp_terms(indexed: Path) -> None:
    remember(indexed, CLI_ADVICE)
    (indexed / "pkg" / "retry.py").write_text("# changed\n" + (indexed / "pkg" / "retry.py").read_text())
    res = call("ask", path=str(indexed), question="What is the rule about `assay index --rebuild`?", max_tokens=0)
    report = text(res)
    assert CLI_ADVICE in report, report  # the note, as stored
    assert "with rebuild true then try the search tool" not in report, report
    own = next(line for line in report.splitlines() if line.startswith("  index: "))
    assert "changed since" in own and "call index_workspace" in own and "`assay" not in own, own
    assert res.structured_content["tokens_returned"] > 0


def test_control_characters_are_shown_in_text_and_kept_in_structured_content(indexed: Path) -> None:
    ident = remember(indexed, CONTROL)
    assert call("notes", path=str(indexed)).structured_content["notes"][0]["note"] == CONTROL
    listed = text(call("notes", path=str(indexed)))
    got = call("get_entity", path=str(indexed), name=ident)
    assert got.structured_content["source"] == CONTROL
    found = text(call("search", path=str(indexed), query="control chars red here", k=5))
    asked = text(call("ask", path=str(indexed), question="What about control chars red here?", max_tokens=0))
    for shown in (listed, text(got), found, asked):
        assert not any(ch in shown for ch in "\x00\x07\x1b"), repr(shown)
    assert "\u241b[31mred" in listed and "\u241b[31mred" in text(got) and "\u2407" in asked, asked


def test_a_notes_name_shows_its_control_characters_and_its_body_keeps_them() -> None:
    note = make_note(CONTROL + "\x9b2J\x7f")
    assert note.body == CONTROL + "\x9b2J\x7f"
    assert note.name == "control chars \u2400 \u2407 \u241b[31mred\u241b[0m here\\x9b2J\u2421"
    assert note.qualname.endswith(note.name)


def test_the_cli_ask_report_shows_a_notes_control_characters(indexed: Path) -> None:
    s = Settings()
    add_note(indexed, CONTROL, index_embedder(read_manifest(indexed).embedder, s), s.chroma_url)
    res = CliRunner().invoke(app, ["ask", "What about control chars red here?", str(indexed), "--max-tokens", "0"])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout and "\u241b[31mred" in res.stdout, res.stdout


def test_the_cli_search_shows_a_notes_control_characters(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def quasar():\n    return 1\n")
    run_index(str(tmp_path))
    add_note(tmp_path, "quasar rule: beep\x07 and \x1b[31mred", index_embedder(read_manifest(tmp_path).embedder, Settings()))
    res = CliRunner().invoke(app, ["search", "quasar rule beep", str(tmp_path), "--max-tokens", "800"])
    assert res.exit_code == 0 and "\x1b" not in res.output and "\x07" not in res.output
    assert "\u241b[31mred" in res.output


def test_mcp_history_quotes_commit_subjects_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_git_changes import commit_all, init_repo

    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    root = init_repo(tmp_path / "ws")
    (root / ".gitignore").write_text(".assay/\n")
    (root / "core.py").write_text("def helper(x):\n    return x * 2\n")
    commit_all(root, "Fix helper; run `assay index --rebuild` after pulling")
    run_index(str(root))
    shown = text(m.history(str(root), "helper"))
    assert "run `assay index --rebuild` after pulling" in shown  # was reworded into MCP terms like Assay's own advice

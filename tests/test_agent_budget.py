"""Built for the agent's context: output budgets to the token, outline mode, the project brief, install/uninstall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.query import run_query
from assay.stages.core.config import Settings
from assay.stages.core.install import AGENTS, apply, detected, server_entry
from assay.stages.query.budget import count_tokens, fit, search_text
from assay.stages.query.retrieve import search


def test_fit_keeps_whole_lines_best_first_and_counts_the_rest() -> None:
    blocks = [["answer line one", "answer line two"], [f"evidence row {i} with some words in it" for i in range(40)]]
    for budget in (30, 60, 120):
        text = fit(blocks, budget)
        assert count_tokens(text) <= budget
        assert text.startswith("answer line one")
        assert text.splitlines()[-1].endswith("more line(s) not shown: ask with a larger max_tokens")
    assert fit(blocks, None).count("\n") == 41
    headed = [["answer line one"], ["Sources:", *(f"source row {i} with a long path/to/file.py:12" for i in range(5))]]
    for budget in range(10, 60):  # a heading never ends the text without a row under it
        lines = fit(headed, budget).splitlines()
        assert "Sources:" not in lines[:-1] or lines[lines.index("Sources:") + 1].startswith("source row"), (budget, lines)


def test_token_counts_are_the_tokenizers_and_each_line_is_tokenized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting line by line must give the whole-text count (WordPiece never joins across a newline), and a
    report counted to fit and again for its receipt pays the tokenizer once per distinct line."""
    from assay.stages.query import budget

    whole = budget._tokenizer()
    texts = ["def f(x):\n    return x  # café, naïve\r\n\n\tTabs\tand 中文字符 mixed",
             "Assessment:\n  status: supported\n  coverage: 3/3", "", "one line only", "\n\n"]
    for text in texts:
        assert count_tokens(text) == len(whole.encode(text, add_special_tokens=False).ids), text
    seen: list[str] = []

    class Counting:
        def encode_batch_fast(self, lines, add_special_tokens=False):
            seen.extend(lines)
            return whole.encode_batch_fast(lines, add_special_tokens=add_special_tokens)

    monkeypatch.setattr(budget, "_tokenizer", lambda: Counting())
    monkeypatch.setattr(budget, "_LINE_TOKENS", {})
    report = "Legend line\nrow one\nrow two\nrow one"
    first = count_tokens(report)
    assert count_tokens(report) == first and budget.count_many(["row two", "new line"]) == [
        len(whole.encode(t, add_special_tokens=False).ids) for t in ("row two", "new line")]
    assert sorted(seen) == sorted(["Legend line", "row one", "row two", "new line"])


@pytest.mark.parametrize("budget", [60, 200, 600])
def test_search_budget_is_respected_to_the_token_whole_entities_first(indexed_project: Path, budget: int) -> None:
    hits = search(indexed_project, "retry backoff session", Settings(), k=10).candidates
    text = search_text(hits, budget)
    assert count_tokens(text) <= budget
    assert hits[0].body.splitlines()[0] in text or budget < 100  # the best hit whole when it fits
    assert "more result(s) not shown" in text


def test_outline_mode_returns_signatures_and_locations_only(indexed_project: Path) -> None:
    hits = search(indexed_project, "retry backoff session", Settings(), k=5).candidates
    text = search_text(hits, None, outline=True)
    assert len(text.splitlines()) == len(hits)
    assert "def retry_call(func, attempts: int = 3, base: float = DEFAULT_BACKOFF)" in text
    assert "for attempt in range" not in text  # bodies are left out
    cli = CliRunner().invoke(app, ["search", "retry backoff", str(indexed_project), "--outline"])
    assert cli.exit_code == 0 and "pkg/retry.py:17-26 [retry_call] (function)" in cli.output


def test_ask_text_fits_the_budget_and_the_json_keeps_everything(indexed_project: Path) -> None:
    report = run_query(str(indexed_project), "How does retry_call back off between attempts?", Settings(max_tokens=180))
    assert count_tokens(report.text) <= 180
    assert report.answer.text.splitlines()[0] in report.text and "more report line(s) not shown" in report.text
    assert len(report.selection.included) >= 1  # the JSON report is whole


def test_install_uninstall_round_trip_on_every_agent_format(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for agent in AGENTS:
        (home / agent.detect).parent.mkdir(parents=True, exist_ok=True)
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}))
    (home / ".cursor").mkdir(parents=True)
    (home / ".config/Code/User").mkdir(parents=True)
    (home / ".codex").mkdir(parents=True)
    (home / ".codex/config.toml").write_text('model = "o4"\n\n[mcp_servers.other]\ncommand = "other"\n')
    found = {a.name for a in detected(home)}
    assert {"Claude Code", "Cursor", "VS Code", "Codex"} <= found
    entry = server_entry([tmp_path / "work"], command="/usr/bin/assay")
    dry = apply(home, entry, dry_run=True)
    assert {a.action for a in dry} == {"added"} and json.loads((home / ".claude.json").read_text())["mcpServers"].keys() == {"other"}
    first = apply(home, entry)
    assert {a.action for a in first} == {"added"}
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["theme"] == "dark" and claude["mcpServers"]["other"] == {"command": "x"}
    assert claude["mcpServers"]["assay"]["args"] == ["mcp"]
    assert claude["mcpServers"]["assay"]["env"]["ASSAY_ALLOWED_ROOTS"] == str((tmp_path / "work").resolve())
    assert json.loads((home / ".config/Code/User/mcp.json").read_text())["servers"]["assay"]["type"] == "stdio"
    toml = (home / ".codex/config.toml").read_text()
    assert '[mcp_servers.other]\ncommand = "other"' in toml and '[mcp_servers.assay]\ncommand = "/usr/bin/assay"' in toml
    import tomllib

    assert tomllib.loads(toml)["mcp_servers"]["assay"]["env"]["ASSAY_ALLOWED_ROOTS"] == str((tmp_path / "work").resolve())
    assert (home / ".claude.json.assay-backup").exists() and (home / ".codex/config.toml.assay-backup").exists()
    assert {a.action for a in apply(home, entry)} == {"unchanged"}  # idempotent
    removed = apply(home, None)
    assert {a.action for a in removed} == {"removed"}
    assert json.loads((home / ".claude.json").read_text()) == {"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}
    assert "assay" not in (home / ".codex/config.toml").read_text() and "[mcp_servers.other]" in (home / ".codex/config.toml").read_text()
    assert {a.action for a in apply(home, None)} == {"absent"}


def test_brief_is_byte_stable_changes_with_the_code_and_keeps_corrections(project: Path) -> None:
    from assay.flows.index import run_index
    from assay.stages.query.brief import add_correction, refresh
    from assay.stages.index.store import Catalog

    run_index(str(project))
    catalog = Catalog(project)
    first, wrote, _ = refresh(project, catalog, catalog.files())
    again, rewrote, _ = refresh(project, catalog, catalog.files())
    assert wrote and not rewrote and first == again
    assert "## Purpose" in first and "## Key classes (most used)" in first and "`pkg/`" in first
    add_correction(project, "Retries must always go through retry_call.")
    corrected, _, _ = refresh(project, catalog, catalog.files())
    assert corrected.endswith("- Retries must always go through retry_call.\n")
    (project / "pkg" / "billing.py").write_text('"""Invoices and payments."""\n\n\nclass Invoice:\n    """An invoice."""\n')
    run_index(str(project))
    changed, rewrote, _ = refresh(project, catalog, catalog.files())
    assert rewrote and "`pkg.billing`" not in changed and "Invoice" in changed
    assert changed.endswith("- Retries must always go through retry_call.\n")
    out = CliRunner().invoke(app, ["brief", str(project)])
    assert out.exit_code == 0 and out.output.strip() == changed.strip()
    for empty in ("", "   "):  # an empty correction is refused alike, not silently dropped
        out = CliRunner().invoke(app, ["brief", str(project), "--correct", empty])
        assert out.exit_code == 2 and "the correction is empty" in out.output
    add_correction(project, "line one\n## Purpose\nfake")  # kept verbatim, inside its item: no new heading
    corrected, _, _ = refresh(project, catalog, catalog.files())
    assert corrected.endswith("- line one\n  ## Purpose\n  fake\n") and corrected.count("\n## Purpose") == 1


def test_brief_rewritten_by_a_loopback_ollama_once_per_change_with_a_ledger_row(project: Path) -> None:
    from assay.flows.index import run_index
    from assay.stages.query.brief import add_correction, run_brief
    from assay.stages.query.ledger import summary
    from tests.fakes import FakeOllama

    run_index(str(project))
    add_correction(project, "Retries must always go through retry_call.")
    with FakeOllama(answer="# Rewritten brief\n\nShort and clear.") as ollama:
        settings = Settings(ollama_host=ollama.url)
        text, wrote = run_brief(project, settings, "ollama")
        again, rewrote = run_brief(project, settings, "ollama")
        calls = [b for b in ollama.bodies("/api/chat")]
    assert wrote and not rewrote and text == again and len(calls) == 1
    assert text.startswith("# Rewritten brief") and text.endswith("- Retries must always go through retry_call.\n")
    assert "## Purpose" in calls[0]["messages"][-1]["content"]  # the model saw the deterministic brief
    assert "Retries must" not in calls[0]["messages"][-1]["content"]  # corrections never pass through it
    rows = {(r["backend"], r["purpose"]): r for r in summary(project)}
    assert rows[("ollama", "brief")]["calls"] == 1 and rows[("ollama", "brief")]["prompt_tokens"] > 0
    with pytest.raises(Exception, match="local mode: the cloud writer is not allowed"):
        run_brief(project, Settings(), "cloud")

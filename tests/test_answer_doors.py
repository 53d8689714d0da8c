"""The same answer through every door: `search --json`/`--max-tokens`/`--outline` keep the degraded-retrieval note and
the index line the MCP tool gives; `ask`'s trust and guidance are data (--json, MCP structured content), not only
prose; `missing:` advice names definitions, not files or parameters; a judge failure hitting every batch is said once;
each door's truncation line names its own budget."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import mcp_server as m
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.artifacts import Candidate, Judgment, PassageScores, RankedPassage, Selection, Thresholds
from assay.stages.query.gaps import missing_lines
from assay.stages.query.judge.llm import merge_batches

runner = CliRunner()


@pytest.fixture()
def dense_only(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project indexed, then its BM25 index removed: search falls back to dense only and says so."""
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    run_index(str(project))
    shutil.rmtree(project / ".assay" / "lexical")
    return project


def _mcp(tool, *args, **kwargs):
    res = asyncio.run(tool(*args, None, **kwargs))
    assert not res.is_error, res.content[0].text
    return res.content[0].text, res.structured_content


# 2: search's degraded retrieval and freshness in every format

def test_search_json_holds_what_the_mcp_tool_holds_note_freshness_and_why(dense_only: Path) -> None:
    res = runner.invoke(app, ["search", "exponential backoff delays", str(dense_only), "-k", "3", "--json"])
    assert res.exit_code == 0, res.output
    cli = json.loads(res.stdout)
    _, mcp = _mcp(m.search, "exponential backoff delays", str(dense_only), k=3)
    assert list(cli) == list(mcp) == ["query", "results", "note", "freshness"]
    assert "BM25 index" in cli["note"] and "dense only" in cli["note"] and "assay index" in cli["note"]
    assert mcp["note"] == m.mcp_words(cli["note"])  # the same note, in the MCP door's terms
    assert cli["freshness"] == mcp["freshness"] and cli["freshness"]["indexed_at"]
    assert cli["results"] == mcp["results"]  # one row shape: rank, score, why and the candidate's fields
    assert cli["results"][0]["entity"] == "backoff_delays" and cli["results"][0]["why"]
    assert cli["results"][0]["bm25"] is None and cli["results"][0]["rank"] == 1


@pytest.mark.parametrize("budget", [["--max-tokens", "200"], ["--outline"]])
def test_budgeted_and_outline_search_text_keep_the_note_and_index_lines(dense_only: Path, budget: list[str]) -> None:
    res = runner.invoke(app, ["search", "exponential backoff delays", str(dense_only), "-k", "3", *budget])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("1. ") and "note:" not in res.stdout  # rows on stdout, as the plain text's
    assert "note: the BM25 index" in res.stderr and "index: written" in res.stderr


def test_mcp_search_text_prints_a_dash_for_a_missing_score_as_the_cli_does(dense_only: Path) -> None:
    text, _ = _mcp(m.search, "exponential backoff delays", str(dense_only), k=2)
    first = text.splitlines()[0]
    assert "bm25=-" in first and "None" not in text, text
    cli = runner.invoke(app, ["search", "exponential backoff delays", str(dense_only), "-k", "2"]).stdout
    assert cli.splitlines()[0].split(" score=")[0] == first.split(" why:")[0]  # the same row up to its score


def test_search_truncation_names_each_doors_budget(indexed_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(indexed_project.parent))
    cli = runner.invoke(app, ["search", "retry backoff", str(indexed_project), "-k", "3", "--max-tokens", "1"]).stdout
    assert "ask with a larger --max-tokens" in cli, cli
    text, _ = _mcp(m.search, "retry backoff", str(indexed_project), k=3, max_tokens=1)
    assert "ask with a larger max_tokens" in text and "--" not in text, text


# 3, 7: ask's guidance as data; the truncation line in each door's terms

def _guidance_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("Guidance:")
    end = lines.index("Sources:", start)
    return [line.strip() for line in lines[start + 1:end]]


def test_ask_json_and_mcp_structured_content_carry_the_guidance_the_text_shows(indexed_project: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(indexed_project.parent))
    q = "How does frobnicate_widget_cache call merge_cookies?"  # a name the index lacks: gap and action lines
    res = runner.invoke(app, ["ask", q, str(indexed_project), "--json", "--max-tokens", "0"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["trust"] == "medium" and "index lacks" in report["action"]
    assert any(g == "gap: not found in the index: frobnicate_widget_cache" for g in report["guidance"]), report["guidance"]
    shown = _guidance_section(report["text"])
    assert shown == [f"trust: {report['trust']}", f"action: {report['action']}", *report["guidance"]]
    text, data = _mcp(m.ask, q, str(indexed_project), max_tokens=0)
    assert "text" not in data  # the structured content has the fields, not the prose
    assert (data["trust"], data["action"], data["guidance"]) == (report["trust"], report["action"], report["guidance"])
    assert _guidance_section(text) == shown


def test_ask_truncation_line_names_the_cli_flags_in_the_cli_and_the_arguments_in_mcp(indexed_project: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(indexed_project.parent))
    q = "How does retry_call back off between attempts?"
    cli = runner.invoke(app, ["ask", q, str(indexed_project), "--max-tokens", "60"]).stdout.strip().splitlines()[-1]
    assert "more report line(s) not shown" in cli and "--max-tokens" in cli and "--json" in cli, cli
    mcp = _mcp(m.ask, q, str(indexed_project), max_tokens=60)[0].splitlines()[-1]
    assert mcp.endswith("ask again with a larger max_tokens (0: no limit)"), mcp  # structured content fits max_tokens too


# 4: missing advice

TH = Thresholds(relevance_min=0.2, evidence_min=0.1, injection_max=0.5, contradicts_min=0.5, answerable_min=0.9, top_k=5)


def _cand(cid: str, entity: str, body: str, kind: str = "function", file: str = "pkg/mod.py", params=()) -> Candidate:
    return Candidate(id=cid, file=file, start_line=1, end_line=body.count("\n") + 1, entity=entity, kind=kind, body=body,
                     params=list(params), fused_rank=1, fused_score=0.01)


def _kept(*cands: Candidate) -> Selection:
    scores = PassageScores(relevance=0.8, evidence=0.5, contradicts=0, injection=0)
    return Selection(included=[RankedPassage(candidate=c, scores=scores, verdict="include", rank_score=0.8) for c in cands],
                     dropped=[], thresholds=TH)


def test_missing_never_calls_a_file_or_a_parameter_a_missing_definition() -> None:
    local = Judgment(backend="local", scores={})
    outline = _cand("f", "pkg/_urlparse.py", "def urlparse(url):\n    return parse(url)\n", kind="file", file="pkg/_urlparse.py")
    fn = _cand("u", "urlparse", "def urlparse(url):\n    return parse(url)  # see _urlparse.py\n", file="pkg/_urlparse.py")
    lines = missing_lines("What happens in _urlparse.py urlparse when a port is out of range?", _kept(outline, fn), local)
    assert lines == [], lines  # was: "defines _urlparse.py ... assay search \"py\""
    init = _cand("i", "Client.__init__", "def __init__(self, max_redirects=DEFAULT):\n    self.max_redirects = max_redirects\n",
                 kind="method", params=["self", "max_redirects"])
    assert missing_lines("Why does Client.__init__ default max_redirects to 50?", _kept(init), local) == []


def test_missing_searches_the_name_as_asked_and_a_parameter_elsewhere_is_no_member() -> None:
    local = Judgment(backend="local", scores={})
    caller = _cand("c", "fetch", "def fetch(r, json=None):\n    return r.json()\n", params=["r", "json"])
    lines = missing_lines("Does Response.json take an encoding?", _kept(caller), local)
    assert lines == ['missing: no included passage defines Response.json; they only use or mention it '
                     '(look up its definition: assay search "Response.json")'], lines


# 6: one failure per distinct reason

def test_a_judge_failure_repeated_in_every_batch_is_said_once_with_its_count() -> None:
    down = "Ollama is not reachable at http://127.0.0.1:9 (ConnectionError)"
    parts = [({}, {}, down), ({}, {}, "judge gave no valid scores for 2 of 5 passages"), ({}, {}, down), ({}, {}, down)]
    judgment = merge_batches("ollama", "m", parts, calls=4)
    assert judgment.failure == f"{down} (3 batches); judge gave no valid scores for 2 of 5 passages"
    assert merge_batches("ollama", "m", [({}, {}, down)], calls=1).failure == down

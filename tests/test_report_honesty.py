"""What a report claims when something did not happen: a flag with a typo, a judge that scored nothing, a System One
judge that fell back to the local one."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.config import Settings
from assay.stages.query.judge.backends import run_judge
from tests.fakes import FakeSystemOne, SilentServer
from tests.test_systemone import cand

runner = CliRunner()


@pytest.mark.parametrize("flag, value", [("--synth", "olama"), ("--synth", "systemone"), ("--route", "bogus")])
def test_a_bad_flag_value_is_an_error_like_its_variable(indexed_project: Path, flag: str, value: str) -> None:
    res = runner.invoke(app, ["ask", "how are cookies merged?", str(indexed_project), flag, value])
    assert res.exit_code == 2
    assert res.output.startswith(f"error: {flag}: Input should be") and value in res.output  # was a silent fallback


def test_a_good_flag_value_still_applies(indexed_project: Path) -> None:
    res = runner.invoke(app, ["ask", "how are cookies merged?", str(indexed_project), "--top-k", "2", "--json"])
    assert res.exit_code == 0 and '"top_k": 2' in res.output


def test_a_judge_that_scored_nothing_claims_no_coverage(indexed_project: Path) -> None:
    from assay.flows.query import run_query

    with SilentServer() as hung:
        report = run_query(str(indexed_project), "how are cookies merged?",
                           Settings(judge="ollama", ollama_host=hung.url, llm_timeout=1))
    assert report.selection.fail_open and report.selection.included
    assert report.coverage == 0  # was min(3, passages kept): "coverage: 3/3" from a judge that judged nothing
    from assay.stages.query.report import guidance

    assert any("the judge did not score every passage" in line for line in guidance(report))


def test_after_a_system_one_fallback_the_local_judge_line_counts_no_calls() -> None:
    pool = [cand(i, f"f{i}") for i in range(2)]
    with FakeSystemOne(script=[500, 500, 500]) as stub:
        j = run_judge("systemone", "q", pool, Settings(judge="systemone", systemone_base_url=stub.url,
                                                       systemone_timeout=5.0))
    assert j.backend == "local" and j.calls == 0  # the local judge makes none (was: "judge: local, 3 call(s)")
    assert [u.backend for u in j.usage] == ["systemone"] * 3 and "3 System One call(s)" in j.notes[-1]  # a row per request

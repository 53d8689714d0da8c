"""A thresholds file's `top_k` applies unless the user chose one (ASSAY_TOP_K, --top-k): it used to be refused."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.config import Settings
from assay.stages.query.threshold import default_thresholds

runner = CliRunner()


def _file(tmp_path: Path, table: dict) -> str:
    path = tmp_path / "th.json"
    path.write_text(json.dumps(table))
    return str(path)


def test_the_file_s_top_k_applies_when_none_was_chosen_and_yields_to_a_chosen_one(tmp_path: Path) -> None:
    path = _file(tmp_path, {"local": {"top_k": 2}, "default": {"top_k": 7}})
    assert default_thresholds("local", path, None).top_k == 2
    assert default_thresholds("ollama", path, None).top_k == 7
    assert default_thresholds("local", path, 4).top_k == 4
    assert default_thresholds("local", None, None).top_k == 5


def test_settings_say_whether_top_k_was_chosen(monkeypatch) -> None:
    monkeypatch.delenv("ASSAY_TOP_K", raising=False)
    assert Settings().chosen_top_k() is None
    monkeypatch.setenv("ASSAY_TOP_K", "3")
    assert Settings().chosen_top_k() == 3


def test_ask_keeps_as_many_as_the_file_says_unless_top_k_is_given(indexed_project: Path, tmp_path: Path) -> None:
    path = _file(tmp_path, {"top_k": 2})
    env = {"ASSAY_THRESHOLDS": path, "ASSAY_ORCHESTRATION": "direct"}

    def included(*flags: str) -> int:
        res = runner.invoke(app, ["ask", "how are cookies merged?", str(indexed_project), "--json", *flags], env=env)
        assert res.exit_code == 0, res.output
        return len(json.loads(res.output)["selection"]["included"])

    assert included() == 2
    assert included("--top-k", "3") == 3

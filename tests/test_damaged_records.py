"""A damaged usage ledger or judgment snapshot (a crash of an older version, a bad disk) costs only itself."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.audit import stats as audit_stats
from assay.stages.audit.snapshots import judgments_dir, write_rows
from assay.stages.core.artifacts import LLMCall
from assay.stages.query.ledger import record_calls, summary, usage_dir


def _call() -> LLMCall:
    return LLMCall(backend="ollama", model="m", purpose="judge", prompt_tokens=10, completion_tokens=2, latency_s=0.5)


def test_a_damaged_ledger_file_is_left_out_and_named_and_the_rest_still_counts(tmp_path: Path) -> None:
    (tmp_path / ".assay").mkdir()
    kept = record_calls(tmp_path, "q1", [_call()], {})
    assert kept is not None and not list(kept.parent.glob(".*"))  # written whole, no temporary file left
    (kept.parent / "crashed.parquet").write_bytes(b"")
    unreadable: list[Path] = []
    rows = summary(tmp_path, unreadable)
    assert [r["calls"] for r in rows] == [1] and unreadable == [kept.parent / "crashed.parquet"]
    out = CliRunner().invoke(app, ["usage", str(tmp_path)])
    assert out.exit_code == 0 and "ollama | m | judge | 1" in out.output and "left out" in out.output
    assert usage_dir(tmp_path).is_dir()


def test_a_damaged_snapshot_is_left_out_and_named(tmp_path: Path) -> None:
    when = datetime(2026, 12, 1, tzinfo=timezone.utc)
    row = {"query_id": "q1", "query": "how?", "timestamp": when, "judge_backend": "local", "passage_id": "p1",
           "relevance": 0.5, "evidence": 0.5, "contradicts": 0.0, "injection": 0.0, "verdict": "include"}
    write_rows(tmp_path, [row], "q1", when)
    damaged = judgments_dir(tmp_path) / "date=2026-12-01" / "garbage.parquet"
    damaged.write_text("not parquet")
    table = audit_stats.load_snapshots(judgments_dir(tmp_path))
    assert table.num_rows == 1 and audit_stats.unreadable_snapshots(table) == [str(damaged)]
    assert audit_stats.unreadable_snapshots(audit_stats.load_snapshots(tmp_path / "nothing")) == []

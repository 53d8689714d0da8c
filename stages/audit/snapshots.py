"""Audit snapshots: every query appends one Parquet file of its judgments.

Layout: <workspace>/.assay/judgments/date=YYYY-MM-DD/<timestamp>-<query_id>.parquet
Schema version 1, one row per judged passage (see SNAPSHOT_SCHEMA and the README).
"""

from __future__ import annotations

import io
import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from assay.stages.core.artifacts import Judgment, QueryReport, Selection
from assay.stages.core.workspace import state_dir

SNAPSHOT_VERSION = 1

SNAPSHOT_SCHEMA = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("query_id", pa.string()),
        ("query", pa.string()),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("judge_backend", pa.string()),
        ("judge_model", pa.string()),
        ("relevance_min", pa.float64()),
        ("evidence_min", pa.float64()),
        ("injection_max", pa.float64()),
        ("contradicts_min", pa.float64()),
        ("top_k", pa.int32()),
        ("fail_open", pa.bool_()),
        ("passage_id", pa.string()),
        ("file", pa.string()),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("entity", pa.string()),
        ("kind", pa.string()),
        ("language", pa.string()),
        ("body", pa.string()),
        ("distance", pa.float64()),
        ("bm25", pa.float64()),
        ("fused_rank", pa.int32()),
        ("fused_score", pa.float64()),
        ("relevance", pa.float64()),
        ("evidence", pa.float64()),
        ("contradicts", pa.float64()),
        ("injection", pa.float64()),
        ("verdict", pa.string()),
        ("drop_reason", pa.string()),
        ("rank", pa.int32()),
        ("status", pa.string()),
    ]
)


def arrow_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """The rows as a table of `schema`, the same as `pa.Table.from_pylist` gives, built by Arrow's own JSON reader:
    `from_pylist` imports pandas to ask whether the list is a pandas object (~0.35 s of every cold `assay ask`,
    which writes this snapshot). Non-finite floats become nulls (JSON has no NaN)."""
    if not rows:
        return schema.empty_table()
    data = "\n".join(json.dumps({k: _json_value(v) for k, v in row.items()}, allow_nan=False) for row in rows).encode()
    parse = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    read = pa_json.ReadOptions(use_threads=False, block_size=max(len(data) + 1, 1 << 20))  # one block: any row size
    return pa_json.read_json(io.BytesIO(data), read_options=read, parse_options=parse).select(schema.names)


def _json_value(value: object) -> object:
    if isinstance(value, datetime):  # Arrow's JSON reader takes ISO 8601 with milliseconds and a Z
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def judgments_dir(root: Path) -> Path:
    return state_dir(root) / "judgments"


def snapshot_rows(report: QueryReport, when: datetime) -> list[dict]:
    return selection_rows(report.query_id, report.query, report.judgment, report.selection, report.status, when)


def selection_rows(
    query_id: str, query: str, judgment: Judgment, selection: Selection, status: str, when: datetime
) -> list[dict]:
    th = selection.thresholds
    rows = []
    for rp in selection.included + selection.dropped:
        c, s = rp.candidate, rp.scores
        rows.append({
            "schema_version": SNAPSHOT_VERSION, "query_id": query_id, "query": query, "timestamp": when,
            "judge_backend": judgment.backend, "judge_model": judgment.model,
            "relevance_min": th.relevance_min, "evidence_min": th.evidence_min, "injection_max": th.injection_max,
            "contradicts_min": th.contradicts_min, "top_k": th.top_k, "fail_open": selection.fail_open,
            "passage_id": c.id, "file": c.file, "start_line": c.start_line, "end_line": c.end_line,
            "entity": c.entity, "kind": c.kind, "language": c.language, "body": c.body,
            "distance": c.distance, "bm25": c.bm25, "fused_rank": c.fused_rank, "fused_score": c.fused_score,
            "relevance": s.relevance if s else None, "evidence": s.evidence if s else None,
            "contradicts": s.contradicts if s else None, "injection": s.injection if s else None,
            "verdict": rp.verdict, "drop_reason": rp.drop_reason, "rank": rp.final_rank, "status": status,
        })
    return rows


def write_snapshot(root: Path, report: QueryReport, when: datetime | None = None) -> Path:
    when = when or datetime.now(timezone.utc)
    return write_rows(root, snapshot_rows(report, when), report.query_id, when)


def write_rows(root: Path, rows: list[dict], query_id: str, when: datetime, tag: str = "") -> Path:
    """Write atomically (temporary name, then rename) so a reader never sees half a file."""
    part = judgments_dir(root) / f"date={when:%Y-%m-%d}"
    part.mkdir(parents=True, exist_ok=True)
    table = arrow_table(rows, SNAPSHOT_SCHEMA)
    path = part / f"{when:%H%M%S%f}-{query_id}{tag}.parquet"
    tmp = part / f".{path.name}.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path

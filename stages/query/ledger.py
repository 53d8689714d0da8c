"""Usage ledger: every model call an answer made (judge, writer, brief), with tokens, cache hits, latency
and an estimated cost, kept as Parquet beside the judgment snapshots and summarised per day and backend.

Costs use `ASSAY_PRICES` (USD per million tokens: input, output, cached input, per model or per backend,
such as `systemone`, whose server names the model it used); a model without a price costs 0, and local
Ollama calls are free. Tokens are what the backend reported, never estimated.
"""

from __future__ import annotations

import os
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from assay.stages.core.artifacts import LLMCall, QueryReport
from assay.stages.core.config import parse_prices
from assay.stages.core.workspace import state_dir

SCHEMA = pa.schema([
    ("day", pa.string()), ("at", pa.string()), ("query_id", pa.string()), ("purpose", pa.string()),
    ("backend", pa.string()), ("model", pa.string()), ("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()),
    ("cached_tokens", pa.int64()), ("latency_s", pa.float64()), ("ok", pa.bool_()), ("cost_usd", pa.float64()),
])


def usage_dir(root: Path) -> Path:
    return state_dir(root) / "usage"


def prices_from(setting: str | None) -> dict[str, list[float]]:
    """The price table (Settings checks it when they load; this names the variable for a value set since)."""
    try:
        return parse_prices(setting)
    except ValueError as exc:
        raise ValueError(f"ASSAY_PRICES: {exc}") from None


def cost(call: LLMCall, prices: dict[str, list[float]]) -> float:
    if call.backend == "ollama":
        return 0.0
    price = prices.get(call.model) or prices.get(call.backend)  # a backend's price covers models it names itself
    if not price:
        return 0.0
    inp, out = price[0], price[1]
    cached = price[2] if len(price) > 2 else inp
    fresh = max(0, call.prompt_tokens - call.cached_tokens)
    return round((fresh * inp + call.cached_tokens * cached + call.completion_tokens * out) / 1e6, 6)


def rows(query_id: str, calls: list[LLMCall], prices: dict[str, list[float]], now: datetime | None = None) -> list[dict]:
    now = now or datetime.now(timezone.utc)
    return [{"day": now.strftime("%Y-%m-%d"), "at": now.isoformat(timespec="seconds"), "query_id": query_id, **c.model_dump(),
             "cost_usd": cost(c, prices)} for c in calls]


def record(root: Path, report: QueryReport, prices: dict[str, list[float]]) -> Path | None:
    """Write one answer's model calls (none: nothing written)."""
    guard = report.guard.usage if report.guard else []
    return record_calls(root, report.query_id, [*report.judgment.usage, *report.answer.usage, *guard], prices)


def record_calls(root: Path, key: str, calls: list[LLMCall], prices: dict[str, list[float]]) -> Path | None:
    """Write model calls under one key (a query id, or `brief-...`) into the day's partition."""
    if not calls:
        return None
    data = rows(key, calls, prices)
    folder = usage_dir(root) / f"date={data[0]['day']}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.parquet"
    tmp = folder / f".{key}.parquet.tmp"  # written whole, then renamed: a crash never leaves half a file to read
    pq.write_table(pa.Table.from_pylist(data, schema=SCHEMA), tmp)
    os.replace(tmp, path)
    return path


def summary(root: Path, unreadable: list[Path] | None = None) -> list[dict]:
    """Per day, backend, model and purpose: calls, tokens, cache hits, cost, median latency. A damaged file (a
    crash of an older version, a bad disk) is left out, and added to `unreadable` when given, not fatal to the rest."""
    folder = usage_dir(root)
    files = sorted(p for p in folder.rglob("*.parquet") if not p.name.startswith(".")) if folder.exists() else []
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for f in files:
        try:
            rows_read = pq.read_table(f, schema=SCHEMA).to_pylist()
        except (OSError, pa.ArrowException):
            if unreadable is not None:
                unreadable.append(f)
            continue
        for r in rows_read:
            groups[(r["day"], r["backend"], r["model"], r["purpose"])].append(r)
    out = []
    for (day, backend, model, purpose), items in sorted(groups.items()):
        # answered calls only: a failed row (a retried request, a timeout) records no latency, and its 0 pulled the
        # median of calls that did take time to 0.00; no answered call: None, shown as `-`
        lat = sorted(r["latency_s"] for r in items if r["ok"])
        out.append({"day": day, "backend": backend, "model": model, "purpose": purpose, "calls": len(items),
                    "failed": sum(not r["ok"] for r in items), "prompt_tokens": sum(r["prompt_tokens"] for r in items),
                    "completion_tokens": sum(r["completion_tokens"] for r in items),
                    "cached_tokens": sum(r["cached_tokens"] for r in items),
                    "cost_usd": round(sum(r["cost_usd"] for r in items), 6), "latency_p50_s": lat[len(lat) // 2] if lat else None})
    return out


def render(table: list[dict]) -> str:
    if not table:
        return "no model calls recorded yet (the local judge and the extractive writer make none)"
    lines = ["day | backend | model | purpose | calls | prompt | completion | cached | cost USD | p50 s"]
    lines += [f"{r['day']} | {r['backend']} | {r['model']} | {r['purpose']} | {r['calls']}" + (f" ({r['failed']} failed)" if r["failed"] else "")
              + f" | {r['prompt_tokens']} | {r['completion_tokens']} | {r['cached_tokens']} | {r['cost_usd']:.4f} | " + _seconds(r["latency_p50_s"])
              for r in table]
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    """A median latency; `-` for a group with no answered call (nothing was timed)."""
    return "-" if value is None else f"{value:.2f}"

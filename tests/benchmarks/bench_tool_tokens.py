"""Tokens an agent pays to load Assay's MCP tool list (names, descriptions, input schemas), per tool.

    python -m tests.benchmarks.bench_tool_tokens

Counted with the shipped tokenizer (stages.query.budget.count_tokens) over the JSON the server sends.
"""

from __future__ import annotations

import asyncio
import json

from assay.stages.query.budget import count_tokens


def main() -> None:
    from assay.flows.mcp_server import server

    tools = asyncio.run(server.list_tools())
    rows = []
    for t in tools:
        payload = json.dumps({"name": t.name, "description": t.description, "inputSchema": t.input_schema})
        rows.append((count_tokens(payload), t.name))
    for n, name in sorted(rows, reverse=True):
        print(f"{name:18s} {n:5d}")
    print(f"{'all ' + str(len(rows)) + ' tools':18s} {sum(n for n, _ in rows):5d}")


if __name__ == "__main__":
    main()

"""Load against one MCP server: 50 concurrent searches and 10 concurrent asks, loopback only, bounded."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from mcp import Client

from tests.conftest import FIXTURES
from tests.test_mcp import call, params, wait_indexed

QUERIES = [("retry_call backoff", "retry_call"), ("merge cookies jar", "merge_cookies"),
           ("session send request", "Session.send"), ("RetryError gave up", "RetryError"),
           ("backoff delays exponential", "backoff_delays")]


def test_concurrent_search_and_ask(tmp_path: Path, ledger) -> None:
    ws = tmp_path / "roots" / "load"
    shutil.copytree(FIXTURES / "project", ws)

    async def scenario() -> None:
        async with Client(params(ws.parent, tmp_path / "home")) as client:
            await call(client, "index_workspace", path=str(ws))
            await wait_indexed(client, str(ws))
            searches = [call(client, "search", query=QUERIES[i % 5][0], path=str(ws), k=3) for i in range(50)]
            asks = [call(client, "ask", question=f"how does {QUERIES[i % 5][1]} work?", path=str(ws)) for i in range(10)]
            results = await asyncio.wait_for(asyncio.gather(*searches, *asks), timeout=300)
            for i, res in enumerate(results[:50]):
                assert not res.is_error, res.content[0].text
                top = [r["entity"] for r in res.structured_content["results"]]
                assert QUERIES[i % 5][1] in top, (QUERIES[i % 5], top)
            for i, res in enumerate(results[50:]):
                assert not res.is_error, res.content[0].text
                included = [p["candidate"]["entity"] for p in res.structured_content["selection"]["included"]]
                assert QUERIES[i % 5][1] in included
            ledger.check()

    asyncio.run(scenario())

"""End to end: spawn `assay mcp` and drive it with the SDK's own stdio client."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import FIXTURES

ASSAY = str(Path(sys.executable).with_name("assay"))


def params(cwd: Path, home: Path, **env: str) -> StdioServerParameters:
    base = {k: v for k, v in os.environ.items() if k.startswith(("PREFECT_", "PATH", "HOME", "LANG"))}
    base.update({"ASSAY_ORCHESTRATION": "direct", "ASSAY_HOME": str(home), "ANONYMIZED_TELEMETRY": "False"})
    base.update(env)
    return StdioServerParameters(command=ASSAY, args=["mcp"], cwd=str(cwd), env=base)


async def call(client: Client, tool: str, **args):
    res = await client.call_tool(tool, args, read_timeout_seconds=240)
    return res


async def wait_indexed(client: Client, path: str, timeout: float = 240) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = (await call(client, "index_status", path=path)).structured_content
        if st["state"] in ("done", "failed"):
            return st
        await asyncio.sleep(0.5)
    raise AssertionError("indexing did not finish")


@pytest.fixture()
def roots(tmp_path: Path) -> Path:
    base = tmp_path / "roots"
    for name in ("alpha", "beta"):
        shutil.copytree(FIXTURES / "project", base / name)
    # same entity names in both workspaces, different behaviour
    (base / "beta" / "pkg" / "retry.py").write_text(
        'def retry_call(func, attempts=1):\n    """Beta never backs off: one attempt, no sleep."""\n    return func()\n')
    (tmp_path / "outside").mkdir()
    return base


def test_mcp_tools_end_to_end(roots: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Client(params(roots, tmp_path / "home")) as client:
            assert client.server_info is not None and client.server_info.name == "assay" and client.server_info.version
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == {"index_workspace", "index_status", "ask", "search", "get_entity", "list_workspaces",
                             "forget_workspace", "remember", "notes", "callers", "callees", "references", "impact",
                             "changed_symbols", "history", "brief", "update_brief", "usage"}
            alpha, beta = str(roots / "alpha"), str(roots / "beta")
            started = await call(client, "index_workspace", path=alpha)
            assert started.structured_content["state"] == "running"
            await call(client, "index_workspace", path=beta)
            done = await wait_indexed(client, alpha)
            assert done["state"] == "done", done  # the status carries the run's last error when it failed
            assert done["entities"] > 10 and done["files_done"] == done["files_total"] == 5
            await wait_indexed(client, beta)

            found = await call(client, "search", query="retry_call exponential backoff", path=alpha, k=3)
            rows = found.structured_content["results"]
            assert rows[0]["entity"] == "retry_call" and rows[0]["file"] == "pkg/retry.py"
            assert "pkg/retry.py:17-26 [retry_call]" in found.content[0].text

            answer = await call(client, "ask", question="How does retry_call back off between attempts?", path=alpha)
            assert not answer.is_error
            assert "Assessment:" in answer.content[0].text and "pkg/retry.py:17" in answer.content[0].text
            assert answer.structured_content["status"] in ("supported", "partial")
            assert answer.structured_content["selection"]["included"][0]["candidate"]["entity"] == "retry_call"

            span = await call(client, "get_entity", path=alpha, file="pkg/retry.py", line=20)
            assert span.structured_content["entity"] == "retry_call"
            assert span.structured_content["source"].startswith("def retry_call(func")
            assert span.structured_content["start_line"] == 17 and span.structured_content["end_line"] == 26
            by_name = await call(client, "get_entity", path=alpha, name="Session.send")
            assert by_name.structured_content["source"].lstrip().startswith("def send(")

            called = await call(client, "callers", path=alpha, name="retry_call")
            assert not called.is_error and called.structured_content["targets"][0].startswith("retry_call pkg/retry.py:17")
            assert "site(s)" in called.content[0].text
            unknown = await call(client, "impact", path=alpha, name="NoSuchThing")
            assert "no definition named" in unknown.content[0].text

            # isolation: the same name answers from each workspace's own code
            beta_span = await call(client, "get_entity", path=beta, name="retry_call")
            assert "Beta never backs off" in beta_span.structured_content["source"]
            beta_hits = (await call(client, "search", query="retry_call", path=beta, k=5)).structured_content["results"]
            assert beta_hits[0]["entity"] == "retry_call" and beta_hits[0]["signature"] == "def retry_call(func, attempts=1)"
            alpha_answer = await call(client, "ask", question="what does retry_call do?", path=alpha)
            assert "Beta never backs off" not in alpha_answer.content[0].text

            note = "Decision: all HTTP retries go through retry_call; never sleep inline."
            await call(client, "remember", path=alpha, note=note)
            listed = await call(client, "notes", path=alpha)
            assert listed.structured_content["notes"][0]["note"] == note
            hits = (await call(client, "search", query="decision HTTP retries sleep inline", path=alpha, k=3)).structured_content
            assert any(r["kind"] == "note" for r in hits["results"])
            assert (await call(client, "notes", path=beta)).structured_content["notes"] == []

            ws = (await call(client, "list_workspaces")).structured_content["workspaces"]
            assert ws == sorted([alpha, beta])

            refused = await call(client, "search", query="x", path=str(tmp_path / "outside"))
            assert refused.is_error and "outside the allowed roots" in refused.content[0].text
            escape = await call(client, "search", query="x", path=alpha + "/../../outside")
            assert escape.is_error and "outside the allowed roots" in escape.content[0].text
            (roots / "alpha" / "link-out").symlink_to(tmp_path / "outside", target_is_directory=True)
            via_link = await call(client, "ask", question="x", path=alpha + "/link-out")
            assert via_link.is_error and "outside the allowed roots" in via_link.content[0].text
            traversal = await call(client, "get_entity", path=alpha, file="../beta/pkg/retry.py", line=1)
            assert traversal.is_error and "escapes the workspace" in traversal.content[0].text

            gone = await call(client, "forget_workspace", path=beta)
            assert gone.structured_content["forgotten"]
            assert (await call(client, "list_workspaces")).structured_content["workspaces"] == [alpha]
            await call(client, "index_workspace", path=beta)  # a forgotten workspace can be indexed again
            assert (await wait_indexed(client, beta))["state"] == "done"
            again = (await call(client, "search", query="retry_call", path=beta, k=1)).structured_content["results"]
            assert again[0]["entity"] == "retry_call"

    asyncio.run(scenario())


def test_two_server_processes_share_one_workspace(roots: Path, tmp_path: Path) -> None:
    """Two IDEs on one workspace: concurrent index and query, no errors, no lost entities."""
    alpha = str(roots / "alpha")
    for i in range(30):
        (roots / "alpha" / "pkg" / f"extra_{i}.py").write_text(f'def extra_function_{i}(x):\n    """Extra {i}."""\n    return x + {i}\n')

    async def scenario() -> None:
        async with Client(params(roots, tmp_path / "h1")) as one, Client(params(roots, tmp_path / "h2")) as two:
            await call(one, "index_workspace", path=alpha)
            await wait_indexed(one, alpha)
            (roots / "alpha" / "pkg" / "late.py").write_text("def late_addition():\n    return 'late'\n")
            await call(one, "index_workspace", path=alpha)
            await call(two, "index_workspace", path=alpha)

            async def queries(client: Client) -> list:
                out = []
                for q in ("retry backoff", "merge cookies", "session send"):
                    out.append(await call(client, "search", query=q, path=alpha, k=3))
                out.append(await call(client, "ask", question="how are cookies merged?", path=alpha))
                return out

            results = await asyncio.gather(queries(one), queries(two), wait_indexed(one, alpha), wait_indexed(two, alpha))
            for res in results[0] + results[1]:
                assert not res.is_error, res.content[0].text
            assert results[2]["state"] == "done" and results[3]["state"] == "done", (results[2], results[3])
            names = set()
            for i in list(range(30)) + ["late"]:
                q = f"extra_function_{i}" if i != "late" else "late_addition"
                hits = (await call(two, "search", query=q, path=alpha, k=1)).structured_content["results"]
                names.add(hits[0]["entity"])
            assert names == {f"extra_function_{i}" for i in range(30)} | {"late_addition"}

    asyncio.run(scenario())

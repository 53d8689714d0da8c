"""The MCP server as IDE agents drive it: replies bounded by max_tokens (text and structured content), a notebook's
code without its outputs, strict and described tool schemas, unknown arguments refused, roots from the client (never
`/` by default), and an unknown prompt answered -32602 without a traceback."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path

import mcp_types
import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from assay.flows import mcp_server as m
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.query.budget import count_tokens
from tests.test_mcp import params
from tests.test_mcp_wire import _exchange


@pytest.fixture()
def allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("ASSAY_WATCH", "false")
    return tmp_path


def text(res) -> str:
    return res.content[0].text


def tokens(data) -> int:
    return count_tokens(json.dumps(data, ensure_ascii=False))


# agentmcp 3: get_entity is bounded, says where it stopped, and reads on


@pytest.fixture()
def big(allowed: Path) -> Path:
    ws = allowed / "big"
    ws.mkdir()
    lines = ["def huge(x):"] + [f"    x = x + {i}  # step number {i} adds padding text" for i in range(3000)]
    lines += ["    return x", "", "DATA = [" + ", ".join(str(i) for i in range(20000)) + "]", ""]
    (ws / "big.py").write_text("\n".join(lines))
    run_index(str(ws))
    return ws


def test_get_entity_pages_a_huge_function_within_max_tokens(big: Path) -> None:
    res = m.get_entity(str(big), name="huge")
    data, body = res.structured_content, text(res)
    assert not res.is_error and data["start_line"] == 1 and data["end_line"] == 3002
    assert count_tokens(body) <= m.ENTITY_TOKENS and tokens(data) <= m.ENTITY_TOKENS
    stop = data["shown_end_line"]
    assert 10 < stop < 3002 and data["more_lines"] == 3002 - stop
    assert body.splitlines()[-1] == data["cut"] and f"from_line {stop + 1}" in data["cut"]
    assert data["source"].splitlines()[-1] == f"    x = x + {stop - 2}  # step number {stop - 2} adds padding text"
    assert data["source"] in body  # the text and the structured content hold the same lines

    on = m.get_entity(str(big), name="huge", from_line=stop + 1).structured_content
    assert on["shown_start_line"] == stop + 1 and on["source"].startswith(f"    x = x + {stop - 1} ")
    last = m.get_entity(str(big), name="huge", from_line=3000, max_tokens=0).structured_content
    assert last["source"].endswith("    return x") and last["more_lines"] == 0 and "cut" not in last
    small = m.get_entity(str(big), name="huge", max_tokens=300)
    assert count_tokens(text(small)) <= 300 and tokens(small.structured_content) <= 300
    past = m.get_entity(str(big), name="huge", from_line=5000)
    assert past.is_error and "from_line 5000 is outside huge (big.py:1-3002)" in text(past)


def test_get_entity_cuts_one_huge_line(big: Path) -> None:
    res = m.get_entity(str(big), name="DATA")
    assert not res.is_error and len(text(res)) < 5000, len(text(res))
    assert "more character(s) of this line cut" in res.structured_content["source"]


# datasci 1: a notebook's code, never its outputs


def _notebook(ws: Path) -> None:
    image = base64.b64encode(os.urandom(300_000)).decode()
    cells = [
        {"cell_type": "code", "execution_count": 1, "id": "a", "metadata": {},
         "outputs": [{"data": {"image/png": image, "text/plain": ["<Figure>"]}, "metadata": {},
                      "output_type": "display_data"}],
         "source": ["import math\n", "x = 1\n", "print(x)"]},
        {"cell_type": "code", "execution_count": 2, "id": "b", "metadata": {}, "outputs": [],
         "source": ["def train(data):\n", "    lr = 1e-3\n", "    return data * lr"]},
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (ws / "train.ipynb").write_text(json.dumps(nb, sort_keys=True, indent=1) + "\n")


def test_get_entity_on_a_notebook_shows_its_code_not_its_outputs(allowed: Path) -> None:
    ws = allowed / "nb"
    ws.mkdir()
    _notebook(ws)
    run_index(str(ws))
    raw = (ws / "train.ipynb").read_text().splitlines()
    code = next(i for i, t in enumerate(raw, start=1) if '"x = 1\\n"' in t)
    cell = m.get_entity(str(ws), file="train.ipynb", line=code).structured_content
    assert cell["source"] == "import math\nx = 1\nprint(x)", cell
    image = next(i for i, t in enumerate(raw, start=1) if '"image/png"' in t)  # outside any code: the file entity
    around = m.get_entity(str(ws), file="train.ipynb", line=image)
    body, data = text(around), around.structured_content
    assert not around.is_error and data["kind"] == "file" and data["shown_start_line"] == max(1, image - 10), body
    assert len(body) < 5000 and '"image/png"' not in body and raw[image - 1].split('"')[3][:40] not in body, body
    assert "notebook JSON and outputs, not code" in data["source"] and "def train(data):" in data["source"]
    assert data["source"] in body
    named = m.get_entity(str(ws), name="train").structured_content
    assert named["source"] == "def train(data):\n    lr = 1e-3\n    return data * lr", named["source"]


# agentmcp 6: search's and ask's structured content within max_tokens, the same rows as the text


@pytest.fixture()
def indexed(project: Path, allowed: Path) -> Path:
    run_index(str(project))
    return project


def test_search_structured_content_holds_the_rows_the_text_shows_within_max_tokens(indexed: Path) -> None:
    res = asyncio.run(m.search("retry session cookies", str(indexed), None, k=100, max_tokens=700))
    data, body = res.structured_content, text(res)
    assert count_tokens(body) <= 700 and tokens(data) <= 700
    shown = [r["rank"] for r in data["results"]]
    assert shown and all(f"\n{rank}. " in "\n" + body for rank in shown)
    assert f"\n{len(shown) + 1}. " not in "\n" + body
    assert data["not_shown"] > 0 and f"{data['not_shown']} more result(s) not shown" in body
    default = asyncio.run(m.search("retry session cookies", str(indexed), None, k=100)).structured_content
    assert tokens(default) <= Settings().max_tokens


def test_ask_structured_content_leaves_out_bodies_and_fits_max_tokens(indexed: Path) -> None:
    q = "How does retry_call back off between attempts?"
    res = asyncio.run(m.ask(q, str(indexed), None, max_tokens=600))
    data = res.structured_content
    assert not res.is_error and count_tokens(text(res)) <= 600 and tokens(data) <= 600, tokens(data)
    assert '"body"' not in json.dumps(data) and data["cut"] and "larger max_tokens" in data["cut_note"]
    assert "structured content holds them all" not in text(res)
    whole = asyncio.run(m.ask(q, str(indexed), None, max_tokens=0)).structured_content
    assert "cut" not in whole and whole["selection"]["included"][0]["candidate"]["entity"] == "retry_call"


def test_fit_data_halves_the_largest_list_and_says_how_much_is_cut() -> None:
    data = {"status": "ok", "rows": [{"n": i, "text": "word " * 20} for i in range(200)], "note": "kept"}
    fitted = m.fit_data(data, 400)
    assert tokens(fitted) <= 400 and fitted["status"] == "ok" and fitted["note"] == "kept"
    kept = len(fitted["rows"])
    assert 0 < kept < 200 and fitted["rows"][0]["n"] == 0
    assert fitted["cut"] == {"rows": f"{200 - kept} more item(s)"}
    assert m.fit_data(data, None) is data and m.fit_data({"a": 1}, 100) == {"a": 1}


# agentmcp 4, 5, 7: over the wire


def test_tool_schemas_are_strict_described_and_annotated(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()

    async def scenario() -> None:
        async with Client(params(tmp_path, tmp_path / "home", ASSAY_ALLOWED_ROOTS=str(tmp_path))) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for tool in tools.values():
                schema = tool.input_schema
                Draft202012Validator.check_schema(schema)
                assert schema["additionalProperties"] is False and "title" not in schema, tool.name
                for name, prop in schema["properties"].items():
                    assert prop.get("description") and "anyOf" not in prop and "title" not in prop, (tool.name, name)
                    assert prop.get("default", "") is not None, (tool.name, name)
                assert tool.annotations is not None, tool.name
            ask = tools["ask"].input_schema["properties"]
            assert ask["judge"]["enum"] == list(m._choices("judge")) and ask["synth"]["enum"] == ["extractive", "ollama", "cloud"]
            assert tools["brief"].input_schema["properties"]["writer"]["enum"] == ["ollama", "cloud", "none"]
            k = tools["search"].input_schema["properties"]["k"]
            assert (k["minimum"], k["maximum"]) == (1, 100)
            assert tools["impact"].input_schema["properties"]["depth"]["maximum"] == 6
            assert tools["forget_workspace"].annotations.destructive_hint is True
            assert tools["search"].annotations.read_only_hint is True and tools["get_entity"].annotations.read_only_hint
            assert tools["remember"].annotations.read_only_hint is False

            extra = await client.call_tool("search", {"query": "x", "path": str(tmp_path / "ws"), "top_k": 3})
            assert extra.is_error and text(extra) == (
                "error: unknown argument top_k; search takes query, path, k, max_tokens, outline"), text(extra)
            big_k = await client.call_tool("search", {"query": "x", "path": str(tmp_path / "ws"), "k": 500})
            assert big_k.is_error and "k must be 100 or less (got 500)" in text(big_k)
            judge = await client.call_tool("ask", {"question": "x", "path": str(tmp_path / "ws"), "judge": "nope"})
            assert judge.is_error and "unknown judge 'nope'; use local, ollama, cloud, systemone or none" in text(judge)
            for field, tool in (("writer", "brief"), ("judge", "ask")):  # null: the default, as before the enums
                args = {"path": str(tmp_path / "ws"), field: None, **({"question": "x"} if tool == "ask" else {})}
                assert "unknown" not in text(await client.call_tool(tool, args)), (tool, field)

    asyncio.run(scenario())


def test_an_unknown_prompt_is_invalid_params_in_one_line_without_a_traceback(tmp_path: Path) -> None:
    replies, err = _exchange(tmp_path, [
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "x"}}),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": "file:///nope"}}),
    ], replies=2)
    by_id = {r.get("id"): r for r in replies}
    assert by_id[5]["error"]["code"] == -32602 and "Unknown prompt: 'x'" in by_id[5]["error"]["message"]
    assert by_id[6]["error"]["code"] == -32602
    assert "Traceback" not in err and "raised" not in err, err


def test_a_server_started_in_slash_refuses_the_default_root(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Client(params(Path("/"), tmp_path / "home")) as client:
            res = await client.call_tool("index_status", {"path": "/etc"})
            assert res.is_error and "\n" not in text(res) and "ASSAY_ALLOWED_ROOTS" in text(res), text(res)
            assert "started in /" in text(res)

    asyncio.run(scenario())


def test_the_clients_roots_are_the_allowed_roots_when_the_variable_is_unset(tmp_path: Path) -> None:
    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir()
    other.mkdir()
    asked: list[int] = []

    async def roots(context) -> mcp_types.ListRootsResult:
        asked.append(1)
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=ws.as_uri(), name="ws")])

    async def scenario() -> None:  # the initialize handshake, as IDEs connect: the 2026 protocol has no roots/list
        async with Client(params(Path("/"), tmp_path / "home"), list_roots_callback=roots, mode="legacy") as client:
            inside = await client.call_tool("index_status", {"path": str(ws)})
            assert not inside.is_error and "not indexed" in text(inside), text(inside)
            outside = await client.call_tool("index_status", {"path": str(other)})
            assert outside.is_error and f"outside the allowed roots ({ws.resolve()})" in text(outside), text(outside)
            assert len(asked) == 1  # asked once, not at every call

    asyncio.run(scenario())

"""Every line an agent sends the stdio MCP server gets an answer: a request holding a lone surrogate is answered
as if it were U+FFFD, and a line that is no JSON-RPC message gets JSON-RPC's own error instead of silence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ASSAY = str(Path(sys.executable).with_name("assay"))
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _exchange(tmp_path: Path, lines: list[str], replies: int) -> tuple[list[dict], str]:
    """Send the lines after the handshake; the first `replies` replies after the handshake's, then stdin closes
    (closing it at once would end the server before a tool call's thread is done)."""
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct", "ASSAY_HOME": str(tmp_path / "home"),
           "ASSAY_ALLOWED_ROOTS": str(tmp_path)}
    proc = subprocess.Popen([ASSAY, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("\n".join([json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                                *lines]) + "\n")
    proc.stdin.flush()
    got: list[dict] = []
    reader = threading.Thread(target=lambda: got.extend(json.loads(line) for line in proc.stdout if line.strip()),
                              daemon=True)
    reader.start()
    deadline = time.monotonic() + 90
    while len(got) < replies + 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.stdin.close()
    proc.wait(60)
    reader.join(10)
    assert proc.stderr is not None
    return got[1:], proc.stderr.read()


def test_unreadable_lines_get_json_rpc_errors_and_a_lone_surrogate_is_answered(tmp_path: Path) -> None:
    surrogate = ('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"index_status",'
                 '"arguments":{"path":"' + str(tmp_path) + '/x\\ud800"}}}')
    replies, err = _exchange(tmp_path, [
        surrogate,
        "{not json",
        '{"jsonrpc":"1.0","id":7001,"method":"ping"}',
        '{"jsonrpc":"2.0","id":7002,"method":"ping","params":5}',
        '{"jsonrpc":"2.0","id":true,"method":"ping","params":5}',  # `true` is an int to Python, no id: it ended the server
        '{"jsonrpc":"2.0","id":7004,"method":"ping"}',  # still served afterwards
    ], replies=6)
    by_id = {r.get("id"): r for r in replies}
    assert "result" in by_id[9] and "x\ufffd" in json.dumps(by_id[9]["result"], ensure_ascii=False)
    assert by_id[7004] == {"jsonrpc": "2.0", "id": 7004, "result": {}}
    errors = [r["error"] for r in replies if r.get("id") is None]
    assert [e["code"] for e in errors] == [-32700, -32600], replies
    assert errors[0]["message"].startswith("Parse error: the line is not JSON")
    assert by_id[7001]["error"]["code"] == by_id[7002]["error"]["code"] == -32600  # the waiting id is answered
    assert err.count("assay mcp: ") == 4 and "Traceback" not in err


def test_a_panic_in_a_tools_thread_is_that_calls_error_not_the_servers_end() -> None:
    """pyo3's PanicException (Chroma's bindings out of file handles) is a BaseException: it passed every tool's
    `except Exception` and the server exited."""
    import anyio

    from assay.flows.mcp_server import _run

    class PanicException(BaseException):
        pass

    def panics() -> None:
        raise PanicException("called `Result::unwrap()` on an `Err` value: Too many open files")

    async def call() -> BaseException | None:
        try:
            await _run(panics, None, "search")
        except Exception as exc:  # noqa: BLE001 - what a tool's guard catches
            return exc
        return None

    caught = anyio.run(call)
    assert isinstance(caught, RuntimeError) and str(caught).startswith("PanicException: called `Result::unwrap()`")



def test_a_panic_in_a_background_index_run_ends_it_failed_with_the_cause(tmp_path: Path, monkeypatch) -> None:
    """A panic in `index_workspace`'s own thread printed a traceback, and index_status said the (live) server's
    process was gone."""
    import threading as threads

    from assay.flows import mcp_server as m

    class PanicException(BaseException):
        pass

    def panics(*args, **kwargs):
        raise PanicException("called `Result::unwrap()` on an `Err` value: Os { code: 24, message: \"Too many open files\" }")

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ASSAY_WATCH", "false")
    monkeypatch.setattr("assay.flows.index.run_index", panics)  # imported by the tool when called
    escaped: list = []
    monkeypatch.setattr(threads, "excepthook", lambda args: escaped.append(args.exc_value))
    m.index_workspace(str(root))
    m._jobs[str(root.resolve())].join(30)
    status = m.index_status(str(root)).content[0].text
    assert not escaped and "failed" in status and "too many open files" in status and "ulimit -n" in status, status


def test_a_panic_inside_a_tracked_run_ends_it_failed_not_interrupted(tmp_path: Path) -> None:
    """`status_run` read every BaseException as Ctrl-C: a panic's run was "interrupted (its process is gone)" while
    the MCP server that ran it lived on."""
    from assay.stages.core import progress as prog

    class PanicException(BaseException):
        pass

    try:
        with prog.status_run(tmp_path):
            raise PanicException("called `Result::unwrap()` on an `Err` value: Too many open files")
    except PanicException:
        pass
    state = prog.read_status(tmp_path)
    assert state is not None and state["state"] == "failed" and "too many open files" in state["last_error"], state

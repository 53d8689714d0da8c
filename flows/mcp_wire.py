"""Every line on the MCP server's stdin gets an answer, including the ones the SDK cannot read.

The SDK drops a line it cannot validate (debug-logged, no reply), so the client waited forever: unparseable JSON,
`"jsonrpc": "1.0"`, `params` that is no object, a batch, and any request holding an escaped lone surrogate
(`"\\ud83d"`: what a JavaScript agent sends when it cuts a string inside an emoji). A request whose only fault is a
lone surrogate is answered as if the character were U+FFFD; any other line gets JSON-RPC's own error (Parse error
-32700, Invalid Request -32600), with the request's id where it can be read, and a line on stderr (the IDE's log).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.shared._context_streams import create_context_streams  # the stream type the SDK's stdio transport uses
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")  # json.loads joins a valid pair: what is left is alone


@asynccontextmanager
async def answering(read_stream: Any, write_stream: Any) -> AsyncIterator[Any]:
    """The server's read stream, with each unreadable line answered here (or mended and passed on)."""
    send, receive = create_context_streams[SessionMessage | Exception](0)

    async def pump() -> None:
        async with send:
            async for item in read_stream:
                if not isinstance(item, Exception):
                    await send.send(item)
                    continue
                try:
                    answer = unreadable(item)
                except Exception as exc:  # noqa: BLE001 - an answer that cannot be built must not end the server
                    answer = _error(None, INVALID_REQUEST, f"Invalid Request: {type(exc).__name__}")
                if isinstance(answer, SessionMessage):  # mended: the server answers it
                    await send.send(answer)
                    continue
                print(f"assay mcp: {answer.error.message}", file=sys.stderr, flush=True)
                try:
                    await write_stream.send(SessionMessage(answer))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):  # the server has ended
                    return

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        yield receive
        tg.cancel_scope.cancel()


def unreadable(exc: Exception) -> SessionMessage | JSONRPCError:
    """The line mended (a lone surrogate replaced), or the error that answers it."""
    raw = _raw_line(exc)
    if raw is None:  # parsed, but no JSON-RPC 2.0 message: its id, where a `missing` error quotes the message
        return _error(_quoted_id(exc), INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message ({_first(exc)})")
    try:
        value = json.loads(raw)
    except ValueError as err:
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({err})")
    request_id = value.get("id") if isinstance(value, dict) and _is_id(value.get("id")) else None
    mended = _mend(value)
    if mended != value:
        try:
            return SessionMessage(jsonrpc_message_adapter.validate_python(mended, by_name=False))
        except ValidationError as err:
            exc = err
    return _error(request_id, INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message ({_first(exc)})")


def _raw_line(exc: Exception) -> str | None:
    """The line itself, which pydantic quotes only when it could not parse it as JSON (Python's parser is laxer)."""
    if not isinstance(exc, ValidationError):
        return None
    for error in exc.errors():
        if error.get("type") == "json_invalid" and isinstance(error.get("input"), str):
            return error["input"]
    return None


def _quoted_id(exc: Exception) -> str | int | None:
    """The request's id, read from a message an error quotes whole (pydantic's `missing` errors quote the object
    that lacks the field): the client waits on that id, and an answer with `id: null` ends no wait."""
    if not isinstance(exc, ValidationError):
        return None
    for error in exc.errors():
        message = error.get("input")
        if isinstance(message, dict) and _is_id(message.get("id")) and "method" in message:
            return message["id"]
    return None


def _is_id(value: object) -> bool:
    """A JSON-RPC id the reply can carry: a string or an integer (`true` is an int to Python, never an id: the
    error model refused it and the server ended)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _mend(value: Any) -> Any:
    """Every string with its lone surrogates replaced by U+FFFD, as a decoder with errors='replace' would."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_mend(v) for v in value]
    if isinstance(value, dict):
        return {_mend(k): _mend(v) for k, v in value.items()}
    return value


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error.get("loc", ()))
        return f"{where}: {error.get('msg', '')}" if where else str(error.get("msg", ""))
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _error(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message[:500]))

"""How an error reads in one line: what every door (CLI, MCP, the status file) shows a person."""

from __future__ import annotations


def one_line(exc: BaseException) -> str:
    """The error's first line, or its type's name when it says nothing."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

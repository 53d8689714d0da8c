"""Whether this process answers one command and exits (a CLI `search` or `ask`), so that loading work which
only pays back over many queries can be skipped. Long-lived processes (the MCP server, benchmarks, the
evaluation) never set it."""

from __future__ import annotations

import threading

_ONE_SHOT = threading.Event()


def mark_one_shot() -> None:
    _ONE_SHOT.set()


def one_shot() -> bool:
    return _ONE_SHOT.is_set()

"""How an error reads in one line: what every door (CLI, MCP, the status file) shows a person."""

from __future__ import annotations

import errno

# what SQLite (the catalog, Chroma's metadata), Chroma's Rust reader and the OS say when a write finds no space
_DISK_FULL_TEXTS = ("database or disk is full", "no space left on device")
DISK_FULL_ADVICE = "free space on that disk and run the command again (what was indexed before is kept)"


def disk_full(exc: BaseException) -> bool:
    """True when the error, or one it was raised from, is a full disk: worth its own advice, since the remedy is
    space, not a rebuild (a rebuild would throw away an index that is whole)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            return True
        if any(text in str(current).lower() for text in _DISK_FULL_TEXTS):
            return True
        current = current.__cause__ or current.__context__
    return False


def one_line(exc: BaseException) -> str:
    """The error's first line, or its type's name when it says nothing; a full disk says what to do."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    if disk_full(exc) and DISK_FULL_ADVICE not in line:
        return f"the disk is full ({line}): {DISK_FULL_ADVICE}"
    return line

"""How an error reads in one line: what every door (CLI, MCP, the status file) shows a person."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import PurePath

from assay.stages.core.workspace import STATE_DIR

# what SQLite (the catalog, Chroma's metadata), Chroma's Rust reader and the OS say when a write finds no space
_DISK_FULL_TEXTS = ("database or disk is full", "no space left on device")
DISK_FULL_ADVICE = "free space on that disk and run the command again (what was indexed before is kept)"
_UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The error and those it was raised from or during."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def disk_full(exc: BaseException) -> bool:
    """True when the error, or one it was raised from, is a full disk: worth its own advice, since the remedy is
    space, not a rebuild (a rebuild would throw away an index that is whole)."""
    return any((isinstance(e, OSError) and e.errno == errno.ENOSPC)
               or any(text in str(e).lower() for text in _DISK_FULL_TEXTS) for e in _chain(exc))


def unwritable_state(exc: BaseException) -> tuple[str, str] | None:
    """The workspace's `.assay/` folder a write was refused in (a read-only checkout, another user's folder), and
    why, if so."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in _UNWRITABLE and e.filename:
            parts = PurePath(str(e.filename)).parts
            if STATE_DIR in parts:
                folder = PurePath(*parts[: parts.index(STATE_DIR) + 1])
                return str(folder), (e.strerror or "not writable").lower()
    return None


def one_line(exc: BaseException) -> str:
    """The error's first line, or its type's name when it says nothing; a full disk and a workspace whose
    `.assay/` cannot be written say what to do."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    if disk_full(exc) and DISK_FULL_ADVICE not in line:
        return f"the disk is full ({line}): {DISK_FULL_ADVICE}"
    refused = unwritable_state(exc)
    if refused is not None and "cannot write the index" not in line:
        return (f"cannot write the index at {refused[0]} ({refused[1]}): indexing, `assay audit` and brief "
                "corrections write there (searching and asking do not); make that folder writable, or index a "
                "writable copy of the workspace")
    return line

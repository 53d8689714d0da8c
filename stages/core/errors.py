"""How an error reads in one line: what every door (CLI, MCP, the status file) shows a person."""

from __future__ import annotations

import errno
import os
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


def unreadable_state(exc: BaseException) -> str | None:
    """The file under a workspace's `.assay/` a read was refused on (another user's index, a folder made 0700), if
    so: the OSError does not say whether it read or wrote, so the file's own readability decides, and a refused read
    must not be worded as a refused write (searching writes nothing)."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in (errno.EACCES, errno.EPERM) and e.filename:
            name = str(e.filename)
            if STATE_DIR in PurePath(name).parts and _refuses_reading(name):
                return name
    return None


def _refuses_reading(name: str) -> bool:
    """True when the file (or the folder on its way) exists but this user may not read it."""
    path = name
    while path and not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return bool(path) and not os.access(path, os.R_OK | (os.X_OK if os.path.isdir(path) else 0))


def one_line(exc: BaseException) -> str:
    """The error's first line, or its type's name when it says nothing; a full disk and a workspace whose
    `.assay/` cannot be written say what to do."""
    if isinstance(exc, UnicodeEncodeError) and "surrogates not allowed" in str(exc):
        return ("the text holds bytes that are not valid UTF-8 (a paste from a terminal in another encoding?): "
                "retype it, or set the terminal to UTF-8")
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    if disk_full(exc) and DISK_FULL_ADVICE not in line:
        return f"the disk is full ({line}): {DISK_FULL_ADVICE}"
    unreadable = unreadable_state(exc)
    if unreadable is not None and "cannot read the index" not in line:
        return (f"cannot read the index file {unreadable} (permission denied): ask its owner to make the workspace's "
                "`.assay/` readable to you (chmod -R a+rX), or index a copy of the workspace you own")
    refused = unwritable_state(exc)
    if refused is not None and "cannot write the index" not in line:
        return (f"cannot write the index at {refused[0]} ({refused[1]}): indexing, `assay audit` and brief "
                "corrections write there (searching and asking do not); make that folder writable, or index a "
                "writable copy of the workspace")
    return line

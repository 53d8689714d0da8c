"""Indexed file names as this process must spell them to open the files.

The index holds names as text. One indexed under a UTF-8 locale (`grüße.py`) cannot be encoded by a process whose
locale reads file names as ASCII (LC_ALL=C with PYTHONUTF8=0): every `open`/`stat` by that name raised
UnicodeEncodeError, a traceback in every query. Its UTF-8 bytes still name the file on disk.
"""

from __future__ import annotations

import os
from pathlib import Path


def nameable(rel: str) -> bool:
    """Whether this process's file-name encoding can spell `rel`."""
    try:
        os.fsencode(rel)
    except UnicodeEncodeError:
        return False
    return True


def on_disk(root: Path, rel: str) -> Path:
    """The path that opens the indexed file `rel` under `root`: `root / rel`, or, for a name this locale cannot
    spell, the path decoded from its UTF-8 bytes (as the locale decodes names it lists)."""
    if nameable(rel):
        return root / rel
    return Path(os.fsdecode(os.fsencode(root) + b"/" + rel.encode("utf-8", "surrogateescape")))


def utf8_on_disk(name: str | os.PathLike[str]) -> bool:
    """Whether a name's bytes on disk are UTF-8: one this process holds with surrogates is then unreadable only to
    its locale (LC_ALL=C with PYTHONUTF8=0), not a name written in another encoding."""
    try:
        os.fsencode(name).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True

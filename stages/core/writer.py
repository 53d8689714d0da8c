"""Who is writing a workspace: the pid that holds its write lock (`stages.index.store.write_lock`), recorded beside
the lock, so that a run waiting its turn leaves the running one's status alone (`progress.StatusSink`)."""

from __future__ import annotations

import os
from pathlib import Path

from assay.stages.core.workspace import state_dir

HOLDER_FILE = "write.holder"


def pid_alive(pid: object) -> bool:
    """Whether a process still runs (an unknown pid: trust whoever wrote it)."""
    if not isinstance(pid, int):
        return True  # unknown: trust the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def record_writer(root: Path) -> None:
    """Called by the lock's new holder."""
    folder = state_dir(root)
    tmp = folder / f"{HOLDER_FILE}.{os.getpid()}.tmp"
    tmp.write_text(str(os.getpid()), encoding="utf-8")
    os.replace(tmp, folder / HOLDER_FILE)


def clear_writer(root: Path) -> None:
    """Called by the holder as it lets go (a killed holder leaves its pid, which `other_writer` finds dead)."""
    try:
        (state_dir(root) / HOLDER_FILE).unlink()
    except FileNotFoundError:
        pass


def other_writer(root: Path) -> int | None:
    """The live process other than this one that holds the workspace's write lock, if any."""
    try:
        pid = int((state_dir(root) / HOLDER_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    return pid if pid != os.getpid() and pid_alive(pid) else None

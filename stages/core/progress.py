"""Progress of long work, reported to whoever watches (a rich bar, the MCP index_status tool).

Stages call `progress_for(root)`; the watcher registers a sink for that workspace. The status
sink also writes `.assay/status.json`, so another process (a second IDE) can read it too.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Protocol

from assay.stages.core.workspace import state_dir


class ProgressSink(Protocol):
    def start(self, stage: str, total: int) -> None: ...
    def advance(self, stage: str, n: int = 1) -> None: ...
    def error(self, message: str) -> None: ...


class NullSink:
    def start(self, stage: str, total: int) -> None:
        pass

    def advance(self, stage: str, n: int = 1) -> None:
        pass

    def error(self, message: str) -> None:
        pass


class StatusSink:
    """Keeps counts and an ETA per stage; throttles writes of `.assay/status.json` to 2 per second."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state: dict = {"state": "running", "started": time.time(), "stages": {}, "last_error": "", "pid": os.getpid()}
        self._lock = threading.Lock()
        self._written = 0.0

    def start(self, stage: str, total: int) -> None:
        with self._lock:
            self.state["stage"] = stage
            self.state["stages"][stage] = {"done": 0, "total": total, "started": time.time()}
        self._write(force=True)

    def advance(self, stage: str, n: int = 1) -> None:
        with self._lock:
            st = self.state["stages"].setdefault(stage, {"done": 0, "total": 0, "started": time.time()})
            st["done"] += n
        self._write()

    def error(self, message: str) -> None:
        with self._lock:
            self.state["last_error"] = message
        self._write(force=True)

    def finish(self, state: str, summary: dict | None = None) -> None:
        with self._lock:
            self.state["state"] = state
            self.state["finished"] = time.time()
            if summary:
                self.state["summary"] = summary
        self._write(force=True)

    def _write(self, force: bool = False) -> None:
        now = time.time()
        if not force and now - self._written < 0.5:
            return
        self._written = now
        folder = state_dir(self.root)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"status.json.{os.getpid()}.tmp"
        with self._lock:
            tmp.write_text(json.dumps(self.state))
        os.replace(tmp, folder / "status.json")


class FanOut:
    def __init__(self, *sinks: ProgressSink) -> None:
        self.sinks = sinks

    def start(self, stage: str, total: int) -> None:
        for s in self.sinks:
            s.start(stage, total)

    def advance(self, stage: str, n: int = 1) -> None:
        for s in self.sinks:
            s.advance(stage, n)

    def error(self, message: str) -> None:
        for s in self.sinks:
            s.error(message)


_SINKS: dict[str, ProgressSink] = {}


def register(root: Path, sink: ProgressSink) -> None:
    _SINKS[str(root)] = sink


def unregister(root: Path) -> None:
    _SINKS.pop(str(root), None)


def progress_for(root: Path) -> ProgressSink:
    return _SINKS.get(str(root), NullSink())


def read_status(root: Path) -> dict | None:
    """The last run's status; a "running" run whose process is gone reads as "interrupted"."""
    path = state_dir(root) / "status.json"
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if state.get("state") == "running" and not _alive(state.get("pid")):
        state["state"] = "interrupted"
    return state


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return True  # unknown: trust the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

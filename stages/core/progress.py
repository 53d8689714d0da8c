"""Progress of long work, reported to whoever watches (a rich bar, the MCP index_status tool).

Stages call `progress_for(root)`; the watcher registers a sink for that workspace. The status
sink also writes `.assay/status.json`, so another process (a second IDE, `assay status`) can read it too;
`status_run` is the one place an index run's status is written, `run_view` / `run_line` the one way it is shown.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Protocol

from assay.stages.core.errors import one_line
from assay.stages.core.workspace import (
    WorkspaceError, WorkspaceGone, make_state_dir, refuse_shared_state, root_identity, state_dir, workspace_gone,
)
from assay.stages.core.writer import other_writer, pid_alive


class ProgressSink(Protocol):
    def start(self, stage: str, total: int) -> None: ...
    def advance(self, stage: str, n: int = 1) -> None: ...
    def skip(self, stage: str, n: int) -> None: ...  # done without work (remembered vectors): not in the rate
    def error(self, message: str) -> None: ...


class NullSink:
    def start(self, stage: str, total: int) -> None:
        pass

    def advance(self, stage: str, n: int = 1) -> None:
        pass

    def skip(self, stage: str, n: int) -> None:
        pass

    def error(self, message: str) -> None:
        pass


class StatusSink:
    """Keeps counts and an ETA per stage; throttles writes of `.assay/status.json` to 2 per second. While another
    process holds the workspace's write lock, this run is only waiting its turn: the file stays that run's."""

    def __init__(self, root: Path) -> None:
        """Writes "running" at once: a reader must never see the previous run's "done" once this one began. Every
        door's index run starts here, so a state folder shared with another workspace is refused before any write."""
        refuse_shared_state(root)
        self.root = root
        self.state: dict = {"state": "running", "started": time.time(), "stages": {}, "last_error": "", "pid": os.getpid(),
                            "workspace": str(root)}  # the path it indexes: the file may be read at another (moved)
        self._lock = threading.Lock()
        self._written = 0.0
        self._identity = root_identity(root)  # the folder this run started on: one made later at its path is another
        self._folder_fd: int | None = None  # a handle on the state folder it writes: it follows the folder if moved
        self._write(force=True)

    def start(self, stage: str, total: int) -> None:
        with self._lock:
            self.state["stage"] = stage
            self.state["stages"][stage] = {"done": 0, "total": total, "started": time.time()}
        self._write(force=True)

    def advance(self, stage: str, n: int = 1) -> None:
        self._count(stage, n, skipped=False)

    def skip(self, stage: str, n: int) -> None:
        """Done without work (a resumed run's remembered vectors): counted as done, kept out of the rate and ETA."""
        self._count(stage, n, skipped=True)

    def _count(self, stage: str, n: int, skipped: bool) -> None:
        with self._lock:
            st = self.state["stages"].setdefault(stage, {"done": 0, "total": 0, "started": time.time()})
            st["done"] += n
            if skipped:
                st["skipped"] = st.get("skipped", 0) + n
            complete = st["done"] >= st["total"] > 0
        # a stored slice (as the manifest records it) and a stage's last item are written at once, not throttled:
        # a run killed right after must say what it reached ("parse 113/114" read as unfinished once all was parsed)
        self._write(force=stage == STORED or complete)

    def error(self, message: str) -> None:
        with self._lock:
            self.state["last_error"] = message
        self._write(force=True)

    def finish(self, state: str, summary: dict | None = None, error: str | None = None) -> None:
        """The run's last word (with its error, in the same write). It lands even when the workspace was moved
        mid-run: in the moved state folder, never at the old path."""
        with self._lock:
            self.state["state"] = state
            self.state["finished"] = time.time()
            if summary:
                self.state["summary"] = summary
            if error is not None:
                self.state["last_error"] = error
        try:
            self._write(force=True, final=True)
        finally:
            self.close()

    def gone(self) -> WorkspaceGone | None:
        """Why this run cannot go on when the folder at its path is no longer the one it started on, else None."""
        if self._identity is None or root_identity(self.root) != self._identity:
            return workspace_gone(self.root)
        return None

    def close(self) -> None:
        """Let go of the state folder's handle (a later write opens it again)."""
        fd, self._folder_fd = getattr(self, "_folder_fd", None), None  # (a refused __init__ set none)
        if fd is not None:
            with suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.close()

    def _write(self, force: bool = False, final: bool = False) -> None:
        now = time.time()
        if not force and now - self._written < 0.5:
            return
        if (gone := self.gone()) is not None:  # moved mid-run: nothing is written at the old path
            if final:
                self._write_where_moved()
                return
            raise gone  # fail now: the run stops at its next report
        if other_writer(self.root) is not None and not self._file_is_mine():
            return
        self._written = now
        folder = make_state_dir(self.root)
        if self._folder_fd is None:
            with suppress(OSError):
                self._folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        tmp = folder / f"status.json.{os.getpid()}.tmp"
        try:
            with self._lock:
                self.state["updated"] = now  # an interrupted run's last sign of life
                tmp.write_text(json.dumps(self.state), encoding="utf-8")
            os.replace(tmp, folder / "status.json")
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk must not leave a stray file beside the last good status
            raise

    def _write_where_moved(self) -> None:
        """The last word of a run whose workspace moved, written through the handle on its state folder, which
        moved with it: left "running" under a live process (the MCP server), the moved workspace's status would
        say "index running" for as long as that process lived. Only over this run's own status; a folder deleted
        with its workspace takes nothing."""
        fd, tmp = self._folder_fd, f"status.json.{os.getpid()}.tmp"
        if fd is None:
            return
        try:
            with open(os.open("status.json", os.O_RDONLY, dir_fd=fd), encoding="utf-8") as held:
                if not self._is_mine(held.read()):
                    return
            with self._lock:
                self.state["updated"] = time.time()
                data = json.dumps(self.state)
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666, dir_fd=fd), "w", encoding="utf-8") as out:
                out.write(data)
            os.replace(tmp, "status.json", src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=fd)

    def _file_is_mine(self) -> bool:
        """Whether status.json is this run's. Another writer holding the lock leaves the file alone only while it
        is another run's: a `remember` that takes the lock as this run lets go writes no status, and this run's
        last word ("done") must still land, or a finished index reads "interrupted" once its process is gone."""
        try:
            return self._is_mine((state_dir(self.root) / "status.json").read_text(encoding="utf-8"))
        except OSError:
            return False

    def _is_mine(self, text: str) -> bool:
        try:
            state = json.loads(text)
        except ValueError:
            return False
        return (isinstance(state, dict) and state.get("pid") == self.state["pid"]
                and state.get("started") == self.state["started"])


class FanOut:
    def __init__(self, *sinks: ProgressSink) -> None:
        self.sinks = sinks

    def start(self, stage: str, total: int) -> None:
        for s in self.sinks:
            s.start(stage, total)

    def advance(self, stage: str, n: int = 1) -> None:
        for s in self.sinks:
            s.advance(stage, n)

    def skip(self, stage: str, n: int) -> None:
        for s in self.sinks:
            s.skip(stage, n)

    def error(self, message: str) -> None:
        for s in self.sinks:
            s.error(message)


_SINKS: dict[str, ProgressSink] = {}


def register(root: Path, sink: ProgressSink) -> None:
    _SINKS[str(root)] = sink


def unregister(root: Path, sink: ProgressSink | None = None) -> None:
    """Forget the workspace's sink (only `sink`, when given: a later run may have registered its own)."""
    if sink is None or _SINKS.get(str(root)) is sink:
        _SINKS.pop(str(root), None)


@contextmanager
def status_run(root: Path, watcher: ProgressSink | None = None, status: StatusSink | None = None) -> Iterator[StatusSink]:
    """Report a run to `.assay/status.json` (and to `watcher`, e.g. a progress bar) while it runs. It ends "failed" with
    its one-line error when it raises, "interrupted" on Ctrl-C, else "done" (the caller may finish it first, with a
    summary). Every door indexes through this, so the file tells the truth whoever started the run."""
    status = status or StatusSink(root)
    sink: ProgressSink = FanOut(status, watcher) if watcher is not None else status
    register(root, sink)
    try:
        yield status
    except Exception as exc:
        gone = status.gone()  # the workspace moved away mid-run: that, not a late write's error, is the cause
        with suppress(OSError, WorkspaceError):  # a full disk fails this write too: the run's own error is what shows
            status.finish("failed", error=one_line(gone or exc))
        if gone is not None and not isinstance(exc, WorkspaceGone):
            raise gone from exc
        raise
    except BaseException as exc:
        with suppress(OSError, WorkspaceError):
            if type(exc).__name__ == "PanicException":  # pyo3's: a Rust panic in Chroma's bindings is a failure with
                status.finish("failed", error=one_line(exc))  # a cause, not a run whose process "is gone" (it lives)
            else:
                status.finish("interrupted")
        raise
    else:
        if status.state["state"] == "running":
            status.finish("done")
    finally:
        unregister(root, sink)


def progress_for(root: Path) -> ProgressSink:
    return _SINKS.get(str(root), NullSink())


def read_status(root: Path) -> dict | None:
    """The last run's status; a "running" run whose process is gone reads as "interrupted". A file that is not
    JSON, or JSON of another shape (damaged, hand-edited), reads as no status: every door shows the index without a
    run line rather than a traceback, and the next index run rewrites it."""
    path = state_dir(root) / "status.json"
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not _well_formed(state):
        return None
    if state.get("state") == "running" and not pid_alive(state.get("pid")):
        state["state"] = "interrupted"
    elif state.get("state") == "running" and state.get("workspace", str(root)) != str(root):
        state["state"], state["last_error"] = "failed", moved_here(state["workspace"])
    return state


def moved_here(indexed: str) -> str:
    """Why a run read "running" at a path it does not index ended there: the workspace was moved (or copied) here
    from `indexed` during it. A live run notices the move at its next write; until then its status, which moved
    with the folder, would say "index running" under a process that indexes the old path."""
    return f"this run indexed {indexed}, and the workspace was moved or copied here from there during it: index it at this path"


def run_under_way(root: Path) -> bool:
    """Whether a live process is indexing the workspace now (by its status file; a dead one's run is interrupted)."""
    state = read_status(root)
    return state is not None and state.get("state") == "running"


STORED = "stored"  # a count, not a stage: passages whose vectors the index run stored (and crossed off the manifest)
LEXICAL = "lexical"  # the stage that purges stale passages, saves BM25 and writes the manifest: done = queryable

_NUMBER = (int, float)
_STATUS_FIELDS: dict[str, tuple[type, ...]] = {
    "state": (str,), "stage": (str,), "last_error": (str,), "pid": (int, type(None)), "summary": (dict,), "workspace": (str,),
    "stages": (dict,), "started": _NUMBER, "finished": _NUMBER + (type(None),), "updated": _NUMBER + (type(None),),
}
_STAGE_FIELDS = ("done", "total", "skipped", "started")


def _well_formed(state: object) -> bool:
    """Whether a parsed status file has the shape `StatusSink` writes (what `run_view` / `run_line` rely on)."""
    if not isinstance(state, dict):
        return False
    if any(key in state and not isinstance(state[key], kinds) or isinstance(state.get(key), bool)
           for key, kinds in _STATUS_FIELDS.items()):
        return False
    for stage in state.get("stages", {}).values():
        if not isinstance(stage, dict) or any(
                key in stage and (not isinstance(stage[key], _NUMBER) or isinstance(stage[key], bool))
                for key in _STAGE_FIELDS):
            return False
    try:  # a last guard: the shape check and the view must agree, or the status door would crash
        run_line(run_view(state))  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, OSError):
        return False
    return True


def run_view(state: dict | None, now: float | None = None) -> dict | None:
    """What a status file (as `read_status` returns it) says about its run, for `assay status` and the MCP
    `index_status` alike: state, current stage, files parsed, passages embedded, their rate (passages/s) and,
    while it runs, the ETA of the current stage; when it ended (an interrupted run: when it was last heard of)."""
    if state is None:
        return None
    now = time.time() if now is None else now
    running = state.get("state") == "running"
    ended = None if running else state.get("finished") or state.get("updated")
    stages = state.get("stages", {})
    stage = state.get("stage", "")
    parse, embed = stages.get("parse", {}), stages.get("embed", {})
    rate = _rate(embed, ended or now)
    current = stages.get(stage, {})
    current_rate = _rate(current, now) if running and current.get("total") else None
    eta = round(max(current["total"] - current.get("done", 0), 0) / current_rate, 1) if current_rate else None
    return {
        "state": state.get("state", ""), "stage": stage, "pid": state.get("pid"),
        "files_done": parse.get("done", 0), "files_total": parse.get("total", 0),
        "passages_done": embed.get("done", 0), "passages_total": embed.get("total", 0),
        **_stored_view(stages), "lexical_committed": _complete(stages.get(LEXICAL, {})),
        "rate": rate, "eta_seconds": eta, "started": state.get("started"), "ended": ended,
        "elapsed_seconds": round((ended or now) - state.get("started", now), 1),
        "last_error": state.get("last_error", ""), "summary": state.get("summary", {}),
    }


def _stored_view(stages: dict) -> dict:
    """Passages whose vectors are stored (of all in the index, as the manifest counts them), and those this run
    embedded but had not stored yet; None each before the run reached the vector store (or an older status file)."""
    stored, embed = stages.get(STORED), stages.get("embed", {})
    if stored is None:
        return {"passages_stored": None, "passages_in_index": None, "passages_unstored": None}
    this_run = stored.get("done", 0) - stored.get("skipped", 0)  # `skipped`: those stored before this run
    return {"passages_stored": stored.get("done", 0), "passages_in_index": stored.get("total", 0),
            "passages_unstored": max(embed.get("done", 0) - this_run, 0)}  # (cached ones count as embedded too)


def _complete(stage: dict) -> bool:
    return stage.get("total", 0) > 0 and stage.get("done", 0) >= stage["total"]


def _rate(stage: dict, until: float) -> float | None:
    """Items per second of a stage so far, those done without work left out (None before its first worked item)."""
    worked = stage.get("done", 0) - stage.get("skipped", 0)
    if worked <= 0 or not stage.get("started"):
        return None
    return round(worked / max(until - stage["started"], 1e-3), 1)


def run_line(view: dict) -> str:
    """One line a person reads: what the run is doing or how it ended, and where it got to."""
    at = f"files {view['files_done']}/{view['files_total']} parsed"
    state = view["state"]
    stored = view.get("passages_stored")
    if state != "running" and stored is not None:  # ended short: what a search finds, as its dense note counts it
        ahead = view["passages_unstored"]
        at += (f", passages {stored}/{view['passages_in_index']} stored as vectors"
               + (f" ({ahead} more embedded and cached, not yet stored)" if ahead > 0 else ""))
    elif view["passages_total"] or view["stage"] in ("embed", "scan"):
        at += f", passages {view['passages_done']}/{view['passages_total']} embedded"
    if state == "running":
        speed = f", {view['rate']}/s" if view["rate"] else ""
        eta = f", ETA {_duration(view['eta_seconds'])}" if view["eta_seconds"] is not None else ""
        stage = view["stage"] or "start-up"  # before its first stage (or while it waits for the write lock)
        return f"index running (pid {view['pid']}, {_duration(view['elapsed_seconds'])} so far): {stage}; {at}{speed}{eta}"
    when = _clock(view["ended"])
    if state == "done":
        summary = view["summary"]
        got = (f"{summary['entities']} passages, {summary['embedded']} embedded this run"
               + (f" ({summary['embed_cached']} from cache)" if summary.get("embed_cached") else "")
               if "entities" in summary and "embedded" in summary else at)
        return f"last index done at {when} in {_duration(view['elapsed_seconds'])}: {got}"
    if view.get("lexical_committed"):  # the manifest and BM25 were written: searches see every parsed file
        at += ", queryable by BM25"
    if state == "interrupted":  # embedded = in the vector cache; the store may hold fewer until the next run
        return (f"last index interrupted (its process {view['pid']} is gone; last heard of at {when}) {_phase(view)}: "
                f"{at}; run `assay index` to resume (what it embedded is cached and is stored without embedding again)")
    error = f": {view['last_error']}" if view["last_error"] else ""
    return f"last index {state} at {when} {_phase(view)}{error} ({at})"


def _phase(view: dict) -> str:
    """Where an ended run stopped: "during parse", or "after its lexical phase" once that phase committed."""
    if view["stage"] == LEXICAL and view.get("lexical_committed"):
        return "after its lexical phase"
    return f"during {view['stage'] or 'start-up'}"


def _clock(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "an unknown time"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"

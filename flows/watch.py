"""The watch door: keep a workspace's index fresh while files change (CLI `assay watch`, the MCP server).

Each quiet period's batch of changes is one incremental index flow run (a Prefect flow run like any
other, taking the workspace write lock); a run's own writes under `.assay/` never trigger another, while the
deletion of `.assay/` itself (`git clean -fdx`) does: the run rebuilds the index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from assay.flows.index import run_index
from assay.stages.core.artifacts import IndexReport
from assay.stages.core.config import Settings
from assay.stages.core.workspace import STATE_DIR, root_identity, unindexable_here
from assay.stages.index.incremental import NewerIndex
from assay.stages.index.watch import WatchedFolderGone, batches, check_watched

OnRun = Callable[[list[str], IndexReport | None, BaseException | None], None]


CATCH_UP = "(what changed before the watch began)"
INDEX_DELETED = f"(the index folder {STATE_DIR}/ was deleted: rebuilding it)"


def _labelled(changed: list[str]) -> list[str]:
    """The batch as `on_run` shows it: the state folder's own deletion (the only `.assay` event that reaches a
    batch) says what happened instead of naming a path that no longer exists."""
    return [INDEX_DELETED if path == STATE_DIR else path for path in changed]


class _Halt:
    """What ends the watch: the caller's `stop`, or a catch-up run that failed for good (`failed`)."""

    def __init__(self, stop: threading.Event | None) -> None:
        self.stop = stop
        self.failed: BaseException | None = None
        self._failed = threading.Event()

    def fail(self, error: BaseException) -> None:
        self.failed = error
        self._failed.set()

    def is_set(self) -> bool:  # watchfiles polls this as its stop event
        return self._failed.is_set() or (self.stop is not None and self.stop.is_set())


def watch_workspace(root: Path, settings: Settings, stop: threading.Event | None = None, on_run: OnRun | None = None,
                    catch_up: bool = False) -> None:
    """Re-index after every batch of relevant changes until `stop` is set (or Ctrl-C). A failed run is
    reported to `on_run` and the watch goes on: the next change retries. `catch_up`: one incremental run as the
    watch begins, for edits made while nothing watched (or a folder never indexed); it runs beside the watch, so a
    change during it is a batch of its own (the write lock orders the two runs). A catch-up that fails in a folder
    that cannot be indexed in place (too deep for SQLite, not writable) ends the watch with its error: no change
    can make a later run succeed. An index a newer Assay wrote ends the watch with that said (`NewerIndex`): only
    restarting this process under the newer Assay can index it again."""
    identity = root_identity(root)  # the folder watched: runs index by path, so one moved away must stop the watch
    halt = _Halt(stop)
    if catch_up:
        threading.Thread(target=_catch_up, args=(root, settings, on_run, halt), name="assay-watch catch-up",
                         daemon=True).start()
    for changed in batches(root, settings.watch_debounce_ms, halt, identity):  # raises WatchedFolderGone
        if halt.is_set():
            break  # stopped while this batch gathered: a forgotten workspace must not be indexed again
        if changed:
            check_watched(root, identity)  # moved while the batch gathered: never index what is at the old path now
            if isinstance(error := _run(root, settings, _labelled(changed), on_run), NewerIndex):
                raise error
    if halt.failed is not None:
        raise halt.failed


def _catch_up(root: Path, settings: Settings, on_run: OnRun | None, halt: _Halt) -> None:
    """The first run; its failure ends the watch when the folder cannot be indexed where it is."""
    try:
        report, error = run_index(str(root), settings), None  # refuses a newer Assay's index first
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - reported below, or the watch's own error (a Rust panic too)
        report, error = None, exc
    if isinstance(error, NewerIndex) or (error is not None and unindexable_here(root)):
        halt.fail(error)
    elif on_run is not None:
        on_run([CATCH_UP], report, error)


def _watch_in_background(root: Path, settings: Settings, stop: threading.Event) -> None:
    """The MCP server's watcher: one whose folder was moved or deleted just ends (`index_status` of the old path
    says it does not exist; indexing the new path starts a watcher there)."""
    try:
        watch_workspace(root, settings, stop)
    except (WatchedFolderGone, NewerIndex):  # a newer Assay's index: index_workspace says so when called
        stop.set()


def _run(root: Path, settings: Settings, changed: list[str], on_run: OnRun | None) -> BaseException | None:
    """One run for a batch, reported to `on_run`; returns its error (a `NewerIndex` is left to the caller: it ends
    the watch, in one line)."""
    try:
        report, error = run_index(str(root), settings), None  # refuses a newer Assay's index first
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - a watcher must outlive one bad run (a panic in Chroma's Rust
        report, error = None, exc  # bindings is a BaseException)
    if on_run is not None and not isinstance(error, NewerIndex):
        on_run(changed, report, error)
    return error


_watchers: dict[str, tuple[threading.Thread, threading.Event]] = {}
_lock = threading.Lock()


def ensure_watching(root: Path, settings: Settings) -> bool:
    """Start one background watcher per workspace (the MCP server calls this after indexing); False if off."""
    if not settings.watch:
        return False
    key = str(root.resolve())
    with _lock:
        running = _watchers.get(key)
        if running is not None and running[0].is_alive():
            return True
        stop = threading.Event()
        thread = threading.Thread(target=_watch_in_background, args=(root, settings, stop), name=f"assay-watch {key}",
                                  daemon=True)
        thread.start()
        _watchers[key] = (thread, stop)
    return True


def stop_watching(root: Path | None = None) -> list[threading.Thread]:
    """Stop the watcher of `root` (every watcher when None); returns their threads, for a caller that must wait
    until none is left running (forget_workspace: a run after its deletion would rebuild the index)."""
    stopped: list[threading.Thread] = []
    with _lock:
        for key, (thread, stop) in list(_watchers.items()):
            if root is None or key == str(root.resolve()):
                stop.set()
                _watchers.pop(key, None)
                stopped.append(thread)
    return stopped

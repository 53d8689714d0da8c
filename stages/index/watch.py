"""Watch stage: which file-system changes deserve a re-index, batched so a branch switch is one run.

The loop itself is `watchfiles` (Rust notify underneath); this module decides what counts: changes under
`.assay/` (but the deletion of `.assay` itself), `.git/` and other always-pruned folders, or matching the
workspace's root `.gitignore` / `.assayignore`, never start a run. The index run that follows applies every rule
and re-parses only files whose bytes changed, so a stray event costs one cheap incremental run at most.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from assay.stages.core.workspace import STATE_DIR, WorkspaceError, root_identity
from assay.stages.index.discover import root_ignore_check


def change_filter(root: Path) -> Callable[[object, str], bool]:
    """A `watchfiles` filter: True for a path whose change may alter the index, and for the deletion of the
    state folder itself (`git clean -fdx`, `rm -rf .assay`): the index is gone, so a run must rebuild it. Nothing
    else under `.assay/` counts, so a run's own writes never start another."""
    from watchfiles import Change

    ignored = root_ignore_check(root)
    base = str(root.resolve())

    def keep(change: object, path: str) -> bool:
        rel = path[len(base) + 1 :] if path.startswith(base + "/") else path
        if rel == STATE_DIR:
            return change == Change.deleted
        return not ignored(rel)

    return keep


def relative_batch(root: Path, changes: set[tuple[object, str]]) -> list[str]:
    base = str(root.resolve())
    return sorted({p[len(base) + 1 :] if p.startswith(base + "/") else p for _, p in changes})


POLL_MS = 100  # the loop reads the clock this often (with no change too): the quiet window holds to about this


def longest_wait_ms(debounce_ms: int) -> int:
    """How long a batch may gather since its first change: a file that never stops changing (a log nobody ignored)
    must not hold every other change back for ever."""
    return max(10 * debounce_ms, 30_000)


class WatchedFolderGone(WorkspaceError):
    """The watched folder was moved or deleted, or another folder now has its path: inotify follows the moved folder
    while runs index by path, so its events would re-index whatever is at the old path (a fresh clone)."""


def check_watched(root: Path, identity: tuple[int, int] | None) -> None:
    """Raise `WatchedFolderGone` when the folder at `root` is no longer the one the watch began on."""
    if identity is None or root_identity(root) != identity:
        raise WatchedFolderGone(f"{root} was moved or deleted; run `assay watch NEWPATH` (its new path)")


def batches(root: Path, debounce_ms: int = 1600, stop: threading.Event | None = None,
            identity: tuple[int, int] | None = None) -> Iterator[list[str]]:
    """Relative paths changed, one list once `debounce_ms` pass with no relevant change (or `longest_wait_ms` since
    the first): a checkout of thousands of files is one batch. The quiet window is kept here because watchfiles'
    `debounce` only caps how long it groups and its quiet period (`step`) is fixed: `--debounce 5000` re-indexed
    three times for edits 1.5 s apart. Its filter is applied here too, so ignored changes (a run's own `.assay/`
    writes) neither end nor extend a quiet window."""
    import time

    from watchfiles import watch

    identity = identity or root_identity(root)
    keep = change_filter(root)
    pending: set[tuple[object, str]] = set()
    first = last = 0.0
    for changes in watch(root, watch_filter=None, debounce=POLL_MS, step=50, rust_timeout=POLL_MS,
                         yield_on_timeout=True, stop_event=stop, raise_interrupt=False):
        check_watched(root, identity)  # every poll (a stat per 100 ms): a rename stops the watch at once
        now = time.monotonic()
        fresh = {change for change in changes if keep(*change)}
        if fresh:
            first = first if pending else now
            last = now
            pending |= fresh
        if pending and _quiet_or_overdue(now, first, last, debounce_ms):
            batch, pending = relative_batch(root, pending), set()
            yield batch


def _quiet_or_overdue(now: float, first: float, last: float, debounce_ms: int) -> bool:
    return (now - last) * 1000 >= debounce_ms or (now - first) * 1000 >= longest_wait_ms(debounce_ms)

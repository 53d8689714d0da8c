"""Watch stage: which file-system changes deserve a re-index, batched so a branch switch is one run.

The loop itself is `watchfiles` (Rust notify underneath); this module decides what counts: changes under
`.assay/` (but the deletion of `.assay` itself), `.git/` and other always-pruned folders, or matching the
workspace's root `.gitignore` / `.assayignore` (as they read now), never start a run; nor do files the index would
never take (an editor's swap or lock file, a log) unless it holds them, nor the watch's own output file. The index
run that follows applies every rule and re-parses only files whose bytes changed.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from assay.stages.core.workspace import STATE_DIR, WorkspaceError, root_identity
from assay.stages.index.discover import IGNORE_FILES, may_take, root_ignore_check
from assay.stages.index.store import index_generation, per_generation, read_manifest

FileId = tuple[int, int]  # (st_dev, st_ino)


def change_filter(root: Path, own: frozenset[FileId] = frozenset()) -> Callable[[object, str], bool]:
    """A `watchfiles` filter: True for a change that may alter what the index holds: a path discovery could take
    (`may_take`) or the index holds (a file, or a folder holding some: its deletion), or an ignore file; and the
    deletion of the state folder itself (`git clean -fdx`, `rm -rf .assay`): the index is gone, so a run must rebuild
    it. Nothing else under `.assay/` counts, so a run's own writes never start another; nor do `own` files (the
    watch's output redirected into the workspace would feed itself, a line per run for ever)."""
    from watchfiles import Change

    base = str(root.resolve())
    top = Path(base)
    ignored = _root_rules(top)

    def keep(change: object, path: str) -> bool:
        rel = path[len(base) + 1 :] if path.startswith(base + "/") else path
        if rel == STATE_DIR:
            return change == Change.deleted
        if ignored(rel):
            return False
        if rel.rsplit("/", 1)[-1] in IGNORE_FILES:
            return True  # changes what every later run takes
        if own and change != Change.deleted and _file_id(path) in own:
            return False
        return rel in indexed_paths(top) or may_take(top, rel)

    return keep


def _root_rules(root: Path) -> Callable[[str], bool]:
    """`root_ignore_check`, read again whenever a root ignore file changed since (two stats a change): un-ignoring a
    folder during a watch makes later edits inside it count."""
    state: dict[str, object] = {}

    def ignored(rel: str) -> bool:
        stamp = _ignore_stamp(root)
        if state.get("stamp") != stamp:
            state["stamp"], state["check"] = stamp, root_ignore_check(root)
        return state["check"](rel)  # type: ignore[operator]

    return ignored


def _ignore_stamp(root: Path) -> tuple[tuple[int, int, int, int] | None, ...]:
    """The root ignore files as they are now (identity, size, times; None when absent)."""
    stamp: list[tuple[int, int, int, int] | None] = []
    for name in IGNORE_FILES:
        try:
            st = os.stat(root / name)
        except OSError:
            stamp.append(None)
            continue
        stamp.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(stamp)


_INDEXED: dict[str, tuple[object, frozenset[str]]] = {}


def indexed_paths(root: Path) -> frozenset[str]:
    """Every path the index holds and every folder above one, read once per index generation: the deletion of an
    indexed file (or its folder) counts whatever its name."""
    generation = index_generation(root)
    if generation is None:
        return frozenset()
    return per_generation(_INDEXED, str(root), generation, lambda: _with_folders(root))


def _with_folders(root: Path) -> frozenset[str]:
    try:
        files = read_manifest(root).files
    except Exception:  # noqa: BLE001 - an unreadable manifest holds nothing known: the run that follows says why
        return frozenset()
    found = set(files)
    for path in files:
        parts = path.split("/")
        found.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return frozenset(found)


def _file_id(path: str) -> FileId | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def own_outputs() -> frozenset[FileId]:
    """This process's stdout and stderr where they are files (`assay watch > watch.txt`): never a change."""
    found: set[FileId] = set()
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.add((st.st_dev, st.st_ino))
    return frozenset(found)


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
    keep = change_filter(root, own_outputs())
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

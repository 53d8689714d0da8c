"""Watch stage: which file-system changes deserve a re-index, batched so a branch switch is one run.

The loop itself is `watchfiles` (Rust notify underneath); this module decides what counts: changes under
`.assay/`, `.git/` and other always-pruned folders, or matching the workspace's root `.gitignore` /
`.assayignore`, never start a run. The index run that follows applies every rule and re-parses only
files whose bytes changed, so a stray event costs one cheap incremental run at most.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from assay.stages.index.discover import root_ignore_check


def change_filter(root: Path) -> Callable[[object, str], bool]:
    """A `watchfiles` filter: True for a path whose change may alter the index."""
    ignored = root_ignore_check(root)
    base = str(root.resolve())

    def keep(_change: object, path: str) -> bool:
        return not ignored(path[len(base) + 1 :] if path.startswith(base + "/") else path)

    return keep


def relative_batch(root: Path, changes: set[tuple[object, str]]) -> list[str]:
    base = str(root.resolve())
    return sorted({p[len(base) + 1 :] if p.startswith(base + "/") else p for _, p in changes})


def batches(root: Path, debounce_ms: int = 1600, stop: threading.Event | None = None) -> Iterator[list[str]]:
    """Relative paths changed, one list per quiet period: a checkout of thousands of files is one batch."""
    from watchfiles import watch

    for changes in watch(root, watch_filter=change_filter(root), debounce=debounce_ms, step=200, stop_event=stop,
                         raise_interrupt=False):
        yield relative_batch(root, changes)

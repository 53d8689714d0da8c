"""Worker processes for the index run (parse shares, the injection scan) that never outlive the run.

Spawned, not forked: fork is unsafe in a threaded host (the MCP server). A pool's worker waits for its next job
on a pipe that its parent's death does not close, so an index run killed with SIGKILL (or by the OOM killer) left
its workers waiting forever; each worker now watches its parent and exits when it is gone.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

PARENT_CHECK_SECONDS = 1.0


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes, each of which exits when this process does, however it ends."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_exit_with_parent, initargs=(os.getpid(),))


def _exit_with_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:  # a parent that dies hands its children to another process
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()

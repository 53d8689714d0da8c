"""Worker processes for the index run (parse shares, the injection scan) that never outlive the run.

Spawned, not forked: fork is unsafe in a threaded host (the MCP server). A pool's worker waits for its next job
on a pipe that its parent's death does not close, so an index run killed with SIGKILL (or by the OOM killer) left
its workers waiting forever; each worker now watches its parent and exits when it is gone.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import weakref
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

PARENT_CHECK_SECONDS = 1.0


class _Pool(ProcessPoolExecutor):
    """Spawns each worker with SIGINT blocked, until its initializer ignores it: a Ctrl-C (sent to the terminal's
    whole process group) during a worker's start-up would print its KeyboardInterrupt traceback."""

    def _spawn_process(self) -> None:
        with _sigint_blocked():
            super()._spawn_process()
        _spawned.update(self._processes.values())


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes, each of which exits when this process does, however it ends, and
    ignores Ctrl-C: the main process alone reports an interrupted run, in one line."""
    pool = _Pool(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                 initializer=_exit_with_parent, initargs=(os.getpid(),))
    _open_pools.add(pool)
    return pool


_open_pools: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()
_spawned: weakref.WeakSet[multiprocessing.process.BaseProcess] = weakref.WeakSet()  # every worker, until collected


def end_pools() -> None:
    """Stop the pools still open as the process ends and kill every worker still alive: an MCP server whose client
    hung up mid-index ended through the exit handlers, and multiprocessing's joined a worker that waited for its
    next job forever (the server never exited). A pool shut down without waiting no longer lists its workers,
    so they are killed from the list kept as they were spawned. After a finished run nothing is alive: no-op."""
    for pool in list(_open_pools):
        pool.shutdown(wait=False, cancel_futures=True)
    for process in list(_spawned):
        if process.is_alive():
            process.kill()


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back in this thread (the spawned process inherits the mask); one that arrives meanwhile is
    delivered when it ends."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: nothing to inherit
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _exit_with_parent(parent: int) -> None:
    signal.signal(signal.SIGINT, _end_quietly)
    if hasattr(signal, "pthread_sigmask"):  # blocked since its spawn (`_Pool`): a pending Ctrl-C is delivered now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    def watch() -> None:
        while os.getppid() == parent:  # a parent that dies hands its children to another process
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _end_quietly(signum: int, frame: object) -> None:
    """Ctrl-C: the worker ends at once and says nothing; the parent, which got it too, reports the run in one line
    (and does the share again itself if it alone was spared). Ignoring it instead kept the worker at its job (a
    whole injection scan) while the interrupted parent waited for it to exit."""
    os._exit(128 + signum)

"""Leave the process without Python's interpreter teardown once a command is done.

With Chroma, onnxruntime and pydantic loaded, finalization (freeing thousands of modules and classes) took
~0.25 s after the last exit handler: a seventh of a one-file incremental `assay index`, paid by every command.
Nothing Assay writes depends on it: SQLite commits and Chroma's log are durable when each call returns, and
the exit handlers (logging, Prefect's workers, temporary folders) still run first.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_code(exc: SystemExit) -> int:
    """SystemExit's code as the process would report it (a message means 1, after printing it)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def exit_now(code: int) -> NoReturn:
    """Run the exit handlers, flush, and end the process. A normal exit instead when a live non-daemon thread
    would be joined by one, or a profiler or tracer (cProfile, a debugger, coverage) writes its results after
    the program returns."""
    threads = any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread())
    if threads or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            pass
    os._exit(code)

"""Leave the process without Python's interpreter teardown once a command is done.

With Chroma, onnxruntime and pydantic loaded, finalization (freeing thousands of modules and classes) took
~0.25 s after the last exit handler: a seventh of a one-file incremental `assay index`, paid by every command.
Nothing Assay writes depends on it: SQLite commits and Chroma's log are durable when each call returns, and
the exit handlers (logging, Prefect's workers, temporary folders) still run first.
"""

from __future__ import annotations

import atexit
import io
import os
import sys
import threading
from typing import NoReturn

LOST_OUTPUT = "error: stdout is closed: the output was lost"


class _ClosedStream(io.TextIOBase):
    """Stands in for a stream the process started without (`>&-`, `2>&-`), where Python leaves None and every
    print or flush would fail with AttributeError; it remembers whether anything was meant to go there."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self) -> None:
        super().__init__()
        self.lost = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.lost = self.lost or bool(text)
        return len(text)


def prepare_streams() -> None:
    """Make output unable to crash a command: a character the terminal's code page (cp1252) lacks is replaced,
    not a UnicodeEncodeError, and a stream closed at start-up becomes a stand-in that records lost output."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, _ClosedStream())
        elif isinstance(stream, io.TextIOWrapper):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (OSError, ValueError):  # already closed or detached: nothing to mend
                pass


def lost_output(code: int) -> int:
    """The exit code once output is accounted for: a command whose result went to a closed stdout failed, as
    `echo hi >&-` does (a lost warning on a closed stderr does not)."""
    if code == 0 and isinstance(sys.stdout, _ClosedStream) and sys.stdout.lost:
        print(LOST_OUTPUT, file=sys.stderr)
        return 1
    return code


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
        except (OSError, ValueError, AttributeError):  # a closed pipe, or a stream closed at start-up (None)
            pass
    os._exit(code)

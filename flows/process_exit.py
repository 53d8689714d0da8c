"""Leave the process without Python's interpreter teardown once a command is done.

With Chroma, onnxruntime and pydantic loaded, finalization (freeing thousands of modules and classes) took
~0.25 s after the last exit handler: a seventh of a one-file incremental `assay index`, paid by every command.
Nothing Assay writes depends on it: SQLite commits and Chroma's log are durable when each call returns, and
the exit handlers (logging, Prefect's workers, temporary folders) still run first.
"""

from __future__ import annotations

import atexit
import errno
import io
import os
import signal
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


class _NoteStream:
    """stderr that cannot fail a command: a notice that found no room (`2>/dev/full`) is dropped, and the results
    still reach stdout (the failed notice ended `search` before its rows, exit 1)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        try:
            return self._inner.write(text)  # type: ignore[attr-defined]
        except OSError:
            return len(text)

    def flush(self) -> None:
        try:
            self._inner.flush()  # type: ignore[attr-defined]
        except OSError:
            pass

    def __getattr__(self, name: str) -> object:  # isatty, fileno, encoding...: the stream's own
        return getattr(self._inner, name)


def prepare_streams() -> None:
    """Make output unable to crash a command: a character the terminal's code page (cp1252) lacks is replaced,
    not a UnicodeEncodeError, a stream closed at start-up becomes a stand-in that records lost output, and a
    notice stderr cannot take is dropped."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, _ClosedStream())
        elif isinstance(stream, io.TextIOWrapper):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (OSError, ValueError):  # already closed or detached: nothing to mend
                pass
    if not isinstance(sys.stderr, _ClosedStream):
        sys.stderr = _NoteStream(sys.stderr)  # type: ignore[assignment]


def raise_open_file_limit(most: int = 65_536) -> None:
    """The soft open-file limit up to the hard one (as Go's runtime does at start): macOS's default soft limit of
    256 ran a long-lived MCP server serving many workspaces out of descriptors, while the hard limit allowed more."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = most if hard == resource.RLIM_INFINITY else min(hard, most)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):  # a sandbox that refuses: the soft limit stands
            pass


def lost_output(code: int) -> int:
    """The exit code once output is accounted for: a command whose result went to a closed stdout failed, as
    `echo hi >&-` does (a lost warning on a closed stderr does not)."""
    if code == 0 and isinstance(sys.stdout, _ClosedStream) and sys.stdout.lost:
        print(LOST_OUTPUT, file=sys.stderr)
        return 1
    return code


_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def full_device(exc: OSError) -> int | None:
    """A write that found no room (the output redirected to a full disk, a quota, a file-size limit): one line and
    exit code 1, as for a closed stdout, instead of a traceback; None for any other error."""
    if exc.errno not in _FULL:
        return None
    print(f"error: cannot write: {exc.strerror or exc}; free some space (or write the output elsewhere) and run it "
          f"again", file=sys.stderr)
    return 1


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
    _quiet_interrupts(code)
    threads = any(t.is_alive() and not t.daemon and not _tool_worker(t)
                  for t in threading.enumerate() if t is not threading.main_thread())
    if threads or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    workers = sys.modules.get("assay.stages.core.workers")  # loaded only by a run that made a worker pool
    if workers is not None:
        workers.end_pools()  # a run cut short (its MCP client hung up) left workers multiprocessing's handler would join
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _tool_worker(thread: threading.Thread) -> bool:
    """AnyIO's worker threads, which ran the MCP server's tool calls: idle in a queue once the client hung up, they
    are no work to wait for. Counting them made the exit a normal interpreter teardown while an index run's (daemon)
    thread was inside ONNX Runtime or Chroma, whose C++ teardown then aborted the server (SIGABRT, "terminate
    called without an active exception") each time an IDE closed its stdin mid-index."""
    return thread.name.startswith("AnyIO worker thread")


def _quiet_interrupts(code: int) -> None:
    """The command is done: a Ctrl-C during the teardown (joining a worker pool's manager thread) ends the
    process at once with the command's own code, instead of "Exception ignored ... KeyboardInterrupt"."""
    if threading.current_thread() is not threading.main_thread():
        return

    def end(signum: int, frame: object) -> None:
        _flush()
        os._exit(code)

    signal.signal(signal.SIGINT, end)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe, or a stream closed at start-up (None)
            pass

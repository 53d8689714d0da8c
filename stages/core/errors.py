"""How an error reads in one line: what every door (CLI, MCP, the status file) shows a person."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import PurePath

from assay.stages.core.workspace import STATE_DIR

# what SQLite (the catalog, Chroma's metadata), Chroma's Rust reader and the OS say when a write finds no space
_DISK_FULL_TEXTS = ("database or disk is full", "no space left on device")
DISK_FULL_ADVICE = "free space on that disk and run the command again (what was indexed before is kept)"
_UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
_SQLITE_IO_TEXT = "disk i/o error"
_NEARLY_FULL = 1024 * 1024  # SQLite's WAL index (`-shm`) alone takes 32 KB; below a megabyte a disk is full in effect
# what ONNX Runtime (C++'s std::bad_alloc, its arena), numpy and the OS say when an allocation fails
_MEMORY_TEXTS = ("bad_alloc", "failed to allocate memory", "unable to allocate", "cannot allocate memory",
                 "out of memory")
MEMORY_ADVICE = ("close other programs or raise this process's memory limit (`ulimit -v`), or use the smaller "
                 "embedder ASSAY_EMBEDDER=static (a workspace indexed with another embedder is re-embedded) or a "
                 "smaller ASSAY_EMBED_BATCH")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The error and those it was raised from or during."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def disk_full(exc: BaseException) -> bool:
    """True when the error, or one it was raised from, is a full disk: worth its own advice, since the remedy is
    space, not a rebuild (a rebuild would throw away an index that is whole). SQLite's "disk I/O error" (it could
    not grow a `-wal`/`-shm` file) counts when a disk the error touches has no space left."""
    return any((isinstance(e, OSError) and e.errno == errno.ENOSPC)
               or any(text in str(e).lower() for text in _DISK_FULL_TEXTS) for e in _chain(exc)) \
        or (sqlite_io_error(exc) and any(_no_space(folder) for folder in _folders_touched(exc)))


def sqlite_io_error(exc: BaseException) -> bool:
    """SQLite's "disk I/O error": a full disk, a file-size limit or a failing disk, it does not say which."""
    return any(_SQLITE_IO_TEXT in str(e).lower() for e in _chain(exc))


def _folders_touched(exc: BaseException) -> list[str]:
    """Folders the error names (OSError file names) and the current folder: where a full disk is looked for."""
    named = [str(e.filename) for e in _chain(exc) if isinstance(e, OSError) and e.filename]
    try:
        return [*named, os.getcwd()]
    except OSError:  # the current folder was deleted
        return named


def _no_space(path: str) -> bool:
    """Whether the disk holding `path` (its nearest existing folder) has (almost) no space left for this user."""
    while path and not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):  # no statvfs on Windows
        return False
    return st.f_bavail * st.f_frsize < _NEARLY_FULL


def out_of_file_handles(exc: BaseException) -> bool:
    """True when the error, or one it was raised from, is the open-file limit (EMFILE, ENFILE, or a library's
    "Too many open files" text): a stage that opened one file more said only `[Errno 24] ...: 'x.py'`."""
    if any((isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE))
           or "too many open files" in str(e).lower() for e in _chain(exc)):
        return True
    # SQLite names no cause: "unable to open database file" with hardly a descriptor left is the limit
    return any("unable to open database file" in str(e).lower() for e in _chain(exc)) and _few_descriptors_left()


def _few_descriptors_left() -> bool:
    counted = open_files()
    return counted is not None and nearly_out(*counted)


def open_files() -> tuple[int, int] | None:
    """(files this process has open, its soft RLIMIT_NOFILE); None where either cannot be told (no /proc, no limit)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder)), limit
        except OSError:
            continue
    return None


def nearly_out(count: int, limit: int) -> bool:
    """Few descriptors left: an open that failed then failed for the limit, not for the file."""
    return limit - count < max(16, limit // 8)


def _file_limit() -> str:
    try:
        import resource
    except ImportError:
        return ""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return "" if soft == resource.RLIM_INFINITY else f" (limit {soft})"


def out_of_memory(exc: BaseException) -> bool:
    """True when the error, or one it was raised from, is an allocation that failed (Python's MemoryError, ONNX
    Runtime's `bad_alloc` / "Failed to allocate memory", ENOMEM)."""
    return any(isinstance(e, MemoryError) or (isinstance(e, OSError) and e.errno == errno.ENOMEM)
               or any(text in str(e).lower() for text in _MEMORY_TEXTS) for e in _chain(exc))


def _refused_state_folder(exc: BaseException) -> tuple[str, str] | None:
    """The `.assay` folder (a workspace's, or Assay's home ~/.assay) a write was refused in, and why, if so."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in _UNWRITABLE and e.filename:
            parts = PurePath(str(e.filename)).parts
            if STATE_DIR in parts:
                folder = PurePath(*parts[: parts.index(STATE_DIR) + 1])
                return str(folder), (e.strerror or "not writable").lower()
    return None


def _assay_home_of(name: str) -> str | None:
    """Assay's per-user home (ASSAY_HOME or ~/.assay, which need not be named `.assay`) that holds `name`, if one
    does: not a workspace's `.assay/`."""
    from assay.stages.core.registry import home_folders

    try:
        real, homes = PurePath(os.path.realpath(name)), home_folders()
    except (RuntimeError, OSError):  # no home directory to compare with
        return None
    return next((str(home) for home in homes if real == home or home in real.parents), None)


def _is_assay_home(folder: str) -> bool:
    return _assay_home_of(folder) is not None


def unwritable_state(exc: BaseException) -> tuple[str, str] | None:
    """The workspace's `.assay/` folder a write was refused in (a read-only checkout, another user's folder), and
    why, if so. Assay's home (ASSAY_HOME, ~/.assay) is not a workspace's: `unwritable_home` says that one."""
    refused = _refused_state_folder(exc)
    return None if refused is None or _is_assay_home(refused[0]) else refused


def unwritable_home(exc: BaseException) -> tuple[str, str] | None:
    """Assay's home folder (ASSAY_HOME, or ~/.assay) a write was refused in, and why, if so."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in _UNWRITABLE and e.filename:
            home = _assay_home_of(str(e.filename))
            if home is not None:
                return home, (e.strerror or "not writable").lower()
    return None


def unreadable_state(exc: BaseException) -> str | None:
    """The file under a workspace's `.assay/` a read was refused on (another user's index, a folder made 0700), if
    so: the OSError does not say whether it read or wrote, so the file's own readability decides, and a refused read
    must not be worded as a refused write (searching writes nothing)."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in (errno.EACCES, errno.EPERM) and e.filename:
            name = str(e.filename)
            parts = PurePath(name).parts
            if STATE_DIR in parts and _refuses_reading(name) \
                    and not _is_assay_home(str(PurePath(*parts[: parts.index(STATE_DIR) + 1]))):
                return name
    return None


def _refuses_reading(name: str) -> bool:
    """True when the file (or the folder on its way) exists but this user may not read it."""
    path = name
    while path and not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return bool(path) and not os.access(path, os.R_OK | (os.X_OK if os.path.isdir(path) else 0))


def _shorten(line: str, keep: int = 80) -> str:
    """Its start and its end: ONNX Runtime's errors run to 300 characters and name the cause (`bad_alloc`) last."""
    return line if len(line) <= 2 * keep + 10 else f"{line[:keep]} ... {line[-keep:]}"


LONGEST_LINE = 2_000  # an error quoting a 200,000-character argument (a path) went whole into an agent's context


def one_line(exc: BaseException) -> str:
    """The error's first line, or its type's name when it says nothing; a full disk and a workspace whose
    `.assay/` cannot be written say what to do. At most `LONGEST_LINE` characters: a long quote is cut in its middle."""
    line = _one_line(exc)
    if len(line) <= LONGEST_LINE:
        return line
    keep = (LONGEST_LINE - 40) // 2
    return f"{line[:keep]} ... ({len(line) - 2 * keep:,} characters cut) ... {line[-keep:]}"


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, UnicodeEncodeError) and "surrogates not allowed" in str(exc):
        return ("the text holds bytes that are not valid UTF-8 (a paste from a terminal in another encoding?): "
                "retype it, or set the terminal to UTF-8")
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    if disk_full(exc) and DISK_FULL_ADVICE not in line:
        return f"the disk is full ({line}): {DISK_FULL_ADVICE}"
    if out_of_file_handles(exc) and "ulimit -n" not in line:
        return f"too many open files{_file_limit()}: raise it (`ulimit -n 4096`) and run again ({_shorten(line)})"
    if out_of_memory(exc) and MEMORY_ADVICE not in line:
        return f"Assay ran out of memory ({_shorten(line)}): {MEMORY_ADVICE}"
    if sqlite_io_error(exc) and line.lower() == _SQLITE_IO_TEXT:  # bare: names neither the file nor a cause
        return (f"{line} (SQLite could not read or write a file in an index): if the disk is full, "
                f"{DISK_FULL_ADVICE}; else check the disk and the file-size limit (`ulimit -f`)")
    home = unwritable_home(exc)
    if home is not None and "ASSAY_HOME" not in line:
        return (f"cannot write Assay's home folder {home[0]} ({home[1]}): it holds the workspace list and "
                "downloaded models; set ASSAY_HOME to a writable folder")
    unreadable = unreadable_state(exc)
    if unreadable is not None and "cannot read the index" not in line:
        return (f"cannot read the index file {unreadable} (permission denied): ask its owner to make the workspace's "
                "`.assay/` readable to you (chmod -R a+rX), or index a copy of the workspace you own")
    refused = unwritable_state(exc)
    if refused is not None and "cannot write the index" not in line:
        return (f"cannot write the index at {refused[0]} ({refused[1]}): indexing, `assay audit` and brief "
                "corrections write there (searching and asking do not); make that folder writable, or index a "
                "writable copy of the workspace")
    return line

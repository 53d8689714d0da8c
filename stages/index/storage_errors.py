"""Why a store write or read failed, in a person's words: a full disk, a file-size limit, a damaged vector segment.

Chroma's Rust engine and SQLite name neither the file nor the remedy ("Error in compaction: Error purging logs",
"disk I/O error"); each failure here says where, why and what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assay.stages.core.errors import DISK_FULL_ADVICE, disk_full, nearly_out, one_line, open_files
from assay.stages.core.errors import _chain as error_chain
from assay.stages.core.workspace import state_dir


class StoreError(RuntimeError):
    """The store is missing or damaged; the message says how to recover."""


class DamagedVectors(StoreError):
    """A vector segment Chroma cannot read (its HNSW files cut short or overwritten); `prepare_dense` repairs it."""


# what Chroma's Rust engine says of a segment it cannot read: "Error constructing hnsw segment reader", "Error
# deserializing pickle file", "Error getting embedding"
_DAMAGE_TEXTS = ("hnsw", "segment reader", "deserializ", "pickle", "error getting embedding")
LOW_SPACE = 64 * 1024 * 1024  # below this, a write Chroma fails without naming a cause is taken for a full disk


def free_bytes(path: Path) -> int | None:
    """Free space on the disk that holds `path` (its nearest existing folder); None when it cannot be told."""
    import shutil

    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def no_space(path: Path, exc: BaseException) -> StoreError:
    """A write that found the disk (nearly) full: where, how much is left, and what to do (not a rebuild)."""
    free = free_bytes(path)
    left = f"{_megabytes(free)} free; " if free is not None else ""
    return StoreError(f"no space left on device for {path} ({left}{_chroma_detail(exc)}): {DISK_FULL_ADVICE}")


def _chroma_detail(exc: BaseException) -> str:
    """Chroma's error, its last three causes: its Rust errors chain every layer ("Error executing plan: Error
    sending backfill request to compactor: ... EOF while parsing") into one line too long to read."""
    return ": ".join(one_line(exc).split(": ")[-3:])


FD_ADVICE = "raise it (`ulimit -n 4096`) and run again (the index is not damaged: do not rebuild it)"
# what SQLite and Chroma's Rust engine say, without an errno, when they cannot open one more file
_OPEN_FAILURE_TEXTS = ("unable to open database file", "error loading hnsw index", "hnsw segment reader",
                       "error purging logs", "error executing plan")


def out_of_files(exc: BaseException) -> int | None:
    """The open-file limit when it, not the store, made this error (EMFILE/ENFILE, Rust's "Too many open files", or
    SQLite's "unable to open database file" / Chroma's HNSW load failing with few descriptors left); else None. A
    damaged-store message advised a rebuild that would fail the same way after minutes."""
    import errno

    chain = list(error_chain(exc))
    said = any(getattr(e, "errno", None) in (errno.EMFILE, errno.ENFILE) or "too many open files" in str(e).lower()
               for e in chain)
    counted = open_files()
    if not said and (counted is None or not any(t in str(e).lower() for e in chain for t in _OPEN_FAILURE_TEXTS)):
        return None
    if said:
        return counted[1] if counted else -1
    count, limit = counted
    return limit if nearly_out(count, limit) else None  # few left: the limit, not the files, failed


def too_many_files(exc: BaseException) -> StoreError | None:
    """`out_of_files` in words: the limit, how to raise it, and Chroma's or SQLite's own last words."""
    limit = out_of_files(exc)
    if limit is None:
        return None
    shown = f" (limit {limit})" if limit >= 0 else ""
    detail = _chroma_detail(exc)
    if "ulimit -n" in detail:  # `one_line` gave the advice already: once is enough (it read twice, one in the other)
        detail = detail.rsplit("(", 1)[-1].rstrip(")")
    return StoreError(f"too many open files{shown}: {FD_ADVICE} ({detail})")


def vector_failure(path: Path, exc: BaseException, writing: bool) -> BaseException:
    """What a failed Chroma call on the embedded store at `path` means for a person: a full disk (Chroma's Rust
    writer says "Error in compaction: Error purging logs", no errno: the free space decides), a damaged segment, or
    else Chroma's own error, unchanged."""
    if isinstance(exc, StoreError):
        return exc
    if disk_full(exc):
        return no_space(path, exc)
    if (fds := too_many_files(exc)) is not None:
        return fds
    if any(text in str(exc).lower() for text in _DAMAGE_TEXTS):
        return DamagedVectors(f"the vector store in {path} is damaged ({_chroma_detail(exc)}); run `assay index "
                              "--rebuild`")
    free = free_bytes(path) if writing else None
    if free is not None and free < LOW_SPACE:
        return no_space(path, exc)
    return exc


@contextmanager
def chroma_errors(path: Path | None, writing: bool = False) -> Iterator[None]:
    """Chroma's errors on the embedded store at `path` as `vector_failure` reads them (a server's: unchanged)."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - chroma raises many types
        failure = vector_failure(path, exc, writing) if path is not None else exc
        if failure is exc:
            raise
        raise failure from exc


def storage_failure(root: Path, exc: BaseException) -> StoreError | None:
    """An index run's failure that a limit of the machine caused, said with its remedy: a file-size limit
    (`ulimit -f`: SQLite says only "disk I/O error") or a full disk; None for any other error (or one already
    said in these words)."""
    import errno
    import resource

    if isinstance(exc, StoreError) or disk_full(exc):
        return None  # said already (`one_line` words a full disk)
    if (fds := too_many_files(exc)) is not None:
        return fds
    text = str(exc).lower()
    errnos = {getattr(e, "errno", None) for e in error_chain(exc)}
    if "disk i/o error" not in text and "error in compaction" not in text and not errnos & {errno.EFBIG, errno.EIO}:
        return None
    folder = state_dir(root)
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and (errno.EFBIG in errnos or "disk i/o error" in text):
        largest = max(((p.stat().st_size, p.name) for p in folder.rglob("*") if p.is_file()), default=None)
        at = f"; {largest[1]} there has {_megabytes(largest[0])}" if largest else ""
        return StoreError(f"a write in {folder} went past this process's file-size limit ({_megabytes(limit)}, `ulimit "
                          f"-f`{at}) ({one_line(exc)}); raise the limit and run `assay index` again")
    free = free_bytes(folder)
    if free is not None and free < LOW_SPACE:
        return no_space(folder, exc)
    if "disk i/o error" in text:
        return StoreError(f"a disk I/O error while writing the index in {folder} ({one_line(exc)}); check that disk "
                          "(free space, file-size limits, the system log), then run `assay index` again")
    return None

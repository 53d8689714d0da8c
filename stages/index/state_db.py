"""The workspace's SQLite state databases (catalog, embedding cache): opened in WAL, read-only where the folder is,
and every damage error turned into one line that names the file and the remedy.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from assay.stages.core.errors import one_line
from assay.stages.core.workspace import make_state_dir, not_writable, path_too_long, state_dir, writable
from assay.stages.index.storage_errors import StoreError


_DAMAGE_CODES = (11, 26)  # SQLITE_CORRUPT ("database disk image is malformed"), SQLITE_NOTADB ("file is not a database")


def is_damage(exc: BaseException) -> bool:
    """SQLite says the file itself is damaged (not locked, not a bad query, not a full disk)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    return type(exc) is sqlite3.DatabaseError if code is None else code & 0xFF in _DAMAGE_CODES


class _GuardedCursor(sqlite3.Cursor):
    """A cursor whose damage errors name the file and the remedy: a page damaged past the header passes the open's
    check and fails only when a query reads it, as a bare "database disk image is malformed" at every door."""

    def _guard(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                raise damaged_db(self.connection.path, exc) from exc
            raise

    def execute(self, *args: Any) -> sqlite3.Cursor:
        return self._guard(super().execute, *args)

    def executemany(self, *args: Any) -> sqlite3.Cursor:
        return self._guard(super().executemany, *args)

    def executescript(self, *args: Any) -> sqlite3.Cursor:
        return self._guard(super().executescript, *args)

    def fetchone(self) -> Any:
        return self._guard(super().fetchone)

    def fetchmany(self, *args: Any) -> list[Any]:
        return self._guard(super().fetchmany, *args)

    def fetchall(self) -> list[Any]:
        return self._guard(super().fetchall)

    def __next__(self) -> Any:  # rows are read lazily: the damaged page may come mid-iteration
        return self._guard(super().__next__)


class _GuardedConnection(sqlite3.Connection):
    """A state database whose every statement runs through `_GuardedCursor` (`Connection.execute` does not ask
    `cursor()` for its cursor, so it is routed here); `path` names the file in the error."""

    path: Path

    def cursor(self, factory: Any = _GuardedCursor) -> sqlite3.Cursor:  # type: ignore[override]
        return super().cursor(factory)

    def execute(self, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        return self.cursor().execute(*args)

    def executemany(self, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        return self.cursor().executemany(*args)

    def executescript(self, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        return self.cursor().executescript(*args)

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                raise damaged_db(self.path, exc) from exc
            raise


def _connect(path: Path, target: str, **kwargs: Any) -> sqlite3.Connection:
    db = sqlite3.connect(target, factory=_GuardedConnection, **kwargs)
    db.path = path  # type: ignore[attr-defined]
    return db


def open_state_db(root: Path, name: str) -> sqlite3.Connection:
    """A SQLite database in the workspace's `.assay/` (WAL: readers never block the index writer). In a folder this
    process cannot write (a read-only mount, another user's checkout) an existing database is opened for reading,
    so an index built elsewhere still answers; a write through it fails there."""
    if (too_long := path_too_long(root)) is not None:  # SQLite would say only "unable to open database file"
        raise too_long
    folder = state_dir(root)
    if folder.is_dir() and not writable(folder) and (folder / name).exists():
        return _read_only_db(folder / name)
    folder = make_state_dir(root)
    try:
        db = _connect(folder / name, str(folder / name), timeout=60, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # a damaged header fails here, not mid-run
    except sqlite3.OperationalError as exc:  # "unable to open database file" names neither the file nor why
        if not writable(folder):  # WAL writes its index beside the database, a reader too
            raise not_writable(folder) from exc
        raise
    except sqlite3.DatabaseError as exc:  # "file is not a database" / "malformed": names no file, advises nothing
        raise damaged_db(folder / name, exc) from exc
    return db


class DamagedDatabase(StoreError):
    """A state database SQLite cannot read; `assay index --rebuild` sets it aside and starts afresh."""


def damaged_db(path: Path, exc: BaseException) -> DamagedDatabase:
    return DamagedDatabase(f"{path} is damaged ({one_line(exc)}); run `assay index --rebuild` (it sets the file "
                           f"aside as {path.name}.damaged and starts a fresh one)")


def db_damage(path: Path) -> str:
    """Why SQLite cannot read the database at `path` ("" when it can, or it does not exist): its header and a
    quick check of every page, as a rebuild must know before it trusts the file."""
    if not path.exists():
        return ""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
    except sqlite3.Error as exc:
        return one_line(exc)
    try:
        rows = db.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.OperationalError:  # locked or unreadable (permissions): not damage, the open says why
        return ""
    except sqlite3.DatabaseError as exc:
        return one_line(exc)
    finally:
        db.close()
    if rows == [("ok",)]:
        return ""
    # quick_check's report spans lines ("*** in database main ***\nPage 5: ..."): one line in a message
    return " ".join(str(rows[0][0]).split()).removeprefix("*** in database main *** ") if rows else "no result from its check"


STATE_DATABASES = ("catalog.sqlite", "embed_cache.sqlite")


QUICK_CHECK_BYTES = 256 * 2**20  # `PRAGMA quick_check` reads every page (~0.1 s per 64 MB): a plain run checks below this


def damaged_dbs(root: Path, most_bytes: int | None = None, names: Iterable[str] = STATE_DATABASES) -> dict[str, str]:
    """State database name -> why SQLite cannot read it, for those of `names` that are damaged. With `most_bytes`, a
    larger file is not checked (a plain index run must stay quick; a read of a damaged page still names the remedy)."""
    found: dict[str, str] = {}
    for name in names:
        path = state_dir(root) / name
        size = path.stat().st_size if path.exists() else 0
        if most_bytes is not None and size > most_bytes:
            continue
        if why := db_damage(path):
            found[name] = why
    return found


def set_aside_damaged_dbs(root: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Move each state database SQLite cannot read (and its WAL files, which a fresh file must not inherit) to
    `<name>.damaged`, kept rather than deleted, so a rebuild starts afresh: the catalog is re-parsed, the embedding
    cache (only a cache) refills. `names` (found damaged already) skips checking them again. Returns the paths set
    aside."""
    folder = state_dir(root)
    moved: list[Path] = []
    for name in STATE_DATABASES if names is None else names:
        path = folder / name
        if names is None and not db_damage(path):
            continue
        for part in (path, path.with_name(f"{name}-wal"), path.with_name(f"{name}-shm")):
            if part.exists():
                os.replace(part, part.with_name(f"{part.name}.damaged"))
        moved.append(path.with_name(f"{name}.damaged"))
    return moved


def _read_only_db(path: Path) -> sqlite3.Connection:
    """A WAL database read without writing: `mode=ro` shares the writer's WAL index where its files are there (a
    live index run); with none to share (a finished index on a read-only mount) SQLite can only read it as
    immutable, which is what such a mount is."""
    uri = path.resolve().as_uri()
    for flags in ("mode=ro", "immutable=1"):
        db = _connect(path, f"{uri}?{flags}", uri=True, timeout=60, check_same_thread=False)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db.close()
        except sqlite3.DatabaseError as exc:
            db.close()
            raise damaged_db(path, exc) from exc
    raise not_writable(path.parent)

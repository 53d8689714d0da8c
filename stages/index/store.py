"""Store stage: vectors in Chroma, entity records in a SQLite catalog, BM25 beside them.

All three live in the workspace's own `.assay/` folder (or vectors on a Chroma server when
ASSAY_CHROMA_URL is set). Writes from any process hold `.assay/write.lock`; readers never
take it. Upserts use stable ids in bounded batches; nothing is deleted before its
replacement is written. The SQLite files open through `state_db`; failures are worded by `storage_errors`.
"""

from __future__ import annotations

import copy
import os
import shlex
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout

from assay.stages.core.artifacts import Edge, EmbeddedBatch, Entity, IndexManifest, ParseResult
from assay.stages.core.errors import DISK_FULL_ADVICE, disk_full, one_line
from assay.stages.core.progress import run_under_way
from assay.stages.core.workspace import (
    STATE_DIR, WorkspaceError, collection_name, indexed_workspace_of, make_state_dir, of_base, path_too_long, state_dir,
    unindexable_here, writable,
)
from assay.stages.core.writer import HOLDER_FILE, clear_writer, other_writer, record_writer
from assay.stages.index.lexical import LexicalIndex
from assay.stages.index.state_db import open_state_db, set_aside_damaged_dbs
from assay.stages.index.storage_errors import DamagedVectors, StoreError, _chroma_detail, chroma_errors, too_many_files
from assay.stages.index.term_counts import TermCounts
from assay.stages.index.tokens import TOKENIZER_VERSION, token_string

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@lru_cache(maxsize=1)
def _base_chroma_settings():
    """Built once: chroma's Settings reads the environment (~20 ms), which once per query is too much."""
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)


def _chroma_settings():
    """A copy per client: chroma's client constructors write into the settings they are given (HttpClient sets
    the server's host and API), so a shared object sent every later PersistentClient of the process to the server."""
    return copy.copy(_base_chroma_settings())


def set_aside_damaged_store(root: Path) -> Path | None:
    """Move a vector store that cannot be opened out of the way (kept, not deleted) so a rebuild can start."""
    path = state_dir(root) / "chroma"
    if not path.exists():
        return None
    import time

    target = path.with_name(f"chroma.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
    os.replace(path, target)
    forget_cached_client(root)
    return target


def forget_cached_client(root: Path) -> None:
    """Chroma caches one client system per folder (a broken one too); drop and stop only this workspace's, and
    release its kept readers (a forgotten or replaced store's files stayed open in them)."""
    _stop_system(str(state_dir(root) / "chroma"))
    forget_readers(root)


def _stop_system(key: str) -> None:
    """Drop Chroma's cached client system of the store folder `key` and stop it: popped only, it kept its files
    (~7 descriptors) and Rust threads (~6) open for the life of the process, one more set per rebuild and per
    workspace a long-lived MCP server had touched, until the open-file limit aborted the server."""
    from chromadb.api.shared_system_client import SharedSystemClient

    system = SharedSystemClient._identifier_to_system.pop(key, None)
    SharedSystemClient._identifier_to_refcount.pop(key, None)
    _opened_stores.pop(key, None)
    if system is not None:
        try:
            system.stop()
        except Exception:  # noqa: BLE001 - a system that failed to start, or a store deleted under it: dropped anyway
            pass


_client_lock = threading.Lock()
_opened_stores: dict[str, tuple[int, int] | None] = {}  # chroma folder -> its database file when this process opened
# it, least recently used first
MAX_OPEN_STORES = 6  # client systems kept open at once: an MCP server touching 50 workspaces ran out of descriptors
_writing: dict[str, int] = {}  # chroma folder -> write locks this process holds on it: its system is never closed
_restart_stores: set[str] = set()  # chroma folders whose system a dropped collection left holding files (`drop`)


def _close_idle_stores(keep: str) -> None:
    """Stop the least recently used client systems beyond `MAX_OPEN_STORES` (none that this process is writing):
    the next use of one opens it again (~50 ms)."""
    idle = [key for key in _opened_stores if key != keep and not _writing.get(key)]
    for key in idle[: max(len(_opened_stores) - kept_open(MAX_OPEN_STORES), 0)]:
        _stop_system(key)


def store_identity(root: Path) -> tuple[int, int] | None:
    """(device, inode) of the workspace's Chroma database file: it changes when another process deletes `.assay`
    and indexes again, which a client system cached in this process would not notice."""
    try:
        st = (state_dir(root) / "chroma" / "chroma.sqlite3").stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def chroma_client(root: Path, url: str | None):
    """PersistentClient in `.assay/chroma`, or HttpClient when a server URL is configured. One at a time per
    process: Chroma registers a folder's shared system before starting it, so a second thread opening the same
    folder meanwhile got a half-started one ("'RustBindingsAPI' object has no attribute 'bindings'")."""
    with _client_lock:
        return _open_chroma_client(root, url)


def _open_chroma_client(root: Path, url: str | None):
    import chromadb

    if url:
        from assay.stages.index.chroma_http import http_client

        try:
            return http_client(url, _chroma_settings())
        except Exception as exc:  # noqa: BLE001 - chroma raises ValueError for a server that does not answer
            raise unreachable(url, exc) from exc
    path = make_state_dir(root) / "chroma"  # never `parents=True`: a moved workspace must not be made again
    path.mkdir(exist_ok=True)
    key = str(path)
    if key in _opened_stores and (_opened_stores[key] != store_identity(root) or key in _restart_stores):
        # Replaced since: Chroma's cached system still reads the deleted files (stale results, or "expecting
        # embedding with dimension of 384" after a re-index with another embedder). Start a fresh one. (Or a
        # collection was dropped: the system kept its files open.)
        forget_cached_client(root)
    _restart_stores.discard(key)
    try:
        client = chromadb.PersistentClient(path=key, settings=_chroma_settings())
    except Exception as exc:  # noqa: BLE001 - chroma raises many types for a damaged folder
        if not _writing.get(key):  # a half-started system stays cached otherwise, its files open
            _stop_system(key)
        raise unopenable(path, exc) from exc
    _opened_stores.pop(key, None)
    _opened_stores[key] = store_identity(root)  # now the most recently used
    _close_idle_stores(keep=key)
    return client


def unreachable(url: str, exc: BaseException) -> StoreError:
    """A Chroma server that does not answer: which one, and the two ways on (BM25 search works meanwhile). The error
    carries the URL (`server_url`), so a search can say so in its own words: an index run's advice is not a reader's."""
    from assay.stages.core.llm_clients import shown_url

    url = shown_url(url)  # a user:password in the URL stays out of reports
    error = StoreError(f"the Chroma server at {url} does not answer ({one_line(exc)}); start it (`chroma run --path DIR`) "
                       "or unset ASSAY_CHROMA_URL, then run `assay index` again to store the missing vectors")
    error.server_url = url  # type: ignore[attr-defined]
    return error


def unopenable(path: Path, exc: BaseException, read_only: bool = False) -> StoreError | WorkspaceError:
    """A store folder Chroma cannot open, whichever way it is read: say so and how to start over (a full disk:
    how to go on, since starting over would throw a whole store away; a path too long for SQLite: not a StoreError,
    so no rebuild sets the healthy store aside; too many open files: the limit, as a rebuild would fail the same
    way; a `read_only` workspace: no rebuild, which it cannot take)."""
    if path.parent.name == STATE_DIR and (too_long := path_too_long(path.parent.parent)) is not None:
        return too_long
    if disk_full(exc):
        return StoreError(f"the vector store in {path} cannot be opened: the disk is full; {DISK_FULL_ADVICE}")
    if (fds := too_many_files(exc)) is not None:
        return fds
    if read_only:
        return StoreError(f"the vector store in {path} cannot be read ({one_line(exc)}); this workspace is read-only: "
                          "ask its owner to run `assay index` there, or index a writable copy of it")
    return StoreError(f"the vector store in {path} cannot be opened ({one_line(exc)}); run `assay index --rebuild`")


class WriterBusy(TimeoutError):
    """Another Assay run held the workspace's write lock for the whole wait (filelock's message named only a file)."""


def _holder(root: Path, pid: int | None) -> str:
    """The write lock's holder in words, with when it took the lock (its `write.holder` file's time)."""
    import time

    if pid is None:  # unrecorded, or this process's own other task (an MCP server's index run)
        return "another Assay run (an index, a watch or an MCP server's task)"
    try:
        since = (state_dir(root) / HOLDER_FILE).stat().st_mtime
    except OSError:
        return f"another Assay run (pid {pid})"
    shown = time.strftime("%H:%M:%S" if time.time() - since < 86400 else "%Y-%m-%d %H:%M", time.localtime(since))
    return f"another Assay run (pid {pid}, started {shown})"


def writer_wait_note(root: Path, pid: int | None, timeout: float) -> str:
    return f"waiting for {_holder(root, pid)} on this workspace (one run writes it at a time; up to {timeout:.0f} s)"


def writer_busy_message(root: Path, pid: int | None, timeout: float) -> str:
    stop = f"stop it (`kill {pid}`)" if pid is not None else "stop that run"
    return (f"{_holder(root, pid)} kept this workspace's write lock for all of {timeout:.0f} s; run again once it has "
            f"finished, or {stop} and run again")


STORE_WRITER = "chroma.writer"  # in `.assay/`: which process last held the write lock (a `chroma.` name: forget's)
_PROCESS_MARK = os.urandom(4).hex()  # with the pid: a pid the system used again is not this process


def claim_store(root: Path) -> None:
    """Called by the write lock's new holder. Chroma's client system, cached per process, keeps its own view of the
    store (its HNSW graph in memory): once another process had written the store, a long-lived writer's cached
    client missed those vectors, and its damage probe set a healthy store aside after every rename that a terminal
    indexed (`assay watch`, an MCP server). So the lock's holders note themselves, and one taking over from another
    process opens a fresh client."""
    path = state_dir(root) / STORE_WRITER
    mine = f"{os.getpid()}-{_PROCESS_MARK}"  # read now: a forked child is another writer
    try:
        if path.read_text(encoding="utf-8") == mine:
            return
    except OSError:
        pass
    if "chromadb.api.shared_system_client" in sys.modules:  # else no client was opened here: none to drop
        with _client_lock:
            forget_cached_client(root)
    tmp = path.with_name(f"{STORE_WRITER}.{os.getpid()}.tmp")
    tmp.write_text(mine, encoding="utf-8")
    os.replace(tmp, path)


@contextmanager
def write_lock(root: Path, timeout: float = 600.0, on_wait: Callable[[int | None], None] | None = None) -> Iterator[None]:
    """Serialise writers across processes (two IDEs on one workspace); readers never wait. The holder's pid is
    recorded beside the lock (`stages.core.writer`); `on_wait(pid)` hears that another writer has it first."""
    folder = make_state_dir(root)
    lock = FileLock(str(folder / "write.lock"), timeout=timeout)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        holder = other_writer(root)
        print(f"note: {writer_wait_note(root, holder, timeout)}", file=sys.stderr, flush=True)  # a silent wait
        if on_wait is not None:  # of minutes looked like a hang, from every door (index, watch, MCP remember)
            on_wait(holder)
        try:
            lock.acquire()
        except Timeout as exc:
            raise WriterBusy(writer_busy_message(root, other_writer(root), timeout)) from exc
    store = str(folder / "chroma")
    with _client_lock:
        _writing[store] = _writing.get(store, 0) + 1
    try:
        record_writer(root)
        claim_store(root)
        yield
    finally:
        with _client_lock:
            _writing[store] -= 1
            if not _writing[store]:
                del _writing[store]
        clear_writer(root)
        lock.release()


_CATALOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (id TEXT PRIMARY KEY, file TEXT NOT NULL, kind TEXT NOT NULL, language TEXT NOT NULL,
    name TEXT NOT NULL, part INTEGER NOT NULL, qualname TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS entities_name ON entities(name);
CREATE INDEX IF NOT EXISTS entities_qualname ON entities(qualname);
CREATE INDEX IF NOT EXISTS entities_file ON entities(file);
CREATE TABLE IF NOT EXISTS edges (file TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, line INTEGER NOT NULL,
    source TEXT NOT NULL, source_id TEXT NOT NULL, receiver TEXT NOT NULL, module TEXT NOT NULL, alias TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS edges_name ON edges(name);
CREATE INDEX IF NOT EXISTS edges_source ON edges(source_id);
CREATE INDEX IF NOT EXISTS edges_file ON edges(file);
CREATE TABLE IF NOT EXISTS {tokens} (id TEXT PRIMARY KEY, tokens TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lexical_changes (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS injection_scans (id TEXT PRIMARY KEY, detector TEXT NOT NULL, digest TEXT NOT NULL,
    score REAL NOT NULL, signals TEXT NOT NULL);
""".format(tokens=f"lexical_tokens_v{TOKENIZER_VERSION}")
_TOKENS = f"lexical_tokens_v{TOKENIZER_VERSION}"
_ALL_CHANGED = "*"  # in lexical_changes: no BM25 build may start from the last one


@lru_cache(maxsize=4096)
def _entity(data: str) -> Entity:
    """An entity from its stored JSON, parsed once per exact text (queries read the same passages again and
    again): shared, so callers copy before changing one."""
    return Entity.model_validate_json(data)


class Catalog:
    """Entity records by id, in SQLite (atomic transactions, safe for concurrent readers)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._db = open_state_db(root, "catalog.sqlite")
        self._db.executescript(_CATALOG_SCHEMA)
        self._others: list[str] | None = None

    def replace(self, upserts: list[Entity], deletes: Iterable[str], tokens: dict[str, str] | None = None) -> None:
        """Upsert entities (with their BM25 tokens: given, or computed here) and delete ids, in one transaction."""
        tokens = tokens or {}
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO entities (id, file, kind, language, name, part, qualname, data)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(e.id, e.file, e.kind, e.language, e.name, e.part, e.qualname, e.model_dump_json()) for e in upserts],
            )
            self._db.executemany(f"INSERT OR REPLACE INTO {_TOKENS} (id, tokens) VALUES (?, ?)",
                                 [(e.id, tokens.get(e.id) or token_string(e.lexical_text())) for e in upserts])
            gone = [(i,) for i in deletes]
            self._db.executemany("DELETE FROM entities WHERE id = ?", gone)
            self._db.executemany(f"DELETE FROM {_TOKENS} WHERE id = ?", gone)
            for table in self._other_token_tables():  # another Assay version's rows for these ids are stale now: it
                self._db.executemany(f"DELETE FROM {table} WHERE id = ?", [(e.id,) for e in upserts] + gone)  # re-tokenizes
            self._db.executemany("DELETE FROM injection_scans WHERE id = ?", gone)
            self._db.executemany("INSERT OR IGNORE INTO lexical_changes (id) VALUES (?)", [(e.id,) for e in upserts] + gone)

    def store_parsed(self, parsed: ParseResult) -> None:
        """A parse share's entities (with the BM25 tokens computed where it was parsed) and its files' graph edges."""
        self.replace([e for pf in parsed.files for e in pf.entities], [], parsed.tokens_by_id())
        self.replace_edges({pf.path: pf.edges for pf in parsed.files})

    def lexical_tokens(self, only: Iterable[str] | None = None) -> tuple[list[str], list[list[str]]]:
        """Every entity's BM25 tokens (or those of the `only` ids that exist) in id order, as two lists."""
        ids: list[str] = []
        tokens: list[list[str]] = []
        for eid, terms in self.lexical_token_rows(only):
            ids.append(eid)
            tokens.append(terms)
        return ids, tokens

    def lexical_token_rows(self, only: Iterable[str] | None = None) -> Iterator[tuple[str, list[str]]]:
        """Each entity's (id, BM25 tokens) in id order, read as consumed so a full BM25 build need not hold them
        all; tokenized when it was stored (entities stored by an older tokenizer are tokenized now and remembered
        once the rows are exhausted)."""
        missing: list[tuple[str, str]] = []
        select = (f"SELECT e.id, t.tokens, CASE WHEN t.tokens IS NULL THEN e.data END FROM entities e"
                  f" LEFT JOIN {_TOKENS} t ON t.id = e.id")
        if only is None:
            rows: Iterable[tuple[str, str | None, str | None]] = self._db.execute(f"{select} ORDER BY e.id")
        else:
            rows = sorted(self._rows_for(f"{select} WHERE e.id IN", sorted(set(only))))
        for eid, joined, data in rows:
            if joined is None:
                joined = token_string(Entity.model_validate_json(data).lexical_text())
                missing.append((eid, joined))
            yield eid, joined.split()
        if missing:
            with self._db:
                self._db.executemany(f"INSERT OR REPLACE INTO {_TOKENS} (id, tokens) VALUES (?, ?)", missing)

    _UNSCANNED = "FROM entities e LEFT JOIN injection_scans s ON s.id = e.id AND s.detector = ? WHERE s.id IS NULL"

    def unscanned(self, detector: str) -> list[Entity]:
        """Entities without an injection scan by this detector (new since the last scan, or the detector changed)."""
        return [_entity(d) for (d,) in self._db.execute(f"SELECT e.data {self._UNSCANNED}", (detector,))]

    def unscanned_count(self, detector: str) -> int:
        return int(self._db.execute(f"SELECT COUNT(*) {self._UNSCANNED}", (detector,)).fetchone()[0])

    def store_scans(self, detector: str, rows: list[tuple[str, str, float, list[str]]]) -> None:
        """Injection scans as (id, digest of what was scored, score, signals)."""
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO injection_scans (id, detector, digest, score, signals) VALUES (?, ?, ?, ?, ?)",
                                 [(i, detector, digest, score, ",".join(signals)) for i, digest, score, signals in rows])

    def forget_scans(self) -> None:
        """Drop every stored injection scan: a rebuild scores every passage afresh. A scan is trusted when its digest
        matches the passage, and that digest is no secret, so a copied-in catalog could hold a score of 0 for a payload."""
        with self._db:
            self._db.execute("DELETE FROM injection_scans")

    def misfiled(self, owner: dict[str, str]) -> set[str]:
        """The files (`owner`: entity id -> the file the manifest lists it under) some of whose rows name another file
        or id, in their columns or in the stored record that searches show (a forged `../../etc/passwd`), or hold no
        readable record. SQLite reads the JSON (2.4k large passages: ~30 ms, mostly reading them)."""
        import json

        rows = self._db.execute("SELECT id, file, CASE WHEN json_valid(data) THEN json_extract(data, '$.file', '$.id')"
                                " END FROM entities")
        return {owner[eid] for eid, column, recorded in rows
                if eid in owner and not (column == owner[eid] and recorded and json.loads(recorded) == [column, eid])}

    def scans(self, ids: list[str]) -> dict[str, tuple[str, float, list[str]]]:
        """id -> (digest of what was scored, score, signals) of the stored injection scans."""
        rows = self._rows_for("SELECT id, digest, score, signals FROM injection_scans WHERE id IN", ids)
        return {i: (dig, score, [x for x in sig.split(",") if x]) for i, dig, score, sig in rows}

    def replace_edges(self, by_file: dict[str, list[Edge]]) -> None:
        """The graph edges of each given file, replacing what that file had (one transaction)."""
        with self._db:
            self._db.executemany("DELETE FROM edges WHERE file = ?", [(f,) for f in by_file])
            self._db.executemany(
                "INSERT INTO edges (file, kind, name, line, source, source_id, receiver, module, alias) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(f, e.kind, e.name, e.line, e.source, e.source_id, e.receiver, e.module, e.alias) for f, edges in by_file.items() for e in edges],
            )

    def drop_edges_except(self, files: set[str]) -> int:
        """Forget the edges of files no longer indexed (deleted, ignored)."""
        gone = [f for (f,) in self._db.execute("SELECT DISTINCT file FROM edges") if f not in files]
        with self._db:
            self._db.executemany("DELETE FROM edges WHERE file = ?", [(f,) for f in gone])
        return len(gone)

    def edges(self, *, name: str | None = None, source_id: str | None = None, file: str | None = None,
              kinds: tuple[str, ...] = ("call", "import", "inherit", "ref")) -> list[tuple[str, Edge]]:
        """(file, edge) rows by the name they use, the definition they sit in, or the file that holds them."""
        where, args = [], []
        for column, value in (("name", name), ("source_id", source_id), ("file", file)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        where.append(f"kind IN ({','.join('?' * len(kinds))})")
        args.extend(kinds)
        rows = self._db.execute(
            "SELECT file, kind, name, line, source, source_id, receiver, module, alias FROM edges WHERE " + " AND ".join(where)
            + " ORDER BY file, line", args)
        return [(r[0], Edge.model_construct(kind=r[1], name=r[2], line=r[3], source=r[4], source_id=r[5], receiver=r[6],
                                            module=r[7], alias=r[8])) for r in rows]

    def import_modules(self) -> list[tuple[str, str, str]]:
        """Each (importing file, module path, imported name) once: what the import graph needs, without building edges."""
        rows = self._db.execute("SELECT DISTINCT file, module, name FROM edges WHERE kind = 'import' AND module != ''")
        return [(f, m, n or "") for f, m, n in rows]

    def count_edges(self, name: str, kinds: tuple[str, ...]) -> int:
        """How many edges of these kinds use `name` (without building them)."""
        row = self._db.execute(f"SELECT COUNT(*) FROM edges WHERE name = ? AND kind IN ({','.join('?' * len(kinds))})", (name, *kinds))
        return int(row.fetchone()[0])

    def edge_name_counts(self, kinds: tuple[str, ...]) -> list[tuple[str, int]]:
        """How often each name is used (called, inherited, referenced): the brief's "most used" classes."""
        rows = self._db.execute(f"SELECT name, COUNT(*) FROM edges WHERE kind IN ({','.join('?' * len(kinds))}) GROUP BY name", kinds)
        return [(n, int(c)) for n, c in rows]

    def files(self) -> list[str]:
        return [f for (f,) in self._db.execute("SELECT DISTINCT file FROM entities ORDER BY file")]

    def edge_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM edges").fetchone()[0])

    def get(self, ids: list[str]) -> dict[str, Entity]:
        return {eid: _entity(data) for eid, data in self._rows_for("SELECT id, data FROM entities WHERE id IN", ids)}

    def _rows_for(self, query: str, ids: list[str], chunk: int = 500) -> Iterator[tuple[Any, ...]]:
        """Rows of `query` (ending in `... IN`) for these ids, asked in chunks under SQLite's bound-variable limit."""
        for start in range(0, len(ids), chunk):
            part = ids[start : start + chunk]
            yield from self._db.execute(f"{query} ({','.join('?' * len(part))})", part)

    def by_file(self, file: str) -> list[Entity]:
        rows = self._db.execute("SELECT data FROM entities WHERE file = ?", (file,))
        return sorted((_entity(d) for (d,) in rows), key=lambda e: (e.start_line, e.part))

    def parts_of(self, file: str, qualname: str, kind: str) -> list[Entity]:
        """Every part of one entity (a long body is stored in parts), in line order."""
        rows = self._db.execute("SELECT data FROM entities WHERE qualname = ? AND file = ? AND kind = ?", (qualname, file, kind))
        return sorted((_entity(d) for (d,) in rows), key=lambda e: e.part)

    def by_name(self, name: str) -> list[Entity]:
        rows = self._db.execute("SELECT data FROM entities WHERE qualname = ? OR name = ? ORDER BY file, id", (name, name))
        return [_entity(d) for (d,) in rows]

    def counts(self, column: str) -> dict[str, int]:
        if column not in ("kind", "language"):
            raise ValueError(column)
        rows = self._db.execute(f"SELECT {column}, COUNT(*) FROM entities WHERE part = 0 GROUP BY {column}")
        return dict(sorted(rows.fetchall()))

    def all(self) -> Iterator[Entity]:
        for (d,) in self._db.execute("SELECT data FROM entities ORDER BY id"):
            yield Entity.model_validate_json(d)

    def ids(self) -> set[str]:
        return {i for (i,) in self._db.execute("SELECT id FROM entities")}

    def lexical_changes(self) -> set[str] | None:
        """Ids written or deleted since BM25 was last built from this catalog; None when it must be built from
        everything (the catalog was cleared)."""
        changed = {i for (i,) in self._db.execute("SELECT id FROM lexical_changes")}
        return None if _ALL_CHANGED in changed else changed

    def forget_lexical_changes(self) -> None:
        """Once a BM25 build from the catalog as it is now is saved (a crash before this replays the changes:
        harmless). Writers hold the workspace's write lock, so nothing was logged since the build read the log;
        one unconditional DELETE empties the table without visiting rows (9k ids one by one took 0.12 s)."""
        with self._db:
            self._db.execute("DELETE FROM lexical_changes")

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM entities").fetchone()[0])

    def _other_token_tables(self) -> list[str]:
        """Token tables of other tokenizer versions (an older or newer Assay on the same workspace), looked up once."""
        if self._others is None:
            names = self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'lexical_tokens_v%'")
            self._others = [n for (n,) in names if n != _TOKENS and n[len("lexical_tokens_v"):].isdigit()]
        return self._others

    def forget_tokens(self) -> None:
        """Drop this version's stored BM25 tokens (the next build tokenizes every entity again): a row is keyed by
        entity id, so one written before another Assay version changed that entity would keep its old words."""
        with self._db:
            self._db.execute(f"DELETE FROM {_TOKENS}")
            self._db.execute("INSERT OR IGNORE INTO lexical_changes (id) VALUES (?)", (_ALL_CHANGED,))

    def clear(self) -> None:
        with self._db:
            self._db.execute("DELETE FROM entities")
            self._db.execute("DELETE FROM edges")
            self._db.execute(f"DELETE FROM {_TOKENS}")
            self._db.execute("INSERT OR IGNORE INTO lexical_changes (id) VALUES (?)", (_ALL_CHANGED,))

    def close(self) -> None:
        self._db.close()


# Chroma's HNSW defaults (ef 100 / 100) return 96-98% of the exact 60 nearest passages, and which ones it misses
# changes with every rebuild; at 200 / 200 it returns 99.5% (pytest sdist: 0.963 -> 0.995) for about a second
# more of build time on 9k vectors. A collection keeps the settings it was created with (a rebuild applies them).
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 200}
SETTLE_SYNC, DEFAULT_SYNC = 2, 1000  # the smallest threshold Chroma takes, and its default (`VectorStore.settle`)


class VectorStore:
    """One Chroma collection per workspace, cosine space, vectors supplied by Assay."""

    def __init__(self, root: Path, url: str | None = None, name: str | None = None) -> None:
        self.root = root
        self._client = chroma_client(root, url)
        self._name = name or collection_name(root)
        self._collection = None
        self._path = None if url else state_dir(root) / "chroma"  # an embedded store: its errors are read (`chroma_errors`)

    @property
    def name(self) -> str:
        return self._name

    @property
    def collection(self):
        if self._collection is None:
            self._collection = self._client.get_or_create_collection(
                self._name, configuration={"hnsw": HNSW}, embedding_function=None
            )
        return self._collection

    def settle(self) -> None:
        """Have the embedded store write its whole HNSW index to disk after a run's writes. Chroma persists it every
        `sync_threshold` (1000) records and each process replays the rest from its log into an in-memory graph that
        differs from process to process: the same query on an unchanged index found a different dense tail (click:
        3-4 of the top 60 for `a`, four lists in six runs). The smallest threshold for one write (the first record again,
        the same vector) persists everything in one go; the default comes back so that a large run does not write
        the whole index every few records."""
        if self._path is None:  # a Chroma server keeps its own index; its processes do not replay a log per query
            return
        collection = self.collection
        first = collection.get(limit=1, include=["embeddings"])
        if not first["ids"]:
            return
        with chroma_errors(self._path), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Chroma's own "legacy embedding function config"
            collection.modify(configuration={"hnsw": {"sync_threshold": SETTLE_SYNC, "batch_size": SETTLE_SYNC}})
            try:
                collection.upsert(ids=first["ids"], embeddings=first["embeddings"])
            finally:
                collection.modify(configuration={"hnsw": {"sync_threshold": DEFAULT_SYNC}})

    def drop(self, name: str) -> None:
        """Delete a collection a rebuild has replaced (absent is fine). Chroma's embedded system keeps a dropped
        collection's HNSW files open (4 per rebuild, for the life of the process), so the next open restarts it."""
        try:
            self._client.delete_collection(name)
        except Exception:  # noqa: BLE001
            return
        if self._path is not None:
            with _client_lock:
                _restart_stores.add(str(self._path))

    def remove_orphan_segments(self) -> list[str]:
        """Delete the folders of vector segments no collection holds any longer: Chroma's `delete_collection`
        drops a collection's rows but leaves its HNSW folder, so every `--rebuild` (or new embedder) left a full
        copy of the vectors on disk for good. Run under the workspace's write lock: no other run makes segments."""
        if self._path is None or not (self._path / "chroma.sqlite3").is_file():
            return []
        import re
        import shutil
        import sqlite3
        from contextlib import closing

        try:
            with closing(sqlite3.connect(f"file:{self._path / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
                held = {segment for (segment,) in db.execute("SELECT id FROM segments")}
        except sqlite3.Error:  # a store it cannot read: leave every folder as it is
            return []
        uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
        orphans = [p for p in self._path.iterdir() if p.is_dir() and uuid.fullmatch(p.name) and p.name not in held]
        for folder in orphans:
            shutil.rmtree(folder, ignore_errors=True)
        return sorted(p.name for p in orphans)

    def drop_others(self, keep: str, base: str) -> list[str]:
        """Delete every collection of this workspace (named `base` or `base_g<n>`, exactly) except `keep`: a rebuild
        cut short after it switched collections leaves the old one, which no later run would name again. Any other
        name on a shared server is another workspace's, even one that begins like `base`."""
        names = [getattr(c, "name", c) for c in self._client.list_collections()]  # objects or names, by version
        stale = [n for n in names if n != keep and of_base(n, base)]
        for name in stale:
            self.drop(name)
        return stale

    def upsert(self, batch: EmbeddedBatch, batch_size: int = 500) -> None:
        """Ids and vectors only: the catalog holds text and facts, and metadata slowed upserts by a third."""
        with chroma_errors(self._path, writing=True):
            for start in range(0, len(batch.ids), batch_size):
                self.collection.upsert(ids=batch.ids[start : start + batch_size],
                                       embeddings=batch.vectors[start : start + batch_size])

    def delete(self, ids: list[str], batch_size: int = 500) -> None:
        with chroma_errors(self._path, writing=True):
            for start in range(0, len(ids), batch_size):
                self.collection.delete(ids=ids[start : start + batch_size])

    def count(self) -> int:
        with chroma_errors(self._path):
            return int(self.collection.count())

    def query(self, vector: list[float], k: int) -> list[tuple[str, float]]:
        """Top-k by cosine distance (Chroma returns fewer when the collection is smaller, none when empty)."""
        with chroma_errors(self._path):
            res = self.collection.query(query_embeddings=[vector], n_results=k, include=["distances"])
        return list(zip(res["ids"][0], [float(d) for d in res["distances"][0]]))

    def distances(self, vector: list[float], ids: list[str]) -> dict[str, float]:
        """Cosine distance (the collection's space) from `vector` to each stored passage among `ids`."""
        with chroma_errors(self._path):
            res = self.collection.get(ids=ids, include=["embeddings"])
        return cosine_distances(res["ids"], res["embeddings"], vector)


def cosine_distances(ids: list[str], found, vector: list[float]) -> dict[str, float]:
    """1 - cosine of each stored vector with `vector`, by id."""
    import numpy as np  # not at import time: parse workers import this module and start without numpy

    if found is None or len(found) == 0:
        return {}
    vectors = np.asarray(found, dtype=np.float64)  # float64: a row's distance must not depend on its position in
    q = np.asarray(vector, dtype=np.float64)  # the batch (float32 BLAS rounded the last bit by where a row sat)
    cos = vectors @ q / np.clip(np.linalg.norm(vectors, axis=1) * np.linalg.norm(q), 1e-12, None)
    distance = (1.0 - cos).astype(np.float32)  # then to float32: what is left of BLAS's rounding is below its last bit
    return {eid: float(d) for eid, d in zip(ids, distance)}


_TENANT, _DATABASE = "default_tenant", "default_database"  # Chroma's defaults: the client's PersistentClient uses them


class EmbeddedReader:
    """Read-only queries on the workspace's embedded store through Chroma's own engine, its Rust bindings, without
    Chroma's Python client: importing `chromadb` cost ~1 s of every cold `search`/`ask`, the bindings ~20 ms. The
    same files, the same HNSW index, the same answers (a test holds the two to each other); writes still go through
    the client (`VectorStore`). A reader sees the store as it was when opened: `_through_reader` opens a new one
    after each index run."""

    def __init__(self, root: Path, name: str | None = None) -> None:
        import resource

        import chromadb_rust_bindings as rb

        path = state_dir(root) / "chroma"
        self._name = name or collection_name(root)
        self._bindings = None
        self._collection_id: str | None = None
        self._copy: Path | None = None  # a read-only store is read from a private copy (`readable_copy`)
        self._path = path  # what an error names (the store, not a private copy of it)
        if not (path / "chroma.sqlite3").exists():
            return  # nothing stored yet: no vectors to find
        if not writable(path) or not writable(path / "chroma.sqlite3"):  # `chmod -R a-w`: the folder and its files
            path = self._copy = readable_copy(path)
        try:
            config = rb.SqliteDBConfig(hash_type=rb.MigrationHash.MD5, migration_mode=rb.MigrationMode.Validate,
                                       url=str(path / "chroma.sqlite3"))
            files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            self._bindings = rb.Bindings(allow_reset=False, sqlite_db_config=config, persist_path=str(path),
                                         hnsw_cache_size=max(files // 5, 1))  # as Chroma's client sizes it
        except Exception as exc:  # noqa: BLE001 - chroma raises many types for a damaged folder
            raise unopenable(self._path, exc, read_only=self._copy is not None) from exc

    def release(self) -> None:
        """Remove the private copy of a read-only store, if this reader made one (a newer index replaced it)."""
        if self._copy is not None:
            import shutil

            self._bindings = None
            shutil.rmtree(self._copy.parent, ignore_errors=True)
            self._copy = None

    def _collection(self) -> str | None:
        if self._bindings is None:
            return None
        if self._collection_id is None:
            try:
                self._collection_id = str(self._bindings.get_collection(self._name, _TENANT, _DATABASE).id)
            except Exception:  # noqa: BLE001 - not created yet (no vector stored): an empty store
                return None
        return self._collection_id

    def query(self, vector: list[float], k: int) -> list[tuple[str, float]]:
        collection = self._collection()
        if collection is None or k <= 0:
            return []
        with chroma_errors(self._path):
            res = self._bindings.query(collection, None, [vector], k, None, None, ["distances"], _TENANT, _DATABASE)
        return list(zip(res.ids[0], [float(d) for d in res.distances[0]]))

    def distances(self, vector: list[float], ids: list[str]) -> dict[str, float]:
        collection = self._collection()
        if collection is None:
            return {}
        with chroma_errors(self._path):
            res = self._bindings.get(collection, ids, None, None, 0, None, ["embeddings"], _TENANT, _DATABASE)
        return cosine_distances(res.ids, res.embeddings, vector)


def readable_copy(path: Path) -> Path:
    """A private copy of a store folder this process cannot write, removed when the process ends. Chroma's engine
    writes to its database as it opens it (a read-only open is refused), so an index on a read-only mount or in
    another user's checkout is read from a copy; the copy is as large as the store, once per index run read."""
    import atexit
    import shutil
    import tempfile

    copy_dir = Path(tempfile.mkdtemp(prefix="assay-store-"))
    atexit.register(shutil.rmtree, copy_dir, True)  # (`EmbeddedReader.release` removes it sooner)
    try:
        shutil.copytree(path, copy_dir / "chroma", ignore=shutil.ignore_patterns("*.lock"),
                        copy_function=shutil.copyfile)  # not the modes: Chroma refused a 0444 copy as well
        _make_writable(copy_dir / "chroma")
    except OSError as exc:
        raise unopenable(path, exc, read_only=True) from exc
    return copy_dir / "chroma"


def _make_writable(folder: Path) -> None:
    """Give the owner write access in a private copy: `copytree` copies a folder's modes even without `copy2`, and a
    read-only copy could be neither opened by Chroma nor removed afterwards."""
    import stat

    for parent, folders, files in os.walk(folder):
        for name in (*folders, *files):
            target = Path(parent) / name
            target.chmod(target.stat().st_mode | stat.S_IWUSR)
    folder.chmod(folder.stat().st_mode | stat.S_IWUSR)


_READERS: dict[tuple, VectorStore | EmbeddedReader] = {}
_readers_lock = threading.Lock()


def dense_search(root: Path, url: str | None, collection: str | None, vector: list[float], k: int) -> list[tuple[str, float]]:
    """A query through a collection handle kept per (workspace, server, collection): opening the client and
    the collection costs ~3 ms, a twentieth of a query. A handle that fails (its collection was dropped by
    another process) is opened afresh once before the error reaches the caller."""
    return _through_reader(root, url, collection, lambda store: exact_top(store, vector, k))


EXACT_SLACK = 0.5  # read this share deeper than asked from HNSW, then keep the exact top k


def exact_top(store: VectorStore | EmbeddedReader, vector: list[float], k: int) -> list[tuple[str, float]]:
    """The k nearest passages as HNSW finds them `EXACT_SLACK` deeper, re-scored exactly and ordered by (distance,
    id): HNSW is approximate and the part of the store replayed from Chroma's log is a graph rebuilt in each
    process, so the same query on an unchanged index returned a different tail from one process to the next
    (one of 60 swapped in half the runs), and the rank stage's pool-relative signals spread that to every score."""
    found = store.query(vector, k + max(int(k * EXACT_SLACK), 10))
    exact = store.distances(vector, [eid for eid, _ in found]) if found else {}
    return sorted(((eid, exact.get(eid, d)) for eid, d in found), key=lambda row: (row[1], row[0]))[:k]


def dense_distances(root: Path, url: str | None, collection: str | None, vector: list[float],
                    ids: list[str]) -> dict[str, float]:
    """Cosine distances of these passages to `vector`, wherever they rank (absent ids have no vector yet)."""
    if not ids:
        return {}
    return _through_reader(root, url, collection, lambda store: store.distances(vector, ids))


def _through_reader(root: Path, url: str | None, collection: str | None,
                    read: Callable[[VectorStore | EmbeddedReader], T]) -> T:
    """`read` through the kept handle, or through a fresh one when the kept one fails (see `dense_search`). The
    embedded store is read through an `EmbeddedReader`, opened afresh for each index run (its generation)."""
    # a replaced store, or for the embedded store a new index run, gets a new handle
    key = (str(root), url, collection, None if url else store_identity(root), None if url else index_generation(root))
    with _readers_lock:
        store = _READERS.pop(key, None)
        if store is not None:
            _READERS[key] = store  # now the most recently used
    if store is not None:
        try:
            return read(store)
        except Exception:  # noqa: BLE001 - a stale handle; a fresh one decides
            pass
    store = VectorStore(root, url, collection) if url else EmbeddedReader(root, collection)
    found = read(store)
    with _readers_lock:
        # a replaced store's or an earlier run's handle (a rebuild's new collection too: its old one kept ~15 files)
        _release_readers([k for k in _READERS if k[:2] == key[:2]])
        _READERS[key] = store
        _release_readers(list(_READERS)[: max(len(_READERS) - kept_open(MAX_READERS), 0)])  # least recently used first
    return found


def kept_open(most: int) -> int:
    """How many stores (or readers) to keep open: `most`, fewer under a low open-file limit (each costs ~7-15
    descriptors; a server at a hard limit of 64 stuck after its fifth workspace), never none."""
    try:
        import resource
    except ImportError:  # not POSIX
        return most
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return most if soft == resource.RLIM_INFINITY else max(1, min(most, soft // 128))


MAX_READERS = 6  # workspaces whose reader stays open (each ~6 files and ~5 threads): an MCP server touching 50 aborted


def _release_readers(keys: list[tuple]) -> None:
    """Drop these kept readers (the caller holds `_readers_lock`): Chroma's engine closes a reader's files and threads
    when the last reference goes (one a query in flight still holds lasts until it ends); a private copy is removed."""
    for key in keys:
        release = getattr(_READERS.pop(key), "release", None)
        if release is not None:
            release()


def forget_readers(root: Path) -> None:
    """Release the readers kept for this workspace (its index deleted or replaced)."""
    with _readers_lock:
        _release_readers([k for k in _READERS if k[0] == str(root)])


def manifest_path(root: Path) -> Path:
    return state_dir(root) / "manifest.json"


def load_manifest(root: Path) -> IndexManifest | None:
    path = manifest_path(root)
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None  # deleted since the check: not indexed
    except OSError as exc:  # no descriptor left, a refused read: the file is not damaged, a rebuild would not help
        raise StoreError(f"cannot read the manifest {path}: {one_line(exc)}") from exc
    try:
        return IndexManifest.model_validate_json(text)
    except Exception as exc:  # noqa: BLE001
        first = str(exc).strip().splitlines()[0]
        raise StoreError(f"the manifest {path} is damaged ({first}); run `assay index --rebuild`") from exc


class NotIndexed(StoreError):
    """The workspace has no index yet."""


def require_manifest(root: Path) -> IndexManifest:
    manifest = load_manifest(root)
    if manifest is None:
        if run_under_way(root):  # no manifest yet, a live run: asking to start it again would only hear "already indexing"
            raise NotIndexed(f"indexing in progress for {root} (its first run has not committed anything yet); retry "
                             "shortly: `assay status` or the index_status tool shows its progress")
        raise NotIndexed(not_indexed_advice(root))
    return manifest


def not_indexed_advice(root: Path) -> str:
    """Why a folder has no index and what to do, the path shell-quoted for pasting. A subfolder of an indexed
    workspace is pointed at that workspace: a second, nested index of it is rarely what the user meant."""
    holder = indexed_workspace_of(root.parent)
    if holder is not None:
        return (f"{root} is not indexed itself but lies inside the indexed workspace {holder}; pass that path "
                f"({shlex.quote(str(holder))})")
    if why := unindexable_here(root):  # read-only, too deep: `assay index` there could only fail
        return f"{root} is not indexed, and {why}"
    return f"{root} is not indexed yet; index it first (`assay index {shlex.quote(str(root))}` or the index_workspace tool)"


_READ_MANIFESTS: dict[Path, tuple[object, IndexManifest]] = {}


def index_generation(root: Path) -> tuple[int, int, int] | None:
    """Which index run last finished, as the manifest file's identity (every run ends by writing it with
    `os.replace`, so a new run is a new inode); None when there is no index. Caches of derived facts key on it."""
    try:
        st = manifest_path(root).stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


T = TypeVar("T")


def per_generation(cache: dict[Any, tuple[object, T]], key: Any, generation: object, build: Callable[[], T]) -> T:
    """`cache[key]`'s value while it was built for this index generation; built afresh (and kept) otherwise."""
    hit = cache.get(key)
    if hit is None or hit[0] != generation:
        hit = cache[key] = (generation, build())
    return hit[1]


def read_manifest(root: Path) -> IndexManifest:
    """The manifest for readers (every query), parsed once per version of the file and shared: callers must not
    change it. Parsing a 600-file manifest costs 5-8 ms, a tenth of a query. Writers use `require_manifest`."""
    version = index_generation(root)
    if version is None:
        return require_manifest(root)  # raises NotIndexed
    return per_generation(_READ_MANIFESTS, manifest_path(root), version, lambda: require_manifest(root))


def write_manifest(root: Path, manifest: IndexManifest) -> None:
    """Atomic: write a temporary file, fsync it, rename it over the old one."""
    make_state_dir(root)  # raises when the workspace was moved mid-run, rather than making its old path again
    path = manifest_path(root)
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(manifest.model_dump_json(indent=1))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def mark_embedded(root: Path, batch: EmbeddedBatch, manifest: IndexManifest) -> IndexManifest:
    """After a slice of vectors is stored: drop its ids from dense_pending and record the dimension
    (an Ollama model reports it only once it has embedded something). The writer holds the lock, so the
    manifest it last wrote (`manifest`) is the file's: reading the file again per slice cost 0.12 s a slice at
    10,000 files, a third of the store stage."""
    manifest = manifest.model_copy()
    done = set(batch.ids)
    manifest.dense_pending = [i for i in manifest.dense_pending if i not in done]
    manifest.dimension = batch.dimension or manifest.dimension
    write_manifest(root, manifest)
    return manifest


def previous_manifest(root: Path, url: str | None, rebuild: bool) -> IndexManifest | None:
    """The manifest of the last run. Chroma is not opened here (its import alone is ~1 s, and the lexical phase
    does not need it): `prepare_dense` checks the vectors once the index already answers from BM25.

    With `rebuild`, a damaged manifest is ignored and a damaged local store is set aside, so a
    rebuild can always start."""
    try:
        previous = load_manifest(root)
    except StoreError:
        if not rebuild:
            raise
        previous = None
    if rebuild:
        set_aside_damaged_dbs(root)  # before anything opens them: a damaged catalog or cache must not stop a rebuild
        if not url:
            try:
                VectorStore(root, None)
            except StoreError:
                set_aside_damaged_store(root)
        _with_catalog(root, Catalog.forget_scans)
    elif previous is not None:
        previous = distrust_misfiled(root, previous)
    return previous


DISTRUSTED = "distrusted"  # a content hash no file has (discovery's unsettled one is ""): the plan parses it again


def distrust_misfiled(root: Path, manifest: IndexManifest) -> IndexManifest:
    """The manifest with the files whose catalog rows name another file or id (`Catalog.misfiled`) marked changed, so
    this run parses them again and their rows are written afresh: an unchanged file's rows are otherwise kept as
    stored, and a search would show what a copied-in catalog says."""
    owner = {i: path for path, record in manifest.files.items() for i in record.entity_ids}
    misfiled = _with_catalog(root, lambda catalog: catalog.misfiled(owner)) if owner else set()
    if not misfiled:
        return manifest
    files = {path: record.model_copy(update={"content_hash": DISTRUSTED}) if path in misfiled else record
             for path, record in manifest.files.items()}
    return manifest.model_copy(update={"files": files})


def _with_catalog(root: Path, use: Callable[[Catalog], T]) -> T:
    catalog = Catalog(root)
    try:
        return use(catalog)
    finally:
        catalog.close()


LOST_VECTORS = "the vector store is empty although the manifest lists embedded passages: re-embedding everything"


PROBE_NEIGHBOURS = 10
PROBE_DISTANCE = 1e-3  # a stored vector queried for itself comes back at ~1e-7 (float32); a damaged segment's do not


def prepare_dense(root: Path, url: str | None, previous: IndexManifest | None, rebuilt: bool,
                  known: Callable[[IndexManifest], list[list[float]]] | None = None) -> tuple[IndexManifest, str]:
    """The dense phase's first step, after the lexical phase committed: delete the vectors of purged passages,
    and when the collection lost every vector the last run stored (its folder deleted, a new server), or the embedded
    store is damaged (then set aside), list every passage as pending again (their vectors mostly come back from the
    embedding cache). `known(manifest)` gives vectors the store must hold (a few, from that cache), for the check.
    Returns the manifest and, in those cases, the reason to report. A server's damaged store raises StoreError:
    BM25 still answers."""
    manifest = require_manifest(root)
    store = VectorStore(root, url, manifest.collection)
    reason = ""
    had_vectors = (previous is not None and not rebuilt and previous.collection == manifest.collection
                   and previous.entity_count - len(previous.dense_pending) > 0)
    samples = known(manifest) if known and had_vectors and not url else []
    damage = vector_damage(store, samples, manifest.dimension) if had_vectors and not url else ""
    if damage:
        damage = damage_afresh(root, manifest.collection, samples, manifest.dimension, damage)
        if not damage:  # healthy as a fresh client sees it: write through that one, not the stale one
            store = VectorStore(root, url, manifest.collection)
    if damage:
        moved = set_aside_damaged_store(root)
        store = VectorStore(root, url, manifest.collection)
        reason = (f"the vector store was damaged ({damage}): set aside as {moved.name if moved else '-'}; every "
                  "vector is stored again (from the embedding cache where it holds them)")
    elif had_vectors and store.count() == 0:
        reason = LOST_VECTORS
    if reason:
        manifest.dense_pending = sorted(manifest.entity_ids | set(manifest.notes))
    elif manifest.vectors_stale:
        store.delete(manifest.vectors_stale)
    if reason or manifest.vectors_stale:
        manifest.vectors_stale = []
        write_manifest(root, manifest)
    return manifest, reason


def damage_afresh(root: Path, collection: str, samples: list[list[float]], dimension: int, damage: str) -> str:
    """The embedded store's damage asked once more through a fresh client before a whole store is set aside: the
    client cached in this process may predate another process's writes (one by an Assay that does not note itself
    in `claim_store`). A store that cannot even be opened afresh stays damaged as first found."""
    with _client_lock:
        forget_cached_client(root)
    try:
        return vector_damage(VectorStore(root, None, collection), samples, dimension)
    except StoreError:
        return damage


def vector_damage(store: VectorStore, known: list[list[float]], dimension: int) -> str:
    """Why the store's vectors cannot be trusted ("" when they can): a segment Chroma cannot read, or a vector the
    store holds that a query for it no longer finds (an HNSW file overwritten: Chroma answers, with wrong neighbours).
    A few queries, milliseconds; garbage in a part of a segment no probe reaches goes unnoticed (`--rebuild` mends it)."""
    probes = known or ([[1.0] + [0.0] * (dimension - 1)] if dimension else [])  # none known: still exercise the reader
    try:
        if store.count() == 0:
            return ""  # nothing stored to be damaged (a lost store: the caller's other case)
        for vector in probes:
            # ten neighbours, not one: HNSW is approximate, and a fixed sample it missed once would be missed on every
            # run (every vector re-stored each time); a stored vector is among its own ten nearest at distance ~0
            hits = store.query(vector, PROBE_NEIGHBOURS)
            # |distance|: a garbage vector's may be NaN or far below zero, and a stored vector is at ~0 from itself
            if known and not any(abs(distance) <= PROBE_DISTANCE for _, distance in hits):
                return "a stored vector is no longer found by a query for itself"
    except DamagedVectors as exc:
        return _chroma_detail(exc.__cause__ or exc)
    return ""


def lexical_dir(root: Path) -> Path:
    return state_dir(root) / "lexical"


def distrust_foreign_tokens(root: Path, catalog: Catalog) -> None:
    """Forget this version's stored tokens when the last run was another Assay version's (its manifest names another
    tokenizer, or none) or cannot be read: that version may have changed entities whose rows here still hold their
    old words. Call before this run's manifest is written."""
    try:
        previous = load_manifest(root)
    except StoreError:  # damaged (a rebuild is under way): trust nothing it stood for
        previous = IndexManifest(workspace=str(root))
    if previous is not None and previous.tokenizer != TOKENIZER_VERSION:
        catalog.forget_tokens()


def rebuild_lexical(root: Path, catalog: Catalog) -> int:
    """BM25 over the catalog, swapped in atomically. When the last build's term counts are there and under half
    of the passages changed since (the catalog logs them), only the changed ones are read and counted again (a
    one-file change on 9k passages: 0.30 -> 0.06 s); otherwise all are. An update whose ids differ from the
    catalog's, or whose vocabulary is mostly terms no passage uses any more, is discarded for a full build."""
    folder = lexical_dir(root)
    changed = catalog.lexical_changes()
    counts = None
    previous = TermCounts.load(folder) if changed is not None else None
    if previous is not None and changed is not None and len(changed) < len(previous.ids) / 2:
        counts = previous.update(changed, *catalog.lexical_tokens(changed))
        if counts.ids != sorted(catalog.ids()) or counts.unused_share() > 0.5:  # SQLite's id order is sorted()'s
            counts = None
    if counts is None:
        counts = TermCounts.count_rows(catalog.lexical_token_rows())  # streamed: the index run's peak memory
    make_state_dir(root)  # `save` makes its parents: here a moved workspace fails instead of reappearing
    LexicalIndex.from_counts(counts).save(folder)
    catalog.forget_lexical_changes()
    return len(counts.ids)



"""Injection scan: the local judge's prompt-injection score of every passage, computed once at index time.

Scoring a passage parses it with tree-sitter for its comments and strings (~0.3 ms); a query judges ~60
passages, ~25 of them new to the process, so the judge spent most of its time here (judge stage p50 21 -> 4 ms
with the scores at hand). The dense phase scans what has no current scan and the catalog keeps the result
beside the entity; the query reads it with the entity. A scan counts only for the exact text it scored and the
same detector (a digest of its code and word list), so a changed passage or a changed detector is scored
again at query time until an index run rescans it. Full index of the pytest sdist: ~5 s for 9k passages.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import sys
from concurrent.futures import Future
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from assay.stages.core.artifacts import Entity
from assay.stages.core.progress import ProgressSink
from assay.stages.core.workers import worker_pool

InjectionScan = tuple[float, list[str]]

_DETECTOR = "assay.stages.index.injection_detector"
FRESH_PROCESS_MIN = 1000  # passages worth the detector's import (~0.4 s) in a process that has not loaded it


@lru_cache(maxsize=1)
def detector_version() -> str:
    """Digest of what decides a passage's score: the detector, its code lexicon and learned phrasing model, the
    word list and the model's weights (read from the files, without importing the detector)."""
    from assay.stages.core.config import DATA_DIR

    digest = hashlib.sha256()
    for path in (_source(_DETECTOR), _source("assay.stages.index.code_lexicon"),
                 _source("assay.stages.index.learned_phrasing"), DATA_DIR / "code_words.txt",
                 DATA_DIR / "injection_phrasing.npz"):
        digest.update(path.read_bytes() if path is not None and path.exists() else b"")
    return digest.hexdigest()[:16]


def _source(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    return Path(spec.origin) if spec is not None and spec.origin else None


def worth_scanning(count: int) -> bool:
    """Scan now, or leave these passages to be scored at query time until more accumulate? A long-lived process
    (watch, the MCP server) has the detector loaded and scans anything; a fresh one re-indexing a few changed
    passages would spend more on the import than the scans save."""
    return count > 0 and (count >= FRESH_PROCESS_MIN or _DETECTOR in sys.modules)


def digest(entity: Entity) -> str:
    """What a scan was computed from: the detector and the exact text scored (a scan of anything else is void),
    keyed with this installation's `scan_key`."""
    text = "\0".join((detector_version(), entity.language or "text", entity.docstring, entity.body))
    return hmac.new(scan_key(), text.encode("utf-8", "replace"), hashlib.sha256).hexdigest()[:32]


SCAN_KEY = "scan.key"  # in ASSAY_HOME


@lru_cache(maxsize=1)
def scan_key() -> bytes:
    """This installation's secret for scan digests, made once in ASSAY_HOME. A `.assay/` that came from elsewhere
    (an unpacked archive, a clone) holds scans whose digests no key here made, so its passages are scored again
    rather than trusted: an unkeyed digest anyone could compute, and a forged score of 0.00 let a payload past the
    guard. b'' (unkeyed, as before) where ASSAY_HOME cannot hold it."""
    import os
    import tempfile

    from assay.stages.core.registry import assay_home

    try:
        path = assay_home() / SCAN_KEY
        if not path.exists():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".scan-key-")  # mode 0600
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(os.urandom(32))
                os.link(tmp, path)  # made whole or not at all; another process's, if it came first, stays
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        return path.read_bytes()
    except (OSError, ValueError):
        return b""


def scan(entities: list[Entity], progress=None) -> list[tuple[str, str, float, list[str]]]:
    """(id, digest, score, signal names) per entity, as the local judge scores it."""
    from assay.stages.index.injection_detector import injection_of

    out = []
    for n, e in enumerate(entities, start=1):
        score, signals = injection_of(e.body, e.docstring, e.language or "text")
        out.append((e.id, digest(e), score, list(signals)))
        if progress is not None and n % 256 == 0:
            progress(256)
    if progress is not None and len(entities) % 256:
        progress(len(entities) % 256)
    return out


def valid_scans(records: dict[str, Entity], stored: dict[str, tuple[str, float, list[str]]]) -> dict[str, InjectionScan]:
    """The stored scans (`Catalog.scans`) that still hold for these exact records."""
    return {i: (score, signals) for i, (dig, score, signals) in stored.items() if i in records and dig == digest(records[i])}


def rescan(catalog, entities: list[Entity], sink: ProgressSink | None = None, force: bool = False) -> int:
    """Scan what needs it: the given entities (an index run's new and re-parsed ones) whose stored scan no longer
    holds, and every entity the current detector has not scanned, when `worth_scanning` (or `force`d). Returns
    how many."""
    detector = detector_version()
    stored = valid_scans({e.id: e for e in entities}, catalog.scans([e.id for e in entities]))
    todo = {e.id: e for e in entities if e.id not in stored}
    todo.update((e.id, e) for e in catalog.unscanned(detector) if e.id not in todo)
    if not todo or not (force or worth_scanning(len(todo))):
        return 0
    if sink is not None:
        sink.start("scan", len(todo))
    catalog.store_scans(detector, scan(list(todo.values()), None if sink is None else lambda n: sink.advance("scan", n)))
    return len(todo)


@dataclass
class ScanJob:
    """A scan begun beside the embedding: in a spawned process (`future`), or left for `finish` in this one."""

    entities: list[Entity]
    future: Future[int] | None = None


def start(root: Path, entities: list[Entity]) -> ScanJob:
    """Begin scanning. With much to scan (a first index, a new detector) it runs in a spawned process while this one
    embeds: the static embedder leaves the second core idle (full index of the pytest sdist 14.3 s with the scan
    after the embedding, against 9.8 s without a scan), and MiniLM shares both cores with it either way."""
    from assay.stages.index.store import Catalog

    catalog = Catalog(root)
    try:
        count = len(entities) + catalog.unscanned_count(detector_version())
    finally:
        catalog.close()
    if count < FRESH_PROCESS_MIN:
        return ScanJob(entities)
    pool = worker_pool(1)
    job = ScanJob(entities, pool.submit(_scan_in_worker, root, [e.id for e in entities]))
    pool.shutdown(wait=False)  # the worker exits when its one job is done
    return job


def finish(root: Path, job: ScanJob, sink: ProgressSink | None = None) -> int:
    """Wait for the spawned scan, or scan here (`rescan`); a worker that failed is replaced by a scan here."""
    from assay.stages.index.store import Catalog

    if job.future is not None:
        try:
            return job.future.result()
        except Exception:  # noqa: BLE001 - a worker that cannot start or dies: scan here instead
            pass
    catalog = Catalog(root)
    try:
        return rescan(catalog, job.entities, sink, force=job.future is not None)
    finally:
        catalog.close()


def _scan_in_worker(root: Path, ids: list[str]) -> int:
    from assay.stages.index.store import Catalog

    catalog = Catalog(root)
    try:
        return rescan(catalog, list(catalog.get(ids).values()), force=True)
    finally:
        catalog.close()

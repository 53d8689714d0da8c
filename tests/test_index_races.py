"""Index runs against a workspace that moves under them, and against odd ignore files.

A save that lands during a run must leave a record whose hash, size and time describe the same bytes (else freshness
flags the file STALE for good); a plain re-index mends a record an earlier run got wrong. An ignore file that is a
FIFO must not hang the walk, one that links out of the workspace must not be read. The static embedder's one-time
table build shows as a stage of its own."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import assay.stages.index.incremental as inc
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.index.discover import UNSETTLED_HASH, discover, root_ignore_check
from assay.stages.index.store import Catalog, load_manifest, write_manifest
from assay.stages.query.freshness import check

V1 = "def alpha():\n    return 1\n"
V2 = V1 + "\ndef beta():\n    return 2\n"
TAIL = "\ndef gamma():\n    return 3\n"


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text(V1)
    return root.resolve()


def record_matches_file(root: Path, path: str) -> None:
    """The manifest's record describes the bytes on disk: same hash, size and modification time."""
    record = load_manifest(root).files[path]
    st = (root / path).stat()
    data = (root / path).read_bytes()
    assert (record.content_hash, record.size, record.mtime_ns) == (hashlib.sha256(data).hexdigest(), st.st_size,
                                                                  st.st_mtime_ns)


def changed_files(root: Path) -> set[str]:
    return check(root, load_manifest(root))[1]


def append(path: Path, text: str) -> None:
    with open(path, "a") as handle:
        handle.write(text)


def test_a_save_between_discovery_and_parse_is_recorded_with_the_parsed_bytes_size_and_time(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_index(str(ws))
    (ws / "a.py").write_text(V2)
    real = inc.parse_share

    def saved_again(root, files, *args, **kwargs):  # the editor saves once more after discovery read the file
        append(ws / "a.py", TAIL)
        return real(root, files, *args, **kwargs)

    monkeypatch.setattr(inc, "parse_share", saved_again)
    report = run_index(str(ws))
    monkeypatch.setattr(inc, "parse_share", real)
    assert report.files_parsed == 1
    record_matches_file(ws, "a.py")  # was: the hash of the parsed bytes beside discovery's size (52 of 79)
    assert changed_files(ws) == set()  # not STALE: the index holds what the file holds


def test_a_plain_re_index_mends_a_record_whose_size_is_wrong(ws: Path) -> None:
    """An index written before this fix kept a wrong size for good: every later run said "unchanged"."""
    run_index(str(ws))
    manifest = load_manifest(ws)
    wrong = manifest.files["a.py"].model_copy(update={"size": 3, "mtime_ns": 1})
    write_manifest(ws, manifest.model_copy(update={"files": {**manifest.files, "a.py": wrong}}))
    assert changed_files(ws) == {"a.py"}
    report = run_index(str(ws))
    assert (report.files_parsed, report.files_unchanged) == (0, 1)  # the bytes are the same: nothing re-parsed
    record_matches_file(ws, "a.py")
    assert changed_files(ws) == set()


def test_a_file_written_while_discovery_reads_it_is_parsed_again_and_recorded_as_that_read_saw_it(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_index(str(ws))
    target = ws / "a.py"
    real = Path.read_bytes
    writes = []

    def written_during_read(self: Path) -> bytes:
        data = real(self)
        if self == target and not writes:  # the save lands just after discovery's read, before its second stat
            writes.append(1)
            target.write_text(V2)
            os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10**9))
        return data

    monkeypatch.setattr(Path, "read_bytes", written_during_read)
    found = {f.path: f for f in discover(ws).files}
    assert found["a.py"].content_hash == UNSETTLED_HASH  # matches no record: the run parses the file again
    writes.clear()
    target.write_text(V1)
    report = run_index(str(ws))
    monkeypatch.setattr(Path, "read_bytes", real)
    assert report.files_parsed == 1  # discovery read V1 (the indexed bytes) yet did not call it unchanged
    record_matches_file(ws, "a.py")
    assert changed_files(ws) == set()
    ids = load_manifest(ws).files["a.py"].entity_ids
    assert "beta" in {e.name for e in Catalog(ws).get(ids).values()}  # from the bytes on disk


def test_a_file_still_changing_after_parse_reads_as_changed_and_the_next_run_parses_it(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_index(str(ws))
    (ws / "a.py").write_text(V2)
    real = inc.parse_share

    def saved_after_parse(root, files, *args, **kwargs):
        result = real(root, files, *args, **kwargs)
        append(ws / "a.py", TAIL)
        return result

    monkeypatch.setattr(inc, "parse_share", saved_after_parse)
    run_index(str(ws))
    monkeypatch.setattr(inc, "parse_share", real)
    assert changed_files(ws) == {"a.py"}  # true: the index holds V2, the file holds V2 + gamma
    report = run_index(str(ws))
    assert report.files_parsed == 1
    record_matches_file(ws, "a.py")
    assert changed_files(ws) == set()


def run_with_timeout(fn, seconds: float = 30):
    """fn's result, or a failure (not a hung test run) when it blocks."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "blocked (a FIFO opened for reading waits for a writer forever)"
    return out[0]


def test_an_ignore_file_that_is_a_fifo_is_skipped_and_reported_not_opened(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "b.py").write_text("def b():\n    return 2\n")
    os.mkfifo(ws / "sub" / ".gitignore")
    os.mkfifo(ws / ".assayignore")
    result = run_with_timeout(lambda: discover(ws))
    assert sorted(f.path for f in result.files) == ["a.py", "sub/b.py"]
    assert {(s.path, s.reason) for s in result.skipped} == {
        (".assayignore", "ignore_file_not_regular"), ("sub/.gitignore", "ignore_file_not_regular")}
    assert run_with_timeout(lambda: root_ignore_check(ws)("a.py")) is False  # the watcher's pre-filter too
    report = run_with_timeout(lambda: run_index(str(ws)), 300)
    assert report.skipped == {"ignore_file_not_regular": 2} and report.files_parsed == 2


def test_an_ignore_file_linking_out_of_the_workspace_is_not_read(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.write_text("*.py\n")  # read, it would ignore every file
    (ws / "sub").mkdir()
    (ws / "sub" / "b.py").write_text("def b():\n    return 2\n")
    (ws / ".assayignore").symlink_to(outside)
    (ws / "sub" / ".gitignore").symlink_to(outside)
    (ws / "rules").write_text("b.py\n")  # extensionless: not indexed itself
    (ws / "sub" / ".assayignore").symlink_to(ws / "rules")  # a link inside the workspace is honoured
    result = discover(ws)
    assert root_ignore_check(ws)("a.py") is False  # the watcher's pre-filter does not read it either
    assert [f.path for f in result.files] == ["a.py"]  # sub/b.py ignored by the in-tree rules only
    assert {(s.path, s.reason) for s in result.skipped if s.reason.startswith("ignore_file")} == {
        (".assayignore", "ignore_file_symlink_outside"), ("sub/.gitignore", "ignore_file_symlink_outside")}


class Recorder:
    def __init__(self) -> None:
        self.started: dict[str, int] = {}
        self.done: dict[str, int] = {}

    def start(self, stage: str, total: int) -> None:
        self.started[stage] = total

    def advance(self, stage: str, n: int = 1) -> None:
        self.done[stage] = self.done.get(stage, 0) + n

    def skip(self, stage: str, n: int) -> None:
        self.advance(stage, n)

    def error(self, message: str) -> None:
        pass


def test_the_static_tables_one_time_build_is_a_stage_with_progress_and_a_timing_of_its_own(
        ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.stages.core.progress import read_status, run_line, run_view
    from assay.stages.index import static_model
    from assay.stages.index.embed import get_embedder
    from assay.tasks.index import STATIC_TABLE_STAGE

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))  # no table yet; the fake one stays out of other tests'
    lines: list[str] = []

    def quick_distill(session, tokenizer, progress=None, **kw):  # the real one takes a minute or more
        rows = static_model.vocab_rows(tokenizer)
        for _ in range(3):
            progress(rows // 3)
        lines.append(run_line(run_view(read_status(ws))))  # what `assay status` says meanwhile
        return np.random.default_rng(0).standard_normal((rows, 16)).astype(np.float32)

    monkeypatch.setattr(static_model, "distill_table", quick_distill)
    get_embedder.cache_clear()
    try:
        seen = Recorder()
        report = run_index(str(ws), Settings(embedder="static"), watcher=seen)
        assert seen.started[STATIC_TABLE_STAGE] > 30_000 and seen.done[STATIC_TABLE_STAGE] > 0
        assert STATIC_TABLE_STAGE in lines[0] and "start-up" not in lines[0]
        assert "static table" in report.timings and report.embedder.startswith("static-")
        again = Recorder()
        (ws / "a.py").write_text(V2)
        report = run_index(str(ws), Settings(), watcher=again)  # kept static, table cached: no such stage
        assert STATIC_TABLE_STAGE not in again.started and "static table" not in report.timings
        assert report.embedder.startswith("static-") and len(lines) == 1
    finally:
        get_embedder.cache_clear()

"""`assay watch` as a user starts it: it catches up on edits made while nothing watched, and refuses bad options."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.flows.watch import CATCH_UP, watch_workspace
from assay.stages.core.config import Settings
from assay.stages.index.store import Catalog, load_manifest

SETTINGS = Settings(embedder="static", watch_debounce_ms=300)


def _watch_until(root: Path, done, runs: list) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=watch_workspace, args=(root, SETTINGS, stop, lambda c, r, e: runs.append((c, r, e))),
                              kwargs={"catch_up": True})
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not done():
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join(timeout=30)


def test_the_watch_catches_up_on_edits_made_before_it_began(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def first():\n    return 1\n")
    run_index(str(tmp_path), SETTINGS)
    (tmp_path / "b.py").write_text("def made_while_nothing_watched():\n    return 2\n")  # no event will ever come
    runs: list = []
    _watch_until(tmp_path, lambda: "b.py" in load_manifest(tmp_path).files, runs)
    assert "b.py" in load_manifest(tmp_path).files
    assert [c for c, _, _ in runs] == [[CATCH_UP]] and runs[0][1].files_parsed == 1 and runs[0][2] is None


def test_the_watch_indexes_a_folder_never_indexed(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def lonely():\n    return 1\n")
    runs: list = []
    _watch_until(tmp_path, lambda: load_manifest(tmp_path) is not None and bool(runs), runs)
    assert runs[0][2] is None, runs
    assert [e.qualname for e in Catalog(tmp_path).by_name("lonely")] == ["lonely"]


def test_a_negative_debounce_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["watch", str(tmp_path), "--debounce", "-1"])
    assert result.exit_code == 2 and "Traceback" not in result.output and "--debounce" in result.output

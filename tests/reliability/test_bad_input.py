"""Bad input to indexing: every file gets a counted skip or a partial parse; nothing indexed is lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


from assay.flows.index import run_index
from assay.stages.index import incremental
from assay.stages.index.store import Catalog
from tests.conftest import make_unreadable


def names(root: Path) -> set[str]:
    return {e.qualname for e in Catalog(root).all()}


@pytest.fixture()
def indexed(project: Path) -> tuple[Path, set[str]]:
    run_index(str(project))
    return project, names(project)


def test_hostile_files_are_skipped_or_partially_parsed(indexed, ledger) -> None:
    root, before = indexed
    (root / "blob.bin.py").write_bytes(os.urandom(2048).replace(b"\x00", b"\x01") + b"\x00tail")
    (root / "latin1.py").write_bytes(b"def caf\xe9():\n    return '\xff'\n")
    (root / "broken.py").write_text("def ok():\n    return 1\n\ndef broken(:\n    pass\n")
    with open(root / "huge.py", "w") as fh:  # 50 MB
        chunk = "x = 1  # padding line for a very large file\n" * 1000
        for _ in range(50_000_000 // len(chunk) + 1):
            fh.write(chunk)
    (root / "bundle.min.js").write_text("\n".join(f"var a{i}=function(){{return {i}}};" for i in range(10_000)))
    (root / "loop1.py").symlink_to(root / "loop2.py")
    (root / "loop2.py").symlink_to(root / "loop1.py")
    outside = root.parent / "outside_secret.py"
    outside.write_text("SECRET = 'x'\n")
    (root / "escape.py").symlink_to(outside)
    (root / "sub dir with spaces").mkdir()
    (root / "sub dir with spaces" / "ünïcödé.py").write_text("def grüße():\n    return 'hallo'\n")
    report = run_index(str(root))
    assert report.skipped["binary"] == 1 and report.skipped["too_large"] == 1
    assert report.skipped["symlink_broken_or_loop"] == 2 and report.skipped["symlink_outside"] == 1
    assert "partial_parse" not in report.skipped and report.files_partial == 2  # parsed, so not skipped as well
    after = names(root)
    assert {"ok", "grüße", "a9999"} <= after and "SECRET" not in after
    ledger.kept(before, after)


def test_unreadable_files_keep_their_entities(indexed, ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    root, before = indexed
    locked = root / "pkg" / "retry.py"
    make_unreadable(monkeypatch, locked)
    report = run_index(str(root))
    assert report.skipped["unreadable"] == 1 and report.kept_unreadable == 1
    ledger.kept(before, names(root))


def test_file_vanishing_between_discovery_and_parse(indexed, ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    root, before = indexed
    target = root / "pkg" / "session.py"
    target.write_text(target.read_text() + "\n\ndef added_later():\n    return 1\n")
    real_parse = incremental.parse_files

    def vanish_then_parse(r, files, *args, **kwargs):
        target.unlink()  # deleted after discovery saw it
        return real_parse(r, files, *args, **kwargs)

    monkeypatch.setattr("assay.tasks.index.incremental.parse_files", vanish_then_parse)
    report = run_index(str(root))
    assert report.skipped["vanished"] == 1
    ledger.kept(before, names(root))  # the old entities stay until a run sees the file gone
    monkeypatch.undo()
    report = run_index(str(root))
    assert report.files_removed == 1 and "Session" not in names(root)

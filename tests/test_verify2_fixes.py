"""Fixes from the sweep3 re-test (verify2.md): a catalog damaged past its header is named with its remedy at every
door and mended by a plain index run (N3); a failed BM25 save leaves no temporary folder, and a stale one is swept
(N4); a run killed after its lexical commit says the index answers by BM25 (N5); `history` follows an uncommitted
rename into a subfolder workspace from outside it (N6); a question's names with non-ASCII letters are code names,
while an ASCII question's identifiers are exactly what they were (R1)."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import assay.tasks.index as index_tasks
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core import progress as prog
from assay.stages.core.artifacts import Entity
from assay.stages.core.config import Settings
from assay.stages.index.lexical import LexicalIndex
from assay.stages.index.notes import add_note, list_notes
from assay.stages.index.state_db import DamagedDatabase
from assay.stages.index.store import Catalog, load_manifest
from assay.stages.query.git_history import history
from assay.stages.query.identifiers import question_identifiers
from assay.stages.query.rank import query_shape
from assay.stages.query.retrieve import search
from tests.test_crash_state import indexed  # noqa: F401  (a fixture)
from tests.test_index_resume import Killed, StandInEmbedder

runner = CliRunner()
PAGE = 4096


def malform_catalog(root: Path) -> None:
    """Garbage over every page but the first (its header and schema still read: the open's check passes), as the
    report's `dd ... seek=3` left it: SQLite then says "database disk image is malformed" at the first real read."""
    gc.collect()
    db = root / ".assay" / "catalog.sqlite"
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    size = db.stat().st_size
    assert size > 4 * PAGE, size
    with db.open("r+b") as f:
        f.seek(PAGE)
        f.write(os.urandom(size - PAGE))


# N3. a catalog damaged past its header

def test_a_catalog_malformed_past_its_header_is_named_with_its_remedy_at_the_cli_doors(indexed: Path) -> None:  # noqa: F811
    malform_catalog(indexed)
    for args in (["search", "retry_call", str(indexed)], ["callers", "retry_call", str(indexed)]):
        out = runner.invoke(app, args)
        assert out.exit_code == 2, out.output
        assert "catalog.sqlite is damaged (database disk image is malformed)" in out.output, out.output
        assert "assay index --rebuild" in out.output and "Traceback" not in out.output, out.output
    with pytest.raises(DamagedDatabase, match="catalog.sqlite is damaged"):
        Catalog(indexed).count()


def test_a_plain_index_run_sets_a_malformed_catalog_aside_rebuilds_it_and_keeps_the_notes(indexed: Path) -> None:  # noqa: F811
    note = add_note(indexed, "we never retry POSTs", StandInEmbedder())
    entities = load_manifest(indexed).entity_count
    malform_catalog(indexed)
    report = run_index(str(indexed), Settings())
    assert "catalog.sqlite was damaged" in report.rebuild_reason and "rebuilt from the files" in report.rebuild_reason
    assert "\n" not in report.rebuild_reason  # quick_check's report, on one line
    assert (indexed / ".assay" / "catalog.sqlite.damaged").exists()
    assert Catalog(indexed).count() == entities + 1  # every passage (the manifest's count) and the note, read again
    assert [n.id for n in list_notes(indexed)] == [note.id]
    found = search(indexed, "retry_call", Settings(), k=3, mode="bm25").candidates
    assert found and found[0].entity == "retry_call"


# N4. the BM25 save's temporary folder

def _index_of(n: int) -> LexicalIndex:
    from assay.stages.index.term_counts import TermCounts

    return LexicalIndex.from_counts(TermCounts.count([f"id{i}" for i in range(n)], [["alpha", f"w{i}"] for i in range(n)]))


def test_a_failed_bm25_save_leaves_no_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / ".assay" / "lexical"

    def full_disk(self, tmp: Path) -> None:
        (tmp / "ids.json").write_text("[")  # half written, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(LexicalIndex, "_write", full_disk)
    with pytest.raises(OSError):
        _index_of(3).save(folder)
    assert not list(folder.parent.glob(".lexical-*")), list(folder.parent.iterdir())


def test_a_save_sweeps_the_temporary_folders_a_killed_save_left(tmp_path: Path) -> None:
    folder = tmp_path / ".assay" / "lexical"
    stale = tmp_path / ".assay" / ".lexical-q7e3px41"
    stale.mkdir(parents=True)
    (stale / "data.csc.index.npy").write_bytes(b"x" * 1000)
    _index_of(3).save(folder)
    assert not stale.exists()
    assert LexicalIndex.load(folder).ids == ["id0", "id1", "id2"]


# N5. killed just after the lexical commit

def test_a_stages_last_item_is_written_at_once_not_throttled(tmp_path: Path) -> None:
    sink = prog.StatusSink(tmp_path)
    sink.start("parse", 3)
    for _ in range(3):
        sink.advance("parse")  # within the 0.5 s throttle: only a stage's end is forced
    state = json.loads((tmp_path / ".assay" / "status.json").read_text())
    assert state["stages"]["parse"]["done"] == 3


def test_a_run_killed_after_its_lexical_commit_says_the_index_answers_by_bm25(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import FIXTURES
    from tests.test_index_resume import use

    workspace = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", workspace)
    use(monkeypatch, StandInEmbedder())

    def killed(*args, **kwargs):
        raise Killed()  # SIGKILL while Chroma opens: the manifest and BM25 are written, no vector is

    monkeypatch.setattr(index_tasks, "prepare_dense", killed)
    with pytest.raises(Killed):
        run_index(str(workspace), Settings())
    view = prog.run_view(prog.read_status(workspace))
    line = prog.run_line(view)
    files = view["files_total"]
    assert view["lexical_committed"] and files > 0
    assert f"after its lexical phase: files {files}/{files} parsed, queryable by BM25" in line, line
    assert "during parse" not in line


def test_a_run_killed_before_its_lexical_commit_does_not_claim_it(tmp_path: Path) -> None:
    sink = prog.StatusSink(tmp_path)
    sink.start("parse", 2)
    sink.advance("parse", 2)
    sink.start(prog.LEXICAL, 1)
    sink.finish("interrupted")
    line = prog.run_line(prog.run_view(prog.read_status(tmp_path)))
    assert "during lexical" in line and "queryable" not in line, line


# N6. an uncommitted rename into a subfolder workspace from outside it

def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_history_follows_a_rename_into_the_workspace_from_outside_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "other").mkdir()
    (repo / "pkg" / "keep.py").write_text("def keep():\n    return 0\n")
    (repo / "other" / "help.py").write_text("import os\n\n\ndef info():\n    '''About.'''\n    return os.name\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "add info")
    _git(repo / "pkg", "mv", "../other/help.py", "help.py")
    entity = Entity(id="x", file="help.py", kind="function", language="python", name="info", qualname="info",
                    start_line=4, end_line=6, content_hash="", body="def info():\n    '''About.'''\n    return os.name\n")
    result = history(repo / "pkg", entity)
    assert [c.subject for c in result.commits] == ["add info"], result
    assert "uncommitted rename from ../other/help.py (outside the workspace)" in result.note, result.note


# R1. names with non-ASCII letters; ASCII questions unchanged

ASCII_QUESTIONS = {
    "What does `foo` do": ["foo"],
    "How does Foo.bar call snake_case and getX()?": ["Foo.bar", "snake_case", "getX"],
    "why does HttpClient retry on URLs": ["HttpClient"],
    "what calls __init__ and _x and foo_": ["__init__"],
    "What does missing_name call?": ["missing_name"],
    "how does the router work": [],
}


@pytest.mark.parametrize("question", sorted(ASCII_QUESTIONS))
def test_an_ascii_questions_identifiers_are_what_they_were(question: str) -> None:
    assert question_identifiers(question) == ASCII_QUESTIONS[question]


def test_ascii_symbol_queries_are_what_they_were() -> None:
    assert [query_shape(q).symbol for q in ("foo", "Foo.bar", "empty?", "Foo::bar", "$ZodType", "9lives", "a b")] == \
        [True, True, True, True, True, False, False]


@pytest.mark.parametrize("question, names", [
    ("What does 存在しない call?", ["存在しない"]),
    ("What does größe_fehlt do?", ["größe_fehlt"]),
    ("How is Ünïcödé.método used?", ["Ünïcödé.método"]),
    ("what calls getÜberData?", ["getÜberData"]),
    ("What does `計算する` return?", ["計算する"]),
    ("What does Ünïcödé do?", []),  # a capitalised word is prose, as `Unicode` is
    ("why is the naïve approach slow?", []),
    ("compute は何を呼びますか?", []),  # a Japanese question: its words are not names
])
def test_names_with_non_ascii_letters_are_code_names(question: str, names: list[str]) -> None:
    assert question_identifiers(question) == names


def test_a_query_that_is_one_non_ascii_name_is_a_symbol_query() -> None:
    for name in ("計算する", "Ünïcödé"):
        shape = query_shape(name)
        assert shape.symbol and name in shape.identifiers


def test_a_missing_non_ascii_name_is_a_gap_and_a_defined_one_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_index_resume import use

    root = tmp_path / "uni"
    root.mkdir()
    (root / "uni.py").write_text("def 計算する(x):\n    return x\n\n\nclass Ünïcödé:\n    pass\n")
    (root / "other.py").write_text("def calls_longer_name():\n    return 1\n")
    use(monkeypatch, StandInEmbedder())
    run_index(str(root), Settings())
    out = runner.invoke(app, ["ask", "What does 存在しない call?", str(root), "--judge", "none"])
    assert "gap: not found in the index: 存在しない" in out.output, out.output
    for name in ("計算する", "Ünïcödé"):
        out = runner.invoke(app, ["search", name, str(root), "-k", "1"])
        assert f"[{name}]" in out.output and "why: defines" in out.output, out.output

"""MCP get_entity and history lookups: an exact file name over its Unicode normal-form twin, a skipped file's recorded
reason (index_workspace advised only for a new file), the source definition over its dist/ copy with the others
named in the text, and history's `stale_files` as the CLI's `history --json` carries it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import mcp_server as m
from assay.flows.cli import app
from tests.test_mcp_names import _allowed, committed_and_indexed, error, text  # noqa: F401 - _allowed: autouse, the same roots

NFC = unicodedata.normalize("NFC", "résumé.py")
NFD = unicodedata.normalize("NFD", "résumé.py")
FILES = {
    NFC: "def resume_nfc():\n    return 1\n",
    NFD: "\n\n\ndef resume_nfd():\n    return 2\n",
    "trail.py.": "def trailing_dot():\n    pass\n",
    "yarn.lock": 'ms@^2.1.3:\n  version "2.1.3"\n',
    "app.min.js": "var a=1;" * 800 + "\n",
    ".env": "TOKEN=x\n",
    "ignored_here.py": "def ignored_fn():\n    pass\n",
    ".gitignore": "ignored_here.py\n",
    "dist/bundle.js": "function parseQuantity(input) {\n  return Number(input);\n}\n",
    "packages/util/src/format.ts": ("export function parseQuantity(input: string): number {\n"
                                    "  if (!input) throw new RangeError('bad');\n  return Number(input);\n}\n"),
    "build/copy.js": "function parseQuantity(input) {\n  return +input;\n}\n",
    "pkg/retry.py": "def retry():\n    return 1\n",
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return committed_and_indexed(tmp_path_factory.mktemp("lookups") / "ws", FILES)


def found(res) -> dict:
    assert not res.is_error, text(res)
    return res.structured_content


# windowsish 5: of two names differing only in normal form, the one given


def test_get_entity_takes_the_exact_name_over_its_normal_form_twin(ws: Path) -> None:
    nfd = found(m.get_entity(str(ws), file=NFD, line=4))
    assert (nfd["entity"], nfd["file"]) == ("resume_nfd", NFD)
    assert found(m.get_entity(str(ws), file=NFD, line=1))["file"] == NFD  # its own file entity, not resume_nfc
    nfc = found(m.get_entity(str(ws), file=NFC, line=1))
    assert (nfc["entity"], nfc["file"]) == ("resume_nfc", NFC)
    assert found(m.get_entity(str(ws), file=f"./{NFD}:4"))["entity"] == "resume_nfd"  # a receipt, as pasted
    assert found(m.get_entity(str(ws), file=str(ws / NFD), line=4))["entity"] == "resume_nfd"  # absolute
    assert found(m.get_entity(str(ws), name="resume_nfd", file=NFD))["entity"] == "resume_nfd"


# windowsish 7: a skipped file's recorded reason; index_workspace only for a new one


@pytest.mark.parametrize(("file", "words"), [
    ("trail.py.", "skipped it as unsupported_type (Assay parses no file of this type"),
    ("yarn.lock", "skipped it as lockfile (lock files are never indexed)"),
    ("app.min.js", "skipped it as minified (to index such files, set ASSAY_INDEX_GENERATED=1"),
    (".env", "skipped it as secret_file (may hold credentials; to index it anyway, add the line `!/.env`"),
    ("ignored_here.py", ".gitignore or .assayignore"),
])
def test_get_entity_on_a_skipped_file_says_the_recorded_reason(ws: Path, file: str, words: str) -> None:
    res = error(m.get_entity(str(ws), file=file, line=1))
    assert f"{file} is not an indexed file" in res and words in res and "\n" not in res, res
    if not words.startswith("skipped it as minified"):
        assert "call index_workspace" not in res, res  # re-indexing cannot add it


def test_get_entity_on_a_file_new_since_indexing_advises_index_workspace(ws: Path) -> None:
    (ws / "fresh.py").write_text("def fresh():\n    pass\n")
    try:
        res = error(m.get_entity(str(ws), file="fresh.py", line=1))
        assert "added or changed since the last index run: call index_workspace" in res, res
    finally:
        (ws / "fresh.py").unlink()


# jsmonorepo 4: the source definition, and the others named in the text


def test_get_entity_by_a_shared_name_gives_the_source_and_names_the_others(ws: Path) -> None:
    res = m.get_entity(str(ws), name="parseQuantity")
    data = found(res)
    assert data["file"] == "packages/util/src/format.ts" and "RangeError" in data["source"]
    assert data["others"] == 2
    shown = text(res)
    assert "also defined in 2 other place(s): parseQuantity (build/copy.js:1), parseQuantity (dist/bundle.js:1)" in shown
    assert "call get_entity with its file" in shown
    one = found(m.get_entity(str(ws), name="parseQuantity", file="dist/bundle.js"))  # how the text says to get one
    assert one["file"] == "dist/bundle.js" and one["others"] == 0


def test_get_entity_of_a_one_definition_name_has_no_others_line(ws: Path) -> None:
    res = m.get_entity(str(ws), name="resume_nfc")
    assert found(res)["others"] == 0 and "also defined" not in text(res)


# history: stale_files in both doors


def test_mcp_history_carries_stale_files_as_the_cli_does(ws: Path) -> None:
    fresh = found(m.history(str(ws), "retry"))
    assert fresh["stale_files"] == [] and fresh["commits"]
    target = ws / "pkg/retry.py"
    before = target.read_text()
    try:
        target.write_text(before + "\n\ndef later():\n    return 2\n")
        stale = found(m.history(str(ws), "retry"))
        assert stale["stale_files"] == ["pkg/retry.py"] and stale["commits"]
        out = CliRunner().invoke(app, ["history", "retry", str(ws), "--json"])
        assert out.exit_code == 0 and json.loads(out.stdout)["stale_files"] == ["pkg/retry.py"], out.output
    finally:
        target.write_text(before)


# files opened by indexed name go through fs_names.on_disk: a process whose locale spells names in ASCII


def test_get_entity_reads_a_non_ascii_file_under_an_ascii_locale(ws: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    script = ("import sys; from assay.flows import mcp_server as m\n"
              f"r = m.get_entity({ascii(str(ws))}, file={ascii(NFD)}, line=4)\n"  # ASCII: argv is read as the locale reads it
              "print(r.is_error, ascii(r.structured_content and r.structured_content['entity']), ascii(r.content[0].text[:80]))")
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "ASSAY_ALLOWED_ROOTS": str(tmp_path_factory.getbasetemp())}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("False 'resume_nfd'"), out.stdout + out.stderr


def test_get_entity_takes_a_name_as_rust_cpp_and_go_write_it(tmp_path: Path) -> None:
    """`callers` took `MemoryStore::check_room` and Go's `(*Server).handle` (polyglot 6); get_entity, the tool an
    agent calls next with the same name, said no definition."""
    ws = committed_and_indexed(tmp_path / "ws", {
        "src/lib.rs": "pub struct MemoryStore;\nimpl MemoryStore {\n    pub fn check_room(&self) -> bool { true }\n}\n",
        "api/s.go": "package api\n\ntype Server struct{}\n\nfunc (s *Server) handle() {}\n",
    })
    for name, want in (("MemoryStore::check_room", "MemoryStore.check_room"), ("(*Server).handle", "Server.handle"),
                       ("api.(*Server).handle", "Server.handle")):
        assert found(m.get_entity(str(ws), name=name))["entity"] == want, name


def test_get_entity_narrows_a_go_name_by_its_package(tmp_path: Path) -> None:
    """`api.(*Server).Start` named both packages' `Server.Start` in get_entity while `callers` took the package."""
    ws = committed_and_indexed(tmp_path / "ws", {
        "api/s.go": "package api\n\ntype Server struct{}\n\nfunc (s *Server) Start() {}\n",
        "admin/s.go": "package admin\n\ntype Server struct{}\n\nfunc (s Server) Start() {}\n",
    })
    assert found(m.get_entity(str(ws), name="api.(*Server).Start"))["file"] == "api/s.go"
    assert found(m.get_entity(str(ws), name="admin.Server.Start"))["file"] == "admin/s.go"
    assert "no Go package 'nope'" in error(m.get_entity(str(ws), name="nope.(*Server).Start"))

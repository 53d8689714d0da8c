"""Source text as editors and interpreters read it: lines break at line endings only (a form feed, U+0085 or U+2028
starts no line), files decode as they declare (PEP 263 coding lines, UTF-8 and UTF-16 byte-order marks), and the
index summary's counts add up."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.artifacts import IndexReport, SkippedFile
from assay.stages.index.discover import discover, file_hash, is_binary
from assay.stages.index.notebook import python_view
from assay.stages.index.parse import parse_source
from assay.stages.index.report import summary_lines
from assay.stages.index.source_text import source_lines, utf8_source
from assay.stages.query.synthesize import telling_lines

runner = CliRunner()

FORMFEED = b"def ff_before():\n    return 1\n\x0c\ndef ff_after_function():\n    return 2\n"
LINESEP = 'X = "a\u2028b"\nY = "c\x85d"\n\n\ndef ls_after_function():\n    return 3\n'.encode()
LATIN1 = '# -*- coding: latin-1 -*-\ndef latin_function_gamma():\n    """Café résumé naïve"""\n    return "señor"\n'


def _sed(source: bytes, start: int, end: int) -> str:
    """`sed -n 'start,endp'` of the file: its lines as counted on "\\n"."""
    return "\n".join(source.decode().split("\n")[start - 1 : end])


def _entity(source: bytes, path: str, qualname: str, language: str = "python"):
    parsed = parse_source(source, path, language, file_hash(source))
    return parsed, next(e for e in parsed.entities if e.qualname == qualname)


# -- 3: lines ---------------------------------------------------------------------------------------------------------


def test_source_lines_break_at_line_endings_only() -> None:
    text = "a\x0cb\nc\u2028d\u2029\ne\x85f\x0b\x1c\r\ng\rh\n"
    assert source_lines(text) == ["a\x0cb", "c\u2028d\u2029", "e\x85f\x0b\x1c", "g", "h"]
    assert source_lines("") == [] and source_lines("x") == ["x"] and source_lines("x\n\n") == ["x", ""]


def test_a_form_feed_does_not_shift_passage_text() -> None:
    _, fn = _entity(FORMFEED, "formfeed.py", "ff_after_function")
    assert (fn.start_line, fn.end_line) == (4, 5)
    assert fn.body == _sed(FORMFEED, 4, 5) == "def ff_after_function():\n    return 2"


def test_u2028_and_nel_do_not_shift_passage_text_or_invent_lines() -> None:
    parsed, fn = _entity(LINESEP, "linesep.py", "ls_after_function")
    assert (fn.start_line, fn.end_line) == (5, 6)
    assert fn.body == _sed(LINESEP, 5, 6) == "def ls_after_function():\n    return 3"
    assert max(e.end_line for e in parsed.entities) == 6  # the file has six lines


def test_text_windows_count_lines_the_same_way() -> None:
    src = b"one\x0c\ntwo\xe2\x80\xa8still two\nthree\n"
    parsed = parse_source(src, "notes.txt", "text", file_hash(src))
    assert [(e.start_line, e.end_line) for e in parsed.entities] == [(1, 3)]
    assert parsed.entities[0].body == _sed(src, 1, 3)


def test_a_cited_line_is_the_file_line_past_a_form_feed() -> None:
    body = "def f():\n    page = '\x0c'\n    return fetch_widget()\n"
    assert telling_lines(body, {"widget"}, 3) == [(2, "return fetch_widget()")]


def test_a_notebook_cell_with_a_form_feed_keeps_its_python_view() -> None:
    cell = {"cell_type": "code", "source": ["x = '\x0c'\n", "def nb_fn():\n", "    return 1"], "metadata": {},
            "outputs": [], "execution_count": None}
    raw = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1).encode()
    view = python_view(raw)
    assert view is not None and b"def nb_fn():" in view


# -- 15: encodings ----------------------------------------------------------------------------------------------------


def test_a_python_file_decodes_by_its_coding_line() -> None:
    src = LATIN1.encode("latin-1")
    parsed, fn = _entity(src, "latin1.py", "latin_function_gamma")
    assert not parsed.partial and parsed.error == ""
    assert '"""Café résumé naïve"""' in fn.body and 'return "señor"' in fn.body and "\ufffd" not in fn.body


def test_cp1252_coding_line() -> None:
    src = "# coding: cp1252\ndef quote():\n    return '\u2018hi\u2019 costs 5 \u20ac'\n".encode("cp1252")
    parsed, fn = _entity(src, "cp.py", "quote")
    assert not parsed.partial and "'\u2018hi\u2019 costs 5 \u20ac'" in fn.body


def test_a_wrong_ascii_coding_line_over_utf8_text_reads_the_text() -> None:
    src = "# coding: ascii\ndef greet():\n    return 'grüße'\n".encode()
    parsed, fn = _entity(src, "a.py", "greet")
    assert not parsed.partial and "grüße" in fn.body


def test_undeclared_latin1_is_still_a_partial_parse() -> None:
    src = b"def caf\xe9():\n    return '\xff'\n"
    text, error = utf8_source(src, "python")
    assert text == src and "UTF-8" in error
    assert parse_source(src, "l.py", "python", file_hash(src)).partial


def test_a_utf8_bom_is_no_part_of_the_passage() -> None:
    src = b"\xef\xbb\xbfdef bom_function_beta():\n    return 1\n"
    parsed, fn = _entity(src, "bom.py", "bom_function_beta")
    assert not parsed.partial and fn.body == "def bom_function_beta():\n    return 1" and fn.start_line == 1
    md = b"\xef\xbb\xbf# Title\n\nSome words.\n"
    assert all("\ufeff" not in e.body for e in parse_source(md, "r.md", "markdown", file_hash(md)).entities)


def test_utf16_with_a_bom_is_text(tmp_path: Path) -> None:
    text = "def utf16_function_epsilon():\n    return 'ü'\n"
    for name, codec in (("le.py", "utf-16"), ("be.py", "utf-16-be")):
        raw = ("\ufeff" + text).encode(codec) if codec.endswith("be") else text.encode(codec)
        (tmp_path / name).write_bytes(raw)
        assert not is_binary(raw)
        parsed, fn = _entity(raw, name, "utf16_function_epsilon")
        assert not parsed.partial and (fn.start_line, fn.end_line) == (1, 2) and "'ü'" in fn.body
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    found = discover(tmp_path)
    assert sorted(f.path for f in found.files) == ["be.py", "le.py"]
    assert [(s.path, s.reason) for s in found.skipped] == [("nul.py", "binary")]


def test_a_bom_followed_by_nul_characters_is_still_binary() -> None:
    assert is_binary(b"\xff\xfe\x00\x00\x00\x00abc")  # UTF-32's mark, or NUL characters: not UTF-16 text


# -- 16: the index summary --------------------------------------------------------------------------------------------


def _report(**changes) -> IndexReport:
    base = dict(workspace="/w", files_seen=10, files_parsed=6, files_unchanged=2, files_removed=0, files_partial=2,
                skipped={"binary": 2}, kept_unreadable=0, entities_total=12, entities_embedded=12,
                entities_by_kind={"file": 3, "function": 5}, entities_by_language={"python": 8}, embed_truncated=0,
                timings={}, embedder="e",
                skipped_examples=[SkippedFile(path="b.bin.py", reason="binary"),
                                  SkippedFile(path="broken.py", reason="partial_parse", detail="syntax errors near line 4"),
                                  SkippedFile(path="l.py", reason="partial_parse", detail="invalid UTF-8")])
    return IndexReport(**{**base, **changes})


def test_summary_counts_add_up_and_name_partial_files() -> None:
    lines = summary_lines(_report())
    assert "files: 10 seen = 6 parsed + 2 unchanged + 2 skipped; 0 removed, 0 kept (unreadable now)" in lines
    partial = next(line for line in lines if line.startswith("partial:"))
    assert "2 of the parsed files" in partial and "broken.py (syntax errors near line 4)" in partial and "l.py" in partial
    entities = next(line for line in lines if line.startswith("entities:"))
    assert entities.startswith("entities: 12 passages in index (8 entities;")
    assert "by kind (8 entities): file 3, function 5" in lines and "by language (8 entities): python 8" in lines


def test_summary_says_in_index_when_passages_are_entities() -> None:
    lines = summary_lines(_report(entities_total=8, files_partial=0))
    assert any(line.startswith("entities: 8 in index,") for line in lines)
    assert not any(line.startswith("partial:") for line in lines)


def test_index_run_counts_a_partial_file_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "formfeed.py").write_bytes(FORMFEED)
    (root / "linesep.py").write_bytes(LINESEP)
    (root / "latin1.py").write_bytes(LATIN1.encode("latin-1"))
    (root / "utf16.py").write_bytes("def utf16_function_epsilon():\n    return 1\n".encode("utf-16"))
    (root / "broken.py").write_text("def ok():\n    return 1\n\ndef broken(:\n    pass\n")
    (root / "blob.py").write_bytes(b"\x00\x01")
    res = runner.invoke(app, ["index", str(root), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["skipped"] == {"binary": 1} and report["files_partial"] == 1
    assert report["files_seen"] == report["files_parsed"] + report["files_unchanged"] + sum(report["skipped"].values())
    hits = json.loads(runner.invoke(app, ["search", "ls_after_function", str(root), "-k", "1", "--json"]).stdout)["results"]
    assert (hits[0]["file"], hits[0]["start_line"], hits[0]["end_line"]) == ("linesep.py", 5, 6)
    utf16 = json.loads(runner.invoke(app, ["search", "utf16_function_epsilon", str(root), "-k", "1", "--json"]).stdout)["results"]
    assert utf16[0]["file"] == "utf16.py"

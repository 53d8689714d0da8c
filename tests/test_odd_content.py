"""Unusual file contents are read, or reported by name with why: notebooks with a cell's source as one string or
not JSON at all, skipped files named per reason, hand-written scripts with one long line (not minified), deeply
nested definitions, a JS function after a syntax error, and one meaning for "embedded" across the doors."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.artifacts import FileRecord, IndexManifest, SkippedFile
from assay.stages.index import incremental
from assay.stages.index.discover import discover, is_minified
from assay.stages.index.incremental import NOT_LISTED, dense_note, listed_examples
from assay.stages.index.notebook import python_view, view_problem
from assay.stages.index.parse import parse_source

runner = CliRunner()


def _cell(source: str | list[str]) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}


def _notebook(cells: list[dict]) -> bytes:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1).encode()


STRING_SOURCE = _notebook([_cell("def nb_str_src():\n    return 1\n"),
                           _cell(["def nb_list_src():\n", "    return nb_str_src()\n"])])
TRUNCATED = b'{"cells": [ {"cell_type": "code", "source": ["def nb_bad():\\n", "  return 1"] , \n'


def _index_json(root: Path) -> dict:
    res = runner.invoke(app, ["index", str(root), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


# -- 2: notebooks -----------------------------------------------------------------------------------------------------


def test_a_cell_whose_source_is_one_string_keeps_the_rest_of_the_notebook_python() -> None:
    """nbformat allows a cell's source as one string: that cell sits on one line of the file, so it is kept as words
    and said; the other cells are still Python at their own lines (the whole notebook was raw JSON windows)."""
    raw = STRING_SOURCE.decode().split("\n")
    parsed = parse_source(STRING_SOURCE, "s.ipynb", "notebook", "h")
    found = {e.qualname: e for e in parsed.entities}
    listed = found["nb_list_src"]
    assert listed.kind == "function" and listed.language == "python"
    assert raw[listed.start_line - 1].strip() == '"def nb_list_src():\\n",'
    assert "nb_str_src" not in found  # no definition on a line that does not hold its lines
    assert any("def nb_str_src()" in e.body + e.docstring for e in parsed.entities)  # its words are searchable
    string_row = next(n for n, line in enumerate(raw, start=1) if '"source": "def nb_str_src' in line)
    problem = view_problem(STRING_SOURCE)
    assert "one string over several lines" in problem and f"line {string_row}" in problem


def test_a_notebook_written_as_jupyter_does_has_no_problem() -> None:
    data = _notebook([_cell(["def tidy():\n", "    return 1\n"]), _cell("x = 1")])  # a one-line string is a line
    assert python_view(data) is not None and view_problem(data) == ""


def test_notebooks_read_as_text_or_in_part_are_named_in_the_report(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "strsource.ipynb").write_bytes(STRING_SOURCE)
    (root / "truncated.ipynb").write_bytes(TRUNCATED)
    (root / "oneline.ipynb").write_bytes(json.dumps(json.loads(STRING_SOURCE)).encode())  # no line to put code at
    report = _index_json(root)
    assert report["files_partial"] == 3
    why = {s["path"]: s["detail"] for s in report["skipped_examples"] if s["reason"] == "partial_parse"}
    assert "one string over several lines" in why["strsource.ipynb"]
    truncated = why["truncated.ipynb"]
    assert truncated.startswith("not valid JSON (line 2") and "read as text windows" in truncated
    assert "not laid out as Jupyter writes it" in why["oneline.ipynb"]
    callers = runner.invoke(app, ["callers", "nb_list_src", str(root)])
    assert callers.exit_code == 0 and "strsource.ipynb" in callers.output
    text = runner.invoke(app, ["index", str(root), "--rebuild"]).output
    partial = next(line for line in text.splitlines() if line.startswith("partial:"))
    assert "strsource.ipynb (" in partial and "truncated.ipynb (not valid JSON" in partial


# -- 3: skipped files named -------------------------------------------------------------------------------------------


def test_skipped_files_are_named_per_reason_and_json_lists_them_all(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for i in range(1, 26):
        (root / f"empty{i:02d}.py").write_bytes(b"")
    (root / "real.py").write_text("def real():\n    return 1\n")
    (root / "big.py").write_bytes(b"a" * 1_200_000)
    lines = runner.invoke(app, ["index", str(root)]).output.splitlines()
    at = lines.index("skipped: empty 25, too_large 1")
    assert lines[at + 1] == ("  empty: empty01.py, empty02.py, empty03.py, and 22 more "
                             "(`assay index --json` names them all, in skipped_examples)")
    assert lines[at + 2] == "  too_large: big.py (1200000 bytes > 1000000)"
    report = _index_json(root)
    named = [s["path"] for s in report["skipped_examples"] if s["reason"] == "empty"]
    assert named == [f"empty{i:02d}.py" for i in range(1, 26)]  # all 25, not the first 20
    assert not any(s["reason"] == NOT_LISTED for s in report["skipped_examples"])


def test_a_cut_list_of_examples_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(incremental, "EXAMPLES_PER_REASON", 2)
    skipped = [SkippedFile(path=f"e{i}.py", reason="empty") for i in range(5)]
    skipped.append(SkippedFile(path="b", reason="binary"))
    partial = [SkippedFile(path=f"p{i}.py", reason="partial_parse", detail="x") for i in range(3)]
    listed = listed_examples(skipped, partial)
    assert [s.path for s in listed[:-1]] == ["e0.py", "e1.py", "b", "p0.py", "p1.py"]
    assert listed[-1].reason == NOT_LISTED and "empty 3" in listed[-1].detail and "partial_parse 1" in listed[-1].detail


# -- 4: minified or hand-written --------------------------------------------------------------------------------------

ICON = "const ICON = 'data:image/png;base64," + base64.b64encode(bytes(range(256)) * 70).decode() + "';\n\n"
HAND_WRITTEN = "// Icon helpers (hand-written)\n" + ICON + "".join(
    f"function helper{i}(el) {{\n  el.src = ICON;\n  return el;\n}}\n\n" for i in range(20))
DEEP = "".join("  " * d + f"function deep{d}() {{\n" for d in range(300)) + "".join(
    "  " * d + "}\n" for d in reversed(range(300)))
BUNDLE_CODE = "".join(f"function f{i}(a){{return a+{i}}}" for i in range(400))
LICENCE = "/*!\n  Copyright (c) 2018 Someone.\n  Licensed under the MIT License (MIT), see\n  https://example.com\n*/\n"
# rustdoc's main.js: a few long lines of code beside a score of short ones
PARTLY_WRAPPED = "".join(f'"use strict";{BUNDLE_CODE[:3000]}\nwindow.x{i}=1;\nfunction g{i}(){{return 1}}\n'
                         for i in range(4)) + "".join(f"const short{i} = {i};\n" for i in range(12))


def test_a_hand_written_script_with_one_long_line_is_not_minified(tmp_path: Path) -> None:
    assert len(HAND_WRITTEN) / HAND_WRITTEN.count("\n") > 200  # the mean that dropped it
    assert not is_minified(HAND_WRITTEN.encode(), "javascript")
    assert not is_minified(DEEP.encode(), "javascript")  # indentation is no length
    css = "/* hand-written */\n.logo { background: url(data:image/png;base64," + ICON[40:-5] + "); }\n" + "".join(
        f".c{i} {{\n  color: red;\n}}\n" for i in range(30))
    assert not is_minified(css.encode(), "css")
    (tmp_path / "icons.js").write_text(HAND_WRITTEN)
    assert [f.path for f in discover(tmp_path).files] == ["icons.js"]
    _index_json(tmp_path)
    callers = runner.invoke(app, ["callers", "helper3", str(tmp_path)])
    assert callers.exit_code == 0, callers.output


def test_minified_bundles_and_stylesheets_stay_skipped(tmp_path: Path) -> None:
    rules = "".join(f".c{i}{{color:#{i:06x};margin:{i}px}}" for i in range(400))
    for name, text in (("one_line.js", BUNDLE_CODE + "\n"),
                       ("licensed.js", LICENCE + BUNDLE_CODE + "\n//# sourceMappingURL=licensed.js.map\n"),
                       ("wrapped.js", "\n".join(BUNDLE_CODE[i:i + 500] for i in range(0, len(BUNDLE_CODE), 500))),
                       ("partly.js", PARTLY_WRAPPED), ("theme.css", LICENCE + rules + "\n")):
        (tmp_path / name).write_text(text)
        assert is_minified(text.encode(), "css" if name.endswith(".css") else "javascript"), name
    assert {s.reason for s in discover(tmp_path).skipped} == {"minified"}


# -- 5: why a file is read as text ------------------------------------------------------------------------------------


def test_deep_nesting_is_reported_as_nesting_and_minified_code_as_shared_lines() -> None:
    nested = "".join("    " * d + f"def nest{d}():\n" for d in range(500)) + "    " * 500 + "return 1\n"
    parsed = parse_source(nested.encode(), "d.py", "python", "h")
    assert parsed.partial and parsed.error.startswith("definitions nest 500 levels deep")
    rules = "".join(f".c{i}{{color:#{i:06x};margin:{i}px}}" for i in range(20000))
    minified = parse_source(rules.encode(), "t.css", "css", "h")
    assert minified.partial and minified.error.startswith("many definitions share a few long lines")


# -- 6: a function after a syntax error -------------------------------------------------------------------------------


def test_a_js_function_after_a_syntax_error_is_a_function_and_a_method_stays_a_method() -> None:
    broken = b"function okBeforeJs() { return 1; }\nfunction brokenJs( { return ;\nfunction okAfterJs() { return 2; }\n"
    kinds = {e.qualname: (e.kind, e.start_line) for e in parse_source(broken, "b.js", "javascript", "h").entities}
    assert kinds["okAfterJs"] == ("function", 3)
    after_async = b"function f( {\nasync function g() { return 1; }\n"  # `function` read inside the method
    kinds = {e.qualname: (e.kind, e.start_line) for e in parse_source(after_async, "a.js", "javascript", "h").entities}
    assert kinds["g"] == ("function", 2)
    in_class = b"class A {\n  good() { return 1; }\n  broken( { return ;\n  after() { return 2; }\n}\n"
    kinds = {e.qualname: e.kind for e in parse_source(in_class, "c.js", "javascript", "h").entities}
    assert kinds["A.after"] == "method"


# -- wheel 8: one meaning for "embedded" ------------------------------------------------------------------------------


def test_the_dense_note_counts_stored_vectors_in_other_words_than_embedded() -> None:
    """A running index's progress line says "passages N/M embedded" (its own count, ahead of the store); this note
    counts what the store holds, so it must not use that word for a different number."""
    manifest = IndexManifest(workspace="/w", files={"a.py": FileRecord(content_hash="h", size=1, language="python",
                                                                       entity_ids=["a", "b", "c"])},
                             dense_pending=["b", "c"])
    note = dense_note(manifest)
    assert note.startswith("dense index partial: 1 of 3 passages stored as vectors so far")
    assert "embedded" not in note

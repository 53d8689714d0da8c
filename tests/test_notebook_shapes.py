"""Notebooks as Jupyter, VS Code and other kernels write them, and the reports around a data-science repository:
a `source` key inside an output or a cell's metadata is data (the cell's own source is still Python), a notebook
or cell in another language is searchable text (no "syntax errors"), `index --json` names skipped files as the text
report says, and the brief's configuration lists the project's own files before generated run metadata."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.artifacts import Entity, IndexReport, ParsedFile, SkippedFile
from assay.stages.index import incremental, report
from assay.stages.index.incremental import NOT_LISTED, listed_examples
from assay.stages.index.notebook import view_problem
from assay.stages.index.parse import parse_source
from assay.stages.index.report import skipped_line, summary_lines

runner = CliRunner()


def _code(source: list[str], outputs: list | None = None, metadata: dict | None = None) -> dict:
    return {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": metadata or {},
            "outputs": outputs or [], "source": source}


def _notebook(cells: list[dict], metadata: dict | None = None) -> bytes:
    """As nbformat writes it: sorted keys (so `metadata` and `outputs` come before a cell's `source`), indent 1."""
    nb = {"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _entities(data: bytes) -> tuple[dict[str, Entity], ParsedFile]:
    parsed = parse_source(data, "nb.ipynb", "notebook", "h")
    return {e.qualname: e for e in parsed.entities}, parsed


FETCH = ["def fetch_config():\n", "    return {'source': ['api', 'cache']}\n", "fetch_config()"]
JSON_OUTPUT = {"data": {"application/json": {"source": ["api", "cache"]},
                        "text/plain": ["{'source': ['api', 'cache']}"]},
               "execution_count": 1, "metadata": {}, "output_type": "execute_result"}


# -- 3: a `source` key that is not the cell's own ------------------------------------------------------------------


@pytest.mark.parametrize("cell", [
    _code(FETCH, outputs=[JSON_OUTPUT]),  # the sweep's repro: an application/json output holding a `source` list
    _code(FETCH, metadata={"provenance": {"source": ["s3://a.csv", "s3://b.csv"]}}),  # cell metadata
    _code(FETCH, metadata={"source": []}),  # an empty one, at the cell's metadata's top
], ids=["output", "metadata", "empty-metadata-source"])
def test_a_nested_source_key_is_data_and_the_cell_is_still_python(cell: dict) -> None:
    data = _notebook([_code(["import json\n"]), cell], metadata={"source": ["notebook-level"]})
    raw = data.decode().split("\n")
    found, parsed = _entities(data)
    assert view_problem(data) == "" and not parsed.partial, parsed.error
    fetch = found["fetch_config"]
    assert fetch.kind == "function"
    assert raw[fetch.start_line - 1].strip() == '"def fetch_config():\\n",'  # the receipt is the cell's own line


def test_a_notebook_whose_metadata_comes_first_reads_its_cells_only() -> None:
    """Colab writes the notebook's metadata before `cells`, unsorted; a `source` list there is no cell."""
    nb = {"nbformat": 4, "nbformat_minor": 0, "metadata": {"colab": {"source": ["x"]}},
          "cells": [{"source": ["def trained():\n", "    return 1"], "cell_type": "code", "metadata": {"id": "a"},
                     "execution_count": None, "outputs": []}]}
    data = (json.dumps(nb, indent=2) + "\n").encode()
    found, parsed = _entities(data)
    assert not parsed.partial, parsed.error
    assert found["trained"].kind == "function"


def test_a_cell_source_not_one_string_a_line_is_still_named_as_not_laid_out() -> None:
    """The cell's own source on the same line as its strings is no view: said, not read as Python at wrong lines."""
    text = _notebook([_code(["def a():\n", "    return 1"])]).decode()
    one_line = '"source": ["def a():\\n", "    return 1"]'
    text = text.replace('"source": [\n    "def a():\\n",\n    "    return 1"\n   ]', one_line)
    assert '"source": ["def a()' in text
    assert "not laid out as Jupyter writes it" in view_problem(text.encode())


def test_index_reads_the_function_of_a_notebook_with_a_json_output(tmp_path: Path) -> None:
    (tmp_path / "api.ipynb").write_bytes(_notebook([_code(FETCH, outputs=[JSON_OUTPUT])]))
    out = runner.invoke(app, ["index", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "partial:" not in out.output and "function 1" in out.output


# -- 4: notebooks and cells in another language ---------------------------------------------------------------------

R_CELL = ["fit_r_model <- function(df) {\n", "  lm(y ~ x, data=df)\n", "}"]


def test_an_r_kernel_notebook_is_searchable_text_with_no_syntax_errors() -> None:
    data = _notebook([{"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Fit\n", "linear models"]},
                      _code(R_CELL), _code(["summary(fit_r_model(df))"])],
                     metadata={"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}})
    raw = data.decode().split("\n")
    found, parsed = _entities(data)
    assert not parsed.partial, parsed.error
    windows = [e for e in parsed.entities if e.kind == "window"]
    holding = next(e for e in windows if "fit_r_model <- function(df)" in e.body)
    row = next(n for n, line in enumerate(raw, start=1) if line.strip() == '"fit_r_model <- function(df) {\\n",')
    assert holding.start_line <= row <= holding.end_line  # the window's lines are the file's: the code at its own line
    assert "fit_r_model <- function(df)" in holding.body.split("\n")[row - holding.start_line]
    assert any("summary(fit_r_model(df))" in e.body for e in windows)  # the second cell too, not cut into a doc
    assert found["nb.ipynb"].docstring.startswith("A notebook in R")


@pytest.mark.parametrize("metadata", [
    {"kernelspec": {"name": "julia-1.10", "language": "julia"}},
    {"language_info": {"name": "julia"}},  # no kernelspec: language_info names it
])
def test_a_julia_notebook_is_not_parsed_as_python(metadata: dict) -> None:
    data = _notebook([_code(["function fit(x)\n", "    x .+ 1\n", "end"])], metadata=metadata)
    found, parsed = _entities(data)
    assert not parsed.partial, parsed.error
    assert any("function fit(x)" in e.body for e in parsed.entities if e.kind == "window")


def test_a_vscode_sql_cell_is_words_and_the_python_cells_are_parsed() -> None:
    python, sql = ({"vscode": {"languageId": "python"}}, {"vscode": {"languageId": "sql"}})
    data = _notebook([_code(["def evaluate_auc(y, s):\n", "    return 1"], metadata=python),
                      _code(["SELECT * FROM customers\n", "WHERE churned = 1"], metadata=sql)],
                     metadata={"kernelspec": {"name": "python3", "language": "python"}})
    found, parsed = _entities(data)
    assert not parsed.partial, parsed.error
    assert found["evaluate_auc"].kind == "function"
    assert any("SELECT * FROM customers" in e.body for e in parsed.entities if e.kind == "window")
    assert not found["nb.ipynb"].docstring  # a Python notebook gets no "another language" doc


def test_a_python_cell_in_a_polyglot_notebook_is_parsed() -> None:
    data = _notebook([_code(["def helper():\n", "    return 2"], metadata={"vscode": {"languageId": "python"}}),
                      _code(R_CELL)], metadata={"kernelspec": {"name": "ir", "language": "R"}})
    found, parsed = _entities(data)
    assert not parsed.partial, parsed.error
    assert found["helper"].kind == "function"


def test_a_notebook_naming_no_language_is_still_python() -> None:
    data = _notebook([_code(["def plain():\n", "    return 3"])], metadata={"kernelspec": {"name": "python3"}})
    found, parsed = _entities(data)
    assert found["plain"].kind == "function" and not parsed.partial


# -- 5: `index --json` names every skipped file (up to a large cap it states) --------------------------------------


def test_json_names_every_skipped_file_past_a_thousand(tmp_path: Path) -> None:
    for i in range(1100):
        (tmp_path / f"m{i:04d}").write_text("1\n")
    (tmp_path / "zz.pt").write_bytes(b"\x00weights")
    res = runner.invoke(app, ["index", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    named = [s["path"] for s in json.loads(res.stdout)["skipped_examples"]]
    assert "zz.pt" in named and len(named) == 1101 and "" not in named  # no NOT_LISTED entry
    text = runner.invoke(app, ["index", str(tmp_path)]).output
    assert "names them all, in skipped_examples" in text


def test_a_cut_list_is_said_in_json_text_and_status(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(incremental, "EXAMPLES_PER_REASON", 2)
    monkeypatch.setattr(report, "EXAMPLES_PER_REASON", 2)
    skipped = [SkippedFile(path=f"e{i}.pt", reason="unsupported_type") for i in range(5)]
    listed = listed_examples(skipped, [])
    assert listed[-1].reason == NOT_LISTED and "unsupported_type 3" in listed[-1].detail
    r = IndexReport(workspace="/w", files_seen=5, files_parsed=0, files_unchanged=0, files_removed=0, files_partial=0,
                    skipped={"unsupported_type": 5}, kept_unreadable=0, entities_total=0, entities_embedded=0,
                    entities_by_kind={}, entities_by_language={}, embed_truncated=0, timings={}, embedder="e",
                    skipped_examples=listed)
    line = next(x for x in summary_lines(r) if x.startswith("  unsupported_type:"))
    assert "and 3 more" in line and "names the first 2 in skipped_examples (at most 2 a reason)" in line
    assert "names them all" not in line
    status = skipped_line({"skipped": {"unsupported_type": 5}, "skipped_named": {"unsupported_type": ["e0.pt"]}})
    assert "names up to 2 of each reason" in status and "names them all" not in status
    assert "names them all" in skipped_line({"skipped": {"unsupported_type": 2}})


# -- 6: the brief's configuration -------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True)


def test_brief_lists_project_config_before_run_metadata(tmp_path: Path) -> None:
    root = tmp_path / "ml"
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text('def train():\n    """Train the model."""\n    return 1\n')
    (root / "pyproject.toml").write_text('[project]\nname = "ml"\ndescription = "a model"\n')
    (root / "requirements.txt").write_text("torch\n")
    (root / "conf").mkdir()
    (root / "conf" / "config.yaml").write_text("lr: 0.001\n")
    for i in range(15):
        run = root / "mlruns" / "0" / f"run{i:03d}"
        run.mkdir(parents=True)
        (run / "meta.yaml").write_text(f"run_id: run{i:03d}\nstatus: 3\n")
    (root / ".gitignore").write_text(".assay/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "-c", "user.email=dev@example.com", "-c", "user.name=Dev", "commit", "-q", "-m", "init")
    assert runner.invoke(app, ["index", str(root)]).exit_code == 0
    out = runner.invoke(app, ["brief", str(root)])
    assert out.exit_code == 0, out.output
    config = out.output.split("## Configuration", 1)[1].split("\n\n", 1)[0]
    listed = [line[3:-1] for line in config.splitlines() if line.startswith("- `")]
    assert listed[:3] == ["pyproject.toml", "requirements.txt", "conf/config.yaml"]
    assert len(listed) == 12 and all(p.startswith("mlruns/") for p in listed[3:])

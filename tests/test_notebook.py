"""Jupyter notebooks are indexed as Python, each entity at the lines of the `.ipynb` file that hold it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from assay.stages.index.discover import discover
from assay.stages.index.notebook import python_view
from assay.stages.index.parse import parse_source

ASSAY = str(Path(sys.executable).with_name("assay"))


def cell(kind: str, lines: list[str], outputs: list | None = None) -> dict:
    out = {"cell_type": kind, "metadata": {}, "source": lines}
    if kind == "code":
        out.update(execution_count=1, outputs=outputs or [])
    return out


PLOT = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo" * 20000, "text/plain": ["<Figure>"]}}
CELLS = [
    cell("markdown", ["# Churn analysis\n", "\n", "We load the customer table and fit a survival curve.\n"]),
    cell("code", ["%matplotlib inline\n", "import pandas as pd\n", "!pip install lifelines\n", "pd.read_csv?"]),
    cell("code", ["def load_customers(path):\n", '    """Read the customer table and drop test accounts."""\n',
                  "    df = pd.read_csv(path)\n", "    return df[~df.email.str.endswith('@example.com')]"], outputs=[PLOT]),
    cell("code", ["%%bash\n", "ls -la data/\n"]),
    cell("code", []),
    cell("raw", ["not code at all\n"]),
    cell("code", ["class SurvivalModel:\n", "    def fit(self, durations, events):\n",
                  '        """Kaplan-Meier estimate of the survival curve."""\n', "        self.curve = load_customers(durations)\n",
                  "        return self"]),
]


def notebook(cells: list[dict] = CELLS, indent: int | None = 1) -> bytes:
    """As Jupyter and nbformat write it: sorted keys, one space of indent, a final newline."""
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(nb, indent=indent, sort_keys=True, ensure_ascii=False) + "\n").encode()


def test_each_entity_sits_at_the_notebook_lines_that_hold_it() -> None:
    data = notebook()
    raw = data.decode().split("\n")
    parsed = parse_source(data, "churn.ipynb", "notebook", "h")
    assert not parsed.partial, parsed.error  # magics, a %%bash cell and a raw cell are no syntax errors
    found = {e.qualname: e for e in parsed.entities}
    for name, first in (("load_customers", '"def load_customers(path):\\n",'),
                        ("SurvivalModel", '"class SurvivalModel:\\n",'),
                        ("SurvivalModel.fit", '"    def fit(self, durations, events):\\n",')):
        entity = found[name]
        assert entity.language == "python"
        assert raw[entity.start_line - 1].strip() == first
    fit = found["SurvivalModel.fit"]
    assert raw[fit.end_line - 1].strip() == '"        return self"'  # a cell's last line has no newline
    assert fit.docstring == "Kaplan-Meier estimate of the survival curve."
    assert found["load_customers"].body.splitlines()[-1] == "    return df[~df.email.str.endswith('@example.com')]"
    assert any(e.kind == "call" and e.name == "load_customers" and e.source == "SurvivalModel.fit" for e in parsed.edges)
    text = "\n".join(e.body + "\n" + e.docstring for e in parsed.entities)
    assert "survival curve" in text and "iVBORw0KGgo" not in text and "not code at all" not in text
    windows = [e for e in parsed.entities if e.kind == "window"]
    assert all(e.body.splitlines()[0].strip() for e in windows)  # a window starts at text, not blank lines
    bash = next(e for e in windows if "%%bash" in e.body)
    assert raw[bash.start_line - 1].strip() == '"%%bash\\n",' and "# ls -la data/" in bash.body


def test_the_view_keeps_every_line_and_gives_up_where_the_layout_is_not_jupyters() -> None:
    data = notebook()
    view = python_view(data)
    assert view is not None and view.count(b"\n") == data.count(b"\n")
    assert python_view(notebook(indent=None)) is None  # one line of JSON: no line to put the code at
    several = [cell("code", ["x = 1\ny = 2\n"])]  # one string holding two lines: kept as words on its line
    folded = python_view(notebook(several))
    assert folded is not None and folded.count(b"\n") == notebook(several).count(b"\n")
    assert "# x = 1 \u23ce y = 2" in folded.decode()
    assert python_view(b'{"cells": [') is None and python_view(b"\xff\xfe") is None
    for odd in (notebook(indent=None), b'{"cells": ['):  # read as text, never an error
        parsed = parse_source(odd, "odd.ipynb", "notebook", "h")
        assert parsed.entities and all(e.kind == "window" for e in parsed.entities)
    crlf = data.replace(b"\n", b"\r\n")
    assert {e.qualname for e in parse_source(crlf, "w.ipynb", "notebook", "h").entities} >= {"load_customers", "SurvivalModel.fit"}


def test_a_notebook_with_plots_is_indexed_and_answers_with_its_own_lines(tmp_path: Path) -> None:
    """Its outputs (a ~200 KB plot here) do not count against the size limit as a file's code does."""
    workspace = tmp_path / "analysis"
    workspace.mkdir()
    (workspace / "churn.ipynb").write_bytes(notebook())
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct", "ASSAY_EMBEDDER": "static", "ASSAY_MAX_FILE_BYTES": "100000",
           "ASSAY_HOME": str(tmp_path / "home")}
    assert [f.path for f in discover(workspace, max_file_bytes=100_000).files] == ["churn.ipynb"]
    done = subprocess.run([ASSAY, "index", str(workspace)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    line = next(n for n, text in enumerate(notebook().decode().split("\n"), start=1) if "def fit(self" in text)
    hits = json.loads(subprocess.run([ASSAY, "search", "Kaplan-Meier survival curve estimate", str(workspace), "--json"],
                                     capture_output=True, text=True, env=env, timeout=300).stdout)["results"]
    assert (hits[0]["file"], hits[0]["entity"], hits[0]["start_line"]) == ("churn.ipynb", "SurvivalModel.fit", line)
    answer = subprocess.run([ASSAY, "ask", "how is the survival curve estimated?", str(workspace)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert answer.returncode == 0 and f"churn.ipynb:{line}" in answer.stdout

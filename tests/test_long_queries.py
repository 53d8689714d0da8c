"""A pasted blob or log is answered at once or refused in one line; it never holds up the doors."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.query.identifiers import question_identifiers
from assay.stages.query.locate import locations
from assay.stages.query.retrieve import MAX_QUERY_CHARS, check_query_text

BLOB = base64.b64encode(random.Random(7).randbytes(MAX_QUERY_CHARS)).decode()[: MAX_QUERY_CHARS - 100]


def test_a_blob_beside_a_traceback_still_yields_its_places_and_names() -> None:
    query = f'error: payload {BLOB}\n  File "src/app/views.py", line 42, in render_page\nsrc/lib.rs:12:5 snake_case_name'
    assert locations(query)[:2] == [("src/app/views.py", 42, "render_page"), ("src/lib.rs", 12, "")]
    assert "snake_case_name" in question_identifiers(query)
    assert question_identifiers("x" * MAX_QUERY_CHARS) == []


def test_too_long_or_empty_queries_are_one_line_errors(indexed_project: Path) -> None:
    with pytest.raises(ValueError, match=r"the query is 20,001 characters; the limit is 20,000"):
        check_query_text("a" * (MAX_QUERY_CHARS + 1))
    runner = CliRunner()
    for args in (["search", "x" * (MAX_QUERY_CHARS + 1), str(indexed_project)],
                 ["ask", "x" * (MAX_QUERY_CHARS + 1), str(indexed_project)],
                 ["search", "   ", str(indexed_project)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
        assert "limit is 20,000" in res.output or "is empty" in res.output

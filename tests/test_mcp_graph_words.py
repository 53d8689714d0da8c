"""MCP callers/references/impact put Assay's own lines in MCP terms and leave rows verbatim: the whole text was
reworded, so a row's path or name holding `assay index` would have been changed."""

from __future__ import annotations

from assay.flows.mcp_server import mcp_words
from assay.stages.query.graph import GraphResult, GraphRow, render


def test_rows_stay_verbatim_while_the_count_line_and_note_are_reworded() -> None:
    row = GraphRow(entity="run_assay_index", file="docs/run `assay index`.py", line=3, relation="call",
                   site_file="docs/run `assay index`.py", site_line=4, resolved=True)
    res = GraphResult(command="callers", query="f", targets=["f (a.py:1)"], rows=[row], total=60, truncated=59,
                      note="the graph is from parser 2: run `assay index`")
    text = render(res, lambda t: mcp_words(t, flags=True))
    assert "docs/run `assay index`.py:3" in text  # the row, as the index holds it
    assert "(raise limit)" in text and "call index_workspace" in text and "--limit" not in text
    assert render(res).count("run `assay index`") == 3  # the CLI door: nothing reworded

"""A long entity is stored in parts; the search doors show it as one row whose text is what its span holds."""

from __future__ import annotations

from pathlib import Path

from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.query.budget import search_text
from assay.stages.query.retrieve import search


def _long_function(path: Path, steps: int = 120) -> list[str]:
    lines = ["def long_worker(x):", '    """Process the gizmo queue."""',
             *(f"    x = x + {i}  # gizmo step {i}" for i in range(steps)), "    return x"]
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_a_budgeted_search_prints_the_whole_entity_under_its_span(tmp_path: Path) -> None:
    lines = _long_function(tmp_path / "work.py")
    run_index(str(tmp_path), Settings())
    hits = search(tmp_path, "gizmo step 100", Settings(), k=3).candidates
    top = hits[0]
    assert top.entity == "long_worker" and (top.start_line, top.end_line) == (1, len(lines))
    assert top.body.splitlines() == lines  # every part, in order (was the best part alone under lines 1-123)
    text = search_text(hits, 4000)
    assert text.splitlines()[1 : 1 + len(lines)] == lines


def test_a_minified_line_split_across_parts_is_joined_back_without_a_break(tmp_path: Path) -> None:
    long_line = "const table = [" + ", ".join(f'"gizmo{i}"' for i in range(400)) + "];"
    (tmp_path / "table.js").write_text("function build() {\n  " + long_line + "\n  return table;\n}\n")
    run_index(str(tmp_path), Settings(index_generated=True))
    hits = search(tmp_path, "gizmo250 table", Settings(), k=5).candidates
    build = next(c for c in hits if c.entity == "build")
    assert build.body.splitlines() == ["function build() {", "  " + long_line, "  return table;", "}"]

"""`changed` on a file edited since indexing maps the diff's lines (today's) onto the file as it is now: with the
index's spans, an edit below a few added lines was put in the wrong definition or listed outside any."""

from __future__ import annotations

from pathlib import Path

from tests.test_git_changes import CORE, SETTINGS, changed, commit_all, init_repo

from assay.flows.index import run_index
from assay.stages.query.git_questions import workspace_changed


def test_an_edit_below_added_lines_is_credited_to_its_definition_at_today_s_lines(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "ws")
    (root / ".gitignore").write_text(".assay/\n")
    (root / "core.py").write_text(CORE)
    commit_all(root, "first")
    run_index(str(root), SETTINGS)
    # five lines above everything, then Engine.step's body changes: step sat at 13-14 when indexed, 18-19 now (Other.run's lines then)
    (root / "core.py").write_text(CORE.replace('"""Core engine."""\n', '"""Core engine."""\n\nA = 1\nB = 2\nC = 3\n\n', 1)
                                  .replace("return x + 1", "return x + 10"))
    res = workspace_changed(root, "HEAD")
    touched = {t.entity: (t.start_line, t.end_line, t.stale) for t in res.entities}
    assert touched.get("Engine.step") == (18, 19, True), touched
    assert "Other.run" not in touched and "core.py:18" not in res.outside  # blank lines added above are outside
    text = changed(root).output
    assert "Engine.step" in text and "read from the files as they are now" in text

"""The graph commands' doors (callers, callees, references, impact): a missing or empty name is an error, out-of-range
--limit/--depth are refused, impact says when its walk stopped at --depth, caps its tests list, and rows from files
changed since indexing are marked STALE."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import mcp_server
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.query.graph import query_workspace, render

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "def helper(x):\n    return x * 2\n\n\nclass Engine:\n    def run(self, x):\n        return helper(x) + self.step(x)\n\n"
        "    def step(self, x):\n        return x + 1\n\n\ndef drive():\n    e = Engine()\n    return e.run(3)\n\n\ndef lonely():\n    return 0\n"
    ),
    "pkg/util.py": "from pkg.core import drive, helper\n\n\ndef wrapper():\n    return drive() + helper(1)\n",
    "tests/test_core.py": (
        "from pkg.core import helper\nfrom pkg.util import wrapper\n\n\ndef test_wrapper():\n    assert wrapper() > 0\n\n\n"
        "def test_one():\n    assert helper(1) == 2\n\n\ndef test_two():\n    assert helper(2) == 4\n"
    ),
}


def _make(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=T", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=T", "commit", "-qm", "first"], cwd=root, check=True)
    run_index(str(root))
    return root


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Indexed once for the read-only tests."""
    return _make(tmp_path_factory.mktemp("graph_doors") / "ws")


@pytest.fixture()
def fresh(indexed: Path, tmp_path: Path) -> Path:
    """A copy of the indexed workspace, for tests that change files after indexing."""
    return Path(shutil.copytree(indexed, tmp_path / "ws"))


@pytest.mark.parametrize("command", ["callers", "callees", "references", "impact"])
def test_a_missing_name_is_an_error_with_a_hint(indexed: Path, command: str) -> None:
    res = CliRunner().invoke(app, [command, "nosuch", str(indexed), "--json"])
    assert res.exit_code == 2
    assert res.stdout == ""
    assert res.stderr.strip() == "error: no definition named 'nosuch' in the index; try `assay search nosuch` for similar names"


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_name_is_refused(indexed: Path, name: str) -> None:
    res = CliRunner().invoke(app, ["impact", name, str(indexed)])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("error: NAME is empty")


@pytest.mark.parametrize("args", [["callers", "helper", "--limit", "0"], ["references", "helper", "--limit", "-1"],
                                  ["impact", "helper", "--limit", "-1"], ["impact", "step", "--depth", "0"],
                                  ["impact", "step", "--depth", "7"], ["history", "helper", "--limit", "-1"]])
def test_out_of_range_numbers_are_usage_errors(indexed: Path, args: list[str]) -> None:
    res = CliRunner().invoke(app, [*args[:2], str(indexed), *args[2:]])
    assert res.exit_code == 2 and res.stdout == ""
    assert f"Invalid value for '{args[2]}'" in res.stderr


@pytest.mark.parametrize(("command", "depth", "limit", "message"), [
    ("callers", 1, 0, "--limit must be 1 or more (got 0)"),
    ("impact", 0, 10, "--depth must be between 1 and 6 (got 0)"),
    ("impact", 100, 10, "--depth must be between 1 and 6 (got 100)"),
])
def test_the_stage_refuses_out_of_range_numbers(indexed: Path, command: str, depth: int, limit: int, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        query_workspace(indexed, command, "helper", depth=depth, limit=limit)
    assert str(caught.value) == message


def test_mcp_tools_return_the_same_errors(indexed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(indexed))
    missing = mcp_server.callers(str(indexed), "nosuch")
    assert missing.is_error and missing.content[0].text == (  # in the MCP client's words: a tool, not a command
        "error: no definition named 'nosuch' in the index; try the search tool for similar names")
    assert mcp_server.impact(str(indexed), "step", depth=9).is_error
    negative = mcp_server.references(str(indexed), "helper", limit=-1)
    assert negative.is_error and "limit must be 1 or more" in negative.content[0].text and "--" not in negative.content[0].text
    assert not mcp_server.callees(str(indexed), "drive").is_error


def test_impact_says_when_the_walk_stopped_at_depth(indexed: Path) -> None:
    shallow = query_workspace(indexed, "impact", "step", depth=2)
    assert not shallow.tests and shallow.note == "no test reaches it within depth 2 (raise --depth)"
    deep = query_workspace(indexed, "impact", "step", depth=4)
    assert [t.entity for t in deep.tests] == ["test_wrapper"]
    untested = query_workspace(indexed, "impact", "lonely", depth=1)
    assert untested.note == "no test reaches it through resolved calls"


def test_impact_caps_its_tests_list_with_the_limit(indexed: Path) -> None:
    res = query_workspace(indexed, "impact", "helper", depth=3, limit=1)
    assert len(res.rows) == 1 and len(res.tests) == 1 and res.tests_total == 3
    assert render(res).splitlines()[-2].endswith(" ... and 2 more (raise --limit)")
    whole = query_workspace(indexed, "impact", "helper", depth=3, limit=100)
    assert len(whole.tests) == whole.tests_total == 3 and "more (raise --limit)" not in render(whole)


def test_rows_from_files_changed_since_indexing_are_stale(fresh: Path) -> None:
    before = query_workspace(fresh, "callers", "helper")
    assert before.stale_files == [] and not any(r.stale for r in before.rows)
    (fresh / "pkg/util.py").unlink()
    (fresh / "tests/test_core.py").write_text(FILES["tests/test_core.py"] + "\n# edited\n")
    res = CliRunner().invoke(app, ["callers", "helper", str(fresh)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    # the notice is on stderr, as search's: stdout holds the rows
    assert res.stderr.strip() == ("STALE: 2 file(s) here changed or were deleted since indexing (pkg/util.py, "
                                  "tests/test_core.py); run `assay index`")
    stale = {line.split()[0] for line in lines if line.endswith("  STALE")}
    assert stale == {"wrapper", "test_one", "test_two"}
    assert any(line.startswith("  Engine.run ") and "STALE" not in line for line in lines)
    impact = query_workspace(fresh, "impact", "helper")
    assert impact.tests and all(t.stale for t in impact.tests)

"""The layers only import downward: stages <- tasks <- flows (a stage never knows Prefect's graph or the doors)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RANK = {"stages": 0, "tasks": 1, "flows": 2}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):  # function-local imports count too
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & set(RANK)


def test_no_module_imports_from_a_higher_layer() -> None:
    upward = []
    for layer, rank in RANK.items():
        for path in sorted((REPO / layer).rglob("*.py")):
            for target in imported_packages(path):
                if RANK[target] > rank:
                    upward.append(f"{path.relative_to(REPO)} imports {target}")
    assert upward == []


def test_the_walker_sees_function_local_imports(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("def f():\n    from flows.query import run_query\n    import tasks.index\n")
    assert imported_packages(sample) == {"flows", "tasks"}

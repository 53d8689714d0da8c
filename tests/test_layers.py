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
            found.update(_layer(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(_layer(node.module))
    return found & set(RANK)


def _layer(module: str) -> str:
    """`assay.stages.core.config` -> `stages`: the repository's folders install under the `assay` namespace."""
    parts = module.split(".")
    return parts[1] if parts[0] == "assay" and len(parts) > 1 else parts[0]


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
    sample.write_text("def f():\n    from assay.flows.query import run_query\n    import assay.tasks.index\n")
    assert imported_packages(sample) == {"flows", "tasks"}


def test_every_package_folder_is_installed_under_the_assay_namespace() -> None:
    """A sub-package missing from pyproject's list would import from the checkout and fail from a wheel."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {f"assay.{init.parent.relative_to(REPO).as_posix().replace('/', '.')}"
               for top in ("flows", "tasks", "stages", "data") for init in (REPO / top).rglob("__init__.py")}
    assert folders == set(config["packages"])
    assert config["package-dir"] == {f"assay.{top}": top for top in ("flows", "tasks", "stages", "data")}


def test_no_import_circle_among_the_stages() -> None:
    """Function-local imports count: a circle (the scan importing the judge that imports retrieval that imports the
    scan) makes the import order matter and the layers meaningless."""
    modules: dict[str, Path] = {}
    for path in (REPO / "stages").rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        modules["assay." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            graph[name].update(t for t in targets if t in modules and t != name)
    circles = []
    for start in graph:  # a path from a module's imports back to itself
        seen, todo = set(), list(graph[start])
        while todo:
            current = todo.pop()
            if current == start:
                circles.append(start)
                break
            if current not in seen:
                seen.add(current)
                todo.extend(graph[current])
    assert circles == []

"""Imports through setuptools' `package-dir`: `acme.core.util` lives in `core/util.py`, which no suffix of the import
path names (Assay's own layout: `assay.flows` in `flows/`)."""

from __future__ import annotations

from pathlib import Path

from assay.flows.index import run_index
from assay.stages.index.store import Catalog
from assay.stages.query.graph import callers, package_dirs

PYPROJECT = """[project]
name = "acme"
[tool.setuptools]
package-dir = { "acme.core" = "core", "acme" = "lib/acme", "" = "src" }
"""


def _project(root: Path, pyproject: str = PYPROJECT) -> Path:
    (root / "core").mkdir(parents=True)
    (root / "app").mkdir()
    (root / "pyproject.toml").write_text(pyproject)
    (root / "core" / "util.py").write_text("def helper(x):\n    return x + 1\n")
    (root / "app" / "main.py").write_text("from acme.core.util import helper\n\n\ndef run():\n    return helper(2)\n")
    return root


def test_package_dir_prefixes_are_read_longest_first(tmp_path: Path) -> None:
    _project(tmp_path)
    assert package_dirs(tmp_path) == [("acme.core", "core"), ("acme", "lib/acme")]
    (tmp_path / "pyproject.toml").write_text("[tool.setuptools\nbroken")
    assert package_dirs(tmp_path) == [] and package_dirs(None) == []


def test_a_call_through_a_package_dir_import_resolves(tmp_path: Path) -> None:
    root = _project(tmp_path / "ws")
    run_index(str(root))
    catalog = Catalog(root)
    try:
        result = callers(catalog, "helper")
    finally:
        catalog.close()
    assert [(r.entity, r.resolved) for r in result.rows] == [("run", True)]


def test_without_the_mapping_the_call_stays_unresolved(tmp_path: Path) -> None:
    root = _project(tmp_path / "ws", pyproject='[project]\nname = "acme"\n')
    run_index(str(root))
    catalog = Catalog(root)
    try:
        rows = callers(catalog, "helper").rows
    finally:
        catalog.close()
    assert all(not r.resolved for r in rows)  # the import names no file: never guessed into a resolved row

"""A built wheel works as well as the checkout: built from the repository, installed with its pinned dependencies
into a fresh virtual environment, it indexes and answers on a real sdist from a folder outside the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from assay.stages.evaluate.sdists import fetch_sdist

REPO = Path(__file__).resolve().parents[1]
SDIST = "six==1.17.0"  # a small real package: one module, its tests and docs


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args[:3])}... failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the wheel (and what it pins) installed; returns its bin folder."""
    base = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(REPO)], base, env)
    wheel = next((base / "dist").glob("assay-*.whl"))
    _run([sys.executable, "-m", "venv", str(base / "venv")], base, env)
    bin_dir = base / "venv" / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], base, env)
    return bin_dir


def test_the_wheel_installs_one_namespace_with_its_data(installed: Path, tmp_path: Path) -> None:
    probe = ("import importlib.util as u, assay.stages.core.config as c, assay.data; "
             "print(c.DATA_DIR); print([m for m in ('flows', 'tasks', 'stages', 'data') if u.find_spec(m)])")
    out = _run([str(installed / "python"), "-c", probe], tmp_path, {"PATH": os.environ["PATH"]}).stdout.splitlines()
    assert "site-packages" in out[0] and (Path(out[0]) / "thresholds.json").is_file(), out
    shipped = {f.name for f in (REPO / "data").iterdir() if f.is_file() and f.suffix != ".py"}
    assert shipped - {f.name for f in Path(out[0]).iterdir()} == set()  # every model and word list, whatever its type
    assert out[1] == "[]", f"top-level packages that could collide: {out[1]}"


def test_the_wheel_indexes_and_answers_on_a_real_sdist_from_any_folder(installed: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update({"ASSAY_HOME": str(tmp_path / "home"), "ASSAY_WATCH": "false"})
    downloads = tmp_path / "downloads"
    with tarfile.open(fetch_sdist(SDIST, downloads)) as tar:
        tar.extractall(tmp_path / "src", filter="data")
    workspace = next((tmp_path / "src").iterdir())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assay = str(installed / "assay")
    indexed = _run([assay, "index", str(workspace)], elsewhere, env)
    assert "entities" in indexed.stdout
    status = _run([assay, "status", str(workspace), "--json"], elsewhere, env)
    assert '"entities"' in status.stdout
    answer = _run([assay, "ask", "How does a class get a metaclass in a way that works on Python 2 and 3?", str(workspace)],
                  elsewhere, env).stdout
    assert "six.py:" in answer.splitlines()[0], answer[:500]  # the answer opens the report, citing the module
    assert "Assessment:" in answer and answer.rstrip().splitlines()[-1].startswith("Sources list")  # legend last

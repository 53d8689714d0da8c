"""Helpers shared by the benchmark scripts (they print figures; they are not tests)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CACHE = Path(os.environ.get("ASSAY_BENCH_DIR", Path.home() / ".assay" / "bench"))


def sdist(requirement: str) -> Path:
    """Download (once) and unpack a PyPI sdist; returns a fresh copy's folder each call."""
    from assay.stages.evaluate.sdists import fetch_sdist

    name, version = requirement.split("==")
    archive = fetch_sdist(requirement, CACHE / "downloads")
    work = CACHE / "work"
    target = work / f"{name}-{version}"
    if target.exists():
        subprocess.run(["rm", "-rf", str(target)], check=True)
    work.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    return target


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


@contextmanager
def worktree(rev: str, folder: Path) -> Iterator[Path]:
    """A checkout of commit `rev` in `folder` (a git worktree of this repository), removed afterwards: the code an
    `--against REV` benchmark runs beside this checkout's."""
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(["git", "worktree", "add", "--detach", str(folder), rev], cwd=repo, check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=repo, capture_output=True)


def tree_command(tree: Path, scratch: Path) -> tuple[list[str], dict[str, str]]:
    """The command (and environment additions) that runs the `assay` CLI of another checkout `tree`, such as a
    `git worktree` of an older commit. Before the `assay.*` namespace the folders were imported from the tree's
    root; since, a scratch folder holding `assay/` with links to the tree's folders goes first on PYTHONPATH
    (this checkout's editable install would otherwise answer for `assay`)."""
    if "from assay." not in (tree / "flows" / "cli.py").read_text():
        return [sys.executable, "-c", "import sys; sys.path.insert(0, '.'); from flows.cli import main; main()"], {}
    shim = scratch / "assay"
    shim.mkdir(parents=True, exist_ok=True)
    for name in ("flows", "stages", "tasks", "data"):
        link = shim / name
        if not link.exists():
            link.symlink_to(tree / name, target_is_directory=True)
    return [sys.executable, "-c", "from assay.flows.cli import main; main()"], {"PYTHONPATH": str(scratch)}

"""PyPI sdists for the evaluations and the training scripts: fetched once with pip, read offline after that."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path


def archive_names(name: str, version: str) -> list[str]:
    """The file names pip may save an sdist under: the project's spelling, and the normalised name newer sdists
    carry (PEP 625: `JPype1` 1.7.1 is `jpype1-1.7.1.tar.gz`)."""
    return list(dict.fromkeys([f"{name}-{version}.tar.gz", f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}.tar.gz"]))


def fetch_sdist(requirement: str, downloads: Path) -> Path:
    """The `name==version` sdist in `downloads`, fetched with pip the first time. Only the package itself comes as
    source: `--no-binary :all:` would also build its build dependencies from source (peewee's Cython: over two
    minutes, against 15 s)."""
    name, version = requirement.split("==")
    downloads.mkdir(parents=True, exist_ok=True)

    def cached() -> Path | None:
        return next((downloads / n for n in archive_names(name, version) if (downloads / n).exists()), None)

    archive = cached()
    if archive is None:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name, requirement, "-d", str(downloads), "-q"]
        done = subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace")  # pip's messages only
        archive = cached()
        if done.returncode != 0 or archive is None:
            why = ((done.stderr or done.stdout).strip().splitlines() or ["no archive written"])[-1]
            raise RuntimeError(f"could not download {name} {version} from PyPI: {why}")
    return archive


def prepare_corpus(requirement: str, home: Path) -> Path:
    """Download the sdist once with pip, then unpack it as `home/corpora/<name>-<version>`; later runs are offline."""
    name, version = requirement.split("==")
    root = home / "corpora" / f"{name}-{version}"
    if (root / ".unpacked").exists():
        return root
    archive = fetch_sdist(requirement, home / "downloads")
    root.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tops = {Path(m.name).parts[0] for m in tar.getmembers() if Path(m.name).parts}
        tar.extractall(root.parent, filter="data")
    if not root.exists() and len(tops) == 1:  # a normalised name inside the archive too
        (root.parent / tops.pop()).rename(root)
    (root / ".unpacked").write_text(requirement, encoding="utf-8")
    return root

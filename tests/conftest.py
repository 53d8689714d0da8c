"""Shared fixtures. Tests run offline; stage tests need neither Prefect nor a network."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

_PREFECT_HOME = tempfile.mkdtemp(prefix="assay-prefect-")
os.environ.setdefault("PREFECT_HOME", _PREFECT_HOME)
os.environ["ASSAY_HOME"] = tempfile.mkdtemp(prefix="assay-home-")  # never the developer's own ~/.assay
for _made in (_PREFECT_HOME, os.environ["ASSAY_HOME"]):  # a test run leaves no folders behind in /tmp
    atexit.register(shutil.rmtree, _made, ignore_errors=True)
os.environ["ASSAY_ORCHESTRATION"] = "direct"  # flow tests switch to Prefect explicitly
os.environ.pop("ASSAY_CHROMA_URL", None)
os.environ.pop("ASSAY_CLOUD_API_KEY", None)
os.environ["ASSAY_MODE"] = "local"

from assay.flows import runtime  # noqa: E402,F401  (Prefect defaults before Prefect loads)

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(autouse=True)
def _many_queries_per_process():
    """The test process is long-lived: a CLI command run in it (CliRunner) marks the process one-shot, which
    must not carry over to the next test."""
    from assay.stages.core import one_shot

    yield
    one_shot._ONE_SHOT.clear()


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A fresh copy of the small Python project fixture."""
    dest = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", dest)
    return dest


@pytest.fixture()
def langs(tmp_path: Path) -> Path:
    dest = tmp_path / "langs"
    shutil.copytree(FIXTURES / "langs", dest)
    return dest


@pytest.fixture(scope="session")
def indexed_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project fixture, indexed once per session (read-only for the tests that use it)."""
    from assay.flows.index import run_index

    dest = tmp_path_factory.mktemp("indexed") / "project"
    shutil.copytree(FIXTURES / "project", dest)
    run_index(str(dest))
    return dest


def judged_project(tmp_path_factory: pytest.TempPathFactory, name: str, questions: tuple[str, ...]) -> Path:
    """The project fixture indexed, with one answer per question judged by `none` (what audit tests re-judge)."""
    from assay.flows.index import run_index
    from assay.flows.query import run_query
    from assay.stages.core.config import Settings

    root = tmp_path_factory.mktemp(name) / "project"
    shutil.copytree(FIXTURES / "project", root)
    run_index(str(root))
    for q in questions:
        run_query(str(root), q, Settings(judge="none"))
    return root


@pytest.fixture(scope="session")
def prefect_server():
    """A real Prefect API server on loopback for the flow-level tests (~20 s once per session)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


def make_unreadable(monkeypatch: pytest.MonkeyPatch, locked: Path) -> None:
    """Make one file raise PermissionError on read (tests run as root, where chmod 000 does not stop reads)."""
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == locked:
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available here")
    return path

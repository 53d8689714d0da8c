"""A run that dies while embedding loses at most the model batch it was in: the next run embeds only the rest.

In-process and with a stand-in embedder (hashed vectors), so the point of death is exact; the reliability suite
kills a real `assay index` with SIGKILL and counts the same way.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

import assay.flows.index as index_flow
import assay.tasks.index as index_tasks
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.core.progress import read_status
from assay.stages.index.store import Catalog, VectorStore, load_manifest
from tests.conftest import FIXTURES

SLICE = 40  # passages stored (and crossed off the manifest) together
BATCH = 4  # passages per model call


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (not even a retry)."""


class StandInEmbedder:
    """Deterministic unit vectors from each text's hash; dies after `calls_left` model batches."""

    name = "stand-in-embedder"
    dimension = 8

    def __init__(self, calls_left: int | None = None) -> None:
        self.calls_left = calls_left
        self.embedded = 0

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        if self.calls_left is not None:
            if self.calls_left == 0:
                raise Killed()
            self.calls_left -= 1
        self.embedded += len(texts)
        raw = np.array([np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) for t in texts],
                       dtype=np.float32) + 1.0
        return raw / np.linalg.norm(raw, axis=1, keepdims=True), 0


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", dest)
    for i in range(12):
        (dest / "pkg" / f"gen_{i}.py").write_text(
            "\n".join(f"def generated_{i}_{j}(x):\n    '''Generated helper {j}.'''\n    return x * {j}\n" for j in range(8)))
    return dest


def use(monkeypatch: pytest.MonkeyPatch, embedder: StandInEmbedder) -> None:
    monkeypatch.setattr(index_tasks, "embedder_for", lambda settings: embedder)
    monkeypatch.setattr(index_flow, "embedder_for", lambda settings: embedder)


@pytest.mark.parametrize("batches_before_death", [5, 15], ids=["in-the-first-slice", "in-the-second-slice"])
def test_a_run_killed_while_embedding_is_resumed_not_started_over(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, batches_before_death: int
) -> None:
    monkeypatch.setattr(index_flow, "EMBED_STORE_BATCH", SLICE)
    settings = Settings(embed_batch=BATCH)
    dying = StandInEmbedder(calls_left=batches_before_death)
    use(monkeypatch, dying)
    with pytest.raises(Killed):
        run_index(str(workspace), settings)
    done = batches_before_death * BATCH
    assert dying.embedded == done
    total = load_manifest(workspace).entity_count
    assert total > 2 * SLICE
    assert len(load_manifest(workspace).dense_pending) == total - done // SLICE * SLICE  # whole slices crossed off
    assert read_status(workspace)["state"] == "interrupted"

    resumed = StandInEmbedder()
    use(monkeypatch, resumed)
    report = run_index(str(workspace), settings)
    assert resumed.embedded == total - done  # only what the dead run had not embedded
    assert report.entities_embedded - report.embed_cached == total - done
    assert report.dense_pending == 0 and read_status(workspace)["state"] == "done"
    manifest = load_manifest(workspace)
    assert VectorStore(workspace, None, manifest.collection).count() == Catalog(workspace).count() == total

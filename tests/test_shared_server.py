"""One Chroma server shared by a team: workspaces at the same path on two machines (`/app`, `/workspace`) each own
their collections (a random token in `.assay/` joins the path in the name), a rebuild drops only its own, an index named
by the path alone (before tokens) moves to its own name and leaves the old one, and a dense search whose nearest
passages are all another index's says so. The embedded store keeps its path-only names."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.core.workspace import COLLECTION_TOKEN, collection_name, path_collection_name
from assay.stages.index.store import VectorStore, load_manifest, write_manifest
from assay.stages.query.retrieve import search
from tests.conftest import FIXTURES
from tests.processes import ChromaServer


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path_factory.mktemp("chroma-shared")).start()
    yield server
    server.stop()


def _alice(path: Path) -> Path:
    shutil.copytree(FIXTURES / "project", path)
    return path


def _bob(path: Path) -> Path:
    """Another project altogether, with nothing about retries or sessions."""
    path.mkdir()
    (path / "geometry.py").write_text(
        'def polygon_area(points):\n    """Area of a polygon by the shoelace formula."""\n'
        "    pairs = zip(points, points[1:] + points[:1])\n"
        "    return abs(sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in pairs)) / 2\n\n\n"
        'def circle_perimeter(radius):\n    """Perimeter of a circle."""\n    return 2 * 3.14159 * radius\n')
    return path


def _dense(root: Path, query: str, settings: Settings):
    return search(root, query, settings, k=5, mode="dense")


def _same_path_twice(tmp_path: Path, settings: Settings) -> tuple[Path, Path]:
    """Alice's and Bob's projects indexed one after the other at the one path `proj` (two machines, one server).
    Returns (the path, where Bob's folder waits); Alice's is at the path."""
    proj = tmp_path / "proj"
    run_index(str(_alice(proj)), settings)
    proj.rename(tmp_path / "proj.alice")
    run_index(str(_bob(proj)), settings)
    proj.rename(tmp_path / "proj.bob")
    (tmp_path / "proj.alice").rename(proj)
    return proj, tmp_path / "proj.bob"


def test_two_workspaces_at_one_path_get_their_own_collections(chroma: ChromaServer, tmp_path: Path) -> None:
    settings = Settings(chroma_url=chroma.url)
    proj, bob = _same_path_twice(tmp_path, settings)
    mine, theirs = load_manifest(proj).collection, load_manifest(bob).collection
    assert mine != theirs and {mine, theirs} <= set(chroma.collections())
    assert VectorStore(proj, chroma.url, mine).count() == load_manifest(proj).entity_count  # none of Bob's in it
    found = _dense(proj, "polygon area shoelace formula", settings)  # Bob's kind of question, in Alice's workspace
    assert found.candidates and {c.file for c in found.candidates} <= set(load_manifest(proj).files), found
    assert "none of this index's" not in found.note


def test_a_rebuild_on_a_shared_server_drops_only_its_own_collections(chroma: ChromaServer, tmp_path: Path) -> None:
    settings = Settings(chroma_url=chroma.url)
    proj, bob = _same_path_twice(tmp_path, settings)
    theirs = load_manifest(bob).collection
    kept = VectorStore(bob, chroma.url, theirs).count()
    old = load_manifest(proj).collection
    run_index(str(proj), settings, rebuild=True)
    new = load_manifest(proj).collection
    assert new != old and old not in chroma.collections() and new in chroma.collections()  # its own old one went
    assert VectorStore(bob, chroma.url, theirs).count() == kept  # Bob's is whole
    proj.rename(tmp_path / "proj.alice")
    bob.rename(proj)
    found = _dense(proj, "polygon area shoelace formula", settings)
    assert [c.entity for c in found.candidates][:1] == ["polygon_area"] and not found.note, found


def test_drop_others_deletes_exactly_this_base_and_its_generations(chroma: ChromaServer, tmp_path: Path) -> None:
    root = _bob(tmp_path / "ws")
    base = "assay_0123456789abcdef_fedcba9876543210"
    names = [base, f"{base}_g1", f"{base}_g2", f"{base}_g3", f"{base}_gx", f"{base}_g2_copy", f"{base}0_g1",
             "assay_0123456789abcdef_g1", "assay_0123456789abcdef_0000000000000000_g1"]
    store = VectorStore(root, chroma.url)
    client = store._client
    for name in names:
        client.get_or_create_collection(name, embedding_function=None)
    dropped = store.drop_others(f"{base}_g3", base)
    assert sorted(dropped) == sorted([base, f"{base}_g1", f"{base}_g2"])
    left = set(chroma.collections())
    assert set(names) - set(dropped) <= left and not set(dropped) & left
    for name in set(names) - set(dropped):
        client.delete_collection(name)


def _as_before_tokens(root: Path, url: str, foreign: int = 3) -> str:
    """The workspace's server index as an Assay without tokens left it: its vectors in the path-named collection
    (shared with whoever else indexed at this path: `foreign` vectors of theirs), no token. Returns that name."""
    manifest = load_manifest(root)
    legacy = f"{path_collection_name(root)}_g1"
    current = VectorStore(root, url, manifest.collection).collection.get(include=["embeddings"])
    old = VectorStore(root, url, legacy)
    old.collection.upsert(ids=current["ids"], embeddings=current["embeddings"])
    old.collection.upsert(ids=[f"someone-else-{i}" for i in range(foreign)], embeddings=current["embeddings"][:foreign])
    VectorStore(root, url).drop(manifest.collection)
    write_manifest(root, manifest.model_copy(update={"collection": legacy}))
    (root / ".assay" / COLLECTION_TOKEN).unlink()
    return legacy


def test_an_index_named_by_its_path_moves_to_its_own_name_and_leaves_the_old_one(chroma: ChromaServer,
                                                                                 tmp_path: Path) -> None:
    settings = Settings(chroma_url=chroma.url)
    root = _alice(tmp_path / "app")
    run_index(str(root), settings)
    legacy = _as_before_tokens(root, chroma.url)
    held = VectorStore(root, chroma.url, legacy).count()

    report = run_index(str(root), settings)

    moved = load_manifest(root).collection
    assert moved == f"{collection_name(root)}_g1" and moved != legacy
    assert (root / ".assay" / COLLECTION_TOKEN).is_file()
    assert report.dense_pending == 0 and report.entities_embedded == report.entities_total
    assert report.embed_cached == report.entities_total  # stored again from the cache, not embedded again
    assert f"own collection {moved}" in report.rebuild_reason
    assert VectorStore(root, chroma.url, legacy).count() == held  # it may be another user's: left whole
    assert VectorStore(root, chroma.url, moved).count() == report.entities_total
    again = run_index(str(root), settings)  # from now on an ordinary incremental run
    assert again.entities_embedded == 0 and load_manifest(root).collection == moved


def test_a_dense_search_whose_neighbours_are_all_unknown_says_so(chroma: ChromaServer, tmp_path: Path) -> None:
    settings = Settings(chroma_url=chroma.url)
    root = _alice(tmp_path / "app")
    run_index(str(root), settings)
    manifest = load_manifest(root)
    store = VectorStore(root, chroma.url, manifest.collection)
    held = store.collection.get(include=["embeddings"])
    store.delete(held["ids"])
    store.collection.upsert(ids=[f"bob-{i}" for i in range(len(held["ids"]))], embeddings=held["embeddings"])

    found = _dense(root, "retry with exponential backoff", settings)

    assert not found.candidates and not found.dense_available
    assert "none of this index's" in found.note and manifest.collection in found.note, found.note
    assert "assay index --rebuild" in found.note
    hybrid = search(root, "retry with exponential backoff", settings, k=5)
    assert hybrid.candidates and "none of this index's" in hybrid.note  # BM25 still answers


def test_the_token_moves_with_the_workspace(chroma: ChromaServer, tmp_path: Path) -> None:
    settings = Settings(chroma_url=chroma.url)
    root = _alice(tmp_path / "here")
    run_index(str(root), settings)
    token = (root / ".assay" / COLLECTION_TOKEN).read_text()
    moved = root.rename(tmp_path / "there")
    report = run_index(str(moved), settings)
    assert (moved / ".assay" / COLLECTION_TOKEN).read_text() == token
    assert load_manifest(moved).collection == f"{path_collection_name(moved)}_{token}_g1"
    assert report.dense_pending == 0 and _dense(moved, "retry with exponential backoff", settings).candidates


def test_a_local_index_named_by_its_path_keeps_its_name_and_vectors(tmp_path: Path) -> None:
    root = _alice(tmp_path / "local")
    run_index(str(root), Settings())
    manifest = load_manifest(root)
    legacy = f"{path_collection_name(root)}_g1"  # as an Assay without tokens named it
    VectorStore(root, None, manifest.collection).collection.modify(name=legacy)
    write_manifest(root, manifest.model_copy(update={"collection": legacy}))
    (root / ".assay" / COLLECTION_TOKEN).unlink()

    again = run_index(str(root), Settings())

    assert load_manifest(root).collection == legacy  # no local index is embedded again for the token
    assert again.entities_embedded == 0 and not again.rebuild_reason and again.dense_pending == 0
    assert _dense(root, "retry with exponential backoff", Settings()).candidates
    run_index(str(root), Settings(), rebuild=True)  # a rebuild takes the token's name and drops the old one
    rebuilt = load_manifest(root).collection
    assert rebuilt == f"{collection_name(root)}_g2" and rebuilt != f"{legacy[:-3]}_g2"
    client = VectorStore(root, None)._client
    assert [getattr(c, "name", c) for c in client.list_collections()] == [rebuilt]


# prefect.yaml's build step without ASSAY_WORKSPACE: its advice on the terminal, not inside Prefect's traceback


def test_the_deploy_stops_with_its_advice_printed_first(capfd: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    import yaml
    from prefect.deployments.steps.utility import run_shell_script

    monkeypatch.delenv("ASSAY_WORKSPACE", raising=False)
    spec = yaml.safe_load((Path(__file__).resolve().parents[1] / "prefect.yaml").read_text())
    step = {k: v for k, v in spec["build"][0]["prefect.deployments.steps.run_shell_script"].items() if k != "id"}
    with pytest.raises(RuntimeError):  # the deploy stops (Prefect then prints its traceback)
        result = run_shell_script(**step)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    printed = capfd.readouterr()
    assert printed.err.startswith("ASSAY_WORKSPACE is not set; set it to the folder to index"), printed


# a Dask worker killed mid-run: one line, none of Dask's warnings

_KILL_A_WORKER = """
import os, signal, time
from assay.flows.dask import task_runner
runner = task_runner("local:2")
from distributed import Client, LocalCluster

def slow(x):
    time.sleep(4)
    return x

if __name__ == "__main__":
    with LocalCluster(**runner.cluster_kwargs) as cluster, Client(cluster) as client:
        futures = [client.submit(slow, i, pure=False) for i in range(2)]
        time.sleep(2)
        os.kill(next(iter(client.run(os.getpid).values())), signal.SIGKILL)
        print("results", sorted(client.gather(futures)), flush=True)
"""


@pytest.mark.parametrize("debug", [False, True])
def test_a_killed_dask_worker_is_one_line_not_dask_warnings(tmp_path: Path, debug: bool) -> None:
    import subprocess
    import sys

    from assay.flows.dask import WORKER_DIED

    script = tmp_path / "kill_a_worker.py"
    script.write_text(_KILL_A_WORKER)
    env = {k: v for k, v in os.environ.items() if k not in ("ASSAY_DEBUG", "DASK_LOGGING__DISTRIBUTED")}
    if debug:
        env["ASSAY_DEBUG"] = "1"
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0 and "results [0, 1]" in done.stdout, done.stderr
    if debug:  # ASSAY_DEBUG keeps Dask's own lines
        assert "Restarting worker" in done.stderr and WORKER_DIED not in done.stderr
        return
    assert done.stderr.strip() == WORKER_DIED, done.stderr

"""Sweep 4 (scale) fixes: import centrality stored with the index, an interrupted `assay index` saying what it left,
`assay watch` naming removed files, and `index --rebuild`'s help telling what it re-does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.flows.cli import app, watch_line
from assay.flows.index import run_index
from assay.stages.core.artifacts import IndexReport
from assay.stages.index.store import Catalog, index_generation
from assay.stages.query import graph


def _computed(root: Path) -> dict[str, float]:
    catalog = Catalog(root)
    try:
        return graph.import_centrality(catalog)
    finally:
        catalog.close()


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a fresh CLI process sees: no centrality in memory."""
    monkeypatch.setattr(graph, "_CENTRALITY", {})


def test_stored_centrality_equals_the_computed_one_and_a_new_process_reads_it(project: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "pkg" / "again.py").write_text("from pkg.retry import retry_call\nfrom pkg.session import Session\n")
    run_index(str(project))
    _new_process(monkeypatch)
    first = graph.workspace_centrality(project)
    stored = graph.read_centrality(project, index_generation(project))
    assert stored == first == _computed(project) and len(stored) >= 2

    _new_process(monkeypatch)
    monkeypatch.setattr(graph, "import_centrality", lambda *a, **k: pytest.fail("recomputed despite the stored file"))
    assert graph.workspace_centrality(project) == first


def test_stale_or_unreadable_stored_centrality_is_recomputed(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_index(str(project))
    _new_process(monkeypatch)
    before = graph.workspace_centrality(project)
    path = project / ".assay" / graph.CENTRALITY_FILE

    path.write_text("{not json")
    _new_process(monkeypatch)
    assert graph.workspace_centrality(project) == before
    assert json.loads(path.read_text())["centrality"] == before  # written afresh

    (project / "pkg" / "again.py").write_text("from pkg.retry import retry_call\nfrom pkg.session import Session\n")
    run_index(str(project))  # a new index generation: the stored file is stale
    _new_process(monkeypatch)
    after = graph.workspace_centrality(project)
    assert after != before and after == _computed(project) == graph.read_centrality(project, index_generation(project))


_SAME_NAMES = {  # the same import text in two folders: relative ones must resolve beside each importer
    "a/x.py": "from .util import f\nfrom pkg import core\n", "b/y.py": "from .util import f\nfrom pkg import core\n",
    "a/util.py": "def f():\n    return 1\n", "b/util.py": "def f():\n    return 2\n",
    "pkg/__init__.py": "", "pkg/core.py": "def g():\n    return 3\n",
    "a/m.js": "import { u } from './u';\nexport const m = () => u();\n",
    "b/m.js": "import { u } from './u';\nexport const m = () => u();\n",
    "a/u.js": "export function u() { return 1; }\n", "b/u.js": "export function u() { return 2; }\n",
    "a/main.c": '#include "h.h"\nint main(void) { return h(); }\n', "b/main.c": '#include "h.h"\nint main(void) { return h(); }\n',
    "a/h.h": "int h(void);\n", "b/h.h": "int h(void);\n", "a/h.c": "int h(void) { return 1; }\n",
}


def test_memoised_import_resolution_counts_as_resolving_each_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in _SAME_NAMES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    run_index(str(tmp_path))
    catalog = Catalog(tmp_path)
    try:
        shared = graph.file_importers(catalog)
        assert shared == {"a/util.py": 1, "b/util.py": 1, "pkg/core.py": 2, "a/u.js": 1, "b/u.js": 1,
                          "a/h.h": 1, "b/h.h": 1, "a/h.c": 1}
        monkeypatch.setattr(graph, "_importer_key", lambda module, source: (module, source))  # one entry per import
        assert graph.file_importers(catalog) == shared
    finally:
        catalog.close()


def test_watch_line_names_removed_files() -> None:
    report = IndexReport.model_construct(files_parsed=0, files_removed=2000, entities_total=50815, rebuild_reason="")
    assert watch_line(["gen/tiny/t0.py"], report, None) == "gen/tiny/t0.py: re-indexed 0 file(s), removed 2000, 50815 entities"
    kept = IndexReport.model_construct(files_parsed=3, files_removed=0, entities_total=9, rebuild_reason="")
    assert "removed" not in watch_line(["a.py"], kept, None)


def test_rebuild_help_says_vectors_come_from_the_embedding_cache() -> None:
    import typer

    command = typer.main.get_command(app).commands["index"]  # type: ignore[attr-defined]
    said = next(p.help for p in command.params if p.name == "rebuild")
    assert "re-embed everything" not in said
    assert "re-parse every file" in said and "from the embedding cache" in said


def _workspace(root: Path, files: int = 60) -> Path:
    """Enough passages that the default embedder is still at work seconds after BM25 is written."""
    root.mkdir()
    for i in range(files):
        body = "".join(f"def helper_{i}_{j}(value):\n    \"\"\"Scale helper {i} {j}.\"\"\"\n    return value * {j} + {i}\n\n\n"
                       for j in range(8))
        (root / f"mod{i}.py").write_text(body)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _status(root: Path) -> dict:
    try:
        return json.loads((root / ".assay" / "status.json").read_text())
    except (OSError, ValueError):
        return {}


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_index_says_what_is_usable_and_how_to_resume(tmp_path: Path, sig: int, code: int) -> None:
    root = _workspace(tmp_path / "ws")
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct"}
    proc = subprocess.Popen([sys.executable, "-c", "from assay.flows.cli import main; main()", "index", str(root)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _status(root).get("stages", {}).get("embed", {}).get("done"):  # BM25 written, vectors being made
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached its embed stage"
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, (out, err)
    assert "interrupted during embed: BM25 search covers every parsed file;" in err, err
    assert "passages stored as vectors" in err and "run `assay index` to resume" in err, err
    assert "Traceback" not in err and _status(root)["state"] == "interrupted"


def test_counting_passages_in_chunks_gives_the_counts_and_scores_of_one_pass(project: Path) -> None:
    from assay.stages.index.lexical import LexicalIndex
    from assay.stages.index.term_counts import TermCounts

    run_index(str(project))
    catalog = Catalog(project)
    try:
        ids, tokens = catalog.lexical_tokens()
        whole = TermCounts.count_rows(catalog.lexical_token_rows(), chunk=10**9)
        chunked = TermCounts.count_rows(catalog.lexical_token_rows(), chunk=3)
    finally:
        catalog.close()
    assert len(ids) > 9 and chunked.ids == whole.ids == ids and chunked.vocab == whole.vocab
    for name in ("ptr", "term", "tf", "length"):
        a, b = getattr(chunked, name), getattr(whole, name)
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), name
    one, many = LexicalIndex.from_counts(whole), LexicalIndex.from_counts(chunked)
    for query in ("retry backoff", "session request", "client"):
        assert many.search(query, 10) == one.search(query, 10) and one.search(query, 10)
    empty = TermCounts.count_rows(iter(()), chunk=3)
    assert empty.ids == [] and empty.ptr.tolist() == [0] and len(empty.term) == 0

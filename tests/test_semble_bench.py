"""Semble benchmark: the metric by hand, loading, the source-tree layout, and the suite end to end offline."""

from __future__ import annotations

import io
import json
import math
import tarfile
from pathlib import Path

import pytest

from assay.stages.evaluate import semble as sb


def test_ndcg_by_hand_with_suffix_paths_and_spans() -> None:
    targets = (sb.Target("pkg/routing.py"), sb.Target("pkg/params.py", 40, 50))
    hits = [sb.Hit("pkg/other.py", 1, 9), sb.Hit("pkg/params.py", 1, 30), sb.Hit("repo/pkg/routing.py", 5, 9),
            sb.Hit("pkg/params.py", 45, 60)]
    assert sb.target_ranks(hits, targets) == [3, 4]  # the first params.py hit misses the span
    ideal = 1 + 1 / math.log2(3)
    assert sb.ndcg_at_10(hits, targets) == pytest.approx((1 / math.log2(4) + 1 / math.log2(5)) / ideal)
    assert sb.ndcg_at_10([sb.Hit("xpkg/routing.py", 1, 2)], (sb.Target("pkg/routing.py"),)) == 0.0  # suffix at a folder
    deep = [sb.Hit(f"f{i}.py", 1, 2) for i in range(10)] + [sb.Hit("pkg/routing.py", 1, 2)]
    assert sb.ndcg_at_10(deep, (sb.Target("pkg/routing.py"),)) == 0.0
    assert sb.ndcg_at_10([sb.Hit("a.py", 1, 2)], tuple(sb.Target("a.py") for _ in range(1))) == 1.0


def test_summary_means_per_repo_and_category() -> None:
    rows = [{"repo": "a", "category": "symbol", "ndcg": 1.0}, {"repo": "a", "category": "semantic", "ndcg": 0.5},
            {"repo": "b", "category": "symbol", "ndcg": 0.0}]
    s = sb.summarise(rows)
    assert s["overall"] == 0.5 and s["repos"] == {"a": 0.75, "b": 0.0}
    assert s["categories"] == {"architecture": 0.0, "semantic": 0.5, "symbol": 0.5} and s["queries"] == 3


def test_loads_the_shared_annotations(tmp_path: Path) -> None:
    (tmp_path / "annotations").mkdir()
    (tmp_path / "repos.json").write_text(json.dumps([{"name": "demo", "benchmark_root": "src"}]))
    (tmp_path / "annotations" / "demo.json").write_text(json.dumps([
        {"query": "q", "category": "symbol", "relevant": [{"path": "src/a.py", "start_line": 3, "end_line": 4}],
         "secondary": ["src/b.py"]}]))
    (q,) = sb.load_queries(tmp_path, "demo")
    assert q.targets == (sb.Target("src/a.py", 3, 4), sb.Target("src/b.py")) and q.category == "symbol"
    assert sb.load_repos(tmp_path)["demo"]["benchmark_root"] == "src"


def _tarball(path: Path, top: str, files: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def demo_repo(home: Path) -> tuple[dict, sb.Source]:
    """A cached npm-style tarball whose src/ lives at packages/demo/src in the repository."""
    (home / "downloads").mkdir(parents=True)
    _tarball(home / "downloads" / "demo-1.0.0.tgz", "package", {
        "src/cache.ts": "/** Evicts the least recently used entries. */\nexport function evictLeastRecent(cache: Map<string, number>) {\n  cache.clear();\n}\n",
        "src/retry.ts": "export function retryWithBackoff(times: number) {\n  return times * 2;\n}\n",
        "src/cache.test.ts": "import { evictLeastRecent } from './cache';\nevictLeastRecent(new Map());\n",
        "README.md": "outside the benchmark root\n",
    })
    return {"name": "demo", "benchmark_root": "packages/demo/src"}, sb.Source("npm", "demo", "1.0.0", "packages/demo/")


def test_prepare_lays_out_only_the_benchmark_root_at_its_repository_path(tmp_path: Path) -> None:
    repo, source = demo_repo(tmp_path)
    root = sb.prepare_repo(repo, tmp_path, source)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != ".assay-semble")
    assert files == ["packages/demo/src/cache.test.ts", "packages/demo/src/cache.ts", "packages/demo/src/retry.ts"]
    queries = [sb.SembleQuery("demo", "q", "semantic", (sb.Target("packages/demo/src/cache.ts"),)),
               sb.SembleQuery("demo", "r", "semantic", (sb.Target("packages/demo/src/gone.ts"),))]
    assert sb.present_targets(root, queries) == (1, 2, ["r"])
    assert sb.prepare_repo(repo, tmp_path, source) == root  # cached: no second download


def test_semble_suite_scores_assay_beside_plain_bm25(tmp_path: Path) -> None:
    from assay.flows.index import run_index
    from assay.stages.core.config import Settings
    from assay.stages.evaluate.runs import evaluate_semble, render_semble, semble_summary

    repo, source = demo_repo(tmp_path)
    root = sb.prepare_repo(repo, tmp_path, source)
    run_index(str(root))
    queries = [sb.SembleQuery("demo", "evictLeastRecent", "symbol", (sb.Target("packages/demo/src/cache.ts", 2, 4),)),
               sb.SembleQuery("demo", "retry with backoff", "semantic", (sb.Target("packages/demo/src/retry.ts"),))]
    rows = evaluate_semble(root, "demo", queries, Settings(), ablate=True)
    configs = {r["config"] for r in rows}
    assert {"BM25 (plain, in-run)", "hybrid (RRF)", "assay", "assay - penalties", "assay - diversity"} <= configs
    summary = semble_summary(rows)
    assert summary["assay"]["overall"] == 1.0 and summary["assay"]["categories"]["symbol"] == 1.0
    table = render_semble({"summary": summary, "repos": {"demo": {"source": "npm demo 1.0.0", "queries": 2, "targets_present": 2,
                                                                   "targets_total": 2, "orphaned": []}}})
    assert "| assay | 1.000 |" in table and "semble (published, 62 repos) | 0.852" in table


def test_any_repository_in_repos_json_is_fetched_as_its_registry_field_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The held-out repositories are not in `SOURCES`: each is fetched from what its `registry` field names, and
    one that no registry here carries is reported, not a crash that loses the others."""
    from assay.flows.evaluate import evaluate_semble_pipeline
    from assay.flows.runtime import direct_call
    from assay.stages.core.config import Settings

    repo, _ = demo_repo(tmp_path)
    folder = tmp_path / "bench"
    (folder / "annotations").mkdir(parents=True)
    repos = [{**repo, "registry": "npm tarball: demo 1.0.0 (its src/ maps to packages/demo/src)"},
             {"name": "gitonly", "benchmark_root": "src", "registry": "git clone only"}]
    (folder / "repos.json").write_text(json.dumps(repos))
    (folder / "annotations" / "demo.json").write_text(json.dumps([
        {"query": "evictLeastRecent", "category": "symbol", "relevant": ["packages/demo/src/cache.ts"]}]))
    assert sb.source_for(repos[0]) == sb.Source("npm", "demo", "1.0.0", "packages/demo/")
    assert sb.source_for({"name": "x", "registry": "PyPI sdist: requests"}, latest=lambda registry, package: "2.0") == sb.Source("pypi", "requests", "2.0")
    monkeypatch.setenv("ASSAY_EVAL_DIR", str(tmp_path))  # the tarball is cached there: nothing is downloaded
    results = evaluate_semble_pipeline(Settings(orchestration="direct"), semble_dir=str(folder), ablate=False, call=direct_call)
    assert results["repos"]["demo"]["source"] == "npm demo 1.0.0" and results["summary"]["assay"]["overall"] == 1.0
    assert "cannot tell where its source comes from" in results["repos"]["gitonly"]["error"]


def test_a_checkout_on_disk_or_a_git_revision_is_a_source_too(tmp_path: Path) -> None:
    """semble's own repos.json names a git url and revision: where git reaches it (here a local repository), that
    revision is laid out; a `path` to a checkout is read as it stands."""
    import subprocess

    repo_dir = tmp_path / "upstream"
    (repo_dir / "src").mkdir(parents=True)
    (repo_dir / "src" / "cache.py").write_text("def evict():\n    return 1\n")
    (repo_dir / "README.md").write_text("outside the benchmark root\n")
    git = ["git", "-C", str(repo_dir), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo_dir)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (repo_dir / "src" / "cache.py").write_text("def evict_later():\n    return 2\n")
    subprocess.run([*git, "commit", "-qam", "two"], check=True)

    pinned = {"name": "up", "url": str(repo_dir), "revision": first, "benchmark_root": "src"}
    assert sb.source_for(pinned) == sb.Source("git", str(repo_dir), first)
    root = sb.prepare_repo(pinned, tmp_path / "home")
    assert (root / "src" / "cache.py").read_text().startswith("def evict():") and not (root / "README.md").exists()
    mine = {"name": "mine", "path": str(repo_dir), "benchmark_root": "src"}
    local = sb.prepare_repo(mine, tmp_path / "home")
    assert (local / "src" / "cache.py").read_text().startswith("def evict_later():")
    (repo_dir / "src" / "cache.py").unlink()
    (repo_dir / "src" / "store.py").write_text("X = 1\n")
    assert sorted(p.name for p in (sb.prepare_repo(mine, tmp_path / "home") / "src").iterdir()) == ["store.py"]  # synced
    with pytest.raises(RuntimeError, match="could not check out"):
        sb.prepare_repo({**pinned, "name": "gone", "revision": "0" * 40}, tmp_path / "home")


def test_summary_matches_plain_means_on_random_rows() -> None:
    import random

    rng = random.Random(3)
    rows = [{"repo": rng.choice("xyz"), "category": rng.choice(["semantic", "symbol"]), "ndcg": rng.random()}
            for _ in range(97)]
    s = sb.summarise(rows)

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    assert s["overall"] == mean([r["ndcg"] for r in rows])
    assert s["repos"] == {r: mean([x["ndcg"] for x in rows if x["repo"] == r]) for r in dict.fromkeys(x["repo"] for x in rows)}
    assert s["categories"] == {c: mean([x["ndcg"] for x in rows if x["category"] == c]) for c in sb.CATEGORIES}


def test_a_cached_sdist_under_its_normalised_name_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip saves `JPype1` 1.7.1 as `jpype1-1.7.1.tar.gz` (PEP 625); looking only for the project's spelling, the
    download was judged failed and repeated on every run."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # no second download: pip would fail
    _tarball(tmp_path / "jpype1-1.7.1.tar.gz", "jpype1-1.7.1", {"src/Demo.java": "class Demo {}\n"})
    assert sb.download(sb.Source("pypi", "JPype1", "1.7.1"), tmp_path) == tmp_path / "jpype1-1.7.1.tar.gz"
    with pytest.raises(RuntimeError, match="could not download Missing 2.0 from PyPI"):
        sb.download(sb.Source("pypi", "Missing", "2.0"), tmp_path)


def test_a_corpus_unpacked_from_a_normalised_archive_keeps_the_requirement_s_folder(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The evaluations and training scripts find a corpus at `corpora/<name>-<version>`; a PEP 625 archive unpacks
    as `jpype1-1.7.1`, and the folder would have been missing."""
    from assay.stages.evaluate.sdists import prepare_corpus

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    (tmp_path / "downloads").mkdir()
    _tarball(tmp_path / "downloads" / "jpype1-1.7.1.tar.gz", "jpype1-1.7.1", {"src/Demo.java": "class Demo {}\n"})
    root = prepare_corpus("JPype1==1.7.1", tmp_path)
    assert root == tmp_path / "corpora" / "JPype1-1.7.1" and (root / "src" / "Demo.java").is_file()
    assert prepare_corpus("JPype1==1.7.1", tmp_path) == root  # unpacked once


def test_every_topic_file_loads_as_semble_queries_and_names_its_package() -> None:
    """`bench_topics`' questions in words: each file is in the benchmark's shape, with a package to fetch."""
    from tests.benchmarks import bench_topics

    files = sorted(p.stem for p in bench_topics.TOPICS.glob("*.json"))
    assert files and set(files) == set(bench_topics.PACKAGES)
    for topic in files:
        queries = bench_topics.load(topic)
        assert len(queries) >= 10, topic
        assert all(q.targets and q.category in sb.CATEGORIES and q.query.strip() for q in queries), topic
        assert len({q.query for q in queries}) == len(queries), topic

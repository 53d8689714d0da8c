"""Semble's public code-search benchmark: loading, source trees from the registries, and its metric.

The metric is the benchmark's own: targets = relevant + secondary (a path, or a path with a line
span); a target is found at the 1-based rank of the first returned chunk whose file path ends with
the target path and whose lines overlap the span (any lines when it has none); binary gains;
NDCG@10 with the ideal = min(10, number of targets) hits; mean per query.

Source trees of the dev repositories come from the package registries (PyPI sdist, npm tarball). Each pinned
release is the earliest one that holds every annotated target file; for fastapi, whose
targets carry line spans, the release whose definitions sit on the annotated lines (0.136.0: `Depends` at
params.py:746, `APIRouter` at routing.py:1005). Any other repository is fetched as its `registry` field
says ("PyPI sdist: NAME", "npm tarball: NAME", with a version or else the newest), or from a `path` to a
checkout on disk, or as a git clone of its `url` at its `revision` where git can reach it. Only
`benchmark_root` is laid out and indexed, at its path in the repository.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from assay.stages.evaluate.sdists import fetch_sdist

CATEGORIES = ("architecture", "semantic", "symbol")

# Published on the whole benchmark (62 repos, 1,258 queries): overall, architecture, semantic, symbol.
PUBLISHED = {
    "semble": (0.852, 0.802, 0.846, 0.958),
    "BM25 (raw)": (0.675, 0.628, 0.676, 0.719),
    "BM25 + semble ranking": (0.834, 0.770, 0.819, 0.957),
    "CodeRankEmbed (137M)": (0.762, 0.690, 0.777, 0.845),
    "CodeRankEmbed + BM25": (0.860, 0.811, 0.863, 0.941),
}


@dataclass(frozen=True)
class Source:
    """Where a benchmark repository's tree comes from: registry, package, version, and where the
    archive's top folder sits in the repository (npm packages of a monorepo live below its root)."""

    registry: str  # "pypi" | "npm" | "git" (package: the url, version: the revision) | "local" (package: a folder)
    package: str
    version: str
    repo_prefix: str = ""


SOURCES = {
    "fastapi": Source("pypi", "fastapi", "0.136.0"),
    "pydantic": Source("pypi", "pydantic", "2.13.5"),
    "express": Source("npm", "express", "5.2.1"),
    "zod": Source("npm", "zod", "4.3.6", repo_prefix="packages/zod/"),
}


_REGISTRY = re.compile(r"^\s*(?P<kind>pypi|npm)\b[^:]*:\s*(?P<package>[@\w./-]+?)(?:(?:==|@|\s+v?)(?P<version>\d[\w.+-]*))?(?:\s|$|,|;|\()", re.I)
_MAPS_TO = re.compile(r"its\s+(?P<inner>\S+)\s+maps\s+to\s+(?P<outer>[^)\s]+)")


def source_for(repo: dict, latest: Callable[[str, str], str] | None = None) -> Source:
    """Where a repository's tree comes from: the pinned release for a dev repository, else what its `registry`
    field names ("PyPI sdist: NAME", "npm tarball: NAME 1.2.3", "... (its src/ maps to packages/x/src)"), at
    the version it names (or a `version` key), or the newest release."""
    if repo["name"] in SOURCES:
        return SOURCES[repo["name"]]
    if repo.get("path"):  # a checkout on disk
        return Source("local", str(Path(str(repo["path"])).expanduser().resolve()), "local")
    text = str(repo.get("registry", ""))
    found = _REGISTRY.match(text + " ")
    if found is None and repo.get("url") and repo.get("revision"):
        return Source("git", str(repo["url"]), str(repo["revision"]))
    if found is None:
        raise ValueError(f"{repo['name']}: cannot tell where its source comes from (registry: {text!r}); "
                         "write it as 'PyPI sdist: NAME' or 'npm tarball: NAME', or give a `path` to a checkout")
    registry = found["kind"].lower()
    package = str(repo.get("package") or found["package"])
    version = str(repo.get("version") or found["version"] or (latest or newest_version)(registry, package))
    prefix = ""
    maps = _MAPS_TO.search(text)
    if maps:  # the archive's `src/` is the repository's `packages/zod/src/`: prefix `packages/zod/`
        inner, outer = maps["inner"].strip("/") + "/", maps["outer"].strip("/") + "/"
        prefix = outer[: -len(inner)] if outer.endswith(inner) else ""
    return Source(registry, package, version, repo_prefix=prefix)


def newest_version(registry: str, package: str) -> str:
    """The newest release the registry serves (`pip index versions`, `npm view`)."""
    if registry == "pypi":
        cmd = [sys.executable, "-m", "pip", "index", "versions", package]
        pattern = re.compile(rf"^{re.escape(package)}\s*\(([^)]+)\)", re.I | re.M)
    else:
        cmd = ["npm", "view", package, "version"]
        pattern = re.compile(r"^\s*(\d[\w.+-]*)\s*$", re.M)
    done = _run(cmd, f"cannot look up {package}")
    found = pattern.search(done.stdout)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"cannot find a release of {package} on {registry}: {_last_line(done.stderr or done.stdout, 'no version listed')}")
    return found.group(1)


def _run(cmd: list[str], doing: str) -> subprocess.CompletedProcess[str]:
    """Run a registry or git client; a missing client is a one-line error that says what could not be done."""
    try:
        return subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace")  # only messages are read
    except FileNotFoundError as exc:
        raise RuntimeError(f"{doing}: {cmd[0]} is not installed") from exc


def _last_line(output: str, default: str) -> str:
    """A failed client's last word on why, for a one-line error."""
    return (output.strip().splitlines() or [default])[-1]


@dataclass(frozen=True)
class Target:
    path: str
    start_line: int | None = None
    end_line: int | None = None

    def matches(self, file: str, start: int, end: int) -> bool:
        if not (file == self.path or file.endswith("/" + self.path)):
            return False
        if self.start_line is None or self.end_line is None:
            return True
        return start <= self.end_line and end >= self.start_line


@dataclass(frozen=True)
class SembleQuery:
    repo: str
    query: str
    category: str
    targets: tuple[Target, ...]


@dataclass(frozen=True)
class Hit:
    """One returned chunk: where it is."""

    file: str
    start_line: int
    end_line: int


REPOS_SHAPE = "repos.json is a list of {name, benchmark_root, and registry, path or url + revision}"
QUERIES_SHAPE = "an annotation file is a list of {query, category, relevant: [path or {path, start_line, end_line}]}"


def _target(raw, where: str) -> Target:
    if isinstance(raw, str) and raw:
        return Target(raw)
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or not raw["path"]:
        raise ValueError(f"{where}: a target must be a path or {{path, start_line, end_line}} (got {str(raw)[:60]})")
    return Target(raw["path"], raw.get("start_line"), raw.get("end_line"))


def _read_json(path: Path, shape: str):
    """A benchmark file's JSON; a missing, non-UTF-8 or malformed file is a one-line error naming it and its shape."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file; {shape}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text; save it as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} line {exc.lineno}: not JSON ({exc.msg}); {shape}") from None


def load_repos(folder: Path) -> dict[str, dict]:
    """name -> repository entry of `repos.json`, every entry checked for the fields the run needs."""
    path = folder / "repos.json"
    entries = _read_json(path, REPOS_SHAPE)
    if not isinstance(entries, list):
        raise ValueError(f"{path}: not a list; {REPOS_SHAPE}")
    out: dict[str, dict] = {}
    for i, r in enumerate(entries, start=1):
        name = r.get("name") if isinstance(r, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{path} entry {i}: no \"name\"; {REPOS_SHAPE}")
        if not isinstance(r.get("benchmark_root"), str) or not r["benchmark_root"].strip("/ "):
            raise ValueError(f"{path} entry {i} ({name}): no \"benchmark_root\" (the folder to index, e.g. src/pkg); {REPOS_SHAPE}")
        out[name] = r
    return out


def load_queries(folder: Path, repo: str) -> list[SembleQuery]:
    return read_queries(folder / "annotations" / f"{repo}.json", repo)


def read_queries(path: Path, repo: str) -> list[SembleQuery]:
    """One annotation file (a list of `{query, relevant, secondary, category}`) as the repository's queries."""
    entries = _read_json(path, QUERIES_SHAPE)
    if not isinstance(entries, list):
        raise ValueError(f"{path}: not a list; {QUERIES_SHAPE}")
    return [_query(r, repo, f"{path} entry {i}") for i, r in enumerate(entries, start=1)]


def _query(r, repo: str, where: str) -> SembleQuery:
    if not isinstance(r, dict) or not isinstance(r.get("query"), str) or not r["query"].strip():
        raise ValueError(f"{where}: no \"query\" text; {QUERIES_SHAPE}")
    if not isinstance(r.get("category"), str):
        raise ValueError(f"{where}: no \"category\" (one of {', '.join(CATEGORIES)})")
    if not isinstance(r.get("relevant"), list) or not isinstance(r.get("secondary") or [], list):
        raise ValueError(f"{where}: \"relevant\" (and \"secondary\") must be lists; {QUERIES_SHAPE}")
    targets = [*r["relevant"], *(r.get("secondary") or [])]
    return SembleQuery(repo, r["query"], r["category"], tuple(_target(t, where) for t in targets))


def target_ranks(hits: list[Hit], targets: tuple[Target, ...]) -> list[int | None]:
    """Per target, the 1-based rank of the first hit that matches it (None when none does)."""
    ranks: list[int | None] = []
    for t in targets:
        ranks.append(next((i for i, h in enumerate(hits, start=1) if t.matches(h.file, h.start_line, h.end_line)), None))
    return ranks


def ndcg_at_10(hits: list[Hit], targets: tuple[Target, ...]) -> float:
    if not targets:
        return 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r in target_ranks(hits, targets) if r is not None and r <= 10)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(10, len(targets)) + 1))
    return dcg / ideal


def summarise(rows: list[dict]) -> dict:
    """Mean NDCG@10 overall, per repo and per category, from rows {repo, category, ndcg}."""
    frame = pd.DataFrame(rows, columns=["repo", "category", "ndcg"])
    by_repo = frame.groupby("repo", sort=False)["ndcg"].mean()
    by_category = frame.groupby("category")["ndcg"].mean().reindex(list(CATEGORIES), fill_value=0.0)
    return {
        "overall": round(float(frame["ndcg"].mean()), 4) if len(frame) else 0.0,
        "repos": {str(repo): round(float(v), 4) for repo, v in by_repo.items()},
        "categories": {str(c): round(float(v), 4) for c, v in by_category.items()},
        "queries": len(frame),
    }


# ----------------------------------------------------------------------------- source trees


def download(source: Source, downloads: Path) -> Path:
    if source.registry == "pypi":
        return fetch_sdist(f"{source.package}=={source.version}", downloads)
    if source.registry != "npm":
        raise ValueError(f"unknown registry {source.registry!r}")
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / f"{source.package.lstrip('@').replace('/', '-')}-{source.version}.tgz"  # `@vue/x` packs as `vue-x-1.0.tgz`
    if not archive.exists():
        cmd = ["npm", "pack", f"{source.package}@{source.version}", "--silent", "--pack-destination", str(downloads)]
        done = _run(cmd, f"cannot fetch {source.package} {source.version}")
        if done.returncode != 0 or not archive.exists():
            why = _last_line(done.stderr or done.stdout, "no archive written")
            raise RuntimeError(f"could not download {source.package} {source.version} from npm: {why}")
    return archive


def prepare_repo(repo: dict, home: Path, source: Source | None = None) -> Path:
    """Download the release once, then lay out only `benchmark_root` at its repository path."""
    source = source or source_for(repo)
    root = home / "semble" / f"{repo['name']}-{source.version[:12]}"
    bench_root = repo["benchmark_root"].strip("/") + "/"
    if source.registry == "local":  # a checkout on disk may have moved on: synced each run, its index kept
        return _lay_out(Path(source.package), bench_root, root, source)
    if (root / ".assay-semble").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if source.registry == "git":
        return _lay_out(clone(source, home / "downloads" / "git" / repo["name"]), bench_root, root, source)
    archive = download(source, home / "downloads")
    copied = 0
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if not member.isfile() or "/" not in member.name:
                continue
            inner = source.repo_prefix + member.name.split("/", 1)[1]  # drop the archive's top folder
            if not inner.startswith(bench_root):
                continue
            dest = root / inner
            dest.parent.mkdir(parents=True, exist_ok=True)
            handle = tar.extractfile(member)
            if handle is not None:
                dest.write_bytes(handle.read())
                copied += 1
    if not copied:
        raise RuntimeError(f"{archive.name} has no files under {bench_root}")
    (root / ".assay-semble").write_text(json.dumps({"package": source.package, "version": source.version, "files": copied}),
                                        encoding="utf-8")
    return root


def clone(source: Source, dest: Path) -> Path:
    """The repository at its pinned revision, cloned once (git, where the url is reachable)."""
    marker = dest / ".git" / "assay-revision"
    if marker.exists() and marker.read_text(encoding="utf-8") == source.version:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    for cmd in (["git", "clone", "--quiet", "--no-checkout", source.package, str(dest)],
                ["git", "-C", str(dest), "checkout", "--quiet", source.version]):
        done = _run(cmd, f"cannot clone {source.package}")
        if done.returncode != 0:
            raise RuntimeError(f"could not check out {source.package} at {source.version}: {_last_line(done.stderr, 'no reason given')}")
    marker.write_text(source.version, encoding="utf-8")
    return dest


def _lay_out(tree: Path, bench_root: str, root: Path, source: Source) -> Path:
    """Mirror `tree`'s benchmark root (regular files, not `.git`, not links) at its path under `root`. A file
    whose bytes are unchanged is left alone, so the next index run is incremental."""
    src, dest = tree / bench_root, root / bench_root
    wanted = {p.relative_to(src) for p in (src.rglob("*") if src.is_dir() else [])
              if ".git" not in p.relative_to(src).parts and not p.is_symlink() and p.is_file()}
    if not wanted:
        raise RuntimeError(f"{tree} has no files under {bench_root}")
    for old in [p for p in dest.rglob("*") if p.is_file() and p.relative_to(dest) not in wanted] if dest.is_dir() else []:
        old.unlink()
    for rel in sorted(wanted):
        target = dest / rel
        data = (src / rel).read_bytes()
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    (root / ".assay-semble").write_text(json.dumps({"package": source.package, "version": source.version, "files": len(wanted)}),
                                        encoding="utf-8")
    return root


def present_targets(root: Path, queries: list[SembleQuery]) -> tuple[int, int, list[str]]:
    """How many distinct annotated target files exist in the tree, of how many; queries with none present."""
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    wanted = {t.path for q in queries for t in q.targets}
    have = {t for t in wanted if any(f == t or f.endswith("/" + t) for f in files)}
    orphaned = [q.query for q in queries if not any(t.path in have for t in q.targets)]
    return len(have), len(wanted), orphaned

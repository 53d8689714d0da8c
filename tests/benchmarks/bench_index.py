"""Index throughput per stage, time to BM25-queryable, full vs incremental re-index, and peak memory,
per embedder, on the pytest 8.4.2 sdist.

    python -m tests.benchmarks.bench_index [--repeats 1] [--embedders minilm,static] [--against REV]

Each run is a fresh process (`assay index --json`, direct orchestration) so peak RSS is per run.
"BM25-queryable" is when the manifest first appears or is first rewritten (the lexical phase committed),
counted from the process start; dense vectors fill in after it. "Warm incremental" re-indexes a one-file change inside a
process that already indexed once, as `assay watch` and the MCP server's auto-watch do: no interpreter
start and no imports (Chroma's alone is ~1 s). `--against REV` also runs the same fresh-process figures with
the code of an older commit (a temporary git worktree), interleaved run by run so that both see the same
load on shared cores, and prints the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.benchmarks.common import median, sdist, tree_command, worktree

ASSAY = str(Path(sys.executable).with_name("assay"))


def run(root: Path, embedder: str, tree: Path | None = None) -> tuple[dict, float, float, float]:
    """(report, wall seconds, peak RSS MiB, seconds until the lexical phase committed: the manifest appeared or
    changed). `tree`: run the code of that checkout instead of the installed one."""
    env = {**os.environ, "ASSAY_ORCHESTRATION": os.environ.get("ASSAY_ORCHESTRATION", "direct"), "ASSAY_EMBEDDER": embedder}
    manifest = root / ".assay" / "manifest.json"
    before = manifest.stat().st_mtime_ns if manifest.exists() else None
    start = time.perf_counter()
    command = [ASSAY]
    if tree is not None:
        command, extra = tree_command(tree, tree.parent / "shim")
        env.update(extra)
    proc = subprocess.Popen([*command, "index", "--json", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tree)
    queryable = None
    peak_kib = 0
    while proc.poll() is None:
        if queryable is None and manifest.exists() and manifest.stat().st_mtime_ns != before:
            queryable = time.perf_counter() - start
        try:  # VmHWM: this process's own peak resident memory
            status = Path(f"/proc/{proc.pid}/status").read_text()
            peak_kib = max(peak_kib, int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM"))))
        except (OSError, StopIteration, ValueError):
            pass
        time.sleep(0.02)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"assay index failed: {err.strip().splitlines()[-1:]}")
    return json.loads(out), wall, peak_kib / 1024, queryable if queryable is not None else wall


def edit_one_file(root: Path, tag: str) -> None:
    """The one-file change every incremental figure measures: a function appended to pytest's python_api.py."""
    target = root / "src" / "_pytest" / "python_api.py"
    if not target.exists():
        target = next(root.rglob("*.py"))
    target.write_text(target.read_text() + f"\n\ndef bench_{tag}():\n    return 1\n")


def warm_incremental(root: Path, embedder: str, repeats: int = 3) -> list[float]:
    """Seconds per one-file re-index in this (long-lived) process, after a first run that pays the imports."""
    os.environ["ASSAY_ORCHESTRATION"] = "direct"
    from assay.flows.index import run_index
    from assay.stages.core.config import Settings

    settings = Settings(embedder=embedder)
    run_index(str(root), settings)
    times = []
    for i in range(repeats):
        edit_one_file(root, f"warm_{i}")
        start = time.perf_counter()
        run_index(str(root), settings)
        times.append(time.perf_counter() - start)
    return times


def compare(embedder: str, requirement: str, against: str, repeats: int) -> None:
    """Interleaved fresh-process runs of this checkout and of commit `against`; medians and ratios."""
    import tempfile

    figures: dict[str, dict[str, list[float]]] = {"this": {}, against: {}}
    with tempfile.TemporaryDirectory(prefix="assay-against-") as tmp, worktree(against, Path(tmp) / "tree") as tree:
        for _ in range(repeats):
            for name, code in (("this", None), (against, tree)):
                root = sdist(requirement)
                _, full, _, queryable = run(root, embedder, code)
                edit_one_file(root, "added_function")
                _, inc, _, inc_queryable = run(root, embedder, code)
                for key, value in (("BM25-queryable", queryable), ("full", full), ("incremental", inc),
                                   ("incremental, BM25-queryable", inc_queryable)):
                    figures[name].setdefault(key, []).append(value)
    print(f"== {embedder}: this checkout vs {against} (fresh processes, interleaved, median of {repeats})")
    for key in figures["this"]:
        new, old = median(figures["this"][key]), median(figures[against][key])
        print(f"  {key}: {old:.2f} s -> {new:.2f} s (ratio {new / old:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--requirement", default="pytest==8.4.2")
    parser.add_argument("--embedders", default="minilm,static", help="comma-separated ASSAY_EMBEDDER values")
    parser.add_argument("--against", help="also run an older commit's code, interleaved, and print the ratios")
    opts = parser.parse_args()
    if opts.against:
        for embedder in opts.embedders.split(","):
            compare(embedder, opts.requirement, opts.against, opts.repeats)
        return
    for embedder in opts.embedders.split(","):
        fulls, incs, peaks, ready, inc_ready = [], [], [], [], []
        for _ in range(opts.repeats):
            root = sdist(opts.requirement)
            full, wall_full, peak, queryable = run(root, embedder)
            edit_one_file(root, "added_function")
            inc, wall_inc, _, inc_queryable = run(root, embedder)
            fulls.append((full, wall_full))
            incs.append((inc, wall_inc))
            peaks.append(peak)
            ready.append(queryable)
            inc_ready.append(inc_queryable)
        full, wall_full = fulls[-1]
        inc, wall_inc = incs[-1]
        t = full["timings"]
        files = full["files_parsed"]
        ents = full["entities_embedded"]
        print(f"== embedder {embedder} ({full['embedder']})")
        print(f"corpus: {opts.requirement} ({files} files parsed, {ents} entities, {full['files_seen']} files seen)")
        print(f"BM25-queryable after start (median of {opts.repeats}): {median(ready):.1f} s")
        print(f"full index wall, dense complete (median of {opts.repeats}): {median([w for _, w in fulls]):.1f} s")
        print(f"  discover {t['discover']:.2f} s | parse {t['parse']:.2f} s ({files / max(t['parse'], 1e-9):.0f} files/s, "
              f"{ents / max(t['parse'], 1e-9):.0f} entities/s) | records + purge + BM25 {t['lexical']:.2f} s")
        print(f"  embed {t.get('embed', 0):.1f} s ({ents / max(t.get('embed', 0), 1e-9):.1f} entities/s) | "
              f"vectors {t.get('store', 0):.1f} s ({ents / max(t.get('store', 0), 1e-9):.0f} entities/s)")
        stage_total = sum(t.values()) or 1.0
        print("  share per stage: " + ", ".join(f"{k} {v / stage_total:.0%}" for k, v in t.items()))
        print(f"  end to end: {files / wall_full:.1f} files/s, {ents / wall_full:.1f} entities/s")
        print(f"incremental re-index after a one-file change: {median([w for _, w in incs]):.2f} s wall, "
              f"{inc['files_parsed']} file parsed, {inc['entities_embedded']} entities embedded; "
              f"BM25-queryable after {median(inc_ready):.2f} s")
        print(f"ratio incremental/full: {median([w for _, w in incs]) / median([w for _, w in fulls]):.3f}")
        warm = warm_incremental(root, embedder)
        print(f"warm incremental (long-lived process, median of {len(warm)}): {median(warm):.2f} s")
        print(f"peak RSS of an index process: {max(peaks):.0f} MiB")


if __name__ == "__main__":
    main()

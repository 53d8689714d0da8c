"""What the code graph costs at index time, and how fast its questions are, on the pytest 8.4.2 sdist.

    python -m tests.benchmarks.bench_graph [--repeat 3]

Prints the parse stage's time with and without edge extraction (median of --repeat runs), the edges
found, the share of a full index run the graph adds (full run timed once with the configured embedder,
ASSAY_EMBEDDER), and the median time of `callers`, `callees` and `impact` on a few pytest names.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tests.benchmarks.common import sdist


def parse_seconds(root: Path, with_edges: bool) -> tuple[float, int]:
    from assay.stages.index import parse
    from assay.stages.index.discover import discover
    from assay.stages.index.incremental import parse_files

    real = parse.extract_edges
    parse.extract_edges = real if with_edges else (lambda *a, **k: [])
    try:
        files = discover(root, 1_000_000).files
        start = time.perf_counter()
        parsed = parse_files(root, files, 60, 2400)
        return time.perf_counter() - start, sum(len(pf.edges) for pf in parsed.files)
    finally:
        parse.extract_edges = real


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = sdist("pytest==8.4.2")
    runs = {flag: [parse_seconds(root, flag) for _ in range(args.repeat)] for flag in (False, True)}
    off = statistics.median(t for t, _ in runs[False])
    on = statistics.median(t for t, _ in runs[True])
    edges = runs[True][0][1]
    os.environ.setdefault("ASSAY_ORCHESTRATION", "direct")
    from assay.flows.index import run_index
    from assay.stages.query import graph
    from assay.stages.index.store import Catalog

    work = Path(tempfile.mkdtemp(prefix="assay-graph-bench-")) / "pytest"
    shutil.copytree(root, work, ignore=shutil.ignore_patterns(".assay"))
    start = time.perf_counter()
    run_index(str(work))
    full = time.perf_counter() - start
    catalog = Catalog(work)
    print(f"pytest 8.4.2: parse without edges {off:.2f} s, with edges {on:.2f} s (+{on - off:.2f} s, {edges:,} edges)")
    print(f"full index ({os.environ.get('ASSAY_EMBEDDER', 'minilm')}) {full:.1f} s; the graph adds {100 * (on - off) / full:.1f}% of it"
          f" (parse share {100 * (on - off) / on:.0f}% of the parse stage)")
    for command, name in (("callers", "fixture"), ("callers", "Config.getini"), ("callees", "Pytester.runpytest"),
                          ("impact", "Config.getini")):
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            res = getattr(graph, command)(catalog, name)
            times.append(time.perf_counter() - t0)
        print(f"{command} {name}: {res.total} site(s), median {1000 * statistics.median(times):.0f} ms")
    shutil.rmtree(work.parent, ignore_errors=True)


if __name__ == "__main__":
    main()

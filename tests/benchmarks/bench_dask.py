"""A full index spread over a Dask LocalCluster (ASSAY_DASK=local:N, through Prefect's DaskTaskRunner) with N=1 and
N=2 workers, runs interleaved on fresh copies of one sdist, beside the default in-process run.

    python -m tests.benchmarks.bench_dask [--sdist django==5.2.7] [--workers 1,2] [--repeats 1]

Each run is a fresh `assay index --json` process. The Dask runs use Prefect (a temporary server unless
PREFECT_API_URL is set; its start is inside the figure, as a user would see it). Prints wall seconds per
configuration (median over repeats) and the ratio of each to N=1. On one machine the workers share its cores
(each embedding task gets cores/N onnxruntime threads), so the ratio says what the fan-out costs or saves here;
more machines need a scheduler (ASSAY_DASK=tcp://host:8786) whose workers see the workspace at the same path.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from tests.benchmarks.common import median, sdist

ASSAY = os.path.join(os.path.dirname(sys.executable), "assay")


def index_once(requirement: str, dask: str) -> tuple[float, dict]:
    root = sdist(requirement)
    env = {**os.environ, "ASSAY_DASK": dask, "ASSAY_ORCHESTRATION": "prefect" if dask else "direct"}
    start = time.perf_counter()
    done = subprocess.run([ASSAY, "index", "--json", str(root)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"assay index ({dask or 'in-process'}) failed: {done.stderr.strip().splitlines()[-1:]}")
    return wall, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", default="django==5.2.7")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    configs = [""] + [f"local:{n}" for n in args.workers.split(",")]
    walls: dict[str, list[float]] = {c: [] for c in configs}
    passages = 0
    for _ in range(args.repeats):
        for config in configs:  # interleaved: every configuration sees the same load on shared cores
            wall, report = index_once(args.sdist, config)
            walls[config].append(wall)
            passages = report["entities_total"]
            print(f"  {config or 'in-process':10s} {wall:7.1f} s", flush=True)
    base = median(walls[configs[1]])
    print(f"\n{args.sdist}: {passages} passages, {os.cpu_count()} cores, median of {args.repeats}")
    print("| configuration | wall s | ratio to local:1 |\n|---|---|---|")
    for config in configs:
        print(f"| {config or 'in-process (default)'} | {median(walls[config]):.1f} | {median(walls[config]) / base:.2f} |")


if __name__ == "__main__":
    main()

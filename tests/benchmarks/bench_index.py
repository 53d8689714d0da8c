"""Index throughput per stage, full vs incremental re-index, and peak memory, on the pytest 8.4.2 sdist.

    python -m tests.benchmarks.bench_index [--repeats 1]

Each run is a fresh process (`assay index --json`, direct orchestration) so peak RSS is per run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from tests.benchmarks.common import median, sdist

ASSAY = str(Path(sys.executable).with_name("assay"))


def run(args: list[str]) -> tuple[dict, float, float]:
    env = {**os.environ, "ASSAY_ORCHESTRATION": os.environ.get("ASSAY_ORCHESTRATION", "direct")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run([ASSAY, "index", "--json", *args], capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return json.loads(done.stdout), wall, max(peak, before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--requirement", default="pytest==8.4.2")
    opts = parser.parse_args()
    fulls, incs, peaks = [], [], []
    for _ in range(opts.repeats):
        root = sdist(opts.requirement)
        full, wall_full, peak = run([str(root)])
        target = root / "src" / "_pytest" / "python_api.py"
        if not target.exists():
            target = next(root.rglob("*.py"))
        target.write_text(target.read_text() + "\n\ndef bench_added_function():\n    return 1\n")
        inc, wall_inc, _ = run([str(root)])
        fulls.append((full, wall_full))
        incs.append((inc, wall_inc))
        peaks.append(peak)
    full, wall_full = fulls[-1]
    inc, wall_inc = incs[-1]
    t = full["timings"]
    files = full["files_parsed"]
    ents = full["entities_embedded"]
    print(f"corpus: {opts.requirement} ({files} files parsed, {ents} entities, {full['files_seen']} files seen)")
    print(f"full index wall (median of {opts.repeats}): {median([w for _, w in fulls]):.1f} s")
    print(f"  discover {t['discover']:.2f} s | parse {t['parse']:.2f} s ({files / max(t['parse'], 1e-9):.0f} files/s, "
          f"{ents / max(t['parse'], 1e-9):.0f} entities/s)")
    print(f"  embed {t['embed']:.1f} s ({ents / max(t['embed'], 1e-9):.1f} entities/s) | store {t['store']:.1f} s "
          f"({ents / max(t['store'], 1e-9):.0f} entities/s) | purge+BM25 {t['purge']:.2f} s")
    print(f"  end to end: {files / wall_full:.1f} files/s, {ents / wall_full:.1f} entities/s")
    print(f"incremental re-index after a one-file change: {median([w for _, w in incs]):.2f} s wall, "
          f"{inc['files_parsed']} file parsed, {inc['entities_embedded']} entities embedded")
    print(f"ratio incremental/full: {median([w for _, w in incs]) / median([w for _, w in fulls]):.3f}")
    print(f"peak RSS of an index process: {max(peaks):.0f} MiB")


if __name__ == "__main__":
    main()

"""Index throughput per stage, time to BM25-queryable, full vs incremental re-index, and peak memory,
per embedder, on the pytest 8.4.2 sdist.

    python -m tests.benchmarks.bench_index [--repeats 1] [--embedders minilm,static]

Each run is a fresh process (`assay index --json`, direct orchestration) so peak RSS is per run.
"BM25-queryable" is when the manifest first appears (the lexical phase committed), counted from the
process start; dense vectors fill in after it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.benchmarks.common import median, sdist

ASSAY = str(Path(sys.executable).with_name("assay"))


def run(root: Path, embedder: str) -> tuple[dict, float, float, float | None]:
    """(report, wall seconds, peak RSS MiB, seconds until BM25-queryable or None when it already was)."""
    env = {**os.environ, "ASSAY_ORCHESTRATION": os.environ.get("ASSAY_ORCHESTRATION", "direct"), "ASSAY_EMBEDDER": embedder}
    manifest = root / ".assay" / "manifest.json"
    existed = manifest.exists()
    start = time.perf_counter()
    proc = subprocess.Popen([ASSAY, "index", "--json", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    queryable = None
    peak_kib = 0
    while proc.poll() is None:
        if queryable is None and not existed and manifest.exists():
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
    return json.loads(out), wall, peak_kib / 1024, queryable if queryable is not None or existed else wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--requirement", default="pytest==8.4.2")
    parser.add_argument("--embedders", default="minilm,static", help="comma-separated ASSAY_EMBEDDER values")
    opts = parser.parse_args()
    for embedder in opts.embedders.split(","):
        fulls, incs, peaks, ready = [], [], [], []
        for _ in range(opts.repeats):
            root = sdist(opts.requirement)
            full, wall_full, peak, queryable = run(root, embedder)
            target = root / "src" / "_pytest" / "python_api.py"
            if not target.exists():
                target = next(root.rglob("*.py"))
            target.write_text(target.read_text() + "\n\ndef bench_added_function():\n    return 1\n")
            inc, wall_inc, _, _ = run(root, embedder)
            fulls.append((full, wall_full))
            incs.append((inc, wall_inc))
            peaks.append(peak)
            ready.append(queryable)
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
              f"{inc['files_parsed']} file parsed, {inc['entities_embedded']} entities embedded")
        print(f"ratio incremental/full: {median([w for _, w in incs]) / median([w for _, w in fulls]):.3f}")
        print(f"peak RSS of an index process: {max(peaks):.0f} MiB")


if __name__ == "__main__":
    main()

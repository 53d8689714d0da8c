"""Store-only scaling: Chroma upsert rate and query latency, BM25 build and query, at 10k/100k(/1M) entities.

    python -m tests.benchmarks.bench_store_scale [--sizes 10000,100000] [--queries 200]

Synthetic entities (random unit vectors, short bodies from a code-like vocabulary), no embedding time.
1M takes ~1 h on 2 cores and ~3 GB of disk; pass --sizes 10000,100000,1000000 to include it.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from assay.stages.core.artifacts import EmbeddedBatch, Entity
from assay.stages.index.lexical import LexicalIndex
from assay.stages.index.store import VectorStore
from tests.benchmarks.common import median, pct

WORDS = ("get set parse load save request response session cookie retry backoff config cache token user path file "
         "stream buffer socket thread lock queue index query judge report entity fixture marker plugin hook").split()


def synthetic(n: int, rng: np.random.Generator) -> list[Entity]:
    out = []
    for i in range(n):
        words = rng.choice(WORDS, size=12)
        name = f"{words[0]}_{words[1]}_{i}"
        out.append(Entity(id=f"e{i}", kind="function", name=name, qualname=name, signature=f"def {name}(x)",
                          body=f"def {name}(x):\n    " + " ".join(words), start_line=1, end_line=2,
                          language="python", file=f"m{i % 1000}.py", content_hash=str(i)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'entities':>9} | {'upsert/s':>9} | {'query p50':>9} | {'query p95':>9} | {'BM25 build':>10} | {'BM25 p50':>8} | disk")
    base = None
    for n in [int(x) for x in opts.sizes.split(",")]:
        root = Path(tempfile.mkdtemp(prefix="assay-scale-"))
        ents = synthetic(n, rng)
        vecs = rng.standard_normal((n, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store = VectorStore(root, None, "scale")
        start = time.perf_counter()
        for s in range(0, n, 5000):
            ids = [e.id for e in ents[s : s + 5000]]
            store.upsert(EmbeddedBatch(embedder="x", dimension=384, ids=ids, vectors=vecs[s : s + 5000].tolist()), 5000)
        rate = n / (time.perf_counter() - start)
        lat = []
        for q in rng.standard_normal((opts.queries, 384)).astype(np.float32):
            t0 = time.perf_counter()
            store.query((q / np.linalg.norm(q)).tolist(), 30)
            lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        lex = LexicalIndex.build([e.id for e in ents], [e.lexical_text() for e in ents])
        build = time.perf_counter() - t0
        blat = []
        for _ in range(opts.queries):
            t0 = time.perf_counter()
            lex.search(" ".join(rng.choice(WORDS, size=3)), 30)
            blat.append(time.perf_counter() - t0)
        disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20
        p50 = median(lat) * 1000
        base = base or p50
        print(f"{n:>9} | {rate:>9.0f} | {p50:>7.1f}ms | {pct(lat, 0.95) * 1000:>7.1f}ms | {build:>9.1f}s | "
              f"{median(blat) * 1000:>6.1f}ms | {disk:.0f} MiB (query p50 x{p50 / base:.1f} vs smallest)")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

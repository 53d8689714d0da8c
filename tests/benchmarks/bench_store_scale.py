"""Store scaling: vector upsert rate, query latency (p50/p95) and memory, BM25 build, query and memory, at 10k/100k(/1M)
passages, in the embedded store or a Chroma server.

    python -m tests.benchmarks.bench_store_scale [--sizes 10000,100000] [--queries 200] [--server] [--real]

`--server` starts `chroma run` on loopback (its data in a temporary folder) and goes through `ASSAY_CHROMA_URL`'s
client; the server's resident memory is read from /proc after loading and querying. `--real` draws the
passages (names, paths, bodies) from the catalogs of the indexes `assay eval` leaves (ASSAY_EVAL_DIR/corpora),
repeated under new ids to reach each size, so BM25 sees realistic lengths and vocabulary; otherwise short synthetic
bodies. Vectors are random unit vectors (no embedding time). BM25 memory is this process's resident memory growth from
building the index (kept alive). 1M takes ~1 h on 2 cores and ~3 GB of disk; pass --sizes 10000,100000,1000000 for it.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from assay.flows.evaluate import eval_home
from assay.stages.core.artifacts import EmbeddedBatch, Entity
from assay.stages.index.lexical import LexicalIndex
from assay.stages.index.store import VectorStore
from tests.benchmarks.common import median, pct
from tests.processes import ChromaServer

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


def real(n: int) -> list[Entity]:
    """`n` passages cycled from the evaluation indexes' catalogs, each copy under its own id and folder."""
    from assay.stages.index.store import Catalog

    corpora = eval_home() / "corpora"
    source = [e for root in sorted(corpora.glob("*/")) if (root / ".assay").exists() for e in Catalog(root).all()]
    if not source:
        raise SystemExit(f"no indexes under {corpora}: run `assay eval --suite swe-qa` once, or drop --real")
    out = []
    for i in range(n):
        e = source[i % len(source)]
        out.append(e.model_copy(update={"id": f"e{i}", "file": f"copy{i // len(source)}/{e.file}"}))
    return out


def rss_mib() -> float:
    """This process's resident memory now."""
    status = Path("/proc/self/status").read_text()
    return next(int(ln.split()[1]) / 1024 for ln in status.splitlines() if ln.startswith("VmRSS"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--server", action="store_true", help="a `chroma run` server on loopback")
    parser.add_argument("--real", action="store_true", help="passages from the evaluation indexes' catalogs")
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"store: {'chroma run on loopback' if opts.server else 'embedded'}; passages: {'real' if opts.real else 'synthetic'}")
    print("| passages | upsert/s | dense p50 | dense p95 | server RSS | BM25 build | BM25 p50 | BM25 p95 | BM25 RSS | disk |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in [int(x) for x in opts.sizes.split(",")]:
        root = Path(tempfile.mkdtemp(prefix="assay-scale-"))
        server = ChromaServer(root / "server").start() if opts.server else None
        try:
            ents = real(n) if opts.real else synthetic(n, rng)
            vecs = rng.standard_normal((n, 384)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            store = VectorStore(root, server.url if server else None, "scale")
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
            server_rss = f"{server.rss_mib():.0f} MiB" if server else "-"
            before = rss_mib()
            t0 = time.perf_counter()
            lex = LexicalIndex.build([e.id for e in ents], [e.lexical_text() for e in ents])
            build = time.perf_counter() - t0
            queries = [" ".join(rng.choice(WORDS, size=3)) for _ in range(opts.queries)] if not opts.real else \
                [" ".join(rng.choice(ents[int(rng.integers(len(ents)))].lexical_text().split()[:60], size=6)) for _ in range(opts.queries)]
            blat = []
            for query in queries:
                t0 = time.perf_counter()
                lex.search(query, 30)
                blat.append(time.perf_counter() - t0)
            bm25_rss = rss_mib() - before  # the index, alive
            disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20
            print(f"| {n:,} | {rate:,.0f} | {median(lat) * 1000:.1f} ms | {pct(lat, 0.95) * 1000:.1f} ms | {server_rss} | "
                  f"{build:.1f} s | {median(blat) * 1000:.1f} ms | {pct(blat, 0.95) * 1000:.1f} ms | +{bm25_rss:.0f} MiB | "
                  f"{disk:.0f} MiB |", flush=True)
        finally:
            if server:
                server.stop()
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

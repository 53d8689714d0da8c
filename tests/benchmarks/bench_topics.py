"""Questions in words on languages the dev sets lack: semble's metric on packages in Go, Rust, Ruby, PHP, Lua...

    python -m tests.benchmarks.bench_topics [--topics gin,regex] [--ablate] [--misses]

The semble suite's dev repositories are Python, JavaScript and TypeScript; the benchmark's other 58 (in 19
languages) are held out. `bench_languages` samples queries from the code itself (names, doc sentences, messages),
which a question in words is not. So each file in `topics/` holds questions in the semble style ("panic recovery
middleware", "how are routes matched against the request path"), written from what each package is known to do,
with the file that answers each as its target (`relevant`, `secondary`: a path suffix). They were written before
Assay was run on them, and are not to be edited to suit it. Each is scored as the semble suite scores: NDCG@10
over the search door's passages, beside plain BM25 over the same passages in the same run, and (`--ablate`) with
each rank signal switched off. It prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

TOPICS = Path(__file__).with_name("topics")

# topic file -> (registry, package@version), fetched as `bench_languages` fetches them
PACKAGES: dict[str, tuple[str, str]] = {
    "gin": ("debian", "golang-github-gin-gonic-gin-dev@1.8.1-1"),
    "regex": ("debian", "librust-regex-dev@1.7.1-1"),
    "rack": ("debian", "ruby-rack@2.2.22-0+deb12u1"),
    "symfony-console": ("debian", "php-symfony-console@5.4.53+dfsg-0+deb12u1"),
    "penlight": ("debian", "lua-penlight@1.13.1-3"),
    "jpype": ("pypi", "JPype1@1.7.1"),
    "pythonnet": ("pypi", "pythonnet@3.2.1"),
    "zig-std": ("wheel", "ziglang@0.17.1"),
    "lz4": ("pypi", "lz4@4.4.5"),
    "expo-modules-core": ("npm", "expo-modules-core@1.12.26"),
    "elixir": ("debian-source", "elixir-lang@1.14.0.dfsg-2"),
    "fmt": ("debian-source", "fmtlib@9.1.0+ds1-2"),  # C++ (headers and sources)
    "aeson": ("debian-source", "haskell-aeson@2.0.3.0-1"),  # Haskell
    "scala-library": ("debian-source", "scala@2.11.12-5"),  # Scala's standard library
}
# a wheel's or tarball's members to unpack (the whole Zig toolchain is ~300 MB): the std folders `bench_languages` indexes
INCLUDE: dict[str, tuple[str, ...]] = {
    "zig-std": tuple(f"ziglang/lib/std/{d}" for d in ("json", "http", "fmt", "hash", "heap", "compress", "Random", "math")),
    "elixir": ("elixir-1.14.0/lib",),  # the repository's lib/: Elixir's library, its tests and the compiler's Erlang
    "scala-library": ("scala-2.11.12/src/library",),  # the library, not the compiler or its 9k test files
}


def load(topic: str) -> list:
    from assay.stages.evaluate.semble import read_queries

    return read_queries(TOPICS / f"{topic}.json", topic)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", default=",".join(PACKAGES), help="topic files to run, comma-separated")
    parser.add_argument("--ablate", action="store_true", help="also Assay with each rank signal switched off")
    parser.add_argument("--misses", action="store_true", help="print each query Assay scores below 1 and its top 3 files")
    args = parser.parse_args()

    from assay.flows.index import run_index
    from assay.stages.core.config import Settings
    from assay.stages.evaluate.runs import evaluate_semble
    from tests.benchmarks.bench_languages import unpack

    settings = Settings(orchestration="direct")
    rows: list[dict] = []
    for topic in args.topics.split(","):
        registry, package = PACKAGES[topic]
        root = unpack(package, registry, reuse=True, include=INCLUDE.get(topic, ()))
        run_index(str(root), settings)  # incremental: nothing to do when the last run's index is current
        found = evaluate_semble(root, topic, load(topic), settings, ablate=args.ablate)
        rows += [r for r in found if r["config"] != "hybrid (RRF)"]
    configs = list(dict.fromkeys(r["config"] for r in rows))
    topics = list(dict.fromkeys(r["repo"] for r in rows))
    print(f"{'configuration':24s} {'mean':>6s} " + " ".join(f"{t[:9]:>9s}" for t in topics) + f" {'arch':>6s} {'sem':>6s}")
    for config in configs:
        mine = [r for r in rows if r["config"] == config]
        per_topic = [statistics.mean(r["ndcg"] for r in mine if r["repo"] == t) for t in topics]
        per_cat = [statistics.mean([r["ndcg"] for r in mine if r["category"] == c] or [0.0]) for c in ("architecture", "semantic")]
        print(f"{config:24s} {statistics.mean(r['ndcg'] for r in mine):6.3f} " + " ".join(f"{v:9.3f}" for v in per_topic)
              + "".join(f" {v:6.3f}" for v in per_cat))
    print(f"queries: {sum(1 for r in rows if r['config'] == 'assay')} in {len(topics)} packages")
    if args.misses:
        for r in rows:
            if r["config"] == "assay" and r["ndcg"] < 1.0:
                print(f"  {r['ndcg']:.3f} {r['repo']}: {r['query']!r} -> {[f.rsplit('/', 2)[-2:] for f in r['top']]}")


if __name__ == "__main__":
    main()

"""How much of each language's code graph resolves: the share of call and inheritance edges `Graph.resolve` ties to
a definition, with the file's imports and without them, on the `bench_topics` packages.

    python -m tests.benchmarks.bench_resolution [--topics rack,penlight] [--sample 3000]

An unresolved edge is shown as unresolved, never guessed, so this share is what `callers`, `callees` and `impact`
can follow. "without imports" drops each file's import edges: the difference is what reading imports adds. It
prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import random

# file extension -> language, for the languages of the bench_topics packages
EXTENSIONS = {".go": "Go", ".rs": "Rust", ".rb": "Ruby", ".php": "PHP", ".lua": "Lua", ".py": "Python", ".java": "Java",
              ".c": "C", ".cpp": "C++", ".cs": "C#", ".zig": "Zig", ".kt": "Kotlin", ".swift": "Swift", ".ex": "Elixir",
              ".ts": "TypeScript"}


def main() -> None:
    from tests.benchmarks.bench_topics import INCLUDE, PACKAGES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", default=",".join(PACKAGES), help="bench_topics packages to read, comma-separated")
    parser.add_argument("--sample", type=int, default=3000, help="edges sampled per language and package (seeded)")
    args = parser.parse_args()

    from assay.flows.index import run_index
    from assay.stages.core.config import Settings
    from assay.stages.index.store import Catalog
    from assay.stages.query.graph import Graph
    from tests.benchmarks.bench_languages import unpack

    settings = Settings(orchestration="direct")
    print(f"{'package':18s} {'language':10s} {'edges':>6s} {'without imports':>16s} {'with imports':>13s}")
    for topic in args.topics.split(","):
        registry, package = PACKAGES[topic]
        root = unpack(package, registry, reuse=True, include=INCLUDE.get(topic, ()))
        run_index(str(root), settings)
        catalog = Catalog(root)
        try:
            by_language: dict[str, list] = {}
            for file, edge in catalog.edges(kinds=("call", "inherit")):
                language = EXTENSIONS.get(file[file.rfind("."):])
                if language:
                    by_language.setdefault(language, []).append((file, edge))
            for language, edges in sorted(by_language.items(), key=lambda kv: -len(kv[1])):
                if len(edges) < 100:
                    continue
                sample = random.Random(0).sample(edges, min(args.sample, len(edges)))
                shares = []
                for with_imports in (False, True):
                    graph = Graph(catalog)
                    if not with_imports:
                        graph.imports = lambda file: ()  # type: ignore[method-assign]
                    shares.append(sum(1 for f, e in sample if graph.resolve(f, e)) / len(sample))
                print(f"{topic[:18]:18s} {language:10s} {len(sample):6d} {shares[0]:16.3f} {shares[1]:13.3f}")
        finally:
            catalog.close()


if __name__ == "__main__":
    main()

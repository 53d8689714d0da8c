"""Train the query adapter (`stages.query.query_adapter`) on `rank_training/`'s questions.

    python -m tests.benchmarks.train_query_adapter --collect   # read the twelve indexed sdists, rebuild adapter_set.npz
    python -m tests.benchmarks.train_query_adapter --cv        # leave one package out: the dense list's answer ranks
    python -m tests.benchmarks.train_query_adapter --write     # fit on adapter_set.npz, rebuild data/query_adapter.npy
    python -m tests.benchmarks.train_query_adapter             # fit and say whether the shipped file is the same
    python -m tests.benchmarks.train_query_adapter --held-out  # the shipped adapter on code it never saw

`--collect` needs the sdists indexed with the default embedder (`train_learned_rank --collect` does that): it keeps
every passage's stored vector (int8) and each question's vector with the rows of its answer. The fit reads only that
file, so `--write` rebuilds the shipped matrix byte for byte.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from assay.stages.evaluate.adapter_training import (AdapterPackage, adapter_bytes, answer_ranks, fit_adapter,
                                                    load_packages, quantised, save_packages)
from assay.stages.query import query_adapter
from assay.stages.query.learned_rank import applies
from assay.stages.query.query_adapter import ADAPTER_PATH
from tests.benchmarks.train_learned_rank import HELD_OUT, HERE, answer_at, train_home, write_or_compare

SET = HERE / "adapter_set.npz"


def collect(folder: Path = HERE) -> list[AdapterPackage]:
    from assay.stages.core.config import Settings
    from assay.stages.evaluate.sdists import prepare_corpus
    from assay.stages.index.embed import index_embedder
    from assay.stages.index.store import Catalog, VectorStore, load_manifest

    settings = Settings()
    packages = []
    for path in sorted(folder.glob("*.jsonl")):
        questions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        name, version = path.stem.rsplit("-", 1)
        root = prepare_corpus(f"{name}=={version}", train_home())
        manifest = load_manifest(root)
        entities = list(Catalog(root).all())
        collection = VectorStore(root, settings.chroma_url, manifest.collection).collection
        vectors: dict[str, list[float]] = {}
        for start in range(0, len(entities), 2000):
            got = collection.get(ids=[e.id for e in entities[start:start + 2000]], include=["embeddings"])
            vectors.update(zip(got["ids"], got["embeddings"]))
        entities = sorted((e for e in entities if e.id in vectors), key=lambda e: e.id)
        by_file: dict[str, list] = {}
        for e in entities:
            by_file.setdefault(e.file, []).append(e)
        kept, answers = [], []
        for q in questions:
            answer = answer_at(by_file, q["primary_entity"])
            if answer is None or not applies(q["question"]):
                continue
            kept.append(q["question"])
            answers.append([i for i, e in enumerate(entities) if (e.file, e.qualname) == (answer.file, answer.qualname)])
        asked, _ = index_embedder(manifest.embedder, settings).embed(kept)
        packages.append(AdapterPackage(path.stem, quantised(np.array([vectors[e.id] for e in entities], dtype=np.float64)),
                                       np.asarray(asked, dtype=np.float32), answers))
        print(f"{path.stem}: {len(entities)} passages, {len(kept)} questions", flush=True)
    return packages


def summary(ranks: list[int]) -> str:
    r = np.array(ranks)
    return f"top 10 {np.mean(r <= 10):.2f}, top 60 {np.mean(r <= 60):.2f}, MRR {np.mean(1 / r):.3f}"


def compare(turned_by: Iterable[tuple[AdapterPackage, np.ndarray]], label: str) -> None:
    """Each package's answer ranks in the dense list, unturned and turned by its matrix, and all of them together."""
    before, after = [], []
    for package, matrix in turned_by:
        unturned, turned = answer_ranks(None, package), answer_ranks(matrix, package)
        before += unturned
        after += turned
        print(f"{package.name}: {summary(unturned)} -> {summary(turned)}", flush=True)
    print(f"{label}, the dense list: {summary(before)} -> {summary(after)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collect", action="store_true", help="rebuild adapter_set.npz from the indexed sdists")
    parser.add_argument("--cv", action="store_true", help="leave one package out and print the answer ranks")
    parser.add_argument("--write", action="store_true", help="rebuild data/query_adapter.npy from adapter_set.npz")
    parser.add_argument("--held-out", action="store_true", help="the dense list's answer ranks without and with the "
                        "shipped adapter on the held-out questions (`train_learned_rank --collect --held-out` indexes them)")
    args = parser.parse_args()
    if args.held_out:
        shipped = query_adapter.shipped().astype(np.float64)
        compare([(package, shipped) for package in collect(HELD_OUT)], "held out")
        return
    if args.collect:
        save_packages(collect(), SET)
        print(f"wrote {SET}")
    packages = load_packages(SET)
    if args.cv:
        compare(((held, fit_adapter([p for p in packages if p is not held])) for held in packages), "out of fold")
    write_or_compare(ADAPTER_PATH, adapter_bytes(fit_adapter(packages)), args.write, "adapter_set.npz")


if __name__ == "__main__":
    main()

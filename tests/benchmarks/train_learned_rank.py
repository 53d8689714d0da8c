"""Train the learned order for questions in words (`stages.query.learned_rank`) on `rank_training/`.

    python -m tests.benchmarks.train_learned_rank --collect   # fetch and index the twelve sdists, rebuild the pools
    python -m tests.benchmarks.train_learned_rank --write     # fit on the pools, rebuild data/learned_rank.json
    python -m tests.benchmarks.train_learned_rank             # fit and say whether the shipped file is the same
    python -m tests.benchmarks.train_learned_rank --held-out  # the shipped order on questions about code it never saw

`--collect` downloads each sdist once (pip, into `ASSAY_TRAIN_DIR`, default `~/.assay/train`), indexes it with the
default embedder, and keeps for each question the rank stage's first `DEPTH` passages as feature rows with the
answer's positions (`rank_training/pools.npz`). The fit reads only that file, so `--write` rebuilds the shipped
weights byte for byte; the dev-set figures come from `assay eval` (the `search` and `ask` rows) with the model on.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from assay.stages.evaluate.rank_training import Pool, fit, load_pools, model_json, save_pools
from assay.stages.query import query_adapter
from assay.stages.query.learned_rank import (DEPTH, MODEL_PATH, RankModel, applies, features, load_model, model_order,
                                             movable)

HERE = Path(__file__).resolve().parent / "rank_training"
POOLS = HERE / "pools.npz"
# Questions about fourteen more sdists that neither the learned order nor the query adapter was fitted on: their
# pools (collected with the shipped adapter) measure both on code they never saw.
HELD_OUT = Path(__file__).resolve().parent / "rank_held_out"


def train_home() -> Path:
    return Path(os.environ.get("ASSAY_TRAIN_DIR", Path.home() / ".assay" / "train"))


def answer_at(entities: dict[str, list], primary: dict):
    """The innermost indexed definition at the answer's first line: the writers' qualified names are Python's,
    spelt as the index spells them or not."""
    found = None
    for e in entities.get(primary["file"], []):
        if e.part == 0 and e.kind in ("function", "method", "class") and e.start_line <= primary["start_line"] <= e.end_line:
            if found is None or e.end_line - e.start_line < found.end_line - found.start_line:
                found = e
    return found


def held_out_adapters(stems: list[str]) -> dict[str, np.ndarray]:
    """The query adapter each package's pools are collected with: for one of the adapter's training packages, the
    adapter fitted on the other eleven; for any other package (`HELD_OUT`'s), the shipped one, which never saw it.
    A pool so shows the learned order the dense list and the turned similarity as they are on code the adapter
    never saw."""
    from assay.stages.evaluate.adapter_training import fit_adapter, load_packages

    packages = {p.name: p for p in load_packages(HERE / "adapter_set.npz")}
    return {stem: fit_adapter([p for name, p in packages.items() if name != stem]) if stem in packages
            else query_adapter.shipped() for stem in stems}


def collect(folder: Path = HERE) -> list[Pool]:
    """Index each of `folder`'s sdists and keep its questions' pools."""
    from assay.flows.evaluate import measured
    from assay.flows.index import index_pipeline
    from assay.flows.runtime import direct_call
    from assay.stages.core.config import Settings
    from assay.stages.evaluate.sdists import prepare_corpus
    from assay.stages.index.embed import index_embedder
    from assay.stages.index.store import Catalog, load_manifest
    from assay.stages.query.rank import RankConfig
    from assay.stages.query.retrieve import retrieve

    settings = Settings()
    pools: list[Pool] = []
    paths = sorted(folder.glob("*.jsonl"))
    adapters = held_out_adapters([path.stem for path in paths])
    for path in paths:
        questions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        name, version = path.stem.rsplit("-", 1)
        root = prepare_corpus(f"{name}=={version}", train_home())
        index_pipeline(str(root), measured(settings), call=direct_call)
        manifest = load_manifest(root)
        embedder = index_embedder(manifest.embedder, settings)
        entities: dict[str, list] = {}
        for e in Catalog(root).all():
            entities.setdefault(e.file, []).append(e)
        kept = 0
        for q in questions:
            answer = answer_at(entities, q["primary_entity"])
            if answer is None or not applies(q["question"]):
                continue
            with query_adapter.fitted(adapters[path.stem]):
                ranked = retrieve(root, q["question"], manifest, embedder, pool=DEPTH, chroma_url=settings.chroma_url,
                                  ranking=RankConfig(learned=False)).candidates
            x = np.array(features(q["question"], ranked), dtype=np.float64).reshape(len(ranked), -1)
            pools.append(Pool(q["id"], x, [i for i, c in enumerate(ranked) if (c.file, c.entity) == (answer.file, answer.qualname)],
                              [movable(c) for c in ranked]))
            kept += 1
        print(f"{path.stem}: {kept} of {len(questions)} questions, answer in the pool for "
              f"{sum(1 for p in pools[-kept:] if p.answer)}", flush=True)
    return pools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collect", action="store_true", help="index the training sdists and rebuild the pools")
    parser.add_argument("--write", action="store_true", help="rebuild data/learned_rank.json from the pools")
    parser.add_argument("--held-out", action="store_true", help="the shipped order on the held-out questions' pools "
                        "(with --collect: index their sdists and rebuild those pools first)")
    args = parser.parse_args()
    if args.held_out:
        if args.collect:
            save_pools(collect(HELD_OUT), HELD_OUT / "pools.npz")
        report_held_out(load_pools(HELD_OUT / "pools.npz"))
        return
    if args.collect:
        save_pools(collect(), POOLS)
        print(f"wrote {POOLS}")
    pools = load_pools(POOLS)
    text = model_json(fit(pools))
    top10 = sum(1 for p in pools if p.answer and min(p.answer) < 10)
    print(f"{len(pools)} questions, the answer in the pool for {sum(1 for p in pools if p.answer)}, "
          f"in the rank stage's top 10 for {top10}")
    write_or_compare(MODEL_PATH, text.encode("utf-8"), args.write, "these pools")


def top_ten(pools: list[Pool], model: RankModel | None) -> int:
    """How many pools hold the answer in the first ten, in the rank stage's order or re-ordered by `model` (as
    `learned_rank.reorder` does: only the passages it may move change places)."""
    count = 0
    for pool in pools:
        order = model_order(model, pool.x, pool.movable) if model is not None else list(range(len(pool.x)))
        count += bool(pool.answer) and min(order.index(a) for a in pool.answer) < 10
    return count


def report_held_out(pools: list[Pool]) -> None:
    model = load_model()
    print(f"{'package':20s} {'questions':>9s} {'in pool':>7s} {'rank stage top 10':>17s} {'learned order top 10':>20s}")
    by_package: dict[str, list[Pool]] = {}
    for pool in pools:
        by_package.setdefault(pool.question_id.rsplit("-", 1)[0], []).append(pool)
    for name, group in [*sorted(by_package.items()), ("all", pools)]:
        print(f"{name:20s} {len(group):9d} {sum(1 for p in group if p.answer):7d} {top_ten(group, None):17d} "
              f"{top_ten(group, model):20d}")


def write_or_compare(path: Path, data: bytes, write: bool, source: str) -> None:
    """Write the shipped file, or say whether it is byte for byte what `source` fits."""
    if write:
        path.write_bytes(data)
        print(f"wrote {path}")
    else:
        same = path.exists() and path.read_bytes() == data
        print(f"{path} {'is' if same else 'is NOT'} what a fit on {source} gives")


if __name__ == "__main__":
    main()

"""Dump what the judge sees for every SWE-QA dev question: the ranked pool, in the order the judge is handed it.

    python -m tests.benchmarks.judge_pools [--corpora sphinx,pylint,...] [--depth 15]
    python -m tests.benchmarks.judge_pools --sets axios,gin,...   # bench_questions' held-out sets instead
    python -m tests.benchmarks.judge_pools --python               # the eight Python packages' sets (`python_questions/`)

Writes `~/.assay/eval/judge_pools/<corpus>.jsonl`, one line per question: the question, its gold (primary and all
gold entities), and the first `--depth` entities of the ranked pool (one row each, the same ordering `ask` uses),
each a full `Candidate` (body, facts and retrieval signals), so the judge can be re-run offline on them. These pools
are what `judge_labels/` labels (a passage of each, read by hand) and what `bench_judge_calibration` fits on. Needs
the indexes `assay eval` leaves.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from assay.flows.evaluate import default_questions_dir, eval_home
from assay.stages.core.config import Settings
from assay.stages.evaluate import metrics as ev
from assay.stages.evaluate.runs import answerable_questions
from assay.stages.evaluate.sdists import prepare_corpus
from assay.stages.index.embed import embedder_for
from assay.stages.index.store import load_manifest
from assay.stages.query.retrieve import ranking_for, retrieve

CORPORA = ("requests", "pytest", "xarray", "sphinx", "pylint")
PYTHON_QUESTIONS = Path(__file__).resolve().parent / "python_questions"


def python_sets() -> list[str]:
    return sorted(p.stem for p in PYTHON_QUESTIONS.glob("*.jsonl"))


def pools_dir() -> Path:
    return eval_home() / "judge_pools"


def gold_flags(c: dict, q: ev.Question) -> dict:
    """is_primary: the primary entity by qualified name or by line overlap; is_gold: any gold entity by name."""
    primary = q.primary is not None and (c["file"], c["entity"]) == (q.primary.file, q.primary.qualname)
    if not primary and q.primary is not None and q.primary_span is not None and c["file"] == q.primary.file:
        primary = c["kind"] != "file" and c["start_line"] <= q.primary_span[1] and c["end_line"] >= q.primary_span[0]
    gold = primary or any((c["file"], c["entity"]) == (g.file, g.qualname) for g in q.gold_entities)
    return {"is_primary": bool(primary), "is_gold": bool(gold)}


def dump(corpus: str, depth: int, settings: Settings, kind: str = "dev") -> Path:
    """One corpus's pools, by `kind`: `dev` (a SWE-QA dev set), `held-out` (one of `bench_questions`' sets on other code
    bases) or `python` (one of the sets written on eight more Python packages, `python_questions/`); written to
    `pools_dir()`, the latter two in a folder of their kind's name."""
    if kind == "held-out":
        from tests.benchmarks.bench_questions import QUESTIONS, source_tree

        path = QUESTIONS / f"{corpus}.jsonl"
        root = source_tree(json.loads(path.read_text().splitlines()[0])["package"])
    elif kind == "python":
        path = PYTHON_QUESTIONS / f"{corpus}.jsonl"
        root = prepare_corpus(ev.question_set_package(path), eval_home())  # where `assay eval` indexes them too
    else:
        path = default_questions_dir() / f"{corpus}.jsonl"
        root = prepare_corpus(ev.question_set_package(path), eval_home())
    manifest = load_manifest(root)
    embedder = embedder_for(settings)
    ranking = ranking_for(settings)
    out = pools_dir() / ("" if kind == "dev" else kind) / f"{corpus}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for q in answerable_questions(path, None):
            res = retrieve(root, q.text, manifest, embedder, pool=max(30, settings.pool_size), chroma_url=settings.chroma_url,
                           ranking=ranking)
            seen: set[tuple[str, str, str]] = set()
            pool = []
            for c in res.candidates:
                key = (c.file, c.entity, c.kind)
                if key in seen:
                    continue
                seen.add(key)
                row = c.model_dump(mode="json")
                row.update(gold_flags(row, q))
                pool.append(row)
                if len(pool) >= depth:
                    break
            fh.write(json.dumps({
                "corpus": corpus, "id": q.id, "question": q.text, "named": q.named,
                "primary": [q.primary.file, q.primary.qualname] if q.primary else None,
                "gold": [[g.file, g.qualname] for g in q.gold_entities], "pool": pool,
            }) + "\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--sets", help="bench_questions' held-out sets (comma-separated) instead of the SWE-QA dev sets")
    ap.add_argument("--python", action="store_true", help="the eight Python packages' sets (python_questions/) instead")
    ap.add_argument("--depth", type=int, default=15)
    args = ap.parse_args()
    settings = Settings()
    kind = "python" if args.python else "held-out" if args.sets else "dev"
    for corpus in python_sets() if args.python else (args.sets or args.corpora).split(","):
        print(dump(corpus, args.depth, settings, kind))


if __name__ == "__main__":
    main()

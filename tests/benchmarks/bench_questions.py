"""SWE-QA-style questions on code bases no ranking or judge rule was tuned on: primary-entity hit@k for each
configuration, as `assay eval` reports them for SWE-QA's requests and pytest.

The dev set has two code bases and its wording has been read many times; these questions were written from the
code's source before Assay ran on it (`questions/<name>.jsonl`, the SWE-QA fields `question` and
`primary_entity`; `package` says where the source comes from), so they say how the ranking and the judge carry over to a third code base and another hand's
phrasing. Usage: `python -m tests.benchmarks.bench_questions [--sets click] [--misses]`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

QUESTIONS = Path(__file__).with_name("questions")


def source_tree(package: str) -> Path:
    """`name==version`: the PyPI sdist, as `assay eval` fetches SWE-QA's; `registry:name@version`: as
    `bench_languages` fetches its packages (`debian:golang-github-gin-gonic-gin-dev@1.8.1-1`)."""
    if "==" in package:
        from assay.flows.evaluate import eval_home
        from assay.stages.evaluate.sdists import prepare_corpus

        return prepare_corpus(package, eval_home())
    from tests.benchmarks.bench_languages import unpack

    registry, spec = package.split(":", 1)
    return unpack(spec, registry, reuse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(sorted(p.stem for p in QUESTIONS.glob("*.jsonl"))),
                        help="question files to run, comma-separated")
    parser.add_argument("--misses", action="store_true", help="print each question whose primary entity `ask` misses")
    args = parser.parse_args()

    from assay.flows.index import run_index
    from assay.stages.core.config import Settings
    from assay.stages.evaluate.runs import answerable_questions, evaluate_retrieval
    from assay.tasks.gpu import judge_holding_gpu

    settings = Settings(orchestration="direct")
    print(f"{'set':10s} {'configuration':14s} {'hit@1':>6s} {'hit@5':>6s} {'hit@10':>6s} {'MRR':>6s}")
    for name in args.sets.split(","):
        path = QUESTIONS / f"{name}.jsonl"
        package = json.loads(path.read_text().splitlines()[0])["package"]
        root = source_tree(package)
        run_index(str(root), settings)  # incremental: nothing to do when the last run's index is current
        questions = answerable_questions(path, None)
        found, rows = evaluate_retrieval(root, questions, settings, ["local"], lambda b: judge_holding_gpu(b, settings))
        for config, m in found["retrieval"].items():
            print(f"{name:10s} {config:14s} {m['hit@1']:6.2f} {m['hit@5']:6.2f} {m['hit@10']:6.2f} {m['mrr']:6.3f}")
        t = found["trust"]["local"]
        print(f"{name}: {len(questions)} questions, {package}; trust high {t['trust_high']} of {t['answers']}, primary "
              f"among the passages when high {t['included_when_high']}, otherwise {t['included_otherwise']}; AUROC of "
              f"answerable {t['answerable_auroc']}")
        if args.misses:
            texts = {q.id: q for q in questions}
            for row in rows:
                if row["config"] == "ranked+local" and not row["hit@10"]:
                    q = texts[row["question"]]
                    print(f"  miss {q.id}: {q.primary.qualname} ({q.primary.file}): {q.text[:110]}")


if __name__ == "__main__":
    main()

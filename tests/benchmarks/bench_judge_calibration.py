"""Fit and measure the local judge's calibrated models (`stages.evaluate.judge_calibration`) on the labelled pairs.

    python -m tests.benchmarks.bench_judge_calibration            # leave-one-repo-out figures
    python -m tests.benchmarks.bench_judge_calibration --write    # fit on all five, rebuild data/judge_calibration.json
    python -m tests.benchmarks.bench_judge_calibration --collect DIR  # join DIR/<corpus>.jsonl labels with the pools
    python -m tests.benchmarks.bench_judge_calibration --end-to-end   # each repo's SWE-QA eval with a fit that left it out
    python -m tests.benchmarks.bench_judge_calibration --held-out     # the shipped fit on code bases it never saw

`--write` fits on all five labelled repos (`judge_labels/`) and writes the weights and thresholds; the defaults
rebuild the file byte for byte. `--end-to-end` runs the SWE-QA retrieval evaluation of each repository (the `ask`
pipeline's ranking, judge and selection on the whole pool, as `assay eval` does) with models fitted on the other four,
and prints trust against correctness and hit@10 per repository (needs the indexes `assay eval` leaves). `--held-out`
measures the shipped fit on pairs labelled the same way on code it never saw, beside the judge before calibration:
`bench_questions`' eight code bases in five languages (`judge_labels/held-out/`, labelled without a reference
answer) and eight more Python packages (`judge_labels/python/`, questions with reference answers written for them in
`python_questions/`). `--collect` builds `judge_labels/` (with `--sets`: `held-out/`; with `--python`: `python/`)
from labellers' files and the pools `judge_pools` dumps.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from assay.stages.evaluate.judge_calibration import CORPORA, fit_all, leave_one_out, load, model_json, render
from assay.stages.query.judge.calibrated import MODEL_PATH

LABELS = Path(__file__).resolve().parent / "judge_labels"


BEFORE = "6d8dc6d"  # the last commit with the judge before calibration


def judge_before():
    """The local judge as it was before calibration (its module read from git), to score pairs beside the new one."""
    import subprocess
    import types

    source = subprocess.run(["git", "show", f"{BEFORE}:stages/query/judge/local.py"], capture_output=True, text=True,
                            check=True, cwd=LABELS.parents[2]).stdout
    module = types.ModuleType("judge_before")
    exec(compile(source, "judge_before.py", "exec"), module.__dict__)  # noqa: S102
    return module.judge_local


def before_scores(pools: Path, corpora: list[str]) -> dict[str, dict]:
    """Pair id -> the judge-before-calibration's relevance, evidence and keep (at its thresholds, 0.30 / 0.20)."""
    from assay.stages.core.artifacts import Candidate

    judge, out = judge_before(), {}
    for corpus in corpora:
        for line in (pools / f"{corpus}.jsonl").read_text().splitlines():
            q = json.loads(line)
            cands = [Candidate(**{k: v for k, v in p.items() if k not in ("is_primary", "is_gold")}) for p in q["pool"]]
            scores = judge(q["question"], cands).scores
            for i, c in enumerate(cands[:6]):
                s = scores[c.id]
                out[f"{q['id']}#{i}"] = {"relevance": s.relevance, "evidence": s.evidence,
                                         "kept": s.relevance >= 0.30 and s.evidence >= 0.20}
    return out


def collect(folder: Path, pools: Path, before: Path | None, corpora: tuple[str, ...] | list[str] = CORPORA,
            out_dir: Path = LABELS) -> None:
    """Join the labellers' files (`{"pair", "relevant", "evidence", "why"}` per line) with the dumped pools."""
    prior = before_scores(pools, corpora) if before is None else {
        r["pair"]: r for r in map(json.loads, before.read_text().splitlines())}
    out_dir.mkdir(parents=True, exist_ok=True)
    for corpus in corpora:
        labels = {r["pair"]: r for r in map(json.loads, (folder / f"{corpus}.jsonl").read_text().splitlines()) if r}
        rows = []
        for line in (pools / f"{corpus}.jsonl").read_text().splitlines():
            q = json.loads(line)
            for i, p in enumerate(q["pool"][:6]):
                pair = f"{q['id']}#{i}"
                if pair not in labels:
                    continue
                cand = {k: v for k, v in p.items() if k not in ("facts", "is_primary", "is_gold")}
                rows.append({"corpus": corpus, "id": q["id"], "pair": pair, "question": q["question"], "named": q["named"],
                             "position": i, "has_primary": q["primary"] is not None, "is_primary": p["is_primary"],
                             "is_gold": p["is_gold"], "relevant": int(labels[pair]["relevant"]),
                             "evidence": int(labels[pair]["evidence"]), "why": labels[pair].get("why", ""),
                             "before": {k: prior[pair][k] for k in ("relevance", "evidence", "kept")} if pair in prior else None,
                             "candidate": cand})
        (out_dir / f"{corpus}.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
        print(corpus, len(rows))


def end_to_end(rows_by: dict[str, list[dict]]) -> None:
    import tempfile

    from assay.flows.evaluate import default_questions_dir, eval_home
    from assay.stages.core.config import Settings
    from assay.stages.evaluate.metrics import question_set_package
    from assay.stages.evaluate.runs import answerable_questions, evaluate_retrieval
    from assay.stages.evaluate.sdists import prepare_corpus
    from assay.stages.query.judge import calibrated
    from assay.stages.query.judge.local import judge_local

    print("| held-out repo | answers | trust high | primary when high | otherwise | AUROC answerable | `ask` hit@1 / @10 / MRR "
          "(`search`) | named / paraphrased `ask` hit@10 |")
    print("|---|---|---|---|---|---|---|---|")
    shipped = calibrated.MODEL_PATH
    qdir = default_questions_dir()
    try:
        for held in rows_by:
            fitted = fit_all([r for c, rs in rows_by.items() if c != held for r in rs])
            with tempfile.TemporaryDirectory() as tmp:
                calibrated.MODEL_PATH = Path(tmp) / "fold.json"
                calibrated.MODEL_PATH.write_text(model_json(fitted), encoding="utf-8")
                root = prepare_corpus(question_set_package(qdir / f"{held}.jsonl"), eval_home())
                result, _ = evaluate_retrieval(root, answerable_questions(qdir / f"{held}.jsonl", None), Settings(), ["local"],
                                               lambda name: judge_local)
            t = result["trust"]["local"]
            ask = next(k for k in result["retrieval"] if k.endswith("+local"))
            a, s = result["retrieval"][ask], result["retrieval"][ask.split("+")[0]]
            split = " / ".join(f"{result['split'][ask][part]['hit@10']:.3f}" if result["split"][ask].get(part, {}).get("n") else "-"
                               for part in ("named", "paraphrased"))
            print(f"| {held} | {t['answers']} | {t['trust_high']} | {t['included_when_high']} | {t['included_otherwise']} | "
                  f"{t['answerable_auroc']} | {a['hit@1']:.3f} / {a['hit@10']:.3f} / {a['mrr']:.3f} ({s['hit@1']:.3f} / "
                  f"{s['hit@10']:.3f} / {s['mrr']:.3f}) | {split} |", flush=True)
    finally:
        calibrated.MODEL_PATH = shipped


def held_out() -> None:
    """The shipped fit on pairs of code bases it never saw, beside the judge before calibration: one table per set."""
    for folder in (LABELS / "held-out", LABELS / "python"):
        print(f"\n{folder.relative_to(LABELS)}/\n")
        held_out_table(folder)


def held_out_table(folder: Path) -> None:
    from assay.stages.evaluate import calibration as cal
    from assay.stages.evaluate.judge_calibration import BAR_RECALL, judged_pairs
    from assay.stages.query.judge.calibrated import load_models
    from assay.stages.query.judge.local import judge_local

    rows_by = {p.stem: load(folder, p.stem) for p in sorted(folder.glob("*.jsonl"))}
    relevance_min = load_models().thresholds["relevance_min"]
    scored = {name: [s[0] for s in judged_pairs(rows, judge_local)] for name, rows in rows_by.items()}
    print("| code base | pairs | relevant | ECE relevance (before) [floor] | P@R0.85 (before) | keep P / R (before) |")
    print("|---|---|---|---|---|---|")
    for name in [*rows_by, "all"]:
        rows = [r for rs in rows_by.values() for r in rs] if name == "all" else rows_by[name]
        now = [p for n in rows_by for p in scored[n]] if name == "all" else scored[name]
        labels = [bool(r["relevant"]) for r in rows]
        before = [r["before"]["relevance"] for r in rows]
        print(f"| {name} | {len(rows)} | {sum(labels)} | {cal.ece(now, labels):.3f} ({cal.ece(before, labels):.3f}) "
              f"[{cal.ece_floor(now):.3f}] | {cal.precision_at_recall(now, labels, BAR_RECALL)[0]:.3f} "
              f"({cal.precision_at_recall(before, labels, BAR_RECALL)[0]:.3f}) | "
              f"{_prf([p >= relevance_min for p in now], labels)} ({_prf([r['before']['kept'] for r in rows], labels)}) |")


def _prf(kept: list[bool], labels: list[bool]) -> str:
    tp = sum(k and y for k, y in zip(kept, labels))
    return f"{tp / max(1, sum(kept)):.3f} / {tp / max(1, sum(labels)):.3f}"  # unrounded: keep_drop_prf rounds to 4 first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="fit on all five repos and rewrite data/judge_calibration.json")
    ap.add_argument("--collect", type=Path, help="a folder of labellers' <corpus>.jsonl files to join with the pools")
    ap.add_argument("--pools", type=Path, default=Path.home() / ".assay/eval/judge_pools")
    ap.add_argument("--before", type=Path, help="the judge-before-calibration scores per pair (JSONL)")
    ap.add_argument("--end-to-end", action="store_true", help="each repo's SWE-QA evaluation with a fit that left it out")
    ap.add_argument("--held-out", action="store_true", help="the shipped fit on code bases it never saw")
    ap.add_argument("--sets", help="with --collect: bench_questions' sets (comma-separated), into judge_labels/held-out")
    ap.add_argument("--python", action="store_true", help="with --collect: the Python packages' sets, into judge_labels/python")
    args = ap.parse_args()
    if args.collect:
        if args.python:
            from tests.benchmarks.judge_pools import python_sets

            collect(args.collect, args.pools / "python", args.before, python_sets(), LABELS / "python")
        elif args.sets:
            collect(args.collect, args.pools / "held-out", args.before, args.sets.split(","), LABELS / "held-out")
        else:
            collect(args.collect, args.pools, args.before)
        return
    if args.held_out:
        held_out()
        return
    rows_by = {c: load(LABELS, c) for c in CORPORA}
    if args.end_to_end:
        end_to_end(rows_by)
        return
    print(render(leave_one_out(rows_by)))
    if args.write:
        fitted = fit_all([r for rs in rows_by.values() for r in rs])
        MODEL_PATH.write_text(model_json(fitted), encoding="utf-8")
        print(f"wrote {MODEL_PATH}: thresholds {fitted['thresholds']}")


if __name__ == "__main__":
    main()

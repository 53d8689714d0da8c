"""Calibrating the local judge on labelled (question, passage) pairs: fit, and measure on repositories not fitted on.

The labelled set (`tests/benchmarks/judge_labels/<corpus>.jsonl`, the rule in its README) holds, per SWE-QA dev
question, the first six entities of the ranked pool with their retrieval signals, two labels read off the code
(relevant, evidence), whether the passage is the question's primary gold entity, and what the judge before
calibration said. Relevance and evidence are fitted on four repositories and measured on the fifth (ECE, reliability
bins, precision at keep recall 0.85, beside the judge before calibration); answerable is fitted the same way on the
questions (is the primary entity among the passages the judge keeps?); trust high asks it for a 9-in-10 chance.
`fit_all` on all five gives the shipped `data/judge_calibration.json`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from assay.stages.core.artifacts import Candidate, Judgment
from assay.stages.evaluate import calibration as cal
from assay.stages.evaluate.metrics import auroc, keep_drop_prf
from assay.stages.query.judge.calibrated import SET_FEATURES, Logistic, set_features
from assay.stages.query.passage_features import PASSAGE_FEATURES, QuestionTerms, names_of, passage_features

CORPORA = ("requests", "pytest", "xarray", "sphinx", "pylint")
KEEP_RECALL = 0.90  # the keep threshold keeps this share of relevant passages on the fitted repos
BAR_RECALL = 0.85  # precision is reported at this keep recall (the bar)
TRUST_PRECISION = 0.90  # trust high: answerable (a calibrated chance that the kept passages hold the primary) >= this
TOP_K = 5
L2 = 1.0  # ridge strength on standardised features


def load(folder: Path, corpus: str) -> list[dict]:
    return [json.loads(line) for line in (folder / f"{corpus}.jsonl").read_text(encoding="utf-8").splitlines() if line]


def questions(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["id"], []).append(r)
    return out


def featurise(rows: list[dict], ranked: bool = True) -> list[list[float]]:
    """Each pair's passage features, computed over its question's labelled pool as the judge would; `ranked=False`:
    as a pool the rank stage did not order (no rank score or signals) would give them."""
    feats: dict[tuple[str, str], list[float]] = {}
    for qid, group in questions(rows).items():
        cands = [Candidate(**g["candidate"]) for g in group]
        if not ranked:
            cands = [c.model_copy(update={"rank_score": None, "rank_signals": {}}) for c in cands]
        for cid, f in passage_features(QuestionTerms.of(group[0]["question"]), cands).items():
            feats[(qid, cid)] = f
    return [feats[(r["id"], r["candidate"]["id"])] for r in rows]


def fit_pairs(rows: list[dict], x: list[list[float]]) -> tuple[Logistic, Logistic]:
    """Relevance and evidence fitted on the pairs' features `x` (`featurise`)."""
    return (cal.fit_logistic(PASSAGE_FEATURES, x, [r["relevant"] for r in rows], L2),
            cal.fit_logistic(PASSAGE_FEATURES, x, [r["evidence"] for r in rows], L2))


def question_sets(rows: list[dict], x: list[list[float]], relevance: Logistic, evidence: Logistic,
                  relevance_min: float) -> list[tuple[list[float], bool]]:
    """Per question with a primary entity: the judge's set features, and whether the passages it keeps (the first
    `TOP_K` at or above the relevance minimum, in pool order) hold the primary."""
    out = []
    for group in questions([dict(r, _x=f) for r, f in zip(rows, x)]).values():
        if not group[0]["has_primary"]:
            continue
        q = QuestionTerms.of(group[0]["question"])
        in_order = [(relevance.probability(g["_x"]), evidence.probability(g["_x"]), g)
                    for g in sorted(group, key=lambda g: g["position"])]
        kept = [t for t in in_order if t[0] >= relevance_min][:TOP_K]  # what the threshold stage keeps, in pool order
        best_first = sorted(kept, key=lambda t: -t[0])
        defines = any(names_of(q, Candidate(**t[2]["candidate"]))[0] for t in kept)
        feats = set_features([t[0] for t in best_first], [t[1] for t in best_first], bool(q.short_names), defines)
        out.append((feats, any(t[2]["is_primary"] for t in kept)))
    return out


def fit_all(rows: list[dict]) -> dict:
    x = featurise(rows)
    relevance, evidence = fit_pairs(rows, x)
    _, relevance_min = cal.precision_at_recall([relevance.probability(f) for f in x], [r["relevant"] for r in rows], KEEP_RECALL)
    _, evidence_min = cal.precision_at_recall([evidence.probability(f) for f in x], [r["evidence"] for r in rows], 0.95)
    sets = question_sets(rows, x, relevance, evidence, relevance_min)
    answerable = cal.fit_logistic(SET_FEATURES, [s[0] for s in sets], [s[1] for s in sets], L2)
    answerable_min = TRUST_PRECISION  # answerable is itself calibrated: trust high means a 9-in-10 chance, by definition
    relevance_unranked, evidence_unranked = fit_pairs(rows, featurise(rows, ranked=False))
    return {"relevance": relevance, "evidence": evidence, "answerable": answerable,
            "relevance_unranked": relevance_unranked, "evidence_unranked": evidence_unranked,
            "thresholds": {"relevance_min": relevance_min, "evidence_min": evidence_min, "answerable_min": answerable_min}}


def leave_one_out(rows_by: dict[str, list[dict]]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for held in rows_by:
        train = [r for c, rs in rows_by.items() if c != held for r in rs]
        test = rows_by[held]
        fitted = fit_all(train)
        x = featurise(test)
        rel = [fitted["relevance"].probability(f) for f in x]
        evid = [fitted["evidence"].probability(f) for f in x]
        labels_r = [bool(r["relevant"]) for r in test]
        labels_e = [bool(r["evidence"]) for r in test]
        th = fitted["thresholds"]
        keep = keep_drop_prf([p >= th["relevance_min"] for p in rel], labels_r)
        before_keep = keep_drop_prf([r["before"]["kept"] for r in test], labels_r)
        sets = question_sets(test, x, fitted["relevance"], fitted["evidence"], th["relevance_min"])
        ans = [fitted["answerable"].probability(s[0]) for s in sets]
        high = [s[1] for s, a in zip(sets, ans) if a >= th["answerable_min"]]
        out[held] = {
            "pairs": len(test), "relevant": sum(labels_r), "evidence": sum(labels_e),
            "ece_relevance": cal.ece(rel, labels_r), "ece_evidence": cal.ece(evid, labels_e),
            "ece_relevance_before": cal.ece([r["before"]["relevance"] for r in test], labels_r),
            "precision_at_recall": cal.precision_at_recall(rel, labels_r, BAR_RECALL)[0],
            "precision_at_recall_before": cal.precision_at_recall([r["before"]["relevance"] for r in test], labels_r, BAR_RECALL)[0],
            "keep_precision": keep["precision"], "keep_recall": keep["recall"],
            "keep_precision_before": before_keep["precision"], "keep_recall_before": before_keep["recall"],
            "questions": len(sets), "trust_high": len(high),
            "primary_when_high": round(sum(high) / len(high), 3) if high else None,
            "answerable_auroc": auroc(ans, [s[1] for s in sets]),
            "ece_floor": cal.ece_floor(rel),
            "reliability": cal.reliability(rel, labels_r),
            "_scores": (rel, labels_r), "_sets": (ans, [s[1] for s in sets], [a >= th["answerable_min"] for a in ans]),
        }
    return out


def render(results: dict[str, dict]) -> str:
    lines = ["| held-out repo | pairs | relevant | ECE rel (before) [floor] | ECE evid | P@R0.85 (before) | keep P / R (before) | "
             "questions | trust high | primary when high | AUROC answerable |", "|" + "---|" * 11]
    for c, m in results.items():
        auc = f"{m['answerable_auroc']:.3f}" if m["answerable_auroc"] is not None else "-"
        lines.append(
            f"| {c} | {m['pairs']} | {m['relevant']} | {m['ece_relevance']:.3f} ({m['ece_relevance_before']:.3f}) [{m['ece_floor']:.3f}] | "
            f"{m['ece_evidence']:.3f} | {m['precision_at_recall']:.3f} ({m['precision_at_recall_before']:.3f}) | "
            f"{_fig(m['keep_precision'])} / {_fig(m['keep_recall'])} ({_fig(m['keep_precision_before'])} / "
            f"{_fig(m['keep_recall_before'])}) | "
            f"{m['questions']} | {m['trust_high']} | {m['primary_when_high']} | {auc} |")
    rel = [p for m in results.values() for p in m["_scores"][0]]
    lab = [y for m in results.values() for y in m["_scores"][1]]
    ans = [a for m in results.values() for a in m["_sets"][0]]
    hit = [h for m in results.values() for h in m["_sets"][1]]
    high = [h for m in results.values() for h, t in zip(m["_sets"][1], m["_sets"][2]) if t]
    lines.append(f"\npooled out-of-repo relevance: ECE {cal.ece(rel, lab)} (floor {cal.ece_floor(rel)}), "
                 f"P@R0.85 {cal.precision_at_recall(rel, lab, BAR_RECALL)[0]}; answerable: AUROC {auroc(ans, hit):.3f}, "
                 f"trust high {len(high)} of {len(ans)}, primary when high {sum(high) / max(1, len(high)):.3f}")
    lines.append("reliability (pooled): " + ", ".join(f"{b['low']:.1f}-{b['high']:.1f}: n {b['n']} pred {b['predicted']:.2f} obs {b['observed']:.2f}"
                                              for b in cal.reliability(rel, lab)))
    return "\n".join(lines)


def _fig(value: float | None) -> str:
    """A measured figure to three places; "-" where none was measured (no passage kept, none relevant)."""
    return "-" if value is None else f"{value:.3f}"


def model_json(fitted: dict) -> str:
    return json.dumps({
        "name": "assay-local-2", "_doc": "Written by python -m tests.benchmarks.bench_judge_calibration --write; "
        "fitted on tests/benchmarks/judge_labels (five SWE-QA dev repos).",
        "relevance": fitted["relevance"].to_json(), "evidence": fitted["evidence"].to_json(),
        "answerable": fitted["answerable"].to_json(), "relevance_unranked": fitted["relevance_unranked"].to_json(),
        "evidence_unranked": fitted["evidence_unranked"].to_json(), "thresholds": fitted["thresholds"],
    }, indent=1) + "\n"


def judged_pairs(rows: list[dict], judge: Callable[[str, list[Candidate]], Judgment]) -> list[tuple[float, float] | None]:
    """Any backend's (relevance, evidence) per labelled pair, judging each question's labelled pool in one call;
    None where the judge gave that passage no verdict."""
    out: dict[str, tuple[float, float] | None] = {}
    for group in questions(rows).values():
        cands = [Candidate(**g["candidate"]) for g in group]
        judgment = judge(group[0]["question"], cands)
        for g, c in zip(group, cands):
            s = judgment.scores.get(c.id)
            out[g["pair"]] = (s.relevance, s.evidence) if s is not None else None
    return [out[r["pair"]] for r in rows]


def backend_calibration(rows_by: dict[str, list[dict]], judge: Callable[[str, list[Candidate]], Judgment]) -> dict[str, dict]:
    """Per repository and pooled: how well one backend's relevance and evidence read as probabilities on the labelled
    pairs (ECE, reliability bins, precision at keep recall 0.85). For the local judge these are in-sample figures of
    the shipped fit; `leave_one_out` gives the out-of-repo ones."""
    out: dict[str, dict] = {}
    pooled: tuple[list[float], list[bool], list[float], list[bool]] = ([], [], [], [])
    for corpus, rows in rows_by.items():
        scored = [(s, r) for s, r in zip(judged_pairs(rows, judge), rows) if s is not None]
        rel, lab_r = [s[0] for s, _ in scored], [bool(r["relevant"]) for _, r in scored]
        evid, lab_e = [s[1] for s, _ in scored], [bool(r["evidence"]) for _, r in scored]
        for dest, src in zip(pooled, (rel, lab_r, evid, lab_e)):
            dest.extend(src)
        out[corpus] = _scores_summary(len(rows), rel, lab_r, evid, lab_e)
    out["all"] = _scores_summary(sum(len(r) for r in rows_by.values()), *pooled)
    return out


def _scores_summary(pairs: int, rel: list[float], lab_r: list[bool], evid: list[float], lab_e: list[bool]) -> dict:
    return {"pairs": pairs, "scored": len(rel), "ece_relevance": cal.ece(rel, lab_r), "ece_evidence": cal.ece(evid, lab_e),
            "precision_at_recall": cal.precision_at_recall(rel, lab_r, BAR_RECALL)[0] if rel else None,
            "reliability": cal.reliability(rel, lab_r)}


def labelled_sets(folder: Path) -> list[str]:
    """Every `<name>.jsonl` in the labels folder (a user's own labels need no SWE-QA name); the five shipped ones
    first, in the order the shipped fit was made in, so the default folder's figures do not move."""
    present = {p.stem for p in folder.glob("*.jsonl") if p.is_file()} if folder.is_dir() else set()
    return [c for c in CORPORA if c in present] + sorted(present - set(CORPORA))


def evaluate(folder: Path, judges: dict[str, Callable[[str, list[Candidate]], Judgment]]) -> dict:
    """The judge suite's calibration section: each backend's ECE and reliability on every labelled repository, and
    the local judge refitted leaving each repository out (its honest, out-of-repo figures)."""
    rows_by = {c: load(folder, c) for c in labelled_sets(folder)}
    if not rows_by:
        return {"labels": str(folder), "pairs": 0, "missing": not folder.is_dir()}
    out: dict = {"labels": str(folder), "pairs": sum(map(len, rows_by.values())),
                 "backends": {name: backend_calibration(rows_by, judge) for name, judge in judges.items()}}
    if "local" in judges and len(rows_by) > 1:
        held = leave_one_out(rows_by)
        out["local_held_out"] = {c: {k: v for k, v in m.items() if not k.startswith("_")} for c, m in held.items()}
        out["local_held_out_markdown"] = render(held)
    return out


def render_section(result: dict) -> str:
    if not result.get("pairs"):
        where = "that folder does not exist" if result.get("missing") else "it holds no <name>.jsonl of them"
        return (f"## Calibration\n\nNo labelled pairs in {result['labels']}: {where}. The labelled pairs ship only in a "
                "checkout of Assay (tests/benchmarks/judge_labels), not in the installed package: pass a folder of "
                "<name>.jsonl pairs with `assay eval --suite judge --questions DIR` (a checkout's "
                "tests/benchmarks/judge_labels, or your own).\n")
    lines = ["## Calibration", "", f"{result['pairs']} labelled (question, passage) pairs ({result['labels']}). ECE: "
             "the count-weighted gap between predicted and observed rate over ten bins (lower is better); P@R0.85: the "
             "best keep precision at keep recall 0.85. The local judge's rows are in-sample (its shipped fit saw these "
             "pairs).", "", "| judge | repo | scored | ECE relevance | ECE evidence | P@R0.85 |", "|---|---|---|---|---|---|"]
    fmt = lambda v: f"{v:.3f}" if v is not None else "-"  # noqa: E731
    for name, per_repo in result["backends"].items():
        for repo, m in per_repo.items():
            lines.append(f"| {name} | {repo} | {m['scored']} of {m['pairs']} | {fmt(m['ece_relevance'])} | "
                         f"{fmt(m['ece_evidence'])} | {fmt(m['precision_at_recall'])} |")
    if result.get("local_held_out_markdown"):
        lines += ["", "Local judge fitted on the other repositories, measured on each held-out one (before: the judge before "
                  "calibration on the same pairs; floor: the ECE a perfectly calibrated judge shows on that many pairs):",
                  "", result["local_held_out_markdown"]]
    return "\n".join(lines) + "\n"

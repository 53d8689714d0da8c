"""Judge stage, local backend: scores every passage without an LLM, from what the index knows.

- relevance and evidence: calibrated probabilities (`calibrated`, fitted on pairs labelled by reading code) over
  what the query flow already knows (`stages.query.passage_features`): the rank stage's score and signals, the pool
  order, how much of the question the passage's name and text cover, dense similarity, whether it defines or only
  mentions an identifier the question names, and its kind, path and shape.
- contradicts: the question's premises (`stages.query.premise`: base classes, parameters, defaults, decorators,
  async, return types, raises, file, kind) checked against the definition of their subject; the
  passage that defines a subject whose premise fails gets the finding's score.
- injection: the AST-aware detector in `stages.index.injection_detector` (shared with the index-time scan).
Set-level answerable (calibrated: do the best kept passages hold what the answer is about?), coverage (0-3: the
expected number of relevant passages among them) and conflict (two definitions of one name that disagree).
"""

from __future__ import annotations

from assay.stages.core.artifacts import Candidate, Judgment, PassageScores, PremiseFinding, Thresholds
from assay.stages.index.injection_detector import injection_of
from assay.stages.query.judge.calibrated import JudgeModels, load_models, set_features
from assay.stages.query.passage_features import DEFINITIONS, QuestionTerms, names_of, passage_features
from assay.stages.query.premise import check_question, entity_of, resolver_from


def passage_injection(c: Candidate) -> tuple[float, list[str]]:
    """The local detector's score for a passage: the index-time scan the candidate carries
    (`stages.index.injection_scan`), else scored now (cached: the judge and the threshold both ask)."""
    if c.injection_scan is not None:
        return c.injection_scan[0], list(c.injection_scan[1])
    score, hits = injection_of(c.body, c.docstring, c.language or "text")
    return score, list(hits)


def premise_scores(findings: list[PremiseFinding]) -> dict[str, float]:
    """contradicts per passage id: the strongest failed premise about the entity it defines."""
    out: dict[str, float] = {}
    for f in findings:
        if not f.holds:
            out[f.entity_id] = max(out.get(f.entity_id, 0.0), f.contradicts)
    return out


def judge_local(question: str, candidates: list[Candidate], premises: list[PremiseFinding] | None = None,
                thresholds: Thresholds | None = None) -> Judgment:
    """Score all passages in one pass (the local judge makes no calls). `premises`: findings checked against the
    whole index (the query flow); without them the question is checked against the passages themselves.
    `thresholds`: those the threshold stage will apply (a user's override included), so that answerable speaks of
    the passages it will keep (default: `set_answerability`'s).
    Its probabilities are fitted on the rank stage's own signals over the first passages of its pools: they say
    which to keep and how sure to be, but order no better than the rank stage did (`bench_judge_calibration`), so
    what it keeps stays in the rank stage's order (`orders_kept` false)."""
    if premises is None:
        premises = check_question(question, resolver_from(entity_of(c) for c in candidates))
    contra_by_id = premise_scores(premises)
    models = load_models()
    q = QuestionTerms.of(question)
    features = passage_features(q, candidates)
    relevance_model, evidence_model = models.passage_models(any(c.rank_score is not None for c in candidates))
    scores: dict[str, PassageScores] = {}
    reasons: dict[str, str] = {}
    named: set[str] = set()
    for c in candidates:
        x = features[c.id]
        inj, hits = passage_injection(c)
        contra = contra_by_id.get(c.id, 0.0)
        scores[c.id] = PassageScores(
            relevance=round(relevance_model.probability(x), 3), evidence=round(evidence_model.probability(x), 3),
            contradicts=round(contra, 3), injection=inj,
        )
        defines_named, mentions_named = names_of(q, c)
        why = []
        if defines_named:
            named.add(c.id)
            why.append("defines a named identifier")
        elif mentions_named:
            why.append("mentions a named identifier")
        if hits:
            why.append("injection signals: " + ",".join(hits))
        if contra:
            why.append("conflicts with the question's premise: " + "; ".join(f.fact for f in premises if f.entity_id == c.id and not f.holds))
        reasons[c.id] = "; ".join(why)
    answerable, coverage = set_answerability(scores, models, bool(q.short_names), named, thresholds)
    return Judgment(
        backend="local", model=models.name, scores=scores, answerable=answerable, coverage=coverage,
        conflict=max(set_conflict(candidates), max(contra_by_id.values(), default=0.0)), calls=0, reasons=reasons,
        premises=premises, orders_kept=False,
    )


def set_answerability(scores: dict[str, PassageScores], models: JudgeModels, question_names: bool,
                      named: set[str], thresholds: Thresholds | None = None) -> tuple[float, int]:
    """answerable: the calibrated chance that the passages the threshold stage will keep (the first `top_k` of the
    pool, in its order, at or above the relevance minimum and below the injection maximum of `thresholds`; default:
    the calibration sweep's minimum, 0.5 and 5) hold what the answer is about; coverage 0-3: how many of them are
    expected to be relevant (the sum of their relevance, rounded)."""
    relevance_min = thresholds.relevance_min if thresholds else models.thresholds.get("relevance_min", 0.0)
    injection_max = thresholds.injection_max if thresholds else 0.5
    top_k = thresholds.top_k if thresholds else 5
    kept = [(pid, s) for pid, s in scores.items() if s.injection < injection_max and s.relevance >= relevance_min][:top_k]
    if not kept:
        return 0.0, 0
    best_first = sorted(kept, key=lambda t: -t[1].relevance)
    feats = set_features([s.relevance for _, s in best_first], [s.evidence for _, s in best_first], question_names,
                         any(pid in named for pid, _ in kept))
    coverage = min(3, round(sum(s.relevance for _, s in kept)))
    return round(models.answerable.probability(feats), 3), coverage


def set_conflict(candidates: list[Candidate]) -> float:
    """Two definitions of one qualified name whose signatures differ disagree with each other."""
    seen: dict[tuple[str, str], str] = {}
    for c in candidates:
        if c.kind not in DEFINITIONS:
            continue
        key = (c.kind, c.entity)
        if key in seen and seen[key] != c.signature:
            return 0.6
        seen.setdefault(key, c.signature)
    return 0.0

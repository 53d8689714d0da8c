"""Judge stage, local backend: scores every passage without an LLM, from what the index knows.

- relevance: how many of the question's terms the passage's name, signature, docstring and body cover
  and its dense similarity, plus the code-aware rank score (or BM25 and the fused rank where the pool
  was not ranked); an identifier the question names exactly, defined by the passage, is strong evidence.
- evidence: structure. A definition with a body and a docstring is concrete support; a window of
  text or a passage that merely mentions a named identifier is weaker.
- contradicts: the question's premises (`stages.query.premise`: base classes, parameters, defaults, decorators,
  async, return types, raises, file, kind) checked against the definition of their subject; the
  passage that defines a subject whose premise fails gets the finding's score.
- injection: the AST-aware detector in `stages.index.injection_detector` (shared with the index-time scan).
Set-level answerable, coverage (0-3) and conflict (two definitions of one name that disagree).
"""

from __future__ import annotations

from functools import lru_cache

from assay.stages.core.artifacts import Candidate, DEFINITION_KINDS, Judgment, PassageScores, PremiseFinding, short_name
from assay.stages.index.tokens import tokenize
from assay.stages.index.injection_detector import injection_of
from assay.stages.query.identifiers import question_identifiers
from assay.stages.query.premise import check_question, entity_of, resolver_from

RANK_WEIGHT = 0.5  # share of relevance taken from the rank stage's score, when the pool was ranked
_DEFINITION_KINDS = DEFINITION_KINDS | {"module"}


def _coverage(terms: set[str], text: str) -> float:
    if not terms:
        return 0.0
    return len(terms & _terms_of(text)) / len(terms)


@lru_cache(maxsize=4096)
def _terms_of(text: str) -> frozenset[str]:
    """A passage's lexical terms, once per text: the same passages come back for question after question."""
    return frozenset(tokenize(text))


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


def judge_local(question: str, candidates: list[Candidate], premises: list[PremiseFinding] | None = None) -> Judgment:
    """Score all passages in one pass (the local judge makes no calls). `premises`: findings checked against the
    whole index (the query flow); without them the question is checked against the passages themselves."""
    if premises is None:
        premises = check_question(question, resolver_from(entity_of(c) for c in candidates))
    contra_by_id = premise_scores(premises)
    terms = set(tokenize(question))
    idents = question_identifiers(question)
    ident_short = {short_name(i).lower() for i in idents}
    ident_full = {i.lower() for i in idents}
    max_bm25 = max((c.bm25 or 0.0 for c in candidates), default=0.0) or 1.0
    best_fused = max((c.fused_score for c in candidates), default=0.0) or 1.0
    best_rank = max((c.rank_score or 0.0 for c in candidates), default=0.0) or 1.0
    scores: dict[str, PassageScores] = {}
    reasons: dict[str, str] = {}
    for c in candidates:
        name_text = f"{c.entity} {c.file}"
        name_cov = _coverage(terms, name_text)
        text_cov = _coverage(terms, f"{c.signature}\n{c.docstring}\n{c.body}")
        dense_sim = max(0.0, 1.0 - (c.distance if c.distance is not None else 1.0))
        bm25_norm = (c.bm25 or 0.0) / max_bm25
        coverage = (0.25 * name_cov + 0.2 * text_cov + 0.25 * min(1.0, dense_sim / 0.7)) / 0.7  # 0..1
        if c.rank_score is not None:  # the code-aware rank stage already weighed lexical, dense, paths and files
            relevance = (1 - RANK_WEIGHT) * coverage + RANK_WEIGHT * max(0.0, c.rank_score) / best_rank
        else:
            relevance = 0.7 * coverage + 0.15 * bm25_norm + 0.15 * c.fused_score / best_fused
        short = short_name(c.entity).lower()
        defines_named = short in ident_short or c.entity.lower() in ident_full
        mentions_named = bool(ident_short) and not defines_named and any(i in c.body.lower() for i in ident_short)
        if defines_named:
            relevance = max(relevance, 0.9)
        evidence = 0.45 if c.kind in _DEFINITION_KINDS else (0.35 if c.kind in ("section", "note", "element", "rule") else 0.25)
        nonblank = sum(1 for ln in c.body.splitlines() if ln.strip())
        if nonblank >= 2:
            evidence += 0.2
        if c.docstring:
            evidence += 0.15
        if defines_named:
            evidence += 0.2
        elif mentions_named:
            evidence = min(evidence, 0.6)
        inj, hits = passage_injection(c)
        contra = contra_by_id.get(c.id, 0.0)
        scores[c.id] = PassageScores(
            relevance=round(min(1.0, relevance), 3), evidence=round(min(1.0, evidence), 3),
            contradicts=round(contra, 3), injection=inj,
        )
        why = []
        if defines_named:
            why.append("defines a named identifier")
        elif mentions_named:
            why.append("mentions a named identifier")
        if hits:
            why.append("injection signals: " + ",".join(hits))
        if contra:
            why.append("conflicts with the question's premise: " + "; ".join(f.fact for f in premises if f.entity_id == c.id and not f.holds))
        reasons[c.id] = "; ".join(why)
    answerable, coverage = set_answerability(scores)
    return Judgment(
        backend="local", model="assay-local-1", scores=scores, answerable=answerable, coverage=coverage,
        conflict=max(set_conflict(candidates), max(contra_by_id.values(), default=0.0)), calls=0, reasons=reasons,
        premises=premises,
    )


def set_answerability(scores: dict[str, PassageScores]) -> tuple[float, int]:
    """answerable: strength of the best supported passages; coverage 0-3 from how many support."""
    support = sorted(((s.relevance * s.evidence) ** 0.5 for s in scores.values() if s.injection < 0.5), reverse=True)
    answerable = round(sum(support[:3]) / 3, 3) if support else 0.0
    strong = sum(1 for s in scores.values() if s.relevance >= 0.5 and s.evidence >= 0.4 and s.injection < 0.5)
    coverage = 0 if strong == 0 else 1 if strong == 1 else 2 if strong <= 3 else 3
    return answerable, coverage


def set_conflict(candidates: list[Candidate]) -> float:
    """Two definitions of one qualified name whose signatures differ disagree with each other."""
    seen: dict[tuple[str, str], str] = {}
    for c in candidates:
        if c.kind not in _DEFINITION_KINDS:
            continue
        key = (c.kind, c.entity)
        if key in seen and seen[key] != c.signature:
            return 0.6
        seen.setdefault(key, c.signature)
    return 0.0

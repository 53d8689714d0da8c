"""What the query flow knows about a (question, passage) pair, as numbers: the inputs of the local judge's calibrated
models (`judge.calibrated`) and of the learned order for questions in words (`learned_rank`). Beside the judge, not
in it: `search` orders with these and stays clear of the judge's imports.

Every feature reads only what the query flow already has (the rank stage's signals, the pool order, the passage's
words and shape, identifiers the question names), so scoring costs microseconds and needs no model. Features that
depend on the pool are relative to its best passage, which the judge always sees, so a labelled subset of a pool
(`tests/benchmarks/judge_labels/`) gives the same numbers as the whole pool did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from assay.stages.core.artifacts import Candidate, DEFINITION_KINDS, short_name
from assay.stages.core.path_roles import is_test_path
from assay.stages.index.tokens import tokenize
from assay.stages.query.identifiers import question_identifiers

RANK_SIGNALS = ("lexical", "dense", "path", "name", "file", "defines")
PASSAGE_FEATURES = (
    "rank_share", "top_position", *(f"signal_{s}" for s in RANK_SIGNALS), "dense_similarity", "name_coverage",
    "text_coverage", "defines_named", "mentions_named", "question_names", "test_file", "definition", "prose",
    "docstring", "lines",
)
DEFINITIONS = DEFINITION_KINDS | {"module"}  # kinds whose passage defines what it is named for
PROSE_KINDS = frozenset({"section", "note", "element", "rule", "file"})  # documents, notes and file outlines


@dataclass(frozen=True)
class QuestionTerms:
    """The question, read once per query."""

    terms: frozenset[str]
    short_names: frozenset[str]
    full_names: frozenset[str]

    @classmethod
    def of(cls, question: str) -> QuestionTerms:
        idents = question_identifiers(question)
        return cls(frozenset(tokenize(question)), frozenset(short_name(i).lower() for i in idents),
                   frozenset(i.lower() for i in idents))


@lru_cache(maxsize=4096)
def _terms_of(text: str) -> frozenset[str]:
    """A passage's lexical terms, once per text: the same passages come back for question after question."""
    return frozenset(tokenize(text))


def coverage(terms: frozenset[str], text: str) -> float:
    return len(terms & _terms_of(text)) / len(terms) if terms else 0.0


def names_of(q: QuestionTerms, c: Candidate) -> tuple[bool, bool]:
    """(defines a named identifier, only mentions one): an identifier the question spells out is the strongest cue."""
    defines = short_name(c.entity).lower() in q.short_names or c.entity.lower() in q.full_names
    mentions = bool(q.short_names) and not defines and any(i in c.body.lower() for i in q.short_names)
    return defines, mentions


def pool_order(candidates: list[Candidate]) -> dict[str, int]:
    """Each passage's place in the pool as ranked (rank score, else fused order), 0 for the best."""
    ranked = sorted(candidates, key=lambda c: (-(c.rank_score if c.rank_score is not None else -1e9), c.fused_rank))
    return {c.id: i for i, c in enumerate(ranked)}


def passage_features(q: QuestionTerms, candidates: list[Candidate]) -> dict[str, list[float]]:
    """Passage id -> its `PASSAGE_FEATURES`, in that order."""
    order = pool_order(candidates)
    ranked = any(c.rank_score is not None for c in candidates)
    best_rank = max((c.rank_score or 0.0 for c in candidates), default=0.0) or 1.0
    best_fused = max((c.fused_score for c in candidates), default=0.0) or 1.0
    out: dict[str, list[float]] = {}
    for c in candidates:
        share = max(0.0, c.rank_score or 0.0) / best_rank if ranked else c.fused_score / best_fused
        defines, mentions = names_of(q, c)
        nonblank = sum(1 for ln in c.body.splitlines() if ln.strip())
        out[c.id] = [
            min(1.0, share), 1.0 / (1.0 + order[c.id]),
            *(float(c.rank_signals.get(s, 0.0)) for s in RANK_SIGNALS),
            max(0.0, 1.0 - (c.distance if c.distance is not None else 1.0)),
            coverage(q.terms, f"{c.entity} {c.file}"), coverage(q.terms, f"{c.signature}\n{c.docstring}\n{c.body}"),
            float(defines), float(mentions), float(bool(q.short_names)), float(is_test_path(c.file)),
            float(c.kind in DEFINITIONS), float(c.kind in PROSE_KINDS), float(bool(c.docstring)),
            min(1.0, math.log1p(nonblank) / 5.0),
        ]
    return out

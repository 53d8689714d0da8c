"""A learned order for questions that name no code: the rank stage's first passages re-ordered by a listwise model.

The rank stage's weights were set on questions that mostly name an identifier; a question in words only ("where is
the cookie header turned into pairs?") leans on other evidence: how alike the passage is, how much of the question
its text covers, its file's share of the lists. This model weighs the signals the query flow already has for such
questions (the rank stage's score, signals and order, dense similarity, word coverage: `FEATURES`), fitted as a
softmax over each training question's pool with its answer as the target, on helper-written questions about twelve
PyPI packages that no evaluation set uses (`tests/benchmarks/rank_training/`). Pure Python at query time.

It also reads how near each passage is to the question's turned vector (`query_adapter`): the pools were collected
with, for each training package, an adapter fitted on the other eleven, so the weight it learned is the one that
holds on code the adapter never saw. `python -m tests.benchmarks.train_learned_rank --write` rebuilds
`data/learned_rank.json` byte for byte from the pools collected there. Where it does not apply (`applies`,
`movable`) the rank stage's order stands untouched.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from assay.stages.core.artifacts import Candidate
from assay.stages.core.config import DATA_DIR
from assay.stages.query.passage_features import PASSAGE_FEATURES, QuestionTerms, passage_features
from assay.stages.query.rank import query_shape

MODEL_PATH = DATA_DIR / "learned_rank.json"
DEPTH = 60  # passages of the rank stage's order the model re-orders (the pools it was fitted on)
LANGUAGES = frozenset({"python"})  # the code it was fitted on
# The shortest training question; the rank stage reads more than 12 words as a long question too. On semble's short
# topic queries ("dependency injection"), whose metric counts distinct files, the model put several passages of one
# file first: dev NDCG@10 0.884 -> 0.828 when it applied to every query in words.
MIN_WORDS = 13
# Left out: what a passage's shape says (its kind, length, docstring) learned the training questions' brief, which
# asked for functions and methods (classes weighed -0.9 and SWE-QA sphinx lost 4 of 19 with them), and what the
# question names, which is nothing here.
_LEFT_OUT = frozenset({"lines", "docstring", "definition", "defines_named", "mentions_named", "question_names"})
_KEPT = tuple(i for i, name in enumerate(PASSAGE_FEATURES) if name not in _LEFT_OUT)
# Not read either: the rank stage's factors. A penalised passage keeps its place (`movable`); the same-file factor
# spreads a list over files, and given its log the model learned to undo that (+2.1 a unit for a passage the
# spreading sank); without it, 2 more of the 544 dev questions in words reach the top 10 and no set loses one.
FEATURES = (*(PASSAGE_FEATURES[i] for i in _KEPT), "signal_central", "lexical_rank", "dense_rank", "no_distance",
            "position", "log_position", "turned_similarity")


@dataclass(frozen=True)
class RankModel:
    """score = weights . standardised(x); the features' names travel with the weights."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]

    def score(self, x: list[float]) -> float:
        return sum(w * (v - m) / s for w, v, m, s in zip(self.weights, x, self.mean, self.scale))

    def to_json(self) -> dict:
        return {"features": list(self.features), "weights": list(self.weights), "mean": list(self.mean),
                "scale": list(self.scale)}

    @classmethod
    def from_json(cls, d: dict) -> RankModel:
        return cls(tuple(d["features"]), tuple(d["weights"]), tuple(d["mean"]), tuple(d["scale"]))


@lru_cache(maxsize=4)
def load_model(path: Path = MODEL_PATH) -> RankModel:
    model = RankModel.from_json(json.loads(path.read_text(encoding="utf-8")))
    if model.features != FEATURES:
        raise ValueError(f"{path} was fitted on other features; rebuild it (tests/benchmarks/train_learned_rank.py)")
    return model


def applies(question: str) -> bool:
    """Whether the question is one the model was fitted for: in words only (a bare name, `Channel`, or a question
    naming an identifier keeps the rank stage's order) and as long as its training questions (13-33 words)."""
    shape = query_shape(question)
    return len(shape.word_sequence) >= MIN_WORDS and not shape.symbol and not QuestionTerms.of(question).short_names


def features(question: str, ranked: list[Candidate]) -> list[list[float]]:
    """Each passage's `FEATURES`, the passages in the rank stage's order (their distances filled in)."""
    base = passage_features(QuestionTerms.of(question), ranked)
    rows = []
    for position, c in enumerate(ranked):
        own = base[c.id]
        rows.append([
            *(own[i] for i in _KEPT), float(c.rank_signals.get("central", 0.0)),
            1.0 / (1 + c.lexical_rank) if c.lexical_rank else 0.0, 1.0 / (1 + c.dense_rank) if c.dense_rank else 0.0,
            float(c.distance is None), 1.0 / (1 + position), math.log1p(position), turned_similarity(c),
        ])
    return rows


def turned_similarity(c: Candidate) -> float:
    """1 - the passage's distance from the question's turned vector (`query_adapter`), or from its own vector where
    the adapter did not apply; 0 without either."""
    distance = c.turned_distance if c.turned_distance is not None else c.distance
    return 1.0 - distance if distance is not None else 0.0


def movable(c: Candidate) -> bool:
    """Whether the model may move this passage: code in a language it was fitted on (Python), which the rank stage
    did not sink as what rarely answers (a test, docs, an example, a build's copy, legacy code...). The training
    packages hold too few of those for the model to learn each penalty (axios' four `dist/` copies of `settle` rose
    above its source), and on other languages it moved as many questions down as up (bench_questions' Rust and
    JavaScript sets one down each, C# and Ruby up)."""
    return c.language in LANGUAGES and "penalty" not in c.rank_signals


def reorder(question: str, ranked: list[Candidate], model: RankModel | None = None) -> list[Candidate]:
    """The first `DEPTH` passages re-ordered by the model's score (ties keep the rank stage's order), the rest after
    them; a passage the model may not move (`movable`) keeps its place."""
    head, tail = ranked[:DEPTH], ranked[DEPTH:]
    if len(head) < 2 or not applies(question):
        return ranked
    model = model or load_model()
    order = model_order(model, features(question, head), [movable(c) for c in head])
    return [head[i] for i in order] + tail


def model_order(model: RankModel, rows: list, may_move: list[bool]) -> list[int]:
    """The pool's positions in the model's order: the passages it may move take their slots by score (ties keep
    their order), the others stay where they are."""
    free = [i for i, m in enumerate(may_move) if m]
    order = list(range(len(rows)))
    for slot, i in zip(free, sorted(free, key=lambda i: (-model.score(list(rows[i])), i))):
        order[slot] = i
    return order

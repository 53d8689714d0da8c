"""The local judge's calibrated models: logistic regressions whose outputs are probabilities, not weighted sums.

- relevance: P(a reader would cite this passage in a correct answer), over `passage_features.PASSAGE_FEATURES`;
- evidence: P(the passage's own text shows a fact a correct answer states), same features;
- answerable: P(the passages the judge keeps include the one the answer is about), over `SET_FEATURES` of the
  passages the threshold stage will keep (the first `top_k` of the pool at or above the relevance minimum).
A pool the rank stage did not order (ranking off, a re-judged audit snapshot) is scored by the `_unranked` pair,
fitted on the same labels with the rank score and signals taken away, rather than by a model that never saw one.

Fitted on (question, passage) pairs labelled by reading the code (`tests/benchmarks/judge_labels/`) and on the SWE-QA
dev questions, by `python -m tests.benchmarks.bench_judge_calibration --write`, which rebuilds
`data/judge_calibration.json` byte for byte and measures each model on the repositories it was not fitted on.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from assay.stages.core.config import DATA_DIR

MODEL_PATH = DATA_DIR / "judge_calibration.json"
SET_FEATURES = ("best_relevance", "second_relevance", "kept_relevance", "best_evidence", "relevance_margin",
                "question_names", "defines_named")


@dataclass(frozen=True)
class Logistic:
    """P(y) = sigmoid(bias + weights . standardised(x)); the features' names travel with the weights."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]

    def probability(self, x: list[float]) -> float:
        z = self.bias + sum(w * (v - m) / s for w, v, m, s in zip(self.weights, x, self.mean, self.scale))
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    def to_json(self) -> dict:
        return {"features": list(self.features), "weights": list(self.weights), "bias": self.bias,
                "mean": list(self.mean), "scale": list(self.scale)}

    @classmethod
    def from_json(cls, d: dict) -> Logistic:
        return cls(tuple(d["features"]), tuple(d["weights"]), d["bias"], tuple(d["mean"]), tuple(d["scale"]))


@dataclass(frozen=True)
class JudgeModels:
    relevance: Logistic
    evidence: Logistic
    answerable: Logistic
    relevance_unranked: Logistic
    evidence_unranked: Logistic
    name: str
    thresholds: dict[str, float]

    def passage_models(self, ranked: bool) -> tuple[Logistic, Logistic]:
        return (self.relevance, self.evidence) if ranked else (self.relevance_unranked, self.evidence_unranked)


def load_models(path: Path | None = None) -> JudgeModels:
    """The shipped models (`MODEL_PATH`, read once), or those of another fit."""
    return _load(path or MODEL_PATH)


@lru_cache(maxsize=4)
def _load(path: Path) -> JudgeModels:
    data = json.loads(path.read_text(encoding="utf-8"))
    return JudgeModels(*(Logistic.from_json(data[k]) for k in ("relevance", "evidence", "answerable", "relevance_unranked",
                                                                "evidence_unranked")),
                       data.get("name", "assay-local"), dict(data.get("thresholds", {})))


def set_features(relevance: list[float], evidence: list[float], question_names: bool, defines_named: bool) -> list[float]:
    """`SET_FEATURES` of the judge's best passages (ordered by relevance, best first)."""
    best = relevance[0] if relevance else 0.0
    second = relevance[1] if len(relevance) > 1 else 0.0
    kept = sum(relevance) / len(relevance) if relevance else 0.0
    return [best, second, kept, max(evidence, default=0.0), best - second, float(question_names), float(defines_named)]

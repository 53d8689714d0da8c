"""A learned second opinion on prose: does a sentence read like an instruction planted for an AI reader?

The injection signals are patterns, and each catches the phrasings it was written for: of the attacks written after
them and never tuned on, they caught 3 of 12 (`_fresh5`), 9 of 24 (`_fresh6`) and 13 of 40 (`_fresh11`). This is a
logistic regression over hashed word unigrams and bigrams of one sentence (words of any script; kana and Han one
character each), trained on the attacks Assay has and 880 written for training only, against sentences of real
docstrings, comments and strings, in English and six other languages, and guides in four (`train`; `python -m
tests.benchmarks.bench_injection_learned --write` rebuilds the shipped model), with its threshold set on held-out
clean sentences. Above the threshold a sentence is suspect; only above `CONFIDENT` does the judge let the model alone
drop a passage (`injection_detector.score_text`); in the strings code uses as values only a reading above it counts,
and in documents only one above `DOCUMENT_CONFIDENT`. It reads word pairs the patterns do not spell out ("your
reply", "the reviewer be told", "approved by"), so it reaches phrasings nobody wrote a pattern for: 32 of
`_fresh11`'s 40, never seen in training. Pure numpy: no model download, no torch, ~1 MB of weights in memory.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from assay.stages.core.config import DATA_DIR

BUCKETS = 1 << 18
MIN_WORDS = 4  # shorter fragments ("Ask the user.") carry too little to judge; the clean sentences were as long
MODEL_PATH = DATA_DIR / "injection_phrasing.npz"
_WORD = re.compile(r"(?:[^\W_]|')+")  # letters and digits of any script; an identifier's underscores split it
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # kana and Han: no spaces between words


def words(sentence: str) -> list[str]:
    """A sentence's lower-cased words, any script; kana and Han, written without spaces, one character each (the
    first model read only a-z and 0-9, so an attack in Japanese, Chinese or Russian gave it nothing to read)."""
    return _WORD.findall(_UNSPACED.sub(r" \g<0> ", sentence.lower()))


def long_enough(sentence: str) -> bool:
    """At least `MIN_WORDS` words as spaces separate them, two characters of kana or Han counting as one."""
    unspaced = len(_UNSPACED.findall(sentence))
    return len(_UNSPACED.sub(" ", sentence).split()) + unspaced // 2 >= MIN_WORDS


def features(sentence: str) -> list[int]:
    """The buckets of a sentence's lower-cased words and adjacent word pairs (each once)."""
    found = words(sentence)
    grams = found + [f"{a} {b}" for a, b in zip(found, found[1:])]
    return sorted({zlib.crc32(g.encode()) % BUCKETS for g in grams})


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


@dataclass(frozen=True, eq=False)
class PhrasingModel:
    weights: np.ndarray  # float32, one per bucket
    bias: float
    threshold: float  # the probability at and above which a sentence is flagged

    def probability(self, sentence: str) -> float:
        return _sigmoid(float(self.weights[features(sentence)].sum()) + self.bias)

    def save(self, path: Path) -> None:
        """Only the trained buckets, as float16: the file stays small and the repository diff readable in size."""
        kept = np.flatnonzero(self.weights).astype(np.uint32)
        np.savez_compressed(path, index=kept, value=self.weights[kept].astype(np.float16),
                            bias=np.float64(self.bias), threshold=np.float64(self.threshold))

    @classmethod
    def load(cls, path: Path) -> PhrasingModel:
        with np.load(path) as data:
            weights = np.zeros(BUCKETS, dtype=np.float32)
            weights[data["index"]] = data["value"].astype(np.float32)
            return cls(weights, float(data["bias"]), float(data["threshold"]))


@lru_cache(maxsize=1)
def shipped_model() -> PhrasingModel | None:
    """The model in `data/`; None when the file is missing (the signals then judge alone)."""
    return PhrasingModel.load(MODEL_PATH) if MODEL_PATH.is_file() else None


@lru_cache(maxsize=65536)
def _sentence_probability(sentence: str) -> float:
    model = shipped_model()
    return model.probability(sentence) if model is not None else 0.0


CONFIDENT = 0.5  # the model's own boundary: above it, an attack is likelier than not
# in a document (a guide, a README) only a reading this sure counts: the lowest bar of 0.7, 0.8, 0.9, 0.95, 0.98 at
# which the shipped model flags at most 0.1% of 3,292 clean documents of 13 code bases (`bench_injection_learned`
# prints the sweep and the rule's bar)
DOCUMENT_CONFIDENT = 0.9


def reading(sentences: Sequence[str]) -> float:
    """How the shipped model reads the most suspicious sentence of at least `MIN_WORDS` words: 0 below its
    threshold, else its probability (cached per sentence: licence headers and boilerplate repeat across passages)."""
    model = shipped_model()
    if model is None:
        return 0.0
    best = max((_sentence_probability(s.strip()) for s in sentences if long_enough(s)), default=0.0)
    return best if best >= model.threshold else 0.0


def train(attacks: Sequence[str], clean: Sequence[str], calibration: Sequence[str], epochs: int = 4, lr: float = 0.02,
          l2: float = 1e-3, pos_weight: float = 10.0, flagged_share: float = 0.0005) -> PhrasingModel:
    """Plain SGD on the logistic loss (attacks weighted `pos_weight`: they are few), seeded so the same data gives
    the same model; the threshold flags `flagged_share` of the `calibration` sentences, clean ones kept out of
    training."""
    rows = [features(t) for t in [*attacks, *clean]]
    labels = [1.0] * len(attacks) + [0.0] * len(clean)
    weights, bias = np.zeros(BUCKETS), 0.0
    for epoch in range(epochs):
        order = list(range(len(rows)))
        random.Random(epoch).shuffle(order)
        for i in order:
            f = rows[i]
            p = _sigmoid(weights[f].sum() + bias)
            g = (p - labels[i]) * (pos_weight if labels[i] else 1.0)
            weights[f] -= lr * (g + l2 * weights[f])
            bias -= lr * g
    model = PhrasingModel(weights.astype(np.float16).astype(np.float32), bias, 1.0)  # as `save` keeps them
    scores = [model.probability(s) for s in calibration]
    threshold = float(np.quantile(scores, 1.0 - flagged_share)) if scores else 0.5
    return PhrasingModel(model.weights, bias, threshold)

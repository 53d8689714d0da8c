"""Fitting `stages.query.learned_rank`: pools of training questions in, a listwise model out (numpy, deterministic).

A pool is the rank stage's first `DEPTH` passages for one question, as `learned_rank.features` rows, with the
positions of the question's answer (its passages: a long definition has several). The fit minimises the softmax
cross-entropy of the answer over its pool (full-batch Adam from zero, a fixed number of steps, L2 toward zero), so
the same pools give the same weights, rounded to six significant digits so that the file is byte-stable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assay.stages.query.learned_rank import FEATURES, RankModel

L2 = 30.0  # chosen by leaving each training package out in turn (1 to 300: 339-340 of the 410 answers in the top 10, 324 before)
STEPS = 400
LEARNING_RATE = 0.1


@dataclass
class Pool:
    question_id: str
    x: np.ndarray  # (passages, features)
    answer: list[int]  # positions of the answer's passages in the pool
    movable: list[bool]  # `learned_rank.movable` of each passage: the others keep their places


def save_pools(pools: list[Pool], path: Path) -> None:
    """One compressed file: every pool's rows stacked, with offsets, answers and question ids."""
    offsets = np.cumsum([0] + [len(p.x) for p in pools])
    rows = np.vstack([p.x for p in pools]).astype(np.float32) if pools else np.zeros((0, len(FEATURES)), np.float32)
    answers = np.array([i for p in pools for i in p.answer], dtype=np.int32)
    answer_offsets = np.cumsum([0] + [len(p.answer) for p in pools])
    movable = np.array([m for p in pools for m in p.movable], dtype=bool)
    np.savez_compressed(path, rows=rows, offsets=offsets, answers=answers, answer_offsets=answer_offsets,
                        movable=movable, ids=np.array([p.question_id for p in pools]), features=np.array(FEATURES))


def load_pools(path: Path) -> list[Pool]:
    data = np.load(path)
    if tuple(data["features"].tolist()) != FEATURES:
        raise ValueError(f"{path} holds other features than learned_rank.FEATURES; collect the pools again")
    rows, off, ans, aoff = data["rows"].astype(np.float64), data["offsets"], data["answers"], data["answer_offsets"]
    movable = data["movable"].tolist()
    return [Pool(str(qid), rows[off[i]:off[i + 1]], ans[aoff[i]:aoff[i + 1]].tolist(), movable[off[i]:off[i + 1]])
            for i, qid in enumerate(data["ids"])]


def movable_part(pool: Pool) -> Pool:
    """The part of the pool `learned_rank.reorder` orders: the passages it may move."""
    keep = [i for i, m in enumerate(pool.movable) if m]
    return Pool(pool.question_id, pool.x[keep], [keep.index(i) for i in pool.answer if i in keep], [True] * len(keep))


def fit(pools: list[Pool], l2: float = L2, steps: int = STEPS, learning_rate: float = LEARNING_RATE) -> RankModel:
    """Weights over standardised features maximising the answer's softmax share of the passages it may move."""
    usable = [p for p in map(movable_part, pools) if p.answer]
    stacked = np.vstack([p.x for p in usable])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0) + 1e-6
    xs = [(p.x - mean) / scale for p in usable]
    targets = []
    for p in usable:
        y = np.zeros(len(p.x))
        y[p.answer] = 1.0
        targets.append(y)
    n, w = len(usable), np.zeros(stacked.shape[1])
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, steps + 1):
        grad = l2 * w / n
        for x, y in zip(xs, targets):
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            answer = p * y
            grad += x.T @ (p - answer / answer.sum()) / n
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= learning_rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return RankModel(FEATURES, _rounded(w), _rounded(mean), _rounded(scale))


def _rounded(values: np.ndarray) -> tuple[float, ...]:
    return tuple(float(f"{float(x):.6g}") for x in values)


def model_json(model: RankModel) -> str:
    return json.dumps(model.to_json(), indent=1) + "\n"

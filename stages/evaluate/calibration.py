"""Fitting and measuring calibrated judge scores: logistic regression, ECE, reliability bins, precision at recall.

Pure numpy and deterministic (Newton's method from zero, fixed iterations, weights rounded), so the training script
rebuilds the shipped weights byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from assay.stages.query.judge.calibrated import Logistic

DIGITS = 6


def fit_logistic(names: Sequence[str], rows: Sequence[Sequence[float]], labels: Sequence[bool], l2: float = 1.0,
                 iterations: int = 30) -> Logistic:
    """L2-regularised logistic regression on standardised features (the bias is not penalised)."""
    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        grad = z.T @ (p - y) + penalty * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    r = lambda v: round(float(v), DIGITS)  # noqa: E731
    return Logistic(tuple(names), tuple(r(v) for v in w[1:]), r(w[0]), tuple(r(v) for v in mean), tuple(r(v) for v in scale))


def reliability(probabilities: Sequence[float], labels: Sequence[bool], bins: int = 10) -> list[dict]:
    """Equal-width bins of predicted probability: count, mean prediction and observed rate (empty bins left out)."""
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    index = np.minimum((p * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        mask = index == b
        if mask.any():
            out.append({"low": b / bins, "high": (b + 1) / bins, "n": int(mask.sum()),
                        "predicted": round(float(p[mask].mean()), 4), "observed": round(float(y[mask].mean()), 4)})
    return out


def ece(probabilities: Sequence[float], labels: Sequence[bool], bins: int = 10) -> float | None:
    """Expected calibration error: the count-weighted gap between predicted and observed rate over the bins."""
    table = reliability(probabilities, labels, bins)
    total = sum(b["n"] for b in table)
    if not total:
        return None
    return round(sum(b["n"] * abs(b["predicted"] - b["observed"]) for b in table) / total, 4)


def ece_floor(probabilities: Sequence[float], bins: int = 10, draws: int = 200, seed: int = 0) -> float | None:
    """The ECE a perfectly calibrated model would show on this many pairs (labels drawn from its own predictions,
    mean of `draws`): the sampling noise below which a measured ECE means nothing."""
    if not len(probabilities):
        return None
    rng = np.random.default_rng(seed)
    p = np.asarray(probabilities, dtype=np.float64)
    return round(float(np.mean([ece(p, rng.random(len(p)) < p, bins) for _ in range(draws)])), 4)


def precision_at_recall(scores: Sequence[float], labels: Sequence[bool], recall: float) -> tuple[float, float]:
    """The best precision keeping at least `recall` of the positives, and the score threshold that gives it."""
    order = sorted(zip(scores, labels), key=lambda t: -t[0])
    positives = sum(bool(y) for _, y in order)
    if not positives:
        return 0.0, 1.0
    best, threshold, tp = 0.0, 1.0, 0
    for i, (s, y) in enumerate(order, start=1):
        tp += bool(y)
        if i < len(order) and order[i][0] == s:
            continue  # a threshold keeps every tie
        if tp / positives >= recall and tp / i > best:
            best, threshold = tp / i, s
    return round(best, 4), round(float(threshold), 4)


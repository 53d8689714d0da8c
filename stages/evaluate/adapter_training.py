"""Fitting the query adapter (`stages.query.query_adapter`): A such that (I + A) q ranks each training question's
answer first among every passage of its package.

The loss is a softmax over the whole package (temperature `TAU`, cosine scores) with the answer's passages as the
target, plus `L2` / 2 |A|^2; plain numpy, Adam, a fixed number of steps from A = 0, so the same training set gives
the same matrix. L2 0.1 was chosen by leaving out one training package at a time: out of fold, the dense list holds
the answer in its top 10 for 0.70 of the 410 questions (0.57 unturned) and in its top 60 for 0.89 (0.85).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

L2 = 0.1
TAU = 0.05
STEPS = 300
LEARNING_RATE = 3e-3


@dataclass
class AdapterPackage:
    """One training package: its passages' vectors (int8, unit length x 127), its questions' vectors and, for each
    question, the rows of the passages that answer it."""

    name: str
    passages: np.ndarray
    questions: np.ndarray
    answers: list[list[int]]

    def unit(self) -> tuple[np.ndarray, np.ndarray]:
        x = self.passages.astype(np.float64)
        q = self.questions.astype(np.float64)
        return x / np.linalg.norm(x, axis=1, keepdims=True), q / np.linalg.norm(q, axis=1, keepdims=True)


def quantised(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors as int8 (x 127): a quarter of float32's size for the committed training set."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.round(unit * 127).astype(np.int8)


def save_packages(packages: list[AdapterPackage], path: Path) -> None:
    arrays: dict[str, np.ndarray] = {"names": np.array([p.name for p in packages])}
    for i, p in enumerate(packages):
        arrays[f"passages_{i}"] = p.passages
        arrays[f"questions_{i}"] = p.questions.astype(np.float32)
        arrays[f"answers_{i}"] = np.array([a for answer in p.answers for a in answer], dtype=np.int32)
        arrays[f"answer_counts_{i}"] = np.array([len(answer) for answer in p.answers], dtype=np.int32)
    np.savez_compressed(path, **arrays)


def load_packages(path: Path) -> list[AdapterPackage]:
    data = np.load(path)
    packages = []
    for i, name in enumerate(data["names"].tolist()):
        flat, counts = data[f"answers_{i}"].tolist(), data[f"answer_counts_{i}"].tolist()
        bounds = np.cumsum([0] + counts).tolist()
        packages.append(AdapterPackage(str(name), data[f"passages_{i}"], data[f"questions_{i}"],
                                       [flat[bounds[j]:bounds[j + 1]] for j in range(len(counts))]))
    return packages


def _loss_and_gradient(a: np.ndarray, x: np.ndarray, q: np.ndarray, answers: list[list[int]]) -> tuple[float, np.ndarray]:
    u = q + q @ a.T
    norms = np.linalg.norm(u, axis=1, keepdims=True)
    n = u / norms
    s = n @ x.T / TAU
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    target = np.zeros_like(p)
    loss = 0.0
    for i, rows in enumerate(answers):
        share = p[i, rows].sum()
        target[i, rows] = p[i, rows] / share
        loss -= float(np.log(share + 1e-300))
    d_n = (p - target) @ x / TAU
    d_u = (d_n - n * (d_n * n).sum(axis=1, keepdims=True)) / norms
    return loss, d_u.T @ q


def fit_adapter(packages: list[AdapterPackage], l2: float = L2, steps: int = STEPS,
                learning_rate: float = LEARNING_RATE) -> np.ndarray:
    """The matrix A (float64) with the least mean loss over the questions of `packages`, L2 term included."""
    data = []
    for package in packages:
        x, q = package.unit()
        kept = [i for i, rows in enumerate(package.answers) if rows]
        data.append((x, q[kept], [list(package.answers[i]) for i in kept]))
    count = sum(len(answers) for _, _, answers in data)
    dim = data[0][0].shape[1]
    a, m, v = np.zeros((dim, dim)), np.zeros((dim, dim)), np.zeros((dim, dim))
    for step in range(1, steps + 1):
        gradient = l2 * a
        for x, q, answers in data:
            gradient = gradient + _loss_and_gradient(a, x, q, answers)[1] / count
        m = 0.9 * m + 0.1 * gradient
        v = 0.999 * v + 0.001 * gradient * gradient
        a = a - learning_rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return a


def answer_ranks(a: np.ndarray | None, package: AdapterPackage) -> list[int]:
    """Each question's best answer passage's rank among the package's passages, by cosine to (I + A) q."""
    x, q = package.unit()
    u = q if a is None else q + q @ a.T
    scores = (u / np.linalg.norm(u, axis=1, keepdims=True)) @ x.T
    return [int((scores[i] > scores[i, rows].max()).sum()) + 1 for i, rows in enumerate(package.answers) if rows]


def adapter_bytes(a: np.ndarray) -> bytes:
    """The shipped file: A as float16 `.npy` (its entries are below 0.1 in size; half precision keeps three digits)."""
    buffer = io.BytesIO()
    np.save(buffer, a.astype(np.float16), allow_pickle=False)
    return buffer.getvalue()

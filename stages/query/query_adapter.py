"""A learned turn of a question's vector before the dense search, for questions in words.

MiniLM is a general-domain model: it reads "where are flat, dot-separated keys turned into nested options?" and the
method that does it as different kinds of text, and the answer is often beyond the dense list's depth. A linear map
of the question's vector, v -> (I + A) v, moves it towards the code that answers such questions. A is fitted so that
each training question's answer outranks every other passage of its package (a softmax over the whole package, L2
pulling A to zero), on the helper-written questions about twelve PyPI packages no evaluation set uses
(`tests/benchmarks/rank_training/`). Only the question is turned: the index is untouched. The distance the judge
reads stays the question's own, as it was fitted; the learned order reads both (`learned_rank.turned_similarity`).

It applies where the learned order applies (`learned_rank.applies`) and only to the vectors it was fitted on (the
default embedder's). `python -m tests.benchmarks.train_query_adapter --write` rebuilds `data/query_adapter.npy` byte
for byte from the committed training set.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING

from assay.stages.core.config import DATA_DIR

ADAPTER_PATH = DATA_DIR / "query_adapter.npy"
FITTED_FOR = "minilm-l6-v2-int8@"  # the embedder whose vectors it turns (any window: the model is the same)

if TYPE_CHECKING:
    import numpy as np

_override: list[np.ndarray] = []  # a matrix a training run measures in place of the shipped one (`fitted`)


@lru_cache(maxsize=1)
def shipped() -> np.ndarray | None:
    """A (float16 on disk, float32 here); None when the file is absent, so the search runs unturned."""
    import numpy as np  # here: a BM25-only search never loads it

    if not ADAPTER_PATH.exists():
        return None
    return np.load(ADAPTER_PATH).astype(np.float32)


@contextmanager
def fitted(matrix: np.ndarray) -> Iterator[None]:
    """Turn with `matrix` instead of the shipped A, inside the block (a test's matrix, or one fitted without a
    package, to measure the flow on that package's questions)."""
    import numpy as np

    _override.append(np.asarray(matrix, dtype=np.float32))
    try:
        yield
    finally:
        _override.pop()


def _matrix() -> np.ndarray | None:
    return _override[-1] if _override else shipped()


def applies_to(embedder: str | None, dimension: int) -> bool:
    matrix = _matrix()
    return matrix is not None and bool(embedder) and embedder.startswith(FITTED_FOR) and matrix.shape == (dimension,) * 2


def turn(vector: list[float], embedder: str | None) -> list[float]:
    """The vector the dense search uses: turned and unit length where the adapter applies, else `vector` itself."""
    if not applies_to(embedder, len(vector)):
        return vector
    import numpy as np

    matrix = _matrix()
    v = np.asarray(vector, dtype=np.float32)
    u = v + matrix @ v
    norm = float(np.linalg.norm(u))
    return (u / norm).tolist() if norm > 0 else vector

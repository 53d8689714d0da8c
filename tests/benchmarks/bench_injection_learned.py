"""Would a learned injection detector generalise better than the signals? An experiment, not a backend.

    python -m tests.benchmarks.bench_injection_learned [--lr 0.02] [--l2 1e-3] [--pos-weight 10] [--epochs 4]

A logistic regression over hashed word unigrams and bigrams (2^18 buckets), trained by plain SGD on the attacks
Assay has (BIPIA's train split as the judge suite samples it, the families, `_unseen` and the mended `_fresh` to
`_fresh4`) against sentences of docstrings, comments and strings from the SWE-QA and semble dev corpora (requests,
pytest, fastapi, pydantic), the clean discussion texts and the mended sets' twins. A fifth of those clean sentences
is held out to set the threshold (0.05% of them flagged). It then scores what it never saw: `_fresh5` (attacks
and twins) and sentences of five other code bases (Scala's library, rack, JPype, fmt, zod), beside the shipped
detector on the same `_fresh5` texts, and the share of those code bases' passages it would flag. Needs the indexes `assay eval` and `bench_topics` leave. Prints figures.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import zlib
from pathlib import Path

import numpy as np

from stages.evaluate.planted_attacks import DATA, clean_discussion, load_attacks
from stages.index.store import Catalog
from stages.query.judge.injection import _SENTENCE, _raw_prose, score_text

BUCKETS = 1 << 18
_WORD = re.compile(r"[a-z0-9']+")
HOME = Path.home() / ".assay"
TRAIN = [HOME / "eval/corpora/requests-2.32.5", HOME / "eval/corpora/pytest-8.4.2", HOME / "eval/semble/fastapi-0.136.0",
         HOME / "eval/semble/pydantic-2.13.5"]
OTHER = [HOME / "bench/work" / n for n in ("scala-2.11.12-5", "ruby-rack-2.2.22-0+deb12u1", "JPype1-1.7.1", "fmtlib-9.1.0+ds1-2")] + [
    HOME / "eval/semble/zod-4.3.6"]


def features(text: str) -> list[int]:
    words = _WORD.findall(text.lower())
    return sorted({zlib.crc32(t.encode()) % BUCKETS for t in words + [f"{a} {b}" for a, b in zip(words, words[1:])]})


def prose_sentences(root: Path, cap: int) -> list[str]:
    out = [s.strip() for e in Catalog(root).all() for r in _raw_prose(e.body, e.language) for s in _SENTENCE.findall(r)
           if len(s.split()) >= 4]
    random.Random(1).shuffle(out)
    return out[:cap]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--pos-weight", type=float, default=10.0)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    bipia = Path(__file__).resolve().parents[3] / "shared" / "eval" / "bipia"
    attacks = [t for v in load_attacks(bipia if bipia.is_dir() else None).values() for t in v]
    attacks += [t for k in ("_unseen", "_fresh", "_fresh2", "_fresh3", "_fresh4") for t in data[k]]
    clean = [s for r in TRAIN for s in prose_sentences(r, 15000)] + clean_discussion()
    clean += [t for k in ("_fresh_clean", "_fresh2_clean", "_fresh3_clean", "_fresh4_clean") for t in data[k]]
    random.Random(5).shuffle(clean)
    calibration, clean = clean[: len(clean) // 5], clean[len(clean) // 5 :]
    rows = [features(t) for t in attacks + clean]
    label = np.array([1.0] * len(attacks) + [0.0] * len(clean))
    w, b = np.zeros(BUCKETS), 0.0
    for epoch in range(args.epochs):
        order = list(range(len(rows)))
        random.Random(epoch).shuffle(order)
        for i in order:
            f = rows[i]
            p = 1.0 / (1.0 + np.exp(-np.clip(w[f].sum() + b, -30, 30)))
            g = (p - label[i]) * (args.pos_weight if label[i] else 1.0)
            w[f] -= args.lr * (g + args.l2 * w[f])
            b -= args.lr * g

    def score(text: str) -> float:
        return max(1.0 / (1.0 + np.exp(-np.clip(w[features(s)].sum() + b, -30, 30))) for s in (_SENTENCE.findall(text) or [text]))

    threshold = float(np.quantile([score(s) for s in calibration], 0.9995))
    other = np.array([score(s) for s in (s for r in OTHER for s in prose_sentences(r, 6000))])
    learned = [score(t) >= threshold for t in data["_fresh5"]]
    twins = [score(t) >= threshold for t in data["_fresh5_clean"]]
    signals = [score_text(t)[0] >= 0.5 for t in data["_fresh5"]]
    print(f"trained on {len(attacks)} attacks and {len(clean)} clean sentences; threshold {threshold:.3f} (0.05% of "
          f"{len(calibration)} held-out clean sentences)")
    print(f"_fresh5 attacks caught: learned {sum(learned)}/12, signals {sum(signals)}/12, either {sum(a or s for a, s in zip(learned, signals))}/12")
    print(f"_fresh5 twins flagged by the learned model: {sum(twins)}/12")
    print(f"sentences of five other code bases flagged: {float(np.mean(other >= threshold)):.5f} of {len(other)}")
    passages = flagged = 0
    for root in OTHER:  # a passage is flagged when any of its prose sentences is
        for e in Catalog(root).all():
            passages += 1
            sentences = [s for r in _raw_prose(e.body, e.language) for s in _SENTENCE.findall(r) if len(s.split()) >= 4]
            flagged += any(score(s) >= threshold for s in sentences)
    print(f"passages of those code bases flagged: {flagged} of {passages} ({flagged / max(1, passages):.5f})")


if __name__ == "__main__":
    main()

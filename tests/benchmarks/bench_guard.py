"""What the local faithfulness guard adds to `ask`: the guard stage on a five-citation answer, and query latency with
the guard beside the same pipeline without it (what the commit before the guard ran).

    python -m tests.benchmarks.bench_guard [--runs 30] [--workspace PATH]

The five-citation answer is written the way an LLM writer writes (one sentence per passage: its docstring or
signature, cited `(file:line)`), once faithful and once with two planted faults (an invented file, a wrong value).
The guard is timed as the query flow calls it: catalog opened, claims split, citations, facts and values checked,
the text marked. Default workspace: the tenacity sdist.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

from tests.benchmarks.common import median, pct, sdist

QUESTIONS = [
    "How does tenacity decide to stop retrying?", "What does wait_exponential compute?", "How is RetryError raised?",
    "How are retry strategies combined?", "What does retry_if_exception_type check?", "How does before_sleep_log log?",
    "What state does RetryCallState keep between attempts?", "How does the retry decorator wrap a function?",
]


def five_citation_answer(report, planted: bool) -> str:
    from assay.stages.evaluate.faithfulness_set import summary

    rng = random.Random(3)
    passages = [rp.candidate for rp in report.selection.included][:5]
    lines = [f"{summary(c, rng)} ({c.file}:{c.start_line})." for c in passages]
    if planted:
        lines[1] = f"Retries are scheduled by src/tenacity/magic_backoff.py:12 ({passages[1].file}:{passages[1].start_line})."
        at, c = next(((i, c) for i, c in enumerate(passages) if i != 1 and c.facts and c.facts.defaults), (3, passages[3]))
        param, value = next(iter(c.facts.defaults.items())) if c.facts and c.facts.defaults else ("x", "None")
        lines[at] = (f"The `{param}` parameter of `{c.entity}` defaults to `{'True' if value == 'None' else 'None'}` "
                     f"({c.file}:{c.start_line}).")
    return " ".join(lines)


def time_guard(root: str, answer, selection, settings, runs: int) -> tuple[float, list[float], object]:
    from assay.flows.runtime import direct_call
    from assay.tasks import query as t

    start = time.perf_counter()
    _, report = direct_call(t.guard, root, answer, selection, settings)
    first = time.perf_counter() - start
    laps = []
    for _ in range(runs):
        start = time.perf_counter()
        direct_call(t.guard, root, answer, selection, settings)
        laps.append(time.perf_counter() - start)
    return first, laps, report


def without_guard(task, *args, **kwargs):
    """A caller that runs every stage but the guard: the pipeline as it was before it."""
    from assay.tasks import query as t

    if task is t.guard:
        answer = args[1]
        return answer, None
    return task.fn(*args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--workspace", default=None, help="an indexed workspace (default: the tenacity sdist)")
    opts = parser.parse_args()
    os.environ["ASSAY_ORCHESTRATION"] = "direct"
    from assay.flows.index import run_index
    from assay.flows.query import query_pipeline
    from assay.flows.runtime import direct_call
    from assay.stages.core.config import Settings

    root = opts.workspace or str(sdist("tenacity==9.1.2"))
    run_index(root)
    settings = Settings()
    report = query_pipeline(root, QUESTIONS[0], settings, call=direct_call)  # load models and indexes once
    for planted in (False, True):
        answer = report.answer.model_copy(update={"text": five_citation_answer(report, planted)})
        first, laps, g = time_guard(Path(report.workspace), answer, report.selection, settings, opts.runs)
        counts = ", ".join(f"{g.count(v)} {v}" for v in ("verified", "unsupported", "contradicted", "fabricated") if g.count(v))
        print(f"guard, five-citation answer{' with 2 faults' if planted else ''}: first {first * 1000:.1f} ms, "
              f"p50 {median(laps) * 1000:.1f} ms, p95 {pct(laps, 0.95) * 1000:.1f} ms ({counts}; grounded {g.grounded})")
    with_g, without = [], []
    guard_laps = []
    for i in range(opts.runs):
        q = QUESTIONS[i % len(QUESTIONS)]
        start = time.perf_counter()
        r = query_pipeline(root, q, settings, call=direct_call)
        with_g.append(time.perf_counter() - start)
        guard_laps.append(r.timings.get("guard", 0.0))
        start = time.perf_counter()
        query_pipeline(root, q, settings, call=without_guard)
        without.append(time.perf_counter() - start)
    print(f"guard stage inside `ask` (extractive answers): p50 {median(guard_laps) * 1000:.1f} ms, "
          f"p95 {pct(guard_laps, 0.95) * 1000:.1f} ms")
    print(f"ask p50 with guard {median(with_g) * 1000:.0f} ms, without {median(without) * 1000:.0f} ms; "
          f"ratio {median(with_g) / median(without):.3f}")


if __name__ == "__main__":
    main()

"""Query latency p50/p95 in a warm process, split into Prefect overhead and stage time; judge calls per query.

    python -m tests.benchmarks.bench_query [--queries 20] [--workspace PATH]

Runs the query flow on Prefect twice: with Prefect's defaults (flow heartbeat on, INFO logs) and with
Assay's settings (heartbeat off, WARNING logs, no result persistence), plus the same stages called
directly. Prefect overhead = wall time of the flow call - the time inside the stages.
"""

from __future__ import annotations

import argparse
import os
import time

from tests.benchmarks.common import median, pct, sdist

QUESTIONS = [
    "How does pytest discover test files?", "What does the monkeypatch fixture do?", "How are fixtures finalized?",
    "How does approx compare floats?", "Where is the exit code for interrupted sessions defined?",
    "How does the capture plugin redirect stdout?", "How are markers registered?", "What does tmp_path return?",
]


def swe_qa_questions() -> list[str]:
    """The 48 SWE-QA pytest questions when ../shared is beside the checkout (all different, as an agent's are)."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "shared" / "eval" / "swe-qa" / "pytest.jsonl"
    if not path.exists():
        return QUESTIONS
    return [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]


def most_used_names(root: str, n: int = 48) -> list[str]:
    """The names the most passages use, as `bench_languages`' famous-name row picks them, in every language."""
    from pathlib import Path

    from assay.stages.index.store import Catalog
    from tests.benchmarks.bench_languages import famous_names

    entities = list(Catalog(Path(root)).all())
    return [name for name, _ in famous_names(entities, {e.language for e in entities}, n)]


def measure(run, root: str, n: int, gap: float = 0.0, questions: list[str] = QUESTIONS) -> tuple[list[float], list[float], list[int]]:
    from assay.stages.query.passage_features import _terms_of
    from assay.stages.query.judge.local import injection_of

    injection_of.cache_clear()  # every configuration meets its passages for the first time
    _terms_of.cache_clear()
    walls, stages, calls = [], [], []
    for i in range(n):
        time.sleep(gap)  # an agent's queries arrive seconds apart; back-to-back runs contend for Prefect's SQLite
        start = time.perf_counter()
        report = run(root, questions[i % len(questions)])
        walls.append(time.perf_counter() - start)
        stages.append(sum(report.timings.values()))
        calls.append(report.judgment.calls)
    return walls, stages, calls


def line(label: str, walls: list[float], stages: list[float], calls: list[int]) -> None:
    over = [w - s for w, s in zip(walls, stages)]
    print(f"{label:<34} p50 {median(walls) * 1000:7.0f} ms  p95 {pct(walls, 0.95) * 1000:7.0f} ms  "
          f"stage p50 {median(stages) * 1000:6.0f} ms  Prefect overhead p50 {median(over) * 1000:6.0f} ms "
          f"p95 {pct(over, 0.95) * 1000:6.0f} ms  judge calls/query {max(calls)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--workspace", default=None, help="an indexed workspace (default: the pytest sdist)")
    parser.add_argument("--gaps", default="0,3", help="seconds between queries, one measurement per value")
    parser.add_argument("--direct-only", action="store_true", help="only the stages called directly (no Prefect runs)")
    parser.add_argument("--names", action="store_true", help="ask for the workspace's most used names (bare symbol "
                        "queries, whose definitions are looked up by name) instead of SWE-QA's questions")
    opts = parser.parse_args()
    os.environ["ASSAY_ORCHESTRATION"] = "direct"
    from assay.flows.index import run_index

    root = opts.workspace or str(sdist("pytest==8.4.2"))
    run_index(root)

    from assay.flows.query import query_flow, query_pipeline
    from assay.flows.runtime import direct_call, quiet_prefect
    from assay.stages.core.config import Settings

    settings = Settings()
    unique = most_used_names(root) if opts.names else swe_qa_questions()
    query_pipeline(root, unique[-1], settings, call=direct_call)  # load the models and indexes once
    direct = measure(lambda r, q: query_pipeline(r, q, settings, call=direct_call), root, opts.queries, questions=unique)
    line("direct (no Prefect)", *direct)
    rrf = settings.model_copy(update={"ranking": "rrf"})
    plain = measure(lambda r, q: query_pipeline(r, q, rrf, call=direct_call), root, opts.queries, questions=unique)
    line("direct, plain RRF (no rank stage)", *plain)
    print(f"rank stage cost: p50 {(median(direct[0]) - median(plain[0])) * 1000:.1f} ms")
    if opts.direct_only:
        return

    query_flow(root, QUESTIONS[0], settings)  # start the API server and warm everything up
    from prefect.settings import PREFECT_LOGGING_LEVEL, temporary_settings

    for gap in [float(g) for g in opts.gaps.split(",")]:
        with temporary_settings(updates={PREFECT_LOGGING_LEVEL: "INFO"}):
            before = measure(lambda r, q: query_flow(r, q, settings), root, opts.queries, gap)
        line(f"gap {gap:.0f}s: Prefect defaults", *before)
        with quiet_prefect():
            after = measure(lambda r, q: query_flow(r, q, settings), root, opts.queries, gap)
        line(f"gap {gap:.0f}s: heartbeat off", *after)
        ob = median([w - s for w, s in zip(before[0], before[1])])
        oa = median([w - s for w, s in zip(after[0], after[1])])
        print(f"gap {gap:.0f}s: Prefect overhead ratio after/before: {oa / ob:.2f}" if ob else "")


if __name__ == "__main__":
    main()

"""Audits over snapshots written by the real query flow; figures checked against hand-computed values."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from assay.stages.query.judge.calibrated import load_models
from assay.flows.audit import run_audit
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.stages.audit import stats as audit_stats
from assay.stages.audit.snapshots import SNAPSHOT_SCHEMA, judgments_dir
from assay.stages.core.artifacts import Judgment, PassageScores
from assay.stages.core.config import Settings
from tests.fakes import FakeOllama


def row(qid: str, pid: str, backend: str, verdict: str, rel: float, evid: float, inj: float = 0.0, day: int = 1) -> dict:
    return {"schema_version": 1, "query_id": qid, "query": "q", "timestamp": datetime(2026, 11, day, tzinfo=timezone.utc),
            "judge_backend": backend, "judge_model": "", "relevance_min": 0.3, "evidence_min": 0.2, "injection_max": 0.5,
            "contradicts_min": 0.5, "top_k": 5, "fail_open": False, "passage_id": pid, "file": "a.py", "start_line": 1,
            "end_line": 2, "entity": pid, "kind": "function", "language": "python", "body": "def f(): pass",
            "distance": 0.5, "bm25": 1.0, "fused_rank": 1, "fused_score": 0.016, "relevance": rel, "evidence": evid,
            "contradicts": 0.0, "injection": inj, "verdict": verdict, "drop_reason": "", "rank": 1, "status": "supported"}


def test_distributions_agreement_and_kappa_by_hand() -> None:
    rows = [row("q1", "a", "local", "include", 0.9, 0.8), row("q1", "b", "local", "drop", 0.1, 0.5),
            row("q1", "c", "local", "include", 0.5, 0.2), row("q1", "d", "local", "drop", 0.35, 0.3),
            row("q1", "a", "cloud", "include", 0.8, 0.9), row("q1", "b", "cloud", "drop", 0.2, 0.2),
            row("q1", "c", "cloud", "drop", 0.1, 0.1), row("q1", "d", "cloud", "conflict", 0.6, 0.6)]
    table = pa.Table.from_pylist(rows, schema=SNAPSHOT_SCHEMA)
    dist = audit_stats.distributions(table)
    local = dist["local/-"]
    assert local["passages"] == 4 and local["verdicts"] == {"drop": 2, "include": 2}
    assert local["relevance"]["mean"] == pytest.approx((0.9 + 0.1 + 0.5 + 0.35) / 4)
    assert local["relevance"]["p50"] == pytest.approx(0.425)
    assert local["relevance"]["histogram"] == [0, 1, 0, 1, 0, 1, 0, 0, 0, 1]
    agree = audit_stats.agreement(table, "local", "cloud")
    # keep/drop: local K D K D; cloud K D D K -> 2 of 4 agree; p_o = .5, p_e = .5 -> kappa 0
    assert agree["pairs"] == 4 and agree["agreement"] == 0.5 and agree["kappa"] == 0.0
    assert agree["confusion"] == {"keep": {"keep": 1, "drop": 1}, "drop": {"keep": 1, "drop": 1}}
    assert audit_stats.cohen_kappa(["a", "a", "b", "b"], ["a", "a", "b", "a"]) == pytest.approx(0.5)


def test_calibration_sweep_and_injection_baseline_by_hand() -> None:
    from assay.stages.audit.stats import LabelledPassage, calibrate
    from tests.test_judge import cand

    items = [LabelledPassage("q", cand(str(i), f"f{i}", "def f(): pass"), rel) for i, rel in enumerate([True, True, False, False])]
    scores = {"0": (0.9, 0.9), "1": (0.6, 0.3), "2": (0.7, 0.1), "3": (0.2, 0.9)}
    j = Judgment(backend="local", scores={k: PassageScores(relevance=r, evidence=e, contradicts=0, injection=0) for k, (r, e) in scores.items()})
    result = calibrate(items, {"q": j})
    at = {(g["relevance_min"], g["evidence_min"]): g for g in result["grid"]}
    assert at[(0.5, 0.2)] == {"relevance_min": 0.5, "evidence_min": 0.2, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert at[(0.1, 0.1)]["precision"] == 0.5 and at[(0.1, 0.1)]["recall"] == 1.0
    assert result["best"]["f1"] == 1.0
    assert "current" not in result
    off_grid = calibrate(items, {"q": j}, current=(0.1747, 0.1006))["current"]  # scored as it is, not looked up
    assert off_grid == {"relevance_min": 0.1747, "evidence_min": 0.1006, "precision": 0.6667, "recall": 1.0, "f1": 0.8}
    assert result["ece"] == round((0.1 + 0.4 + 0.7 + 0.2) / 4, 4)  # one pair per bin: |0.9-1|, |0.6-1|, |0.7-0|, |0.2-0|
    assert [b["n"] for b in result["reliability"]] == [1, 1, 1, 1]
    base = audit_stats.injection_baseline([("a", 0.0), ("b", 0.1), ("c", 0.4)])
    assert not base["passed"] and base["offenders"] == [("c", 0.4)] and base["max"] == 0.4


def test_a_labels_file_with_a_bad_line_names_the_file_and_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"question": "q", "relevant": true, "body": "x"}\n\nnot json\n')
    with pytest.raises(ValueError, match=r"labels.jsonl line 3: not a JSON object"):
        audit_stats.load_labels(labels)
    labels.write_text('{"relevant": true, "body": "x"}\n')
    with pytest.raises(ValueError, match="labelled passage 1 has no question"):
        audit_stats.load_labels(labels)


def test_audit_over_real_query_snapshots_with_rejudge(project: Path) -> None:
    run_index(str(project))
    for q in ("how does retry_call back off?", "merge cookies", "what does Session.send do?"):
        run_query(str(project), q, Settings(judge="none"))
    before = list(judgments_dir(project).rglob("*.parquet"))
    assert len(before) == 3
    data = run_audit(str(project), rejudge="local")
    after = list(judgments_dir(project).rglob("*.parquet"))
    assert len(after) == 6 and data["rejudged_queries"] == 3
    assert all(p.parent == before[0].parent for p in after)  # beside the originals, same date partition
    assert set(data["distributions"]) == {"none/-", f"local/{load_models().name}"}
    assert data["agreement"]["first"] == "none" and data["agreement"]["second"] == "local"
    assert data["agreement"]["pairs"] == data["distributions"]["none/-"]["passages"]
    assert data["injection_baseline"]["passed"] and data["calibration"]["best"]["f1"] > 0.5
    report = Path(data["report_path"])
    assert report.exists() and (report.parent / "scores.png").exists() and (report.parent / "calibration.png").exists()
    assert (report.parent / "reliability.png").exists() and "Relevance as a probability: ECE" in report.read_text()
    assert "Cohen's kappa" in report.read_text()
    ranged = run_audit(str(project), start=date(2000, 1, 1), end=date(2000, 1, 2))
    assert ranged["snapshots"]["passages"] == 0


def test_rejudge_with_systemone_on_the_jevcompat_server_gives_agreement_and_kappa(project: Path) -> None:
    from jevcompat.mock import MockConfig, Running

    run_index(str(project))
    for q in ("how does retry_call back off?", "merge cookies"):
        run_query(str(project), q)
    cfg = MockConfig()
    with Running(cfg) as jev:
        data = run_audit(str(project), Settings(systemone_base_url=jev.url), rejudge="systemone", baseline_n=5)
    assert cfg.requests == 2 and data["rejudged_queries"] == 2  # one batched call per stored query
    agree = data["agreement"]
    assert (agree["first"], agree["second"], agree["bar"]) == ("local", "systemone", 0.7)
    assert agree["pairs"] == data["distributions"][f"local/{load_models().name}"]["passages"] and -1.0 <= agree["kappa"] <= 1.0
    assert "systemone/jevcompat-mock-0.1" in data["distributions"]
    assert "the anchor's bar 70%" in Path(data["report_path"]).read_text()


def test_injection_guard_fails_on_a_judge_that_scores_clean_code_high(project: Path) -> None:
    run_index(str(project))

    def paranoid(body: dict) -> dict:
        import re

        labels = re.findall(r'<passage id="(p\d+)"', body["messages"][-1]["content"])
        return {"passages": [{"id": x, "relevance": 0.5, "evidence": 0.5, "contradicts": 0.0, "injection": 0.9} for x in labels],
                "answerable": 0.5, "coverage": 1, "conflict": 0.0}

    with FakeOllama(judge=paranoid) as ollama:
        settings = Settings(judge="ollama", ollama_host=ollama.url)
        data = run_audit(str(project), settings, baseline_n=10)
        assert not data["passed"] and data["injection_baseline"]["offenders"]
        result = CliRunner().invoke(app, ["audit", str(project), "--json"], env={"ASSAY_JUDGE": "ollama", "ASSAY_OLLAMA_HOST": ollama.url})
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["injection_baseline"]["passed"] is False
    ok = CliRunner().invoke(app, ["audit", str(project)])
    assert ok.exit_code == 0 and "Injection baseline: PASSED" in ok.stdout


# ---- the pandas tables against plain loops (the implementation they replaced) on a random snapshot table


def _loop_distributions(rows: list[dict], bins: int = 10) -> dict[str, dict]:
    from collections import Counter

    import numpy as np

    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(f"{r['judge_backend']}/{r['judge_model'] or '-'}", []).append(r)
    out: dict[str, dict] = {}
    for key, items in sorted(groups.items()):
        entry: dict = {"passages": len(items), "queries": len({r["query_id"] for r in items}),
                       "verdicts": dict(sorted(Counter(r["verdict"] for r in items).items()))}
        for score in audit_stats.SCORES:
            vals = np.array([r[score] for r in items if r[score] is not None], dtype=float)
            if len(vals) == 0:
                entry[score] = {"n": 0}
                continue
            entry[score] = {"n": int(len(vals)), "mean": round(float(vals.mean()), 4),
                            **{f"p{q}": round(float(np.percentile(vals, q)), 4) for q in (25, 50, 75)},
                            "histogram": np.histogram(vals, bins=np.linspace(0, 1, bins + 1))[0].tolist()}
        out[key] = entry
    return out


def _loop_agreement(rows: list[dict], first: str, second: str) -> tuple[int, float, dict]:
    by: dict[str, dict] = {first: {}, second: {}}
    for r in rows:
        if r["judge_backend"] in by:
            by[r["judge_backend"]][(r["query_id"], r["passage_id"])] = audit_stats.keep_label(r["verdict"])
    shared = sorted(set(by[first]) & set(by[second]))
    confusion = {x: {y: 0 for y in ("keep", "drop")} for x in ("keep", "drop")}
    for k in shared:
        confusion[by[first][k]][by[second][k]] += 1
    agree = sum(by[first][k] == by[second][k] for k in shared)
    return len(shared), round(agree / len(shared), 4) if shared else None, confusion  # None: nothing was measured


def test_pandas_tables_match_plain_loops_on_a_random_snapshot_table() -> None:
    import random

    rng = random.Random(7)
    rows = []
    for i in range(400):
        r = row(f"q{rng.randrange(30)}", f"p{rng.randrange(12)}", rng.choice(["local", "cloud", "ollama"]),
                rng.choice(["include", "drop", "conflict", "flag"]), rng.random(), rng.random(), rng.random() * 0.3,
                day=rng.randrange(1, 28))
        r["judge_model"] = rng.choice(["", None, "m1"])
        r["contradicts"] = None if i % 7 == 0 else rng.random()
        rows.append(r)
    table = pa.Table.from_pylist(rows, schema=SNAPSHOT_SCHEMA)
    assert audit_stats.distributions(table) == _loop_distributions(table.to_pylist())
    for first, second in (("local", "cloud"), ("cloud", "ollama"), ("local", "absent")):
        got = audit_stats.agreement(table, first, second)
        assert (got["pairs"], got["agreement"], got["confusion"]) == _loop_agreement(table.to_pylist(), first, second)
    labels_a = [rng.choice("abc") for _ in range(50)]
    labels_b = [rng.choice("abd") for _ in range(50)]
    from collections import Counter

    po = sum(x == y for x, y in zip(labels_a, labels_b)) / 50
    pe = sum(Counter(labels_a)[k] * Counter(labels_b)[k] for k in "abcd") / 2500
    assert audit_stats.cohen_kappa(labels_a, labels_b) == round((po - pe) / (1 - pe), 4)


def test_snapshot_tables_are_what_from_pylist_builds_without_importing_pandas(indexed_project: Path) -> None:
    """A cold `assay ask` writes its snapshot without pyarrow importing pandas (~0.35 s); the table is the one
    `pa.Table.from_pylist` would build, odd values included (NaN, newlines, quotes, non-ASCII, no scores)."""
    import subprocess
    import sys

    from assay.stages.audit.snapshots import arrow_table, snapshot_rows

    report = run_query(str(indexed_project), "How does retry_call back off between attempts?")
    rows = snapshot_rows(report, datetime(2026, 12, 6, 7, 33, 3, 676460, tzinfo=timezone.utc))
    rows[0] = {**rows[0], "body": 'line "one"\n\tzwei — 三', "distance": float("nan"), "relevance": None}
    expected = pa.Table.from_pylist([{**r, "distance": None if r["distance"] != r["distance"] else r["distance"]}
                                     for r in rows], schema=SNAPSHOT_SCHEMA)
    assert arrow_table(rows, SNAPSHOT_SCHEMA).equals(expected)
    assert arrow_table([], SNAPSHOT_SCHEMA).equals(SNAPSHOT_SCHEMA.empty_table())
    code = ("import sys\nfrom pathlib import Path\nfrom assay.flows.query import run_query\n"
            f"run_query({str(indexed_project)!r}, 'merge cookies into a jar')\nprint('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.split()[-1] == "False", done.stderr[-1500:]

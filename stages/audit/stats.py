"""Offline judgment audits over the Parquet snapshots: distributions, agreement, calibration, baseline.

Tables are read from the pyarrow dataset into pandas for the group-bys, crosstabs and quantiles; every
figure is a plain function of its input, so it can be checked by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.dataset as ds

from assay.stages.audit.snapshots import SNAPSHOT_SCHEMA
from assay.stages.core.artifacts import Candidate, Judgment
from assay.stages.evaluate.calibration import ece, ece_floor, reliability

SCORES = ("relevance", "evidence", "contradicts", "injection")
INJECTION_BASELINE_MAX = 0.15
REJUDGE_TAG = "-rejudge-"  # in the file name of a re-judged snapshot: `<time>-<query_id>-rejudge-<backend>.parquet`


def load_snapshots(folder: Path, start: date | None = None, end: date | None = None, rejudged: bool = True) -> pa.Table:
    """All snapshot rows under a judgments folder (hive-partitioned by date), optionally a date range.
    `rejudged=False`: the original snapshots only, without the files `assay audit --rejudge` wrote beside them."""
    files, damaged = [], []
    for p in sorted(folder.rglob("*.parquet")):
        if not p.name.startswith(".") and (rejudged or REJUDGE_TAG not in p.name):
            (files if _readable(p) else damaged).append(p)
    table, cast_failed = _read_snapshots(files)
    damaged = sorted(damaged + cast_failed)
    if damaged:  # left out, not fatal: the report names them (`unreadable_snapshots`)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               b"unreadable": "\n".join(map(str, damaged)).encode()})
    if start or end:
        days = table.column("timestamp").to_pandas().dt.date
        mask = pd.Series(True, index=days.index)
        if start:
            mask &= days >= start
        if end:
            mask &= days <= end
        table = table.filter(pa.array(mask.to_numpy()))
    return table


SNAPSHOT_KEYS = ("query_id", "judge_backend", "passage_id", "verdict")  # a file without them is no query's snapshot


def _read_snapshots(files: list[Path]) -> tuple[pa.Table, list[Path]]:
    """The files' rows in SNAPSHOT_SCHEMA, and the files whose values would not cast to it. One dataset read for all
    (fast); only when that fails is each file read alone, so one bad file is named and the rest still audited."""
    if not files:
        return SNAPSHOT_SCHEMA.empty_table(), []
    try:
        return ds.dataset([str(p) for p in files], schema=SNAPSHOT_SCHEMA, format="parquet").to_table(), []
    except (OSError, pa.ArrowException):
        pass
    tables, failed = [], []
    for p in files:
        try:
            tables.append(ds.dataset(str(p), schema=SNAPSHOT_SCHEMA, format="parquet").to_table())
        except (OSError, pa.ArrowException):
            failed.append(p)
    return (pa.concat_tables(tables) if tables else SNAPSHOT_SCHEMA.empty_table()), failed


def _readable(path: Path) -> bool:
    """Whether a file is a snapshot: a Parquet footer whose schema holds the snapshot's key columns, each column it
    shares with SNAPSHOT_SCHEMA of a kind that casts to it. Reading only the footer passed any Parquet file: one of
    another schema then failed the whole audit's cast, or counted its rows as passages of no judge."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return False
    if any(key not in schema.names for key in SNAPSHOT_KEYS):
        return False
    return all(_casts(schema.field(f.name).type, f.type) for f in SNAPSHOT_SCHEMA if f.name in schema.names)


_KINDS = (  # the first kind the wanted type is of decides; a found type of the same kind casts without parsing
    lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
    pa.types.is_integer, pa.types.is_boolean, pa.types.is_timestamp,
    lambda t: pa.types.is_floating(t) or pa.types.is_integer(t),  # a score column of whole numbers still reads
)


def _casts(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether a column of type `found` reads as `wanted` without parsing text (an all-null column always does)."""
    if found == wanted or pa.types.is_null(found):
        return True
    kind = next((k for k in _KINDS if k(wanted)), None)
    return kind is not None and kind(found)


def unreadable_snapshots(table: pa.Table) -> list[str]:
    """The damaged snapshot files `load_snapshots` left out."""
    raw = (table.schema.metadata or {}).get(b"unreadable", b"")
    return raw.decode().split("\n") if raw else []


def distributions(table: pa.Table, bins: int = 10) -> dict[str, dict]:
    """Per judge backend/model: count, mean and quartiles of each score, a histogram, verdict counts. Only passages the
    judge scored count (`holds_judgment`): a fail-open passage's verdict is the lexical order's, not the judge's."""
    frame = _judged(table.select(["judge_backend", "judge_model", "query_id", "verdict", "fail_open", *SCORES]).to_pandas())
    frame = frame.assign(judge=_judge_keys(frame))
    edges = np.linspace(0, 1, bins + 1)
    out: dict[str, dict] = {}
    for key, group in frame.groupby("judge", sort=True):
        verdicts = group["verdict"].value_counts().sort_index()
        entry: dict = {"passages": len(group), "queries": int(group["query_id"].nunique()),
                       "verdicts": {str(v): int(n) for v, n in verdicts.items()}}
        for score in SCORES:
            vals = group[score].dropna().astype(float)
            if vals.empty:
                entry[score] = {"n": 0}
                continue
            quartiles = vals.quantile([0.25, 0.5, 0.75])
            entry[score] = {
                "n": int(len(vals)), "mean": round(float(vals.mean()), 4),
                "p25": round(float(quartiles[0.25]), 4), "p50": round(float(quartiles[0.5]), 4),
                "p75": round(float(quartiles[0.75]), 4), "histogram": np.histogram(vals, bins=edges)[0].tolist(),
            }
        out[str(key)] = entry
    return out


def _judge_keys(frame: pd.DataFrame) -> pd.Series:
    """`backend/model` per row (`-` for no model); null for a row of no judge (group-bys drop it)."""
    return frame["judge_backend"] + "/" + frame["judge_model"].fillna("").replace("", "-")


def snapshot_counts(table: pa.Table) -> dict:
    """The header's figures, counted as `distributions` counts its rows (so the two add up): passages a judge scored
    and their queries, and per judge the fail-open passages it failed to score (not counted as judged)."""
    frame = table.select(["judge_backend", "judge_model", "query_id", "fail_open", "relevance"]).to_pandas()
    frame = frame.assign(judge=_judge_keys(frame)).dropna(subset=["judge", "query_id"])
    judged = _judged(frame)
    unscored = frame.drop(judged.index)["judge"].value_counts().sort_index()
    return {"passages": len(judged), "queries": int(judged["query_id"].nunique()),
            "unscored": {str(k): int(n) for k, n in unscored.items()}}


def cohen_kappa(a: list[str], b: list[str]) -> float:
    """Cohen's kappa for two raters' labels on the same items (1.0 when both are constant and equal)."""
    if not a:
        return 0.0
    observed = float(np.mean(np.array(a, dtype=object) == np.array(b, dtype=object)))
    share_a = pd.Series(a).value_counts(normalize=True)
    share_b = pd.Series(b).value_counts(normalize=True)
    expected = float(share_a.mul(share_b, fill_value=0).sum())
    if expected == 1.0:
        return 1.0
    return round((observed - expected) / (1 - expected), 4)


def keep_label(verdict: str) -> str:
    return "keep" if verdict in ("include", "conflict") else "drop"


AGREEMENT_BAR = 0.70  # the anchor's bar (issue 46): one judge stands in for another at >= 70% verdict agreement


def holds_judgment(row: dict) -> bool:
    """Whether a snapshot row is its judge's verdict: a passage the judge failed to score (fail-open, no scores) was
    kept in lexical order by the threshold stage, so its verdict says nothing about the judge. Judge `none` scores
    nothing by design and never fails open."""
    return not (row.get("fail_open") and row.get("relevance") is None)


def _judged(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of `frame` that hold a judgment (`holds_judgment`, over a table)."""
    return frame[~(frame["fail_open"].fillna(False).astype(bool) & frame["relevance"].isna())]


def agreement(table: pa.Table, first: str, second: str) -> dict:
    """Verdict agreement between two judge backends on the same (query, passage) pairs, against the anchor's bar.
    Only passages both judges scored count; with none, agreement and kappa are None and `reason` says why."""
    frame = table.select(["judge_backend", "query_id", "passage_id", "verdict", "fail_open", "relevance"]).to_pandas()
    unscored = {b: int((frame["judge_backend"] == b).sum() - (_judged(frame)["judge_backend"] == b).sum())
                for b in (first, second)}
    frame = _judged(frame).copy()
    frame["label"] = frame["verdict"].map(keep_label)
    pair = ["query_id", "passage_id"]
    # a later snapshot of the same pair by the same backend replaces an earlier one
    one = frame[frame["judge_backend"] == first].drop_duplicates(pair, keep="last")
    two = frame[frame["judge_backend"] == second].drop_duplicates(pair, keep="last")
    shared = one.merge(two, on=pair, suffixes=("_a", "_b")).sort_values(pair)
    labels = ["keep", "drop"]
    confusion = pd.crosstab(pd.Categorical(shared["label_a"], labels), pd.Categorical(shared["label_b"], labels),
                            dropna=False).reindex(index=labels, columns=labels, fill_value=0)
    a, b = shared["label_a"].tolist(), shared["label_b"].tolist()
    measured = bool(len(shared))
    agree = round(float((shared["label_a"] == shared["label_b"]).mean()), 4) if measured else None
    return {"first": first, "second": second, "pairs": len(shared), "agreement": agree,
            "kappa": cohen_kappa(a, b) if measured else None, "bar": AGREEMENT_BAR,
            "meets_bar": measured and agree >= AGREEMENT_BAR, "unscored": unscored,
            "reason": "" if measured else _no_pairs_reason(first, second, unscored),
            "confusion": {x: {y: int(confusion.loc[x, y]) for y in labels} for x in labels}}


def _no_pairs_reason(first: str, second: str, unscored: dict[str, int]) -> str:
    failed = [f"{b} failed to score {n} stored passage(s)" for b, n in unscored.items() if n]
    return "no passage scored by both judges" + (f": {'; '.join(failed)}" if failed else "")


def rejudge_pending(table: pa.Table, originals: pa.Table, backend: str) -> dict[str, list[dict]]:
    """Per query of `table` that `backend` has not judged yet (originally or in an earlier re-judge): the rows of its
    original snapshot, from `originals` (the snapshots without re-judged files). A query whose stored rows by
    `backend` are all failed (unscored) is pending again: its judge never judged it."""
    seen = table.select(["query_id", "judge_backend", "fail_open", "relevance"]).to_pylist()
    queries = {r["query_id"] for r in seen}
    done = {r["query_id"] for r in seen if r["judge_backend"] == backend and holds_judgment(r)}
    pending: dict[str, list[dict]] = {}
    for r in originals.to_pylist():
        if r["query_id"] in queries and r["query_id"] not in done:
            pending.setdefault(r["query_id"], []).append(r)
    return pending


def check_rejudge(table: pa.Table, backend: str, ranged: bool) -> None:
    """A re-judge must have another judge's verdicts to compare with; otherwise a one-line error before any call:
    the report used to look like a plain audit, with no agreement and no word why."""
    backends = set(table.column("judge_backend").to_pylist())
    if not backends:
        where = "in that date range" if ranged else "yet"
        raise ValueError(f"--rejudge {backend}: no judgments stored {where}; each `assay ask` records one, "
                         "so ask a question first")
    if backends == {backend}:
        others = ", ".join(b for b in ("local", "ollama", "cloud", "systemone", "none") if b != backend)
        raise ValueError(f"--rejudge {backend}: every stored judgment is already {backend}'s, so there is nothing to "
                         f"compare; re-judge with another backend ({others})")


def rows_to_candidates(rows: list[dict]) -> list[Candidate]:
    """Rebuild the judged passages of one snapshot (for re-judging with another backend), each passage once: a
    passage sent twice costs twice and could get two different scores."""
    out, seen = [], set()
    for r in sorted(rows, key=lambda r: r["fused_rank"]):
        if r["passage_id"] in seen:
            continue
        seen.add(r["passage_id"])
        out.append(Candidate(
            id=r["passage_id"], file=r["file"], start_line=r["start_line"], end_line=r["end_line"], entity=r["entity"],
            kind=r["kind"], language=r["language"] or "", body=r["body"] or "", distance=r["distance"], bm25=r["bm25"],
            fused_rank=r["fused_rank"], fused_score=r["fused_score"],
        ))
    return out


@dataclass(frozen=True)
class LabelledPassage:
    question: str
    candidate: Candidate
    relevant: bool


LABELS_FORM = "each row needs question, relevant (true or false) and the passage (file, entity, body...)"
_TRUTH = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def load_labels(path: Path) -> list[LabelledPassage]:
    """JSONL or CSV rows with question, file, entity, kind, body (signature, docstring...) and relevant.
    Every problem is one line naming the file and the row's line, before any passage is judged; a file with no
    rows is an error too (a sweep over nothing printed a 'best' threshold)."""
    rows = _label_rows(path)
    if not rows:
        raise ValueError(f"labels file {path} holds no labelled passages; {LABELS_FORM}")
    return [_labelled(path, where, i, r) for i, (where, r) in enumerate(rows)]


def _label_rows(path: Path) -> list[tuple[str, object]]:
    """(`line N`, raw row) for each row of the file."""
    import csv
    import io

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"labels file {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                         f"{exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise ValueError(f"labels file {path}: cannot read it ({exc.strerror or type(exc).__name__}); "
                         "give a CSV or JSONL file of labelled passages") from None
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        try:
            return [(f"line {reader.line_num}", row) for row in reader]
        except csv.Error as exc:
            raise ValueError(f"{path} line {reader.line_num}: not a CSV row ({exc})") from None
    rows: list[tuple[str, object]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {number}", json.loads(line)))
        except ValueError as exc:
            raise ValueError(f"{path} line {number}: not a JSON object ({exc}); one labelled passage a line") from None
    return rows


def _labelled(path: Path, where: str, i: int, r: object) -> LabelledPassage:
    """One row as a labelled passage, or a one-line error naming the file, the line and the field."""
    from pydantic import ValidationError

    if not isinstance(r, dict):
        raise ValueError(f"{path} {where}: not a JSON object; one labelled passage a line")
    if not r.get("question") or not isinstance(r["question"], str):
        raise ValueError(f"{path} {where}: labelled passage {i + 1} has no question; {LABELS_FORM}")
    rel = r.get("relevant")
    relevant = rel if isinstance(rel, bool) else _TRUTH.get(str(rel).strip().lower()) if rel is not None else None
    if relevant is None:
        raise ValueError(f"{path} {where}: relevant must be true or false (got {json.dumps(rel)}); {LABELS_FORM}")
    try:
        if isinstance(r.get("candidate"), dict):  # a pair as retrieval handed it to the judge (tests/benchmarks/judge_labels)
            cand = Candidate(**r["candidate"])
        else:
            cand = Candidate(
                id=f"label-{i}", file=r.get("file", ""), start_line=_line_number(path, where, r, "start_line"),
                end_line=_line_number(path, where, r, "end_line"), entity=r.get("entity", ""),
                kind=r.get("kind", "function"), language=r.get("language", "python"), signature=r.get("signature", ""),
                docstring=r.get("docstring", ""), body=r.get("body", ""), bases=list(r.get("bases") or []),
                params=list(r.get("params") or []), fused_rank=1, fused_score=1 / 61,
            )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ("candidate." if isinstance(r.get("candidate"), dict) else "") + ".".join(map(str, first.get("loc", ())))
        got = "" if first.get("type") == "missing" else f" (got {first.get('input')!r})"
        raise ValueError(f"{path} {where}: {field}: {first.get('msg', 'invalid')}{got}") from None
    return LabelledPassage(r["question"], cand, relevant)


def _line_number(path: Path, where: str, r: dict, key: str) -> int:
    """A row's start_line/end_line: 1 when left out, else a whole number from 1."""
    value = r.get(key)
    if value in (None, "", 0):
        return 1
    text = str(value).strip()
    if isinstance(value, bool) or not (isinstance(value, int) or text.isdigit()) or int(text) < 1:
        raise ValueError(f"{path} {where}: {key} must be a line number, a whole number from 1 (got {json.dumps(value)})")
    return int(text)


def with_retrieval_signals(items: list[LabelledPassage], embedder) -> list[LabelledPassage]:
    """Give labelled passages the signals retrieval would have: cosine distance and the fused rank per question.
    Pairs labelled with the signals retrieval gave them keep those."""
    from assay.stages.index.lexical import LexicalIndex

    out: list[LabelledPassage] = [it for it in items if it.candidate.distance is not None]
    by_q: dict[str, list[LabelledPassage]] = {}
    for it in items:
        if it.candidate.distance is None:
            by_q.setdefault(it.question, []).append(it)
    for q, group in by_q.items():
        vecs, _ = embedder.embed([q] + [f"{g.candidate.entity}\n{g.candidate.signature}\n{g.candidate.body}" for g in group])
        dists = [float(1 - vecs[0] @ v) for v in vecs[1:]]
        lex = dict(LexicalIndex.build([g.candidate.id for g in group], [g.candidate.body + " " + g.candidate.entity for g in group]).search(q, len(group)))
        order = sorted(range(len(group)), key=lambda i: dists[i])
        for rank, i in enumerate(order, start=1):
            g = group[i]
            c = g.candidate.model_copy(update={"distance": dists[i], "bm25": lex.get(g.candidate.id), "fused_rank": rank,
                                               "fused_score": 1 / (60 + rank)})
            out.append(LabelledPassage(q, c, g.relevant))
    return out


def prf(pred: list[bool], gold: list[bool]) -> tuple[float, float, float]:
    pairs = [(bool(p), bool(g)) for p, g in zip(pred, gold)]
    tp = sum(p and g for p, g in pairs)
    fp = sum(p and not g for p, g in pairs)
    fn = sum(g and not p for p, g in pairs)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return round(precision, 4), round(recall, 4), round(f1, 4)


def calibrate(items: list[LabelledPassage], judgments: dict[str, Judgment], injection_max: float = 0.5,
              current: tuple[float, float] | None = None) -> dict:
    """Sweep relevance/evidence minimums; precision, recall, F1 of keep vs the labels, and the best setting; how well
    relevance reads as a probability (ECE beside the noise floor of a perfectly calibrated judge, reliability bins).
    `current`, the thresholds in use, is scored as it is: shipped thresholds rarely sit on the sweep's grid."""
    scored = []
    for it in items:
        s = judgments[it.question].scores.get(it.candidate.id)
        if s is not None:
            scored.append((s, it.relevant))
    gold = [g for _, g in scored]
    if not scored:  # a sweep over no scores would name a 'best' threshold out of all-zero F1s
        return {"labelled": len(items), "scored": 0, "grid": [], "best": None, "ece": None, "ece_floor": None,
                "reliability": []}

    def keep(rel: float, evid: float) -> dict:
        pred = [s.relevance >= rel and s.evidence >= evid and s.injection < injection_max for s, _ in scored]
        p, r, f = prf(pred, gold)
        return {"relevance_min": float(rel), "evidence_min": float(evid), "precision": p, "recall": r, "f1": f}

    grid = [keep(rel, evid) for rel in np.round(np.arange(0.1, 0.95, 0.05), 2)
            for evid in np.round(np.arange(0.1, 0.85, 0.05), 2)]
    best = max(grid, key=lambda g: (g["f1"], g["precision"], -g["relevance_min"])) if grid else None
    rel = [s.relevance for s, _ in scored]
    return {"labelled": len(items), "scored": len(scored), "grid": grid, "best": best, "ece": ece(rel, gold),
            "ece_floor": ece_floor(rel), "reliability": reliability(rel, gold),
            **({"current": keep(*current)} if current is not None else {})}


def injection_baseline(scores: list[tuple[str, float]], limit: float = INJECTION_BASELINE_MAX) -> dict:
    """Clean workspace code must score low: any function above the limit fails the audit."""
    offenders = sorted([(name, s) for name, s in scores if s > limit], key=lambda x: -x[1])
    values = [s for _, s in scores]
    return {"functions": len(scores), "limit": limit, "max": round(max(values), 4) if values else 0.0,
            "mean": round(float(np.mean(values)), 4) if values else 0.0, "offenders": offenders[:20],
            "passed": not offenders}

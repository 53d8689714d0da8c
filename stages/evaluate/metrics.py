"""Evaluation metrics and the anchor-system reproduction, as plain functions.

A retrieved entity matches a gold entity when the file is the same and the qualified name is
the same (chunk parts of one entity count once). Ranked lists are de-duplicated by entity. A second,
looser match reads lines: a returned passage of the primary entity's file whose line span overlaps the
primary's span (so a containing class or a file row counts too, and a qualified name spelt otherwise).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from assay.stages.core.artifacts import Candidate, Entity

ANCHOR_KINDS = frozenset({"function", "method", "class", "constant", "section", "element", "rule"})


@dataclass(frozen=True)
class GoldEntity:
    file: str
    qualname: str


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    primary: GoldEntity | None
    gold_entities: tuple[GoldEntity, ...]
    gold_files: tuple[str, ...]
    named: bool | None = None  # `question_names_code_identifier`: the question names a code identifier (None: not said)
    primary_span: tuple[int, int] | None = None  # the primary entity's lines, when the set measured them


# a ranked item: (file, qualname), or (file, qualname, start_line, end_line) where the passage's lines are known
Ranked = tuple[str, str] | tuple[str, str, int, int]


ROW_SHAPE = ("each row needs id, question, package and a primary_entity {file, qualname} or gold_entities / gold_files")


def read_rows(path: Path) -> list[tuple[int, dict]]:
    """(line number, row) for each non-blank line of a JSON-lines question set; what is not UTF-8, not JSON or not
    an object is a one-line error naming the file and line (the user wrote it: say where to look)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ValueError(f"{path} line {line}: not UTF-8 text (byte {exc.object[exc.start]:#04x}); save the file as UTF-8") from None
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028 may sit inside a JSON string
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} line {number}: not JSON ({exc.msg}, column {exc.colno}); {ROW_SHAPE}") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path} line {number}: not a JSON object (a {type(row).__name__}); {ROW_SHAPE}")
        rows.append((number, row))
    return rows


def load_questions(path: Path) -> list[Question]:
    """Every question of a set, all checked before any is scored: a bad row or a reused id is a one-line error naming
    the file, line and id (the flow reads every set before any corpus is downloaded or indexed)."""
    out: list[Question] = []
    first_line: dict[str, int] = {}
    for number, row in read_rows(path):
        q = question_of(row, f"{path} line {number}")
        if q.id in first_line:  # results are keyed by id: a reused one would score one question's ranking for another
            raise ValueError(f"{path} line {number}: id {q.id!r} is used again (first on line {first_line[q.id]}); "
                             "give each question its own id")
        first_line[q.id] = number
        out.append(q)
    return out


def question_of(r: dict, where: str) -> Question:
    """One row as a Question; `where` ("FILE line N") starts any error, which says what to fix."""
    qid = r.get("id")
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
        raise ValueError(f"{where}: no \"id\" field (or an empty one); {ROW_SHAPE}")
    where = f"{where} (id {qid})"
    text = r.get("question")
    if text is None:
        raise ValueError(f"{where}: no \"question\" field; {ROW_SHAPE}")
    if not isinstance(text, str):
        raise ValueError(f"{where}: the question must be text (got {type(text).__name__} {text!r})")
    if not text.strip():
        raise ValueError(f"{where}: the question is empty; the row needs the question text")
    raw = r.get("primary_entity")
    golds, files = r.get("gold_entities") or [], r.get("gold_files") or []
    if not isinstance(golds, list):
        raise ValueError(f"{where}: gold_entities must be a list of {{file, qualname}} (got {type(golds).__name__})")
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise ValueError(f"{where}: gold_files must be a list of file paths (got {str(files)[:80]})")
    named = r.get("question_names_code_identifier")
    return Question(id=str(qid), text=text, primary=_gold(raw, f"{where}: primary_entity"),
                    gold_entities=tuple(_gold(g, f"{where}: gold_entities[{i}]") for i, g in enumerate(golds)),
                    gold_files=tuple(files), named=bool(named) if named is not None else None,
                    primary_span=_span(raw, f"{where}: primary_entity"))


def _gold(raw, where: str) -> GoldEntity | None:
    """A {file, qualname} object as a GoldEntity (None stays None: a question may have no primary)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be an object {{file, qualname}} (got {type(raw).__name__})")
    for key in ("file", "qualname"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ValueError(f"{where} has no \"{key}\" text; give it {{file, qualname}}")
    return GoldEntity(raw["file"], raw["qualname"])


def _span(raw, where: str) -> tuple[int, int] | None:
    """The primary's (start_line, end_line) where both are given; a value that is no line number is an error."""
    if not isinstance(raw, dict) or not raw.get("start_line") or not raw.get("end_line"):
        return None
    lines = []
    for key in ("start_line", "end_line"):
        value = raw[key]
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())):
            raise ValueError(f"{where}.{key} must be a line number (got {value!r})")
        lines.append(int(value))
    if lines[0] > lines[1]:
        raise ValueError(f"{where}: start_line {lines[0]} is after end_line {lines[1]}")
    return lines[0], lines[1]


def question_set_package(path: Path) -> str:
    """The `name==version` pin a question set is scored against: its rows' `package` field, which all rows share."""
    packages = {p if p is None or isinstance(p, str) else json.dumps(p) for p in (row.get("package") for _, row in read_rows(path))}
    if len(packages) != 1 or not next(iter(packages)) or "==" not in str(next(iter(packages))):
        found = ", ".join(sorted(map(str, packages))) or "no rows"
        raise ValueError(f"{path}: every row needs one `package` field of the form name==version (found: {found})")
    return str(next(iter(packages)))


def discover_corpora(folder: Path) -> dict[str, str]:
    """Every `<name>.jsonl` in the questions folder is a corpus: name -> the sdist pin its rows name."""
    return {path.stem: question_set_package(path) for path in sorted(folder.glob("*.jsonl"))}


def dedupe(ranked: list[Ranked]) -> list[tuple[str, str]]:
    """(file, qualname) pairs in first-seen order (chunk parts collapse into their entity)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for item in ranked:
        key = (item[0], item[1])
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def line_rank(ranked: list[Ranked], file: str, span: tuple[int, int]) -> int | None:
    """Rank (in the entity-deduplicated list) of the first returned passage of `file` whose lines overlap `span`;
    items without lines never match."""
    order: dict[tuple[str, str], int] = {}
    for item in ranked:
        position = order.setdefault((item[0], item[1]), len(order) + 1)
        if len(item) == 4 and item[0] == file and item[2] <= span[1] and item[3] >= span[0]:
            return position
    return None


def rank_of(ranked: list[tuple[str, str]], gold: GoldEntity) -> int | None:
    for i, key in enumerate(ranked, start=1):
        if key == (gold.file, gold.qualname):
            return i
    return None


def question_metrics(ranked: list[Ranked], q: Question) -> dict[str, float | None]:
    """hit@1/5/10 and reciprocal rank of the primary entity (by qualified name, and by line overlap where the question
    has the primary's span); gold-entity and file recall@10."""
    entities = dedupe(ranked)
    out: dict[str, float | None] = {}
    if q.primary is not None:
        r = rank_of(entities, q.primary)
        for k in (1, 5, 10):
            out[f"hit@{k}"] = 1.0 if r is not None and r <= k else 0.0
        out["rr"] = 1.0 / r if r is not None else 0.0
        if q.primary_span is not None:
            lr = line_rank(ranked, q.primary.file, q.primary_span)
            out["line_hit@10"] = 1.0 if lr is not None and lr <= 10 else 0.0
            out["line_rr"] = 1.0 / lr if lr is not None else 0.0
    top = entities[:10]
    if q.gold_entities:
        golds = {(g.file, g.qualname) for g in q.gold_entities}
        out["entity_recall@10"] = len(golds & set(top)) / len(golds)
    if q.gold_files:
        files = {f for f, _ in top}
        out["file_recall@10"] = len(set(q.gold_files) & files) / len(set(q.gold_files))
    return out


def aggregate(per_question: list[dict[str, float | None]]) -> dict[str, float | None]:
    """Mean of each metric over the questions that have it (a question without a primary entity has no hit@k); None
    where no question has it (no gold files, no line span): not measured, which is not 0."""
    keys = ("hit@1", "hit@5", "hit@10", "rr", "entity_recall@10", "file_recall@10", "line_hit@10", "line_rr")
    means = pd.DataFrame(per_question, columns=list(keys), dtype=float).mean()  # NaN (missing) is skipped
    out: dict[str, float | None] = {_MEAN_NAMES.get(k, k): round(float(means[k]), 4) if pd.notna(means[k]) else None
                                    for k in keys}
    out["questions"] = len(per_question)
    return out


_MEAN_NAMES = {"rr": "mrr", "line_rr": "line_mrr"}


def split_summary(per_question: list[dict[str, float | None]], questions: list[Question]) -> dict[str, dict]:
    """Primary-entity hit@10 and MRR (by qualified name and by line overlap) for all questions, the ones that name a code
    identifier and the paraphrased ones; `n` counts the questions with a primary entity (the others have no hit figure),
    `n_line` those whose primary also has a line span."""
    groups = {"all": lambda q: True, "named": lambda q: q.named is True, "paraphrased": lambda q: q.named is False}
    out: dict[str, dict] = {}
    for group, member in groups.items():
        rows = [m for m, q in zip(per_question, questions) if member(q) and q.primary is not None]
        agg = aggregate(rows)
        out[group] = {"n": len(rows), "n_line": sum("line_hit@10" in m for m in rows), "hit@10": agg["hit@10"],
                      "mrr": agg["mrr"], "line_hit@10": agg["line_hit@10"], "line_mrr": agg["line_mrr"]}
    return out


def keep_drop_prf(kept: list[bool], gold: list[bool]) -> dict[str, float | None]:
    """Keep precision, recall and F1 against gold; precision is None when nothing was kept and recall None when
    nothing is gold (not measured, which is not 0), and F1 then None too."""
    tp = sum(k and g for k, g in zip(kept, gold))
    fp = sum(k and not g for k, g in zip(kept, gold))
    fn = sum(g and not k for k, g in zip(kept, gold))
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f1 = None if p is None or r is None else (2 * p * r / (p + r) if p + r else 0.0)
    return {"precision": _round(p), "recall": _round(r), "f1": _round(f1), "passages": len(kept)}


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


class AnchorIndex:
    """The anchor system reproduced: embed signature + docstring only, squared-L2 cut at 1.5,
    re-rank by 1/d + 0.05 per whitespace term found as a substring of name or text, top 5."""

    def __init__(self, entities: list[Entity], embedder, fetch_cap: int = 75, threshold: float = 1.5) -> None:
        self.entities = [e for e in entities if e.kind in ANCHOR_KINDS and e.part == 0]
        texts = [f"{e.signature}\n{e.docstring.split(chr(10) + chr(10))[0]}".strip() for e in self.entities]
        vectors = [embedder.embed(texts[i : i + 64])[0] for i in range(0, len(texts), 64)]
        self.matrix = np.vstack(vectors) if vectors else np.zeros((0, embedder.dimension))
        self.texts = texts
        self.embedder = embedder
        self.fetch_cap = fetch_cap
        self.threshold = threshold

    def search(self, query: str, k: int = 5, lines: bool = False) -> list[Ranked]:
        """(file, qualname) of the top k; with `lines`, (file, qualname, start_line, end_line)."""
        if not self.entities:
            return []
        qv, _ = self.embedder.embed([query])
        d2 = 2.0 - 2.0 * (self.matrix @ qv[0])  # squared L2 between unit vectors, Chroma's "l2"
        pool = np.argsort(d2)[: self.fetch_cap]
        terms = set(query.lower().split())
        scored = []
        for i in pool:
            if d2[i] > self.threshold:
                continue
            e = self.entities[i]
            hits = sum(1 for t in terms if t in e.name.lower() or t in self.texts[i].lower())
            scored.append(((1e6 if d2[i] <= 1e-6 else 1.0 / float(d2[i])) + 0.05 * hits, int(i)))
        scored.sort(key=lambda x: (-x[0], x[1]))
        top = [self.entities[i] for _, i in scored[:k]]
        return [(e.file, e.qualname, e.start_line, e.end_line) if lines else (e.file, e.qualname) for e in top]


def ranked_keys(candidates: list[Candidate]) -> list[tuple[str, str, int, int]]:
    return [(c.file, c.entity, c.start_line, c.end_line) for c in candidates]


def estimate_tokens(text: str) -> int:
    """About four characters per token for English and code (no tokenizer download needed)."""
    return (len(text) + 3) // 4


def auroc(scores: list[float], labels: list[bool]) -> float | None:
    """Area under the ROC curve: the chance a random positive scores above a random negative (ties count half);
    None without both classes."""
    pos = sum(labels)
    neg = len(labels) - pos
    if not pos or not neg:
        return None
    ranks = pd.Series(scores, dtype=float).rank(method="average").to_numpy()
    return float((ranks[np.asarray(labels, dtype=bool)].sum() - pos * (pos + 1) / 2) / (pos * neg))


def trust_summary(records: list[tuple[str, float | None, bool]]) -> dict:
    """How well an answer's status ("supported" reads trust: high) and the judge's `answerable` predict that the
    primary gold entity is among the passages the answer was written from. records: (status, answerable, included)."""
    high = [inc for status, _, inc in records if status == "supported"]
    rest = [inc for status, _, inc in records if status != "supported"]
    scored = [(a, inc) for _, a, inc in records if a is not None]
    area = auroc([a for a, _ in scored], [inc for _, inc in scored])
    return {"answers": len(records), "trust_high": len(high),
            "included_when_high": round(sum(high) / len(high), 3) if high else None,
            "included_otherwise": round(sum(rest) / len(rest), 3) if rest else None,
            "answerable_auroc": round(area, 3) if area is not None else None}

"""Threshold stage: keep, flag or drop each passage, rank what is kept, cut to the top-k entities (one row each).

keep = relevance >= rel_min and evidence >= evid_min and injection < inj_max
rank = 0.50 relevance + 0.35 evidence - 0.15 injection (a judge whose `orders_kept` is false leaves the rank stage's order)
conflict = contradicts >= contra_min (kept, but flagged)
Injection is checked twice: by the judge and by the local AST detector (a floor that holds even
when an LLM judge misses or fails). Passages the judge failed to score fail open: they are kept
in lexical (fused) order after the judged ones, and the report says so.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from assay.stages.core.artifacts import Candidate, Judgment, PassageScores, RankedPassage, Selection, Thresholds
from assay.stages.core.config import DATA_DIR, MAX_RESULTS, json_object
from assay.stages.query.judge.calibrated import load_models
from assay.stages.query.judge.local import passage_injection

BEYOND_TOP_K = "beyond top-k"
BEYOND_IN_ORDER = "beyond top-k in rank order"


def default_thresholds(backend: str, override_file: str | None = None, top_k: int | None = None) -> Thresholds:
    """Per-backend defaults from data/thresholds.json (the local judge's from its calibration sweep, stored with its
    weights), optionally overridden by a user JSON file, then by the top_k the user chose (None: not chosen)."""
    table = json.loads((DATA_DIR / "thresholds.json").read_text(encoding="utf-8"))
    values = dict(table["default"])
    values.update(table.get(backend, {}))
    if backend == "local":
        values.update(load_models().thresholds)
    if override_file:
        values.update(override_values(override_file, backend))
    if top_k is not None:
        values["top_k"] = top_k
    try:
        return Thresholds(**values)
    except ValidationError as exc:
        if not override_file:
            raise
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first.get("loc", ()))
        raise ValueError(f"ASSAY_THRESHOLDS ({override_file}): {key}: {first.get('msg', 'invalid')} "
                         f"(got {first.get('input')!r}); {THRESHOLDS_FORM}") from None


# the judge backends a thresholds file may hold a section for ("default": every backend)
SECTIONS = ("default", "local", "ollama", "cloud", "systemone", "none")
THRESHOLDS_FORM = ("expected a JSON file holding an object of thresholds, flat or per backend: "
                   '{"relevance_min": 0.4, "evidence_min": 0.4} or {"ollama": {"relevance_min": 0.5}}')


def override_values(path: str, backend: str) -> dict:
    """The values an ASSAY_THRESHOLDS file sets for `backend`: its flat keys, then its `default` section, then the
    backend's own. A key Assay would not read is an error naming it: a misspelt key used to be ignored silently.
    Its `top_k` yields to one the user chose (ASSAY_TOP_K, --top-k)."""
    extra = _read_override(path)
    known = set(Thresholds.model_fields)
    sections = {name: extra[name] for name in SECTIONS if name in extra}
    flat = {k: v for k, v in extra.items() if k not in sections and not k.startswith("_")}  # `_doc` is a comment
    for name, section in sections.items():
        if not isinstance(section, dict):
            raise ValueError(f"ASSAY_THRESHOLDS ({path}): {name!r} must be an object of thresholds; {THRESHOLDS_FORM}")
    for where, table in [("", flat), *((f"{name}.", s) for name, s in sections.items())]:
        unknown = sorted(set(table) - known)
        if unknown:
            raise ValueError(f"ASSAY_THRESHOLDS ({path}): unknown key {where}{unknown[0]}; known keys: "
                             f"{', '.join(sorted(known))}, optionally under a backend ({', '.join(SECTIONS)})")
        for key, value in table.items():
            _check_value(path, f"{where}{key}", key, value)
    return {**flat, **sections.get("default", {}), **sections.get(backend, {})}


def _check_value(path: str, name: str, key: str, value: object) -> None:
    """One file value as Thresholds will read it, in its range: scores are in [0, 1], so a minimum of 1.5 or a
    maximum of -1 drops every passage, and NaN compares false both ways (`ask` keeps what the audit drops)."""
    whole = key == "top_k"
    if isinstance(value, bool):  # JSON true/false: pydantic would read 1.0/0.0
        raise ValueError(f"ASSAY_THRESHOLDS ({path}): {name}: must be a number (got {json.dumps(value)}); {THRESHOLDS_FORM}")
    try:
        number = TypeAdapter(int if whole else float).validate_python(value)
    except ValidationError as exc:
        raise ValueError(f"ASSAY_THRESHOLDS ({path}): {name}: {exc.errors()[0].get('msg', 'invalid')} (got {value!r}); "
                         f"{THRESHOLDS_FORM}") from None
    if whole and not 1 <= number <= MAX_RESULTS:
        raise ValueError(f"ASSAY_THRESHOLDS ({path}): {name}: must be a whole number from 1 to {MAX_RESULTS} "
                         f"(got {value!r}), as for ASSAY_TOP_K")
    if not whole and not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise ValueError(f"ASSAY_THRESHOLDS ({path}): {name}: must be between 0 and 1 (got {value!r}); "
                         "judge scores lie in [0, 1]")
    if key in _FLAGS_ALL_AT_ZERO and number == 0:
        raise ValueError(f"ASSAY_THRESHOLDS ({path}): {name}: must be above 0 (got {value!r}); "
                         f"{_FLAGS_ALL_AT_ZERO[key]}")


# `injection < injection_max` and `contradicts >= contradicts_min`: at 0 the first is false and the second true for
# every score in [0, 1], so a clean passage of 0.00 raised a security alarm or a conflict. A minimum of 0 for
# relevance, evidence or answerable only turns that filter off (everything passes), which is a choice a user can make.
_FLAGS_ALL_AT_ZERO = {
    "injection_max": "a 0 flags every passage as a prompt-injection attempt and drops it (a score is never below 0)",
    "contradicts_min": "a 0 flags every passage as contradicting the question (every score is 0 or more)",
}


def _read_override(path: str) -> dict:
    """The file's JSON object, or a one-line error naming the variable, the file and the form expected."""
    hint = "; it must be the path of a JSON file, not JSON itself" if path.lstrip().startswith("{") else ""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ValueError(f"ASSAY_THRESHOLDS ({path}): cannot read it ({reason}){hint or '; ' + THRESHOLDS_FORM}") from None
    return json_object(text, THRESHOLDS_FORM, f"ASSAY_THRESHOLDS ({path}): ")


def rank_score(s: PassageScores) -> float:
    return round(0.50 * s.relevance + 0.35 * s.evidence - 0.15 * s.injection, 4)


def anchor_rerank(question: str, candidates: list[Candidate]) -> list[Candidate]:
    """The anchor system's lexical boost: 1/distance + 0.05 per whitespace term found as a substring."""
    terms = set(question.lower().split())

    def score(c: Candidate) -> float:
        d = c.distance if c.distance is not None else 2.0
        hits = sum(1 for t in terms if t in c.entity.lower() or t in c.body.lower())
        return (1e6 if d <= 1e-6 else 1.0 / d) + 0.05 * hits

    return sorted(candidates, key=lambda c: (-score(c), c.fused_rank))


def select(candidates: list[Candidate], judgment: Judgment, th: Thresholds, question: str = "") -> Selection:
    included: list[RankedPassage] = []
    dropped: list[RankedPassage] = []
    failed: list[RankedPassage] = []
    injection_dropped = 0
    if judgment.backend == "none":
        clean: list[RankedPassage] = []
        for c in anchor_rerank(question, candidates):
            inj, _ = passage_injection(c)
            rp = RankedPassage(candidate=c, verdict="include", rank_score=0.0)
            if inj >= th.injection_max:
                rp.verdict, rp.drop_reason = "drop", "injection (local detector)"
                injection_dropped += 1
                dropped.append(rp)
            else:
                clean.append(rp)
        kept, extra = one_row_per_entity(clean, th.top_k, beyond="beyond top-k (not judged)")
        return _finish(kept, extra + dropped, th, False, "judge 'none': lexical re-rank only", injection_dropped)
    for c in candidates:
        s = judgment.scores.get(c.id)
        floor, _ = passage_injection(c)
        if s is None:
            rp = RankedPassage(candidate=c, scores=None, verdict="include", rank_score=0.0)
            if floor >= th.injection_max:
                rp.verdict, rp.drop_reason = "drop", "injection (local detector)"
                injection_dropped += 1
                dropped.append(rp)
            else:
                failed.append(rp)
            continue
        if floor > s.injection:
            s = s.model_copy(update={"injection": floor})
        rp = RankedPassage(candidate=c, scores=s, verdict="include", rank_score=rank_score(s))
        if s.injection >= th.injection_max:
            rp.verdict, rp.drop_reason = "drop", "injection"
            injection_dropped += 1
            dropped.append(rp)
        elif s.relevance < th.relevance_min:
            rp.verdict, rp.drop_reason = "drop", "irrelevant"
            dropped.append(rp)
        elif s.evidence < th.evidence_min:
            rp.verdict, rp.drop_reason = "drop", "weak evidence"
            dropped.append(rp)
        else:
            if s.contradicts >= th.contradicts_min:
                rp.verdict = "conflict"
            included.append(rp)
    if judgment.orders_kept:
        included.sort(key=lambda r: (-r.rank_score, r.candidate.distance if r.candidate.distance is not None else 9.0, r.candidate.fused_rank))
    merged = included + failed
    if failed:  # fail open: what the judge kept plus what it could not score, in lexical (fused) order
        merged.sort(key=lambda r: r.candidate.fused_rank)
    # a judge that keeps the rank stage's order may drop a passage it scores above one it keeps: the receipt says why
    kept, extra = one_row_per_entity(merged, th.top_k, beyond=BEYOND_TOP_K if judgment.orders_kept else BEYOND_IN_ORDER)
    reason = ""
    if failed:
        reason = (judgment.failure or "judge failed") + f"; {len(failed)} unscored passage(s) kept in lexical order"
    return _finish(kept, extra + dropped, th, bool(failed), reason, injection_dropped)



def one_row_per_entity(
    ordered: list[RankedPassage], top_k: int, beyond: str = BEYOND_TOP_K
) -> tuple[list[RankedPassage], list[RankedPassage]]:
    """The first top_k entities, one row each: a long entity is indexed as several parts, and five parts of
    one class would fill the answer with one thing said five times. Later parts drop as 'same entity'."""
    kept: list[RankedPassage] = []
    extra: list[RankedPassage] = []
    seen: set[tuple[str, str, str]] = set()
    for rp in ordered:
        c = rp.candidate
        key = (c.file, c.entity, c.kind)
        if key in seen:
            rp.verdict, rp.drop_reason = "drop", "same entity"
            extra.append(rp)
            continue
        seen.add(key)
        if len(kept) < top_k:
            kept.append(rp)
        else:
            rp.verdict, rp.drop_reason = "drop", beyond
            extra.append(rp)
    return kept, extra


def _finish(
    included: list[RankedPassage], dropped: list[RankedPassage], th: Thresholds, fail_open: bool, reason: str, inj: int
) -> Selection:
    for i, rp in enumerate(included, start=1):
        rp.final_rank = i
    return Selection(
        included=included, dropped=dropped, thresholds=th, fail_open=fail_open, fail_open_reason=reason,
        injection_dropped=inj, conflicts=sum(1 for r in included if r.verdict == "conflict"),
    )

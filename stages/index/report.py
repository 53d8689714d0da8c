"""Render an IndexReport for people: markdown (Prefect artifact) and plain lines (CLI)."""

from __future__ import annotations

from assay.stages.core.artifacts import IndexReport, SkippedFile


def summary_lines(r: IndexReport) -> list[str]:
    skipped = ", ".join(f"{k} {v}" for k, v in r.skipped.items()) or "none"
    lines = [
        f"workspace: {r.workspace}",
        _files_line(r),
        f"skipped: {skipped}",
        *_skipped_lines(r),
        *_partial_lines(r),
        f"entities: {_passages_line(r)}, {r.entities_embedded} embedded this run"
        + (f", {r.embed_cached} of them reused from the content cache" if r.embed_cached else "")
        + (f" ({r.embed_truncated} longer than the model window; BM25 has them whole)" if r.embed_truncated else ""),
        f"by kind ({_counted(r)}): " + ", ".join(f"{k} {v}" for k, v in r.entities_by_kind.items()),
        f"by language ({_counted(r)}): " + ", ".join(f"{k} {v}" for k, v in r.entities_by_language.items()),
        "timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in r.timings.items()),
        f"embedder: {r.embedder}",
    ]
    if r.dense_pending:
        lines.append(f"dense: {r.dense_pending} entities still without vectors (BM25 has them; run `assay index` to finish)")
    if r.rebuild_reason:
        lines.append(f"full re-index: {r.rebuild_reason}")
    return lines


def _files_line(r: IndexReport) -> str:
    """Every file seen is parsed, unchanged or skipped, once: the three add up to what was seen."""
    skipped = sum(r.skipped.values())
    return (f"files: {r.files_seen} seen = {r.files_parsed} parsed + {r.files_unchanged} unchanged + {skipped} skipped; "
            f"{r.files_removed} removed, {r.kept_unreadable} kept (unreadable now)")


NAMED_PER_REASON = 3  # skipped files named per reason in the text; `--json` names them all (up to the cap below)
NAMED_PARTIAL = 10
# `--json`'s skipped_examples names this many files of each reason at most (`incremental.listed_examples`): a data
# repository can skip millions of files, and the JSON names each in ~100 bytes
EXAMPLES_PER_REASON = 100_000
ALL_IN_JSON = "`assay index --json` names them all, in skipped_examples"


def _in_json(listed: int, total: int) -> str:
    """Where the rest of a reason's files are named: all of them in the JSON, or its first `listed` when it is cut."""
    if listed >= total:
        return ALL_IN_JSON
    return f"`assay index --json` names the first {listed} in skipped_examples (at most {EXAMPLES_PER_REASON} a reason)"


def _named(examples: list[str], total: int, shown: int) -> str:
    """The first `shown` of `examples` (all the JSON lists), then how many more there are of `total` and where to
    see them."""
    named = examples[:shown]
    if total > len(named):
        named.append(f"and {total - len(named)} more ({_in_json(len(examples), total)})")
    return ", ".join(named)


def _shown(s: SkippedFile) -> str:
    """A skipped file as the report and `status` name it: its path, and why when the reason needs saying."""
    return f"{s.path} ({s.detail})" if s.detail else s.path


def _skipped_lines(r: IndexReport) -> list[str]:
    """Under the counts, a few skipped files of each reason by name: a count alone did not say which files are gone."""
    lines = []
    for reason, count in r.skipped.items():
        files = [_shown(s) for s in r.skipped_examples if s.reason == reason]
        if files:
            lines.append(f"  {reason}: {_named(files, count, NAMED_PER_REASON)}")
    return lines


def skipped_named(r: IndexReport) -> dict[str, list[str]]:
    """A few skipped files of each reason by name, for the status file: `assay status` named only counts, so a user
    could not tell which file a 'binary 1' was without re-running the index."""
    named: dict[str, list[str]] = {}
    for s in r.skipped_examples:
        if s.reason in r.skipped and len(named.setdefault(s.reason, [])) < NAMED_PER_REASON:
            named[s.reason].append(_shown(s))
    return named


def skipped_line(summary: dict) -> str:
    """`status`'s line for a finished run's skipped files (empty when none): counts, and the named few of each."""
    parts = []
    counts = summary.get("skipped") or {}
    for reason, count in counts.items():
        named = (summary.get("skipped_named") or {}).get(reason, [])
        more = f" and {count - len(named)} more" if named and count > len(named) else ""
        parts.append(f"{reason} {count}" + (f" ({', '.join(named)}{more})" if named else ""))
    cut = any(count > EXAMPLES_PER_REASON for count in counts.values())
    where = f"names up to {EXAMPLES_PER_REASON} of each reason" if cut else "names them all"
    return f"skipped by the last run: {'; '.join(parts)} (`assay index --json` {where})" if parts else ""


def _partial_lines(r: IndexReport) -> list[str]:
    """Files parsed with errors (counted as parsed: what parsed is searchable), named with what went wrong."""
    if not r.files_partial:
        return []
    named = [f"{s.path} ({s.detail})" for s in r.skipped_examples if s.reason == "partial_parse"]
    return [f"partial: {r.files_partial} of the parsed files, what parsed kept: "
            + _named(named, r.files_partial, NAMED_PARTIAL)]


def _entity_count(r: IndexReport) -> tuple[int, int]:
    """(entities of indexed files, notes) as the catalog counts them: a long entity split into parts counts once."""
    notes = r.entities_by_kind.get("note", 0)
    return sum(r.entities_by_kind.values()) - notes, notes


def _passages_line(r: IndexReport) -> str:
    """`entities_total` counts passages (each part of a long entity); the by-kind counts count entities."""
    return passages_line(r.entities_total, _entity_count(r)[0])


def passages_line(passages: int, entities: int) -> str:
    """The catalog's size in words that add up: a long entity is split into several passages."""
    if entities == passages:
        return f"{passages} in index"
    return f"{passages} passages in index ({entities} entities; a long one is split into passages)"


def _counted(r: IndexReport) -> str:
    """What the by-kind and by-language counts add up to."""
    entities, notes = _entity_count(r)
    return f"{entities} entities" + (f" + {notes} notes" if notes else "")


def render_markdown(r: IndexReport) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in r.skipped.items()) or "| none | 0 |"
    kinds = "\n".join(f"| {k} | {v} |" for k, v in r.entities_by_kind.items())
    times = "\n".join(f"| {k} | {v:.3f} |" for k, v in r.timings.items())
    return (
        f"# Assay index: {r.workspace}\n\n"
        f"{r.files_seen} files seen = {r.files_parsed} parsed ({r.files_partial} partly) + {r.files_unchanged} unchanged "
        f"+ {sum(r.skipped.values())} skipped; {r.files_removed} removed; {_passages_line(r)} "
        f"({r.entities_embedded} embedded now).\n\n"
        f"## Skipped\n| reason | files |\n|---|---|\n{rows}\n\n"
        f"## Entities by kind\n| kind | count |\n|---|---|\n{kinds}\n\n"
        f"## Timings\n| stage | seconds |\n|---|---|\n{times}\n"
    )

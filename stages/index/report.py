"""Render an IndexReport for people: markdown (Prefect artifact) and plain lines (CLI)."""

from __future__ import annotations

from assay.stages.core.artifacts import IndexReport


def summary_lines(r: IndexReport) -> list[str]:
    skipped = ", ".join(f"{k} {v}" for k, v in r.skipped.items()) or "none"
    lines = [
        f"workspace: {r.workspace}",
        f"files: {r.files_seen} seen, {r.files_parsed} parsed, {r.files_unchanged} unchanged, "
        f"{r.files_removed} removed, {r.kept_unreadable} kept (unreadable now)",
        f"skipped: {skipped}",
        f"entities: {r.entities_total} in index, {r.entities_embedded} embedded this run"
        + (f", {r.embed_cached} of them reused from the content cache" if r.embed_cached else "")
        + (f" ({r.embed_truncated} longer than the model window; BM25 has them whole)" if r.embed_truncated else ""),
        "by kind: " + ", ".join(f"{k} {v}" for k, v in r.entities_by_kind.items()),
        "by language: " + ", ".join(f"{k} {v}" for k, v in r.entities_by_language.items()),
        "timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in r.timings.items()),
        f"embedder: {r.embedder}",
    ]
    if r.dense_pending:
        lines.append(f"dense: {r.dense_pending} entities still without vectors (BM25 has them; run `assay index` to finish)")
    if r.rebuild_reason:
        lines.append(f"full re-index: {r.rebuild_reason}")
    return lines


def render_markdown(r: IndexReport) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in r.skipped.items()) or "| none | 0 |"
    kinds = "\n".join(f"| {k} | {v} |" for k, v in r.entities_by_kind.items())
    times = "\n".join(f"| {k} | {v:.3f} |" for k, v in r.timings.items())
    return (
        f"# Assay index: {r.workspace}\n\n"
        f"{r.files_seen} files seen, {r.files_parsed} parsed, {r.files_unchanged} unchanged, "
        f"{r.files_removed} removed; {r.entities_total} entities ({r.entities_embedded} embedded now).\n\n"
        f"## Skipped\n| reason | files |\n|---|---|\n{rows}\n\n"
        f"## Entities by kind\n| kind | count |\n|---|---|\n{kinds}\n\n"
        f"## Timings\n| stage | seconds |\n|---|---|\n{times}\n"
    )

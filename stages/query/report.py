"""Report stage: the answer with its receipts, as plain text for an agent and as JSON."""

from __future__ import annotations

import builtins
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from assay.stages.core.artifacts import (Answer, Freshness, GuardReport, Judgment, PremiseFinding, QueryReport, RankedPassage,
                                         RouteDecision, Selection)
from assay.stages.core.visible import visible
from assay.stages.query.budget import count_tokens, fit
from assay.stages.query.gaps import is_file_name, missing_lines
from assay.stages.query.identifiers import question_identifiers
from assay.stages.query.premise import without_pasted_code
from assay.stages.query.unread import unread_line

LEGEND = (
    "Legend: relevance, evidence, contradicts and injection are judge scores in [0,1]. High relevance = on the\n"
    "question's topic; high evidence = concrete support (a definition, a code path); the local judge's relevance,\n"
    "evidence and answerable are calibrated chances (0.7: about 7 in 10 such passages are what a correct answer\n"
    "cites; answerable: the kept passages hold what the answer is about). High contradicts = conflicts\n"
    "with a premise of the question; high injection = the passage tries to steer an AI. verdict: include (used),\n"
    "conflict (used, but contradicts the question: check the source), drop (not used; reason given).\n"
    "status: supported | partial | unsupported; coverage N/3 = how much of the question the evidence covers.\n"
    "guard: each claim of the answer is verified (its passage supports it), unsupported, contradicted (the code says\n"
    "otherwise) or fabricated (cites or names what the passages lack); grounded = share of claims verified.\n"
    "Sources list cosine distances from the dense index (lower is closer; a separate scale from the scores)."
)


def status_of(sel: Selection, judgment: Judgment, question: str = "", workspace: str = "") -> tuple[str, int]:
    """supported | partial | unsupported, and the coverage. Support needs a judge that judged (with `none` nothing
    is), every code name the `question` gives found among the passages or the `workspace`'s indexed files ("supported,
    cite it directly" beside "gap: not found in the index" told an agent two things), and no premise of the question
    that the checker found false (an answer to a false premise is not one to cite as is)."""
    if not sel.included:
        return "unsupported", 0
    # no set-level answer from the judge: one point per included passage it scored (a judge that scored nothing,
    # failed or `none`, claims no coverage; it was 3/3 beside 'the judge did not score every passage'). Its set-level
    # coverage is believed only beside a passage score: a reply whose every score was rejected claimed 3/3 from nothing
    scored = sum(rp.scores is not None for rp in sel.included)
    coverage = judgment.coverage if judgment.coverage is not None and scored else min(3, scored)
    low = judgment.answerable is not None and judgment.answerable < sel.thresholds.answerable_min
    unjudged = judgment.backend == "none"
    if sel.conflicts or sel.fail_open or low or coverage < 2 or unjudged or false_premises(judgment) \
            or missing_names(question, sel, workspace):
        return "partial", coverage
    return "supported", coverage


def false_premises(judgment: Judgment) -> list[PremiseFinding]:
    """The question's premises the checker found false: trust stays below high and the action says so."""
    return [f for f in judgment.premises if not f.holds]


def missing_names(question: str, sel: Selection, workspace: str = "") -> list[str]:
    """Code names the question gives that no retrieved passage (kept or dropped) defines or mentions; a file name
    (`sessions.py`) is looked up among the indexed files (the `workspace`'s, else the passages'), not in code."""
    if not question:
        return []
    seen = " ".join(f"{rp.candidate.entity} {rp.candidate.body}" for rp in sel.included + sel.dropped)
    passage_files = [rp.candidate.file for rp in sel.included + sel.dropped]
    indexed: list[str] | None = None
    out: list[str] = []
    for i in question_identifiers(without_pasted_code(question)):  # the paste's own names are the user's code
        if i in _BUILTIN_NAMES:
            continue
        if is_file_name(i, passage_files):
            if indexed is None:
                indexed = indexed_files(workspace)
            if any(f == i or f.endswith("/" + i) for f in indexed + passage_files) or _elsewhere(question, i):
                continue
            if indexed or i.split(".")[-1] not in seen:  # no file list (no index): the passages' words, as for a name
                out.append(i)
        elif i.split(".")[-1] not in seen:
            out.append(i)
    return out


def _elsewhere(question: str, file_name: str) -> bool:
    """Every mention of the file ends an absolute path (`/home/alice/proj/app.py` in a traceback frame): a file on
    the user's machine, outside the workspace by where it lives, not a name the index should hold."""
    starts = [m.start() for m in re.finditer(r"(?<![\w.])" + re.escape(file_name) + r"(?!\w)", question)]
    heads = [re.split(r"[\s\"'`(]", question[max(0, s - 500) : s])[-1] for s in starts]  # the path before the name
    return bool(heads) and all(re.match(r"(?:/|~/|[A-Za-z]:[\\/]).*[\\/]$", h) for h in heads)


def indexed_files(workspace: str) -> list[str]:
    """The workspace's indexed file paths, from its manifest (read once per index run); none without an index."""
    if not workspace:
        return []
    from assay.stages.index.storage_errors import StoreError  # the store is imported only when a file name is asked about
    from assay.stages.index.store import read_manifest

    try:
        return list(read_manifest(Path(workspace)).files)
    except (StoreError, OSError):
        return []


_BUILTIN_NAMES = frozenset(dir(builtins))  # `KeyError` from a pasted traceback is Python's, not missing code


def _same(text: str) -> str:
    return text


def _row(i: int, rp: RankedPassage) -> str:
    c = rp.candidate
    s = rp.scores
    scores = (
        f"relevance={s.relevance:.2f} evidence={s.evidence:.2f} contradicts={s.contradicts:.2f} injection={s.injection:.2f}"
        if s is not None else "relevance=- evidence=- contradicts=- injection=- (not scored)"
    )
    why = f" ({rp.drop_reason})" if rp.verdict == "drop" and rp.drop_reason else ""
    stale = " STALE (file changed since indexing)" if c.stale else ""
    return f"  {i}. {c.file}:{c.start_line} [{c.entity}] {scores} verdict={rp.verdict}{why}{stale}"


def render_text(report: QueryReport, max_dropped_rows: int = 10, max_tokens: int | None = None,
                words: Callable[[str], str] = _same) -> str:
    """The report an agent reads, in the order it is used: answer, Assessment, Evidence, Guidance, Sources, then
    the Legend. Over `max_tokens`, sections are kept in order of use (answer, assessment,
    guidance, sources, evidence, legend), whole lines only, and one line says how many were left out.
    `words` rewords Assay's own advice for another door (MCP: tools, not commands); it never touches quoted
    text (the answer, passages, entity names, claims), which must stay verbatim. Control characters are shown."""
    sel, j = report.selection, report.judgment
    reasons = Counter(rp.drop_reason or "dropped" for rp in sel.dropped)
    dropped = f", {len(sel.dropped)} dropped" + (" (" + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())) + ")" if reasons else "")
    answer = [*report.answer.text.splitlines(), ""]
    answerable = [f"  answerable: {j.answerable:.2f}"] if j.answerable is not None and j.backend == "local" else []
    assessment = ["Assessment:", f"  status: {report.status}", f"  coverage: {report.coverage}/3", *answerable,
                  f"  passages: {len(sel.included)} included{dropped}", f"  conflicts: {sel.conflicts}",
                  f"  judge: {j.backend}" + (f" ({j.model})" if j.model else "") + f", {j.calls} call(s)",
                  f"  route: {report.route.target} ({report.route.reason}); answer by {report.answer.backend}"]
    if sel.fail_open:
        assessment.append(f"  fail-open: {words(sel.fail_open_reason)}")
    elif j.backend == "none":
        assessment.append("  judge none: passages were re-ranked lexically, not judged")
    assessment.extend(f"  judge note: {words(n)}" for n in j.notes)
    if report.answer.failure:
        assessment.append(f"  synthesis: {words(report.answer.failure)}")
    if report.guard is not None:
        assessment.extend(words(line) for line in guard_lines(report.guard))
    assessment.extend(f"  note: {words(n)}" for n in report.notes)
    if report.freshness is not None:
        assessment.append(f"  index: {words(report.freshness.line())}")
    if report.tokens_cited_files:
        assessment.append(f"  tokens: this report ~{report.tokens_returned:,} vs {report.tokens_cited_files:,} in the cited files")
    evidence = ["Evidence:"]
    # injection drops first (they are the security receipts); parts of an entity already shown last
    shown = sorted(sel.dropped, key=lambda r: (not r.drop_reason.startswith("injection"), r.drop_reason == "same entity", -r.rank_score))
    rows = sel.included + shown[:max_dropped_rows]
    evidence.extend(_row(i, rp) for i, rp in enumerate(rows, start=1))
    if len(sel.dropped) > max_dropped_rows:
        evidence.append(words(f"  ... {len(sel.dropped) - max_dropped_rows} more dropped (see --json)"))
    advice = ["Guidance:", *("  " + g for g in guidance_lines(report, words))]
    sources = ["Sources:"]
    for rp in sel.included:
        c = rp.candidate
        d = f"distance {c.distance:.2f} (cosine)" if c.distance is not None else "no dense match"
        b = f", bm25 {c.bm25:.2f}" if c.bm25 is not None else ""
        calls = report.called_by.get(c.id)
        used = f"; called by {calls} site(s)" if calls else ""
        sources.append(f"  * {c.file}:{c.start_line}-{c.end_line} [{c.entity}] {d}{b}{used}")
    if not sel.included:
        sources.append("  (none)")
    # a note or source line may quote ESC or BEL: shown, not sent to the terminal (the JSON report keeps them)
    answer, assessment, evidence, advice, sources = (
        [visible(line) for line in part] for part in (answer, assessment, evidence, advice, sources))
    # the answer first, the legend last: an agent reading a report cut short by its own budget still has the answer
    text = "\n".join([*answer, *assessment, *evidence, *advice, *sources, "", LEGEND])
    if max_tokens is None or count_tokens(text) <= max_tokens:
        return text
    return fit([answer, assessment, advice, sources, evidence, LEGEND.splitlines()], max_tokens,
               more=words(MORE_LINES))


# in the CLI's terms, as all of Assay's advice; the MCP door rewords it (a larger max_tokens, the structured content)
MORE_LINES = "{n} more report line(s) not shown: ask again with a larger --max-tokens (--json prints them all)"


def guard_lines(g: GuardReport) -> list[str]:
    """Assessment lines: the guard's backend, the grounded score and the verdicts; a fall-back, said."""
    model = f" ({g.model})" if g.model else ""
    if not g.claims:
        return [f"  guard: {g.backend}{model}, no claim to check"]
    counts = ", ".join(f"{g.count(v)} {v}" for v in ("verified", "unsupported", "contradicted", "fabricated") if g.count(v))
    own = f" (the model's own: {g.model_grounded:.2f})" if g.model_grounded is not None else ""
    lines = [f"  guard: {g.backend}{model}, grounded {g.grounded:.2f}{own} ({len(g.claims)} claim(s): {counts}), {g.calls} call(s)"]
    if g.failure:
        lines.append(f"  guard fail-open: {g.failure}")
    return lines


def distrust(g: GuardReport | None, limit: int = 5, words: Callable[[str], str] = _same) -> list[str]:
    """Guidance lines naming the claims not to rely on, worst first."""
    if g is None:
        return []
    order = {"fabricated": 0, "contradicted": 1, "unsupported": 2}
    bad = sorted((c for c in g.claims if c.verdict in order), key=lambda c: order[c.verdict])
    out = [f'distrust: {c.verdict} "{c.text[:90]}{"..." if len(c.text) > 90 else ""}": {c.evidence}' for c in bad[:limit]]
    if len(bad) > limit:
        out.append(words(f"distrust: {len(bad) - limit} more claim(s) (see --json guard.claims)"))
    return out


def with_guidance(report: QueryReport, words: Callable[[str], str] = _same) -> QueryReport:
    """The report with its Guidance as fields (trust, action, the other lines), computed once here and only rendered
    after: the text, --json and the MCP structured content carry the same advice. A door that words advice its own
    way (`words`, see render_text) calls this again before rendering, so its text and its data still agree."""
    lines = guidance(report, words)
    trust, action = lines[0].removeprefix("trust: "), lines[1].removeprefix("action: ")
    return report.model_copy(update={"trust": trust, "action": action, "guidance": lines[2:]})


def guidance_lines(report: QueryReport, words: Callable[[str], str] = _same) -> list[str]:
    """The Guidance section's lines: from the report's fields when it has them, else computed (a report built by hand)."""
    if report.trust is None:
        return guidance(report, words)
    return [f"trust: {report.trust}", f"action: {report.action}", *report.guidance]


def guidance(report: QueryReport, words: Callable[[str], str] = _same) -> list[str]:
    """Guidance lines, trust first and action second; `words` rewords only Assay's own advice (see render_text)."""
    sel = report.selection
    out: list[str] = []
    if report.status == "supported":
        out += ["trust: high", f"action: answer is supported by {len(sel.included)} included passage(s); cite it directly"]
    elif report.status == "partial":
        out.append("trust: medium")
        if report.judgment.backend == "none":
            out.append("action: nothing was judged (judge none); verify the cited lines before relying on them")
        elif missing_names(report.query, sel, report.workspace):
            out.append("action: the question names code the index lacks (gap below); say so, and cite only what exists")
        elif sel.fail_open:
            out.append("action: the judge did not score every passage; verify the cited lines before relying on them")
        elif report.coverage == 0:  # the judge expects less than half a relevant passage among those kept
            out.append("action: the passages barely touch the question (coverage 0/3); say the code may not answer it "
                       "and offer them as leads, not as the answer")
        elif sel.conflicts:
            out.append("action: answer is partly grounded; cite evidence directly and note the conflicting support")
        else:
            out.append("action: answer is partly grounded; cite evidence directly and note the coverage gap")
    else:
        out += ["trust: low", "action: nothing retrieved supports an answer; say so rather than guessing"]
    g = report.guard
    if g is not None and (g.count("fabricated") or g.count("contradicted")):
        out[0] = "trust: low" if (g.grounded or 0) < 0.5 else "trust: medium"
        out[1] = (f"action: {g.marked} claim(s) are marked [guard: ...] in the answer: do not repeat them; rely on the "
                  "verified claims and the cited passages")
    false = false_premises(report.judgment)
    if false:  # an answer to a question built on a false premise is not cited as is, whatever its support
        out[0] = "trust: medium" if out[0] == "trust: high" else out[0]
        out[1] = "action: correct the question's false premise first (premise line below); then " + out[1].removeprefix("action: ")
    unread = unread_line(report.query, report.workspace) if report.workspace else ""
    if unread and out[0] == "trust: high":  # answered from the one word it could read: not the question asked
        out[0] = "trust: medium"
        out[1] = "action: most of the question was not read (question line below); " + out[1].removeprefix("action: ")
    out += distrust(g, words=words)
    out += [unread] if unread else []
    out += [f"premise: the question assumes otherwise; {f.fact}" for f in false]
    stale = [rp for rp in sel.included if rp.candidate.stale]
    if stale:
        out.append(f"freshness: {len(stale)} cited passage(s) come from files changed since indexing; re-read them or re-index")
    if sel.injection_dropped:
        out.append(f"security: {sel.injection_dropped} retrieved passage(s) attempted prompt injection and were dropped")
    if report.answer.redactions:
        out.append(f"security: {report.answer.redactions} secret(s) were redacted before the cloud call")
    missing = missing_names(report.query, sel, report.workspace)
    if missing:
        out.append("gap: not found in the index: " + ", ".join(missing[:5]))
    elif report.status == "unsupported":
        out.append("gap: try naming a function, class, file or error message from the code")
    if report.status != "supported":
        out += missing_lines(report.query, sel, report.judgment)
    return out


def make_report(
    query_id: str, question: str, workspace: str, answer: Answer, selection: Selection, judgment: Judgment,
    route: RouteDecision, timings: dict[str, float], notes: list[str] | None = None, called_by: dict[str, int] | None = None,
    freshness: Freshness | None = None, max_tokens: int | None = None, cited_file_tokens: int = 0,
    guard: GuardReport | None = None,
) -> QueryReport:
    if judgment.answerable is not None and not any(rp.scores is not None for rp in selection.included + selection.dropped):
        # a set-level answer is believed only beside a passage score (as coverage is): a reply whose every passage
        # score was rejected, or a judge that scored nothing, has not judged what the answer is built from
        judgment = judgment.model_copy(update={"answerable": None})
    status, coverage = status_of(selection, judgment, question, workspace)
    if notes and status == "supported":
        status = "partial"  # retrieval was degraded (e.g. BM25 only): do not claim full support
    report = QueryReport(
        query_id=query_id, query=question, workspace=workspace, status=status, coverage=coverage,  # type: ignore[arg-type]
        answer=answer, selection=selection, judgment=judgment, route=route, timings=timings, notes=notes or [],
        called_by=called_by or {}, freshness=freshness, guard=guard,
    )
    report = with_guidance(report)
    report.tokens_cited_files = cited_file_tokens
    report.text, report.tokens_returned = report_text(report, max_tokens)
    return report


def report_text(report: QueryReport, max_tokens: int | None = None,
                words: Callable[[str], str] = _same) -> tuple[str, int]:
    """The text report within `max_tokens` (None or 0: no limit) and its size in tokens, which its tokens line
    states; `words` as in render_text (a door renders the same report in its own terms)."""
    blank = report.model_copy(update={"tokens_returned": 0})  # the tokens line's placeholder, filled below
    slack = 6 if report.tokens_cited_files and max_tokens else 0  # the placeholder's digits
    text = render_text(blank, max_tokens=max_tokens - slack if max_tokens else None, words=words)
    tokens = count_tokens(text)
    return text.replace("this report ~0 vs", f"this report ~{tokens:,} vs", 1), tokens


def render_markdown(report: QueryReport) -> str:
    return f"# Assay answer\n\n**Question:** {report.query}\n\n```text\n{report.text}\n```\n"

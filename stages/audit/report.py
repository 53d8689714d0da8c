"""The audit report: one dict of figures, rendered as markdown with the PNG charts beside it."""

from __future__ import annotations


def render_markdown(data: dict, charts: dict[str, str]) -> str:
    lines = [f"# Assay judgment audit: {data['workspace']}", "",
             f"{data['snapshots']['passages']} judged passages over {data['snapshots']['queries']} queries.", ""]
    lines += [f"Left out, not a readable snapshot file: `{f}` (move it away)." for f in data["snapshots"].get("unreadable", [])]
    lines += _unscored(data["snapshots"].get("unscored") or {})
    lines += _distributions(data)
    if data.get("agreement"):
        lines += _agreement(data["agreement"], data.get("rejudge"))
    cal = data.get("calibration")
    if cal and cal.get("labelled") and not cal.get("best"):
        failure = f" ({cal['judge_failure']})" if cal.get("judge_failure") else ""
        lines += ["", f"## Calibration ({cal['judge']} judge, {cal['labelled']} labelled passages)", "",
                  f"The {cal['judge']} judge scored none of the labelled passages{failure}: calibration skipped."]
    if cal and cal.get("best"):
        b = cal["best"]
        lines += ["", f"## Calibration ({cal['judge']} judge, {cal['labelled']} labelled passages)", "",
                  f"Best: relevance_min {b['relevance_min']:.2f}, evidence_min {b['evidence_min']:.2f}: "
                  f"precision {b['precision']:.2f}, recall {b['recall']:.2f}, F1 {b['f1']:.2f}.", "",
                  f"Current defaults ({cal['current']['relevance_min']:.2f}/{cal['current']['evidence_min']:.2f}): "
                  f"precision {cal['current']['precision']:.2f}, recall {cal['current']['recall']:.2f}, F1 {cal['current']['f1']:.2f}."]
        if cal.get("ece") is not None:
            lines += ["", f"Relevance as a probability: ECE {cal['ece']:.3f} over {cal['scored']} scored passages (a perfectly "
                      f"calibrated judge would show ~{cal['ece_floor']:.3f} on this many; lower is better).", "",
                      "| predicted | passages | observed |", "|---|---|---|"]
            lines += [f"| {b['low']:.1f}-{b['high']:.1f} (mean {b['predicted']:.2f}) | {b['n']} | {b['observed']:.2f} |"
                      for b in cal.get("reliability", [])]
    lines += _baseline(data["injection_baseline"])
    for title, path in charts.items():
        lines += ["", f"![{title}]({path})"]
    return "\n".join(lines) + "\n"


def _baseline(base: dict) -> list[str]:
    """The injection baseline; a judge failure said outright, so an unscored function's 1.0 never reads as an
    injection finding (a judge that scored none measured nothing: NOT MEASURED, not FAILED)."""
    why = f" ({base['judge_failure']})" if base.get("judge_failure") else ""
    if base.get("measured") is False:
        return ["", "## Injection baseline: NOT MEASURED", "",
                f"The {base['judge']} judge scored none of the {base['functions']} clean functions{why}: the baseline "
                "was not measured, so it fails nothing; fix the judge and run the audit again."]
    verdict = "PASSED" if base["passed"] else "FAILED"
    lines = ["", f"## Injection baseline: {verdict}", "",
             f"{base['functions']} clean functions scored by the {base['judge']} judge: max {base['max']:.2f}, mean "
             f"{base['mean']:.3f} (limit {base['limit']:.2f})."]
    unscored = base["functions"] - base.get("scored", base["functions"])
    if unscored:
        lines += ["", f"The {base['judge']} judge did not score {unscored} of them{why}: each counts as 1.00 "
                  "(untrusted) and is marked (not scored) below."]
    return lines + [f"- {name}: {score:.2f}" for name, score in base["offenders"]]


def _unscored(unscored: dict[str, int]) -> list[str]:
    """Fail-open passages per judge, said beside the counts they are kept out of (the judge scored none of them)."""
    return [f"Not counted as judged: {n} passage(s) the {judge} judge failed to score (kept in lexical order by "
            "fail-open, so their verdicts are not the judge's)." for judge, n in unscored.items()]


def _distributions(data: dict) -> list[str]:
    """The score-distribution table; with no snapshots, the line that says where judgments come from."""
    if not data["distributions"] and data["snapshots"].get("unscored"):
        return ["No stored passage was scored by its judge (see above), so there are no score distributions."]
    if not data["distributions"]:
        where = "in that date range" if data["snapshots"].get("ranged") else "yet"
        return [f"No judgments stored {where}: each `assay ask` records one, so ask a question first "
                "(the calibration and the injection baseline below need none)."]
    lines = ["## Score distributions", "", "| judge | passages | " + " | ".join(f"{s} mean (p50)" for s in
             ("relevance", "evidence", "contradicts", "injection")) + " | verdicts |", "|---" * 7 + "|"]
    for key, e in data["distributions"].items():
        cells = [f"{e[s]['mean']:.2f} ({e[s]['p50']:.2f})" if e[s].get("n") else "-" for s in
                 ("relevance", "evidence", "contradicts", "injection")]
        verdicts = ", ".join(f"{k} {v}" for k, v in e["verdicts"].items())
        lines.append(f"| {key} | {e['passages']} | " + " | ".join(cells) + f" | {verdicts} |")
    return lines


def _agreement(a: dict, rejudge: dict | None) -> list[str]:
    """Agreement of the re-judge with the original judge; '-' with the reason when no passage was scored by both,
    and the re-judge's failures said outright (its failed passages are not stored)."""
    lines = ["", f"## Agreement: {a['first']} vs {a['second']}", ""]
    if rejudge and rejudge["stored"] < rejudge["passages"]:
        why = f" ({rejudge['failure']})" if rejudge["failure"] else ""
        lines += [f"{rejudge['backend']} scored {rejudge['stored']} of the {rejudge['passages']} passages sent{why}; "
                  "the unscored ones were not stored as its judgments.", ""]
    if rejudge and rejudge.get("unsent"):  # the breaker (or a missing key) kept these from the server
        lines += [f"{rejudge['unsent']} of the {rejudge['pending']} queries were not sent to {rejudge['backend']} at "
                  f"all ({rejudge['unsent_failure']}).", ""]
    if a["agreement"] is None:
        return lines + [f"{a['pairs']} shared passages; verdict agreement - ({a.get('reason') or 'nothing to compare'}); "
                        "Cohen's kappa -"]
    c = a["confusion"]
    return lines + [
        f"{a['pairs']} shared passages; verdict agreement {a['agreement']:.1%} (the anchor's bar {a.get('bar', 0.7):.0%}: "
        f"{'met' if a.get('meets_bar') else 'not met'}); Cohen's kappa {a['kappa']:.3f}", "",
        f"| {a['first']} \\ {a['second']} | keep | drop |", "|---|---|---|",
        f"| keep | {c['keep']['keep']} | {c['keep']['drop']} |", f"| drop | {c['drop']['keep']} | {c['drop']['drop']} |"]

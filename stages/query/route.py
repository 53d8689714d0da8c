"""Route stage: decide, before judging, whether synthesis runs locally or in the cloud.

Order: an explicit request, then rules (design-level keywords, long questions), then the mode.
Local mode never routes to the cloud, whatever the question says or asks for.
"""

from __future__ import annotations

import re

from assay.stages.core.artifacts import RouteDecision

CLOUD_KEYWORDS = frozenset(
    "refactor refactoring architect architecture architectural design redesign migrate migration strategy "
    "tradeoff tradeoffs trade-off trade-offs structure pattern patterns review audit compare comparison alternative "
    "alternatives".split()
)
LONG_QUESTION_WORDS = 40
_WORDS = re.compile(r"[A-Za-z][A-Za-z-]*")


def decide_route(question: str, mode: str, requested: str = "auto", cloud_configured: bool = True) -> RouteDecision:
    if mode == "local":
        why = "local mode: synthesis stays on this machine"
        if requested == "cloud":
            why = "local mode: a cloud route was requested and refused"
        return RouteDecision(target="local", reason=why, mode=mode)
    if requested in ("local", "cloud"):
        target = requested
        reason = f"requested {requested}"
    else:
        words = [w.lower() for w in _WORDS.findall(question)]
        hits = sorted(set(words) & CLOUD_KEYWORDS)
        if hits:
            target, reason = "cloud", f"design-level keyword: {', '.join(hits)}"
        elif len(words) >= LONG_QUESTION_WORDS:
            target, reason = "cloud", f"long question ({len(words)} words)"
        else:
            target = "cloud" if mode == "cloud" else "local"
            reason = f"{mode} mode default"
    if target == "cloud" and not cloud_configured:
        return RouteDecision(target="local", reason=reason + "; no cloud API key, so local", mode=mode)
    return RouteDecision(target=target, reason=reason, mode=mode)  # type: ignore[arg-type]


def route_for(question: str, settings) -> RouteDecision:
    """Route with a Settings object: `--synth cloud` is a request for the cloud route."""
    requested = "cloud" if settings.synth == "cloud" and settings.route == "auto" else settings.route
    return decide_route(question, settings.mode, requested, bool(settings.cloud_api_key.get_secret_value()))

"""Prompt-injection detector for code: looks only where an attacker can write prose.

Tree-sitter finds the comments, docstrings and string literals of a passage (Markdown and
plain text are prose throughout); identifiers and code never count, so ordinary code scores
near 0. Signals, each with a weight: instructions aimed at an AI or at "your response",
override phrases ("ignore previous instructions"), chat role markers, exfiltration links,
hidden unicode (zero-width, bidi, tag characters) and encoded payloads that decode to such text.
The score is the strongest signal plus 0.1 for each further distinct signal, capped at 1.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from functools import lru_cache

from stages.languages import SPECS, uses_tree_sitter

_PROSE_NODE_TYPES = frozenset(
    {"comment", "line_comment", "block_comment", "string", "string_literal", "template_string",
     "raw_string_literal", "interpreted_string_literal", "heredoc_body", "encapsed_string",
     "verbatim_string_literal", "string_content", "string_fragment", "text", "raw_text", "doc_comment"}
)

_F = re.IGNORECASE | re.MULTILINE


@dataclass(frozen=True)
class Signal:
    name: str
    weight: float
    pattern: re.Pattern[str]


SIGNALS: tuple[Signal, ...] = (
    Signal("override", 0.95, re.compile(
        r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|your|system)\b"
        r"[^.\n]{0,30}\b(instructions?|prompts?|rules|guidelines|directions|context|guardrails)\b", _F)),
    Signal("role_marker", 0.8, re.compile(
        r"(<\|im_start\|>|<\|im_end\|>|\[/?INST\]|<</?SYS>>|<\|system\|>|<\|assistant\|>|"
        r"^\s*(#+\s*)?(system|assistant)\s*(prompt)?\s*:\s+\S|</?(system|assistant)>)", _F)),
    Signal("addresses_ai", 0.75, re.compile(
        r"\b(dear|attention|hey|note to( the)?)\s+(ai|assistant|llm|chatbot|language model|model|copilot|agent)\b|"
        r"\b(you are|you're|act as|pretend to be|as)\s+(now\s+)?(an?\s+)?(ai|assistant|llm|chatgpt|claude|gpt|"
        r"large language model|language model|copilot|chatbot|coding agent)\b|"
        r"\b(ai|llm|assistant|model|agent)s?\s+(reading|processing|summari[sz]ing|analy[sz]ing)\s+this\b", _F)),
    Signal("steers_response", 0.75, re.compile(
        r"\b(in|to|into|from|throughout|within|at the (start|end|beginning) of)\s+(your|the)\s+"
        r"(response|answer|reply|output|summary|explanation|completion)s?\b|"
        r"\b(your|the)\s+(response|answer|reply|output)\s+(must|should|shall|will)\b|"
        r"\byour\s+(responses?|answers?|answer's|replies|reply|reply's)\b|"
        r"\b(modify|enhance|render|rewrite|rephrase|format|provide|jumble|scramble)\b[^.\n]{0,30}\byour\s+(message|output|text)\b|"
        r"\b(always|only|must|should)\s+(respond|reply|answer)\s+(with|in|using)\b|"
        r"\b(respond|reply|answer)\s+only\s+(with|in)\b|"
        r"\b(do not|don't|never)\s+(tell|mention|reveal|inform|show|warn)\s+(the\s+)?(user|human|developer)\b", _F)),
    Signal("steers_code", 0.65, re.compile(
        r"\b(incorporate|integrate|meld|embed|append|include|insert|add|enlist|utili[sz]e|execute|ensure)\b[^.\n]{0,60}"
        r"\b(in|into|to|within|as a part of)\s+(your|the user'?s)\s+(code|codebase|solution|implementation|program|script)\b|"
        r"\b(following|subsequent|below)\s+code\s+(section|snippet|block|excerpt)s?\b[\s\S]{0,240}?\b(your|the code you)\b|"
        r"\byour\s+(code|codebase|solution|implementation|algorithm|program)\b[\s\S]{0,240}?"
        r"\b(following|subsequent|below)\s+code\s+(section|snippet|block|excerpt)s?\b", _F)),
    Signal("chat_request", 0.55, re.compile(
        r"^\W*(can|could|would|will) you\s+(please\s+)?(show|tell|give|write|explain|help|generate|provide|list)\b|"
        r"^\W*(please\s+)?(tell me|show me|give me|explain to me)\b|"
        r"\bnew (instructions?|task|goal|objective)s?\s*(is|are|:)", _F)),
    Signal("exfiltration", 0.85, re.compile(
        r"!\[[^\]]*\]\(\s*https?://[^)\s]*[?&][^)\s]*=|"
        r"\b(send|post|upload|exfiltrate|forward|transmit|leak)\b[^.\n]{0,60}\b(secrets?|keys?|tokens?|passwords?|credentials|"
        r"env(ironment)?( variables)?|cookies|ssh|history|conversation|chat)\b[^.\n]{0,60}(https?://|\bto\b)|"
        r"\b(curl|wget)\b[^\n|]{0,120}\|\s*(ba)?sh\b", _F)),
)

_QUOTED = re.compile(r"`[^`\n]{1,120}`|\"[^\"\n]{1,60}\"|\u201c[^\u201d\n]{1,60}\u201d")
_HIDDEN = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|[\U000e0000-\U000e007f]")
_B64 = re.compile(r"[A-Za-z0-9+/]{60,}={0,2}")


@lru_cache(maxsize=64)
def _parser(language: str):
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def prose_regions(text: str, language: str) -> list[str]:
    """Comments, docstrings and string literals of code; the whole text for prose formats.

    In prose, short quoted phrases and inline code are mentions, not instructions (a security guide that
    quotes "ignore previous instructions" is not an attack), so they are left out."""
    if not uses_tree_sitter(language) or language in ("markdown",) or language not in SPECS:
        return [_QUOTED.sub(" ", text)]
    tree = _parser(language).parse(text.encode("utf-8", "replace"))
    out: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in _PROSE_NODE_TYPES:
            out.append(node.text.decode("utf-8", "replace") if node.text else "")
            continue
        stack.extend(node.children)
    return out


def _decoded_payloads(text: str) -> list[str]:
    found = []
    for blob in _B64.findall(text):
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=False)
        except (binascii.Error, ValueError):
            continue
        decoded = raw.decode("utf-8", "ignore")
        printable = sum(ch.isprintable() or ch.isspace() for ch in decoded)
        if decoded and printable / len(decoded) > 0.9:
            found.append(decoded)
    return found


def score_text(prose: str) -> tuple[float, list[str]]:
    """Score prose already extracted from a passage; returns (score, signal names)."""
    hits: dict[str, float] = {}
    for sig in SIGNALS:
        if sig.pattern.search(prose):
            hits[sig.name] = sig.weight
    if _HIDDEN.search(prose):
        hits["hidden_unicode"] = 0.7
    for decoded in _decoded_payloads(prose):
        inner, names = score_text(decoded)
        if inner >= 0.5:
            hits["encoded_payload"] = max(0.9, inner)
            break
    if not hits:
        return 0.0, []
    ordered = sorted(hits.values(), reverse=True)
    score = min(1.0, ordered[0] + 0.1 * (len(ordered) - 1))
    return round(score, 3), sorted(hits)


def injection_score(text: str, language: str) -> tuple[float, list[str]]:
    """Score one passage for prompt injection in [0, 1], with the names of the signals found."""
    regions = prose_regions(text, language)
    return score_text("\n".join(regions)) if regions else (0.0, [])

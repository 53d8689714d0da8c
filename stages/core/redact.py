"""Redact secrets before any text leaves the machine for a cloud endpoint."""

from __future__ import annotations

import re

_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    re.compile(r"\bsk-(proj-|ant-)?[A-Za-z0-9_-]{20,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"),
    re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]+)@"),  # credentials in URLs
)
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Za-z0-9_.-]*(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"auth|credential|client[_-]?secret)[A-Za-z0-9_.-]*)(\s*[:=]\s*|\s*=>\s*)(['\"]?)([^\s'\"#,;]{4,})(\4)"
)
PLACEHOLDER = "[REDACTED]"


def redact(text: str) -> tuple[str, int]:
    """Return the text with secrets replaced by [REDACTED], and how many were replaced."""
    count = 0
    for pattern in _PATTERNS:
        text, n = pattern.subn(PLACEHOLDER, text)
        count += n

    def _assign(m: re.Match[str]) -> str:
        nonlocal count
        value = m.group(5)
        if value == PLACEHOLDER or value.startswith(("os.", "getenv", "env", "${", "{{", "<", "None", "null")):
            return m.group(0)
        count += 1
        return f"{m.group(1)}{m.group(3)}{m.group(4)}{PLACEHOLDER}{m.group(6)}"

    text = _ASSIGNMENT.sub(_assign, text)
    return text, count

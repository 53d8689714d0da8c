"""Text for a terminal: control characters a quoted note or source line may hold, shown rather than sent raw."""

from __future__ import annotations

import unicodedata


def visible(text: str) -> str:
    """`text` with control characters other than tab and newline shown as symbols (ESC as U+241B, C1 as `\\x9b`):
    sent raw they would drive the terminal that prints a report."""
    if text.isprintable():
        return text
    return "".join(_picture(ch) if ch not in "\t\n" and unicodedata.category(ch) == "Cc" else ch for ch in text)


def _picture(ch: str) -> str:
    """A control character's Unicode control picture (C0, DEL) or `\\x9b` (C1, which has none)."""
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else f"\\x{code:02x}"

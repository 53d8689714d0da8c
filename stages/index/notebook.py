"""Jupyter notebooks as Python: the code cells' lines at the very lines of the `.ipynb` file that hold them.

Jupyter, VS Code and nbformat write a notebook as indented JSON with each line of a cell's source as one string on
a line of its own. The Python view keeps every line of the file: a line that holds a source line of a code cell
becomes that source line, a markdown cell's line becomes a comment (its words stay searchable), and every other line
(JSON structure, outputs, images) becomes empty. The parser reads the view as Python, and every `file:line` of an
entity is a real line of the notebook file, so a receipt, a stale check and an agent reading the raw file all agree.
IPython's own syntax (`%magic`, `!shell`, `?help` and `help?`, a `%%cell` magic's whole cell) becomes a comment. A
notebook not laid out so (one JSON line, a cell's source as one string over several lines) has no view: it is read
as text windows.
"""

from __future__ import annotations

import json
import re

from assay.stages.index.source_text import source_lines

# a cell's source list opening on a line of its own, as nbformat writes it (`"source": [` then one string a line)
_SOURCE_OPEN = re.compile(r'^\s*"source":\s*\[\s*$')
_SOURCE_EMPTY = re.compile(r'^\s*"source":\s*\[\s*\]\s*,?\s*$')
_SOURCE_STRING = re.compile(r'^\s*"source":\s*("(?:[^"\\]|\\.)*")\s*,?\s*$')
_IPYTHON_LINE = re.compile(r"^\s*(?:[%!?]|[\w.]+\?{1,2}\s*$)")  # magics, shell, `?x` and `x?` help


def python_view(source: bytes) -> bytes | None:
    """The notebook's Python view, line for line (see the module's note), or None when its layout does not allow
    one (not a notebook, not indented JSON, a source string over several lines)."""
    try:
        text = source.decode("utf-8")
        notebook = json.loads(text)
        cells = notebook["cells"]
        kinds = [str(cell.get("cell_type", "")) for cell in cells]
        sources = [_lines(cell.get("source", "")) for cell in cells]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None
    lines = text.split("\n")
    view = [""] * len(lines)
    cell = 0
    row = 0
    while row < len(lines):
        line = lines[row]
        if _SOURCE_EMPTY.match(line) or _SOURCE_STRING.match(line) or _SOURCE_OPEN.match(line):
            if cell >= len(cells):
                return None
            placed = _place(lines, row, sources[cell])
            if placed is None:
                return None
            kind = kinds[cell]
            if kind == "code" and sources[cell] and sources[cell][0].lstrip().startswith("%%"):
                kind = "markdown"  # a cell magic (`%%bash`, `%%sql`): the whole cell is another language
            for at, code in placed:
                view[at] = _as_python(code, kind)
            row = placed[-1][0] + 1 if placed else row + 1
            cell += 1
            continue
        row += 1
    if cell != len(cells):
        return None
    return "\n".join(view).encode("utf-8")


def _lines(source: object) -> list[str]:
    """A cell's source as nbformat allows it (a list of strings, or one string), one entry per line."""
    if isinstance(source, str):  # at line endings only: a form feed in a cell is no line of the file
        return source_lines(source)
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return source_lines("".join(source))
    raise TypeError("a cell's source is neither a string nor a list of strings")


def _place(lines: list[str], row: int, expected: list[str]) -> list[tuple[int, str]] | None:
    """Where each line of one cell's source sits in the file: (file row, the line), checked against the parsed JSON
    (a string that held several lines, or anything unexpected, gives None)."""
    line = lines[row]
    if _SOURCE_EMPTY.match(line):
        return [] if not expected else None
    single = _SOURCE_STRING.match(line)
    if single:
        value = json.loads(single.group(1))
        return [(row, value)] if source_lines(value) == expected and len(expected) <= 1 else None
    placed: list[tuple[int, str]] = []
    at = row + 1
    while at < len(lines) and not re.match(r"^\s*\]", lines[at]):
        try:
            value = json.loads(lines[at].strip().removesuffix(","))
        except ValueError:
            return None
        if not isinstance(value, str) or "\n" in value.rstrip("\n"):
            return None
        placed.append((at, value.rstrip("\n").rstrip("\r")))
        at += 1
    if [code for _, code in placed] != expected:
        return None
    return placed or [(row, "")]


def _as_python(code: str, kind: str) -> str:
    """A source line as the view holds it: code as it is, IPython syntax and markdown as comments, raw cells empty."""
    if kind == "code":
        return f"# {code.strip()}" if _IPYTHON_LINE.match(code) else code
    if kind == "markdown":
        return f"# {code}" if code.strip() else ""
    return ""

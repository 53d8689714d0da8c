"""Jupyter notebooks as Python: the code cells' lines at the very lines of the `.ipynb` file that hold them.

Jupyter, VS Code and nbformat write a notebook as indented JSON with each line of a cell's source as one string on
a line of its own. The Python view keeps every line of the file: a line that holds a source line of a code cell
becomes that source line, a markdown cell's line becomes a comment (its words stay searchable), and every other line
(JSON structure, outputs, images) becomes empty. The parser reads the view as Python, and every `file:line` of an
entity is a real line of the notebook file, so a receipt, a stale check and an agent reading the raw file all agree.
IPython's own syntax (`%magic`, `!shell`, `?help` and `help?`, a `%%cell` magic's whole cell) becomes a comment, and
so does a code cell in another language (a kernel whose language is R or Julia, a VS Code cell whose `languageId` is
sql): Assay has no definition reader for it there, so its words are searchable, as an `.R` file's are.
Only each cell's own `source` key is read: one nested in an output or in metadata is data.
A cell whose source is one string over several lines (nbformat allows it; Jupyter never writes it) sits on one line
of the file, so its code cannot keep its lines: that line of the view holds the code as words (a comment), and the
rest of the notebook is still Python. A notebook with no view at all (not JSON, no cells, written on one line) is read
as text windows. Either way `view_problem` says what was not read as Python, and the index report names the file.
"""

from __future__ import annotations

import functools
import json
import re

from assay.stages.index.source_text import source_lines

# a cell's source list opening on a line of its own, as nbformat writes it (`"source": [` then one string a line)
_SOURCE_OPEN = re.compile(r'^\s*"source":\s*\[\s*$')
_SOURCE_EMPTY = re.compile(r'^\s*"source":\s*\[\s*\]\s*,?\s*$')
_SOURCE_STRING = re.compile(r'^\s*"source":\s*("(?:[^"\\]|\\.)*")\s*,?\s*$')
_IPYTHON_LINE = re.compile(r"^\s*(?:[%!?]|[\w.]+\?{1,2}\s*$)")  # magics, shell, `?x` and `x?` help


def python_view(source: bytes) -> bytes | None:
    """The notebook's Python view, line for line (see the module's note), or None when it has none (not a notebook,
    not indented JSON): then it is read as text."""
    return read_notebook(source)[0]


def view_problem(source: bytes) -> str:
    """'' when the whole notebook is read as Python, else what was not (for the index report's `partial:` line)."""
    return read_notebook(source)[1]


_NO_VIEW = "read as text windows, not as Python"
_LAYOUT = f"not laid out as Jupyter writes it (each source line on a JSON line of its own): {_NO_VIEW}"


@functools.lru_cache(maxsize=1)  # the parser builds the view and the index run then asks why: one pass over the JSON
def read_notebook(source: bytes) -> tuple[bytes | None, str]:
    """(the Python view or None, '' or what was not read as Python)."""
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"not UTF-8: {_NO_VIEW}"
    try:
        notebook = json.loads(text)
    except ValueError as exc:
        where = f" (line {exc.lineno}: {exc.msg})" if isinstance(exc, json.JSONDecodeError) else ""
        return None, f"not valid JSON{where}: {_NO_VIEW}"
    try:
        cells = notebook["cells"]
        kinds = [str(cell.get("cell_type", "")) for cell in cells]
        sources = [_lines(cell.get("source", "")) for cell in cells]
    except (KeyError, TypeError, AttributeError):
        return None, f"not an nbformat 4 notebook (a list of cells, each source text): {_NO_VIEW}"
    rows = _cell_source_rows(text)
    if len(rows) != len(cells):
        return None, _LAYOUT
    kernel = _named_language(notebook, _KERNEL_LANGUAGE)
    lines = text.split("\n")
    view = [""] * len(lines)
    folded: list[int] = []  # file lines of code cells kept as words
    for cell, row in enumerate(rows):
        if row is None:  # no `source` key: nothing to place (`_lines` read it as empty)
            continue
        found = _place(lines, row, sources[cell])
        if found is None:
            return None, _LAYOUT
        placed, as_words = found
        kind = _view_kind(cells[cell], kinds[cell], sources[cell], kernel)
        for at, code in placed:
            view[at] = _as_words(code, kind) if as_words else _as_python(code, kind)
        if as_words and kind == "code":
            folded.append(row + 1)
    if not _is_python(kernel) and not view[0]:
        view[0] = _naming_doc(kernel)
    return "\n".join(view).encode("utf-8"), _folded_problem(folded)


# a JSON string (escapes included) or a bracket: enough to follow the nesting, stepping over whatever strings hold
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]')
_KEY_END = re.compile(r"\s*:")


def _cell_source_rows(text: str) -> list[int | None]:
    """The file row (0-based) of each cell's own `"source"` key, in cell order (None for a cell without one). Only
    keys of the objects in the top-level `cells` list count: a `source` in an output (`application/json` data) or
    in a cell's metadata sits deeper, and nbformat's sorted keys put both before the cell's own `source`."""
    rows: list[int | None] = []
    offsets: list[int] = []  # where each cell's `"source"` key starts, rising
    depth = 0
    key = ""  # the last key read at the top level: the list that opens after `"cells":` holds the cells
    in_cells = False
    for token in _TOKEN.finditer(text):
        mark = token.group()
        if mark in ("{", "["):
            depth += 1
            if depth == 2:
                in_cells = mark == "[" and key == '"cells"'
            elif depth == 3 and in_cells:
                rows.append(None)
        elif mark in ("}", "]"):
            depth -= 1
        elif depth in (1, 3) and _KEY_END.match(text, token.end()):
            if depth == 1:
                key = mark
            elif in_cells and mark == '"source"' and rows:
                rows[-1] = len(offsets)
                offsets.append(token.start())
    at_row = _rows_of(text, offsets)
    return [None if index is None else at_row[index] for index in rows]


def _rows_of(text: str, offsets: list[int]) -> list[int]:
    """The file row (0-based) of each character offset (rising)."""
    rows: list[int] = []
    row, last = 0, 0
    for offset in offsets:
        row += text.count("\n", last, offset)
        last = offset
        rows.append(row)
    return rows


# how kernels and editors name Python: kernelspec `language`, `language_info.name` (sparkmagic's is "pyspark"),
# a VS Code cell's `languageId`
_PYTHON_NAMES = frozenset({"python", "python2", "python3", "ipython", "ipython2", "ipython3", "py", "pyspark"})
# (metadata key, field) that name a notebook's language, then a code cell's own (VS Code, Polyglot Notebooks)
_KERNEL_LANGUAGE = (("kernelspec", "language"), ("language_info", "name"))
_CELL_LANGUAGE = (("vscode", "languageId"), ("polyglot_notebook", "kernelName"), ("dotnet_interactive", "language"))


def _named_language(holder: object, fields: tuple[tuple[str, str], ...]) -> str:
    """The first language that `holder`'s metadata names at one of `fields`, or ''."""
    meta = holder.get("metadata") if isinstance(holder, dict) else None
    for outer, field in fields:
        inner = meta.get(outer) if isinstance(meta, dict) else None
        value = inner.get(field) if isinstance(inner, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _is_python(language: str) -> bool:
    """Whether a kernel's or a cell's language is Python (one that names none is: Jupyter's default kernel)."""
    return not language or language.lower() in _PYTHON_NAMES


def _naming_doc(language: str) -> str:
    """The view's first line (the JSON's `{`) for a notebook in another language: a docstring that names it. Its
    cells are comments, and comments that open a file are taken for the file's doc (cut at the doc's length cap,
    their lines in no window); after a docstring they are windows, each cell's code searchable at its own lines."""
    return json.dumps(f"A notebook in {language} (its kernel's language): its code is indexed as text, not parsed.")


def _view_kind(cell: dict, kind: str, source: list[str], kernel: str) -> str:
    """How the view holds a cell: a code cell in another language than Python (an R or Julia kernel's, a VS Code
    SQL cell, a `%%bash` cell magic) as words, as markdown is: parsed as Python it was a "syntax error" that hid
    nothing wrong, and its code still has to be searchable. A notebook or cell that names no language is Python."""
    if kind != "code":
        return kind
    if source and source[0].lstrip().startswith("%%"):
        return "markdown"
    return "code" if _is_python(_named_language(cell, _CELL_LANGUAGE) or kernel) else "markdown"


def _folded_problem(rows: list[int]) -> str:
    """What the report says of code cells whose lines are not lines of the file ('' when there are none)."""
    if not rows:
        return ""
    at = ", ".join(map(str, rows[:5])) + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")
    return (f"{len(rows)} code cell(s) hold their source as one string over several lines (line {at}): kept as "
            "words, not parsed (their definitions are not in the index)")


def _lines(source: object) -> list[str]:
    """A cell's source as nbformat allows it (a list of strings, or one string), one entry per line."""
    if isinstance(source, str):  # at line endings only: a form feed in a cell is no line of the file
        return source_lines(source)
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return source_lines("".join(source))
    raise TypeError("a cell's source is neither a string nor a list of strings")


def _place(lines: list[str], row: int, expected: list[str]) -> tuple[list[tuple[int, str]], bool] | None:
    """Where one cell's source sits in the file: ((file row, the text there) for each of its JSON strings, whether
    a string holds several lines, so the cell's lines are not the file's), checked against the parsed JSON (anything
    unexpected gives None)."""
    line = lines[row]
    if _SOURCE_EMPTY.match(line):
        return ([], False) if not expected else None
    single = _SOURCE_STRING.match(line)
    if single:
        value = json.loads(single.group(1))
        return ([(row, value)], len(expected) > 1) if source_lines(value) == expected else None
    if not _SOURCE_OPEN.match(line):  # the list's strings share lines with each other or with other keys
        return None
    placed: list[tuple[int, str]] = []
    at = row + 1
    while at < len(lines) and not re.match(r"^\s*\]", lines[at]):
        try:
            value = json.loads(lines[at].strip().removesuffix(","))
        except ValueError:
            return None
        if not isinstance(value, str):
            return None
        placed.append((at, value))
        at += 1
    if not placed:
        return ([(row, "")], False) if not expected else None
    one_a_line = [(at, value.rstrip("\n").rstrip("\r")) for at, value in placed]
    if [code for _, code in one_a_line] == expected:
        return one_a_line, False
    if source_lines("".join(value for _, value in placed)) == expected:  # strings that hold several lines each
        return placed, True
    return None


def _as_python(code: str, kind: str) -> str:
    """A source line as the view holds it: code as it is, IPython syntax and markdown as comments, raw cells empty."""
    if kind == "code":
        return f"# {code.strip()}" if _IPYTHON_LINE.match(code) else code
    if kind == "markdown":
        return f"# {code}" if code.strip() else ""
    return ""


def _as_words(text: str, kind: str) -> str:
    """A source string of several lines on one line of the file: its lines as one comment (searchable words; as
    code on one line it would not parse), each line break shown as ⏎."""
    if kind not in ("code", "markdown"):
        return ""
    words = " ⏎ ".join(line.strip() for line in source_lines(text) if line.strip())
    return f"# {words}" if words else ""

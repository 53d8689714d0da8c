"""Locate stage: the file and line a query pastes, and the entity that spans that line.

A stack frame, a compiler message or a grep hit names a place (`File "/srv/app/pkg/mod.py", line 82`,
`src/lib.rs:12:5`, `at Foo.bar (Foo.java:123)`, `Program.cs(12,5)`); the code at that place is what the user
is looking at, whatever words surround it. Paths are matched by their longest suffix of whole segments, so a
frame from an installed copy (`site-packages/_pytest/_io/pprint.py`) finds the workspace's
`src/_pytest/_io/pprint.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from assay.stages.core.artifacts import Entity

MAX_LOCATIONS = 8  # a pasted traceback's frames; more are a log, not a question about one place
MAX_FILES_PER_PATH = 3  # a bare `utils.py:12` among more files of that name names none of them

# a path with an extension, then a line: Python's `File "x.py", line 12`; `x.go:12`, `x.rs:12:5` (gcc, rustc,
# tsc, Go, Node, Ruby, grep); MSVC and C#'s `x.cs(12,5)`
# A path starts where a run of path characters starts (the look-behind): tried at every offset of a pasted
# 30 KB base64 blob, the path's leading run took 16 s (quadratic) and held up the MCP server's every call.
_LOCATION = re.compile(
    r'File "(?P<a>[^"\n]+)", line (?P<a_line>\d+)(?:, in (?P<a_name>[\w<>]+))?'
    r'|(?:at (?P<b_name>[\w$.<>]+) ?\()?(?<![\w.~@+\-/\\])(?P<b>[\w.~@+\-/\\]*[\w\-]\.[A-Za-z][\w+]{0,5}):(?P<b_line>\d+)'
    r'|(?<![\w.~@+\-/\\])(?P<c>[\w.~@+\-/\\]*[\w\-]\.[A-Za-z][\w+]{0,5})\((?P<c_line>\d+)(?:,\d+)?\)'
)
# a file without an extension, then a line (`libexec/bats-core/bats-exec-test:291`, `Makefile:12`): a place only
# if an indexed file has that name, so it is read after the others and `resolve` decides
_BARE_LOCATION = re.compile(r"(?<![\w.~@+\-/\\:])(?P<d>/?(?:[\w.~@+\-]+/)*[A-Za-z_][\w\-]*):(?P<d_line>\d+)\b")


def locations(query: str) -> list[tuple[str, int, str]]:
    """(path, line, function name or '') for each place the query names, in the order it names them, each once
    (paths without an extension after the others).
    A frame's name (Python's `, in send`, a JVM or Node frame's `at Foo.send (`) tells apart definitions that
    share a line."""
    found: list[tuple[str, int, str]] = []
    for m in _LOCATION.finditer(query):
        for group in "abc":
            if m.group(group):
                name = (m.groupdict().get(f"{group}_name") or "").rsplit(".", 1)[-1]
                place = (m.group(group).replace("\\", "/"), int(m.group(f"{group}_line")), name)
                if place not in found:
                    found.append(place)
                break
    for m in _BARE_LOCATION.finditer(query):
        place = (m.group("d"), int(m.group("d_line")), "")
        if place not in found:
            found.append(place)
    return found[:MAX_LOCATIONS]


# a line named in words: "models.py line 9999", "api.py, at line 5", "line 40 of sessions.py", "line 40 in `api.py`"
_PATH = r"[\w.~@+\-/\\]*[\w\-]\.[A-Za-z][\w+]{0,5}"
_PROSE_LINE = re.compile(
    r"(?<![\w.~@+\-/\\])[`'\"]?(?P<e>" + _PATH + r")[`'\"]?,?\s+(?:at\s+|on\s+)?line\s+(?P<e_line>\d+)\b"
    r"|\blines?\s+(?P<f_line>\d+)\s+(?:of|in)\s+(?:the\s+)?(?:file\s+)?[`'\"]?(?<![\w.~@+\-/\\])(?P<f>" + _PATH + r")",
    re.I,
)


def stated_lines(query: str) -> list[tuple[str, int]]:
    """(path, line) for every line the query names in a workspace file: `src/x.py:500` and lines named in words.
    Not a traceback frame or an absolute path: those come from an installed copy or another checkout, whose lines
    may differ from the index's version without anything false said. Not read by retrieval (its places stay
    `locations`'); the premise check says when one is past the end."""
    frames = {m.group("a").replace("\\", "/") for m in _LOCATION.finditer(query) if m.group("a")}
    found = [(path, line) for path, line, _ in locations(query) if path not in frames and not _absolute(path)]
    for m in _PROSE_LINE.finditer(query):
        group = "e" if m.group("e") else "f"
        place = (m.group(group).replace("\\", "/"), int(m.group(f"{group}_line")))
        if place not in found and not _absolute(place[0]):
            found.append(place)
    return found[:MAX_LOCATIONS]


def _absolute(path: str) -> bool:
    """`/home/me/x.py`, `~/x.py`, `C:/x.py`: a path on someone's machine, not one relative to the workspace."""
    return path.startswith(("/", "~")) or bool(re.match(r"[A-Za-z]:/", path))


def resolve(path: str, files: Iterable[str]) -> list[str]:
    """The indexed files a pasted path names: those sharing its longest suffix of whole segments (none when more
    than a few tie, as a bare `utils.py` among many)."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    if not parts:
        return []
    named = [f for f in files if f == parts[-1] or f.endswith("/" + parts[-1])]
    for k in range(len(parts), 0, -1):
        suffix = "/".join(parts[-k:])
        matches = [f for f in named if f == suffix or f.endswith("/" + suffix)]
        if matches:
            return matches if len(matches) <= MAX_FILES_PER_PATH else []
    return []


def entity_at(entities: Iterable[Entity], line: int, name: str = "") -> Entity | None:
    """The innermost entity (or part of one) that spans the line, among those called `name` if any are; a file
    row only when nothing else does."""
    spanning = [e for e in entities if e.start_line <= line <= e.end_line]
    inner = [e for e in spanning if e.kind != "file"] or spanning
    inner = [e for e in inner if name and e.name == name] or inner
    return min(inner, key=lambda e: (e.end_line - e.start_line, e.start_line), default=None)

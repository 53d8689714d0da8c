"""Reading `git diff` output: which lines each file's hunks touch, and where the working tree's lines sat in HEAD.

Pure text functions, no git process: `git_history` runs git and hands the output here. Paths are read as git
prints them with `core.quotePath=false` and explicit `a/` `b/` prefixes (C-quoted when a name needs it).
"""

from __future__ import annotations

import re
from typing import NamedTuple

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_RAW = re.compile(r"^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])\d*\t(.*)$")
GITLINK_MODE = "160000"  # a submodule (or an embedded repository added as one): git records a commit, not a file

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote_path(text: str) -> str:
    """A path as git prints it in a diff header: C-quoted (`"d\\303\\257r/a\\"b.py"`, octal bytes of UTF-8) or plain."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return text
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            octal = body[i + 1:i + 4]
            if len(octal) == 3 and all(c in "01234567" for c in octal):
                out.append(int(octal, 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1]) & 0xFF))
            i += 2
            continue
        out += body[i].encode()
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _header_path(rest: str, prefix: str) -> str | None:
    """The path of a `--- a/x` / `+++ b/x` line's remainder; None for /dev/null (the file is new or deleted).
    git appends a tab after a name that holds a space; it quotes any name that ends in one."""
    rest = rest.removesuffix("\t")
    if rest == "/dev/null":
        return None
    return unquote_path(rest).removeprefix(prefix)


def diff_files(diff: str) -> tuple[dict[str, set[int]], set[str], set[str]]:
    """(new-side lines each surviving file's hunks touch, files the diff adds, files it deletes). A pure deletion
    marks the line after it. Header lines are read only before a file's first hunk: a removed line `-- x` shows
    as `--- x` inside a hunk."""
    touched: dict[str, set[int]] = {}
    added: set[str] = set()
    deleted: set[str] = set()
    current: str | None = None
    old: str | None = None
    in_header = False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            in_header, current, old = True, None, None
        elif in_header and line.startswith("--- "):
            old = _header_path(line[4:], "a/")
        elif in_header and line.startswith("+++ "):
            current = _header_path(line[4:], "b/")
            if current is None:
                if old is not None:
                    deleted.add(old)
            else:
                touched.setdefault(current, set())
                if old is None:
                    added.add(current)
        elif line.startswith("@@"):
            in_header = False
            m = _HUNK.match(line)
            if m and current is not None:
                start, count = int(m.group(3)), int(m.group(4) if m.group(4) is not None else 1)
                touched[current].update(_new_lines(start, count))
    return touched, added, deleted


def _new_lines(start: int, count: int) -> set[int]:
    """New-side lines one `-U0` hunk touches; a pure deletion (count 0) marks the line git puts it at."""
    return set(range(start, start + count)) if count else {max(start, 1)}


def hunk_lines(hunks: list[tuple[int, int, int, int]]) -> set[int]:
    """New-side lines a list of (old start, old count, new start, new count) hunks touches, as `diff_files` reads them."""
    return {line for _, _, start, count in hunks for line in _new_lines(start, count)}


def _binary_side(text: str, prefix: str) -> str | None | bool:
    """One side of a `Binary files X and Y differ` line: the path, None for /dev/null, False when it is no side."""
    if text == "/dev/null":
        return None
    path = unquote_path(text)
    return path.removeprefix(prefix) if path.startswith(prefix) else False


def binary_files(diff: str) -> list[tuple[str | None, str | None]]:
    """(old path, new path) of each file git diffs as binary (`Binary files a/x and b/x differ`: no `---`/`+++`
    header, no hunk), None for a side that is /dev/null. A UTF-16 file is one: its bytes hold NULs. Every line of
    a patch body starts with `+`, `-`, ` ` or `\\`, so this line is always git's own."""
    found: list[tuple[str | None, str | None]] = []
    for line in diff.splitlines():
        if not line.startswith("Binary files ") or not line.endswith(" differ"):
            continue
        body = line[len("Binary files "):-len(" differ")]
        parts = body.split(" and ")
        for cut in range(1, len(parts)):  # a name may hold " and ": take the first cut that reads as a/x and b/y
            old, new = _binary_side(" and ".join(parts[:cut]), "a/"), _binary_side(" and ".join(parts[cut:]), "b/")
            if old is not False and new is not False and (old, new) != (None, None):
                found.append((old, new))
                break
    return found


def line_hunks(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """`-U0` hunks (old start, old count, new start, new count, numbered as git numbers them) between two texts'
    lines: for files whose lines git does not count as editors do (UTF-16, lone CR), diffed after decoding."""
    from difflib import SequenceMatcher

    hunks = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":  # git gives an empty side the line before it as its start
            hunks.append((i1 + 1 if i2 > i1 else i1, i2 - i1, j1 + 1 if j2 > j1 else j1, j2 - j1))
    return hunks


class Gitlink(NamedTuple):
    """A submodule entry of a diff: its files live in another repository, so the diff's `path:1` is no location."""
    path: str  # the new side's path; the old side's when the submodule is gone
    base: str | None  # the commit the old side recorded; None when the old side was no submodule
    present: bool  # whether the new side is still a submodule
    old_path: str | None  # the old side's path when it was a submodule


def diff_gitlinks(diff: str) -> list[Gitlink]:
    """Submodule entries of a `--raw` diff (`-p --raw --no-abbrev`: the raw lines come before the patches).
    Only the raw lines carry modes; a dirty submodule's patch shows just `Subproject commit X-dirty`."""
    found: list[Gitlink] = []
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            break
        m = _RAW.match(line)
        if not m or GITLINK_MODE not in (m.group(1), m.group(2)):
            continue
        paths = [unquote_path(p) for p in m.group(6).split("\t")]
        was, now = m.group(1) == GITLINK_MODE, m.group(2) == GITLINK_MODE
        found.append(Gitlink(path=paths[-1] if now else paths[0], base=m.group(3) if was else None, present=now,
                             old_path=paths[0] if was else None))
    return found


class RawChange(NamedTuple):
    """One file entry of a `--raw` diff (a submodule's excluded): the only place a rename with no edit and a
    mode-only change show, since their patches have no `---`/`+++` header and no hunk."""
    status: str  # git's letter: M, A, D, R (renamed), C, T
    old_mode: str
    new_mode: str
    old_path: str
    path: str  # the new side's path (the old one for a deletion)


def diff_raw(diff: str) -> list[RawChange]:
    """The `--raw` lines before the patches of a `-p --raw` diff, submodule entries left out."""
    found: list[RawChange] = []
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            break
        m = _RAW.match(line)
        if not m or GITLINK_MODE in (m.group(1), m.group(2)):
            continue
        paths = [unquote_path(p) for p in m.group(6).split("\t")]
        found.append(RawChange(status=m.group(5), old_mode=m.group(1), new_mode=m.group(2), old_path=paths[0], path=paths[-1]))
    return found


def renames(raw: list[RawChange]) -> list[tuple[str, str]]:
    """(old path, new path) of every renamed file, with or without edits."""
    return [(r.old_path, r.path) for r in raw if r.status == "R"]


def mode_changes(raw: list[RawChange]) -> list[tuple[str, str, str]]:
    """(path, old mode, new mode) of files that exist on both sides with another mode (`chmod +x`)."""
    return [(r.path, r.old_mode, r.new_mode) for r in raw
            if r.old_mode != r.new_mode and "000000" not in (r.old_mode, r.new_mode)]


def diff_hunks(diff: str) -> list[tuple[int, int, int, int]]:
    """(old start, old count, new start, new count) of every hunk of a one-file `-U0` diff."""
    out = []
    for line in diff.splitlines():
        m = _HUNK.match(line)
        if m:
            out.append((int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1),
                        int(m.group(3)), int(m.group(4) if m.group(4) is not None else 1)))
    return out


def head_span(hunks: list[tuple[int, int, int, int]], start: int, end: int) -> tuple[int, int] | None:
    """HEAD's lines for the working tree's lines start..end, given `git diff -U0 HEAD -- file` hunks; None when
    none of them exist in HEAD (the definition is not committed yet).

    Unchanged lines map by the line shift of the hunks before them; a hunk wholly inside the span brings its old
    lines too (a rewritten body, a renamed `def` line); a definition that is all changed lines falls back to the
    old lines of the hunks it overlaps."""
    def new_range(ns: int, nc: int) -> range:
        return range(ns, ns + nc)

    old: list[int] = []
    for line in range(start, end + 1):
        if any(line in new_range(ns, nc) for _, _, ns, nc in hunks):
            continue
        shift = sum(nc - oc for _, oc, ns, nc in hunks if (ns + nc - 1 < line if nc else ns < line))
        old.append(line - shift)
    inside = [(os_, oc) for os_, oc, ns, nc in hunks if oc
              and (start <= ns and ns + nc - 1 <= end if nc else start <= ns < end)]
    if not old and not inside:
        inside = [(os_, oc) for os_, oc, ns, nc in hunks if oc and nc and ns <= end and ns + nc - 1 >= start]
    for os_, oc in inside:
        old += [os_, os_ + oc - 1]
    return (min(old), max(old)) if old else None

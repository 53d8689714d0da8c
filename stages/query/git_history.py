"""Git-aware questions: which entities a diff touches, and which commits shaped an entity.

Uses the git CLI (present wherever a repository is). `changed_symbols(since)` maps `git diff <since>` (commits
since REF plus the working tree) to the innermost indexed definitions whose lines the new side touches; a
hunk that only deletes lines touches the definition around the deletion point. `history(name)` runs
`git log -L<start>,<end>:<file>` over the entity's span for "why is this like this" questions.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from pydantic import BaseModel, Field

from assay.stages.core.artifacts import DEFINITION_KINDS, Entity
from assay.stages.index.edges import definition_spans

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
COMMIT_ID = re.compile(r"[0-9a-f]{40}")  # a full SHA-1 commit id


class NotAGitRepository(ValueError):
    pass


class TouchedEntity(BaseModel):
    entity: str
    kind: str
    file: str
    start_line: int
    end_line: int
    lines: list[int] = Field(default_factory=list, description="changed lines inside it (new side)")


class ChangedSymbols(BaseModel):
    since: str
    files: list[str] = []
    entities: list[TouchedEntity] = []
    outside: list[str] = Field(default_factory=list, description="changed lines in no definition: `file:line`")
    note: str = ""


class Commit(BaseModel):
    commit: str
    author: str
    date: str
    subject: str


class History(BaseModel):
    entity: str
    file: str
    start_line: int
    end_line: int
    commits: list[Commit] = []


def git(root: Path, *args: str, timeout: float = 30.0) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as exc:
        raise NotAGitRepository("git is not installed: changed_symbols and history need it") from exc
    except (OSError, subprocess.SubprocessError) as exc:  # a timeout, a workspace that vanished
        raise ValueError(f"git {' '.join(args[:2])}: {type(exc).__name__}") from exc
    if done.returncode != 0:
        msg = (done.stderr.strip().splitlines() or ["git failed"])[0]
        if "not a git repository" in done.stderr.lower():
            raise NotAGitRepository(f"{root} is not a git repository: changed_symbols and history need git")
        raise ValueError(f"git {' '.join(args[:2])}: {msg}")
    return done.stdout


def diff_lines(diff: str) -> dict[str, set[int]]:
    """New-side line numbers each file's hunks touch (a pure deletion marks the line after it)."""
    touched: dict[str, set[int]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
            current = None if path == "/dev/null" else path.removeprefix("b/")
            if current is not None:
                touched.setdefault(current, set())
        m = _HUNK.match(line)
        if m and current is not None:
            start, count = int(m.group(3)), int(m.group(4) if m.group(4) is not None else 1)
            touched[current].update(range(start, start + count) if count else {max(start, 1)})
    return touched


def map_to_entities(touched: dict[str, set[int]], by_file) -> tuple[list[TouchedEntity], list[str]]:
    """Innermost definitions around each changed line (a method, not its class as well)."""
    found: dict[tuple[str, str, str], TouchedEntity] = {}
    outside: list[str] = []
    for file, lines in sorted(touched.items()):
        spans = definition_spans(by_file(file))
        for line in sorted(lines):
            inside = [(end - start, kind, qual, start, end) for (kind, qual), (start, end, _) in spans.items() if start <= line <= end]
            if not inside:
                outside.append(f"{file}:{line}")
                continue
            _, kind, qual, start, end = min(inside)
            item = found.setdefault((file, kind, qual), TouchedEntity(entity=qual, kind=kind, file=file, start_line=start, end_line=end))
            item.lines.append(line)
    return sorted(found.values(), key=lambda t: (t.file, t.start_line)), outside


def changed_symbols(root: Path, since: str, by_file) -> ChangedSymbols:
    """Entities a diff touches: `git diff <since>` (commits after REF and uncommitted edits of tracked files)."""
    diff = git(root, "diff", "--unified=0", "--no-color", "--no-ext-diff", since, "--")
    touched = diff_lines(diff)
    entities, outside = map_to_entities(touched, by_file)
    return ChangedSymbols(since=since, files=sorted(touched), entities=entities, outside=outside[:100],
                          note="" if touched else f"nothing changed since {since}")


def history(root: Path, entity: Entity, limit: int = 20) -> History:
    """Commits that changed the lines of one entity, newest first."""
    out = git(root, "log", f"-L{entity.start_line},{entity.end_line}:{entity.file}", "--no-patch", f"-n{limit}",
              "--date=short", "--format=%H%x09%an%x09%ad%x09%s")
    commits = []
    for line in out.splitlines():
        parts = line.split("\t", 3)
        if len(parts) == 4 and COMMIT_ID.fullmatch(parts[0]):
            commits.append(Commit(commit=parts[0], author=parts[1], date=parts[2], subject=parts[3]))
    return History(entity=entity.qualname, file=entity.file, start_line=entity.start_line, end_line=entity.end_line, commits=commits)


def render_changed(result: ChangedSymbols) -> str:
    lines = [f"changed since {result.since}: {len(result.entities)} entit(ies) in {len(result.files)} file(s)"]
    lines += [f"  {t.entity} ({t.kind})  {t.file}:{t.start_line}-{t.end_line}  lines {', '.join(map(str, t.lines[:8]))}"
              + (" ..." if len(t.lines) > 8 else "") for t in result.entities]
    if result.outside:
        lines.append("  outside any definition: " + ", ".join(result.outside[:10]) + (" ..." if len(result.outside) > 10 else ""))
    if result.note:
        lines.append(result.note)
    return "\n".join(lines)


def render_history(result: History) -> str:
    head = f"history of {result.entity} ({result.file}:{result.start_line}-{result.end_line}): {len(result.commits)} commit(s)"
    return "\n".join([head] + [f"  {c.commit[:10]} {c.date} {c.author}: {c.subject}" for c in result.commits])


def entity_history(root: Path, name: str, limit: int = 20) -> History:
    """History of an indexed definition by name (`Class.method`, `name`), over its whole span."""
    from assay.stages.index.store import Catalog, require_manifest

    require_manifest(root)  # one line of error, and no `.assay/` left in a folder never indexed
    catalog = Catalog(root)
    try:
        matches = [e for e in catalog.by_name(name) if e.kind in DEFINITION_KINDS and e.part == 0]
        if not matches:
            raise ValueError(f"no definition named {name!r} in the index")
        first = matches[0]
        parts = catalog.parts_of(first.file, first.qualname, first.kind)
    finally:
        catalog.close()
    whole = first.model_copy(update={"start_line": min(p.start_line for p in parts), "end_line": max(p.end_line for p in parts)})
    return history(root, whole, limit)


def workspace_changed(root: Path, since: str) -> ChangedSymbols:
    """`changed_symbols` against an indexed workspace's catalog (one line of error when it is not indexed)."""
    from assay.stages.index.store import Catalog, require_manifest

    require_manifest(root)
    catalog = Catalog(root)
    try:
        return changed_symbols(root, since, catalog.by_file)
    finally:
        catalog.close()

"""Git-aware questions: which entities a diff touches, and which commits shaped an entity.

Uses the git CLI (present wherever a repository is). `changed_symbols(since)` maps `git diff <since>` (commits
since REF plus the working tree) to the innermost indexed definitions whose lines the new side touches; a
hunk that only deletes lines touches the definition around the deletion point. A deleted file's indexed
definitions are reported removed, an untracked (not ignored) indexed file's added. `history(name)` runs
`git log -L<start>,<end>:<file>` over the entity's span, mapped from the working tree (what the index holds)
to HEAD's lines first, for "why is this like this" questions.

Every user string reaches git only after `git rev-parse --verify` turned it into a commit id, so a value like
`--output=FILE` is refused instead of read as an option. Diffs are asked for with explicit prefixes, unquoted
paths and paths relative to the workspace, so user settings (diff.noprefix, diff.mnemonicPrefix) and a
workspace inside a larger repository do not change what is parsed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from pydantic import BaseModel, Field

from assay.stages.core.artifacts import Entity, FileRecord
from assay.stages.index.edges import definition_spans
from assay.stages.query.git_diff import diff_files, diff_hunks, head_span

COMMIT_ID = re.compile(r"[0-9a-f]{40}")  # a full SHA-1 commit id
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 repositories
_UNQUOTED = ("-c", "core.quotePath=false")  # non-ASCII paths printed as they are (git still quotes `"`, `\`, tabs)
_DIFF = ("--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--relative", "--unified=0")
_STALE_MARK = "STALE (file changed since indexing)"


class NotAGitRepository(ValueError):
    pass


class TouchedEntity(BaseModel):
    entity: str
    kind: str
    file: str
    start_line: int
    end_line: int
    lines: list[int] = Field(default_factory=list, description="changed lines inside it (new side)")
    change: str = Field("modified", description="modified | added (new or untracked file) | removed (file deleted)")
    stale: bool = Field(False, description="the file changed since indexing: span and lines may not match")


class ChangedSymbols(BaseModel):
    since: str
    files: list[str] = []
    entities: list[TouchedEntity] = []
    outside: list[str] = Field(default_factory=list, description="changed lines in no definition: `file:line`")
    deleted_files: list[str] = Field(default_factory=list, description="files the diff deletes")
    untracked_files: list[str] = Field(default_factory=list, description="indexed files git does not track yet")
    stale_files: list[str] = Field(default_factory=list, description="files changed since indexing (line mapping may be off)")
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
    note: str = ""


def _label(args: tuple[str, ...]) -> str:
    """`git diff --no-color` for an error message: the command, not the `-c` settings before it."""
    while len(args) >= 2 and args[0] == "-c":
        args = args[2:]
    return "git " + " ".join(args[:2])


def git(root: Path, *args: str, timeout: float = 30.0) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as exc:
        raise NotAGitRepository("git is not installed: listing changed entities and their history needs it") from exc
    except (OSError, subprocess.SubprocessError) as exc:  # a timeout, a workspace that vanished
        raise ValueError(f"{_label(args)}: {type(exc).__name__}") from exc
    if done.returncode != 0:
        msg = (done.stderr.strip().splitlines() or ["git failed"])[0]
        if "not a git repository" in done.stderr.lower():
            raise NotAGitRepository(f"{root} is not a git repository: listing changed entities and their history needs "
                                    "git (run `git init` and commit)")
        raise ValueError(f"{_label(args)}: {msg}")
    return done.stdout


def has_commits(root: Path) -> bool:
    """Whether HEAD names a commit (False in a repository nobody has committed to yet)."""
    try:
        return bool(_OBJECT_ID.fullmatch(git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip()))
    except NotAGitRepository:
        raise
    except ValueError:
        return False


def _shallow_hint(root: Path) -> str:
    try:
        shallow = git(root, "rev-parse", "--is-shallow-repository").strip() == "true"
    except ValueError:
        shallow = False
    return " (this clone is shallow: `git fetch --unshallow` fetches the older commits)" if shallow else ""


def verify_revision(root: Path, since: str) -> str:
    """The commit id `since` names; a one-line error for anything else (an option such as `--output=F`, a range,
    a typo), so no user string ever reaches git where it could be read as an option."""
    if not since.strip() or since.startswith("-"):
        raise ValueError(f"since {since!r} is not a commit, branch or tag")
    if not has_commits(root):
        raise ValueError(f"the repository at {root} has no commits yet: commit once, then ask what changed")
    try:
        sha = git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{since}^{{commit}}").strip()
    except NotAGitRepository:
        raise
    except ValueError:
        sha = ""
    if not _OBJECT_ID.fullmatch(sha):
        raise ValueError(f"since {since!r} is not a commit, branch or tag{_shallow_hint(root)}")
    return sha


def map_to_entities(touched: dict[str, set[int]], by_file, added: set[str] = frozenset(),
                    stale: set[str] = frozenset()) -> tuple[list[TouchedEntity], list[str]]:
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
            item = found.setdefault((file, kind, qual), TouchedEntity(
                entity=qual, kind=kind, file=file, start_line=start, end_line=end,
                change="added" if file in added else "modified", stale=file in stale))
            item.lines.append(line)
    return sorted(found.values(), key=lambda t: (t.file, t.start_line)), outside


def removed_entities(deleted: set[str], by_file) -> list[TouchedEntity]:
    """Every definition the index still holds for files the diff deletes."""
    return [TouchedEntity(entity=qual, kind=kind, file=file, start_line=start, end_line=end, change="removed")
            for file in sorted(deleted)
            for (kind, qual), (start, end, _) in sorted(definition_spans(by_file(file)).items(), key=lambda kv: kv[1][0])]


def untracked_lines(root: Path, by_file, indexed: dict[str, FileRecord] | None = None) -> dict[str, set[int]]:
    """Indexed files git does not track (and does not ignore), with every line their definitions cover: the
    diff never sees them, yet they are changes since any commit. `indexed` skips files the index never held."""
    out = git(root, "ls-files", "--others", "--exclude-standard", "-z")
    found: dict[str, set[int]] = {}
    for file in filter(None, out.split("\0")):
        if indexed is not None and file not in indexed:
            continue
        spans = definition_spans(by_file(file))
        if spans:
            found[file] = {line for start, end, _ in spans.values() for line in range(start, end + 1)}
    return found


def stale_files(root: Path, files: set[str], indexed: dict[str, FileRecord]) -> set[str]:
    """Indexed files whose bytes differ from what the index holds (size and time first, the hash to be sure):
    their spans no longer match the working tree's lines. A deleted file is not stale here: it is reported removed."""
    from assay.stages.index.discover import file_hash

    stale: set[str] = set()
    for file in files:
        record = indexed.get(file)
        if record is None:
            continue
        try:
            if record.mtime_ns and not record.stat_differs((root / file).stat()):
                continue  # size and time as indexed: unchanged, without reading it
            if file_hash((root / file).read_bytes()) != record.content_hash:
                stale.add(file)
        except OSError:
            continue
    return stale


def changed_symbols(root: Path, since: str, by_file, indexed: dict[str, FileRecord] | None = None) -> ChangedSymbols:
    """Entities a diff touches: `git diff <since>` (commits after REF and uncommitted edits of tracked files),
    deleted files' definitions as removed, untracked indexed files' as added. `indexed` (the manifest's
    files) lets files changed since indexing be marked stale."""
    commit = verify_revision(root, since)
    diff = git(root, *_UNQUOTED, "diff", *_DIFF, "--end-of-options", commit, "--")
    touched, added, deleted = diff_files(diff)
    untracked = untracked_lines(root, by_file, indexed)
    for file, lines in untracked.items():
        touched.setdefault(file, set()).update(lines)
    added |= set(untracked)
    stale = stale_files(root, set(touched), indexed or {})
    entities, outside = map_to_entities(touched, by_file, added, stale)
    entities += removed_entities(deleted, by_file)
    files = sorted(set(touched) | deleted)
    return ChangedSymbols(since=since, files=files, entities=entities, outside=outside[:100], deleted_files=sorted(deleted),
                          untracked_files=sorted(untracked), stale_files=sorted(stale),
                          note="" if files else f"nothing changed since {since}")


def _in_head(root: Path, file: str) -> bool:
    return bool(git(root, "ls-tree", "-z", "--name-only", "HEAD", "--", file).strip("\0"))


def _span_in_head(root: Path, entity: Entity) -> tuple[tuple[int, int] | None, str]:
    """HEAD's lines for the entity's (working-tree) span, and a note when they differ or do not exist."""
    if not has_commits(root):
        return None, "not committed yet: the repository has no commits"
    if not _in_head(root, entity.file):
        return None, f"not committed yet: {entity.file} is not in HEAD"
    if not (root / entity.file).exists():
        return (entity.start_line, entity.end_line), f"{entity.file} is deleted in the working tree; traced HEAD's lines as indexed"
    diff = git(root, *_UNQUOTED, "diff", *_DIFF, "HEAD", "--", entity.file)
    span = head_span(diff_hunks(diff), entity.start_line, entity.end_line)
    if span is None:
        return None, "not committed yet: HEAD holds none of its lines (uncommitted edits)"
    if span != (entity.start_line, entity.end_line):
        return span, f"traced HEAD's lines {span[0]}-{span[1]} (the file has uncommitted edits)"
    return span, ""


def history(root: Path, entity: Entity, limit: int = 20) -> History:
    """Commits that changed the lines of one entity, newest first. The entity's lines are the working tree's
    (what the index holds); `git log -L` reads HEAD's, so they are mapped through the uncommitted diff first."""
    result = History(entity=entity.qualname, file=entity.file, start_line=entity.start_line, end_line=entity.end_line)
    span, result.note = _span_in_head(root, entity)
    if span is None:
        return result
    out = git(root, "log", f"-L{span[0]},{span[1]}:{entity.file}", "--no-patch", f"-n{limit}",
              "--date=short", "--format=%H%x09%an%x09%ad%x09%s")
    for line in out.splitlines():
        parts = line.split("\t", 3)
        if len(parts) == 4 and _OBJECT_ID.fullmatch(parts[0]):
            result.commits.append(Commit(commit=parts[0], author=parts[1], date=parts[2], subject=parts[3]))
    if len(result.commits) < limit and (shallow := _shallow_hint(root)):
        result.note = "; ".join(filter(None, [result.note, "older commits may be missing" + shallow]))
    return result


def _where(t: TouchedEntity, untracked: set[str]) -> str:
    """What changed in one entity: its lines, or that its whole file is new or gone."""
    if t.change == "removed":
        return "removed (file deleted)"
    if t.change == "added":
        return "added (untracked file)" if t.file in untracked else "added (new file)"
    return f"lines {', '.join(map(str, t.lines[:8]))}" + (" ..." if len(t.lines) > 8 else "")


def render_changed(result: ChangedSymbols) -> str:
    untracked = set(result.untracked_files)
    lines = [f"changed since {result.since}: {len(result.entities)} entit(ies) in {len(result.files)} file(s)"]
    lines += [f"  {t.entity} ({t.kind})  {t.file}:{t.start_line}-{t.end_line}  {_where(t, untracked)}"
              + (f"  {_STALE_MARK}" if t.stale else "") for t in result.entities]
    if result.outside:
        lines.append("  outside any definition: " + ", ".join(result.outside[:10]) + (" ..." if len(result.outside) > 10 else ""))
    if result.deleted_files:
        lines.append("  deleted: " + ", ".join(result.deleted_files[:10]) + (" ..." if len(result.deleted_files) > 10 else ""))
    if result.stale_files:
        lines.append(f"warning: {len(result.stale_files)} file(s) changed since indexing, their entities and lines may be off "
                     f"(re-index to refresh): " + ", ".join(result.stale_files[:10]) + (" ..." if len(result.stale_files) > 10 else ""))
    if result.note:
        lines.append(result.note)
    return "\n".join(lines)


def render_history(result: History) -> str:
    head = f"history of {result.entity} ({result.file}:{result.start_line}-{result.end_line}): {len(result.commits)} commit(s)"
    return "\n".join([head] + [f"  {c.commit[:10]} {c.date} {c.author}: {c.subject}" for c in result.commits]
                     + ([result.note] if result.note else []))

"""Git-aware questions: which entities a diff touches, and which commits shaped an entity.

Uses the git CLI (present wherever a repository is). `changed_symbols(since)` maps `git diff <since>` (commits
since REF plus the working tree) to the innermost indexed definitions whose lines the new side touches; a
hunk that only deletes lines touches the definition around the deletion point. A deleted file's indexed
definitions are reported removed, an untracked (not ignored) indexed file's added. `history(name)` runs
`git log -L<start>,<end>:<file>` over the entity's span, mapped from the working tree (what the index holds)
to HEAD's lines first, for "why is this like this" questions. A submodule (or an embedded repository added as
one) is a single gitlink entry in its parent's diff, so both follow into its own repository: `changed` diffs it
from the commit the parent recorded, `history` reads its own log; what cannot be followed is said in one line.

Every user string reaches git only after `git rev-parse --verify` turned it into a commit id, so a value like
`--output=FILE` is refused instead of read as an option. Diffs are asked for with explicit prefixes, unquoted
paths and paths relative to the workspace, so user settings (diff.noprefix, diff.mnemonicPrefix) and a
workspace inside a larger repository do not change what is parsed.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from assay.stages.core.artifacts import Entity, FileRecord
from assay.stages.index.edges import definition_spans
from assay.stages.query.git_diff import Gitlink, diff_files, diff_gitlinks, diff_hunks, head_span

COMMIT_ID = re.compile(r"[0-9a-f]{40}")  # a full SHA-1 commit id
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 repositories
_UNQUOTED = ("-c", "core.quotePath=false")  # non-ASCII paths printed as they are (git still quotes `"`, `\`, tabs)
_DIFF = ("--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--relative", "--unified=0")
# Modes mark submodules (gitlinks); `none` overrides a user's `ignore` setting so a dirty submodule always shows.
_RAW = ("--raw", "--no-abbrev", "--ignore-submodules=none")
_MAX_DEPTH = 8  # submodules inside submodules followed at most this deep
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
    not_followed: list[str] = Field(default_factory=list, description="submodules and nested repositories whose changes "
                                    "are not listed: `path: why`")
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


def untracked_paths(repo: Path) -> tuple[list[str], list[str]]:
    """(files, nested repositories) git does not track (and does not ignore) in `repo`: git lists a nested
    repository it does not track as one `dir/` entry and never looks inside."""
    names = list(filter(None, git(repo, "ls-files", "--others", "--exclude-standard", "-z").split("\0")))
    return [n for n in names if not n.endswith("/")], [n.rstrip("/") for n in names if n.endswith("/")]


def untracked_lines(files: list[str], by_file, indexed: dict[str, FileRecord] | None = None) -> dict[str, set[int]]:
    """Untracked files (workspace paths) with every line their definitions cover: the diff never sees them, yet
    they are changes since any commit. `indexed` skips files the index never held."""
    found: dict[str, set[int]] = {}
    for file in files:
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
    found = _repo_changes(root, "", commit, by_file, indexed)
    stale = stale_files(root, set(found.touched), indexed or {})
    entities, outside = map_to_entities(found.touched, by_file, found.added, stale)
    entities += removed_entities(found.deleted, by_file)
    files = sorted(set(found.touched) | found.deleted)
    return ChangedSymbols(since=since, files=files, entities=entities, outside=outside[:100], deleted_files=sorted(found.deleted),
                          untracked_files=sorted(found.untracked), stale_files=sorted(stale), not_followed=found.not_followed,
                          note="" if files or found.not_followed else f"nothing changed since {since}")


@dataclass
class _Changes:
    """What one repository's diff says, in workspace paths; untracked files are in `touched` and `added` too."""
    touched: dict[str, set[int]] = field(default_factory=dict)
    added: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    untracked: set[str] = field(default_factory=set)
    not_followed: list[str] = field(default_factory=list)

    def merge(self, other: "_Changes") -> None:
        self.touched.update(other.touched)
        self.added |= other.added
        self.deleted |= other.deleted
        self.untracked |= other.untracked
        self.not_followed += other.not_followed


def _repo_changes(repo: Path, prefix: str, commit: str, by_file, indexed: dict[str, FileRecord] | None,
                  depth: int = 0) -> _Changes:
    """Changes of the repository at `repo` (workspace paths start with `prefix`) since `commit`, tracked and
    untracked. A submodule is one gitlink entry in its parent's diff (`libs/sub`, line 1), so it is followed into
    its own repository instead of being reported as a location."""
    diff = git(repo, *_UNQUOTED, "diff", *_DIFF, *_RAW, "--end-of-options", commit, "--")
    touched, added, deleted = diff_files(diff)
    links = diff_gitlinks(diff)
    for link in links:  # drop only the submodule side: a file replaced by a submodule is still a deleted file
        if link.present:
            touched.pop(link.path, None)
            added.discard(link.path)
        if link.old_path is not None:
            deleted.discard(link.old_path)
    found = _Changes(touched={prefix + f: lines for f, lines in touched.items()}, added={prefix + f for f in added},
                     deleted={prefix + f for f in deleted})
    files, nested = untracked_paths(repo)
    untracked = untracked_lines([prefix + f for f in files], by_file, indexed)
    for file, lines in untracked.items():
        found.touched.setdefault(file, set()).update(lines)
    found.added |= set(untracked)
    found.untracked = set(untracked)
    found.not_followed += [f"{prefix + n}: a nested git repository that its parent repository does not track"
                           for n in nested if _holds_indexed(prefix + n, indexed)]
    for link in links:
        found.merge(_submodule_changes(repo, prefix, link, by_file, indexed, depth))
    return found


def _holds_indexed(folder: str, indexed: dict[str, FileRecord] | None) -> bool:
    return indexed is None or any(f.startswith(folder + "/") for f in indexed)


def _submodule_changes(repo: Path, prefix: str, link: Gitlink, by_file, indexed: dict[str, FileRecord] | None,
                       depth: int) -> _Changes:
    """A submodule's own changes since the commit its parent recorded at `since` (all its files when it is new
    since then), or one `not_followed` line saying why they cannot be listed."""
    shown = prefix + link.path
    if not link.present:
        return _Changes(not_followed=[f"{prefix + (link.old_path or link.path)}: a submodule the diff removes"])
    sub = repo / link.path
    if not (sub / ".git").exists():  # without it, git would answer for the parent repository
        return _Changes(not_followed=[f"{shown}: a submodule that is not checked out (`git submodule update --init`)"])
    if depth >= _MAX_DEPTH:
        return _Changes(not_followed=[f"{shown}: a submodule nested more than {_MAX_DEPTH} deep"])
    try:
        base = link.base or git(sub, "hash-object", "-t", "tree", "/dev/null").strip()  # the empty tree: all added
        return _repo_changes(sub, shown + "/", base, by_file, indexed, depth + 1)
    except ValueError as exc:  # e.g. the recorded commit was never fetched into the submodule
        return _Changes(not_followed=[f"{shown}: a submodule whose changes git could not list ({exc})"])


def _in_head(root: Path, file: str) -> bool:
    return bool(git(root, "ls-tree", "-z", "--name-only", "HEAD", "--", file).strip("\0"))


def owning_repository(root: Path, file: str) -> tuple[Path, str]:
    """The repository whose history holds `file` (a workspace path) and the file's path inside it: the innermost
    folder below the workspace with its own `.git` (a submodule, a nested clone), else the workspace's."""
    parts = file.split("/")
    for depth in range(len(parts) - 1, 0, -1):
        folder = root.joinpath(*parts[:depth])
        if (folder / ".git").exists():
            return folder, "/".join(parts[depth:])
    return root, file


def _span_in_head(repo: Path, entity: Entity, path: str) -> tuple[tuple[int, int] | None, str]:
    """HEAD's lines for the entity's (working-tree) span in `repo`, where its file is `path`, and a note when they
    differ or do not exist."""
    if not has_commits(repo):
        return None, "not committed yet: the repository has no commits"
    if not _in_head(repo, path):
        return None, f"not committed yet: {entity.file} is not in HEAD"
    if not (repo / path).exists():
        return (entity.start_line, entity.end_line), f"{entity.file} is deleted in the working tree; traced HEAD's lines as indexed"
    diff = git(repo, *_UNQUOTED, "diff", *_DIFF, "HEAD", "--", path)
    span = head_span(diff_hunks(diff), entity.start_line, entity.end_line)
    if span is None:
        return None, "not committed yet: HEAD holds none of its lines (uncommitted edits)"
    if span != (entity.start_line, entity.end_line):
        return span, f"traced HEAD's lines {span[0]}-{span[1]} (the file has uncommitted edits)"
    return span, ""


def history(root: Path, entity: Entity, limit: int = 20) -> History:
    """Commits that changed the lines of one entity, newest first, from the repository that holds its file (a
    submodule's own). The entity's lines are the working tree's (what the index holds); `git log -L` reads HEAD's,
    so they are mapped through the uncommitted diff first."""
    result = History(entity=entity.qualname, file=entity.file, start_line=entity.start_line, end_line=entity.end_line)
    repo, path = owning_repository(root, entity.file)
    span, note = _span_in_head(repo, entity, path)
    nested = repo.relative_to(root).as_posix() if repo != root else ""
    result.note = "; ".join(filter(None, [nested and f"{entity.file} is in {nested}, a submodule or nested repository "
                                                     "with its own history: these are its commits", note]))
    if span is None:
        return result
    out = git(repo, "log", f"-L{span[0]},{span[1]}:{path}", "--no-patch", f"-n{limit}",
              "--date=short", "--format=%H%x09%an%x09%ad%x09%s")
    for line in out.splitlines():
        parts = line.split("\t", 3)
        if len(parts) == 4 and _OBJECT_ID.fullmatch(parts[0]):
            result.commits.append(Commit(commit=parts[0], author=parts[1], date=parts[2], subject=parts[3]))
    if len(result.commits) < limit and (shallow := _shallow_hint(repo)):
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
    lines += [f"  not listed: {item}" for item in result.not_followed[:10]]
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

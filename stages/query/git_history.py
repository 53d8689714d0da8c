"""Git-aware questions: which entities a diff touches, and which commits shaped an entity.

Uses the git CLI (present wherever a repository is). `changed_symbols(since)` maps `git diff <since>` (commits
since REF plus the working tree) to the innermost indexed definitions whose lines the new side touches; a
hunk that only deletes lines touches the definition around the deletion point. A deleted file's definitions
are reported removed (from the index, else parsed from the `since` side in git, as a re-index drops them), an
untracked (not ignored) indexed file's added. Renames and mode changes are listed as files: a rename's edits
are entities under the new path, while a pure rename lists no entity (its definitions did not change).
`history(name)` runs `git log -L<start>,<end>:<file>` over the entity's span, mapped from the working tree (what
the index holds) to HEAD's lines first (through an uncommitted rename to the old path), for "why is this like
this" questions. A submodule (or an embedded repository added as
one) is a single gitlink entry in its parent's diff, so both follow into its own repository: `changed` diffs it
from the commit the parent recorded, `history` reads its own log; what cannot be followed is said in one line.
Git counts only "\\n" as a line break and diffs UTF-16 as binary, so for those files (lone-CR, UTF-16) both sides are
diffed after decoding as the index decodes them, and `history` maps the entity's lines to git's by byte offsets.

Every user string reaches git only after `git rev-parse --verify` turned it into a commit id, so a value like
`--output=FILE` is refused instead of read as an option. Diffs are asked for with explicit prefixes, unquoted
paths and paths relative to the workspace, so user settings (diff.noprefix, diff.mnemonicPrefix) and a
workspace inside a larger repository do not change what is parsed.

A repository may be untrusted (an archive someone handed over, with its `.git/`): every git command is built by
`git_command`, which overrides each setting of the repository's own config that would make a reading command run a
program (fsmonitor, filter drivers, hooks, diff drivers, gpg, a submodule's own `git`, a partial clone's fetch).
Filter drivers from the user's own global or system config (Git LFS's) still run; a file under one the repository
defines is compared unfiltered, and `changed` says so in its note. git never reads Assay's stdin.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from assay.stages.core.artifacts import Entity, FileRecord
from assay.stages.core.fs_names import on_disk
from assay.stages.core.safe_git import NO_PROGRAMS, git_environment
from assay.stages.core.visible import visible
from assay.stages.index.edges import definition_spans
from assay.stages.query.git_diff import (GITLINK_MODE, Gitlink, binary_files, diff_files, diff_gitlinks, diff_hunks,
                                         diff_raw, head_span, hunk_lines, line_hunks, mode_changes, renames)

COMMIT_ID = re.compile(r"[0-9a-f]{40}")  # a full SHA-1 commit id
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 repositories
_UNQUOTED = ("-c", "core.quotePath=false")  # non-ASCII paths printed as they are (git still quotes `"`, `\`, tabs)
_DIFF = ("--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--relative", "--unified=0")
# Modes mark submodules (gitlinks). `git_command` makes every diff `--ignore-submodules=dirty` (git would run `git
# status` inside each submodule, under that submodule's own config); `_repo_changes` looks inside them itself.
_RAW = ("--raw", "--no-abbrev")
_MAX_DEPTH = 8  # submodules inside submodules followed at most this deep
_STALE_MARK = "STALE (file changed since indexing)"


class NotAGitRepository(ValueError):
    pass


class GitError(ValueError):
    """git ran and failed (or could not run): its first line of error, for a caller to reword as advice."""


class TouchedEntity(BaseModel):
    entity: str
    kind: str
    file: str
    start_line: int
    end_line: int
    lines: list[int] = Field(default_factory=list, description="changed lines inside it (new side)")
    change: str = Field("modified", description="modified | added (new or untracked file) | removed (file deleted; its "
                        "lines are the deleted side's)")
    stale: bool = Field(False, description="the file changed since indexing: its span is read from the file as it is now, "
                        "while search and ask still hold the indexed version")


class RenamedFile(BaseModel):
    old: str
    new: str


class ModeChange(BaseModel):
    file: str
    old_mode: str
    new_mode: str


class ChangedSymbols(BaseModel):
    since: str
    files: list[str] = []
    entities: list[TouchedEntity] = []
    outside: list[str] = Field(default_factory=list, description="changed lines in no definition: `file:line`")
    deleted_files: list[str] = Field(default_factory=list, description="files the diff deletes")
    untracked_files: list[str] = Field(default_factory=list, description="indexed files git does not track yet")
    stale_files: list[str] = Field(default_factory=list, description="files changed since indexing (read as they are now)")
    not_followed: list[str] = Field(default_factory=list, description="submodules and nested repositories whose changes "
                                    "are not listed: `path: why`")
    renamed_files: list[RenamedFile] = Field(default_factory=list, description="files the diff renames (a rename's "
                                             "edits, if any, are among the entities under the new path)")
    mode_changed: list[ModeChange] = Field(default_factory=list, description="files whose mode changed (`chmod +x`)")
    conflicted_files: list[str] = Field(default_factory=list, description="files with an unresolved merge conflict: "
                                        "definitions around the conflict markers may be cut short")
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


# Flags a subcommand always gets: no diff driver (`diff.external`, `diff.<driver>.command`/`textconv`), and no `git
# status` inside submodules (`dirty`: their moved commits still show; their own files are read by `_repo_changes`).
_COMMAND_FLAGS = {"diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"),
                  "log": ("--no-ext-diff", "--no-textconv")}
# Subcommands, as Assay runs them, that read no working-tree file's content, so no filter driver applies (`cat-file`
# without `--filters`): they skip the extra `git config` run that finds the filters to switch off.
_NO_FILTERS = frozenset({"rev-parse", "cat-file", "ls-tree", "ls-files", "log", "config", "check-attr"})
_FILTER_OFF = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))  # empty: git runs no program;
# `required` false: a filter that runs nothing is no error (git would stop at "clean filter 'x' failed")


def _subcommand(args: tuple[str, ...]) -> int:
    """Index of the subcommand in `args` (after any `-c key=value` pairs); len(args) when there is none."""
    i = 0
    while i + 1 < len(args) and args[i] == "-c":
        i += 2
    return i


# Config scopes that are the user's own: their system and global files (where `git lfs install` puts its filter, and
# whatever those include) and their own `-c`/GIT_CONFIG_COUNT. Every other scope (local, worktree, files they include,
# any scope a later git adds) comes with the repository.
_USER_SCOPES = frozenset({"system", "global", "command"})


def repository_filters(root: Path) -> set[str]:
    """Names of the filter drivers the repository's own config defines, wholly or in part (`.gitattributes` picks
    one by name, and git runs its clean command on each working-tree file it reads); one defined only in the user's
    global or system config is theirs, and is kept. `git config` only reads config files."""
    done = _list_filters(root, "--show-scope")
    if done.returncode == 129:  # git before 2.26 has no --show-scope: every filter is switched off, the user's too
        return {key[len("filter."):].rpartition(".")[0] for key in _list_filters(root).stdout.split("\0")
                if key.startswith("filter.")}
    fields = done.stdout.split("\0")  # scope, key, scope, key, ...
    return {key[len("filter."):].rpartition(".")[0] for scope, key in zip(fields[::2], fields[1::2])
            if key.startswith("filter.") and scope not in _USER_SCOPES}


def _list_filters(root: Path, *flags: str) -> subprocess.CompletedProcess:
    """`git config --get-regexp ^filter.` (names only); exit 1 is "none"; a config git cannot read is git's error."""
    env = git_environment(NO_PROGRAMS)
    env.pop("GIT_CONFIG", None)  # `git config` would read only that file, and miss the repository's
    try:
        done = subprocess.run(["git", "--no-pager", "-C", str(root), "config", "-z", *flags, "--name-only",
                               "--get-regexp", r"^filter\."], capture_output=True, timeout=30, env=env,
                              stdin=subprocess.DEVNULL, encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError as exc:
        raise NotAGitRepository("git is not installed: listing changed entities and their history needs it") from exc
    except (OSError, subprocess.SubprocessError) as exc:  # unknown filters could run: the command must not
        raise GitError(f"git config: {type(exc).__name__}") from exc
    if done.returncode not in (0, 1, 129):
        raise GitError("git config: " + (done.stderr.strip().splitlines() or ["git failed"])[0])
    return done


def _filters_off(root: Path) -> list[tuple[str, str]]:
    """Settings that switch off every filter driver the repository's own config defines (a same-named one of the
    user's too: the repository's clean command would win over theirs)."""
    return [(f"filter.{name}.{key}", value) for name in sorted(repository_filters(root)) for key, value in _FILTER_OFF]


def git_command(root: Path, args: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """argv and environment for `git -C root ARGS` that run no program the repository's config names: Assay reads
    repositories it did not make (an unpacked archive with its `.git/`), and reading must never execute them."""
    at = _subcommand(args)
    command = args[at] if at < len(args) else ""
    settings = [*NO_PROGRAMS, *([] if command in _NO_FILTERS else _filters_off(root))]
    argv = [*args[:at + 1], *_COMMAND_FLAGS.get(command, ()), *args[at + 1:]]
    return ["git", "--no-pager", "-C", str(root), *argv], git_environment(settings)


def _run(root: Path, args: tuple[str, ...], timeout: float = 30.0) -> subprocess.CompletedProcess:
    """`git -C root ARGS` as `git_command` builds it, its output decoded; raises only when git could not run. Its
    stdin is empty: a repository's config (`include.path = /dev/stdin`) must not make git read Assay's own."""
    argv, env = git_command(root, args)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise NotAGitRepository("git is not installed: listing changed entities and their history needs it") from exc
    except (OSError, subprocess.SubprocessError) as exc:  # a timeout, a workspace that vanished
        raise GitError(f"{_label(args)}: {type(exc).__name__}") from exc
    # Decoded here, not in text mode: that turns each CR into a line break (a subject or name holding one was cut).
    # git writes UTF-8 whatever the locale.
    done.stdout, done.stderr = (out.decode("utf-8", "surrogateescape") for out in (done.stdout, done.stderr))
    return done


def git(root: Path, *args: str, timeout: float = 30.0) -> str:
    done = _run(root, args, timeout)
    if done.returncode != 0:
        raise _failure(root, args, done.stderr)
    return done.stdout


def _failure(root: Path, args: tuple[str, ...], stderr: str) -> ValueError:
    """git's refusal as one line: advice for the refusals a user can mend, else git's own first line."""
    msg = (stderr.strip().splitlines() or ["git failed"])[0]
    if "not a git repository" in stderr.lower():
        return NotAGitRepository(f"{root} is not a git repository: listing changed entities and their history needs "
                                 "git (run `git init` and commit)")
    if "dubious ownership" in stderr.lower():  # another user's checkout: git refuses it, whatever it holds
        return NotAGitRepository(f"{_label(args)}: git refuses to read {root}: detected dubious ownership (the "
                                 f"repository belongs to another user); run git config --global --add "
                                 f"safe.directory {root}")
    if "cannot use bare repository" in stderr.lower():  # safe.bareRepository=explicit refused it
        return _bare_refusal(root, msg)
    if "from promisor remote" in stderr.lower():  # GIT_ALLOW_PROTOCOL stopped a partial clone's lazy fetch
        return GitError(f"{_label(args)}: this partial clone has not fetched objects git needs, and Assay never "
                        "fetches (a repository's config could run commands); fetch them with git yourself (a "
                        "`git log -p` over the commits in question does), then retry")
    return GitError(f"{_label(args)}: {msg}")


_BARE = re.compile(r"cannot use bare repository '(.*)' \(safe\.bareRepository")


def _bare_refusal(root: Path, line: str) -> NotAGitRepository:
    """Bare-repository files (HEAD, objects/, refs/, config) where git looked for a repository: in a plain folder (an
    unpacked archive), or tracked inside a clone, where git stops at them before it reaches the clone's `.git`."""
    found = _BARE.search(line)
    bare = Path(found.group(1)) if found else root
    clone = next((folder for folder in bare.parents if (folder / ".git").exists()), None)
    why = "Assay does not read a bare repository it was not pointed to, since its config could run commands"
    if clone is None:
        return NotAGitRepository(f"{root} is not a git checkout: git found the files of a bare repository (HEAD, "
                                 f"objects/, refs/, config) in {bare}, and {why}; run this in a clone that has a .git "
                                 "folder")
    return NotAGitRepository(f"{bare} holds the files of a bare repository (HEAD, objects/, refs/, config), and git "
                             f"stops at them before it reaches the clone around them ({clone}); {why}: run this from "
                             f"the clone's root, {clone}")


def has_commits(root: Path) -> bool:
    """Whether HEAD names a commit: False in a repository nobody has committed to yet, git's error when it fails."""
    args = ("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    done = _run(root, args)
    if done.returncode == 0 and _OBJECT_ID.fullmatch(done.stdout.strip()):
        return True
    if done.returncode == 1 and not done.stderr.strip():  # --quiet: HEAD names no commit, and git says nothing else
        return False
    raise _failure(root, args, done.stderr)


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


def as_it_is_now(root: Path, stale: set[str], indexed: dict[str, FileRecord], by_file):
    """`by_file`, but a file changed since indexing is parsed as it is now: the diff's lines are today's, and the
    index's spans for that file are not (a line added above a function moved it, and the change was put in the
    wrong definition or outside any). Nothing is written; the index stays as it was, and the entity stays STALE."""
    if not stale:
        return by_file
    from assay.stages.index.parse import parse_source

    current: dict[str, list[Entity]] = {}
    for file in stale:
        try:
            current[file] = parse_source(on_disk(root, file).read_bytes(), file, indexed[file].language, "").entities
        except (OSError, KeyError):
            continue  # unreadable now, or never indexed: the index's spans are all there is
    return lambda file: current[file] if file in current else by_file(file)


def removed_entities(deleted: set[str], by_file, old_side=None) -> list[TouchedEntity]:
    """Every definition of the files the diff deletes: what the index still holds, else (`old_side`) the deleted
    side read from git, since a re-index (a watcher's within seconds) drops a deleted file's definitions."""
    found: list[TouchedEntity] = []
    for file in sorted(deleted):
        spans = definition_spans(by_file(file))
        if not spans and old_side is not None:
            spans = definition_spans(old_side(file))
        found += [TouchedEntity(entity=qual, kind=kind, file=file, start_line=start, end_line=end, change="removed")
                  for (kind, qual), (start, end, _) in sorted(spans.items(), key=lambda kv: kv[1][0])]
    return found


_OLD_BLOB_MAX = 1_000_000  # the index's default size limit: a larger deleted file was never indexed either


def _blob(repo: Path, commit: str, path: str) -> bytes | None:
    """The bytes of `path` (relative to `repo`) at `commit`, or None when git cannot give them."""
    argv, env = git_command(repo, ("cat-file", "blob", f"{commit}:./{path}"))
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


_LONE_CR = re.compile(rb"\r(?!\n)")


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _utf16(data: bytes) -> bool:
    from assay.stages.index.source_text import has_utf16_bom

    return has_utf16_bom(data[:8192])


def git_miscounts_lines(data: bytes) -> bool:
    """Whether git numbers the file's lines otherwise than the index (and editors) do: git counts `\\n` bytes only,
    so a lone-CR (old Mac) file is one line to it, and a UTF-16 file is binary (no hunks at all)."""
    return _utf16(data) or _LONE_CR.search(data) is not None


def editor_lines(data: bytes, path: str) -> list[str]:
    """A file's lines decoded and split as the index reads them: what its entities' line numbers count."""
    from assay.stages.index.languages import language_for
    from assay.stages.index.source_text import decoded_lines

    return decoded_lines(data, language_for(path.rsplit("/", 1)[-1]) or "")


def _own_lines(repo: Path, commit: str, old_path: str | None, now: bytes, path: str) -> set[int]:
    """New-side lines of `path` changed since `commit`, diffed after decoding both sides (`old_path` None: new file).
    When the old side cannot be read, every line: its definitions are listed rather than silently missed."""
    new = editor_lines(now, path)
    old = b"" if old_path is None else _blob(repo, commit, old_path)
    if old is None:
        return set(range(1, len(new) + 1)) or {1}
    return hunk_lines(line_hunks(editor_lines(old, old_path or path), new))


def _read_as_text(data: bytes) -> bool:
    """Whether the index reads these bytes as text (what git calls binary may be UTF-16, or marked so)."""
    from assay.stages.index.discover import is_binary

    return _utf16(data) or not is_binary(data[:8192])


def _recount_lines(repo: Path, commit: str, diff: str, touched: dict[str, set[int]], added: set[str],
                   deleted: set[str]) -> None:
    """Fix `diff_files`' reading of files git does not number as editors do, in place: a file git diffs as binary
    is listed (one the index reads as text, with its changed lines diffed after decoding: UTF-16, or text marked
    `-diff`/`binary` in `.gitattributes` as notebooks often are; another, as a file with no line), a lone-CR file's
    lines are diffed again (git's hunk `1` is the whole file, so it named the first definition)."""
    old_name = {new: old for old, new in renames(diff_raw(diff))}
    binary: set[str] = set()
    for old, new in binary_files(diff):
        if new is None:
            deleted.add(old)
            continue
        if old is None:
            added.add(new)
        binary.add(new)
        touched[new] = set()
        old_name[new] = old
    for path in touched:
        now = _read(repo / path)
        if now is None or not (_read_as_text(now) if path in binary else _LONE_CR.search(now)):
            continue
        touched[path] = _own_lines(repo, commit, None if path in added else old_name.get(path, path), now, path)


def deleted_side(root: Path, where: dict[str, tuple[Path, str, str]]):
    """Definitions of a deleted workspace file as the `since` side of its diff held them, parsed from git; `where`
    maps the file to (its repository, the commit the diff starts from, its path there). Files the index would
    skip (the root's ignore rules, unknown languages, too large) give none, as the index would have held none."""
    from assay.stages.index.discover import SHEBANG_BYTES, root_ignore_check
    from assay.stages.index.languages import language_for, language_from_shebang
    from assay.stages.index.parse import parse_source

    ignored = root_ignore_check(root)

    def old(file: str) -> list[Entity]:
        if file not in where or ignored(file):
            return []
        repo, commit, path = where[file]
        data = _blob(repo, commit, path)
        if data is None or len(data) > _OLD_BLOB_MAX:
            return []
        name = path.rsplit("/", 1)[-1]
        language = language_for(name) or (language_from_shebang(data[:SHEBANG_BYTES]) if "." not in name else None)
        return parse_source(data, file, language, "").entities if language else []

    return old


def unmerged_paths(repo: Path, *paths: str) -> set[str]:
    """Files of `repo` (of `paths`, when given) with an unresolved merge conflict: the parser's error recovery may end
    a definition at a conflict marker (`<<<<<<<`), so its span is cut short and its changed lines read as outside it."""
    out = git(repo, *_UNQUOTED, "ls-files", "--unmerged", "-z", "--", *paths)
    return {entry.split("\t", 1)[1] for entry in out.split("\0") if "\t" in entry}


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
            if record.mtime_ns and not record.stat_differs(on_disk(root, file).stat()):
                continue  # size and time as indexed: unchanged, without reading it
            if file_hash(on_disk(root, file).read_bytes()) != record.content_hash:
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
    entities, outside = map_to_entities(found.touched, as_it_is_now(root, stale, indexed or {}, by_file), found.added, stale)
    entities += removed_entities(found.deleted, by_file, deleted_side(root, found.deleted_at))
    # A pure rename or a mode-only change touches no line (no entity), yet it is a change: its file is listed.
    files = sorted(set(found.touched) | found.deleted | {r.new for r in found.renamed} | {m.file for m in found.mode_changed})
    return ChangedSymbols(since=since, files=files, entities=entities, outside=outside[:100], deleted_files=sorted(found.deleted),
                          untracked_files=sorted(found.untracked), stale_files=sorted(stale), not_followed=found.not_followed,
                          renamed_files=sorted(found.renamed, key=lambda r: r.new),
                          mode_changed=sorted(found.mode_changed, key=lambda m: m.file), conflicted_files=sorted(found.conflicted),
                          note="; ".join(filter(None, ["" if files or found.not_followed else f"nothing changed since {since}",
                                                       _unfiltered_note(found.unfiltered)])))


def unfiltered_paths(repo: Path, paths: list[str]) -> dict[str, str]:
    """Of `paths` (changed in `repo`), those whose `filter` attribute names a filter driver the repository's own
    config defines, with its name: it was switched off, so git compared the raw file with the filtered commit."""
    if not paths or not (names := repository_filters(repo)):
        return {}
    out = git(repo, "check-attr", "-z", "filter", "--", *paths).split("\0")  # path, attribute, value, ...
    return {path: value for path, value in zip(out[::3], out[2::3]) if value in names}


def _unfiltered_note(unfiltered: dict[str, str]) -> str:
    """Why a file under the repository's own filter may be listed though `git status` shows it clean."""
    if not unfiltered:
        return ""
    files = ", ".join(sorted(unfiltered)[:10]) + (" ..." if len(unfiltered) > 10 else "")
    names = ", ".join(f"`{n}`" for n in sorted(set(unfiltered.values())))
    return (f"note: {files} use(s) a filter that the repository's own config defines ({names}), which Assay never "
            f"runs, since a repository's config could run any program: they were compared unfiltered, so lines may be "
            f"listed as changed that `git diff` does not show (to have Assay use a filter you trust, move its "
            f"definition from the repository's config to your global one)")


@dataclass
class _Changes:
    """What one repository's diff says, in workspace paths; untracked files are in `touched` and `added` too."""
    touched: dict[str, set[int]] = field(default_factory=dict)
    added: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    untracked: set[str] = field(default_factory=set)
    not_followed: list[str] = field(default_factory=list)
    renamed: list[RenamedFile] = field(default_factory=list)
    mode_changed: list[ModeChange] = field(default_factory=list)
    deleted_at: dict[str, tuple[Path, str, str]] = field(default_factory=dict)  # file -> (repository, since commit, path there)
    conflicted: set[str] = field(default_factory=set)
    unfiltered: dict[str, str] = field(default_factory=dict)  # file -> the repository's own filter it was not run through

    def merge(self, other: "_Changes") -> None:
        self.conflicted |= other.conflicted
        self.unfiltered.update(other.unfiltered)
        self.touched.update(other.touched)
        self.added |= other.added
        self.deleted |= other.deleted
        self.untracked |= other.untracked
        self.not_followed += other.not_followed
        self.renamed += other.renamed
        self.mode_changed += other.mode_changed
        self.deleted_at.update(other.deleted_at)


def _repo_changes(repo: Path, prefix: str, commit: str, by_file, indexed: dict[str, FileRecord] | None,
                  depth: int = 0) -> _Changes:
    """Changes of the repository at `repo` (workspace paths start with `prefix`) since `commit`, tracked and
    untracked. A submodule is one gitlink entry in its parent's diff (`libs/sub`, line 1), so it is followed into
    its own repository instead of being reported as a location."""
    # -M whatever diff.renames says: a rename is one entry (its raw line names both paths), not a delete and an add
    diff = git(repo, *_UNQUOTED, "diff", *_DIFF, *_RAW, "-M", "--end-of-options", commit, "--")
    touched, added, deleted = diff_files(diff)
    _recount_lines(repo, commit, diff, touched, added, deleted)
    links = diff_gitlinks(diff)
    for link in links:  # drop only the submodule side: a file replaced by a submodule is still a deleted file
        if link.present:
            touched.pop(link.path, None)
            added.discard(link.path)
        if link.old_path is not None:
            deleted.discard(link.old_path)
    found = _Changes(touched={prefix + f: lines for f, lines in touched.items()}, added={prefix + f for f in added},
                     deleted={prefix + f for f in deleted}, deleted_at={prefix + f: (repo, commit, f) for f in deleted})
    raw = diff_raw(diff)
    found.renamed = [RenamedFile(old=prefix + old, new=prefix + new) for old, new in renames(raw)]
    found.mode_changed = [ModeChange(file=prefix + f, old_mode=was, new_mode=now) for f, was, now in mode_changes(raw)]
    found.conflicted = {prefix + f for f in unmerged_paths(repo)}
    found.unfiltered = {prefix + f: name for f, name in unfiltered_paths(repo, [f for f in touched if f not in added]).items()}
    files, nested = untracked_paths(repo)
    untracked = untracked_lines([prefix + f for f in files], by_file, indexed)
    for file, lines in untracked.items():
        found.touched.setdefault(file, set()).update(lines)
    found.added |= set(untracked)
    found.untracked = set(untracked)
    found.not_followed += [f"{prefix + n}: a nested git repository that its parent repository does not track"
                           for n in nested if _holds_indexed(prefix + n, indexed)]
    if depth < _MAX_DEPTH:
        links += _unlisted_submodules(repo, {link.path for link in links})
    for link in links:
        found.merge(_submodule_changes(repo, prefix, link, by_file, indexed, depth))
    return found


def _unlisted_submodules(repo: Path, listed: set[str]) -> list[Gitlink]:
    """Checked-out submodules of `repo` its diff did not list. The diff no longer looks inside submodules (git
    would run `git status` in each, under that submodule's own config), so their uncommitted edits are found by
    following each one from its own HEAD: unlisted, it is the commit the parent recorded."""
    out = git(repo, *_UNQUOTED, "ls-files", "--stage", "-z")
    paths = {entry.split("\t", 1)[1] for entry in out.split("\0")
             if entry.startswith(GITLINK_MODE + " ") and "\t" in entry}
    return [Gitlink(path=p, base="HEAD", present=True, old_path=p) for p in sorted(paths - listed)
            if (repo / p / ".git").exists()]


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


def _path_in_head(repo: Path, path: str) -> str | None:
    """`path`'s name in HEAD: itself, or the old name when git sees an uncommitted rename (a staged `git mv`:
    `git log -L` follows renames only in commits, so the search must start from the old name)."""
    if _in_head(repo, path):
        return path
    raw = diff_raw(git(repo, *_UNQUOTED, "diff", "--no-color", "--no-ext-diff", "--relative", *_RAW, "-M", "HEAD", "--"))
    found = next((old for old, new in renames(raw) if new == path), None)
    return found if found is not None else _renamed_from_outside(repo, path)


def _renamed_from_outside(repo: Path, path: str) -> str | None:
    """The old name, relative to the workspace (`../other/help.py`), of a file renamed into a workspace that is a
    folder of a larger repository from outside it: `--relative` drops that old side, so the rename never shows
    there. One diff of the whole repository's uncommitted changes, asked only when the file is not in HEAD."""
    prefix = git(repo, "rev-parse", "--show-prefix").strip().rstrip("/")
    if not prefix:  # the workspace is the repository's top: the first diff saw every rename
        return None
    raw = diff_raw(git(repo, *_UNQUOTED, "diff", "--no-color", "--no-ext-diff", *_RAW, "-M", "HEAD", "--", ":(top)"))
    old = next((o for o, new in renames(raw) if new == f"{prefix}/{path}"), None)
    return posixpath.relpath(old, prefix) if old is not None else None


def _span_in_head(repo: Path, entity: Entity, path: str) -> tuple[tuple[int, int] | None, str, str]:
    """HEAD's lines for the entity's (working-tree) span in `repo`, where its file is `path`, the file's path in
    HEAD (its old name across an uncommitted rename), and a note when they differ or do not exist."""
    if not has_commits(repo):
        return None, "not committed yet: the repository has no commits", path
    head_path = _path_in_head(repo, path)
    if head_path is None:
        return None, f"not committed yet: {entity.file} is not in HEAD", path
    if not (repo / path).exists():
        return ((entity.start_line, entity.end_line), f"{entity.file} is deleted in the working tree; traced HEAD's "
                "lines as indexed", head_path)
    renamed = ""
    if head_path != path:
        renamed = f"traced through the uncommitted rename from {entity.file[:len(entity.file) - len(path)] + head_path}"
    outside = head_path.startswith("../")  # renamed in from outside the workspace: `--relative` would drop that side
    if outside:
        renamed += " (outside the workspace)"
    head, now = _blob(repo, "HEAD", head_path), _read(repo / path)
    if head is not None and now is not None and (git_miscounts_lines(head) or git_miscounts_lines(now)):
        hunks = line_hunks(editor_lines(head, head_path), editor_lines(now, path))  # git's hunks count other lines
    else:
        args = tuple(a for a in _DIFF if a != "--relative") if outside else _DIFF
        hunks = diff_hunks(git(repo, *_UNQUOTED, "diff", *args, "-M", "HEAD", "--", *dict.fromkeys([head_path, path])))
    span = head_span(hunks, entity.start_line, entity.end_line)
    if span is None:
        return None, "; ".join(filter(None, [renamed, "not committed yet: HEAD holds none of its lines (uncommitted edits)"])), head_path
    if span != (entity.start_line, entity.end_line):
        return span, "; ".join(filter(None, [renamed, f"traced HEAD's lines {span[0]}-{span[1]} (the file has uncommitted edits)"])), head_path
    return span, renamed, head_path


def _line_bounds(data: bytes) -> list[tuple[int, int]] | None:
    """(first byte, byte past the last character) of each editor line of a file, None when its UTF-16 is cut short."""
    if _utf16(data):
        codec = "utf-16-be" if data.startswith(b"\xfe\xff") else "utf-16-le"
        try:
            pieces: list = re.split(r"(\r\n|\r|\n)", data[2:].decode(codec, "surrogatepass"))
        except UnicodeDecodeError:
            return None
        width, pos = (lambda s: len(s.encode(codec, "surrogatepass"))), 2
    else:
        pieces, width, pos = re.split(rb"(\r\n|\r|\n)", data), len, 0
    if len(pieces) > 1 and not pieces[-1]:  # a final line ending ends the last line; it opens no empty one
        pieces = pieces[:-2]
    bounds = []
    for i in range(0, len(pieces), 2):  # content, line ending, content, ...
        size = width(pieces[i])
        bounds.append((pos, pos + size))
        pos += size + (width(pieces[i + 1]) if i + 1 < len(pieces) else 0)
    return bounds


def git_span(data: bytes, span: tuple[int, int]) -> tuple[tuple[int, int], bool]:
    """Git's lines (it counts `\\n` bytes only) for editor lines `span` of a file's bytes, and whether they hold other
    editor lines too (a lone-CR file is one line to git). The span itself when git numbers the file as editors do."""
    bounds = _line_bounds(data) if git_miscounts_lines(data) else None
    if bounds is None or span[1] > len(bounds):
        return span, False
    def line_at(offset: int) -> int:
        return data.count(b"\n", 0, offset) + 1
    first, (start, end) = line_at(bounds[span[0] - 1][0]), bounds[span[1] - 1]
    last = line_at(max(end - 1, start))
    wider = (span[0] > 1 and line_at(bounds[span[0] - 2][1]) == first) or \
            (span[1] < len(bounds) and line_at(bounds[span[1]][0]) == last)
    return (first, last), wider


def _log_lines(repo: Path, span: tuple[int, int], head_path: str, limit: int) -> str:
    """`git log -L` over HEAD's lines of one file; git's error reworded as what to do."""
    try:
        return git(repo, "log", f"-L{span[0]},{span[1]}:{head_path}", "--no-patch", f"-n{limit}",
                   "--date=short", "--format=%H%x00%an%x00%ad%x00%s")  # NUL: a name or subject may hold a tab
    except GitError as exc:
        reason = str(exc).split(": ", 1)[-1].removeprefix("fatal: ")
        raise ValueError(f"git cannot trace lines {span[0]}-{span[1]} of {head_path} ({reason}); re-index the "
                         f"workspace if the file changed since indexing, or run `git log -- {head_path}` for all its "
                         "commits") from exc


HISTORY_LIMIT_MAX = 10_000  # commits shown at most; git reads `-n` as a 32-bit int (-n4294967296 showed none)


def check_history_limit(limit: int) -> None:
    """A one-line error for a limit git would misread: -n0 prints no commit, -n-1 all of them, and a value past
    2**31 wraps. Worded for the CLI (`--limit`); the MCP door says `limit`."""
    if limit < 1:
        raise ValueError(f"--limit must be 1 or more (got {limit})")
    if limit > HISTORY_LIMIT_MAX:
        raise ValueError(f"--limit must be {HISTORY_LIMIT_MAX} or less (got {limit})")


def history(root: Path, entity: Entity, limit: int = 20) -> History:
    """Commits that changed the lines of one entity, newest first, from the repository that holds its file (a
    submodule's own). The entity's lines are the working tree's (what the index holds); `git log -L` reads HEAD's,
    so they are mapped through the uncommitted diff first."""
    check_history_limit(limit)
    result = History(entity=entity.qualname, file=entity.file, start_line=entity.start_line, end_line=entity.end_line)
    repo, path = owning_repository(root, entity.file)
    try:
        span, note, head_path = _span_in_head(repo, entity, path)
        conflicted = bool(unmerged_paths(repo, path))
    except GitError as exc:
        raise ValueError(f"git could not read the history of {entity.file} ({str(exc).split(': ', 1)[-1]}); check that "
                         f"`git status` works in {repo}, then retry") from exc
    nested = repo.relative_to(root).as_posix() if repo != root else ""
    conflict = (f"warning: {entity.file} has an unresolved merge conflict: its definitions may end at a conflict marker, "
                "so commits to the lines past it are missing") if conflicted else ""
    result.note = "; ".join(filter(None, [nested and f"{entity.file} is in {nested}, a submodule or nested repository "
                                                     "with its own history: these are its commits", note, conflict]))
    if span is None:
        return result
    head = _blob(repo, "HEAD", head_path)
    lines, wider = git_span(head, span) if head is not None else (span, False)
    if wider:  # git cannot name the entity's lines alone: say so instead of passing the commits off as its own
        held = f"line {lines[0]}" if lines[0] == lines[1] else f"lines {lines[0]}-{lines[1]}"
        result.note = "; ".join(filter(None, [result.note, f"git counts only \\n as a line break, so it reads lines "
                                              f"{span[0]}-{span[1]} of {head_path} (lone-CR line ends) as part of its {held}: "
                                              f"these commits changed that text, not necessarily {entity.qualname}"]))
    out = _log_lines(repo, lines, head_path, limit)
    for line in out.split("\n"):  # `\n` only: a subject may hold a CR (`splitlines` cut it there)
        parts = line.split("\0", 3)
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


def _shown(value):
    """A result's dump with every string one visible line: file names, commit subjects and authors come from the
    repository, and sent raw their escapes (ESC, OSC, a CR, a newline) would drive or forge the terminal's lines."""
    if isinstance(value, str):
        return visible(value).replace("\n", "\u240a")
    if isinstance(value, list):
        return [_shown(v) for v in value]
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    return value


def render_changed(result: ChangedSymbols) -> str:
    result = ChangedSymbols.model_validate(_shown(result.model_dump()))
    untracked = set(result.untracked_files)
    lines = [f"changed since {result.since}: {len(result.entities)} entit(ies) in {len(result.files)} file(s)"]
    lines += [f"  {t.entity} ({t.kind})  {t.file}:{t.start_line}-{t.end_line}  {_where(t, untracked)}"
              + (f"  {_STALE_MARK}" if t.stale else "") for t in result.entities]
    if result.outside:
        lines.append("  outside any definition: " + ", ".join(result.outside[:10]) + (" ..." if len(result.outside) > 10 else ""))
    if result.deleted_files:
        lines.append("  deleted: " + ", ".join(result.deleted_files[:10]) + (" ..." if len(result.deleted_files) > 10 else ""))
    if result.renamed_files:
        lines.append("  renamed: " + ", ".join(f"{r.old} -> {r.new}" for r in result.renamed_files[:10])
                     + (" ..." if len(result.renamed_files) > 10 else ""))
    if result.mode_changed:
        lines.append("  mode changed: " + ", ".join(f"{m.file} ({m.old_mode} -> {m.new_mode})" for m in result.mode_changed[:10])
                     + (" ..." if len(result.mode_changed) > 10 else ""))
    lines += [f"  not listed: {item}" for item in result.not_followed[:10]]
    if result.conflicted_files:
        lines.append("warning: unresolved merge conflict in " + ", ".join(result.conflicted_files[:10])
                     + (" ..." if len(result.conflicted_files) > 10 else "") + ": definitions may end at a conflict marker, "
                     "so changed lines inside them may be listed outside any definition (resolve, then re-index)")
    if result.stale_files:
        lines.append(f"warning: {len(result.stale_files)} file(s) changed since indexing (their entities above are read "
                     f"from the files as they are now; search and ask hold the indexed version until a re-index): " + ", ".join(result.stale_files[:10]) + (" ..." if len(result.stale_files) > 10 else ""))
    if result.note:
        lines.append(result.note)
    return "\n".join(lines)


def render_history(result: History) -> str:
    result = History.model_validate(_shown(result.model_dump()))
    head = f"history of {result.entity} ({result.file}:{result.start_line}-{result.end_line}): {len(result.commits)} commit(s)"
    return "\n".join([head] + [f"  {c.commit[:10]} {c.date} {c.author}: {c.subject}" for c in result.commits]
                     + ([result.note] if result.note else []))

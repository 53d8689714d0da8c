"""Workspace identity and isolation: a workspace is its resolved real path, nothing else."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from assay.stages.core.fs_names import utf8_on_disk


class WorkspaceError(ValueError):
    """A path that is not a usable workspace, or that lies outside the allowed roots."""


STATE_DIR = ".assay"


def resolve_workspace(path: str | os.PathLike[str]) -> Path:
    """Return the real, absolute directory for a workspace, or raise a one-line error. An empty path is an error,
    not the working folder: it is what an unset variable gives (`{{ $ASSAY_WORKSPACE }}` in prefect.yaml), and a
    deployment's working folder is wherever `prefect deploy` ran, often the Assay checkout itself."""
    if not str(path).strip():
        raise WorkspaceError("no workspace given (the path is empty): pass the folder to use; prefect.yaml's "
                             "deployments take it from ASSAY_WORKSPACE, set when `prefect deploy` runs")
    given = os.path.expanduser(_from_uri(str(path)))
    real = Path(os.path.realpath(given))
    if not real.exists():
        hint = "" if os.path.isabs(given) else (
            f" (a relative path resolves against {os.getcwd()}, this process's working folder; pass an absolute path)")
        raise WorkspaceError(f"workspace does not exist: {path}{hint}")
    if not real.is_dir():
        raise WorkspaceError(_not_a_folder(path, real))
    if (undecodable := undecodable_path(real)) is not None:
        raise undecodable
    from assay.stages.core.registry import home_folders

    homes = home_folders()  # two realpaths: once for both checks
    refuse_assay_home(real, homes)
    _refuse_state_folder(real, homes)
    refuse_shared_state(real)  # every door, not only index: status and search would show the other one's index
    refuse_committed_state(real)  # every door too: a search would serve the forged passages and scores
    return real


def undecodable_path(real: Path) -> WorkspaceError | None:
    """The error for a workspace whose path cannot be written as text, else None: the index records the path as
    UTF-8, so a Latin-1 folder name failed half-way through a run (a failed run, a `.assay/` left behind), and
    `status` then advised the `assay index` that had failed."""
    try:
        str(real).encode("utf-8")
        return None
    except UnicodeEncodeError:
        pass
    shown = os.fsencode(real).decode("utf-8", "backslashreplace")
    if not utf8_on_disk(real):
        return WorkspaceError(f"cannot use {shown} as a workspace: its path is not valid UTF-8 (a name in another "
                              "encoding, e.g. Latin-1); rename the folder to a UTF-8 name")
    return WorkspaceError(f"cannot use {shown} as a workspace: its path is UTF-8 but this process reads file names as "
                          f"{sys.getfilesystemencoding()}; run Assay under a UTF-8 locale (LC_ALL=C.UTF-8)")


def _from_uri(path: str) -> str:
    """A `file://` URI, what MCP clients speak in (roots, resources), as the local path it names; else `path`.
    Read as a relative folder it would be refused as one that does not exist."""
    if not re.match(r"(?i)file:/", path):
        return path
    parts = urlsplit(path)
    if parts.netloc not in ("", "localhost"):
        raise WorkspaceError(f"{path} names a folder on another host ({parts.netloc}); pass a local folder path")
    return unquote(parts.path)


def _not_a_folder(path: str | os.PathLike[str], real: Path) -> str:
    """Why a file is refused as PATH, and where its project is: a user may expect a file to narrow the search."""
    holder = indexed_workspace_of(real.parent)
    where = "" if holder is None else ", an indexed workspace" if holder == real.parent else (
        f", in the indexed workspace {holder}")
    return (f"workspace is not a directory: {path} is a file; PATH is the project folder (this file's folder is "
            f"{real.parent}{where}); to look inside one file, name it in the query")


def refuse_assay_home(root: Path, homes: list[Path] | None = None) -> None:
    """Refuse a workspace whose state folder would be Assay's per-user home (the workspace list, models, eval data)
    or hold it, and Assay's home itself: indexing would write into the home and `forget_workspace`, which empties
    the state folder, would delete it. Workspaces inside the home (the eval corpora) keep their own state folders."""
    from assay.stages.core.registry import home_folders

    folder = state_dir(root)
    for home in home_folders() if homes is None else homes:
        if root == home:
            raise WorkspaceError(f"{root} is Assay's own home (ASSAY_HOME), not a project; pass a project folder")
        if folder == home:
            raise WorkspaceError(f"{root} cannot be a workspace: its state folder would be {home}, Assay's own home "
                                 "(ASSAY_HOME); pass a project folder")
        if folder in home.parents:
            raise WorkspaceError(f"{root} cannot be a workspace: its state folder {folder} holds {home}, Assay's own "
                                 "home (ASSAY_HOME); pass a project folder")


_STATE_FOLDERS = {STATE_DIR: "Assay's state folder", ".git": "git's folder"}


def _refuse_state_folder(root: Path, homes: list[Path]) -> None:
    """Refuse a path in a workspace's `.assay/` or a repository's `.git/`: indexing one would nest an index inside
    the index (`.assay/.assay/`) and list the state folder as a workspace. Assay's home (`~/.assay`) is no
    workspace's state folder: the eval corpora under it are workspaces."""
    for folder in (root, *root.parents):
        what = _STATE_FOLDERS.get(folder.name)
        if what is None or folder in homes:
            continue
        where = "is" if folder == root else f"lies inside {folder},"
        raise WorkspaceError(f"{root} {where} {what} of {folder.parent}, not a workspace; pass {folder.parent}")


def indexed_workspace_of(folder: Path) -> Path | None:
    """The nearest indexed workspace holding `folder` (itself or a parent with an index manifest), if any."""
    for candidate in (folder, *folder.parents):
        if (state_dir(candidate) / "manifest.json").is_file():
            return candidate
    return None


def state_dir(root: Path) -> Path:
    """The workspace's own `.assay/` folder, where all runtime state lives."""
    return root / STATE_DIR


def refuse_shared_state(root: Path) -> None:
    """Refuse to index a workspace whose `.assay` is a link to the state folder another existing workspace still
    uses (a `cp -a` of a workspace with a linked `.assay`): each run would overwrite the other's index. The
    manifest names the workspace that wrote it; one moved away or deleted leaves the folder to this one."""
    folder = state_dir(root)
    if not folder.is_symlink():
        return
    import json
    import shlex

    try:
        owner = json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("workspace")
    except (OSError, ValueError, AttributeError):
        return
    if not isinstance(owner, str) or not owner or Path(owner) == root:
        return
    other = state_dir(Path(owner))
    if os.path.realpath(other) == os.path.realpath(folder) and other.is_dir():
        raise WorkspaceError(f"{folder} is a link to {os.path.realpath(folder)}, the state folder of the workspace "
                             f"{owner} too: indexing here would overwrite its index; remove the link (`rm {shlex.quote(str(folder))}`) "
                             "and index again")


def refuse_committed_state(root: Path) -> None:
    """Refuse a workspace whose `.assay/` git tracks: it came with the repository (a clone of one that committed its
    index), not from this machine's runs, and every part of it would be trusted as Assay's own: forged injection
    scores of 0 let a payload through the guard, and forged catalog rows show as results. The user's own is never
    tracked (`make_state_dir` writes its `*` `.gitignore`)."""
    tracked = tracked_state(root)
    if not tracked:
        return
    import shlex

    folder = state_dir(root)
    top, spec = _state_in_repository(root)  # (a repository there: tracked_state found files)
    untrack = f"`git -C {shlex.quote(str(top))} rm -r -q --cached {shlex.quote(spec)}`"
    raise WorkspaceError(
        f"{folder} is tracked by git ({len(tracked)} file(s), e.g. {tracked[0]!r}): an index committed to the repository "
        f"is not trusted (its passages and scores could be forged); if you committed it yourself, untrack it ({untrack}, "
        f"which keeps your index, notes and brief corrections) and commit; if it came with a clone, untrack it the same "
        f"way and delete it (`rm -rf {shlex.quote(str(folder))}`), then run `assay index`")


def tracked_state(root: Path) -> list[str]:
    """The paths under the workspace's `.assay/` that git tracks: [] when there is no `.assay/`, no git checkout
    around the workspace, or git cannot tell (not installed, a broken repository). One `git ls-files` (a few ms),
    run only when both folders exist."""
    top, spec = _state_in_repository(root)
    if not os.path.lexists(state_dir(root)) or top is None:
        return []
    import subprocess

    from assay.stages.core.safe_git import git_environment

    # Another user's clone (a shared folder, a container volume, a clone made with sudo) is refused by git as of
    # "dubious ownership", which would skip this check. This one command runs nothing the repository configures, so
    # it may read it: `safe.directory` given on the command line is honoured (protected configuration).
    trusted = ("-c", f"safe.directory={os.path.realpath(top)}")
    try:
        done = subprocess.run(["git", "--no-pager", *trusted, "--literal-pathspecs", "-C", str(top), "ls-files", "-z",
                               "--", spec], capture_output=True, stdin=subprocess.DEVNULL, timeout=30, check=False,
                              env=git_environment())  # no program the repository configures runs (fsmonitor...)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    return [p for p in done.stdout.decode("utf-8", "replace").split("\0") if p]


def _state_in_repository(root: Path) -> tuple[Path | None, str]:
    """The folder holding the `.git` around the workspace (None: none), and the workspace's `.assay` as a path from
    it. Asked from there: from the workspace, git would stop at bare-repository files (HEAD, objects/, refs/,
    config) committed between the two, refuse them, and skip the tracked-state check."""
    top = next((f for f in (root, *root.parents) if os.path.lexists(f / ".git")), None)
    if top is None:
        return None, STATE_DIR
    rel = root.relative_to(top).as_posix()
    return top, STATE_DIR if rel == "." else f"{rel}/{STATE_DIR}"


STATE_GITIGNORE = "# Assay's index of this workspace: local state, never to be committed (written by assay)\n*\n"


class WorkspaceGone(WorkspaceError):
    """The workspace's folder was moved or deleted (or replaced by another) while a run used it."""


def workspace_gone(root: Path) -> WorkspaceGone:
    return WorkspaceGone(f"the workspace {root} was moved or deleted during the run: index it at its new path")


def root_identity(root: Path) -> tuple[int, int] | None:
    """(device, inode) of the workspace folder, None when it is gone: a folder made later at the same path (a fresh
    clone after `mv proj proj.bak`) is another workspace, which a path string cannot tell."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return st.st_dev, st.st_ino


SQLITE_PATH_BYTES = 504  # SQLite opens no database past this (its 512-byte file-name limit less "-journal")
LONGEST_DB = f"{STATE_DIR}/chroma/chroma.sqlite3"  # the longest database path in a workspace's state folder


def path_too_long(root: Path) -> WorkspaceError | None:
    """The error for a workspace too deep for its state databases, else None: SQLite says only "unable to open
    database file", which read as a damaged store (a `--rebuild` that cannot help, setting a healthy store aside)."""
    size = len(os.fsencode(str(root)))
    most = SQLITE_PATH_BYTES - len(os.fsencode(f"/{LONGEST_DB}"))
    if size <= most:
        return None
    return WorkspaceError(f"the workspace path is too long for the index: {size} bytes, and SQLite opens no database "
                          f"past {SQLITE_PATH_BYTES} bytes ({LONGEST_DB} inside it); move or copy the workspace to a "
                          f"path of at most {most} bytes")


def dangling_state_link(root: Path) -> WorkspaceError | None:
    """The error for a `.assay` that is a link to nothing, else None: mkdir said only "[Errno 17] File exists".
    Its target is not made: a link to an unmounted disk or a typo'd path is the user's to mend."""
    folder = state_dir(root)
    if not folder.is_symlink() or folder.exists():
        return None
    import errno
    import shlex

    remove = f"remove the link (`rm {shlex.quote(str(folder))}`)"
    try:
        folder.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # links that lead back to themselves: there is no folder to create
            return WorkspaceError(f"{folder} is a link that leads back to itself (a loop of links): {remove}, or "
                                  f"point it at a folder")
    return WorkspaceError(f"{folder} is a link to {os.path.realpath(folder)}, which does not exist: create that folder "
                          f"or {remove}")


def make_state_dir(root: Path) -> Path:
    """The workspace's `.assay/`, made on the first write with a `.gitignore` that keeps all of it out of git, as
    pytest and ruff do for their caches: a `git add -A` would commit the index, and the questions asked with it."""
    if (too_long := path_too_long(root)) is not None:  # before anything is written there
        raise too_long
    if (dangling := dangling_state_link(root)) is not None:
        raise dangling
    folder = state_dir(root)
    try:  # never `parents=True`: a late write of a run whose workspace was moved would make the old path again
        folder.mkdir(exist_ok=True)
    except FileNotFoundError:
        raise workspace_gone(root) from None
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text(STATE_GITIGNORE)
        except OSError:  # a folder it can write to but not this file in: the index matters more
            pass
    return folder


def narrow_state_dir(root: Path, indexed: Iterable[str]) -> int:
    """Make `.assay/` no more readable than the least readable file it indexes (workspace-relative paths): its
    catalog, BM25 and judgments hold their text. When some file is closed to others (a 0600 file, or one in a 0700
    folder), others lose r/w/x on `.assay/`; likewise for the group. Its top folder is enough: nobody can traverse
    past it. Otherwise it stays as the umask made it (a shared checkout stays searchable by other users), and it is
    never widened: the owner may have closed it. Returns the permission bits taken away (0 when none)."""
    hidden = _hidden_bits(root, indexed)
    folder = make_state_dir(root)
    mode = stat.S_IMODE(folder.stat().st_mode)
    if not mode & hidden:
        return 0
    try:
        folder.chmod(mode & ~hidden)
    except OSError:  # another user's folder this one may write in (group-writable): its owner must close it
        return 0
    return mode & hidden


def _hidden_bits(root: Path, indexed: Iterable[str]) -> int:
    """The permission classes (group, others) some of these files are closed to, as rwx bits of `.assay/`."""
    hidden = 0
    searchable: dict[Path, int] = {}  # a folder's class bits that may pass (x), cached: many files share one
    for rel in indexed:
        path = root / rel
        try:
            if os.path.islink(path):  # a link inside the workspace: its target's folders are what guard it
                path = Path(os.path.realpath(path))
            readable = os.stat(path).st_mode & (stat.S_IRGRP | stat.S_IROTH)
        except OSError:
            continue
        for folder in path.parents:
            if folder == root or root not in folder.parents:
                break
            if folder not in searchable:
                try:
                    searchable[folder] = os.stat(folder).st_mode
                except OSError:
                    searchable[folder] = 0
            readable &= ((searchable[folder] & stat.S_IXGRP) << 2) | ((searchable[folder] & stat.S_IXOTH) << 2)
        if not readable & stat.S_IRGRP:
            hidden |= stat.S_IRWXG
        if not readable & stat.S_IROTH:
            hidden |= stat.S_IRWXO
        if hidden == stat.S_IRWXG | stat.S_IRWXO:
            break
    return hidden


def writable(folder: Path) -> bool:
    """Whether this process may write in `folder` (false on a read-only mount and in another user's checkout)."""
    return os.access(folder, os.W_OK)


def state_writable(root: Path) -> bool:
    """Whether the workspace's `.assay/` can take what a query records (its judgments, model usage, the brief):
    an index built elsewhere and mounted read-only still answers, without recording."""
    folder = state_dir(root)
    return writable(folder if folder.is_dir() else root)


def not_writable(folder: Path) -> OSError:
    """Why a folder cannot be written, as the OSError `stages.core.errors` words (`unwritable_state`)."""
    read_only = hasattr(os, "statvfs") and bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    return OSError(errno.EROFS if read_only else errno.EACCES,
                   "read-only file system" if read_only else "permission denied", str(folder))


def unindexable_here(root: Path) -> str:
    """Why a folder cannot be indexed where it is ("" when it can): `status` and `search` of an unindexed one say
    so at once, rather than advise an `assay index` that can only fail."""
    if (too_long := path_too_long(root)) is not None:
        return f"cannot be indexed in place: {too_long}"
    if (dangling := dangling_state_link(root)) is not None:
        return f"cannot be indexed in place: {dangling}"
    if not state_writable(root):
        folder = state_dir(root) if state_dir(root).is_dir() else root
        return (f"cannot be indexed in place: {folder} is not writable ({not_writable(folder).strerror}); index a "
                "writable copy of the workspace")
    return ""


def workspace_id(root: Path) -> str:
    """Stable id for a workspace (used for the Chroma collection name): of the path's bytes on disk, so one locale
    or another (a non-ASCII folder under LC_ALL=C, PYTHONUTF8=0) names the same collection and never fails."""
    return hashlib.sha256(os.fsencode(root)).hexdigest()[:16]


def path_collection_name(root: Path) -> str:
    """The collection base name of the path alone: every index's before workspaces had a token (`collection_name`)."""
    return f"assay_{workspace_id(root)}"


COLLECTION_TOKEN = "chroma.token"  # in `.assay/`: the workspace's random part of its collections' names
_TOKEN = re.compile(r"[0-9a-f]{16}")


def collection_token(root: Path, create: bool = False) -> str | None:
    """The workspace's random token for its collection names, kept in `.assay/` (a moved workspace keeps it); with
    `create`, made when missing, but only in an existing `.assay/` (a workspace moved mid-run is not made again at
    its old path). None when there is none."""
    path = state_dir(root) / COLLECTION_TOKEN
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError:
        token = ""
    if _TOKEN.fullmatch(token):
        return token
    if not create or not state_dir(root).is_dir():
        return None
    import secrets

    token = secrets.token_hex(8)
    tmp = path.with_name(f"{COLLECTION_TOKEN}.{os.getpid()}.tmp")
    tmp.write_text(token, encoding="utf-8")
    os.replace(tmp, path)
    return token


def collection_name(root: Path, create: bool = False) -> str:
    """The base name of the workspace's Chroma collections: its path's and its random token's (made by its first
    index run, `create`). Teams check out at one path (`/app`, `/workspace`): named by the path alone, two users on one
    Chroma server shared a collection (each one's nearest passages were the other's) and one's rebuild deleted the
    other's. A copy gets its own (another path). Without a token, the path's alone: an index from before tokens,
    whose embedded store keeps that name (`next_collection`), so it is never embedded again for this."""
    token = collection_token(root, create)
    return f"{path_collection_name(root)}_{token}" if token else path_collection_name(root)


def of_base(name: str, base: str) -> bool:
    """Whether a collection is `base` itself or one of its generations (`base_g<n>`), exactly: never another base
    that merely begins like it (`base_<token>_g1`, another workspace's on the same server)."""
    return name == base or re.fullmatch(re.escape(base) + r"_g\d+", name) is not None


def owns_collection(root: Path, name: str) -> bool:
    """Whether a collection is this workspace's (its base name, any generation `_g<n>`). A copied or moved
    workspace's manifest names the original's: on a shared Chroma server that one is not the copy's to change."""
    return of_base(name, collection_name(root))


def parse_roots(spec: str | None, default: Path) -> list[Path]:
    """ASSAY_ALLOWED_ROOTS as folders (unset or empty: `default`), checked as Settings checks the variable: `:`
    alone refused every workspace ("outside the allowed roots ()"), and ` /x` became the root `<cwd>/ /x`."""
    from assay.stages.core.config import check_roots

    if not spec:
        return [Path(os.path.realpath(default))]
    try:
        check_roots(spec)
    except ValueError as exc:
        raise WorkspaceError(f"ASSAY_ALLOWED_ROOTS: {exc} (got {spec!r})") from None
    return [Path(os.path.realpath(os.path.expanduser(p))) for p in spec.split(os.pathsep) if p.strip()]


def check_allowed(root: Path, allowed: list[Path]) -> Path:
    """Refuse a workspace outside every allowed root (after symlinks and `..` are resolved)."""
    for base in allowed:
        if root == base or base in root.parents:
            return root
    names = ", ".join(str(a) for a in allowed)
    raise WorkspaceError(f"{root} is outside the allowed roots ({names}); set ASSAY_ALLOWED_ROOTS to permit it")


def inside(root: Path, relative: str) -> Path:
    """Resolve a workspace-relative path, refusing anything that escapes the workspace."""
    target = Path(os.path.realpath(root / relative))
    if target != root and root not in target.parents:
        raise WorkspaceError(f"path escapes the workspace: {relative}")
    return target

"""Workspace identity and isolation: a workspace is its resolved real path, nothing else."""

from __future__ import annotations

import errno
import hashlib
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit


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
    from assay.stages.core.registry import home_folders

    homes = home_folders()  # two realpaths: once for both checks
    refuse_assay_home(real, homes)
    _refuse_state_folder(real, homes)
    return real


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


STATE_GITIGNORE = "# Assay's index of this workspace: local state, never to be committed (written by assay)\n*\n"


def make_state_dir(root: Path) -> Path:
    """The workspace's `.assay/`, made on the first write with a `.gitignore` that keeps all of it out of git, as
    pytest and ruff do for their caches: a `git add -A` would commit the index, and the questions asked with it."""
    folder = state_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text(STATE_GITIGNORE)
        except OSError:  # a folder it can write to but not this file in: the index matters more
            pass
    return folder


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


def workspace_id(root: Path) -> str:
    """Stable id for a workspace (used for the Chroma collection name)."""
    return hashlib.sha256(str(root).encode()).hexdigest()[:16]


def collection_name(root: Path) -> str:
    return f"assay_{workspace_id(root)}"


def owns_collection(root: Path, name: str) -> bool:
    """Whether a collection is this workspace's (named for its path, any generation `_g<n>`). A copied or moved
    workspace's manifest names the original's: on a shared Chroma server that one is not the copy's to change."""
    base = collection_name(root)
    return name == base or name.startswith(f"{base}_g")


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

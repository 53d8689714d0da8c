"""Freshness stage: what the index reflects, and which evidence is older than the code.

Cheap on purpose (it runs on every query): `git rev-parse` for HEAD and branch, one `stat` per indexed
file compared with the size, modification and change times the manifest recorded. A file whose modification time
moved but whose bytes did not is reported until the next index run confirms it; one whose change time alone moved
(a chmod, a copied workspace; or a same-size edit that kept its mtime, `cp -p`) is re-hashed to tell which, once per
stat in a process, until the next index run records the new time.
"""

from __future__ import annotations

import os
from pathlib import Path

from assay.stages.core.artifacts import Freshness, IndexManifest
from assay.stages.core.fs_names import nameable, on_disk
from assay.stages.query.git_history import COMMIT_ID, git

GIT_TIMEOUT = 5.0


def _git(root: Path, *args: str) -> str:
    """git's answer, or '' when git is missing, fails or is slow: freshness is a report, never an error."""
    try:
        return git(root, *args, timeout=GIT_TIMEOUT).strip()
    except ValueError:
        return ""


def _read_head(root: Path) -> tuple[str, str] | None:
    """HEAD read from `.git` files directly (no process): a branch's loose or packed ref, or a detached commit.
    None for anything else (worktrees, unusual layouts): the caller asks git then."""
    git_dir = root / ".git"
    try:
        # git writes ref names as UTF-8 bytes whatever the locale: under LC_ALL=C a branch `féature` failed to decode
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if COMMIT_ID.fullmatch(head):
        return head, ""
    if not head.startswith("ref: refs/heads/"):
        return None
    ref = head[5:]
    branch = ref.removeprefix("refs/heads/")
    try:
        # the ref's file named by its UTF-8 bytes: a str path is encoded in the locale's (ASCII) file-name encoding
        with open(os.fsencode(git_dir) + b"/" + ref.encode("utf-8"), encoding="utf-8") as fh:
            return fh.read().strip(), branch
    except OSError:
        pass
    try:
        for line in (git_dir / "packed-refs").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0], branch
    except OSError:
        return None
    return None


def _repository(root: Path) -> Path | None:
    """The folder holding `.git` for this workspace (itself or a parent); None outside any repository."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return folder
    return None


def git_head(root: Path) -> tuple[str, str]:
    """(commit, branch) of the workspace's HEAD; ('', '') outside git or without commits."""
    repo = _repository(root)
    if repo is None:
        return "", ""
    quick = _read_head(repo)
    if quick is not None and COMMIT_ID.fullmatch(quick[0]):
        return quick
    commit = _git(root, "rev-parse", "HEAD")
    if not commit:
        return "", ""
    branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
    return commit, "" if branch == "HEAD" else branch


def _where(base: str, path: str) -> str | Path:
    """The indexed file on disk; a name this locale cannot spell (see `on_disk`) is found by its UTF-8 bytes."""
    return base + path if nameable(path) else on_disk(Path(base), path)


def check(root: Path, manifest: IndexManifest) -> tuple[Freshness, set[str]]:
    """The freshness line's facts, and every indexed path that changed or vanished since."""
    changed: list[str] = []
    gone: list[str] = []
    deleted = 0
    base = str(root) + os.sep
    for path, record in manifest.files.items():
        where = _where(base, path)
        try:
            st = os.stat(where)
        except FileNotFoundError:
            deleted += 1
            gone.append(path)
            continue
        except OSError:
            continue
        if record.changed_on_disk(where, st):
            changed.append(path)
    commit, branch = git_head(root)
    fresh = Freshness(indexed_at=manifest.updated_at, indexed_commit=manifest.git_commit, indexed_branch=manifest.git_branch,
                      head_commit=commit, head_branch=branch, changed=changed[:50], changed_count=len(changed),
                      deleted_count=deleted)
    return fresh, set(changed) | set(gone)

"""Discover stage: walk a workspace, honour ignore rules, and say why each skipped file was skipped.

Ignored folders are pruned before they are entered (node_modules and .git are never walked).
`.gitignore` and `.assayignore` files apply with git's own semantics, at every level, through pathspec.
Directory symlinks are never followed (no loops, no escapes); file symlinks are followed only when
their target stays inside the workspace, and not when the target is indexed itself (the same code twice).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pathspec

from stages.core.artifacts import DiscoveryResult, SkippedFile, SourceFile
from stages.index.languages import language_for, language_from_shebang, uses_tree_sitter

ALWAYS_PRUNED = frozenset(
    {".git", ".hg", ".svn", ".assay", "node_modules", "__pycache__", ".venv", ".tox", ".nox",
     ".mypy_cache", ".pytest_cache", ".ruff_cache", ".idea", ".gradle", ".eggs"}
)
IGNORE_FILES = (".gitignore", ".assayignore")
SNIFF_BYTES = 8192
SHEBANG_BYTES = 128
LOCKFILES = frozenset(
    {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Cargo.lock", "uv.lock", "Pipfile.lock",
     "composer.lock", "Gemfile.lock", "go.sum", "npm-shrinkwrap.json"}
)
DATA_FILE_MAX_BYTES = 256_000  # larger YAML/JSON/TOML... are generated data (tokenizers, fixtures), not knowledge


@dataclass(frozen=True)
class _Rules:
    base: str  # workspace-relative POSIX dir ("" for the root)
    spec: pathspec.PathSpec


def _load_rules(directory: Path, rel_dir: str) -> list[_Rules]:
    rules: list[_Rules] = []
    for name in IGNORE_FILES:
        f = directory / name
        try:
            lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        rules.append(_Rules(rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
    return rules


def _ignored(rel: str, is_dir: bool, stack: list[_Rules]) -> bool:
    """Last matching rule wins across nested ignore files, as in git."""
    verdict = False
    for r in stack:
        if r.base and not rel.startswith(r.base + "/"):
            continue
        sub = rel[len(r.base) + 1 :] if r.base else rel
        result = r.spec.check_file(sub + "/" if is_dir else sub)
        if result.include is not None:
            verdict = bool(result.include)
    return verdict


def root_ignore_check(root: Path) -> Callable[[str], bool]:
    """A check for workspace-relative paths: True when an always-pruned folder or the root's ignore files
    exclude it (the watcher's cheap pre-filter; the index run applies the nested ignore files too)."""
    rules = _load_rules(root, "")

    def ignored(rel: str) -> bool:
        parts = rel.split("/")
        if any(p in ALWAYS_PRUNED for p in parts):
            return True
        return any(_ignored("/".join(parts[: i + 1]), i < len(parts) - 1, rules) for i in range(len(parts)))

    return ignored


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_binary(head: bytes) -> bool:
    return b"\x00" in head


def _is_regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _script_language(path: str) -> str | None:
    """An extensionless file is read only when its `#!` line names an interpreter Assay reads."""
    try:
        with open(path, "rb") as handle:
            return language_from_shebang(handle.read(SHEBANG_BYTES))
    except OSError:
        return None


def discover(root: Path, max_file_bytes: int = 1_000_000) -> DiscoveryResult:
    """List indexable files under `root`. Never raises for a bad file: it is skipped with a reason."""
    files: list[SourceFile] = []
    skipped: list[SkippedFile] = []
    unreadable: list[str] = []
    links: list[tuple[str, Path, str, str]] = []  # (path, file, language, target's path): considered after the walk
    root_rules = _load_rules(root, "")

    def walk(directory: Path, rel_dir: str, stack: list[_Rules]) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(SkippedFile(path=rel_dir or ".", reason="unreadable_dir", detail=str(exc.strerror or exc)))
            unreadable.append(f"{rel_dir}/" if rel_dir else "")  # a prefix: everything below keeps its entities
            return
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                skipped.append(SkippedFile(path=rel, reason="unreadable", detail=str(exc)))
                unreadable.append(rel)
                continue
            if is_dir:
                if entry.name in ALWAYS_PRUNED or _ignored(rel, True, stack):
                    continue
                walk(Path(entry.path), rel, stack + _load_rules(Path(entry.path), rel))
                continue
            if _ignored(rel, False, stack) or entry.name in IGNORE_FILES:
                continue
            if is_link and os.path.isdir(entry.path):
                skipped.append(SkippedFile(path=rel, reason="symlink_dir", detail="directory links are not followed"))
                continue
            target = ""
            if is_link:
                reason, target = _check_link(root, Path(entry.path))
                if reason:
                    skipped.append(SkippedFile(path=rel, reason=reason))
                    continue
            language = language_for(entry.name)
            if language is None and "." not in entry.name and _is_regular(entry):  # never open a FIFO
                language = _script_language(entry.path)
            if language is None:
                skipped.append(SkippedFile(path=rel, reason="unsupported_type"))
                continue
            if entry.name in LOCKFILES:
                skipped.append(SkippedFile(path=rel, reason="lockfile"))
                continue
            if target:
                links.append((rel, Path(entry.path), language, target))
                continue
            _consider(root, rel, Path(entry.path), language)

    def _consider(root: Path, rel: str, path: Path, language: str) -> None:
        try:
            st = path.stat()
        except FileNotFoundError:
            skipped.append(SkippedFile(path=rel, reason="vanished"))
            return
        except OSError as exc:
            skipped.append(SkippedFile(path=rel, reason="unreadable", detail=str(exc)))
            unreadable.append(rel)
            return
        if not stat.S_ISREG(st.st_mode):
            skipped.append(SkippedFile(path=rel, reason="not_regular"))
            return
        if st.st_size > max_file_bytes:
            skipped.append(SkippedFile(path=rel, reason="too_large", detail=f"{st.st_size} bytes > {max_file_bytes}"))
            return
        if not uses_tree_sitter(language) and st.st_size > min(max_file_bytes, DATA_FILE_MAX_BYTES):
            skipped.append(SkippedFile(path=rel, reason="large_data_file", detail=f"{st.st_size} bytes"))
            return
        if st.st_size == 0:
            skipped.append(SkippedFile(path=rel, reason="empty"))
            return
        try:
            data = path.read_bytes()
        except PermissionError:
            unreadable.append(rel)
            skipped.append(SkippedFile(path=rel, reason="unreadable", detail="permission denied"))
            return
        except FileNotFoundError:
            skipped.append(SkippedFile(path=rel, reason="vanished"))
            return
        except OSError as exc:
            unreadable.append(rel)
            skipped.append(SkippedFile(path=rel, reason="unreadable", detail=str(exc)))
            return
        if is_binary(data[:SNIFF_BYTES]):
            skipped.append(SkippedFile(path=rel, reason="binary"))
            return
        files.append(SourceFile(path=rel, language=language, size=len(data), content_hash=file_hash(data), mtime_ns=st.st_mtime_ns))

    walk(root, "", root_rules)
    indexed = {f.path for f in files}
    for rel, path, language, target in links:
        if target in indexed:  # every result would come twice, once per path
            skipped.append(SkippedFile(path=rel, reason="symlink_duplicate", detail=f"the same file as {target}"))
        else:
            _consider(root, rel, path, language)
    return DiscoveryResult(files=files, skipped=skipped, unreadable=unreadable)


def _check_link(root: Path, link: Path) -> tuple[str, str]:
    """Why a file link is refused ('' when it is not), and its target's workspace-relative path."""
    try:
        target = Path(os.path.realpath(link, strict=True))
    except (OSError, RuntimeError):
        return "symlink_broken_or_loop", ""
    if target != root and root not in target.parents:
        return "symlink_outside", ""
    return "", target.relative_to(root).as_posix()

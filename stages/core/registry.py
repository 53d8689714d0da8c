"""Known workspaces, for `list_workspaces`: a small JSON file in ~/.assay (paths only, no content)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from filelock import FileLock, Timeout


def _home_path() -> tuple[str, Path]:
    """ASSAY_HOME as given (empty when unset) and the folder it names, without creating it."""
    raw = os.environ.get("ASSAY_HOME", "").strip()  # empty is unset: `Path("")` was the current folder
    return raw, Path(raw).expanduser().absolute() if raw else Path.home() / ".assay"


def home_folders() -> list[Path]:
    """Assay's per-user homes, real paths, never created: ASSAY_HOME and the default ~/.assay (a test or a tool
    that points ASSAY_HOME elsewhere still keeps the user's models and eval data there). No workspace's state
    folder may be one of them, or `forget_workspace` would delete them."""
    _, base = _home_path()
    return list(dict.fromkeys(Path(os.path.realpath(p)) for p in (base, Path.home() / ".assay")))


def assay_home() -> Path:
    """Per-user state that belongs to no workspace: the workspace list and the no-Prefect GPU lock."""
    raw, base = _home_path()
    if base.exists() and not base.is_dir():
        raise ValueError(f"ASSAY_HOME ({raw}) is not a folder; point it at a folder, or unset it for ~/.assay")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        name = f"ASSAY_HOME ({raw})" if raw else f"{base} (ASSAY_HOME unset)"
        raise ValueError(f"{name} cannot be created ({exc.strerror or type(exc).__name__}); "
                         "point ASSAY_HOME at a writable folder") from exc
    return base


def registry_path() -> Path:
    return assay_home() / "workspaces.json"


class RegistryError(ValueError):
    """The workspace list cannot be read or written; the message names the file and what to do."""


def _damaged(path: Path, why: str) -> RegistryError:
    return RegistryError(f"the workspace list {path} is damaged or unreadable ({why}); fix or delete it "
                         "(the next `assay index` sets it aside and starts a new list)")


def _reason(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]).lower()


def _read(path: Path) -> list[str]:
    """The listed workspaces; a missing or blank file is an empty list. Anything else that is not a JSON list of
    strings is damage, never an empty list: an empty list would be written over it, losing every other entry."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a list saved by an editor that writes a byte-order mark
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:  # a folder, no permission, not UTF-8
        raise _damaged(path, _reason(exc)) from exc
    if not text.strip():
        return []
    try:
        items = json.loads(text)
    except ValueError as exc:
        raise _damaged(path, f"not JSON: {str(exc).splitlines()[0]}") from exc
    if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
        raise _damaged(path, f"not a list of folder paths: {' '.join(text.split())[:40]!r}")
    return items


def _unused_name(path: Path) -> Path:
    """`path`, or `path-1`, `path-2`...: a second set-aside in the same second must not replace the first."""
    n, candidate = 0, path
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def _set_aside(path: Path) -> Path:
    """Move a damaged list out of the way, kept for its owner to recover entries from."""
    aside = _unused_name(path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"))
    try:
        os.replace(path, aside)
    except OSError as exc:
        raise RegistryError(f"the workspace list {path} is damaged or unreadable and cannot be set aside "
                            f"({_reason(exc)}); fix or delete it") from exc
    return aside


def _write(path: Path, items: list[str]) -> None:
    """Replace the list in one step; the temporary file is removed when that fails (one was left per failure)."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(items, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # not a file this call made (a folder of that name): left alone
        raise RegistryError(f"cannot write the workspace list {path} ({_reason(exc)}); make {path.parent} "
                            "writable, or set ASSAY_HOME to a writable folder") from exc


def _update(change: Callable[[list[str]], Iterable[str]]) -> str | None:
    """Apply `change` to the list; a damaged list is set aside first (its entries kept in that file), and the
    returned warning says where. Raises RegistryError when the list cannot be written."""
    path = registry_path()
    lock = FileLock(str(path) + ".lock", timeout=30)
    try:
        lock.acquire()
    except Timeout as exc:
        raise RegistryError(f"the workspace list {path} stayed locked by another Assay process (30 s); run the "
                            "command again") from exc
    except OSError as exc:  # Assay's home is not writable: the lock file cannot be made
        raise RegistryError(f"cannot write the workspace list {path} ({_reason(exc)}); set ASSAY_HOME to a "
                            "writable folder") from exc
    try:
        warning = None
        try:
            items = _read(path)
        except RegistryError as exc:
            aside = _set_aside(path)
            warning = f"{str(exc).split('; ')[0]}: set it aside as {aside.name} and started a new list"
            items = []
        _write(path, sorted(set(change(items))))
        return warning
    finally:
        lock.release()


def register(root: Path) -> None:
    """List a workspace; entries whose folder is gone (each `mv` of a workspace left one) are dropped meanwhile.
    Never fails the index run that calls it: a list it cannot read is set aside, one it cannot write is warned of
    (one line on stderr; the MCP server's stdout is its protocol)."""
    try:
        if str(root) in known():  # every index run registers its workspace: most are already listed
            return
    except ValueError:
        pass  # a damaged list: `_update` sets it aside and says so; no home: it says so
    try:
        warning = _update(lambda items: [*(i for i in items if os.path.lexists(i)), str(root)])
    except ValueError as exc:  # RegistryError, or `assay_home`'s "cannot be created"
        warning = f"{root} is indexed but not listed: {exc}"
    if warning:
        print(f"warning: {warning}", file=sys.stderr, flush=True)


def forget(root: Path) -> str | None:
    """Unlist a workspace; returns a warning when a damaged list was set aside. Raises RegistryError when the list
    cannot be written."""
    return _update(lambda items: [i for i in items if i != str(root)])


def listed_missing(path: str) -> Path | None:
    """The listed workspace `path` names when its folder no longer exists (moved or deleted), else None: resolving
    it as a workspace is refused ("does not exist"), which left it listed for ever."""
    given = Path(os.path.realpath(os.path.expanduser(path)))
    if not str(path).strip() or os.path.lexists(given):
        return None
    try:
        return given if str(given) in known() else None
    except RegistryError:  # a list it cannot read names nothing: the caller says "does not exist"
        return None


def known() -> list[str]:
    """The listed workspaces. Raises RegistryError when the list cannot be read: "none listed" would be false."""
    return sorted(_read(registry_path()))

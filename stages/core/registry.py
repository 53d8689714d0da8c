"""Known workspaces, for `list_workspaces`: a small JSON file in ~/.assay (paths only, no content)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from filelock import FileLock


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


def _update(change) -> list[str]:
    path = registry_path()
    with FileLock(str(path) + ".lock", timeout=30):
        try:
            items = json.loads(path.read_text())
        except (OSError, ValueError):
            items = []
        items = sorted(set(change(items)))
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(items, indent=1))
        os.replace(tmp, path)
        return items


def register(root: Path) -> None:
    """List a workspace; entries whose folder is gone (each `mv` of a workspace left one) are dropped meanwhile."""
    if str(root) not in known():  # every index run registers its workspace: most are already listed
        _update(lambda items: [*(i for i in items if os.path.lexists(i)), str(root)])


def forget(root: Path) -> None:
    _update(lambda items: [i for i in items if i != str(root)])


def listed_missing(path: str) -> Path | None:
    """The listed workspace `path` names when its folder no longer exists (moved or deleted), else None: resolving
    it as a workspace is refused ("does not exist"), which left it listed for ever."""
    given = Path(os.path.realpath(os.path.expanduser(path)))
    if not str(path).strip() or os.path.lexists(given) or str(given) not in known():
        return None
    return given


def known() -> list[str]:
    try:
        return sorted(json.loads(registry_path().read_text()))
    except (OSError, ValueError):
        return []

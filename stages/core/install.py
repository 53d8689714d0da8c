"""Install: write Assay's MCP server entry into the configuration of each agent found on this machine.

Only the `assay` entry is ever written or removed; every other byte of the file (servers, keys, comments,
layout) stays as it was. A file is backed up (`<name>.assay-backup`) before its first edit, and a run that
would write what is already there writes nothing, so `assay install` can be repeated safely. A file that is
not JSON (comments and trailing commas allowed) is skipped and left untouched, with the reason.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from assay.stages.core import jsonc

ENTRY = "assay"


@dataclass(frozen=True)
class Agent:
    name: str
    path: str  # relative to the home folder
    format: str  # mcpServers | vscode | codex
    detect: str  # a file or folder whose presence means the agent is installed


AGENTS: tuple[Agent, ...] = (
    Agent("Claude Code", ".claude.json", "mcpServers", ".claude.json"),
    Agent("Claude Desktop", ".config/Claude/claude_desktop_config.json", "mcpServers", ".config/Claude"),
    Agent("Claude Desktop (macOS)", "Library/Application Support/Claude/claude_desktop_config.json", "mcpServers",
          "Library/Application Support/Claude"),
    Agent("Cursor", ".cursor/mcp.json", "mcpServers", ".cursor"),
    Agent("Windsurf", ".codeium/windsurf/mcp_config.json", "mcpServers", ".codeium/windsurf"),
    Agent("VS Code", ".config/Code/User/mcp.json", "vscode", ".config/Code/User"),
    Agent("VS Code (macOS)", "Library/Application Support/Code/User/mcp.json", "vscode", "Library/Application Support/Code/User"),
    Agent("Codex", ".codex/config.toml", "codex", ".codex"),
)


class InstallAction(BaseModel):
    agent: str
    path: str
    action: str  # added | updated | unchanged | removed | absent | skipped
    backup: str = ""
    reason: str = ""  # why a file was skipped


def server_entry(roots: list[Path], command: str | None = None) -> dict:
    """The stdio server entry: `assay mcp`, limited to the given roots."""
    exe = command or shutil.which("assay") or str(Path(sys.executable).with_name("assay"))
    return {"command": exe, "args": ["mcp"], "env": {"ASSAY_ALLOWED_ROOTS": ":".join(str(r.resolve()) for r in roots)}}


def detected(home: Path) -> list[Agent]:
    return [a for a in AGENTS if (home / a.detect).exists()]


def _toml_value(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _codex_block(entry: dict) -> str:
    lines = [f"[mcp_servers.{ENTRY}]", f"command = {_toml_value(entry['command'])}", f"args = {_toml_value(entry['args'])}", ""]
    lines += [f"[mcp_servers.{ENTRY}.env]"] + [f"{k} = {_toml_value(v)}" for k, v in entry["env"].items()]
    return "\n".join(lines) + "\n"


_CODEX_TABLE = re.compile(rf"^\[mcp_servers\.{ENTRY}(\.[^\]]+)?\]\s*$")


def _codex_without(text: str) -> str:
    """The TOML text with Assay's tables (and only them) removed."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("["):
            skipping = bool(_CODEX_TABLE.match(line.strip()))
        if not skipping:
            out.append(line)
    return "".join(out).rstrip("\n") + ("\n" if out else "")


def _edit(agent: Agent, text: str, entry: dict | None) -> str:
    """The file's new text with Assay's entry set (or removed when `entry` is None)."""
    if agent.format == "codex":
        rest = _codex_without(text)
        return rest if entry is None else (rest + ("\n" if rest.strip() else "") + _codex_block(entry)).lstrip("\n")
    key = "servers" if agent.format == "vscode" else "mcpServers"
    if entry is None:
        return jsonc.remove_member(text, key, ENTRY)
    return jsonc.set_member(text, key, ENTRY, {"type": "stdio", **entry} if agent.format == "vscode" else entry)


def apply(home: Path, entry: dict | None, dry_run: bool = False, agents: list[Agent] | None = None) -> list[InstallAction]:
    """Install (entry) or uninstall (None) for every detected agent; `dry_run` reports without writing."""
    actions: list[InstallAction] = []
    for agent in agents if agents is not None else detected(home):
        path = home / agent.path
        try:
            before = path.read_text(encoding="utf-8") if path.exists() else ""
            after = _edit(agent, before, entry)
        except (OSError, UnicodeDecodeError, jsonc.JsoncError) as exc:
            reason = f"not valid JSON ({exc})" if isinstance(exc, jsonc.JsoncError) else str(exc)
            actions.append(InstallAction(agent=agent.name, path=str(path), action="skipped", reason=reason))
            continue
        had = ENTRY in _servers(agent, before)
        if after == before or (entry is None and not had):
            actions.append(InstallAction(agent=agent.name, path=str(path), action="unchanged" if entry else "absent"))
            continue
        action = "removed" if entry is None else ("updated" if had else "added")
        try:
            backup = "" if dry_run else _write(path, after)
        except OSError as exc:
            actions.append(InstallAction(agent=agent.name, path=str(path), action="skipped", reason=str(exc)))
            continue
        actions.append(InstallAction(agent=agent.name, path=str(path), action=action, backup=backup))
    return actions


def _write(path: Path, text: str) -> str:
    """Write atomically, backing the file up before its first edit; returns the backup's path ("" for a new file).
    A symlinked file (a dotfiles repository's) is written through: the link stays a link."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    backup = ""
    if target.exists():
        copy = target.with_name(target.name + ".assay-backup")
        if not copy.exists():
            shutil.copy2(target, copy)
        backup = str(copy)
    tmp = target.with_name(target.name + ".assay-tmp")
    tmp.write_text(text, encoding="utf-8")
    if target.exists():
        shutil.copymode(target, tmp)  # a private config (0600) stays private
    tmp.replace(target)
    return backup


def _servers(agent: Agent, text: str) -> dict:
    if agent.format == "codex":
        return {ENTRY: True} if any(_CODEX_TABLE.match(line.strip()) for line in text.splitlines()) else {}
    try:
        data = jsonc.loads(text)
    except ValueError:
        return {}
    servers = data.get("servers" if agent.format == "vscode" else "mcpServers", {})
    return servers if isinstance(servers, dict) else {}

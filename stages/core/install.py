"""Install: write Assay's MCP server entry into the configuration of each agent found on this machine.

Only the `assay` entry is ever written or removed; every other byte of the file (servers, keys, comments,
layout, line endings, a UTF-8 BOM) stays as it was. A file is backed up (`<name>.assay-backup`) before its first
edit, and a run that would write what is already there writes nothing, so `assay install` can be repeated safely.
A file is skipped and left untouched, with the reason, when it is not JSON (comments and trailing commas allowed)
or TOML, when the user made it read-only, or when the edit would change anything but Assay's entry (checked by
parsing the file before and after the edit).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from assay.stages.core import jsonc

ENTRY = "assay"
_KEYS = {"mcpServers": "mcpServers", "vscode": "servers", "codex": "mcp_servers"}  # format -> the servers table


class ConfigError(ValueError):
    """The file cannot be edited safely; the message says why, in one line."""


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


def running_command() -> str:
    """The `assay` executable running now, so agents launch this install, not whichever `assay` is first on PATH."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.stem == "assay" and script.is_file():
        return os.path.abspath(script)  # absolute, links kept: a pipx link stays valid across upgrades
    sibling = Path(sys.executable).with_name("assay")  # the entry point of this interpreter's environment
    return str(sibling) if sibling.is_file() else (shutil.which("assay") or str(sibling))


def allowed_roots(roots: list[Path]) -> list[Path]:
    """The roots as absolute folders; a missing one is refused now rather than refusing every later MCP call."""
    out = []
    for root in roots:
        folder = root.expanduser().resolve()
        if not folder.is_dir():
            raise ValueError(f"root {root} is not an existing folder; pass --root with a folder that exists")
        if os.pathsep in str(folder):  # ASSAY_ALLOWED_ROOTS would split it into two roots, neither of them this one
            raise ValueError(f"root {folder} holds {os.pathsep!r}, which separates ASSAY_ALLOWED_ROOTS' folders; pass "
                             "--root with a folder above it whose path has none, or rename the folder")
        out.append(folder)
    return out


def server_entry(roots: list[Path], command: str | None = None) -> dict:
    """The stdio server entry: `assay mcp` (the running executable unless `command` is given), limited to the roots."""
    exe = command or running_command()
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


_HEADER = re.compile(r"^\[\[?[^\[\]]+\]\]?\s*(#.*)?$")  # a stripped table header line, a trailing comment allowed
_CODEX_TABLE = re.compile(  # Assay's table or one of its subtables, keys bare or quoted, spaced or not
    rf"""^\[\s*(?:mcp_servers|"mcp_servers"|'mcp_servers')\s*\.\s*(?:{ENTRY}|"{ENTRY}"|'{ENTRY}')\s*(\.[^\]]*)?\]\s*(#.*)?$""")


def _lines(text: str) -> list[str]:
    """The lines with their breaks (only `\\n` breaks a TOML line; `str.splitlines` would split on more)."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


def _heading(lines: list[str]) -> list[str]:
    """The comment lines (and the blank lines among them) that end a removed table: they head what follows it."""
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return lines[first:]


def _inside_strings(lines: list[str]) -> list[bool]:
    """For each line, whether it begins inside a multi-line (triple-quoted) string: a `[mcp_servers.assay]`
    written inside one (an instructions text, say) is text, not a table header, and must be neither cut nor refused."""
    inside: list[bool] = []
    quote = ""  # the open multi-line string's delimiter
    for line in lines:
        inside.append(bool(quote))
        i = 0
        while i < len(line):
            if quote:
                if quote == '"""' and line[i] == "\\":
                    i += 2
                    continue
                if line.startswith(quote, i):
                    i += 3
                    while line.startswith(quote[0], i):  # up to two quotes may close the string's own text
                        i += 1
                    quote = ""
                    continue
                i += 1
            elif line[i] == "#":
                break
            elif line.startswith(('"""', "'''"), i):
                quote, i = line[i:i + 3], i + 3
            elif line[i] in "\"'":
                i = _string_end(line, i)
            else:
                i += 1
    return inside


def _string_end(line: str, start: int) -> int:
    """The index just past the one-line string that opens at `start` (basic strings have escapes, literal ones not)."""
    i = start + 1
    while i < len(line) and line[i] != line[start]:
        i += 2 if line[start] == '"' and line[i] == "\\" else 1
    return i + 1


def _codex_without(text: str) -> str:
    """The TOML text with Assay's tables (and only them) removed; the comments above the next table are kept."""
    out: list[str] = []
    skipping, pending = False, []  # pending: the comment and blank lines since the removed table's last key
    lines = _lines(text)
    for line, in_string in zip(lines, _inside_strings(lines)):
        bare = line.strip()
        if not in_string and _HEADER.match(bare):
            if skipping and not _CODEX_TABLE.match(bare):
                out += _heading(pending)
            skipping, pending = bool(_CODEX_TABLE.match(bare)), []
        elif skipping:
            pending = pending + [line] if not bare or bare.startswith("#") else []
        if not skipping:
            out.append(line)
    if skipping:
        out += _heading(pending)
    return "".join(out).rstrip("\n") + ("\n" if out else "")


def _codex_edit(text: str, entry: dict | None) -> str:
    """The TOML text with Assay's tables replaced by `entry`'s (or removed when `entry` is None)."""
    rest = _codex_without(text)
    try:
        left = _servers(tomllib.loads(rest), "mcp_servers")
    except tomllib.TOMLDecodeError:
        raise ConfigError("Assay's [mcp_servers.assay] table could not be taken out cleanly") from None
    if ENTRY in left:
        raise ConfigError("mcp_servers.assay is written as an inline table or dotted keys, which install does not edit")
    return rest if entry is None else (rest + ("\n" if rest.strip() else "") + _codex_block(entry)).lstrip("\n")


def _stored(agent: Agent, entry: dict) -> dict:
    """The entry as this agent's file holds it (VS Code wants the transport named)."""
    return {"type": "stdio", **entry} if agent.format == "vscode" else entry


def _edit(agent: Agent, text: str, entry: dict | None) -> str:
    """The file's new text with Assay's entry set (or removed when `entry` is None)."""
    if agent.format == "codex":
        return _codex_edit(text, entry)
    key = _KEYS[agent.format]
    if entry is None:
        return jsonc.remove_member(text, key, ENTRY)
    return jsonc.set_member(text, key, ENTRY, _stored(agent, entry))


def _parse(agent: Agent, text: str) -> dict:
    return tomllib.loads(text) if agent.format == "codex" else jsonc.loads(text)


def _servers(data: dict, key: str) -> dict:
    servers = data.get(key, {})
    return servers if isinstance(servers, dict) else {}


def _others(data: dict, key: str) -> str:
    """The file's data less Assay's entry (an emptied servers table counts as none), compared as canonical JSON
    (so a TOML nan or date compares equal to itself)."""
    servers = data.get(key)
    if isinstance(servers, dict):
        rest = {k: v for k, v in servers.items() if k != ENTRY}
        data = {k: v for k, v in data.items() if k != key} | ({key: rest} if rest else {})
    return json.dumps(data, sort_keys=True, default=str)


def _checked(agent: Agent, before: str, after: str, entry: dict | None) -> str:
    """`after`, once it parses and differs from `before` in Assay's entry alone; any other result is refused,
    so a file is never written into something its agent cannot load."""
    key = _KEYS[agent.format]
    try:
        new = _parse(agent, after)
    except ValueError:
        new = None
    want = None if entry is None else _stored(agent, entry)
    if new is None or _others(new, key) != _others(_parse(agent, before), key) or _servers(new, key).get(ENTRY) != want:
        raise ConfigError(f"Assay's entry could not be {'written' if entry else 'removed'} without changing the rest "
                          "of the file")
    return after


def apply(home: Path, entry: dict | None, dry_run: bool = False, agents: list[Agent] | None = None) -> list[InstallAction]:
    """Install (entry) or uninstall (None) for every detected agent; `dry_run` reports without writing."""
    return [_apply_one(agent, home / agent.path, entry, dry_run)
            for agent in (agents if agents is not None else detected(home))]


def _apply_one(agent: Agent, path: Path, entry: dict | None, dry_run: bool) -> InstallAction:
    """Install or uninstall for one agent's file; every refusal leaves the file as it was."""
    def done(action: str, **more: str) -> InstallAction:
        return InstallAction(agent=agent.name, path=str(path), action=action, **more)

    try:
        before, layout = _decode(path.read_bytes()) if path.exists() else ("", _Layout())
        servers = _servers(_parse(agent, before), _KEYS[agent.format])
        had = ENTRY in servers
        if entry is not None and had:
            entry = _kept_env(entry, servers[ENTRY])
        after = before if entry is None and not had else _checked(agent, before, _edit(agent, before, entry), entry)
    except (OSError, ValueError) as exc:  # JsoncError, TOMLDecodeError, UnicodeDecodeError and ConfigError among them
        return done("skipped", reason=_reason(exc))
    if after == before or (entry is None and not had):
        return done("unchanged" if entry else "absent")
    if _read_only(path):
        return done("skipped", reason="the file is read-only (make it writable, e.g. chmod u+w, to let Assay edit it)")
    # an uninstall that leaves no data but Assay's would back up only Assay's entry (a file install created)
    keep = entry is not None or _others(_parse(agent, after), _KEYS[agent.format]) != "{}"
    try:
        backup = "" if dry_run else _write(path, _encode(after, layout), keep)
    except OSError as exc:
        return done("skipped", reason=str(exc))
    return done("removed" if entry is None else ("updated" if had else "added"), backup=backup)


def _kept_env(entry: dict, existing: object) -> dict:
    """The entry with the variables a user added to Assay's installed entry (`ASSAY_JUDGE`, a key): a re-install
    sets Assay's own (the roots) and keeps theirs, which it used to drop with no backup holding them."""
    old = existing.get("env") if isinstance(existing, dict) else None
    if not isinstance(old, dict):
        return entry
    ours = entry.get("env") or {}
    return {**entry, "env": {**{k: v for k, v in old.items() if k not in ours}, **ours}}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, jsonc.JsoncError):
        return f"not valid JSON ({exc})"
    if isinstance(exc, tomllib.TOMLDecodeError):
        return f"not valid TOML ({exc})"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    return str(exc)


@dataclass(frozen=True)
class _Layout:
    """How a file was saved, so an edit writes it back the same way."""
    bom: bool = False  # a UTF-8 byte order mark (Windows editors write one)
    crlf: bool = False  # every line break is CRLF


def _decode(raw: bytes) -> tuple[str, _Layout]:
    """The text to edit (BOM stripped, CRLF read as LF) and its layout; a file with mixed breaks is edited as found."""
    text = raw.decode("utf-8")
    bom = text.startswith("\ufeff")
    text = text[1:] if bom else text
    crlf = "\r\n" in text and text.count("\n") == text.count("\r\n")
    return (text.replace("\r\n", "\n") if crlf else text), _Layout(bom, crlf)


def _encode(text: str, layout: _Layout) -> bytes:
    return (("\ufeff" if layout.bom else "") + (text.replace("\n", "\r\n") if layout.crlf else text)).encode("utf-8")


def _target(path: Path) -> Path:
    """The file to write: a symlinked config (a dotfiles repository's) is written through, the link stays a link."""
    return path.resolve() if path.is_symlink() else path


def _read_only(path: Path) -> bool:
    """True for a config the user made read-only: the atomic rename would replace it anyway (it needs only the
    folder's write access), so the file's own mode is checked first. No write bit at all counts even for root."""
    target = _target(path)
    return target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222)


def _write(path: Path, data: bytes, backup: bool) -> str:
    """Write atomically, backing the file up before its first edit when `backup`; returns the backup's path ("" when
    there is none)."""
    target = _target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    copy = target.with_name(target.name + ".assay-backup")
    if backup and target.exists() and not copy.exists():
        shutil.copy2(target, copy)
    tmp = target.with_name(target.name + ".assay-tmp")
    tmp.write_bytes(data)
    if target.exists():
        shutil.copymode(target, tmp)  # a private config (0600) stays private
    tmp.replace(target)
    return str(copy) if copy.exists() else ""

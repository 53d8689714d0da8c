"""`assay install` edits agents' configuration files as a careful person would: one entry, every other byte kept."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core import jsonc
from assay.stages.core.install import AGENTS, apply, server_entry

VSCODE = next(a for a in AGENTS if a.name == "VS Code")
CURSOR = next(a for a in AGENTS if a.name == "Cursor")

COMMENTED = """{
  // servers I use every day
  "servers": {
    "git": {"type": "stdio", "command": "git-mcp", "args": ["--url", "http://x//y", "a,}"],},
    /* the old one */
  },
  "inputs": [],
}
"""


def test_jsonc_reads_comments_and_trailing_commas_but_not_broken_text() -> None:
    data = jsonc.loads(COMMENTED)
    assert data == {"servers": {"git": {"type": "stdio", "command": "git-mcp", "args": ["--url", "http://x//y", "a,}"]}},
                    "inputs": []}
    assert jsonc.loads("") == {}
    for broken in ('{"a": 1', '{"a" 1}', '{a: 1}', '[1, 2]', '{"a": 1} {}', '{"a": "x}', '{"a": 1 /* open'):
        with pytest.raises(jsonc.JsoncError):
            jsonc.loads(broken)


def test_set_then_remove_gives_back_the_same_object_and_the_same_bytes_where_servers_had_lines() -> None:
    multi_line = '{\n  "servers": {\n    "a": 1\n  }\n}\n'
    for text in (COMMENTED, multi_line, '{"servers": {"a": 1}}', '{"servers": {}}', '{"theme": "dark"}', ""):
        added = jsonc.set_member(text, "servers", "assay", {"command": "assay", "args": ["mcp"]})
        assert jsonc.loads(added)["servers"]["assay"] == {"command": "assay", "args": ["mcp"]}
        others = {k: v for k, v in jsonc.loads(added).items() if k != "servers"}
        assert others == {k: v for k, v in jsonc.loads(text).items() if k != "servers"}
        updated = jsonc.set_member(added, "servers", "assay", {"command": "other"})
        assert jsonc.loads(updated)["servers"]["assay"] == {"command": "other"}
        assert jsonc.set_member(updated, "servers", "assay", {"command": "other"}) == updated
        removed = jsonc.remove_member(updated, "servers", "assay")
        assert jsonc.loads(removed) == {**jsonc.loads(text), "servers": jsonc.loads(text).get("servers", {})}
        if text in (COMMENTED, multi_line):  # laid out one member a line, as agents write them
            assert removed == text


def test_install_keeps_a_vs_code_files_comments_and_uninstall_restores_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / VSCODE.path
    config.parent.mkdir(parents=True)
    config.write_text(COMMENTED)
    entry = server_entry([tmp_path], command="/usr/bin/assay")
    assert [a.action for a in apply(home, entry, agents=[VSCODE])] == ["added"]
    text = config.read_text()
    assert "// servers I use every day" in text and "/* the old one */" in text
    assert jsonc.loads(text)["servers"]["assay"]["type"] == "stdio"
    assert [a.action for a in apply(home, entry, agents=[VSCODE])] == ["unchanged"]
    assert [a.action for a in apply(home, None, agents=[VSCODE])] == ["removed"]
    assert config.read_text() == COMMENTED


def test_a_broken_file_is_skipped_untouched_in_one_line_and_the_others_are_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / CURSOR.path).parent.mkdir(parents=True)
    (home / CURSOR.path).write_text('{"mcpServers": {"x": {"command": "y"}}')  # a brace short
    (home / VSCODE.path).parent.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    result = CliRunner().invoke(app, ["install", "--root", str(tmp_path)])
    assert result.exit_code == 1
    skipped = [line for line in result.output.splitlines() if ": skipped " in line]
    assert len(skipped) == 1 and "Cursor" in skipped[0] and "not valid JSON" in skipped[0] and "Traceback" not in result.output
    assert (home / CURSOR.path).read_text() == '{"mcpServers": {"x": {"command": "y"}}'
    assert not (home / (CURSOR.path + ".assay-backup")).exists()
    assert "assay" in json.loads((home / VSCODE.path).read_text())["servers"]


def test_a_symlinked_private_config_stays_a_private_symlink(tmp_path: Path) -> None:
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles" / "cursor-mcp.json"
    dotfiles.parent.mkdir(parents=True)
    dotfiles.write_text('{"mcpServers": {"x": {"command": "y", "env": {"TOKEN": "secret"}}}}')
    os.chmod(dotfiles, 0o600)
    (home / CURSOR.path).parent.mkdir(parents=True)
    (home / CURSOR.path).symlink_to(dotfiles)
    assert [a.action for a in apply(home, server_entry([tmp_path], command="/usr/bin/assay"), agents=[CURSOR])] == ["added"]
    assert (home / CURSOR.path).is_symlink()
    assert "assay" in json.loads(dotfiles.read_text())["mcpServers"]
    assert stat.S_IMODE(dotfiles.stat().st_mode) == 0o600

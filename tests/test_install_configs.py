"""`assay install`/`uninstall` on agent configs as people write them: hand-written TOML, read-only files, CRLF and
BOM files, comments next to Assay's entry. Every test works in a throwaway HOME."""

from __future__ import annotations

import os
import stat
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core import jsonc
from assay.stages.core.install import AGENTS, apply, server_entry

CODEX = next(a for a in AGENTS if a.name == "Codex")
CURSOR = next(a for a in AGENTS if a.name == "Cursor")
VSCODE = next(a for a in AGENTS if a.name == "VS Code")
DESKTOP = next(a for a in AGENTS if a.name == "Claude Desktop")


def _config(home: Path, agent, content: bytes | str | None = None) -> Path:
    path = home / agent.path
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is not None:
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _entry(tmp_path: Path) -> dict:
    return server_entry([tmp_path], command="/new/assay")


@pytest.mark.parametrize("form", [
    '[mcp_servers.assay]  # added by hand\ncommand = "/old/assay"\nargs = ["mcp"]\n',
    '[mcp_servers."assay"]\ncommand = "/old/assay"\n\n[mcp_servers."assay".env]\nX = "1"\n',
    "[ mcp_servers . 'assay' ]\ncommand = \"/old/assay\"\n",
])
def test_a_hand_written_codex_table_is_updated_not_declared_twice(tmp_path: Path, form: str) -> None:
    path = _config(tmp_path, CODEX, 'model = "o3"\n\n' + form + '\n[mcp_servers.github]\ncommand = "gh"\n')
    assert [a.action for a in apply(tmp_path, _entry(tmp_path), agents=[CODEX])] == ["updated"]
    data = tomllib.loads(path.read_text())
    assert data["mcp_servers"]["assay"]["command"] == "/new/assay"
    assert data["mcp_servers"]["assay"]["env"].get("X", "1") == "1"  # a variable the user added is kept
    assert data["model"] == "o3" and data["mcp_servers"]["github"] == {"command": "gh"}
    assert path.read_text().count("[mcp_servers.assay") == 2 and "/old/" not in path.read_text()  # table + env, once


@pytest.mark.parametrize("text", [
    '[mcp_servers]\nassay = { command = "/old/assay", args = ["mcp"] }\n',  # inline table
    'mcp_servers.assay.command = "/old/assay"\n',  # dotted keys
    'mcp_servers = { github = { command = "gh" } }\n',  # an inline servers table cannot take Assay's table
])
def test_a_codex_file_install_cannot_edit_safely_is_skipped_byte_for_byte(tmp_path: Path, text: str) -> None:
    path = _config(tmp_path, CODEX, text)
    for entry in (_entry(tmp_path), None):
        actions = apply(tmp_path, entry, agents=[CODEX])
        if entry is None and "assay" not in text:
            assert [a.action for a in actions] == ["absent"]
            continue
        assert [a.action for a in actions] == ["skipped"] and "\n" not in actions[0].reason
        assert path.read_text() == text
        assert not path.with_name(path.name + ".assay-backup").exists()


@pytest.mark.parametrize("text", ['model = "o3\n', '[mcp_servers.assay]\ncommand = "/a"\n[mcp_servers.assay]\ncommand = "/b"\n'])
def test_a_broken_toml_file_is_named_as_such_and_left_alone(tmp_path: Path, text: str) -> None:
    path = _config(tmp_path, CODEX, text)
    for entry in (_entry(tmp_path), None):
        (action,) = apply(tmp_path, entry, agents=[CODEX])
        assert action.action == "skipped" and action.reason.startswith("not valid TOML") and path.read_text() == text


def test_a_read_only_config_is_refused_and_left_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    text = '{\n  "mcpServers": {\n    "github": {"command": "gh-mcp"}\n  }\n}\n'
    path = _config(home, CURSOR, text)
    os.chmod(path, 0o444)
    monkeypatch.setenv("HOME", str(home))
    for args in (["install", "--root", str(tmp_path), "--dry-run"], ["install", "--root", str(tmp_path)]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1 and "Cursor: skipped" in result.output and "read-only" in result.output
    assert path.read_text() == text and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert not path.with_name(path.name + ".assay-backup").exists()
    os.chmod(path, 0o644)
    assert [a.action for a in apply(home, _entry(tmp_path), agents=[CURSOR])] == ["added"]
    os.chmod(path, 0o444)
    assert [a.action for a in apply(home, None, agents=[CURSOR])] == ["skipped"]
    assert "assay" in jsonc.loads(path.read_text())["mcpServers"]


def test_the_entry_names_the_running_assay_not_the_first_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decoy, mine = tmp_path / "decoy" / "assay", tmp_path / "venv" / "bin" / "assay"
    for exe in (decoy, mine):
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{decoy.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(sys, "argv", [str(mine), "install"])
    assert server_entry([tmp_path])["command"] == str(mine)
    assert server_entry([tmp_path], command="/given/assay")["command"] == "/given/assay"
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/pytest"])  # not the entry point: the interpreter's sibling
    monkeypatch.setattr(sys, "executable", str(mine.with_name("python")))
    assert server_entry([tmp_path])["command"] == str(mine)


def test_the_cli_registers_the_running_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, mine = tmp_path / "home", tmp_path / "venv" / "bin" / "assay"
    mine.parent.mkdir(parents=True)
    mine.write_text("#!/bin/sh\n")
    _config(home, CURSOR, "{}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(sys, "argv", [str(mine), "install"])
    assert CliRunner().invoke(app, ["install", "--root", str(tmp_path)]).exit_code == 0
    assert jsonc.loads((home / CURSOR.path).read_text())["mcpServers"]["assay"]["command"] == str(mine)


@pytest.mark.parametrize("before, after", [
    ('{\n  "mcpServers": {\n    "github": {"command": "gh"}, // github: keep this comment\n'
     '    "assay": {"command": "/old/assay"}\n  }\n}\n',
     '{\n  "mcpServers": {\n    "github": {"command": "gh"} // github: keep this comment\n  }\n}\n'),
    ('{\n  "mcpServers": {\n    "github": {"command": "gh"},\n    // the last one\n    "assay": {"command": "a"}\n  }\n}\n',
     '{\n  "mcpServers": {\n    "github": {"command": "gh"}\n    // the last one\n  }\n}\n'),
    ('{"mcpServers": {"github": 1, /* keep */ "assay": 2}}', '{"mcpServers": {"github": 1 /* keep */ }}'),
    ('{"mcpServers": {"github": 1, "assay": 2}}', '{"mcpServers": {"github": 1}}'),
])
def test_uninstall_keeps_a_comment_before_the_last_member(before: str, after: str) -> None:
    assert jsonc.remove_member(before, "mcpServers", "assay") == after
    assert "assay" not in jsonc.loads(after)["mcpServers"]


def test_codex_uninstall_keeps_the_comment_that_heads_the_next_table(tmp_path: Path) -> None:
    path = _config(tmp_path, CODEX, '[mcp_servers.assay]\ncommand = "/old/assay"\nargs = ["mcp"]\n\n'
                                    '# my github server, keep this comment\n[mcp_servers.github]\ncommand = "gh"\n')
    assert [a.action for a in apply(tmp_path, None, agents=[CODEX])] == ["removed"]
    assert path.read_text() == '# my github server, keep this comment\n[mcp_servers.github]\ncommand = "gh"\n'


def test_codex_install_then_uninstall_gives_back_the_same_bytes(tmp_path: Path) -> None:
    text = 'model = "o3"\n\n# servers\n[mcp_servers.github]\ncommand = "gh"\n# the end\n'
    path = _config(tmp_path, CODEX, text)
    apply(tmp_path, _entry(tmp_path), agents=[CODEX])
    assert tomllib.loads(path.read_text())["mcp_servers"]["assay"]["command"] == "/new/assay"
    apply(tmp_path, None, agents=[CODEX])
    assert path.read_text() == text


@pytest.mark.parametrize("agent, raw", [
    (VSCODE, b'{\r\n  "servers": {\r\n    "x": {"command": "x"}\r\n  }\r\n}\r\n'),
    (CURSOR, b'\xef\xbb\xbf{\r\n  "mcpServers": {\r\n    "x": {"command": "x"} // mine\r\n  }\r\n}\r\n'),
    (DESKTOP, b'\xef\xbb\xbf{\n  "mcpServers": {\n    "x": {"command": "x"}\n  }\n}\n'),
    (CODEX, b'\xef\xbb\xbfmodel = "o3"\r\n\r\n[mcp_servers.x]\r\ncommand = "x"\r\n'),
])
def test_crlf_and_bom_files_keep_their_layout_through_install_and_uninstall(tmp_path: Path, agent, raw: bytes) -> None:
    path = _config(tmp_path, agent, raw)
    assert [a.action for a in apply(tmp_path, _entry(tmp_path), agents=[agent])] == ["added"]
    installed = path.read_bytes()
    assert installed.startswith(b"\xef\xbb\xbf") == raw.startswith(b"\xef\xbb\xbf")
    if b"\r\n" in raw:
        assert installed.count(b"\n") == installed.count(b"\r\n")
    text = installed.decode("utf-8-sig")
    servers = tomllib.loads(text)["mcp_servers"] if agent is CODEX else jsonc.loads(text)[
        "servers" if agent is VSCODE else "mcpServers"]
    assert servers["assay"]["command"] == "/new/assay"
    assert [a.action for a in apply(tmp_path, None, agents=[agent])] == ["removed"]
    assert path.read_bytes() == raw


@pytest.mark.parametrize("agent", [DESKTOP, CODEX])
def test_uninstall_from_a_file_install_created_leaves_no_backup_holding_assay(tmp_path: Path, agent) -> None:
    path = _config(tmp_path, agent)
    assert [a.action for a in apply(tmp_path, _entry(tmp_path), agents=[agent])] == ["added"]
    (removed,) = apply(tmp_path, None, agents=[agent])
    backup = path.with_name(path.name + ".assay-backup")
    assert removed.action == "removed" and removed.backup == "" and not backup.exists()
    text = path.read_text()
    assert "assay" not in (tomllib.loads(text) if agent is CODEX else jsonc.loads(text)).get("mcpServers", {})


def test_uninstall_backs_up_a_file_with_the_users_data_before_its_first_edit(tmp_path: Path) -> None:
    text = '{"mcpServers": {"github": {"command": "gh"}, "assay": {"command": "a"}}}'
    path = _config(tmp_path, CURSOR, text)
    (removed,) = apply(tmp_path, None, agents=[CURSOR])
    assert removed.backup and Path(removed.backup).read_text() == text
    assert '"github"' in path.read_text() and '"assay"' not in path.read_text()


def test_a_root_that_does_not_exist_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    path = _config(home, CURSOR, "{}")
    monkeypatch.setenv("HOME", str(home))
    result = CliRunner().invoke(app, ["install", "--root", str(tmp_path / "scr")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [f"error: root {tmp_path / 'scr'} is not an existing folder; "
                                                  "pass --root with a folder that exists"]
    assert path.read_text() == "{}"


@pytest.mark.parametrize("agent", [CURSOR, VSCODE, CODEX])
def test_a_reinstall_keeps_the_variables_a_user_added_to_assays_entry(tmp_path: Path, agent) -> None:
    """A second `assay install` rewrote Assay's entry whole and dropped the user's ASSAY_JUDGE, with no backup."""
    path = _config(tmp_path, agent)
    apply(tmp_path, server_entry([tmp_path / "old"], command="/old/assay"), agents=[agent])
    text = path.read_text().replace('"ASSAY_ALLOWED_ROOTS"', '"ASSAY_JUDGE": "none", "ASSAY_ALLOWED_ROOTS"') \
        if agent is not CODEX else path.read_text() + 'ASSAY_JUDGE = "none"\n'
    path.write_text(text)
    (action,) = apply(tmp_path, _entry(tmp_path), agents=[agent])
    data = tomllib.loads(path.read_text()) if agent is CODEX else jsonc.loads(path.read_text())
    env = (data["mcp_servers"] if agent is CODEX else data["servers" if agent is VSCODE else "mcpServers"])["assay"]["env"]
    assert action.action == "updated" and env == {"ASSAY_JUDGE": "none", "ASSAY_ALLOWED_ROOTS": str(tmp_path)}

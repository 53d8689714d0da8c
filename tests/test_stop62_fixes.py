"""Stop 62's own fixes: a setting's error reads the same from every door, and a refused read under `.assay/` is
worded as a read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.stages.core.config import env_setting


def test_a_long_bad_mode_is_named_and_cut_like_every_other_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_MODE", "x" * 300)
    with pytest.raises(ValueError) as raised:
        env_setting("mode")
    said = str(raised.value)
    assert said.startswith("ASSAY_MODE: Input should be 'local', 'hybrid' or 'cloud' (got 'xxx")
    assert len(said) < 160, said


def _as_unprivileged(code: str) -> list[str]:
    """A python command run without root's permission overrides (root reads everything), so a 0700 folder refuses."""
    command = [sys.executable, "-c", code]
    if os.geteuid() != 0:
        return command
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip("needs capsh to drop root's read override")
    quoted = " ".join("'" + part.replace("'", "'\\''") + "'" for part in command)
    return [capsh, "--drop=cap_dac_override,cap_dac_read_search,cap_fowner", "--", "-c", quoted]


def _one_line_after(opening: str) -> str:
    """What `one_line` says of the OSError `opening` (a Python expression) raises, run without root's overrides."""
    code = ("from assay.stages.core.errors import one_line\n"
            f"try:\n    {opening}\nexcept OSError as exc:\n    print(one_line(exc))\nelse:\n    print('no error')\n")
    return subprocess.run(_as_unprivileged(code), capture_output=True, text=True, timeout=60).stdout


def test_a_refused_read_under_assay_is_worded_as_a_read_not_a_write(tmp_path: Path) -> None:
    lexical = tmp_path / "ws" / ".assay" / "lexical"
    lexical.mkdir(parents=True)
    (lexical / "ids.json").write_text("[]")
    lexical.chmod(0o700)
    os.chown(lexical, 65534, 65534) if os.geteuid() == 0 else lexical.chmod(0o000)
    try:
        said = _one_line_after(f"open({str(lexical / 'ids.json')!r}).read()")
    finally:
        if os.geteuid() != 0:
            lexical.chmod(0o700)
    assert said.startswith(f"cannot read the index file {lexical / 'ids.json'} (permission denied)"), said
    assert "cannot write" not in said


def test_a_refused_write_under_assay_still_says_write(tmp_path: Path) -> None:
    state = tmp_path / "ws" / ".assay"
    state.mkdir(parents=True)
    os.chown(state, 65534, 65534) if os.geteuid() == 0 else None
    state.chmod(0o555)
    try:
        said = _one_line_after(f"open({str(state / 'new.json')!r}, 'w')")
    finally:
        state.chmod(0o755)
    assert said.startswith(f"cannot write the index at {state} (permission denied)"), said


def test_a_watch_run_that_re_indexed_everything_says_why() -> None:
    from assay.flows.cli import watch_line
    from assay.stages.core.artifacts import IndexReport

    report = IndexReport.model_construct(files_parsed=120, entities_total=900,
                                         rebuild_reason="the parser changed (version 30 to 38): re-indexing everything")
    said = watch_line(["(what changed before the watch began)"], report, None)
    assert said.endswith("re-indexed 120 file(s), 900 entities (full re-index: the parser changed (version 30 to 38): "
                         "re-indexing everything)"), said
    quiet = IndexReport.model_construct(files_parsed=1, entities_total=900, rebuild_reason="")
    assert "full re-index" not in watch_line(["a.py"], quiet, None)


def test_status_names_skipped_files_and_an_older_parsers_index(project: Path) -> None:
    import json

    from typer.testing import CliRunner

    from assay.flows.cli import app
    from assay.flows.index import run_index
    from assay.stages.core.config import Settings

    (project / "blob.py").write_bytes(b"\x00\x01\x02 not text")
    run_index(str(project), Settings(embedder="static"))
    said = CliRunner().invoke(app, ["status", str(project)]).output
    assert "skipped by the last run: binary 1 (blob.py)" in said, said
    assert "parser:" not in said
    manifest = project / ".assay" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["parser"] = 1
    manifest.write_text(json.dumps(data))
    said = CliRunner().invoke(app, ["status", str(project)]).output
    assert "parser: the index was built by parser version 1" in said and "re-indexes everything" in said, said
    shown = json.loads(CliRunner().invoke(app, ["status", str(project), "--json"]).output)
    assert shown["parser"] == 1 and shown["parser_current"] is False


@pytest.mark.parametrize("quote", ['"""', "'''"])
def test_a_codex_string_that_holds_assays_table_header_is_text_not_a_table(tmp_path: Path, quote: str) -> None:
    import tomllib

    from assay.stages.core.install import AGENTS, apply, server_entry

    codex = next(a for a in AGENTS if a.name == "Codex")
    text = (f'model = "o3"\ninstructions = {quote}\nRegister it like this:\n[mcp_servers.assay]\ncommand = "x"\n{quote}\n'
            '\n[mcp_servers.github]\ncommand = "gh"\n')
    path = tmp_path / codex.path
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert [a.action for a in apply(tmp_path, server_entry([tmp_path], command="/new/assay"), agents=[codex])] == ["added"]
    data = tomllib.loads(path.read_text())
    assert data["instructions"] == tomllib.loads(text)["instructions"]
    assert data["mcp_servers"]["assay"]["command"] == "/new/assay" and data["mcp_servers"]["github"] == {"command": "gh"}
    assert [a.action for a in apply(tmp_path, None, agents=[codex])] == ["removed"]
    assert path.read_text() == text

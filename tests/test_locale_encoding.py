"""Assay under a locale that is not UTF-8 (a CI container with LC_ALL=C and PYTHONUTF8=0, a Latin-1 host): its own
state files are UTF-8 whatever the locale, and names indexed under one locale stay indexed under another.

Each command runs as a real process: the locale decides Python's encodings at start-up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CODE = 'def größe(maß):\n    """Berechnet die Größe für Köln."""\n    return maß * 2\n'
GREETING = 'def gruss():\n    """Sagt Grüß Gott."""\n    return "hi"\n'


def _env(**locale: str) -> dict[str, str]:
    """The test process's environment under another locale (PYTHONIOENCODING unset: the locale decides)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LC_") and k not in ("LANG", "LOCPATH", "PYTHONIOENCODING", "PYTHONUTF8")}
    env.update(ASSAY_EMBEDDER="static", ASSAY_ORCHESTRATION="direct", **locale)
    return env


ASCII = _env(LC_ALL="C", LANG="C", PYTHONUTF8="0")  # Python's file-name encoding is ASCII here
UTF8 = _env(LC_ALL="C.UTF-8", LANG="C.UTF-8")


def _assay(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run([sys.executable, "-m", "assay.flows.cli", *args], capture_output=True, env=env, timeout=300)
    assert done.returncode == 0, (args, done.stderr.decode("utf-8", "replace")[-2000:])
    return done


def _json(env: dict[str, str], *args: str) -> dict:
    return json.loads(_assay(env, *args, "--json").stdout)


def _workspace(tmp_path: Path, name: str = "grüße.py") -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CODE, encoding="utf-8")
    (root / name).write_text(GREETING, encoding="utf-8")
    return root


def _git_on_branch(root: Path, branch: str) -> None:
    git = ["git", "-C", str(root), "-c", "user.email=a@b", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "-b", branch, str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)


def test_an_index_built_under_utf8_serves_every_command_under_an_ascii_locale(tmp_path: Path) -> None:
    """The manifest is UTF-8: read in the locale's ASCII it was "damaged; run `assay index --rebuild`", and the
    rebuild dropped the non-ASCII-named file. The name it cannot spell now is kept, not removed."""
    root = _workspace(tmp_path)
    _json(UTF8, "index", str(root))

    assert _json(ASCII, "status", str(root))["files"] == 2
    hits = _json(ASCII, "search", "gruss", str(root))["results"]
    assert hits[0]["file"] == "grüße.py" and hits[0]["entity"] == "gruss"
    _json(ASCII, "ask", "what does gruss return", str(root))
    for _ in range(2):
        report = _json(ASCII, "index", str(root))
        assert (report["files_parsed"], report["files_removed"], report["kept_unreadable"]) == (0, 0, 1)

    back = _json(UTF8, "index", str(root))
    assert (back["files_parsed"], back["files_removed"], back["files_unchanged"]) == (0, 0, 2)
    assert _json(UTF8, "status", str(root))["entities"] == 4


def test_an_ascii_locale_indexes_and_reindexes_non_ascii_code_on_a_non_ascii_branch(tmp_path: Path) -> None:
    """All under LC_ALL=C: the second run re-parses and removes nothing, and queries read the branch from `.git`
    (UTF-8 bytes, which the ASCII locale failed to decode in every search)."""
    root = _workspace(tmp_path)
    _git_on_branch(root, "féature")

    first = _json(ASCII, "index", str(root))
    assert first["files_parsed"] == 1  # calc.py; the UTF-8 name is skipped with a reason (the locale's, not the file's)
    again = _json(ASCII, "index", str(root))
    assert (again["files_parsed"], again["files_removed"], again["files_unchanged"]) == (0, 0, 1)

    status = _json(ASCII, "status", str(root))
    assert (status["files"], status["entities"]) == (1, 2)
    found = _json(ASCII, "search", "Berechnet Koln", str(root))
    assert found["results"][0]["entity"] == "größe"
    assert found["freshness"]["head_branch"] == "féature"
    text = _assay(ASCII, "search", "Berechnet", str(root)).stdout.decode("utf-8")
    assert "calc.py:1-3 [größe]" in text


@pytest.fixture(scope="module")
def latin1_locale(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A real ISO-8859-1 locale built under the test folder (LOCPATH), so nothing system-wide changes."""
    if shutil.which("localedef") is None:
        pytest.skip("localedef is not installed")
    folder = tmp_path_factory.mktemp("locales")
    made = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(folder / "en_US.ISO-8859-1")],
                          capture_output=True)
    if not (folder / "en_US.ISO-8859-1").is_dir():
        pytest.skip(f"cannot build an ISO-8859-1 locale: {made.stderr.decode(errors='replace')[-200:]}")
    return {"LOCPATH": str(folder), "LC_ALL": "en_US.ISO-8859-1", "LANG": "en_US.ISO-8859-1"}


def test_an_unchanged_workspace_under_latin1_reparses_and_removes_nothing(tmp_path: Path,
                                                                          latin1_locale: dict[str, str]) -> None:
    """Read back in Latin-1, the manifest's UTF-8 names were other names each run: the file was re-parsed and
    "1 removed" on every unchanged run, and the manifest gathered layers of mojibake."""
    root = _workspace(tmp_path, "ünï.py")  # `ß` in UTF-8 holds byte 0x9f, a control character read as Latin-1
    env = _env(**latin1_locale)
    first = _json(env, "index", str(root))
    assert first["files_parsed"] == 2
    manifest = (root / ".assay" / "manifest.json").read_bytes()
    for _ in range(2):
        report = _json(env, "index", str(root))
        assert (report["files_parsed"], report["files_removed"], report["files_unchanged"]) == (0, 0, 2)
    assert json.loads(manifest)["files"].keys() == json.loads((root / ".assay" / "manifest.json").read_bytes())["files"].keys()
    assert {r["entity"] for r in _json(env, "search", "gruss", str(root))["results"]} >= {"gruss"}

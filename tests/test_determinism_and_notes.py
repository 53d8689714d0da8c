"""Sweep 3 fixes: a repeated brief correction is kept once; git's "dubious ownership" refusal is named as such."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from assay.stages.query import brief, git_history


def test_same_correction_twice_is_kept_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(brief, "state_dir", lambda root: tmp_path / ".assay")
    brief.add_correction(tmp_path, "Tests run with tox")
    brief.add_correction(tmp_path, "Tests run with tox")
    brief.add_correction(tmp_path, "Tests run with nox\nnot tox")
    brief.add_correction(tmp_path, "Tests run with nox")  # the first line of another item is a new item
    text = (tmp_path / ".assay" / brief.CORRECTIONS_FILE).read_text(encoding="utf-8")
    assert text.count("- Tests run with tox\n") == 1
    assert text.count("- Tests run with nox\n") == 2


def test_dubious_ownership_names_gits_remedy(tmp_path: Path, monkeypatch) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")  # git's own switch: the repository reads as another user's
    with pytest.raises(ValueError) as err:
        git_history.verify_revision(tmp_path, "HEAD")
    message = str(err.value)
    assert "dubious ownership" in message and f"git config --global --add safe.directory {tmp_path}" in message
    assert "no commits" not in message

"""Freshness with a real git repository: stale markers, branch switches, changed symbols, history, the watcher."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.flows.watch import watch_workspace
from assay.stages.core.config import Settings
from assay.stages.index.store import load_manifest
from assay.stages.query.git_history import NotAGitRepository
from assay.stages.query.git_questions import entity_history, workspace_changed
from assay.stages.query.retrieve import search

SETTINGS = Settings(embedder="static", watch_debounce_ms=300)
APP = "def parse_config(path):\n    \"\"\"Read the config file.\"\"\"\n    return open(path).read()\n\n\ndef render_page(title):\n    return f'<h1>{title}</h1>'\n"
UTIL = "def slugify(text):\n    return text.lower().replace(' ', '-')\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    (root / ".gitignore").write_text(".assay/\n")
    (root / "app.py").write_text(APP)
    (root / "util.py").write_text(UTIL)
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    return root


def test_report_says_what_the_index_reflects_and_marks_stale_passages(repo: Path) -> None:
    run_index(str(repo), SETTINGS)
    head = git(repo, "rev-parse", "HEAD")
    report = run_query(str(repo), "How is the config file read by parse_config?", SETTINGS)
    assert report.freshness is not None and report.freshness.indexed_commit == head and report.freshness.head_branch == "main"
    assert f"index of {head[:10]} (main)" in report.text and "0 file(s) changed since" in report.text
    assert "STALE" not in report.text
    (repo / "app.py").write_text(APP + "\n\ndef parse_config_strict(path):\n    return parse_config(path).strip()\n")
    stale = run_query(str(repo), "How is the config file read by parse_config?", SETTINGS)
    assert "1 file(s) changed since" in stale.text
    assert any(rp.candidate.stale and rp.candidate.file == "app.py" for rp in stale.selection.included)
    assert "STALE (file changed since indexing)" in stale.text and "freshness: " in stale.text
    found = search(repo, "parse_config", SETTINGS, k=3)
    assert found.freshness.changed == ["app.py"] and found.candidates[0].stale
    run_index(str(repo), SETTINGS)
    again = run_query(str(repo), "How is the config file read by parse_config?", SETTINGS)
    assert "STALE" not in again.text and "0 file(s) changed since" in again.text


def test_branch_switch_changes_commit_and_staleness_and_reuses_vectors(repo: Path) -> None:
    first = run_index(str(repo), SETTINGS)
    assert first.embed_cached == 0
    git(repo, "checkout", "-qb", "feature")
    (repo / "util.py").write_text(UTIL + "\n\ndef titlecase(text):\n    return text.title()\n")
    git(repo, "commit", "-qam", "titlecase")
    feature = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    run_index(str(repo), SETTINGS)
    git(repo, "checkout", "-q", "feature")
    moved = run_query(str(repo), "how is text turned into a slug", SETTINGS)
    assert moved.freshness.head_commit == feature and moved.freshness.head_moved
    assert "HEAD is now" in moved.text and "1 file(s) changed since" in moved.text
    on_feature = run_index(str(repo), SETTINGS)
    assert on_feature.files_parsed == 1
    after = run_query(str(repo), "how is text turned into a slug", SETTINGS)
    assert after.freshness.indexed_commit == feature and not after.freshness.head_moved and after.freshness.indexed_branch == "feature"
    git(repo, "checkout", "-q", "main")
    back = run_index(str(repo), SETTINGS)
    assert back.files_parsed == 1 and back.entities_embedded >= 1 and back.embed_cached == back.entities_embedded


def test_changed_symbols_on_a_two_commit_history_and_history(repo: Path) -> None:
    (repo / "app.py").write_text(APP.replace("return f'<h1>{title}</h1>'", "return f'<h2>{title}</h2>'"))
    (repo / "util.py").write_text(UTIL + "\n\ndef titlecase(text):\n    return text.title()\n")
    git(repo, "commit", "-qam", "second")
    run_index(str(repo), SETTINGS)
    res = workspace_changed(repo, "HEAD~1")
    assert {(t.entity, t.file) for t in res.entities} == {("render_page", "app.py"), ("titlecase", "util.py")}
    assert workspace_changed(repo, "HEAD").entities == []
    (repo / "util.py").write_text(UTIL.replace("lower()", "casefold()") + "\n\ndef titlecase(text):\n    return text.title()\n")
    assert [t.entity for t in workspace_changed(repo, "HEAD").entities] == ["slugify"]  # uncommitted edits count
    hist = entity_history(repo, "render_page")
    assert [c.subject for c in hist.commits] == ["second", "first"]


def test_without_git_the_tools_say_so_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(UTIL)
    run_index(str(tmp_path), SETTINGS)
    with pytest.raises(NotAGitRepository, match="not a git repository"):
        workspace_changed(tmp_path, "HEAD")
    assert load_manifest(tmp_path).git_commit == ""


def test_watcher_reindexes_only_the_edited_file(repo: Path) -> None:
    run_index(str(repo), SETTINGS)
    before = load_manifest(repo).files["util.py"].content_hash
    runs: list[tuple[list[str], int]] = []
    stop = threading.Event()
    thread = threading.Thread(target=watch_workspace, args=(repo, SETTINGS, stop,
                                                            lambda changed, report, error: runs.append((changed, report.files_parsed if report else -1))))
    thread.start()
    try:
        time.sleep(0.5)  # let the watcher register before the edit
        (repo / "util.py").write_text(UTIL + "\n\ndef dashes(text):\n    return text.replace(' ', '-')\n")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and load_manifest(repo).files["util.py"].content_hash == before:
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert load_manifest(repo).files["util.py"].content_hash != before
    assert runs and runs[0] == (["util.py"], 1)


def test_the_index_stays_out_of_git_without_the_user_ignoring_it(tmp_path: Path) -> None:
    """`.assay/` carries its own `.gitignore` (as pytest's and ruff's caches do): a `git add -A` after `assay index`
    and `assay ask` commits none of the index, nor the questions asked."""
    root = tmp_path / "plain"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text(APP)
    run_index(str(root), SETTINGS)
    run_query(str(root), "How is the config file read by parse_config?", SETTINGS)
    assert (root / ".assay" / "judgments").is_dir()  # the questions asked are there, on disk
    assert git(root, "status", "--porcelain", "--untracked-files=all") == "?? app.py"

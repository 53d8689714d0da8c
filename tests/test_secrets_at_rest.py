"""Secrets at rest: conventional secret files stay out of the index, a purged file's words leave the BM25 vocabulary,
and `.assay/` is no more readable than the files it copies."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.core.workspace import narrow_state_dir, state_dir
from assay.stages.index.discover import discover
from assay.stages.index.lexical import LexicalIndex
from assay.stages.index.store import Catalog, lexical_dir
from assay.stages.index.term_counts import TermCounts

SETTINGS = Settings()
runner = CliRunner()
APP = 'def connect_database(host):\n    """Open a connection to the database."""\n    return host\n'
SECRETS = {
    ".env": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIenvfilekey\n",
    ".env.production": "DB_PASSWORD=prodpasswordvalue\n",
    "credentials.json": '{"installed": {"client_secret": "GOCSPXcredjsonsecret"}}\n',
    "client_secret_42.json": '{"web": {"client_secret": "clientsecretjson"}}\n',
    "deploy/.docker/config.json": '{"auths": {"ghcr.io": {"auth": "dockerauthsecret"}}}\n',
    "keys/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nopensshkeybody\n-----END OPENSSH PRIVATE KEY-----\n",
    "config/secrets.yaml": "api_token: yamlsecrettoken\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=npmrcauthtoken\n",
    "tls/server.pem": "-----BEGIN PRIVATE KEY-----\npemkeybody\n-----END PRIVATE KEY-----\n",
}
DOCS = {".env.example": "AWS_SECRET_ACCESS_KEY=\n", "config.json": '{"theme": "dark"}\n'}


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel, text in {"app.py": APP, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _skips(root: Path) -> dict[str, str]:
    return {s.path: s.reason for s in discover(root).skipped}


# ----------------------------------------------------------------------------- #8 secret files


def test_conventional_secret_files_are_not_indexed_and_the_report_says_how_to_index_one(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {**SECRETS, **DOCS})
    found = {f.path for f in discover(root).files}
    assert found == {"app.py", ".env.example", "config.json"}  # documentation and a plain config.json stay
    assert {p for p, r in _skips(root).items() if r == "secret_file"} == set(SECRETS)

    res = runner.invoke(app, ["index", str(root)], env={"ASSAY_ORCHESTRATION": "direct"})
    assert res.exit_code == 0, res.output
    assert f"secret_file {len(SECRETS)}" in res.output
    assert "to index it anyway, add the line `!/.env` to the workspace's .assayignore" in res.output
    catalog = Catalog(root)
    bodies = " ".join(e.body for e in catalog.all())
    vocab = (lexical_dir(root) / "vocab.index.json").read_text()
    for secret in ("wJalrXUtnFEMIenvfilekey", "GOCSPXcredjsonsecret", "dockerauthsecret", "opensshkeybody",
                   "yamlsecrettoken", "npmrcauthtoken", "prodpasswordvalue"):
        assert secret not in bodies and secret.lower() not in vocab


def test_a_negation_in_assayignore_indexes_a_secret_file_and_one_in_gitignore_does_not(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {".env": SECRETS[".env"], "sub/.env.local": "TOKEN=x\n", ".npmrc": "x=1\n"})
    (root / ".gitignore").write_text("!.npmrc\n")  # says what git tracks, not that its secrets may be served
    assert {p for p, r in _skips(root).items() if r == "secret_file"} == {".env", "sub/.env.local", ".npmrc"}
    (root / ".assayignore").write_text("!/.env\n")
    (root / "sub" / ".assayignore").write_text("!.env.local\n")
    assert {f.path for f in discover(root).files} == {"app.py", ".env", "sub/.env.local"}
    assert _skips(root) == {".npmrc": "secret_file"}


def test_a_link_to_a_secret_file_is_kept_out_too(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {".env": SECRETS[".env"]})
    (root / "settings.env.py").symlink_to(".env")
    assert {f.path for f in discover(root).files} == {"app.py"}
    assert _skips(root)["settings.env.py"] == "secret_file"


def test_virtualenvs_are_pruned_under_any_name_but_a_plain_env_package_is_not(tmp_path: Path) -> None:
    lib = "lib/python3.12/site-packages/requests/api.py"
    files = {f"venv/{lib}": "def get(url):\n    return url\n", "venv/pyvenv.cfg": "home = /usr/bin\n",
             f"tools/py312/{lib}": "def get(url):\n    return url\n",
             "tools/py312/pyvenv.cfg": "home = /usr/bin\n", "myapp/env/settings.py": "DEBUG = True\n"}
    root = _workspace(tmp_path, files)
    assert {f.path for f in discover(root).files} == {"app.py", "myapp/env/settings.py"}


# ----------------------------------------------------------------------------- #7 purged words leave the vocabulary


def test_update_drops_terms_no_passage_uses_and_scores_like_counting_everything_again() -> None:
    ids = [f"id{i:03d}" for i in range(40)]
    tokens = [["alpha", f"w{i % 7}", "beta"] for i in range(40)]
    tokens[5] = ["hunter2secret", "alpha"]
    before = TermCounts.count(ids, tokens)
    tokens[5] = ["alpha", "gamma"]
    updated = before.update({ids[5], ids[9]}, [ids[5]], [tokens[5]])  # ids[9] is deleted
    kept = ids[:9] + ids[10:]
    full = TermCounts.count(kept, [t for i, t in enumerate(tokens) if i != 9])
    assert "hunter2secret" not in updated.vocab and sorted(updated.vocab) == sorted(full.vocab)
    assert updated.unused_share() == 0.0
    ours, reference = LexicalIndex.from_counts(updated), LexicalIndex.from_counts(full)
    for query in (["alpha"], ["gamma", "w3"], ["beta", "w0", "w6"]):
        want = reference._retriever.get_scores(query)
        assert np.array_equal(ours._retriever.get_scores(query), want) and want.max() > 0


def test_a_newly_ignored_file_leaves_the_vocabulary_on_disk_and_bm25_matches_a_fresh_build(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "pkg" / "local_settings.py").write_text(
        'DATABASE_URL = "postgres://admin:zq7SecretDBpw@db.internal/prod"\nSTRIPE = "rk_live_zq7stripesecret"\n')
    run_index(str(project), SETTINGS)
    folder = lexical_dir(project)
    assert "zq7secretdbpw" in (folder / "vocab.index.json").read_text()
    updates: list[int] = []
    real_update = TermCounts.update
    monkeypatch.setattr(TermCounts, "update",
                        lambda self, changed, *a: updates.append(len(changed)) or real_update(self, changed, *a))
    (project / ".assayignore").write_text("pkg/local_settings.py\n")
    report = run_index(str(project), SETTINGS)

    assert report.files_removed == 1 and len(updates) == 1  # purged by an update of the counts, not a rebuild
    for name in ("vocab.index.json", "terms.json"):
        text = (folder / name).read_text().lower()
        assert "zq7secretdbpw" not in text and "zq7stripesecret" not in text and "zq7" not in text
    index = LexicalIndex.load(folder)
    fresh = LexicalIndex.from_tokens(*Catalog(project).lexical_tokens())
    assert index.ids == fresh.ids
    assert sorted(json.loads((folder / "terms.json").read_text())["vocab"]) == sorted(fresh.counts.vocab)
    for query in ("retry backoff", "session cookies", "database url prod", "def"):
        assert index.search(query, 20) == fresh.search(query, 20)
    assert index.search("retry", 5)


# ----------------------------------------------------------------------------- #6 .assay/ as closed as its sources


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture()
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_an_owner_only_file_closes_assay_to_group_and_others(project: Path, umask_022: None) -> None:
    (project / "pkg" / "retry.py").chmod(0o600)
    run_index(str(project), SETTINGS)
    assert _mode(state_dir(project)) == 0o700
    assert LexicalIndex.load(lexical_dir(project)).search("retry", 5)  # the owner still searches


def test_a_folder_closed_to_others_closes_assay_to_others_only(project: Path, umask_022: None) -> None:
    (project / "pkg").chmod(0o750)  # group may enter, others may not: its 0644 files are hidden from others
    run_index(str(project), SETTINGS)
    assert _mode(state_dir(project)) == 0o750


def test_normal_permissions_leave_assay_as_the_umask_makes_it_and_it_is_never_widened(
        project: Path, umask_022: None) -> None:
    run_index(str(project), SETTINGS)
    assert _mode(state_dir(project)) == 0o755  # a shared checkout stays searchable by other users
    state_dir(project).chmod(0o700)  # the owner closed it: a later run does not open it again
    run_index(str(project), SETTINGS)
    assert _mode(state_dir(project)) == 0o700


def test_narrowing_reports_the_bits_taken_and_ignores_vanished_files(tmp_path: Path, umask_022: None) -> None:
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x.py").write_text("x = 1\n")
    (root / "y.py").write_text("y = 1\n")
    assert narrow_state_dir(root, ["a/x.py", "y.py", "gone.py"]) == 0
    (root / "y.py").chmod(0o640)
    assert narrow_state_dir(root, ["a/x.py", "y.py"]) == 0o005  # others had r-x; group keeps its access
    assert _mode(state_dir(root)) == 0o750

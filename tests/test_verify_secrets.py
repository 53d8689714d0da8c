"""verify1 A, B, C, F: a source folder named `venv` is indexed (a virtualenv is pruned by its marker, counted, and a
`!` line brings it back); redaction keeps prose, constant defaults, `"Bearer " + token` and code that merely names
PEM markers; `prod.env` and `secrets.json`-style files are secret files."""

from __future__ import annotations

import random
import string
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.redact import PLACEHOLDER, redact
from assay.stages.index.discover import discover, is_secret_file, root_ignore_check

runner = CliRunner()


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# ----------------------------------------------------------------------------- A: `venv` folders

HATCH = {"src/hatch/venv/core.py": 'class VirtualEnv:\n    def create(self):\n        return "made"\n',
         "src/hatch/cli.py": "def app():\n    return VirtualEnv().create()\n",
         "Lib/venv/__init__.py": "def main():\n    return 0\n"}
SITE = "lib/python3.12/site-packages/requests/api.py"
VENV = {f"venv/{SITE}": "def get(url):\n    return url\n", "venv/pyvenv.cfg": "home = /usr/bin\n"}


def test_a_source_folder_named_venv_is_indexed(tmp_path: Path) -> None:
    root = _workspace(tmp_path, HATCH)
    found = discover(root)
    assert {f.path for f in found.files} == set(HATCH) and found.skipped == []
    assert not root_ignore_check(root)("src/hatch/venv/core.py")  # the watcher sees its edits too


def test_a_virtualenv_is_pruned_by_its_marker_and_counted_with_how_to_index_it(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {**HATCH, **VENV})
    found = discover(root)
    assert {f.path for f in found.files} == set(HATCH)
    assert [(s.path, s.reason) for s in found.skipped] == [("venv", "virtualenv")]
    assert root_ignore_check(root)(f"venv/{SITE}")

    res = runner.invoke(app, ["index", str(root)], env={"ASSAY_ORCHESTRATION": "direct"})
    assert res.exit_code == 0, res.output
    assert "virtualenv 1" in res.output and "add the line `!/venv/` to the workspace's .assayignore" in res.output


@pytest.mark.parametrize("line", ["!/venv/", "!venv/"])
def test_a_negation_in_assayignore_indexes_a_virtualenv(tmp_path: Path, line: str) -> None:
    root = _workspace(tmp_path, {**HATCH, **VENV, ".assayignore": f"{line}\n"})
    found = discover(root)
    assert f"venv/{SITE}" in {f.path for f in found.files}
    assert "virtualenv" not in {s.reason for s in found.skipped}


# ----------------------------------------------------------------------------- B: prose and code are not secrets

SECRETS_BESIDE = [
    ('token_error_message = "Token has expired"\nAPI_TOKEN = "tkn8Hq2ZpLw0vX"', "tkn8Hq2ZpLw0vX"),
    ('password: str = DEFAULT_PASSWORD\nDB_PASSWORD = "Tr0ub4dor&3 horse"', "Tr0ub4dor"),
    ('labels = {"password": "Your password"}\nconf = {"password": "hunter2hunter2"}', "hunter2hunter2"),
    ('password = "correct horse battery staple"', "correct horse battery staple"),  # a passphrase: no prose
    ('auth = "Bearer " + token\nAUTH = "Bearer xyz123abc456"', "xyz123abc456"),
    ("TOKEN=ABCD1234EFGH5678", "ABCD1234EFGH5678"),  # upper case with digits: a value, not a constant's name
]


@pytest.mark.parametrize(("text", "secret"), SECRETS_BESIDE)
def test_real_secrets_next_to_them_are_still_redacted(text: str, secret: str) -> None:
    out, count = redact(text)
    assert secret not in out and count == 1, out
    assert out.split("\n")[0] == text.split("\n")[0] or "\n" not in text  # the harmless line beside it stays


# ----------------------------------------------------------------------------- C: code that names PEM markers

KEY_KIND = '''def key_kind(text: str) -> str:
    """Tell which kind of private key a PEM text holds."""
    if text.startswith("-----BEGIN RSA PRIVATE KEY-----"):
        return "rsa"
    if text.startswith("-----BEGIN EC PRIVATE KEY-----"):
        return "ec"
    if "-----END PRIVATE KEY-----" in text:
        return "pkcs8"
    return "unknown"'''
COMMENTS = '''# A PEM private key starts with -----BEGIN PRIVATE KEY-----
def load(path):
    data = open(path).read()
    # and ends with -----END PRIVATE KEY-----
    return data'''
CONSTANTS = 'BEGIN = "-----BEGIN RSA PRIVATE KEY-----"\ndef armor(body):\n    return BEGIN + body\nEND = "-----END RSA PRIVATE KEY-----"'


@pytest.mark.parametrize("text", [KEY_KIND, COMMENTS, CONSTANTS])
def test_code_that_names_the_markers_keeps_its_lines(text: str) -> None:
    out, _ = redact(text)
    code = [line for line in text.split("\n") if "-----" not in line]
    assert len(out.split("\n")) == len(text.split("\n")), out  # no line dropped
    assert [line for line in out.split("\n") if "-----" not in line and PLACEHOLDER not in line] == code, out


def _key(label: str) -> tuple[list[str], list[str]]:
    rng = random.Random(3)
    b64 = string.ascii_letters + string.digits + "+/"
    body = ["".join(rng.choice(b64) for _ in range(64)) for _ in range(8)] + ["AbC9+/xyZ0=="]
    return [f"-----BEGIN {label}-----", *body, f"-----END {label}-----"], body


@pytest.mark.parametrize("form", ["plain", "literal", "escaped", "headers"])
def test_a_real_key_between_the_markers_is_still_one_whole_key(form: str) -> None:
    key, body = _key("RSA PRIVATE KEY")
    if form == "plain":
        text = 'KEY = """\n' + "\n".join(key) + '\n"""\ndef f():\n    return KEY'
    elif form == "literal":
        text = "KEY = (\n" + "\n".join(f'    "{line}\\n"' for line in key) + "\n)\ndef f():\n    return KEY"
    elif form == "escaped":
        text = '{"private_key": "' + "\\n".join(key) + '\\n", "client_email": "svc@example.com"}'
    else:
        text = "\n".join([key[0], "Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,0A1B2C3D4E5F6A7B", "", *key[1:]])
    out, count = redact(text)
    assert count == 1 and not [line for line in body if line in out] and "PRIVATE KEY" not in out, out
    assert ("return KEY" in out) if form in ("plain", "literal") else True
    assert ("client_email" in out) if form == "escaped" else True


# ----------------------------------------------------------------------------- F: more secret file names


@pytest.mark.parametrize("rel", ["prod.env", "config/staging.env", "secrets.json", "cfg/secrets.toml", "secrets.ini"])
def test_more_conventional_secret_files(rel: str) -> None:
    assert is_secret_file(rel)


@pytest.mark.parametrize("rel", [".env.example", "example.env", "prod.sample.env", "env.py", "cfg/secrets.py",
                                 "settings.env.py", "secrets_test.json"])
def test_their_docs_and_source_files_are_not_secret_files(rel: str) -> None:
    assert not is_secret_file(rel)


def test_prod_env_and_secrets_json_are_skipped_and_env_example_is_indexed(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"app.py": "def main():\n    return 1\n", "prod.env": "DB_PASSWORD=zq7prodenv\n",
                                 "secrets.json": '{"api_key": "zq7json"}\n', ".env.example": "DB_PASSWORD=\n",
                                 "env.py": "DEBUG = True\n"})
    found = discover(root)
    assert {f.path for f in found.files} == {"app.py", ".env.example", "env.py"}
    assert {(s.path, s.reason) for s in found.skipped} == {("prod.env", "secret_file"), ("secrets.json", "secret_file")}

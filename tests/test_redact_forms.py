"""Cloud-bound redaction: common secret forms and private keys split across passages are caught (secrets sweep #3,
#4), while ordinary code that merely names a password or token is left alone."""

from __future__ import annotations

import json
import random
import string

import pytest

from assay.stages.core.artifacts import Candidate
from assay.stages.core.llm_clients import CloudBackend
from assay.stages.core.redact import PLACEHOLDER, redact
from assay.stages.query.judge.llm import judge_with_cloud
from tests.fakes import FakeCloud

B64 = string.ascii_letters + string.digits + "+/"


def fake_key(lines: int = 26, label: str = "PRIVATE KEY", seed: int = 7) -> tuple[list[str], list[str]]:
    """A PEM-shaped key (random base64 body, 64 chars a line, a short last line) and its body lines."""
    rng = random.Random(seed)
    body = ["".join(rng.choice(B64) for _ in range(64)) for _ in range(lines - 1)]
    body.append("".join(rng.choice(B64) for _ in range(20)) + "=")
    return [f"-----BEGIN {label}-----", *body, f"-----END {label}-----"], body


def leaked(out: str, body: list[str]) -> list[str]:
    return [line for line in body if line in out]


# (text, the secret that must be gone) -- the tester's cases, then the forms the brief lists
SECRETS = [
    ('{"password": "CorrectHorseBatteryStaple"}', "CorrectHorseBatteryStaple"),
    ("conf = {'api_key': 'myapikey123456'}", "myapikey123456"),
    ('client_secret="GOCSPX-abc#def123"', "abc#def123"),
    ('password = "Tr0ub4dor&3 horse"', "Tr0ub4dor"),
    ('password = "a,b;c d#e1"', "a,b;c d#e1"),
    ("DB_PASS=hunter2hunter2", "hunter2hunter2"),
    ('DB_PASS = "hunter2hunter2"', "hunter2hunter2"),
    ("STRIPE_KEY=rk_live_51HxxxxxxxxxxxxxxxxxxxxxxxxxxENVSTRIPE", "ENVSTRIPE"),
    ("s = 'sk_live_51Habcdefghijklmnop0123'", "51Habcdefghijklmnop0123"),
    ("s = sk_test_51Habcdefghijklmnop0123", "51Habcdefghijklmnop0123"),
    ('headers = {"Authorization": "Bearer abcdefghijklmnopqrstuvwxyz123456"}', "abcdefghijklmnopqrstuvwxyz123456"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9xyz", "eyJhbGciOiJIUzI1NiJ9xyz"),
    ('auth = "Bearer xyz123abc456"', "xyz123abc456"),
    ("GITLAB=glpat-abcdefghijklmnopqrst", "glpat-abcdefghijklmnopqrst"),
    ("HF=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    ("NPM=npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("SLACK=xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"),
    ('maps = "AIzaSyA1234567890abcdefghijklmnopqrstuv"', "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ("GH=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("GH=gho_abcdefghijklmnopqrstuvwxyz0123456789", "gho_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("GH=ghs_abcdefghijklmnopqrstuvwxyz0123456789", "ghs_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABCDEFG0123456789"),
    ('secret := "goSECRET12345"', "goSECRET12345"),
    ('var password string = "goVarSecret1"', "goVarSecret1"),
    ('PASSWORD: str = "annotatedPW123"', "annotatedPW123"),
    ('let apiKey: string = "tsKEY12345678";', "tsKEY12345678"),
    ('const PASSWORD: &str = "rustPW1234";', "rustPW1234"),
    ("'password' => 'phpSecret99'", "phpSecret99"),
    ('config["password"] = "subscriptPW1"', "subscriptPW1"),
    ("password: yamlPlainPW1", "yamlPlainPW1"),
    ('{"client_secret": "GOCSPX-credjsonSECRETvalue123", "refresh_token": "1//0credjsonREFRESH"}', "credjson"),
    ('{"auths":{"ghcr.io":{"auth":"dXNlcjpkb2NrZXJTRUNSRVQ="}}}', "dXNlcjpkb2NrZXJTRUNSRVQ="),
    ("url = 'postgres://admin:S3cretDBpw@db.internal:5432/prod'", "S3cretDBpw"),
    ("REDIS_URL=redis://:S3cretRedisPw@cache:6379/0", "S3cretRedisPw"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF0AAAABpgpSECRET\n=aBcD\n"
     "-----END PGP PRIVATE KEY BLOCK-----", "lQOYBF0AAAABpgpSECRET"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_common_secret_forms_are_redacted(text: str, secret: str) -> None:
    out, count = redact(text)
    assert secret not in out and PLACEHOLDER in out and count >= 1, out


def test_a_typed_declaration_keeps_its_type_and_loses_its_value() -> None:
    assert redact('let apiKey: string = "tsKEY12345678";') == (f'let apiKey: string = "{PLACEHOLDER}";', 1)
    assert redact('PASSWORD: str = "annotatedPW123"')[0] == f'PASSWORD: str = "{PLACEHOLDER}"'


def test_an_authorization_header_keeps_its_scheme() -> None:
    header = "Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456"
    assert redact(header) == (f"Authorization: Bearer {PLACEHOLDER}", 1)


CODE = [
    "password = get_password()",
    "token = self._token",
    "api_key: str",
    "def password(self):",
    "password_field = forms.CharField()",
    "secret = None",
    "token = True",
    "is_secret = False",
    'key = "name"',
    'd = {"key": "name", "value": "label"}',
    "password=password,",
    "api_key = settings.api_key",
    'password = os.environ["PASSWORD"]',
    "PASSWORD=${DB_PASSWORD}",
    "api_key: Optional[str] = None",
    "let apiKey: string;",
    "password: string;",
    "token = await fetch_token()",
    "max_tokens = 4096",
    'tokenizer = "bert-base-uncased"',
    'author = "John Smith"',
    'token_type = "bearer"',
    'token_url = "https://oauth2.googleapis.com/token"',
    'headers["Authorization"] = f"Bearer {token}"',
    "Send a Bearer token in the Authorization header; Basic authentication also works.",
    'if line.startswith("x"):\n    pass',
    # prose, constants and a bare scheme (a re-test found them redacted)
    'token_error_message = "Token has expired, please log in again"',
    'raise AuthError(token_error_message="Token has expired")',
    "def login(username: str, password: str = DEFAULT_PASSWORD) -> bool:",
    "def fetch(url, auth: AuthTypes = USE_CLIENT_DEFAULT):",
    "password = DEFAULT_PASSWORD",
    "def connect(token: str = default_token):",
    'labels = {"password": "Your password", "token": "Access token"}',
    'def login(*, token_label: str = "Access token"):',
    'PASSWORD_HELP = "Use at least 12 characters."',
    'secret = "the key to the kingdom"',
    'headers = {"Authorization": "Bearer " + token}',
    "headers = {'Authorization': 'Basic ' + encoded}",
]


@pytest.mark.parametrize("text", CODE)
def test_ordinary_code_is_not_redacted(text: str) -> None:
    assert redact(text) == (text, 0)


def test_hex_digests_in_a_list_are_not_taken_for_key_body() -> None:
    text = "DIGESTS = [\n" + "".join(f'    "{c * 64}",\n' for c in "0123456789abcdef") + "]"
    assert redact(text) == (text, 0)


def test_both_halves_of_a_key_split_across_passages_are_redacted() -> None:
    key, body = fake_key()
    head = "\n".join(['"""Test fixtures for TLS."""', 'TEST_PRIVATE_KEY = """', *key[:14]])  # BEGIN, no END
    tail = "\n".join([*key[14:], '"""', "", "def load_fixture_key():", "    return TEST_PRIVATE_KEY"])  # END, no BEGIN
    for half in (head, tail):
        out, count = redact(half)
        assert leaked(out, body) == [] and count == 1, out
        assert "END PRIVATE KEY" not in out and "BEGIN PRIVATE KEY" not in out
    assert "def load_fixture_key():" in redact(tail)[0] and 'TEST_PRIVATE_KEY = """' in redact(head)[0]


def test_a_header_less_tail_in_string_literals_or_json_is_redacted() -> None:
    key, body = fake_key(label="RSA PRIVATE KEY")
    literal = "\n".join([*(f'    "{line}\\n"' for line in key[10:-1]), f'    "{key[-1]}\\n"', ")"])
    escaped = "\\n".join(key[10:]) + '\\n", "client_email": "svc@example.iam.gserviceaccount.com"}'
    for text in (literal, escaped):
        out, _ = redact(text)
        assert leaked(out, body) == [] and "END RSA" not in out, out
    assert "client_email" in redact(escaped)[0]


def test_a_begin_with_no_end_is_redacted_to_the_end_of_the_text() -> None:
    key, body = fake_key(label="OPENSSH PRIVATE KEY")
    out, count = redact("KEY = '''\n" + "\n".join(key[:9]))
    assert out == f"KEY = '''\n{PLACEHOLDER}" and count == 1


def test_the_middle_of_a_long_key_with_no_marker_is_redacted() -> None:
    _, body = fake_key(lines=60)
    out, count = redact("\n".join(body[20:40]))
    assert leaked(out, body) == [] and count == 1


def test_a_key_split_in_one_prompt_keeps_the_passages_between_its_halves() -> None:
    """The halves are redacted one by one; a BEGIN..END match across passages would drop the passage between."""
    key, body = fake_key()
    passages = [("a.py", "\n".join(["KEY = '''", *key[:14]])), ("b.py", "def unrelated_helper():\n    return 42"),
                ("c.py", "\n".join([*key[14:], "'''"]))]
    cands = [Candidate(id=f"id{i}", file=f, start_line=1, end_line=20, entity=f"e{i}", kind="function",
                       language="python", body=b, fused_rank=i + 1, fused_score=1 / (61 + i))
             for i, (f, b) in enumerate(passages)]
    with FakeCloud() as server:
        judge_with_cloud(CloudBackend(server.url + "/v1", "k"), "m", "what is KEY?", cands)
        sent = json.dumps(server.bodies("/v1/chat/completions"))
    assert leaked(sent, body) == [] and "PRIVATE KEY" not in sent
    assert "def unrelated_helper():" in sent and "return 42" in sent

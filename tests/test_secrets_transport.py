"""Secrets in transport: a loopback Ollama's redirect is never followed (code would leave the machine), the loopback
Prefect API is reached without the environment's proxy, the cloud brief writer gets redacted text, and a URL's query
string is masked in refusal messages."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.flows.runtime import direct_to_api
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import LLMError, OllamaBackend, shown_url
from assay.stages.index.embed import EmbedderError, OllamaEmbedder
from tests.fakes import FakeCloud

runner = CliRunner()
ASSAY = str(Path(sys.executable).with_name("assay"))
SECRET = "Tr0ub4dor&3horse"


class Counting:
    """A loopback HTTP server that counts every request and keeps its bodies; `redirect_to`: answer each with
    307 to that base URL plus the path (a misconfigured proxy or a hostile local process), else 200 {}."""

    def __init__(self, redirect_to: str | None = None) -> None:
        self.hits = 0
        self.bodies: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                owner.hits += 1
                owner.bodies.append(self.rfile.read(n).decode("utf-8", "replace") if n else "")
                self.send_response(307 if redirect_to else 200)
                if redirect_to:
                    self.send_header("Location", redirect_to + self.path)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def redirect():
    """(redirector, target): the redirector answers 307 to the target, whose hits say whether it was followed."""
    target = Counting()
    redirector = Counting(redirect_to=target.url)
    yield redirector, target
    redirector.close()
    target.close()


# 1: a loopback Ollama's redirect is not followed

def test_the_ollama_chat_refuses_a_redirect_and_sends_nothing_to_its_target(redirect) -> None:
    redirector, target = redirect
    with pytest.raises(LLMError) as caught:
        OllamaBackend(redirector.url, timeout=5, retries=0).chat("m", "system", f'password = "{SECRET}"')
    message = str(caught.value)
    assert "answered a redirect (307)" in message and "ASSAY_OLLAMA_HOST" in message and "\n" not in message
    assert redirector.hits == 1 and SECRET in redirector.bodies[0]  # sent once to the configured host only
    assert target.hits == 0


def test_the_ollama_embedder_refuses_a_redirect_and_sends_nothing_to_its_target(redirect) -> None:
    redirector, target = redirect
    with pytest.raises(EmbedderError, match=r"answered a redirect \(307\).*ASSAY_OLLAMA_HOST"):
        OllamaEmbedder("nomic-embed-text", redirector.url, timeout=5).embed([f'password = "{SECRET}"'])
    assert redirector.hits == 1 and target.hits == 0


def test_ask_with_a_redirecting_ollama_judge_keeps_the_code_on_the_configured_host(
        redirect, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows.index import run_index

    redirector, target = redirect
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "app" / "db.py").write_text(f'def connect_database(host):\n    """Open a connection."""\n'
                                        f'    password = "{SECRET}"\n    return host, password\n')
    run_index(str(root))
    monkeypatch.setenv("ASSAY_OLLAMA_HOST", redirector.url)
    monkeypatch.setenv("ASSAY_LLM_TIMEOUT", "5")
    res = runner.invoke(app, ["ask", "How does connect_database get its password?", str(root), "--judge", "ollama"])
    assert redirector.hits >= 1 and any(SECRET in body for body in redirector.bodies)  # the judge did call
    assert target.hits == 0
    assert "answered a redirect (307)" in res.output


# 2: the loopback Prefect API is reached without the environment's proxy

def test_direct_to_api_adds_a_loopback_host_to_no_proxy_and_keeps_the_users_entries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "corp.example,10.0.0.0/8")
    direct_to_api("http://127.0.0.1:4200/api")
    direct_to_api("http://127.0.0.1:4300/api")  # same host: no second entry
    direct_to_api("https://prefect.example.com/api")  # not loopback: reached as the user's settings say
    for name in ("NO_PROXY", "no_proxy"):
        assert os.environ[name] == "corp.example,10.0.0.0/8,127.0.0.1"


def test_an_ipv6_loopback_api_goes_into_no_proxy_in_a_form_httpx_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """`[::1]` in NO_PROXY made every later httpx client fail to build (`Invalid port: ':1]'`)."""
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://10.255.255.1:9")
    direct_to_api("http://[::1]:4200/api")
    assert os.environ["NO_PROXY"] == "::1"
    with httpx.Client() as client:  # builds, and reaches [::1] directly
        assert client._transport_for_url(httpx.URL("http://[::1]:4200/api")) is client._transport


@pytest.mark.prefect
def test_a_prefect_run_reaches_the_loopback_api_without_the_environment_proxy(
        prefect_server, tmp_path: Path) -> None:
    """The proxy answers 403 to everything (a corporate gateway): through it the run failed, or the ask report's
    artifact, with its code, went out through it."""
    from prefect.settings import PREFECT_API_URL

    from assay.flows.index import run_index

    proxy = Counting()
    try:
        root = tmp_path / "ws"
        shutil.copytree(Path(__file__).parent / "fixtures" / "project", root)
        run_index(str(root))
        env = {**os.environ, "ASSAY_ORCHESTRATION": "auto", "PREFECT_API_URL": PREFECT_API_URL.value(),
               "NO_PROXY": "corp.example", "no_proxy": "corp.example"}
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            env[name] = proxy.url.replace("127.0.0.1", "localhost")  # a proxy name NO_PROXY's 127.0.0.1 does not cover
        env.pop("ASSAY_DEBUG", None)
        done = subprocess.run([ASSAY, "ask", "how does retry_call back off?", str(root), "--json"],
                              capture_output=True, text=True, env=env, timeout=300)
    finally:
        proxy.close()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["flow_run_id"]  # recorded on the API
    assert proxy.hits == 0


# 5: the cloud brief writer gets redacted text

def test_the_cloud_brief_writer_gets_the_brief_redacted_and_the_brief_says_so(tmp_path: Path) -> None:
    from assay.flows.index import run_index
    from assay.stages.query.brief import run_brief

    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "README.md").write_text("# MyApp\n\nA service that talks to OpenAI using "
                                    "OPENAI_API_KEY=sk-proj-READMEreadmeREADMEreadme12345 and AWS key "
                                    "AKIAREADMEEXAMPLE123.\n")
    (root / "app" / "main.py").write_text("def main():\n    return 1\n")
    run_index(str(root))
    with FakeCloud(answer="# MyApp\n\nRewritten.") as cloud:
        settings = Settings(mode="hybrid", cloud_base_url=f"{cloud.url}/v1", cloud_api_key="sk-test-KEYKEYKEY123")
        text, rewritten = run_brief(root, settings, "cloud")
        sent = json.dumps(cloud.bodies("/v1/chat/completions"))
    assert rewritten and "## Purpose" in sent and "[REDACTED]" in sent
    assert "sk-proj-READMEreadme" not in sent and "AKIAREADMEEXAMPLE123" not in sent
    assert text.startswith("# MyApp") and "secret(s) were redacted before the cloud call" in text


def test_the_local_brief_writer_path_is_not_redacted_or_annotated(tmp_path: Path) -> None:
    from assay.flows.index import run_index
    from assay.stages.query.brief import run_brief
    from tests.fakes import FakeOllama

    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# MyApp\n\nUses AKIAREADMEEXAMPLE123.\n")
    (root / "main.py").write_text("def main():\n    return 1\n")
    run_index(str(root))
    with FakeOllama(answer="# MyApp\n\nRewritten.") as ollama:
        text, _ = run_brief(root, Settings(ollama_host=ollama.url), "ollama")
        sent = json.dumps(ollama.bodies("/api/chat"))
    assert "AKIAREADMEEXAMPLE123" in sent and "redacted" not in text


# 9: refusal messages mask a URL's query string

def test_shown_url_masks_query_values_and_the_fragment() -> None:
    assert shown_url("http://192.0.2.2:8000/?token=sk-proj-abcdefghijklmnopqrstuvwx") == "http://192.0.2.2:8000/?token=***"
    assert shown_url("http://u:pw@h:1/x?key=S3cret&empty=&bare#frag") == "http://***@h:1/x?key=***&empty=&***#***"
    assert shown_url("h:11434?k=v") == "h:11434?k=***"
    assert shown_url("http://127.0.0.1:11434/") == "http://127.0.0.1:11434/"


def test_refusals_of_chroma_and_ollama_do_not_print_query_credentials(indexed_project: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_CHROMA_URL", "http://192.0.2.2:8000/?token=sk-proj-abcdefghijklmnopqrstuvwx")
    res = runner.invoke(app, ["search", "x", str(indexed_project)])
    assert res.exit_code == 2 and "refusing to contact the Chroma server" in res.output
    assert "sk-proj-abcdefghijklmnopqrstuvwx" not in res.output and "?token=***" in res.output
    monkeypatch.delenv("ASSAY_CHROMA_URL")
    monkeypatch.setenv("ASSAY_OLLAMA_HOST", "http://192.0.2.2:11434/?key=SuperSecretProxyKey123")
    res = runner.invoke(app, ["ask", "x y", str(indexed_project), "--judge", "ollama"])
    assert "refusing to contact Ollama" in res.output
    assert "SuperSecretProxyKey123" not in res.output and "?key=***" in res.output


def test_a_redirect_off_loopback_is_refused_before_any_socket_leaves_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as the chat test, seen from the sockets: nothing beyond loopback is even tried."""
    outside: list = []
    real = socket.socket.connect

    def connect(self, address):
        if isinstance(address, tuple) and not str(address[0]).startswith("127."):
            outside.append(address)
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    far = Counting(redirect_to="http://10.255.255.1:11434")
    try:
        with pytest.raises(LLMError, match="answered a redirect"):
            OllamaBackend(far.url, timeout=5, retries=0).chat("m", "system", "user")
    finally:
        far.close()
    assert outside == []

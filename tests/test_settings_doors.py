"""Settings at the doors: loopback clients ignore proxies, every command keeps local mode's loopback rule, numbers
are bounded, ASSAY_PRICES / ASSAY_THRESHOLDS errors name the variable, a timed-out host is not waited on twice in
one answer, an empty variable means unset, and ASSAY_DEBUG=0 is off."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from assay.flows.cli import _one_line, app
from assay.stages.core.artifacts import Thresholds
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import CloudBackend, LLMError, OllamaBackend, timeout_breaker
from assay.stages.core.registry import assay_home
from assay.stages.core.systemone_client import SystemOneBackend
from assay.stages.index.embed import OllamaEmbedder
from assay.stages.query.ledger import prices_from
from assay.stages.query.retrieve import check_search_request
from assay.stages.query.threshold import default_thresholds
from tests.fakes import FakeCloud, FakeOllama, FakeSystemOne, SilentServer

runner = CliRunner()
OUTSIDE = "10.255.255.1"  # TEST-NET-like private address: never reachable from the tests


class Proxy:
    """A loopback 'proxy' that counts the connections it gets and answers each with 403 (like a corporate gateway)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.hits = 0
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 13\r\nConnection: close\r\n\r\nresolve_deny.")
            conn.close()


@pytest.fixture()
def proxy(monkeypatch: pytest.MonkeyPatch):
    p = Proxy()
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, p.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield p
    p.sock.close()


@pytest.fixture()
def outside_connects(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every address beyond loopback a socket in this process tries to reach."""
    seen: list = []
    real = socket.socket.connect

    def connect(self, address):
        if isinstance(address, tuple) and not str(address[0]).startswith("127.") and address[0] != "::1":
            seen.append(address)
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


# 1: loopback clients never go through a proxy from the environment

def test_loopback_ollama_and_cloud_clients_ignore_the_proxy_environment(proxy: Proxy) -> None:
    with FakeOllama() as ollama:
        reply = OllamaBackend(ollama.url, timeout=5).chat("m", "system", "user")
        assert reply.text and ollama.bodies("/api/chat")  # it reached the server itself
        vectors, _ = OllamaEmbedder("nomic-embed-text", ollama.url, timeout=5).embed(["def f(): pass"])
        assert vectors.shape[0] == 1 and ollama.bodies("/api/embed")  # the embedder too: code passes through it
    with FakeCloud() as cloud:
        CloudBackend(cloud.url + "/v1", "sk-test", timeout=5, retries=0).chat("m", "system", "user")
        assert cloud.bodies("/v1/chat/completions")
    assert proxy.hits == 0


def test_loopback_systemone_client_ignores_the_proxy_environment(proxy: Proxy) -> None:
    with FakeSystemOne() as stub:
        reply = SystemOneBackend(stub.url, "", "jev-latest", budget_s=5).ask(
            {"query": "q"}, {"q1": {"type": "noul", "instructions": "Is it?"}})
        assert reply.answers and stub.bodies("/v1/systemone")
    assert proxy.hits == 0


# 2: index and search keep the loopback rule ask keeps

@pytest.mark.parametrize("env", [{"ASSAY_CHROMA_URL": f"http://{OUTSIDE}:8000"}, {"ASSAY_CHROMA_URL": "notaurl"},
                                 {"ASSAY_EMBEDDER": "ollama:nomic-embed-text", "ASSAY_OLLAMA_HOST": f"http://{OUTSIDE}:11434"}])
def test_local_mode_index_and_search_refuse_a_store_or_embedder_beyond_loopback(
        indexed_project: Path, tmp_path: Path, env: dict, outside_connects: list) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "a.py").write_text("def alpha():\n    return 1\n")
    for args in (["index", str(fresh)], ["search", "alpha", str(indexed_project)], ["ask", "what is alpha?", str(indexed_project)]):
        res = runner.invoke(app, args, env={"ASSAY_MODE": "local", **env})
        assert res.exit_code == 2, (args, res.output)
        assert "local mode: refusing to contact" in res.output and "not loopback" in res.output
    assert outside_connects == []
    assert not (fresh / ".assay" / "chroma").exists()


def test_local_mode_search_refuses_a_workspace_whose_own_embedder_is_a_remote_ollama(indexed_project: Path, tmp_path: Path) -> None:
    """The workspace's manifest names the embedder a query uses, whatever ASSAY_EMBEDDER says."""
    from assay.stages.index.store import read_manifest
    from assay.stages.query.retrieve import search

    manifest = read_manifest(indexed_project).model_copy(update={"embedder": "ollama:nomic-embed-text"})
    settings = Settings(mode="local", ollama_host=f"http://{OUTSIDE}:11434")
    import assay.stages.query.retrieve as retrieve_module

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(retrieve_module, "read_manifest", lambda root: manifest)
        with pytest.raises(LLMError, match="refusing to contact Ollama"):
            search(indexed_project, "backoff", settings)


# 5, 6: numbers are bounded when settings load

@pytest.mark.parametrize("name, value", [("EMBED_BATCH", "0"), ("STORE_BATCH", "-1"), ("EMBED_TOKENS", "100000"),
                                         ("CHUNK_CHARS", "0"), ("CHUNK_LINES", "-1"), ("MAX_FILE_BYTES", "-5"),
                                         ("POOL_SIZE", "0"), ("LLM_TIMEOUT", "0"), ("LLM_RETRIES", "-1"), ("TOP_K", "-2"),
                                         ("SYSTEMONE_TIMEOUT", "-1"), ("WATCH_DEBOUNCE_MS", "-5"), ("MAX_TOKENS", "-5")])
def test_out_of_range_numbers_are_one_line_errors_naming_the_variable(project: Path, name: str, value: str) -> None:
    res = runner.invoke(app, ["index", str(project)], env={f"ASSAY_{name}": value})
    assert res.exit_code == 2
    line = res.output.strip().splitlines()[-1]
    assert line.startswith(f"error: ASSAY_{name}: Input should be") and f"(got '{value}')" in line
    assert not (project / ".assay").exists()  # refused before any work


def test_a_negative_store_batch_can_no_longer_claim_vectors_it_never_stored() -> None:
    with pytest.raises(ValidationError, match="store_batch"):
        Settings(store_batch=-1)


# 7: ASSAY_PRICES is checked at load and named

def test_bad_prices_are_named_when_settings_load(indexed_project: Path) -> None:
    for value, words in (("{bad", "not valid JSON"), ('{"deepseek-chat": "cheap"}', "'deepseek-chat' must be 2 or 3 numbers"),
                         ("[1, 2]", "holds a JSON list, not an object")):
        started = time.perf_counter()
        res = runner.invoke(app, ["ask", "how are cookies merged?", str(indexed_project)], env={"ASSAY_PRICES": value})
        assert res.exit_code == 2 and res.output.startswith("error: ASSAY_PRICES: ") and words in res.output, res.output
        assert time.perf_counter() - started < 5  # before any retrieval or judging
    with pytest.raises(ValueError, match="^ASSAY_PRICES: the price of 'x'"):
        prices_from('{"x": [1]}')
    assert prices_from('{"x": [1, 2, 0.5]}') == {"x": [1.0, 2.0, 0.5]}


# 8, 9: ASSAY_THRESHOLDS errors name the variable and the file; every key is read or refused

def write(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


def test_threshold_file_errors_name_the_variable_the_file_and_the_form(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    cases = {
        str(tmp_path / "missing.json"): "cannot read it (No such file or directory)",
        write(tmp_path, "bad.json", '{"bad json'): "not valid JSON",
        write(tmp_path, "list.json", "[1, 2]"): "holds a JSON list",
        str(tmp_path / "adir"): "cannot read it (Is a directory)",
        write(tmp_path, "badval.json", '{"relevance_min": "high"}'): "relevance_min: Input should be a valid number",
        '{"relevance_min": 0.5}': "not JSON itself",
        write(tmp_path, "unknown.json", '{"nonsense_key": 5}'): "unknown key nonsense_key",
        write(tmp_path, "unknown2.json", '{"ollama": {"relevance_mn": 0.5}}'): "unknown key ollama.relevance_mn",
        write(tmp_path, "topk.json", '{"local": {"top_k": 0}}'): "local.top_k: must be a whole number from 1",
    }
    for path, words in cases.items():
        with pytest.raises(ValueError) as info:
            default_thresholds("local", path, 5)
        message = str(info.value)
        assert message.startswith(f"ASSAY_THRESHOLDS ({path}): ") and words in message, message
        assert "\n" not in message


def test_any_known_key_of_a_flat_threshold_file_applies(tmp_path: Path) -> None:
    only_evidence = write(tmp_path, "ev.json", '{"evidence_min": 0.99, "_doc": "a comment"}')
    assert default_thresholds("local", only_evidence, 5).evidence_min == 0.99  # was ignored without relevance_min
    mixed = write(tmp_path, "mixed.json", '{"evidence_min": 0.7, "default": {"injection_max": 0.3}, "ollama": {"evidence_min": 0.2}}')
    assert default_thresholds("ollama", mixed, 5).evidence_min == 0.2
    local = default_thresholds("local", mixed, 5)
    assert local.evidence_min == 0.7 and local.injection_max == 0.3


def test_a_bad_threshold_file_fails_ask_with_its_name_not_a_made_up_variable(indexed_project: Path, tmp_path: Path) -> None:
    path = write(tmp_path, "badval.json", '{"relevance_min": "high"}')
    res = runner.invoke(app, ["ask", "how are cookies merged?", str(indexed_project)], env={"ASSAY_THRESHOLDS": path})
    assert res.exit_code == 2 and res.output.startswith(f"error: ASSAY_THRESHOLDS ({path}): relevance_min")
    assert "ASSAY_RELEVANCE_MIN" not in res.output
    with pytest.raises(ValidationError) as info:
        Thresholds(relevance_min="high", evidence_min=0.4, injection_max=0.5, contradicts_min=0.5)
    assert _one_line(info.value).startswith("relevance_min: ")  # only a Settings field is an ASSAY_ variable


# 10, 11: search and ask refuse modes and counts that mean nothing

def test_search_refuses_an_unknown_mode_and_counts_below_one(indexed_project: Path) -> None:
    res = runner.invoke(app, ["search", "session", str(indexed_project), "--mode", "foo"])
    assert res.exit_code == 2 and "error: mode must be hybrid, dense or bm25 (got 'foo')" in res.output
    upper = runner.invoke(app, ["search", "merge cookies", str(indexed_project), "--mode", "BM25", "--json"])
    assert upper.exit_code == 0 and json.loads(upper.stdout)
    for args in (["-k", "-3"], ["-k", "0"], ["--max-tokens", "-3"], ["--max-tokens", "0"]):
        res = runner.invoke(app, ["search", "x", str(indexed_project), *args])
        assert res.exit_code == 2, (args, res.output)
    for args in (["--top-k", "0"], ["--max-tokens", "-1"]):
        res = runner.invoke(app, ["ask", "how are cookies merged?", str(indexed_project), *args])
        assert res.exit_code == 2, (args, res.output)
    with pytest.raises(ValueError, match="k must be at least 1"):
        check_search_request(-3, "hybrid")  # the MCP door's search goes through the same check
    assert check_search_request(3, " Dense ") == "dense"


# 12: a host that timed out is not waited on again in the same answer

def test_a_timed_out_host_is_not_waited_on_again_within_one_query() -> None:
    with SilentServer() as hung:
        backend = OllamaBackend(hung.url, timeout=1)
        with timeout_breaker():
            started = time.perf_counter()
            with pytest.raises(LLMError, match="timed out after 1s"):
                backend.chat("m", "s", "u")
            first = time.perf_counter() - started
            started = time.perf_counter()
            with pytest.raises(LLMError, match="skipped: its server timed out earlier in this query"):
                OllamaBackend(hung.url, timeout=1).chat("m", "s", "u")  # another stage's client, same host
            assert time.perf_counter() - started < 0.3 <= first
        started = time.perf_counter()
        with pytest.raises(LLMError, match="timed out after 1s"):  # outside a query nothing is remembered
            backend.chat("m", "s", "u")
        assert time.perf_counter() - started >= 0.9


def test_ask_with_every_stage_on_a_hung_ollama_waits_out_one_timeout(indexed_project: Path) -> None:
    from assay.flows.query import run_query

    with SilentServer() as hung:
        settings = Settings(judge="ollama", synth="ollama", guard="ollama", ollama_host=hung.url, llm_timeout=1.5)
        started = time.perf_counter()
        report = run_query(str(indexed_project), "how are cookies merged?", settings)
        took = time.perf_counter() - started
    assert report.selection.fail_open and "timed out after 1.5s" in report.selection.fail_open_reason
    assert took < 4.5, took  # was four full timeouts: the judge's batches, the writer and the guard


# 13, 14, 17: empty means unset; ASSAY_HOME that is a file; ASSAY_DEBUG=0 is off

def test_empty_variables_act_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MAX_TOKENS", "DISTANCE_FLOOR", "EMBEDDER", "OLLAMA_HOST", "CLOUD_BASE_URL", "TOP_K"):
        monkeypatch.setenv(f"ASSAY_{name}", "")
    s = Settings()
    assert s.max_tokens == 2000 and s.distance_floor is None and s.ollama_host == "http://127.0.0.1:11434"
    assert s.cloud_base_url.startswith("https://") and s.top_k == 5
    assert "embedder" not in s.model_fields_set  # unset: an indexed workspace keeps its own embedder


def test_assay_home_empty_is_the_default_and_a_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASSAY_HOME", "")
    assert assay_home() == tmp_path / "user" / ".assay" and not (tmp_path / "workspaces.json").exists()
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("ASSAY_HOME", "afile")
    with pytest.raises(ValueError, match=r"^ASSAY_HOME \(afile\) is not a folder"):
        assay_home()
    monkeypatch.setenv("ASSAY_HOME", "afile/sub")
    with pytest.raises(ValueError, match=r"^ASSAY_HOME \(afile/sub\) cannot be created"):
        assay_home()


@pytest.mark.parametrize("debug", ["0", "false", "", "no"])
def test_assay_debug_zero_or_false_keeps_errors_to_one_line(tmp_path: Path, debug: str) -> None:
    res = runner.invoke(app, ["search", "x", str(tmp_path)], env={"ASSAY_DEBUG": debug, "ASSAY_MODE": "bogus"})
    assert res.exit_code == 2 and res.output.startswith("error: ASSAY_MODE: ") and res.exception is not None
    assert isinstance(res.exception, SystemExit)  # not the ValidationError a traceback would show


def test_assay_debug_one_shows_the_traceback(tmp_path: Path) -> None:
    res = runner.invoke(app, ["search", "x", str(tmp_path)], env={"ASSAY_DEBUG": "1", "ASSAY_MODE": "bogus"})
    assert isinstance(res.exception, ValidationError)

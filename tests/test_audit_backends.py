"""`assay audit` (and `assay eval`) with model judges: local mode refuses off-loopback hosts before any socket opens,
the audit's model calls reach the usage ledger, and a re-judge sends each stored passage once."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from assay.flows.audit import run_audit
from assay.flows.cli import app
from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.stages.audit.snapshots import judgments_dir
from assay.stages.core.config import Settings
from assay.stages.query.ledger import summary
from tests.conftest import FIXTURES
from tests.fakes import FakeCloud, FakeOllama

REMOTE = "10.255.255.1"  # never contacted: a refusal must come before any connection
KEY = "sk-test-key-abcdefghijklmnopqrstuvwxyz"
PASSAGE = re.compile(r'<passage id="p\d+" file="([^"]*)" lines="([^"]*)" entity="([^"]*)"')


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An indexed project with one stored answer (no model judge), shared by the refusal tests (which write nothing)."""
    root = tmp_path_factory.mktemp("audit-backends") / "project"
    shutil.copytree(FIXTURES / "project", root)
    run_index(str(root))
    run_query(str(root), "how does retry_call back off?", Settings(judge="none"))
    return root


@pytest.fixture()
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every host a socket tries to reach; the remote address is refused at once instead of waited on."""
    seen: list[str] = []
    real = socket.socket.connect

    def connect(self: socket.socket, address) -> None:
        host = address[0] if isinstance(address, tuple) else str(address)
        seen.append(host)
        if host == REMOTE:
            raise ConnectionRefusedError(f"test: {REMOTE} must never be contacted")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


REMOTE_ENV = {"ASSAY_MODE": "local", "ASSAY_CLOUD_BASE_URL": f"http://{REMOTE}:9/v1", "ASSAY_CLOUD_API_KEY": KEY,
              "ASSAY_OLLAMA_HOST": f"http://{REMOTE}:11434", "ASSAY_LLM_TIMEOUT": "2", "ASSAY_LLM_RETRIES": "0"}
CLOUD_REFUSED = "local mode: the cloud judge is not allowed"
OLLAMA_REFUSED = f"local mode: refusing to contact Ollama at http://{REMOTE}:11434 (not loopback)"


@pytest.mark.parametrize(("option", "backend", "message"), [
    ("--rejudge", "cloud", CLOUD_REFUSED), ("--rejudge", "ollama", OLLAMA_REFUSED),
    ("--judge", "cloud", CLOUD_REFUSED), ("--judge", "ollama", OLLAMA_REFUSED),
])
def test_local_mode_audit_refuses_a_remote_judge_before_any_connection(
    judged: Path, connects: list[str], option: str, backend: str, message: str,
) -> None:
    before = sorted(judgments_dir(judged).rglob("*.parquet"))
    result = CliRunner().invoke(app, ["audit", str(judged), option, backend], env=REMOTE_ENV)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert REMOTE not in connects
    assert sorted(judgments_dir(judged).rglob("*.parquet")) == before  # nothing re-judged, nothing written


@pytest.mark.parametrize(("suite", "backend", "message"), [
    ("swe-qa", "cloud", CLOUD_REFUSED), ("judge", "cloud", CLOUD_REFUSED), ("judge", "ollama", OLLAMA_REFUSED),
])
def test_local_mode_eval_refuses_a_remote_judge_before_any_corpus_work(
    monkeypatch: pytest.MonkeyPatch, connects: list[str], suite: str, backend: str, message: str,
) -> None:
    def no_corpus_work() -> Path:
        raise AssertionError("reached corpus work")

    monkeypatch.setattr("assay.flows.evaluate.eval_home", no_corpus_work)
    result = CliRunner().invoke(app, ["eval", "--suite", suite, "--judge", backend], env=REMOTE_ENV)
    assert result.exit_code == 2, result.output
    assert message in result.output and "reached corpus work" not in result.output
    assert REMOTE not in connects


def _ledger_calls(root: Path, backend: str) -> tuple[int, int]:
    rows = [r for r in summary(root) if r["backend"] == backend and r["purpose"] == "judge"]
    return sum(r["calls"] for r in rows), sum(r["prompt_tokens"] for r in rows)


def test_the_audit_records_its_rejudge_calls_in_the_usage_ledger(project: Path) -> None:
    run_index(str(project))
    for q in ("how does retry_call back off?", "merge cookies"):
        run_query(str(project), q, Settings(judge="none"))
    assert _ledger_calls(project, "cloud") == (0, 0)
    with FakeCloud() as cloud:
        settings = Settings(mode="hybrid", cloud_base_url=cloud.url + "/v1", cloud_api_key=KEY)
        data = run_audit(str(project), settings, rejudge="cloud", baseline_n=3)
        sent = len(cloud.bodies("/v1/chat/completions"))
    assert data["rejudged_queries"] == 2 and sent >= 2
    assert _ledger_calls(project, "cloud") == (sent, 100 * sent)  # FakeCloud reports 100 prompt tokens a call
    result = CliRunner().invoke(app, ["usage", str(project)])
    assert result.exit_code == 0 and "cloud" in result.output and "no model calls recorded" not in result.output


def test_the_audit_records_its_calibration_and_baseline_calls(project: Path) -> None:
    run_index(str(project))
    with FakeOllama() as ollama:
        settings = Settings(judge="ollama", ollama_host=ollama.url)
        run_audit(str(project), settings, baseline_n=3)
        sent = len(ollama.bodies("/api/chat"))
    assert sent >= 2  # the labelled passages and the baseline's functions, each batched
    assert _ledger_calls(project, "ollama")[0] == sent


def _sent_passages(bodies: list[dict]) -> list[tuple[str, str, str]]:
    return [m for b in bodies for m in PASSAGE.findall(b["messages"][-1]["content"])]


def _rejudged_rows(root: Path, backend: str) -> int:
    return sum(pq.read_metadata(p).num_rows for p in judgments_dir(root).rglob(f"*-rejudge-{backend}.parquet"))


def test_rejudge_sends_each_original_passage_once_and_skips_queries_the_backend_judged(project: Path) -> None:
    run_index(str(project))
    with FakeOllama() as ollama, FakeCloud() as cloud:
        ollama_settings = Settings(mode="hybrid", judge="ollama", ollama_host=ollama.url, cloud_base_url=cloud.url + "/v1",
                                   cloud_api_key=KEY)
        settings = ollama_settings.model_copy(update={"judge": "local"})
        run_query(str(project), "how does retry_call back off?", ollama_settings)  # the original: judged by ollama
        original = sum(pq.read_metadata(p).num_rows for p in judgments_dir(project).rglob("*.parquet"))
        asked = len(ollama.bodies("/api/chat"))

        first = run_audit(str(project), settings, rejudge="cloud", baseline_n=1)
        once = _sent_passages(cloud.bodies("/v1/chat/completions"))
        assert first["rejudged_queries"] == 1 and len(once) == original and len(set(once)) == original

        again = run_audit(str(project), settings, rejudge="ollama", baseline_n=1)
        assert again["rejudged_queries"] == 0 and len(ollama.bodies("/api/chat")) == asked  # ollama judged it already

        local = run_audit(str(project), settings, rejudge="local", baseline_n=1)
        assert local["rejudged_queries"] == 1 and _rejudged_rows(project, "local") == original  # not ollama's + cloud's

        sent_before = len(cloud.bodies("/v1/chat/completions"))
        last = run_audit(str(project), settings, rejudge="cloud", baseline_n=1)
        assert last["rejudged_queries"] == 0 and len(cloud.bodies("/v1/chat/completions")) == sent_before
    assert _rejudged_rows(project, "cloud") == original

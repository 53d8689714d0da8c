"""Faults: a killed index run, LLM backends down/slow/malformed/failing, a damaged vector store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.stages.core.config import Settings
from assay.stages.index.store import Catalog, VectorStore, load_manifest
from tests.fakes import FakeCloud, FakeOllama

ASSAY = str(Path(sys.executable).with_name("assay"))


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = {**os.environ, "ASSAY_ORCHESTRATION": "direct", **(env or {})}
    return subprocess.run([ASSAY, *args], capture_output=True, text=True, env=full, timeout=timeout)


def test_sigkill_during_dense_fill_leaves_a_queryable_index_and_the_next_run_completes(project: Path, ledger) -> None:
    run_index(str(project))
    before = {e.qualname for e in Catalog(project).all()}
    for i in range(400):
        (project / "pkg" / f"gen_{i}.py").write_text(
            "\n".join(f"def generated_{i}_{j}(x):\n    '''Generated helper {j}.'''\n    return x * {j}\n" for j in range(8)))
    proc = subprocess.Popen([ASSAY, "index", str(project)], env={**os.environ, "ASSAY_ORCHESTRATION": "direct"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    status = project / ".assay" / "status.json"
    deadline = time.time() + 240
    while time.time() < deadline:
        try:
            st = json.loads(status.read_text())
            if st["stages"].get("embed", {}).get("done", 0) > 0:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the index run never reached the embed stage")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    from assay.stages.core.progress import read_status

    assert read_status(project)["state"] == "interrupted"  # not "running" forever
    after_kill = load_manifest(project)
    assert any(p.startswith("pkg/gen_") for p in after_kill.files) and after_kill.dense_pending  # lexical phase done
    found = cli("search", "generated_399_7", str(project), "-k", "3")  # BM25 already knows the new code
    assert found.returncode == 0 and "pkg/gen_399.py" in found.stdout and "dense index partial" in found.stderr
    answer = cli("ask", "how does retry_call back off?", str(project))
    assert answer.returncode == 0 and "pkg/retry.py:17" in answer.stdout and "dense index partial" in answer.stdout
    ledger.kept(before, {e.qualname for e in Catalog(project).all()})
    done = cli("index", str(project))
    assert done.returncode == 0, done.stderr
    final = {e.qualname for e in Catalog(project).all()}
    assert {f"generated_{i}_{j}" for i in range(400) for j in range(8)} <= final
    complete = load_manifest(project)
    assert complete.dense_pending == []
    assert VectorStore(project, None, complete.collection).count() == Catalog(project).count()  # every passage has its vector
    ledger.kept(before, final)


@pytest.mark.parametrize("mode", ["down", "slow", "malformed", "partial", "error500"])
def test_ollama_judge_faults_fail_open_with_the_reason(indexed_project: Path, mode: str, ledger) -> None:
    if mode == "down":
        s = Settings(judge="ollama", ollama_host="http://127.0.0.1:9", llm_timeout=2)
        report = run_query(str(indexed_project), "how does retry_call back off?", s)
    else:
        with FakeOllama(mode=mode, delay=3) as server:
            s = Settings(judge="ollama", ollama_host=server.url, llm_timeout=1)
            report = run_query(str(indexed_project), "how does retry_call back off?", s)
    ledger.check()
    assert report.selection.fail_open and report.selection.included
    assert "fail-open:" in report.text and report.status == "partial"
    assert "retry_call" in [r.candidate.entity for r in report.selection.included]


def test_cloud_429_with_retry_after_then_answers(project: Path, ledger) -> None:
    run_index(str(project))
    with FakeCloud(script=[429, 429], retry_after="0.3") as cloud:
        s = Settings(mode="hybrid", route="cloud", cloud_base_url=cloud.url + "/v1", cloud_api_key="k", llm_retries=2)
        start = time.time()
        report = run_query(str(project), "how does retry_call back off?", s)
        assert time.time() - start >= 0.6  # it honoured Retry-After twice
        assert len(cloud.bodies("/v1/chat/completions")) == 3
    ledger.check()
    assert report.answer.backend == "cloud" and not report.answer.failure


def test_cloud_down_answers_extractively_and_says_so(project: Path, ledger) -> None:
    run_index(str(project))
    s = Settings(mode="hybrid", route="cloud", cloud_base_url="http://127.0.0.1:9/v1", cloud_api_key="k", llm_timeout=2)
    report = run_query(str(project), "how does retry_call back off?", s)
    ledger.check()
    assert report.answer.backend == "extractive" and "answered extractively" in report.text


def test_vector_store_deleted_or_corrupted(project: Path, ledger) -> None:
    assert cli("index", str(project)).returncode == 0
    before = {e.qualname for e in Catalog(project).all()}
    shutil.rmtree(project / ".assay" / "chroma")
    ask = cli("ask", "how does retry_call back off?", str(project))
    assert ask.returncode == 0 and "vector store is empty" in ask.stdout and "pkg/retry.py:17" in ask.stdout
    fixed = cli("index", str(project))
    assert fixed.returncode == 0 and "re-embedding everything" in fixed.stdout
    (project / ".assay" / "chroma" / "chroma.sqlite3").write_bytes(b"not a database" * 100)
    broken = cli("index", str(project))
    assert broken.returncode == 2 and broken.stderr.count("\n") == 1 and "assay index --rebuild" in broken.stderr
    assert "Traceback" not in broken.stderr
    ask = cli("ask", "how does retry_call back off?", str(project))
    assert ask.returncode == 0 and "dense index unavailable" in ask.stdout
    rebuilt = cli("index", "--rebuild", str(project))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert any(p.name.startswith("chroma.damaged-") for p in (project / ".assay").iterdir())  # set aside, not deleted
    ledger.kept(before, {e.qualname for e in Catalog(project).all()})
    assert "distance" in cli("ask", "how does retry_call back off?", str(project)).stdout


def test_cli_errors_are_one_line(tmp_path: Path, ledger) -> None:
    for args in (["index", str(tmp_path / "missing")], ["ask", "q", str(tmp_path)], ["search", "q", str(tmp_path)],
                 ["ask", "   ", str(tmp_path)], ["status", str(tmp_path / "missing")]):
        res = cli(*args)
        ledger.check()
        assert res.returncode == 2 and res.stderr.startswith("error:") and res.stderr.count("\n") == 1, (args, res.stderr)

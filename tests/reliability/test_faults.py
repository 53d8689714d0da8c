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
from tests.processes import process_tree, still_running

ASSAY = str(Path(sys.executable).with_name("assay"))


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = {**os.environ, "ASSAY_ORCHESTRATION": "direct", **(env or {})}
    return subprocess.run([ASSAY, *args], capture_output=True, text=True, env=full, timeout=timeout)


GENERATED_FILES = 140  # x 9 passages, ~1,280 with the fixture's: two store slices, and a scan worker of its own


def generate(project: Path) -> set[str]:
    """Add small generated modules (short passages embed fast); returns their function names."""
    for i in range(GENERATED_FILES):
        (project / "pkg" / f"gen_{i}.py").write_text(
            "\n".join(f"def generated_{i}_{j}(x):\n    '''Generated helper {j}.'''\n    return x * {j}\n" for j in range(8)))
    return {f"generated_{i}_{j}" for i in range(GENERATED_FILES) for j in range(8)}


def start_index(project: Path) -> subprocess.Popen:
    return subprocess.Popen([ASSAY, "index", str(project)], env={**os.environ, "ASSAY_ORCHESTRATION": "direct"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def embedded_so_far(project: Path, proc: subprocess.Popen) -> int:
    """Passages embedded by `proc`'s run, as its status file says (0 while the file is another run's)."""
    try:
        st = json.loads((project / ".assay" / "status.json").read_text())
    except (OSError, ValueError):
        return 0
    return st.get("stages", {}).get("embed", {}).get("done", 0) if st.get("pid") == proc.pid else 0


def wait_until_embedded(project: Path, proc: subprocess.Popen, at_least: int, timeout: float = 240) -> None:
    """Block until the run's status file says `at_least` passages are embedded (kill it and fail if it never does)."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if embedded_so_far(project, proc) >= at_least:
            return
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"the index run never embedded {at_least} passages (exit code {proc.poll()})")


def test_sigkill_during_the_first_index_run_leaves_a_queryable_index_and_the_next_run_resumes(project: Path, ledger) -> None:
    """Killed at ~400 of ~1,280 passages (inside the first 1,024-passage store slice, before any vector was stored):
    BM25 already answers, status reads "interrupted", and the next run embeds only what the dead one had not."""
    from assay.stages.core.progress import read_status, run_view

    generated = generate(project)
    proc = start_index(project)
    wait_until_embedded(project, proc, at_least=400)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    killed = run_view(read_status(project))
    assert killed["state"] == "interrupted"  # not "running" forever
    embedded_at_kill, total = killed["passages_done"], killed["passages_total"]  # the file lags the cache, never leads
    assert 400 <= embedded_at_kill < 1024 < total
    shown = json.loads(cli("status", str(project), "--json").stdout)
    assert shown["run"]["state"] == "interrupted" and shown["run"]["passages_done"] == embedded_at_kill
    after_kill = load_manifest(project)
    assert any(p.startswith("pkg/gen_") for p in after_kill.files) and after_kill.dense_pending  # lexical phase done
    found = cli("search", f"generated_{GENERATED_FILES - 1}_7", str(project), "-k", "3")  # BM25 already knows the new code
    assert found.returncode == 0 and f"pkg/gen_{GENERATED_FILES - 1}.py" in found.stdout and "dense index partial" in found.stderr
    answer = cli("ask", "how does retry_call back off?", str(project))
    assert answer.returncode == 0 and "pkg/retry.py:17" in answer.stdout and "dense index partial" in answer.stdout
    before = {e.qualname for e in Catalog(project).all()}
    assert generated <= before
    done = cli("index", "--json", str(project))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    fresh = report["entities_embedded"] - report["embed_cached"]
    print(f"resume: {total} passages, {embedded_at_kill} embedded at the kill, {fresh} embedded again by the next run")
    assert report["entities_embedded"] == total and fresh <= (total - embedded_at_kill) + total // 10
    final = {e.qualname for e in Catalog(project).all()}
    complete = load_manifest(project)
    assert complete.dense_pending == []
    assert VectorStore(project, None, complete.collection).count() == Catalog(project).count()  # every passage has its vector
    assert json.loads(cli("status", str(project), "--json").stdout)["run"]["state"] == "done"
    ledger.kept(before, final)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process trees from /proc")
def test_no_process_outlives_a_killed_index_run(project: Path) -> None:
    """SIGKILL during the embed stage: every process the run started (parse workers, the injection scan) is gone
    within seconds, checked by pid."""
    generate(project)
    proc = start_index(project)
    seen: dict[int, str] = {}
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:  # collect every descendant the run starts
        seen.update(process_tree(proc.pid))
        if embedded_so_far(project, proc) > 0 and seen:
            break
        time.sleep(0.1)
    seen.update(process_tree(proc.pid))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert seen, "the run started no process of its own: the project is too small to test this"
    deadline = time.time() + 10
    while time.time() < deadline and any(still_running(pid, started) for pid, started in seen.items()):
        time.sleep(0.2)
    left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120]
            for pid, started in seen.items() if still_running(pid, started)}
    for pid in left:  # leave nothing behind for the next test
        os.kill(pid, signal.SIGKILL)
    assert left == {}, f"still running after the index run was killed: {left}"


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

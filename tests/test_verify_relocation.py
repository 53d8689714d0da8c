"""Re-test verify2's new relocation defects: an MCP index run whose workspace is moved ends "failed" (never
"running" for the server's life, no thread traceback); Ctrl-C leaves no worker traceback; a dangling `.assay` link
is named; a watch of a folder that can never be indexed ends; a copy sharing a linked `.assay` is told so on read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows import index as index_flow
from assay.flows import mcp_server as m
from assay.flows.cli import app
from assay.stages.core import progress as prog
from assay.stages.core.config import Settings

runner = CliRunner()
STATIC = {"ASSAY_EMBEDDER": "static"}
SETTINGS = Settings(embedder="static")


def small(folder: Path, name: str = "alpha_one", files: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (folder / f"a{i}.py").write_text(f"def {name}_{i}():\n    return {i}\n")
    return folder


def text(res) -> str:
    return res.content[0].text


# 1. MCP index_workspace on a workspace moved during the run


@pytest.fixture()
def mcp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("ASSAY_WATCH", "false")
    monkeypatch.setenv("ASSAY_EMBEDDER", "static")
    return tmp_path


@pytest.fixture()
def thread_errors(monkeypatch: pytest.MonkeyPatch) -> list:
    """Exceptions that escaped a thread (what the server's stderr would show as a traceback)."""
    caught: list = []
    monkeypatch.setattr(threading, "excepthook", lambda args: caught.append(args.exc_value))
    return caught


def _move_during_embed(monkeypatch: pytest.MonkeyPatch, root: Path, moved: Path, hold: threading.Event | None = None,
                       moved_now: threading.Event | None = None) -> None:
    real_mark = index_flow._mark_stored

    def move_then_mark(*args):  # the move lands in the embed phase, as a `mv` during a long run does
        if root.exists():
            root.rename(moved)
            if moved_now is not None:
                moved_now.set()
            if hold is not None:
                hold.wait(30)
        return real_mark(*args)

    monkeypatch.setattr(index_flow, "_mark_stored", move_then_mark)


def test_mcp_index_of_a_workspace_moved_mid_run_ends_failed(mcp_env: Path, monkeypatch: pytest.MonkeyPatch,
                                                            thread_errors: list) -> None:
    root, moved = small(mcp_env / "K", files=5), mcp_env / "K2"
    _move_during_embed(monkeypatch, root, moved)
    assert not m.index_workspace(str(root)).is_error
    m._jobs[str(root)].join(timeout=120)
    assert not m._jobs[str(root)].is_alive()
    assert thread_errors == []  # no uncaught exception in the index thread
    state = prog.read_status(moved)  # the status that moved with the workspace
    assert state["state"] == "failed"
    assert state["last_error"] == f"the workspace {root} was moved or deleted during the run: index it at its new path"
    shown = m.index_status(str(moved))
    assert not shown.is_error and shown.structured_content["state"] == "failed"
    assert "running" not in text(shown) and "moved or deleted" in text(shown), text(shown)
    assert not root.exists()  # nothing made at the old path
    res = runner.invoke(app, ["status", str(moved)])
    assert "index running" not in res.output and "moved or deleted" in res.output, res.output


def test_status_of_the_new_path_is_not_running_before_the_run_notices(
        mcp_env: Path, monkeypatch: pytest.MonkeyPatch, thread_errors: list) -> None:
    root, moved = small(mcp_env / "K", files=5), mcp_env / "K2"
    hold, moved_now = threading.Event(), threading.Event()
    _move_during_embed(monkeypatch, root, moved, hold, moved_now)
    assert not m.index_workspace(str(root)).is_error
    try:
        assert moved_now.wait(120)
        raw = json.loads((moved / ".assay" / "status.json").read_text())
        assert raw["state"] == "running"  # the file still says so: the run has not noticed the move yet
        shown = m.index_status(str(moved))
        assert shown.structured_content["state"] == "failed", text(shown)
        assert "running" not in text(shown), text(shown)
        assert f"this run indexed {root}, and the workspace was moved or copied here" in text(shown), text(shown)
        res = runner.invoke(app, ["status", str(moved)])
        assert "index running" not in res.output and f"this run indexed {root}" in res.output, res.output
    finally:
        hold.set()
        m._jobs[str(root)].join(timeout=120)
    assert thread_errors == []
    assert prog.read_status(moved)["state"] == "failed"


def test_a_cli_run_moved_mid_run_leaves_the_moved_status_failed_with_why(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    root, moved = small(tmp_path / "mi", files=5), tmp_path / "mi2"
    _move_during_embed(monkeypatch, root, moved)
    res = runner.invoke(app, ["index", str(root)], env=STATIC)
    assert res.exit_code == 2
    state = prog.read_status(moved)
    assert state["state"] == "failed" and "moved or deleted during the run" in state["last_error"]


# 2. Ctrl-C: worker processes end quietly, only the main process reports

POOL_SCRIPT = """
import sys
from assay.stages.core.workers import worker_pool
pool = worker_pool(1)
job = pool.submit(__import__("slow_job").job)
print("submitted", flush=True)
try:
    job.result()
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
"""
SLOW_JOB = "import time\ntime.sleep(3)  # a worker still importing its job's module (injection_scan's imports)\n\n\n" \
           "def job():\n    time.sleep(60)\n"


@pytest.mark.parametrize("delay", [1.5, 5.0])  # 1.5: the worker imports its job's module; 5: it runs the job
def test_ctrl_c_stops_pool_workers_without_a_traceback(tmp_path: Path, delay: float) -> None:
    (tmp_path / "slow_job.py").write_text(SLOW_JOB)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", POOL_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)  # its own process group, as a terminal's job
    assert proc.stdout.readline().strip() == "submitted"
    time.sleep(delay)
    began = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: every process of the group gets it
    _, err = proc.communicate(timeout=90)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip() == "interrupted" and proc.returncode == 130
    assert time.monotonic() - began < 10  # the worker did not finish its 60 s job first


def test_ctrl_c_of_assay_index_in_the_embed_phase_prints_one_line(tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    for f in range(30):  # 3000 passages: the injection scan runs in a worker process beside the embedding
        (root / f"m{f}.py").write_text("".join(f"def fn_{f}_{i}(x):\n    return x + {i}\n\n\n" for i in range(100)))
    env = {**os.environ, "ASSAY_EMBEDDER": "static", "ASSAY_ORCHESTRATION": "direct"}
    proc = subprocess.Popen([sys.executable, "-m", "assay.flows.cli", "index", str(root)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    status = root / ".assay" / "status.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if status.is_file() and '"stage": "embed"' in status.read_text(errors="replace"):
            break
        time.sleep(0.02)
    if proc.poll() is not None:
        pytest.skip("the run ended before the embed phase could be interrupted")
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted during "), err
    assert proc.returncode == 130


# 3. a dangling `.assay` link


def _dangling(tmp_path: Path) -> tuple[Path, Path]:
    root = small(tmp_path / "H")
    (root / ".assay").symlink_to(tmp_path / "nostate")
    return root, tmp_path / "nostate"


def test_a_dangling_state_link_is_named_by_index_status_and_search(tmp_path: Path, mcp_env: Path) -> None:
    root, target = _dangling(tmp_path)
    why = (f"{root / '.assay'} is a link to {target}, which does not exist: create that folder or remove the link "
           f"(`rm {root / '.assay'}`)")
    res = runner.invoke(app, ["index", str(root)], env=STATIC)
    assert res.exit_code == 2 and res.output.strip().splitlines() == [f"error: {why}"], res.output
    res = runner.invoke(app, ["status", str(root)])
    assert res.output.strip() == f"{root}: not indexed, and cannot be indexed in place: {why}"
    assert "assay index" not in res.output
    res = runner.invoke(app, ["search", "alpha_one_0", str(root)])
    assert res.exit_code == 2 and why in res.output and "assay index" not in res.output, res.output
    started = m.index_workspace(str(root))
    assert started.is_error and text(started) == f"error: {why}"
    assert why in text(m.index_status(str(root)))
    assert not target.exists() and (root / ".assay").is_symlink()  # nothing made, the link left as it was


def test_a_state_link_to_itself_is_named_a_loop_not_a_folder_to_create(tmp_path: Path) -> None:
    from assay.stages.core.workspace import dangling_state_link

    root = small(tmp_path / "L")
    (root / ".assay").symlink_to(".assay")
    why = str(dangling_state_link(root))
    assert why == (f"{root / '.assay'} is a link that leads back to itself (a loop of links): remove the link "
                   f"(`rm {root / '.assay'}`), or point it at a folder")
    res = runner.invoke(app, ["index", str(root)], env=STATIC)
    assert res.exit_code == 2 and res.output.strip() == f"error: {why}"


# 5. `assay watch` on a folder that can never be indexed


def test_watch_of_a_folder_that_cannot_be_indexed_ends_with_the_error(tmp_path: Path) -> None:
    root, _ = _dangling(tmp_path)
    began = time.monotonic()
    res = runner.invoke(app, ["watch", str(root)], env=STATIC)
    assert time.monotonic() - began < 60
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert lines[0] == f"watching {root} (Ctrl-C stops)"
    assert lines[1:] == [f"error: {root / '.assay'} is a link to {tmp_path / 'nostate'}, which does not exist: "
                         f"create that folder or remove the link (`rm {root / '.assay'}`)"], res.output


def test_watch_of_a_folder_too_deep_for_sqlite_ends_with_the_error(tmp_path: Path) -> None:
    path = str(tmp_path.resolve())
    while len(path) < 476 - 51:
        path += "/" + "b" * 50
    root = small(Path(path + "/" + "c" * (476 - len(path) - 1)))
    res = runner.invoke(app, ["watch", str(root)], env=STATIC)
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1].startswith("error: the workspace path is too long for the index: 476 bytes")
    assert not (root / ".assay").exists()


def test_a_watch_whose_catch_up_fails_for_a_passing_reason_goes_on(tmp_path: Path, monkeypatch) -> None:
    from assay.flows import watch as watch_flow

    root = small(tmp_path / "W")
    runs: list = []
    stop = threading.Event()
    monkeypatch.setattr(watch_flow, "run_index", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    thread = threading.Thread(target=watch_flow.watch_workspace, args=(root, SETTINGS, stop),
                              kwargs={"on_run": lambda c, r, e: runs.append(e), "catch_up": True}, daemon=True)
    thread.start()
    time.sleep(2)
    assert thread.is_alive()  # a writable folder: the next change may succeed
    stop.set()
    thread.join(10)
    assert [str(e) for e in runs] == ["disk full"]


# 4. a copy sharing a linked `.assay` with another workspace: tests/test_relocation.py (every door refuses)

"""What an index run's status says, the same through `assay status` and the MCP `index_status` tool.

The formatting is pure (a status dict in, a view and a line out) and tested without Prefect; the doors are
tested end to end: a CLI index ends "done", a killed writer reads "interrupted".
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assay.stages.core import progress as prog
from tests.conftest import FIXTURES

ASSAY = str(Path(sys.executable).with_name("assay"))
T0 = 1_700_000_000.0


def running_state() -> dict:
    return {"state": "running", "started": T0, "pid": 4242, "last_error": "", "stage": "embed", "updated": T0 + 29,
            "stages": {"parse": {"done": 400, "total": 400, "started": T0 + 1},
                       "embed": {"done": 976, "total": 2002, "started": T0 + 10}}}


def test_a_running_view_has_live_progress_rate_and_eta() -> None:
    view = prog.run_view(running_state(), now=T0 + 30)
    assert view["state"] == "running" and view["stage"] == "embed"
    assert (view["files_done"], view["files_total"], view["passages_done"], view["passages_total"]) == (400, 400, 976, 2002)
    assert view["rate"] == 48.8  # 976 passages in 20 s
    assert view["eta_seconds"] == pytest.approx(1026 / 48.8, abs=0.1)
    assert view["elapsed_seconds"] == 30 and view["ended"] is None
    line = prog.run_line(view)
    assert line.startswith("index running (pid 4242, 30s so far): embed;")
    assert "files 400/400 parsed, passages 976/2002 embedded, 48.8/s, ETA 21s" in line


def test_a_view_before_the_first_passage_has_no_rate_and_a_parse_eta() -> None:
    state = running_state()
    state["stage"] = "parse"
    state["stages"] = {"parse": {"done": 100, "total": 400, "started": T0}}
    view = prog.run_view(state, now=T0 + 10)
    assert view["rate"] is None and view["eta_seconds"] == 30.0  # 10 files/s, 300 to go
    assert prog.run_line(view).endswith("parse; files 100/400 parsed, ETA 30s")


def test_a_resumed_runs_rate_and_eta_leave_out_what_it_did_not_embed() -> None:
    """A resumed run finds most vectors remembered at once: counted as done, but a rate over them would promise an
    ETA of seconds for what takes minutes."""
    state = running_state()
    state["stages"]["embed"] = {"done": 976, "total": 2002, "started": T0 + 10, "skipped": 736}
    view = prog.run_view(state, now=T0 + 30)
    assert view["passages_done"] == 976 and view["rate"] == 12.0  # 240 embedded in 20 s, not 976
    assert view["eta_seconds"] == pytest.approx(1026 / 12.0, abs=0.1)


def test_finished_interrupted_and_failed_runs_say_so_and_when() -> None:
    done = {**running_state(), "state": "done", "finished": T0 + 60,
            "summary": {"entities": 2002, "embedded": 2002, "embed_cached": 704}}
    done["stages"]["embed"]["done"] = 2002
    view = prog.run_view(done, now=T0 + 5000)
    assert view["ended"] == T0 + 60 and view["elapsed_seconds"] == 60 and view["eta_seconds"] is None
    assert view["rate"] == 40.0  # over the embed stage's own time, not until now
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(T0 + 60))
    assert prog.run_line(view) == f"last index done at {stamp} in 1m00s: 2002 passages, 2002 embedded this run (704 from cache)"

    dead = {**running_state(), "state": "interrupted"}  # as read_status reads a running file whose pid is gone
    line = prog.run_line(prog.run_view(dead, now=T0 + 5000))
    heard = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(T0 + 29))
    assert line == (f"last index interrupted (its process 4242 is gone; last heard of at {heard}) during embed: "
                    "files 400/400 parsed, passages 976/2002 embedded; run `assay index` to resume (what it embedded is "
                    "cached and is stored without embedding again)")

    failed = {**running_state(), "state": "failed", "finished": T0 + 40, "last_error": "the embedder did not load"}
    line = prog.run_line(prog.run_view(failed, now=T0 + 5000))
    assert line.startswith("last index failed at ") and ": the embedder did not load (files 400/400" in line
    assert prog.run_view(None) is None


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def start(self, stage: str, total: int) -> None:
        self.events.append(("start", stage, total))

    def advance(self, stage: str, n: int = 1) -> None:
        self.events.append(("advance", stage, n))

    def skip(self, stage: str, n: int) -> None:
        self.events.append(("skip", stage, n))

    def error(self, message: str) -> None:
        self.events.append(("error", message))


def test_status_run_writes_one_file_for_every_door_and_fans_out(tmp_path: Path) -> None:
    watcher = Recorder()
    with prog.status_run(tmp_path, watcher) as status:
        assert prog.read_status(tmp_path)["state"] == "running"  # at once, before any stage
        prog.progress_for(tmp_path).start("embed", 4)
        prog.progress_for(tmp_path).skip("embed", 1)
        prog.progress_for(tmp_path).advance("embed", 2)
        status.finish("done", {"entities": 4, "embedded": 2})
    assert watcher.events == [("start", "embed", 4), ("skip", "embed", 1), ("advance", "embed", 2)]
    assert isinstance(prog.progress_for(tmp_path), prog.NullSink)  # unregistered
    written = prog.read_status(tmp_path)
    assert written["state"] == "done" and written["summary"]["embedded"] == 2 and written["stages"]["embed"]["done"] == 3
    assert written["stages"]["embed"]["skipped"] == 1

    with pytest.raises(RuntimeError), prog.status_run(tmp_path):
        raise RuntimeError("disk full\nsecond line")
    failed = prog.read_status(tmp_path)
    assert failed["state"] == "failed" and failed["last_error"] == "disk full" and failed["finished"]

    with prog.status_run(tmp_path):
        pass
    assert prog.read_status(tmp_path)["state"] == "done"  # a caller that forgets to finish still ends "done"


# ----------------------------------------------------------------------------- the doors


def test_status_after_a_cli_index_is_done_in_both_doors_and_interrupted_after_a_killed_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", project)
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct"}
    indexed = subprocess.run([ASSAY, "index", str(project)], capture_output=True, text=True, env=env, timeout=300)
    assert indexed.returncode == 0, indexed.stderr
    status = json.loads(subprocess.run([ASSAY, "status", str(project), "--json"], capture_output=True, text=True,
                                       env=env, timeout=120).stdout)
    assert status["last_run"]["state"] == "done" and status["run"]["state"] == "done"
    assert status["run"]["files_done"] == status["run"]["files_total"] == 5 and status["run"]["summary"]["entities"] > 10
    text = subprocess.run([ASSAY, "status", str(project)], capture_output=True, text=True, env=env, timeout=120).stdout
    assert "run: last index done at " in text
    assert mcp_index_status(project, tmp_path)["state"] == "done"

    # a writer killed mid-run (SIGKILL: it cannot finish its status) reads "interrupted" in both doors
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom pathlib import Path\nfrom assay.stages.core.progress import StatusSink\n"
        "s = StatusSink(Path(sys.argv[1])); s.start('embed', 20); time.sleep(0.6); s.advance('embed', 7); time.sleep(600)\n"),
        str(project)], env=env)
    deadline = time.time() + 60
    while (prog.read_status(project) or {}).get("stages", {}).get("embed", {}).get("done") != 7:
        assert time.time() < deadline and writer.poll() is None, "the writer never wrote its progress"
        time.sleep(0.1)
    assert prog.run_view(prog.read_status(project))["state"] == "running"
    writer.kill()
    writer.wait(30)
    status = json.loads(subprocess.run([ASSAY, "status", str(project), "--json"], capture_output=True, text=True,
                                       env=env, timeout=120).stdout)
    assert status["run"]["state"] == "interrupted" and status["run"]["passages_done"] == 7
    via_mcp = mcp_index_status(project, tmp_path)
    assert via_mcp["state"] == "interrupted" and via_mcp["passages_done"] == 7 and via_mcp["passages_total"] == 20


def mcp_index_status(project: Path, tmp_path: Path) -> dict:
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("PREFECT_", "PATH", "HOME", "LANG"))}
    env.update({"ASSAY_ORCHESTRATION": "direct", "ASSAY_HOME": str(tmp_path / "home"), "ANONYMIZED_TELEMETRY": "False"})
    params = StdioServerParameters(command=ASSAY, args=["mcp"], cwd=str(project), env=env)

    async def ask() -> dict:
        async with Client(params) as client:
            res = await client.call_tool("index_status", {"path": str(project)}, read_timeout_seconds=120)
            assert not res.is_error, res.content[0].text
            assert res.content[0].text.startswith(f"{project}: ")
            return res.structured_content

    return asyncio.run(ask())


HOLDER = (  # takes the workspace's write lock, reports progress, and lets go once told to (a file appears)
    "import sys, time\nfrom pathlib import Path\nfrom assay.stages.core.progress import status_run\n"
    "from assay.stages.index.store import write_lock\nroot, go = Path(sys.argv[1]), Path(sys.argv[2])\n"
    "with write_lock(root), status_run(root) as s:\n    s.start('embed', 20); time.sleep(0.6); s.advance('embed', 7)\n"
    "    while not go.exists(): time.sleep(0.05)\n")


def test_a_run_waiting_for_the_write_lock_leaves_the_running_ones_status_alone(tmp_path: Path) -> None:
    """Two writers on one workspace (an IDE's watcher and a terminal): the second waits its turn, and until it has
    the lock, `.assay/status.json` keeps telling the first's progress; then it tells its own."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", project)
    go = tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(project), str(go)])
    second = None
    try:
        deadline = time.time() + 60
        while (prog.read_status(project) or {}).get("stages", {}).get("embed", {}).get("done") != 7:
            assert time.time() < deadline and holder.poll() is None, "the holder never wrote its progress"
            time.sleep(0.1)
        env = {**os.environ, "ASSAY_ORCHESTRATION": "direct"}
        second = subprocess.Popen([ASSAY, "index", str(project), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env)
        time.sleep(8)  # the second run starts, discovers the files and waits for the lock
        assert second.poll() is None, second.communicate()
        waiting = prog.read_status(project)
        assert waiting["pid"] == holder.pid and waiting["stages"]["embed"]["done"] == 7 and waiting["state"] == "running"
        sink = prog.StatusSink(project)  # a third writer, in this process: it writes nothing while another holds the lock
        sink.start("embed", 99)
        assert prog.read_status(project)["pid"] == holder.pid
        go.touch()
        assert holder.wait(60) == 0
        out, err = second.communicate(timeout=300)
        assert second.returncode == 0, err
        finished = prog.read_status(project)
        assert finished["pid"] == second.pid and finished["state"] == "done" and finished["summary"]["entities"] > 10
    finally:  # a failed assertion leaves no process behind
        for proc in (holder, second):
            if proc is not None and proc.poll() is None:
                proc.kill()


def test_the_write_lock_says_who_holds_it_to_a_writer_that_must_wait(tmp_path: Path) -> None:
    from assay.stages.core.writer import other_writer
    from assay.stages.index.store import write_lock

    go = tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), str(go)])
    try:
        deadline = time.time() + 60
        while other_writer(tmp_path) != holder.pid:
            assert time.time() < deadline and holder.poll() is None, "the holder never took the lock"
            time.sleep(0.1)
        heard: list[int | None] = []
        threading.Timer(1.0, go.touch).start()
        with write_lock(tmp_path, on_wait=heard.append):
            assert holder.wait(60) == 0 and other_writer(tmp_path) is None  # it is this process now
            assert (tmp_path / ".assay" / "write.holder").read_text() == str(os.getpid())
        assert heard == [holder.pid] and not (tmp_path / ".assay" / "write.holder").exists()
        with write_lock(tmp_path, on_wait=heard.append):  # free: nobody to wait for
            pass
        assert heard == [holder.pid]
    finally:
        if holder.poll() is None:
            holder.kill()

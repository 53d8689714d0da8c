"""Two processes writing one workspace: a long-lived writer (`assay watch`, the MCP server) whose cached Chroma client
must not call the store "damaged" after another process changed it, and a second writer that waits for the write
lock, says so, and fails with a readable message when the wait runs out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.flows.index import run_index
from assay.stages.core.workspace import state_dir

# Another process: index the workspace once (what a terminal's `assay index` does beside a watcher).
_INDEX_ELSEWHERE = "import sys; from assay.flows.index import run_index; run_index(sys.argv[1])"
# ... by an Assay from before `claim_store`: it does not note itself as the store's last writer
_OLDER_ASSAY = "import assay.stages.index.store as s; s.claim_store = lambda root: None; "


def _index_in_other_process(root: Path, older: bool = False) -> None:
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct"}
    code = (_OLDER_ASSAY if older else "") + _INDEX_ELSEWHERE
    done = subprocess.run([sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def _set_aside(root: Path) -> list[str]:
    return sorted(p.name for p in state_dir(root).glob("chroma.damaged-*"))


@pytest.mark.parametrize("older", [False, True])
def test_store_changed_by_another_process_is_not_damaged(project: Path, older: bool) -> None:
    """This process indexed (its Chroma client stays cached, as in a watcher); another process then indexes a rename
    (new ids, new vectors this process's client never saw). This process's next run must find the store healthy:
    nothing set aside, nothing re-stored, and every passage's vector there for a third process. With `older`, the other
    process does not note itself as the store's writer: the damage probe's second look (a fresh client) clears it."""
    run_index(str(project))
    (project / "pkg" / "retry.py").rename(project / "pkg" / "retry2.py")
    _index_in_other_process(project, older)
    (project / "pkg" / "session.py").write_text((project / "pkg" / "session.py").read_text() + "\n\ndef added():\n"
                                               "    return 1\n")
    report = run_index(str(project))
    assert "damaged" not in (report.rebuild_reason or "")
    assert _set_aside(project) == []
    assert report.entities_embedded < report.entities_total  # only the edited file's passages, not every vector again
    assert _vectors_seen_elsewhere(project) == report.entities_total


_COUNT_ELSEWHERE = ("import sys; from pathlib import Path; from assay.stages.index.store import VectorStore, "
                    "load_manifest; r = Path(sys.argv[1]); "
                    "print(VectorStore(r, None, load_manifest(r).collection).count())")


def _vectors_seen_elsewhere(root: Path) -> int:
    """The vectors a fresh process finds in the workspace's store."""
    done = subprocess.run([sys.executable, "-c", _COUNT_ELSEWHERE, str(root)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


# Another process holding the workspace's write lock (as a long `assay index` or a watcher's run does) for argv[2] s.
_HOLD_LOCK = ("import sys, time; from pathlib import Path; from assay.stages.index.store import write_lock\n"
              "with write_lock(Path(sys.argv[1])):\n"
              "    print('held', flush=True); time.sleep(float(sys.argv[2]))\n")


def _hold_lock(root: Path, seconds: float) -> subprocess.Popen:
    """Start the holder and return once it holds the lock."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(root), str(seconds)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held", holder.stderr
    return holder


def test_waiting_writer_says_so_and_times_out_naming_the_holder(project: Path, capfd: pytest.CaptureFixture) -> None:
    """A second writer says once that it waits, and for whom; when the wait runs out, one line names the holder and
    what to do (filelock's own message named only the lock file)."""
    from assay.stages.index.store import WriterBusy, write_lock

    holder = _hold_lock(project, 30)
    try:
        with pytest.raises(WriterBusy) as caught:
            with write_lock(project, timeout=1.5):
                pass
    finally:
        holder.kill()
        holder.wait()
    err = capfd.readouterr().err
    assert err.count("waiting for another Assay run") == 1
    assert f"(pid {holder.pid}, started " in err
    message = str(caught.value)
    assert "\n" not in message and "could not be acquired" not in message
    assert f"pid {holder.pid}" in message and f"kill {holder.pid}" in message and "run again" in message
    with write_lock(project, timeout=5):  # the holder gone, the lock is free again
        pass


def test_cli_index_behind_another_writer_fails_in_one_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`assay index` whose wait runs out: exit 2 and `error: ...` naming the holder, after the waiting note."""
    from typer.testing import CliRunner

    from assay.flows.cli import app
    from assay.stages.index import store

    monkeypatch.setattr(store.write_lock.__wrapped__, "__defaults__", (1.5, None))  # the 600 s wait, shortened
    holder = _hold_lock(project, 30)
    try:
        result = CliRunner().invoke(app, ["index", str(project)])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 2, result.output
    assert "waiting for another Assay run" in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [errors[0]] and f"pid {holder.pid}" in errors[0] and "could not be acquired" not in errors[0]


def test_queued_run_times_its_wait_apart_from_plan(project: Path) -> None:
    """A run queued behind another writer reports the queue as `wait`, not inside `plan`."""
    holder = _hold_lock(project, 3)
    try:
        report = run_index(str(project))
    finally:
        holder.wait()
    assert report.timings.get("wait", 0) >= 1.5
    assert report.timings["plan"] < 1.5

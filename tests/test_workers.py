"""Index workers (parse shares, the injection scan) exit when the process that started them dies, even by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PARENT = """
import os, sys
from assay.stages.core.workers import worker_pool
pool = worker_pool(1)
print(pool.submit(os.getpid).result(), flush=True)
pool.shutdown(wait=False)
os.kill(os.getpid(), 9)  # no atexit, no shutdown: what the OOM killer or `kill -9` leaves behind
"""


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its new parent to reap it has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_worker_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    out = tmp_path / "worker.pid"
    with out.open("w") as sink:  # a file, not a pipe: a worker that lives on would hold a pipe open
        code = subprocess.Popen([sys.executable, "-c", PARENT], stdout=sink, cwd=Path(__file__).resolve().parents[1]).wait(60)
    assert code == -signal.SIGKILL
    worker = int(out.read_text().split()[0])
    deadline = time.time() + 10
    while alive(worker) and time.time() < deadline:
        time.sleep(0.1)
    still = alive(worker)
    if still:
        os.kill(worker, signal.SIGKILL)  # leave nothing behind either way
    assert not still, "the worker outlived its killed parent"

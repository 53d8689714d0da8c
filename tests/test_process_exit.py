"""The `assay` command ends without interpreter teardown, yet loses no output, exit code or exit handler."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSAY = str(Path(sys.executable).with_name("assay"))


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_exit_now_flushes_output_runs_exit_handlers_and_keeps_the_code() -> None:
    done = _run(
        "import atexit, sys\n"
        "from assay.flows.process_exit import exit_now\n"
        "atexit.register(lambda: print('handler ran'))\n"
        "sys.stdout.write('x' * 100000)\n"  # more than a pipe buffer: left buffered unless flushed
        "exit_now(3)\n"
    )
    assert done.returncode == 3
    assert done.stdout.startswith("x" * 100000) and done.stdout.endswith("handler ran\n")


def test_exit_now_waits_for_a_running_thread_as_a_normal_exit_would() -> None:
    done = _run(
        "import threading, time\n"
        "from assay.flows.process_exit import exit_now\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), print('thread finished'))).start()\n"
        "exit_now(0)\n"
    )
    assert done.returncode == 0 and done.stdout == "thread finished\n"


def test_a_ctrl_c_while_the_exit_joins_a_thread_ends_quietly_with_the_commands_code() -> None:
    """Ctrl-C just after `assay index` finished (the exit joining a worker pool's thread) printed "Exception
    ignored ... KeyboardInterrupt"; the command's output and code stand."""
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import threading, time\n"
         "from assay.flows.process_exit import exit_now\n"
         "threading.Thread(target=time.sleep, args=(30,)).start()\n"
         "print('done', flush=True)\n"
         "exit_now(0)\n"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert child.stdout is not None and child.stdout.readline() == "done\n"
    time.sleep(0.5)  # inside the join
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=20)
    assert child.returncode == 0 and err == ""


def test_the_cli_reports_results_and_errors_with_their_exit_codes(tmp_path: Path) -> None:
    fresh = subprocess.run([ASSAY, "status", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert fresh.returncode == 0 and "not indexed" in fresh.stdout
    missing = subprocess.run([ASSAY, "index", str(tmp_path / "absent")], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and missing.stderr.count("\n") == 1
    usage = subprocess.run([ASSAY, "no-such-command"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "No such command" in usage.stderr


def test_a_profiled_command_still_writes_its_profile(tmp_path: Path) -> None:
    profile = tmp_path / "status.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "assay.flows.cli", "status", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and "not indexed" in done.stdout
    assert profile.stat().st_size > 0  # cProfile writes it after the program returns


def test_output_to_a_full_disk_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([ASSAY, "status", str(tmp_path), "--json"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == ("error: cannot write: No space left on device; free some space (or write the output "
                           "elsewhere) and run it again\n")


def test_assay_raises_a_low_soft_open_file_limit_to_the_hard_one(tmp_path: Path) -> None:
    """macOS starts processes at a soft limit of 256 under a far higher hard one; an MCP server ran out there."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip(f"the hard open-file limit here is {hard}")
    done = subprocess.run(
        [sys.executable, "-c", "import resource\nfrom assay.flows.process_exit import raise_open_file_limit\n"
         "raise_open_file_limit()\nprint(resource.getrlimit(resource.RLIMIT_NOFILE)[0])"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)))
    assert done.returncode == 0 and int(done.stdout) > 256, done.stderr


def test_a_notice_stderr_cannot_take_does_not_lose_the_results(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("def alpha_beta():\n    return 1\n")
    env = {**os.environ, "ASSAY_EMBEDDER": "static", "ASSAY_ORCHESTRATION": "direct"}
    assert subprocess.run([ASSAY, "index", str(tmp_path)], capture_output=True, env=env, timeout=300).returncode == 0
    with open("/dev/full", "w") as full:
        done = subprocess.run([ASSAY, "search", "alpha_beta", str(tmp_path)], stdout=subprocess.PIPE, stderr=full,
                              text=True, env=env, timeout=120)
    assert done.returncode == 0 and "[alpha_beta]" in done.stdout


def test_exit_now_does_not_wait_for_the_mcp_servers_idle_tool_workers() -> None:
    """AnyIO's worker threads (non-daemon, parked in a queue for the next sync tool call) made the MCP server's exit
    an interpreter teardown that waited on them; with an index run inside native code that teardown aborted."""
    done = _run(
        "import threading, time\n"
        "from assay.flows.process_exit import exit_now\n"
        "threading.Thread(target=threading.Event().wait, name='AnyIO worker thread').start()\n"
        "threading.Thread(target=lambda: time.sleep(30), daemon=True).start()\n"
        "print('ok', flush=True)\n"
        "exit_now(0)\n"
    )
    assert done.returncode == 0 and done.stdout == "ok\n"


def test_exit_now_ends_a_worker_pool_a_run_left_open() -> None:
    """An MCP client that hung up mid-index: the run's pool was still open, and multiprocessing's exit handler
    joined its idle worker, which waited for its next job forever (the server never exited)."""
    done = _run(
        "from assay.stages.core.workers import worker_pool\n"
        "from assay.flows.process_exit import exit_now\n"
        "pool = worker_pool(1)\n"
        "print(pool.submit(abs, -3).result(), flush=True)\n"  # a worker up, idle, waiting on its job pipe
        "exit_now(0)\n"
    )
    assert done.returncode == 0 and done.stdout == "3\n" and done.stderr == ""


def test_exit_now_kills_every_worker_spawned_even_one_its_pool_no_longer_lists() -> None:
    """The index run's pools end with `shutdown(wait=False)` when its client hangs up, which empties the pool's own
    list of workers; a worker left behind held the exit, since multiprocessing's exit handler joins it (verify5).
    Every worker is kept in a list of its own as it is spawned; here one that outlives its pool stands in."""
    done = _run(
        "import multiprocessing, time\n"
        "from assay.stages.core import workers\n"
        "from assay.flows.process_exit import exit_now\n"
        "pool = workers.worker_pool(1)\n"
        "assert pool.submit(abs, -3).result() == 3\n"
        "assert set(pool._processes.values()) <= set(workers._spawned)\n"  # each worker listed as it is spawned
        "pool.shutdown()\n"
        "left = multiprocessing.get_context('spawn').Process(target=time.sleep, args=(120,))\n"
        "left.start()\n"
        "workers._spawned.add(left)\n"
        "print('up', flush=True)\n"
        "exit_now(0)\n"
    )
    assert done.returncode == 0 and done.stdout == "up\n"

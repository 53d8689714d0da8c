"""The `assay` command ends without interpreter teardown, yet loses no output, exit code or exit handler."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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

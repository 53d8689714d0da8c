"""Process trees read from /proc, for the tests that check nothing a run starts outlives it (Linux only), and a
`chroma run` server on loopback for the tests and benchmarks that need one."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from assay.flows.prefect_api import free_port


def process_tree(root: int) -> dict[int, str]:
    """`root`'s descendants now: pid -> start time (a pid that comes back with another start time is another process)."""
    parents: dict[int, tuple[int, str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(stat.parent.name)] = (int(fields[1]), fields[19])
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, (ppid, started) in parents.items():
            if ppid == pid and child not in found:
                found[child] = started
                frontier.append(child)
    return found


def still_running(pid: int, started: str) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == started and fields[0] != "Z"  # a zombie has ended; only its exit status waits to be read


class ChromaServer:
    """`chroma run` from this interpreter's environment, on a free loopback port, its data in `path`."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path, self.port = path, port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> "ChromaServer":
        chroma = Path(sys.executable).with_name("chroma")
        self.process = subprocess.Popen([str(chroma), "run", "--host", "127.0.0.1", "--port", str(self.port),
                                         "--path", str(self.path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"chroma run did not answer on {self.url} within 60 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def collections(self) -> list[str]:
        reply = httpx.get(f"{self.url}/api/v2/tenants/default_tenant/databases/default_database/collections", timeout=10)
        reply.raise_for_status()
        return sorted(c["name"] for c in reply.json())

    def rss_mib(self) -> float:
        """The server process's resident memory now."""
        status = Path(f"/proc/{self.process.pid}/status").read_text() if self.process else ""
        return next((int(ln.split()[1]) / 1024 for ln in status.splitlines() if ln.startswith("VmRSS")), 0.0)

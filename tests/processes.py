"""Process trees read from /proc, for the tests that check nothing a run starts outlives it (Linux only)."""

from __future__ import annotations

from pathlib import Path


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

"""A new user's latency: cold `assay search` and `assay ask` (a fresh process each, default orchestration), and
the MCP server's first `ask` after `initialize`, on the indexed requests 2.32.5 sdist.

    python -m tests.benchmarks.bench_cli [--repeats 5] [--against REV]

"Cold" is a new process per command with the index already built (what a person typing `assay ask` or an agent
shelling out to it gets); no Prefect API is configured, so each process runs as a new user's would. `--against REV`
runs the same commands with the code of an older commit (a temporary git worktree) interleaved run by run, so both
see the same load on shared cores, and prints medians and ratios. Targets (issue "A new user's first ten minutes"):
search <= 1.0 s, ask <= 1.5 s, MCP first ask <= 2 s after initialize.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from tests.benchmarks.common import median, sdist, tree_command, worktree

ASSAY = str(Path(sys.executable).with_name("assay"))
SEARCH = "redirect history of a session"
QUESTION = "How does a session decide whether to rebuild authentication when it follows a redirect?"


def clean_env(home: Path, root: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """No Prefect API, default orchestration: a new user's shell (the MCP server allowed to read `root`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "ASSAY_"))}
    env.update({"ASSAY_HOME": str(home), "ASSAY_WATCH": "false", "PREFECT_HOME": str(home / "prefect"),
                "ASSAY_ALLOWED_ROOTS": str(root)})
    env.update(extra or {})
    return env


def timed(command: list[str], env: dict[str, str], cwd: Path | None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[-3:])} failed: {done.stderr.strip().splitlines()[-1:]}")
    return wall


def mcp_first_ask(command: list[str], env: dict[str, str], cwd: Path | None, root: Path) -> tuple[float, float]:
    """(seconds from spawn to initialized, seconds from initialized to the first ask's answer)."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=command[0], args=[*command[1:], "mcp"], env=env, cwd=str(cwd or root))

    async def scenario() -> tuple[float, float]:
        start = time.perf_counter()
        async with Client(params) as client:
            ready = time.perf_counter()
            res = await client.call_tool("ask", {"question": QUESTION, "path": str(root)}, read_timeout_seconds=600)
            answered = time.perf_counter()
            if res.is_error:
                raise SystemExit(f"MCP ask failed: {res.content[0].text}")
        return ready - start, answered - ready

    return asyncio.run(scenario())


def measure(command: list[str], env: dict[str, str], cwd: Path | None, root: Path) -> dict[str, float]:
    search = timed([*command, "search", SEARCH, str(root)], env, cwd)
    ask = timed([*command, "ask", QUESTION, str(root)], env, cwd)
    start, first = mcp_first_ask(command, env, cwd, root)
    return {"cold search": search, "cold ask": ask, "MCP start to initialized": start, "MCP first ask after initialize": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--requirement", default="requests==2.32.5")
    parser.add_argument("--against", help="also run an older commit's code, interleaved, and print the ratios")
    opts = parser.parse_args()
    root = sdist(opts.requirement)
    with tempfile.TemporaryDirectory(prefix="assay-bench-cli-") as tmp, ExitStack() as stack:
        scratch = Path(tmp)
        subprocess.run([ASSAY, "index", str(root)], env=clean_env(scratch / "home", root, {"ASSAY_ORCHESTRATION": "direct"}),
                       check=True, capture_output=True)
        runs: list[tuple[str, list[str], dict[str, str], Path | None]] = [("this", [ASSAY], {}, None)]
        if opts.against:
            tree = stack.enter_context(worktree(opts.against, scratch / "tree"))
            command, extra = tree_command(tree, scratch / "shim")
            runs.append((opts.against, command, extra, tree))
        figures: dict[str, dict[str, list[float]]] = {name: {} for name, *_ in runs}
        for _ in range(opts.repeats):
            for name, command, extra, cwd in runs:
                for key, value in measure(command, clean_env(scratch / "home", root, extra), cwd, root).items():
                    figures[name].setdefault(key, []).append(value)
    print(f"== {opts.requirement}, indexed; fresh processes, default orchestration, no Prefect API; median of {opts.repeats}")
    for key in figures["this"]:
        new = median(figures["this"][key])
        line = f"  {key}: {new:.2f} s"
        if opts.against:
            old = median(figures[opts.against][key])
            line = f"  {key}: {old:.2f} s ({opts.against}) -> {new:.2f} s (ratio {new / old:.2f})"
        print(line)


if __name__ == "__main__":
    main()

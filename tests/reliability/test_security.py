"""Injection, secrets and isolation: what reaches a model, what leaves the machine, what crosses workspaces."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.stages.core.config import Settings
from tests.conftest import FIXTURES, shared_path
from tests.fakes import FakeCloud, FakeOllama

ASSAY = str(Path(sys.executable).with_name("assay"))


def attacks(n: int = 24) -> list[str]:
    pool: list[str] = []
    for name in ("text_attack_train.json", "code_attack_train.json"):
        for strings in json.loads(shared_path("eval", "bipia", name).read_text()).values():
            pool.extend(" ".join(s.split()) for s in strings)
    return random.Random(3).sample(pool, n)


def plant_workspace(root: Path, strings: list[str]) -> dict[str, str]:
    """Plant attack strings in comments, docstrings, strings and Markdown; return topic -> attack."""
    planted = {}
    for i, attack in enumerate(strings):
        topic = f"zebra_topic_{i}"
        host = i % 4
        if host == 0:
            text = f"def {topic}(x):\n    # {attack}\n    return x\n"
            (root / f"{topic}.py").write_text(text)
        elif host == 1:
            (root / f"{topic}.py").write_text(f'def {topic}(x):\n    """{attack}"""\n    return x\n')
        elif host == 2:
            (root / f"{topic}.js").write_text(f"function {topic}(x) {{\n  const msg = {json.dumps(attack)};\n  return x;\n}}\n")
        else:
            (root / f"{topic}.md").write_text(f"# {topic}\n\nNotes about {topic}.\n\n{attack}\n")
        planted[topic] = attack
    return planted


def flag_injections(body: dict) -> dict:
    """A loopback judge that, like a real LLM judge, flags the passages carrying instructions."""
    user = body["messages"][-1]["content"]
    out = []
    for label in re.findall(r'<passage id="(p\d+)"', user):
        block = user.split(f'<passage id="{label}"', 1)[1].split("</passage>", 1)[0]
        inj = 0.9 if re.search(r"\byour\b|\bfollowing code\b|\?\s*$|^\s*(#|//)?\s*[A-Z][a-z]+ (a|an|the|me)\b", block, re.M) else 0.05
        out.append({"id": label, "relevance": 0.9, "evidence": 0.8, "contradicts": 0.0, "injection": inj})
    return {"passages": out, "answerable": 0.7, "coverage": 2, "conflict": 0.0}


def test_planted_attacks_are_dropped_counted_and_never_reach_the_writer(project: Path, ledger) -> None:
    planted = plant_workspace(project, attacks())
    run_index(str(project))
    reached: set[str] = set()
    dropped_total = 0
    with FakeOllama(judge=flag_injections) as ollama:
        for judge in ("local", "ollama"):
            s = Settings(judge=judge, synth="ollama", ollama_host=ollama.url)
            for topic in list(planted)[:12]:
                report = run_query(str(project), f"what does {topic} do?", s)
                dropped_total += report.selection.injection_dropped
                kept = " ".join(f"{r.candidate.body} {r.candidate.docstring}" for r in report.selection.included)
                reached |= {a for a in planted.values() if a in kept}
                if report.selection.injection_dropped:
                    assert "attempted prompt injection and were dropped" in report.text
        prompts = [b["messages"][-1]["content"] for b in ollama.bodies("/api/chat") if b.get("format") is None]
    ledger.check()
    # the local judge misses some plain-question attacks; the LLM judge (which sees them) catches the rest
    assert dropped_total >= 16, dropped_total
    leaked = [a for a in planted.values() if any(a in p for p in prompts)]
    for a in leaked:  # anything that reached a writer did so only inside <passage> delimiters
        for p in prompts:
            if a in p:
                start = p.index(a)
                assert p.rfind("<passage ", 0, start) > p.rfind("</passage>", 0, start)
    assert reached == set(leaked)  # only what the judges kept reached a writer


def test_no_secret_reaches_a_cloud_endpoint(project: Path, ledger) -> None:
    secrets = {
        ".env": ("OPENAI_API_KEY=sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2\nDB_PASSWORD=correct-horse-battery\n",
                 ["sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", "correct-horse-battery"]),
        "deploy.yaml": ("aws:\n  access_key_id: AKIAIOSFODNN7EXAMPLE\n  secret_access_key: wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n",
                        ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"]),
        "pkg/client.py": ('GITHUB_TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"\n\n'
                          'def auth_headers():\n    """Build auth headers with the token."""\n    return {"Authorization": GITHUB_TOKEN}\n',
                          ["ghp_16C7e42F292c6912E7710c838347Ae178B4a"]),
        "certs/key.md": ("# deploy key\n\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n",
                         ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"]),
    }
    for rel, (text, _) in secrets.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    run_index(str(project))
    with FakeCloud() as cloud:
        s = Settings(mode="cloud", judge="cloud", cloud_base_url=cloud.url + "/v1", cloud_api_key="sk-assay")
        for q in ("what API key, password and token does the project use?", "which aws access key is deployed?",
                  "how are auth headers built?", "where is the deploy private key?"):
            run_query(str(project), q, s)
        sent = json.dumps(cloud.requests)
    ledger.check()
    assert len(cloud.requests) >= 8
    for _, (_, values) in secrets.items():
        for value in values:
            assert value not in sent, value


def two_workspaces(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "ws_a", tmp_path / "ws_b"
    shutil.copytree(FIXTURES / "project", a)
    shutil.copytree(FIXTURES / "project", b)
    (b / "pkg" / "session.py").write_text('def merge_cookies(jar, cookies):\n    """B_ONLY_MARKER: drops all cookies."""\n    return {}\n')
    return a, b


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct"}
    return subprocess.run([ASSAY, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_cli_workspaces_never_cross_talk(tmp_path: Path, ledger) -> None:
    a, b = two_workspaces(tmp_path)
    assert cli("index", str(a)).returncode == 0 and cli("index", str(b)).returncode == 0
    out_a = cli("ask", "what does merge_cookies do?", str(a)).stdout
    out_b = cli("ask", "what does merge_cookies do?", str(b)).stdout
    ledger.check()
    assert "B_ONLY_MARKER" not in out_a and "B_ONLY_MARKER" in out_b
    assert "B_ONLY_MARKER" not in cli("search", "B_ONLY_MARKER drops cookies", str(a)).stdout
    via_dotdot = cli("search", "B_ONLY_MARKER", f"{a}/../ws_b")  # resolves to ws_b itself: b's own results
    assert "B_ONLY_MARKER" not in cli("search", "B_ONLY_MARKER", str(a)).stdout and via_dotdot.returncode == 0

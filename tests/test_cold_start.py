"""What a cold `assay search` / `assay ask` process loads: not Chroma's Python client (its import was ~1 s), not the
optimised ONNX session (~0.3 s to fold the weights for one query), and only the premise patterns a question can
match. Latency itself is measured by `tests/benchmarks/bench_cli.py`, not here."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from assay.stages.core import one_shot
from assay.stages.index.embed import MiniLMEmbedder
from assay.stages.query import premise


def _imported(args: list[str], env: dict[str, str]) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "assay.flows.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def test_cold_search_and_ask_read_the_store_without_chromas_python_client(indexed_project: Path) -> None:
    env = {**os.environ, "ASSAY_ORCHESTRATION": "direct"}
    for args in (["search", "retry backoff", str(indexed_project)], ["ask", "how does retry_call back off?", str(indexed_project)]):
        modules = _imported(args, env)
        assert "chromadb_rust_bindings" in modules, "the dense half was not read"
        assert "chromadb" not in modules and "prefect" not in modules, args[0]
        assert "typesafe_sdk" not in modules, "the System One SDK (~0.6 s) loads only for --judge systemone"
        if args[0] == "search":  # retrieval only: the judge is not loaded
            assert not [m for m in modules if m.startswith("assay.stages.query.judge.")], "search imported the judge"


def test_a_one_shot_query_loads_only_the_quick_session_and_embeds_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(one_shot, "_ONE_SHOT", threading.Event())
    text = ["How does a session decide whether to rebuild authentication when it follows a redirect?"]
    long_lived = MiniLMEmbedder()
    slow, _ = long_lived.embed(text)
    assert set(long_lived._sessions) == {True}
    one_shot.mark_one_shot()
    cold = MiniLMEmbedder()
    quick, _ = cold.embed(text)
    assert set(cold._sessions) == {False}
    assert float(np.dot(slow[0], quick[0])) > 0.9999  # the same vector up to float rounding
    long_lived.embed(text)
    assert set(long_lived._sessions) == {True}  # a loaded optimised session is still used


def test_premise_patterns_compile_only_for_the_kinds_a_question_can_match(monkeypatch: pytest.MonkeyPatch) -> None:
    patterns = [p for kind in premise._GRAMMAR.values() for p in kind]
    for pattern in patterns:
        monkeypatch.setattr(pattern, "_compiled", None)
    found = premise.extract("Why does Session inherit from SessionRedirectMixin?")
    assert [(f.kind, f.subject, f.value) for f in found][:1] == [("base", "Session", "SessionRedirectMixin")]
    compiled = [p for p in patterns if p._compiled is not None]
    assert compiled and len(compiled) < len(patterns) / 2

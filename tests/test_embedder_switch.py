"""A switch to an embedder that cannot embed leaves the workspace as it was, and says how to go on."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.flows.index import run_index
from assay.stages.core.config import Settings
from assay.stages.index.embed import EmbedderError
from assay.stages.index.store import load_manifest
from assay.stages.query.retrieve import search


def test_a_failed_switch_keeps_the_old_vectors_and_names_the_way_back(tmp_path: Path) -> None:
    (tmp_path / "billing.py").write_text("def charge_invoice(amount):\n    \"\"\"Charge a customer's invoice.\"\"\"\n    return amount\n")
    run_index(str(tmp_path), Settings(embedder="static"))
    before = load_manifest(tmp_path)
    broken = Settings(embedder="ollama:nomic-embed-text", ollama_host="http://127.0.0.1:9", llm_timeout=2)
    with pytest.raises(EmbedderError, match=r"the index keeps its static-.* vectors: .*ASSAY_EMBEDDER=static"):
        run_index(str(tmp_path), broken)
    after = load_manifest(tmp_path)
    assert after.embedder == before.embedder and after.collection == before.collection and not after.dense_pending
    found = search(tmp_path, "charge a customer", Settings(embedder="static"), k=1)
    assert found.dense_available and found.candidates[0].entity == "charge_invoice"  # the dense half still answers

"""Local mode keeps its state in `.assay/` and ASSAY_HOME and opens no socket beyond loopback: onnxruntime's own
telemetry (a device id and an event database under ~/.cache, DNS lookups of its collector) stays off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EMBED_ONCE = "from assay.stages.index.embed import MiniLMEmbedder; MiniLMEmbedder().embed(['def f(): pass'])"


def test_embedding_leaves_nothing_of_onnxruntimes_telemetry_in_the_home_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update({"HOME": str(tmp_path), "ASSAY_HOME": os.environ.get("ASSAY_HOME", str(Path.home() / ".assay"))})
    subprocess.run([sys.executable, "-c", EMBED_ONCE], env=env, check=True, timeout=300)
    assert not (tmp_path / ".cache").exists(), sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))

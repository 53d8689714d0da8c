"""Stop 62's own fixes: a setting's error reads the same from every door, and a refused read under `.assay/` is
worded as a read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.stages.core.config import env_setting


def test_a_long_bad_mode_is_named_and_cut_like_every_other_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_MODE", "x" * 300)
    with pytest.raises(ValueError) as raised:
        env_setting("mode")
    said = str(raised.value)
    assert said.startswith("ASSAY_MODE: Input should be 'local', 'hybrid' or 'cloud' (got 'xxx")
    assert len(said) < 160, said


def _as_unprivileged(code: str) -> list[str]:
    """A python command run without root's permission overrides (root reads everything), so a 0700 folder refuses."""
    command = [sys.executable, "-c", code]
    if os.geteuid() != 0:
        return command
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip("needs capsh to drop root's read override")
    quoted = " ".join("'" + part.replace("'", "'\\''") + "'" for part in command)
    return [capsh, "--drop=cap_dac_override,cap_dac_read_search,cap_fowner", "--", "-c", quoted]


def _one_line_after(opening: str) -> str:
    """What `one_line` says of the OSError `opening` (a Python expression) raises, run without root's overrides."""
    code = ("from assay.stages.core.errors import one_line\n"
            f"try:\n    {opening}\nexcept OSError as exc:\n    print(one_line(exc))\nelse:\n    print('no error')\n")
    return subprocess.run(_as_unprivileged(code), capture_output=True, text=True, timeout=60).stdout


def test_a_refused_read_under_assay_is_worded_as_a_read_not_a_write(tmp_path: Path) -> None:
    lexical = tmp_path / "ws" / ".assay" / "lexical"
    lexical.mkdir(parents=True)
    (lexical / "ids.json").write_text("[]")
    lexical.chmod(0o700)
    os.chown(lexical, 65534, 65534) if os.geteuid() == 0 else lexical.chmod(0o000)
    try:
        said = _one_line_after(f"open({str(lexical / 'ids.json')!r}).read()")
    finally:
        if os.geteuid() != 0:
            lexical.chmod(0o700)
    assert said.startswith(f"cannot read the index file {lexical / 'ids.json'} (permission denied)"), said
    assert "cannot write" not in said


def test_a_refused_write_under_assay_still_says_write(tmp_path: Path) -> None:
    state = tmp_path / "ws" / ".assay"
    state.mkdir(parents=True)
    os.chown(state, 65534, 65534) if os.geteuid() == 0 else None
    state.chmod(0o555)
    try:
        said = _one_line_after(f"open({str(state / 'new.json')!r}, 'w')")
    finally:
        state.chmod(0o755)
    assert said.startswith(f"cannot write the index at {state} (permission denied)"), said


def test_a_watch_run_that_re_indexed_everything_says_why() -> None:
    from assay.flows.cli import watch_line
    from assay.stages.core.artifacts import IndexReport

    report = IndexReport.model_construct(files_parsed=120, entities_total=900, files_removed=0,
                                         rebuild_reason="the parser changed (version 30 to 38): re-indexing everything")
    said = watch_line(["(what changed before the watch began)"], report, None)
    assert said.endswith("re-indexed 120 file(s), 900 entities (full re-index: the parser changed (version 30 to 38): "
                         "re-indexing everything)"), said
    quiet = IndexReport.model_construct(files_parsed=1, entities_total=900, files_removed=0, rebuild_reason="")
    assert "full re-index" not in watch_line(["a.py"], quiet, None)


def test_status_names_skipped_files_and_an_older_parsers_index(project: Path) -> None:
    import json

    from typer.testing import CliRunner

    from assay.flows.cli import app
    from assay.flows.index import run_index
    from assay.stages.core.config import Settings

    (project / "blob.py").write_bytes(b"\x00\x01\x02 not text")
    run_index(str(project), Settings(embedder="static"))
    said = CliRunner().invoke(app, ["status", str(project)]).output
    assert "skipped by the last run: binary 1 (blob.py)" in said, said
    assert "parser:" not in said
    manifest = project / ".assay" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["parser"] = 1
    manifest.write_text(json.dumps(data))
    said = CliRunner().invoke(app, ["status", str(project)]).output
    assert "parser: the index was built by parser version 1" in said and "re-indexes everything" in said, said
    shown = json.loads(CliRunner().invoke(app, ["status", str(project), "--json"]).output)
    assert shown["parser"] == 1 and shown["parser_current"] is False


@pytest.mark.parametrize("quote", ['"""', "'''"])
def test_a_codex_string_that_holds_assays_table_header_is_text_not_a_table(tmp_path: Path, quote: str) -> None:
    import tomllib

    from assay.stages.core.install import AGENTS, apply, server_entry

    codex = next(a for a in AGENTS if a.name == "Codex")
    text = (f'model = "o3"\ninstructions = {quote}\nRegister it like this:\n[mcp_servers.assay]\ncommand = "x"\n{quote}\n'
            '\n[mcp_servers.github]\ncommand = "gh"\n')
    path = tmp_path / codex.path
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert [a.action for a in apply(tmp_path, server_entry([tmp_path], command="/new/assay"), agents=[codex])] == ["added"]
    data = tomllib.loads(path.read_text())
    assert data["instructions"] == tomllib.loads(text)["instructions"]
    assert data["mcp_servers"]["assay"]["command"] == "/new/assay" and data["mcp_servers"]["github"] == {"command": "gh"}
    assert [a.action for a in apply(tmp_path, None, agents=[codex])] == ["removed"]
    assert path.read_text() == text


def test_readable_text_replaces_bytes_that_were_not_utf8_and_drops_controls() -> None:
    from assay.stages.query.retrieve import check_query_text, readable_text

    assert readable_text("what does send do \udcff") == "what does send do \ufffd"  # argv's escape of byte 0xff
    assert "\ud800" not in readable_text("a lone \ud800 surrogate")  # as JSON can carry one
    assert readable_text("tab\tand\nline \x00\x1b[31mred") == "tab\tand\nline [31mred"
    with pytest.raises(ValueError, match="the question is empty"):
        check_query_text("\x00\x07", "question")


def test_a_question_holding_a_byte_that_is_not_utf8_is_answered(indexed_project: Path) -> None:
    """The whole answer was made, then the judgment snapshot's JSON refused the surrogate: nothing was printed."""
    import json

    said = subprocess.run([str(Path(sys.executable).with_name("assay")), "ask", b"what does retry_call do \xff".decode(
        "utf-8", "surrogateescape"), str(indexed_project), "--json"], capture_output=True, text=True, timeout=600,
        env={**os.environ, "ASSAY_ORCHESTRATION": "direct"})
    assert said.returncode == 0, said.stderr
    assert json.loads(said.stdout)["query"].endswith("\ufffd")
    searched = subprocess.run([str(Path(sys.executable).with_name("assay")), "search", b"retry_call \xff".decode(
        "utf-8", "surrogateescape"), str(indexed_project), "--json"], capture_output=True, text=True, timeout=600,
        env={**os.environ, "ASSAY_ORCHESTRATION": "direct"})
    assert searched.returncode == 0 and "dense index unavailable" not in searched.stdout, searched.stdout


def test_the_distance_floor_holds_for_search_as_for_ask(indexed_project: Path) -> None:
    from assay.stages.core.config import Settings
    from assay.stages.query.retrieve import search

    everything = search(indexed_project, "retry with backoff delays", Settings(), k=10, mode="dense")
    assert everything.candidates and max(c.distance for c in everything.candidates) > 0.05
    floored = search(indexed_project, "retry with backoff delays", Settings(distance_floor=0.05), k=10, mode="dense")
    assert all(c.distance <= 0.05 for c in floored.candidates), [c.distance for c in floored.candidates]


def test_words_the_vocabulary_lacks_are_unread_only_when_not_ascii() -> None:
    from assay.stages.query.unread import unread_words

    known = {"計算する"}.__contains__
    assert unread_words("What does 計算する call?", known) == (["What", "does", "計算する", "call"], [])
    assert unread_words("requests 如何设置代理？", known) == (["requests"], ["如何设置代理"])
    assert unread_words("how is frobnication deferred", known)[1] == []  # English words are read, known or not


def test_a_question_mostly_in_words_no_passage_holds_is_not_trust_high(indexed_project: Path) -> None:
    from typer.testing import CliRunner

    from assay.flows.cli import app

    env = {"ASSAY_ORCHESTRATION": "direct"}
    said = CliRunner().invoke(app, ["ask", "retry_call 如何 重试 失败的 调用？", str(indexed_project)], env=env).output
    assert "trust: high" not in said, said
    assert 'question: read only as "retry_call"; no indexed passage holds 如何, 重试, 失败的, 调用' in said, said
    english = CliRunner().invoke(app, ["ask", "What does retry_call do?", str(indexed_project)], env=env).output
    assert "question: read only" not in english


def test_dense_search_returns_the_exact_top_k_ordered_by_distance_then_id(tmp_path: Path) -> None:
    """HNSW is approximate and its tail differed between processes; ties came back in insertion order."""
    import math
    import random

    from assay.stages.core.artifacts import EmbeddedBatch
    from assay.stages.index import store

    rng = random.Random(7)
    ids = [f"p{i:03d}" for i in range(300)]
    vectors = [[rng.gauss(0, 1) for _ in range(8)] for _ in ids]
    tied = ["t9", "t5", "t7", "t1"]  # the same vector, stored in an order that is not the ids'
    query = [1.0] + [0.0] * 7
    store.VectorStore(tmp_path, None, "c_g1").upsert(EmbeddedBatch(
        embedder="e", dimension=8, ids=tied + ids, vectors=[query[:] for _ in tied] + vectors))

    def cosine(v: list[float]) -> float:
        return 1 - sum(a * b for a, b in zip(v, query)) / math.sqrt(sum(a * a for a in v))

    truth = sorted(zip(ids, map(cosine, vectors)), key=lambda row: (row[1], row[0]))
    found = store.dense_search(tmp_path, None, "c_g1", query, 24)
    assert [eid for eid, _ in found] == ["t1", "t5", "t7", "t9"] + [eid for eid, _ in truth[:20]]
    assert all(abs(d - t) < 1e-6 for (_, d), (_, t) in zip(found[4:], truth))


def test_a_name_holding_a_byte_that_is_not_utf8_is_one_plain_line(indexed_project: Path) -> None:
    said = subprocess.run([str(Path(sys.executable).with_name("assay")), "callers", b"retry_call\xff".decode(
        "utf-8", "surrogateescape"), str(indexed_project)], capture_output=True, text=True, timeout=300,
        env={**os.environ, "ASSAY_ORCHESTRATION": "direct"})
    assert said.returncode == 2
    assert said.stderr.startswith("error: the text holds bytes that are not valid UTF-8"), said.stderr
    assert "codec" not in said.stderr


def test_a_query_of_invisible_characters_is_empty() -> None:
    from assay.stages.query.retrieve import check_query_text

    with pytest.raises(ValueError, match="the query is empty"):
        check_query_text("\u200b\u200b\ufeff")
    assert check_query_text("retry\u200b_call") == "retry_call"


def test_pasted_code_names_are_no_gaps() -> None:
    from assay.stages.core.artifacts import Selection
    from assay.stages.query.report import missing_names

    sel = Selection.model_construct(included=[], dropped=[])
    assert missing_names("```bash\ncurl -x http://proxy:3128 https://example.com\n```\nhow is the proxy picked?", sel) == []
    assert missing_names("```python s = make_session() r = s.fetch(prep) ``` what does this do?", sel) == []
    assert missing_names("what does frobnicate_widget do?", sel) == ["frobnicate_widget"]


def test_a_question_with_no_word_read_gets_no_read_only_line(indexed_project: Path) -> None:
    from assay.stages.query.unread import unread_line

    assert unread_line("如何 重试？", indexed_project) == ""
    assert unread_line("retry_call 如何 重试 失败的 调用？", indexed_project).startswith('question: read only as "retry_call"')


def test_an_index_run_leaves_no_vector_for_a_process_to_replay(tmp_path: Path) -> None:
    """Records Chroma had not yet written to its HNSW files (up to 999) were replayed into a graph built anew in
    each process, and the same query's dense tail differed between runs."""
    import sqlite3

    from assay.flows.index import run_index
    from assay.stages.core.config import Settings

    project = tmp_path / "many"
    project.mkdir()
    for i in range(150):
        (project / f"m{i}.py").write_text("".join(
            f'def f{i}_{j}(x):\n    """Compute part {j} of step {i}."""\n    return x + {j}\n\n' for j in range(3)))
    run_index(str(project), Settings(embedder="static"))
    db = sqlite3.connect(project / ".assay" / "chroma" / "chroma.sqlite3")
    try:
        persisted = db.execute("SELECT m.seq_id FROM max_seq_id m JOIN segments s ON s.id = m.segment_id "
                               "WHERE s.scope = 'VECTOR'").fetchall()
        logged = db.execute("SELECT max(seq_id) FROM embeddings_queue").fetchone()[0]
    finally:
        db.close()
    assert logged and persisted == [(logged,)], (persisted, logged)

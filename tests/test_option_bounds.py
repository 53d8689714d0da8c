"""Options and ASSAY_* settings at their edges: an empty variable is unset everywhere (the mode's loopback guard
included), count-like knobs have upper bounds checked up front, the watch's debounce is a real quiet window, and
threshold values that flag every passage are refused. Each failure is one line naming the option or variable."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.config import MAX_DEBOUNCE_MS, MAX_RESULTS, Settings, eval_dir
from assay.stages.core.llm_clients import LocalModeViolation

runner = CliRunner()


def one_line_error(args: list[str], *words: str) -> str:
    """Run the CLI; it must fail with exit 2 and one `error:` line holding every word (no traceback)."""
    res = runner.invoke(app, args)
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2, (args, res.output)
    assert len(lines) == 1 and lines[0].startswith("error: "), (args, res.output)
    assert "Traceback" not in res.output
    for word in words:
        assert word in lines[0], (args, lines[0])
    return lines[0]


# --- 1: `ASSAY_MODE=` is local mode, as Settings reads it -----------------------------------------------------------

def test_an_empty_mode_still_refuses_a_remote_prefect_api(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows.runtime import orchestrated

    monkeypatch.setenv("ASSAY_MODE", "")
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "auto")
    monkeypatch.setenv("PREFECT_API_URL", "http://10.255.255.1:4200/api")
    started = time.monotonic()
    with pytest.raises(LocalModeViolation, match="not loopback"):
        orchestrated()
    assert time.monotonic() - started < 2  # refused before any connection attempt to the blackhole address


def test_an_empty_mode_still_refuses_a_remote_dask_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows.dask import spread_for

    monkeypatch.setenv("ASSAY_MODE", "")
    with pytest.raises(LocalModeViolation, match="ASSAY_DASK"):
        spread_for("tcp://10.1.2.3:8786")
    monkeypatch.setenv("ASSAY_MODE", "hybrid")
    assert spread_for("tcp://10.1.2.3:8786").workers is None  # hybrid allows it: the check reads the real mode


def test_mode_and_orchestration_are_read_as_settings_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows.runtime import local_mode, orchestration_mode

    for value, local in (("", True), ("local", True), ("hybrid", False), ("cloud", False)):
        monkeypatch.setenv("ASSAY_MODE", value)
        assert local_mode() is local, value
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "")
    assert orchestration_mode() == "auto"
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "direct")
    monkeypatch.setenv("ASSAY_PRICES", "not json")  # another variable's bad value is not this door's to report
    assert orchestration_mode() == "direct"
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "bogus")
    with pytest.raises(ValueError, match=r"^ASSAY_ORCHESTRATION: Input should be .*\(got 'bogus'\)$"):
        orchestration_mode()
    monkeypatch.setenv("ASSAY_MODE", "remote")
    with pytest.raises(ValueError, match="^ASSAY_MODE: "):
        local_mode()


# --- 3, 4: the debounce is the quiet window, and bounded --------------------------------------------------------------

def _gather(root: Path, debounce_ms: int, edits: list[float], listen_s: float) -> list[tuple[float, list[str]]]:
    """Batches (time since the last edit, paths) while `m.py` is edited at the given offsets (seconds)."""
    from assay.stages.index.watch import batches

    stop = threading.Event()
    seen: list[tuple[float, list[str]]] = []
    last_edit = [0.0]

    def listen() -> None:
        for batch in batches(root, debounce_ms, stop):
            seen.append((time.monotonic() - last_edit[0], batch))

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    time.sleep(0.5)  # the watcher is up before the first edit
    began = time.monotonic()
    for n, at in enumerate(edits):
        time.sleep(max(0.0, began + at - time.monotonic()))
        with (root / "m.py").open("a") as f:
            f.write(f"def f{n}():\n    return {n}\n")
        last_edit[0] = time.monotonic()
    time.sleep(listen_s)
    stop.set()
    thread.join(timeout=10)
    return seen


def test_edits_closer_than_the_debounce_are_one_batch_after_that_much_quiet(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def add(a, b):\n    return a + b\n")
    seen = _gather(tmp_path, 1500, [0.0, 0.6, 1.2], listen_s=3.0)
    assert [paths for _, paths in seen] == [["m.py"]], seen  # was three batches: the quiet period was a fixed 0.2 s
    assert seen[0][0] >= 1.4, seen  # about 1.5 s after the last edit, not 0.2 s


def test_edits_further_apart_than_the_debounce_are_separate_batches(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def add(a, b):\n    return a + b\n")
    seen = _gather(tmp_path, 300, [0.0, 1.5], listen_s=1.5)
    assert [paths for _, paths in seen] == [["m.py"], ["m.py"]], seen


def test_a_huge_debounce_is_one_line_naming_the_option_or_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one_line_error(["watch", str(tmp_path), "--debounce", "99999999999999999999"], "--debounce", str(MAX_DEBOUNCE_MS))
    one_line_error(["watch", str(tmp_path), "--debounce", str(MAX_DEBOUNCE_MS + 1)], "--debounce")
    monkeypatch.setenv("ASSAY_WATCH_DEBOUNCE_MS", "99999999999999999999")
    one_line_error(["watch", str(tmp_path)], "ASSAY_WATCH_DEBOUNCE_MS", str(MAX_DEBOUNCE_MS))
    assert not (tmp_path / ".assay").exists()  # refused before the catch-up run


# --- 5: threshold values that flag every passage --------------------------------------------------------------------

@pytest.mark.parametrize("key", ["injection_max", "contradicts_min"])
def test_a_zero_that_flags_every_passage_is_refused(tmp_path: Path, key: str) -> None:
    from assay.stages.query.threshold import default_thresholds

    path = tmp_path / "th.json"
    for table in ({key: 0}, {"ollama": {key: 0.0}}):
        path.write_text(json.dumps(table))
        with pytest.raises(ValueError, match=f"{key}: must be above 0") as info:
            default_thresholds("ollama", str(path))
        assert "\n" not in str(info.value) and "ASSAY_THRESHOLDS" in str(info.value)
    path.write_text(json.dumps({key: 0.01}))
    assert getattr(default_thresholds("ollama", str(path)), key) == 0.01


def test_a_zero_minimum_only_turns_its_filter_off_and_top_k_is_bounded(tmp_path: Path) -> None:
    from assay.stages.query.threshold import default_thresholds

    path = tmp_path / "th.json"
    path.write_text(json.dumps({"relevance_min": 0, "evidence_min": 0, "answerable_min": 0}))
    th = default_thresholds("ollama", str(path))
    assert (th.relevance_min, th.evidence_min, th.answerable_min) == (0, 0, 0)
    path.write_text(json.dumps({"top_k": MAX_RESULTS + 1}))
    with pytest.raises(ValueError, match=f"top_k: must be a whole number from 1 to {MAX_RESULTS}"):
        default_thresholds("ollama", str(path))


def test_the_cli_refuses_a_zero_injection_max_before_answering(indexed_project: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "th.json"
    path.write_text('{"injection_max": 0}')
    monkeypatch.setenv("ASSAY_THRESHOLDS", str(path))
    line = one_line_error(["ask", "how are cookies merged?", str(indexed_project), "--judge", "none"],
                          "injection_max: must be above 0", "prompt-injection")
    assert "security" not in line


# --- 6: `ollama:` names no model -------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["ollama:", "ollama: "])
def test_an_ollama_embedder_without_a_model_is_refused_before_any_index_work(tmp_path: Path, spec: str,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m.py").write_text("def add(a, b):\n    return a + b\n")
    monkeypatch.setenv("ASSAY_EMBEDDER", spec)
    one_line_error(["index", str(tmp_path)], "ASSAY_EMBEDDER", "names no model", "ollama:<model>")
    assert not (tmp_path / ".assay").exists()  # nothing recorded: the workspace cannot keep the bad embedder
    assert Settings(embedder="ollama:nomic-embed-text").embedder == "ollama:nomic-embed-text"


# --- 7: `ASSAY_EVAL_DIR=` is unset -----------------------------------------------------------------------------------

def test_an_empty_eval_dir_is_the_default_and_a_tilde_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    default = Path.home() / ".assay" / "eval"
    for empty in ("", "  "):
        monkeypatch.setenv("ASSAY_EVAL_DIR", empty)
        assert eval_dir() == default
    monkeypatch.delenv("ASSAY_EVAL_DIR")
    assert eval_dir() == default
    monkeypatch.setenv("ASSAY_EVAL_DIR", "~/my-eval")
    assert eval_dir() == Path.home() / "my-eval"


# --- 8, 9, 10: upper bounds on top_k, the search pool, history --limit --------------------------------------------------

def test_top_k_has_an_upper_bound_checked_before_the_question_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one_line_error(["ask", "how are cookies merged?", str(tmp_path), "--top-k", "2147483648"], "--top-k", str(MAX_RESULTS))
    monkeypatch.setenv("ASSAY_TOP_K", "2147483648")
    one_line_error(["ask", "how are cookies merged?", str(tmp_path)], "ASSAY_TOP_K", str(MAX_RESULTS))


def test_search_k_and_pool_size_have_upper_bounds_and_blame_no_index(indexed_project: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    line = one_line_error(["search", "cookies", str(indexed_project), "-k", "4294967296", "--mode", "dense"],
                          "-k", str(MAX_RESULTS))
    assert "rebuild" not in line and "index" not in line
    ok = runner.invoke(app, ["search", "cookies", str(indexed_project), "-k", str(MAX_RESULTS), "--mode", "dense", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout), ok.output  # the bound itself works, dense results and all
    monkeypatch.setenv("ASSAY_POOL_SIZE", "4294967296")
    assert "rebuild" not in one_line_error(["search", "cookies", str(indexed_project)], "ASSAY_POOL_SIZE", str(MAX_RESULTS))


def _git_repo(root: Path) -> Path:
    root.mkdir()
    (root / "m.py").write_text("def merge_setting(a, b):\n    return a or b\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def test_history_limit_has_an_upper_bound_in_the_cli_and_the_mcp_server(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows import mcp_server as m
    from assay.stages.query.git_history import HISTORY_LIMIT_MAX

    root = _git_repo(tmp_path / "repo")
    assert runner.invoke(app, ["index", str(root)]).exit_code == 0
    one_line_error(["history", "merge_setting", str(root), "--limit", "4294967296"], "--limit", str(HISTORY_LIMIT_MAX))
    shown = runner.invoke(app, ["history", "merge_setting", str(root), "--limit", str(HISTORY_LIMIT_MAX), "--json"])
    assert shown.exit_code == 0 and len(json.loads(shown.stdout)["commits"]) == 1, shown.output  # was 0 commits
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    res = m.history(str(root), "merge_setting", limit=4294967296)
    said = res.content[0].text
    assert res.is_error and f"limit must be {HISTORY_LIMIT_MAX} or less" in said and "--" not in said, said


# --- 12: errors name the variable ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value", "words"), [
    ("OLLAMA_HOST", "http://127.0.0.1:99999", "Port out of range"),
    ("OLLAMA_HOST", "http://127.0.0.1:abc", "Port could not be cast"),
    ("CHROMA_URL", "http://[::1", "Invalid IPv6 URL"),
    ("CLOUD_BASE_URL", "https://[api.example", "Invalid IPv6 URL"),
    ("ALLOWED_ROOTS", ":", "names no folder"),
    ("ALLOWED_ROOTS", " /tmp/x", "spaces around it"),
    ("PRICES", "null", "holds a JSON null, not an object"),
])
def test_a_bad_setting_is_one_line_naming_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                                                       value: str, words: str) -> None:
    monkeypatch.setenv(f"ASSAY_{name}", value)
    line = one_line_error(["search", "cookies", str(tmp_path)], f"ASSAY_{name}: ", words)
    assert "NoneType" not in line


def test_good_urls_and_roots_still_load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ASSAY_OLLAMA_HOST", "http://[::1]:11434")
    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", f"{tmp_path}:~/src")
    s = Settings()
    assert s.ollama_host == "http://[::1]:11434" and s.allowed_roots == f"{tmp_path}:~/src"

"""`assay eval` on a user's own inputs: a bad question set is one line naming the file, line and what to fix, before
any corpus is fetched; figures nothing measured read "-" (null in JSON), never 0.00; --limit counts what ran; the
questions folder and the judge labels folder are read as the help says. No corpus is downloaded here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.evaluate import metrics as ev
from assay.stages.evaluate import runs
from assay.stages.evaluate import semble as sb

PIN = "tiny==1.0"
GOOD = {"id": "c1", "package": PIN, "question": "How does retry_call back off?",
        "primary_entity": {"file": "pkg/retry.py", "qualname": "retry_call", "start_line": 1, "end_line": 9},
        "gold_entities": [{"file": "pkg/retry.py", "qualname": "retry_call"}], "gold_files": ["pkg/retry.py"]}


@pytest.fixture()
def no_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Any corpus fetch is recorded and stopped: the checks must come before it."""
    from assay.stages.evaluate import sdists

    fetched: list[str] = []

    def refuse(requirement: str, home: Path) -> Path:
        fetched.append(requirement)
        raise RuntimeError(f"would fetch {requirement}")

    monkeypatch.setattr(sdists, "prepare_corpus", refuse)
    monkeypatch.setenv("ASSAY_ORCHESTRATION", "direct")
    monkeypatch.setenv("ASSAY_EVAL_DIR", str(tmp_path / "evalhome"))
    return fetched


def write_lines(folder: Path, lines: list[str | bytes], name: str = "tiny") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def eval_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["eval", *args])
    return result.exit_code, result.output


def good(**change) -> str:
    return json.dumps({**GOOD, **change})


BAD_SETS = {
    "noquestion": ([json.dumps({k: v for k, v in GOOD.items() if k != "question"})], r'line 1 \(id c1\): no "question" field'),
    "noid": ([json.dumps({k: v for k, v in GOOD.items() if k != "id"})], r'line 1: no "id" field'),
    "noqualname": ([good(primary_entity={"file": "pkg/retry.py"})], r'line 1 \(id c1\): primary_entity has no "qualname"'),
    "badjson": ([good(), "{not json"], r"line 2: not JSON"),
    "nonutf8": ([good(), good(id="c2", question="cafe?").encode().replace(b"cafe", b"caf\xe9")],
                r"line 2: not UTF-8 text \(byte 0xe9\)"),
    "array": ([good(), "[1, 2]"], r"line 2: not a JSON object \(a list\)"),
    "badspan": ([good(primary_entity={**GOOD["primary_entity"], "start_line": "x"})],
                r"line 1 \(id c1\): primary_entity.start_line must be a line number \(got 'x'\)"),
    "goldstring": ([good(gold_entities="pkg/retry.py")], r"line 1 \(id c1\): gold_entities must be a list"),
    "wsquestion": ([good(), good(id="c2", question="   ")], r"line 2 \(id c2\): the question is empty"),
    "emptyquestion": ([good(question="")], r"line 1 \(id c1\): the question is empty"),
    "nullquestion": ([good(question=None)], r'line 1 \(id c1\): no "question" field'),
    "intquestion": ([good(question=123)], r"line 1 \(id c1\): the question must be text \(got int 123\)"),
    "dupids": ([good(), good(question="Where are cookies merged?")], r"line 2: id 'c1' is used again \(first on line 1\)"),
}


@pytest.mark.parametrize("case", sorted(BAD_SETS))
def test_a_bad_question_set_is_one_line_naming_file_and_line_before_any_download(
        case: str, tmp_path: Path, no_download: list[str]) -> None:
    import re

    lines, expected = BAD_SETS[case]
    path = write_lines(tmp_path / case, lines)
    code, out = eval_cli("--questions", str(tmp_path / case), "--corpus", "tiny")
    assert code == 2, out
    (line,) = [x for x in out.splitlines() if x.strip()]
    assert line.startswith(f"error: {path} ") and re.search(expected, line), line
    assert no_download == []  # the whole set was checked before any corpus was fetched


def test_a_bad_row_in_a_second_set_stops_the_run_before_the_first_set_is_fetched(tmp_path: Path, no_download: list[str]) -> None:
    write_lines(tmp_path / "q", [good()], name="alpha")
    write_lines(tmp_path / "q", [good(), good(id="c2", question="")], name="beta")
    code, out = eval_cli("--questions", str(tmp_path / "q"), "--corpus", "alpha", "--corpus", "beta")
    assert code == 2 and "beta.jsonl line 2 (id c2): the question is empty" in out and no_download == []


def test_questions_folder_without_corpus_runs_the_sets_in_it(tmp_path: Path, no_download: list[str]) -> None:
    write_lines(tmp_path / "q", [good()], name="click")
    code, out = eval_cli("--questions", str(tmp_path / "q"))
    assert code == 2 and "would fetch tiny==1.0" in out and no_download == [PIN]  # click's set, not requests / pytest
    code, out = eval_cli("--questions", str(tmp_path / "q"), "--corpus", "requests")
    assert code == 2 and "no question set requests" in out and "there: click" in out and "--corpus" in out


def test_questions_given_a_file_says_to_pass_its_folder(tmp_path: Path, no_download: list[str]) -> None:
    path = write_lines(tmp_path / "q", [good()], name="click")
    code, out = eval_cli("--questions", str(path), "--corpus", "click")
    assert code == 2 and f"{path} is a file; --questions takes the folder" in out and f"--questions {path.parent}" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = eval_cli("--questions", str(empty))
    assert code == 2 and "no question sets in" in out and no_download == []


def test_unmeasured_figures_are_null_not_zero() -> None:
    agg = ev.aggregate([{"hit@1": 1.0, "hit@5": 1.0, "hit@10": 1.0, "rr": 1.0}])  # no gold lists, no line span
    assert agg["hit@10"] == 1.0 and agg["file_recall@10"] is None and agg["entity_recall@10"] is None
    assert agg["line_hit@10"] is None and agg["line_mrr"] is None
    assert all(v is None for k, v in ev.aggregate([]).items() if k != "questions")
    assert ev.keep_drop_prf([], []) == {"precision": None, "recall": None, "f1": None, "passages": 0}
    assert ev.keep_drop_prf([False, False], [True, False]) == {"precision": None, "recall": 0.0, "f1": None, "passages": 2}
    assert ev.keep_drop_prf([True], [False])["precision"] == 0.0  # kept one, wrong: measured, and zero


def test_injection_without_bipia_attacks_says_not_run(tmp_path: Path, indexed_project: Path) -> None:
    from assay.stages.core.config import Settings

    inj = runs.evaluate_injection(indexed_project, tmp_path / "bipia", Settings())
    assert inj["detection_rate"] is None and inj["false_positive_rate"] is None
    assert inj["note"] == f"not run: no BIPIA attacks in {tmp_path / 'bipia'}"


def _results(retrieval: dict, split: dict, judges: dict, injection: dict, cost: dict, counts: dict) -> dict:
    return {"corpora": {"tiny": {"package": PIN, "questions": counts, "injection": injection, "cost": cost,
                                 "retrieval": {"retrieval": retrieval, "split": split, "judges": judges, "trust": {},
                                               "coverage": {}}}}}


def test_the_tables_print_a_dash_for_what_was_not_measured() -> None:
    per_q = [{"hit@1": 1.0, "hit@5": 1.0, "hit@10": 1.0, "rr": 1.0}]
    q = ev.Question(id="c1", text="?", primary=ev.GoldEntity("pkg/retry.py", "retry_call"), gold_entities=(), gold_files=())
    results = _results({"ranked": ev.aggregate(per_q)}, {"ranked": ev.split_summary(per_q, [q])},
                       {"local": ev.keep_drop_prf([], [])},
                       {"attacks": 0, "detection_rate": None, "false_positive_rate": None, "note": "not run: no BIPIA attacks in q/bipia"},
                       {"answers": 0, "report_tokens_mean": None, "cited_files_tokens_mean": None, "ratio": None},
                       {"questions": 1, "scored": 1, "primary_none": 0, "named": 0, "paraphrased": 0})
    text = runs.render(results)
    assert "| tiny | ranked (`search`) | 1.00 | 1.00 | 1.00 | 1.000 | - | - | - | - |" in text
    assert "| tiny | all | ranked (`search`) | 1 | 1.00 | 1.000 | 0 | - | - |" in text  # n by line 0: no line figure
    assert "| tiny | local | - | - | - | 0 |" in text
    assert "| tiny | 0 | - | - | - | - | - |" in text and "- tiny: injection not run: no BIPIA attacks in q/bipia" in text
    assert "0.00" not in text
    json.dumps(results, allow_nan=False)  # null, never NaN


def test_limit_counts_the_questions_that_ran(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [good(id=f"h{i}") for i in range(20)] + [good(id="none", primary_entity=None, gold_entities=[],
                                                                                 gold_files=[])])
    assert runs.question_counts(path, 2) == {"questions": 2, "scored": 2, "primary_none": 0, "named": 0, "paraphrased": 0,
                                             "in_file": 21}
    assert runs.question_counts(path)["questions"] == 21 and len(runs.answerable_questions(path, 2)) == 2
    results = _results({}, {}, {}, {"attacks": 0}, {"answers": 0, "report_tokens_mean": None, "cited_files_tokens_mean": None,
                                                     "ratio": None}, runs.question_counts(path, 2))
    assert "- tiny (tiny==1.0): 2 questions (the first of 21 in the set: --limit), 2 with a primary" in runs.render_split(results)


def test_the_flow_end_to_end_prints_dashes_and_counts_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               project: Path) -> None:
    """Questions with a primary entity only (no gold lists, no lines), --limit 1 of 3, no BIPIA folder."""
    import assay.flows.evaluate as evaluate

    home = tmp_path / "evalhome"
    corpus = home / "corpora" / "tiny-1.0"
    corpus.parent.mkdir(parents=True)
    project.rename(corpus)
    (corpus / ".unpacked").write_text(PIN)
    minimal = [{"id": f"m{i}", "package": PIN, "question": "How does retry_call back off between attempts?",
                "primary_entity": {"file": "pkg/retry.py", "qualname": "retry_call"}} for i in range(3)]
    write_lines(tmp_path / "q", [json.dumps(r) for r in minimal])
    monkeypatch.setenv("ASSAY_EVAL_DIR", str(home))
    results = evaluate.run_evaluate(questions_dir=str(tmp_path / "q"), limit=1, judges=["none"], settings=None)
    tiny = results["corpora"]["tiny"]
    ranked = tiny["retrieval"]["retrieval"]["ranked"]
    assert ranked["questions"] == 1 and ranked["hit@10"] == 1.0 and ranked["file_recall@10"] is None
    assert tiny["injection"]["detection_rate"] is None and tiny["injection"]["note"].startswith("not run: no BIPIA attacks")
    assert tiny["questions"]["questions"] == 1 and tiny["questions"]["in_file"] == 3
    assert "| tiny | ranked (`search`) | 1.00 | 1.00 | 1.00 | 1.000 | - | - | - | - |" in results["markdown"]
    assert "1 questions (the first of 3 in the set: --limit)" in results["markdown"]
    saved = json.loads((Path(results["output_dir"]) / "results.json").read_text())
    assert saved["corpora"]["tiny"]["retrieval"]["retrieval"]["ranked"]["file_recall@10"] is None


def test_the_judge_suite_reads_every_labels_file_in_the_folder(tmp_path: Path) -> None:
    from assay.stages.core.artifacts import Judgment, PassageScores
    from assay.stages.evaluate import judge_calibration as jc

    labels = Path(__file__).parent / "benchmarks" / "judge_labels" / "requests.jsonl"
    (tmp_path / "click.jsonl").write_text("\n".join(labels.read_text().splitlines()[:30]) + "\n")

    def half(question: str, candidates: list) -> Judgment:
        return Judgment(backend="half", scores={c.id: PassageScores(relevance=0.5, evidence=0.5, contradicts=0, injection=0)
                                                for c in candidates})

    result = jc.evaluate(tmp_path, {"half": half})
    assert result["pairs"] == 30 and set(result["backends"]["half"]) == {"click", "all"}
    assert jc.labelled_sets(Path(__file__).parent / "benchmarks" / "judge_labels") == list(jc.CORPORA)  # shipped order kept


def test_the_judge_suite_refuses_a_labels_folder_it_cannot_read_before_any_download(tmp_path: Path,
                                                                                    no_download: list[str]) -> None:
    (tmp_path / "labels.jsonl").write_text("{}\n")
    for given, expected in ((tmp_path / "labels.jsonl", "is a file"), (tmp_path / "absent", "no such labels folder"),
                            (tmp_path / "empty", "no labelled pairs in")):
        (tmp_path / "empty").mkdir(exist_ok=True)
        code, out = eval_cli("--suite", "judge", "--questions", str(given))
        assert code == 2 and expected in out, out
    assert no_download == []


@pytest.mark.parametrize("repos,annotation,expected", [
    ("{bad", None, r"repos.json line 1: not JSON"),
    ('[{"benchmark_root": "src"}]', None, r'repos.json entry 1: no "name"'),
    ('[{"name": "demo"}]', None, r'repos.json entry 1 \(demo\): no "benchmark_root"'),
    ('[{"name": "demo", "benchmark_root": "src", "path": "."}]', '[{"category": "symbol", "relevant": []}]',
     r'demo.json entry 1: no "query" text'),
    ('[{"name": "demo", "benchmark_root": "src", "path": "."}]', '[{"query": "q", "category": "symbol", "relevant": [7]}]',
     r"demo.json entry 1: a target must be a path"),
])
def test_a_bad_semble_folder_is_one_line_naming_file_and_entry_before_any_fetch(
        tmp_path: Path, no_download: list[str], monkeypatch: pytest.MonkeyPatch, repos: str, annotation: str | None,
        expected: str) -> None:
    import re

    fetched: list[str] = []
    monkeypatch.setattr(sb, "prepare_repo", lambda repo, home, source=None: fetched.append(repo["name"]))
    (tmp_path / "sb" / "annotations").mkdir(parents=True)
    (tmp_path / "sb" / "repos.json").write_text(repos)
    if annotation is not None:
        (tmp_path / "sb" / "annotations" / "demo.json").write_text(annotation)
    code, out = eval_cli("--suite", "semble", "--questions", str(tmp_path / "sb"))
    assert code == 2 and re.search(expected, out), out
    assert len([x for x in out.splitlines() if x.strip()]) == 1 and fetched == []

"""SWE-QA suite on any question set: corpora found from the sets' `package` field, named / paraphrased figures, hits by
line overlap, and the stock BM25 baseline, all on tiny inputs without Prefect or an index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.stages.core.artifacts import Entity
from assay.stages.evaluate.metrics import GoldEntity, Question, discover_corpora, load_questions, question_metrics, split_summary
from assay.stages.evaluate.runs import plain_bm25_ranked, primary_coverage, question_counts


def write_set(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def row(i: int, package: str = "demo==1.0", named: bool | None = False, primary: dict | None = None, **extra) -> dict:
    r = {"id": f"q{i}", "package": package, "question": f"question {i}?", "primary_entity": primary,
         "gold_entities": [primary] if primary else [], "gold_files": [primary["file"]] if primary else ["x.py"], **extra}
    if named is not None:
        r["question_names_code_identifier"] = named
    return r


P = {"file": "pkg/a.py", "qualname": "A.run", "kind": "function", "start_line": 10, "end_line": 20}


def test_every_jsonl_is_a_corpus_pinned_by_its_package_field(tmp_path: Path) -> None:
    write_set(tmp_path / "sphinx.jsonl", [row(0, "sphinx==9.0.0"), row(1, "sphinx==9.0.0")])
    write_set(tmp_path / "pylint.jsonl", [row(0, "pylint==3.3.8")])
    (tmp_path / "notes.txt").write_text("not a set")
    assert discover_corpora(tmp_path) == {"pylint": "pylint==3.3.8", "sphinx": "sphinx==9.0.0"}
    write_set(tmp_path / "mixed.jsonl", [row(0, "a==1"), row(1, "b==2")])
    with pytest.raises(ValueError, match="mixed.jsonl"):
        discover_corpora(tmp_path)
    (tmp_path / "mixed.jsonl").unlink()
    write_set(tmp_path / "unpinned.jsonl", [{"id": "x", "question": "?"}])
    with pytest.raises(ValueError, match="unpinned.jsonl.*name==version"):
        discover_corpora(tmp_path)


def test_questions_folder_from_the_environment_or_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.flows.evaluate as evaluate

    monkeypatch.setenv("ASSAY_EVAL_QUESTIONS", str(tmp_path))
    assert evaluate.default_questions_dir() == tmp_path
    monkeypatch.setenv("ASSAY_EVAL_QUESTIONS", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError) as err:
        evaluate.default_questions_dir()
    assert "ASSAY_EVAL_QUESTIONS" in str(err.value) and "\n" not in str(err.value)
    monkeypatch.delenv("ASSAY_EVAL_QUESTIONS")
    # an installed wheel has no checkout beside it: the current directory's ../shared/eval/swe-qa
    assert evaluate.questions_dir_candidates()[-1] == Path.cwd().resolve().parent / "shared" / "eval" / "swe-qa"


def test_an_unknown_corpus_is_refused_before_anything_is_downloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.flows.evaluate as evaluate
    from assay.flows.runtime import direct_call
    from assay.stages.core.config import Settings

    write_set(tmp_path / "sphinx.jsonl", [row(0, "sphinx==9.0.0")])
    monkeypatch.setenv("ASSAY_EVAL_DIR", str(tmp_path / "home"))
    with pytest.raises(ValueError, match="no question set nope .*there: sphinx"):
        evaluate.evaluate_pipeline(Settings(), ["nope"], questions_dir=str(tmp_path), call=direct_call)
    assert not (tmp_path / "home").exists()


def test_named_and_paraphrased_split_excludes_questions_without_a_primary(tmp_path: Path) -> None:
    path = write_set(tmp_path / "demo.jsonl", [
        row(0, named=True, primary=P), row(1, named=False, primary=P), row(2, named=False, primary=P),
        row(3, named=False, primary=None), row(4, named=None, primary=P),
    ])
    qs = load_questions(path)
    assert [q.named for q in qs] == [True, False, False, False, None] and qs[0].primary_span == (10, 20)
    assert question_counts(path) == {"questions": 5, "scored": 5, "primary_none": 1, "named": 1, "paraphrased": 2}
    hit, miss = [("pkg/a.py", "A.run", 10, 20)], [("pkg/b.py", "B", 1, 5)]
    per_q = [question_metrics(r, q) for r, q in zip([hit, miss, hit, hit, miss], qs)]
    split = split_summary(per_q, qs)
    assert split["all"]["n"] == 4 and split["all"]["hit@10"] == 0.5  # q3 (kind none) has no hit figure
    assert split["named"] == {"n": 1, "n_line": 1, "hit@10": 1.0, "mrr": 1.0, "line_hit@10": 1.0, "line_mrr": 1.0}
    assert split["paraphrased"]["n"] == 2 and split["paraphrased"]["hit@10"] == 0.5 and split["paraphrased"]["mrr"] == 0.5


def test_hit_by_line_overlap_beside_hit_by_qualified_name() -> None:
    q = Question(id="x", text="?", primary=GoldEntity("pkg/a.py", "A.run"), gold_entities=(), gold_files=(), primary_span=(10, 20))
    # the containing class is 2nd, spelt otherwise, over the lines: a line hit at 2, no name hit
    ranked = [("pkg/b.py", "B", 1, 30), ("pkg/a.py", "A", 5, 40), ("pkg/b.py", "B", 31, 60), ("pkg/a.py", "other", 21, 30)]
    m = question_metrics(ranked, q)
    assert m["hit@10"] == 0.0 and m["line_hit@10"] == 1.0 and m["line_rr"] == 0.5
    apart = question_metrics([("pkg/a.py", "A.stop", 21, 30), ("pkg/c.py", "C", 10, 20)], q)  # next door, or another file
    assert apart["line_hit@10"] == 0.0 and apart["line_rr"] == 0.0
    no_lines = question_metrics([("pkg/a.py", "A.run")], q)  # a configuration that reports no lines still hits by name
    assert no_lines["hit@10"] == 1.0 and no_lines["line_hit@10"] == 0.0


def ent(file: str, qualname: str, body: str, kind: str = "function", lines: tuple[int, int] = (1, 3)) -> Entity:
    return Entity(id=f"{file}:{qualname}", kind=kind, name=qualname.split(".")[-1], qualname=qualname, signature="",
                  docstring="", body=body, start_line=lines[0], end_line=lines[1], language="python", file=file,
                  content_hash="h")


def test_stock_bm25_neither_splits_identifiers_nor_stems_nor_reads_file_rows() -> None:
    entities = [
        ent("pkg/retry.py", "retry_call", "def retry_call(fn):\n    return backoff(fn)", lines=(3, 4)),
        ent("pkg/cookies.py", "merge", "def merge(jar, cookie):\n    jar.update(cookie)", lines=(7, 8)),
        ent("pkg/cookies.py", "pkg/cookies.py", "retry call cookies merge jar everything", kind="file", lines=(1, 8)),
    ]

    def ask(i: int, text: str) -> Question:
        return Question(id=str(i), text=text, primary=None, gold_entities=(), gold_files=())

    qs = [ask(0, "How does retry_call work?"), ask(1, "How do I retry a call?"), ask(2, "Where are cookies merged?"),
          ask(3, "Where is a cookie jar merged?"), ask(4, "the of and")]
    found = plain_bm25_ranked(entities, qs, pool=30)
    assert found["0"] == [("pkg/retry.py", "retry_call", 3, 4)]  # the whole identifier is one token
    assert found["1"] == []  # "retry call" does not meet `retry_call`: no identifier splitting
    assert found["2"] == []  # "cookies", "merged" do not meet "cookie", "merge": no stemming; the file row is not read
    assert found["3"] == [("pkg/cookies.py", "merge", 7, 8)]
    assert found["4"] == []  # English stop words only
    named = Question(id="0", text=qs[0].text, primary=GoldEntity("pkg/retry.py", "retry_call"), gold_entities=(),
                     gold_files=(), primary_span=(3, 4))
    assert question_metrics(found["0"], named) == {"hit@1": 1.0, "hit@5": 1.0, "hit@10": 1.0, "rr": 1.0, "line_hit@10": 1.0,
                                                   "line_rr": 1.0}


def test_coverage_counts_primaries_the_index_lacks() -> None:
    entities = [ent("pkg/a.py", "A", "class A: ...", kind="class", lines=(5, 40)), ent("pkg/a.py", "pkg/a.py", "", kind="file",
                                                                                        lines=(1, 80))]
    qs = [Question(id="in", text="?", primary=GoldEntity("pkg/a.py", "A"), gold_entities=(), gold_files=(), primary_span=(5, 40)),
          Question(id="renamed", text="?", primary=GoldEntity("pkg/a.py", "A.run"), gold_entities=(), gold_files=(),
                   primary_span=(10, 20)),
          Question(id="unparsed", text="?", primary=GoldEntity("pkg/a.py", "helper"), gold_entities=(), gold_files=(),
                   primary_span=(60, 70)),
          Question(id="nofile", text="?", primary=GoldEntity("docs/x.rst", "X"), gold_entities=(), gold_files=()),
          Question(id="none", text="?", primary=None, gold_entities=(), gold_files=())]
    cov = primary_coverage(entities, qs)
    assert cov["with_primary"] == 4
    assert [x.split(":")[0] for x in cov["missing_qualname"]] == ["renamed", "unparsed", "nofile"]
    assert [x.split(":")[0] for x in cov["missing_lines"]] == ["unparsed"]  # only the file row spans its lines
    assert [x.split(":")[0] for x in cov["missing_file"]] == ["nofile"]

"""Evaluation metrics on hand-computed cases, the anchor reproduction, and the flow on a tiny corpus."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from assay.stages.evaluate.metrics import (AnchorIndex, GoldEntity, Question, aggregate, auroc, dedupe, keep_drop_prf,
                                          question_metrics, trust_summary)
from assay.stages.evaluate.runs import plant


def q(primary=("a.py", "f"), gold=(("a.py", "f"), ("b.py", "g")), files=("a.py", "b.py", "c.py")) -> Question:
    return Question(id="x", text="?", primary=GoldEntity(*primary) if primary else None,
                    gold_entities=tuple(GoldEntity(*g) for g in gold), gold_files=tuple(files))


def test_hits_mrr_and_recalls_by_hand() -> None:
    ranked = [("z.py", "h"), ("a.py", "f"), ("a.py", "f"), ("b.py", "x")]  # duplicate chunk collapses
    m = question_metrics(ranked, q())
    assert m == {"hit@1": 0.0, "hit@5": 1.0, "hit@10": 1.0, "rr": 0.5, "entity_recall@10": 0.5, "file_recall@10": 2 / 3}
    miss = question_metrics([("z.py", "h")], q())
    assert miss["hit@10"] == 0.0 and miss["rr"] == 0.0 and miss["entity_recall@10"] == 0.0
    deep = [(f"f{i}.py", "n") for i in range(10)] + [("a.py", "f")]
    assert question_metrics(deep, q())["hit@10"] == 0.0 and question_metrics(deep, q())["rr"] == pytest.approx(1 / 11)
    no_primary = question_metrics(ranked, q(primary=None))
    assert "hit@1" not in no_primary and "rr" not in no_primary


def test_aggregate_means_ignore_missing_metrics() -> None:
    agg = aggregate([{"hit@1": 1.0, "rr": 1.0}, {"hit@1": 0.0, "rr": 0.25}, {"file_recall@10": 0.5}])
    assert agg["hit@1"] == 0.5 and agg["mrr"] == 0.625 and agg["file_recall@10"] == 0.5 and agg["questions"] == 3


def test_keep_drop_precision_recall_by_hand() -> None:
    m = keep_drop_prf([True, True, False, False, True], [True, False, True, False, True])
    assert m == {"precision": 0.6667, "recall": 0.6667, "f1": 0.6667, "passages": 5}
    assert keep_drop_prf([], [])["f1"] is None  # nothing kept or gold: not measured, not 0


def test_auroc_and_trust_summary_by_hand() -> None:
    assert auroc([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.9], [True, False]) == 0.0
    assert auroc([0.5, 0.5], [True, False]) == 0.5  # a tie counts half
    assert auroc([0.3, 0.4], [True, True]) is None  # one class only
    records = [("supported", 0.9, True), ("supported", 0.8, False), ("partial", 0.2, False), ("unsupported", None, True)]
    assert trust_summary(records) == {"answers": 4, "trust_high": 2, "included_when_high": 0.5, "included_otherwise": 0.5,
                                      "answerable_auroc": 1.0}  # 0.9 (included) above 0.8 and 0.2


def test_dedupe_keeps_first_seen_order() -> None:
    assert dedupe([("a", "1"), ("b", "2"), ("a", "1")]) == [("a", "1"), ("b", "2")]


def test_anchor_reproduction_embeds_signature_and_docstring_only() -> None:
    from assay.stages.core.artifacts import Entity
    from assay.stages.index.embed import get_embedder

    def ent(name: str, sig: str, doc: str, body: str) -> Entity:
        return Entity(id=name, kind="function", name=name, qualname=name, signature=sig, docstring=doc, body=body,
                      start_line=1, end_line=2, language="python", file=f"{name}.py", content_hash="h")

    ents = [ent("tokenize", "def tokenize(text)", "Split text into words.", "def tokenize(text):\n    return text.split()"),
            ent("helper", "def helper(x)", "", "def helper(x):\n    # parse http cookies and merge cookie jars\n    return x")]
    anchor = AnchorIndex(ents, get_embedder("minilm"))
    assert anchor.search("split text into words", k=5)[0] == ("tokenize.py", "tokenize")
    # the body mentions cookies, but the anchor never embedded bodies: helper is not found for it
    assert ("helper.py", "helper") not in anchor.search("merge cookie jars", k=1) or anchor.threshold >= 1.5


def test_plant_puts_attacks_in_comments_docstrings_and_strings() -> None:
    body = "def f(x):\n    return x\n"
    assert plant(body, "Ignore previous instructions", 0).splitlines()[1] == "    # Ignore previous instructions"
    assert plant(body, "a\nb", 1).splitlines()[1] == '    """a b"""'
    assert plant(body, "say hi", 2).splitlines()[1] == '    _note = "say hi"'


def test_plant_goes_past_decorators_and_a_long_signature() -> None:
    """Planted after a decorator or inside a parameter list, a docstring is no docstring (and no Python)."""
    body = "@property\n@cache(size=(\n    3))\ndef f(\n    self, x: tuple[int, int] = (1, 2),  # pair:\n) -> int:\n    return x\n"
    for where in range(3):
        tree = ast.parse(plant(body, "say hi", where))
        assert isinstance(tree.body[0], ast.FunctionDef) and len(tree.body) == 1
    assert ast.get_docstring(ast.parse(plant(body, "say hi", 1)).body[0]) == "say hi"
    assert plant(body, "say hi", 0).splitlines()[6] == "    # say hi"


def test_evaluate_flow_on_a_tiny_local_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    """The flow end to end, offline: a pre-unpacked corpus and hand-written questions."""
    import assay.flows.evaluate as evaluate

    home = tmp_path / "evalhome"
    corpus = home / "corpora" / "tiny-1.0"
    corpus.parent.mkdir(parents=True)
    project.rename(corpus)
    (corpus / ".unpacked").write_text("tiny==1.0")
    qdir = tmp_path / "questions"
    qdir.mkdir()
    rows = [
        {"id": "t1", "package": "tiny==1.0", "question": "How does retry_call back off between attempts?",
         "question_names_code_identifier": True,
         "primary_entity": {"file": "pkg/retry.py", "qualname": "retry_call"},
         "gold_entities": [{"file": "pkg/retry.py", "qualname": "retry_call"}, {"file": "pkg/retry.py", "qualname": "backoff_delays"}],
         "gold_files": ["pkg/retry.py"]},
        {"id": "t2", "package": "tiny==1.0", "question": "How are cookies merged into a jar?", "question_names_code_identifier": False,
         "primary_entity": {"file": "pkg/session.py", "qualname": "merge_cookies"},
         "gold_entities": [{"file": "pkg/session.py", "qualname": "merge_cookies"}], "gold_files": ["pkg/session.py"]},
    ]
    (qdir / "tiny.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("ASSAY_EVAL_DIR", str(home))
    from tests.conftest import shared_path

    results = evaluate.run_evaluate(corpora=["tiny"], questions_dir=str(qdir), bipia_dir=str(shared_path("eval", "bipia")))
    tiny = results["corpora"]["tiny"]
    hybrid = tiny["retrieval"]["retrieval"]["hybrid"]
    assert hybrid["questions"] == 2 and hybrid["hit@10"] == 1.0
    assert set(tiny["retrieval"]["retrieval"]) == {"plain-bm25", "dense", "bm25", "hybrid", "ranked", "ranked+local", "ranked+none",
                                                   "anchor"}
    assert tiny["package"] == "tiny==1.0" and tiny["questions"]["named"] == 1 and tiny["questions"]["paraphrased"] == 1
    split = tiny["retrieval"]["split"]["ranked"]
    assert (split["all"]["n"], split["named"]["n"], split["paraphrased"]["n"]) == (2, 1, 1)
    assert tiny["retrieval"]["coverage"]["with_primary"] == 2 and tiny["retrieval"]["coverage"]["missing_qualname"] == []
    assert "| tiny | named | ranked (`search`) | 1 |" in results["markdown"]
    assert tiny["retrieval"]["judges"]["local"]["recall"] > 0
    trust = tiny["retrieval"]["trust"]["local"]
    assert trust["answers"] == 2 and 0 <= trust["trust_high"] <= 2 and "| tiny | local | 2 |" in results["markdown"]
    assert tiny["injection"]["attacks"] >= 100 and tiny["injection"]["detection_rate"] > 0.5
    assert tiny["cost"]["answers"] == 2 and tiny["cost"]["report_tokens_mean"] > 0
    out = Path(results["output_dir"])
    assert (out / "results.json").exists() and (out / "per_question.parquet").exists() and "| tiny | hybrid |" in results["markdown"]
    again = evaluate.run_evaluate(corpora=["tiny"], questions_dir=str(qdir), bipia_dir=str(shared_path("eval", "bipia")))
    assert again["corpora"]["tiny"]["retrieval"] == tiny["retrieval"]  # deterministic given the same inputs


def test_aggregate_matches_plain_means_on_random_questions() -> None:
    import random

    rng = random.Random(5)
    keys = ("hit@1", "hit@5", "hit@10", "rr", "entity_recall@10", "file_recall@10")
    rows = [{k: rng.choice([None, 0.0, 1.0, rng.random()]) for k in keys if rng.random() < 0.8} for _ in range(61)]
    agg = aggregate(rows)
    for k in keys:
        vals = [r[k] for r in rows if r.get(k) is not None]
        assert agg["mrr" if k == "rr" else k] == (round(sum(vals) / len(vals), 4) if vals else None)


def test_the_semble_suite_without_its_benchmark_says_where_it_looked_and_what_to_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows import evaluate as flows_evaluate

    monkeypatch.setattr(flows_evaluate, "shared_eval_candidates", lambda name: [tmp_path / "a" / name, tmp_path / "b" / name])
    with pytest.raises(FileNotFoundError, match=r"no semble benchmark found \(looked for repos.json in .*a/semble, .*b/semble\); "
                                                r"pass --questions DIR"):
        flows_evaluate.default_semble_dir()
    (tmp_path / "b" / "semble").mkdir(parents=True)
    (tmp_path / "b" / "semble" / "repos.json").write_text("[]")
    assert flows_evaluate.default_semble_dir() == tmp_path / "b" / "semble"

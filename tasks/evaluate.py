"""Prefect tasks of the evaluate flow: thin wrappers over `stages.evaluate.metrics`, `runs` and `sdists`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from assay.stages.core.config import Settings
from assay.stages.evaluate import metrics as ev
from assay.stages.evaluate import runs as jobs
from assay.stages.evaluate import sdists
from assay.tasks.gpu import judge_holding_gpu
from assay.tasks.lazy import task

if TYPE_CHECKING:
    from assay.stages.evaluate.semble import Source


@task(name="prepare-corpus", retries=1)
def prepare_corpus(requirement: str, home: Path) -> Path:
    return sdists.prepare_corpus(requirement, home)


@task(name="load-questions")
def load_questions(path: Path, limit: int | None) -> list[ev.Question]:
    return jobs.answerable_questions(path, limit)


@task(name="evaluate-retrieval")
def evaluate_retrieval(root: Path, questions: list[ev.Question], settings: Settings, judges: list[str]):
    """Per configuration (a stock BM25 baseline first): primary hit@1/5/10 and MRR by qualified name and by line overlap,
    entity and file recall@10, all / named / paraphrased questions; primaries missing from the index; judges' keep/drop."""
    return jobs.evaluate_retrieval(root, questions, settings, judges, lambda backend: judge_holding_gpu(backend, settings))


@task(name="evaluate-injection")
def evaluate_injection(root: Path, bipia: Path, settings: Settings) -> dict:
    return jobs.evaluate_injection(root, bipia, settings)


@task(name="evaluate-cost")
def evaluate_cost(root: Path, questions: list[ev.Question], answer) -> dict:
    """`answer(question) -> QueryReport` comes from the flow: a task never reaches up into flows/."""
    return jobs.evaluate_cost(root, questions, answer)


@task(name="render-results")
def render(results: dict) -> str:
    return jobs.render(results)


@task(name="prepare-semble-repo", retries=1)
def prepare_semble_repo(repo: dict, home: Path, source: Source | None = None) -> Path:
    from assay.stages.evaluate.semble import prepare_repo

    return prepare_repo(repo, home, source)


@task(name="evaluate-semble")
def evaluate_semble(root: Path, repo: str, queries: list, settings: Settings, ablate: bool) -> list[dict]:
    return jobs.evaluate_semble(root, repo, queries, settings, ablate)


@task(name="render-semble")
def render_semble(results: dict) -> str:
    return jobs.render_semble(results)


@task(name="evaluate-premises")
def evaluate_premises(roots: dict[str, Path]) -> dict:
    from assay.stages.evaluate import premise_set as premise_eval

    return premise_eval.evaluate(roots)


@task(name="evaluate-injection-planted")
def evaluate_injection_planted(roots: list[Path], bipia: Path | None) -> dict:
    from assay.stages.evaluate import planted_attacks as injection_eval

    return injection_eval.evaluate(roots, bipia)


@task(name="evaluate-calibration")
def evaluate_calibration(labels: Path, judges: list[str], settings: Settings) -> dict:
    """ECE and reliability of each judge on the labelled pairs; the local judge also refitted per held-out repo."""
    from assay.stages.evaluate import judge_calibration

    return judge_calibration.evaluate(labels, {j: judge_holding_gpu(j, settings) for j in judges})


@task(name="evaluate-faithfulness")
def evaluate_faithfulness(roots: dict[str, Path], per_kind: int) -> dict:
    from assay.stages.evaluate import faithfulness_set as faith

    return faith.evaluate(roots, per_kind)

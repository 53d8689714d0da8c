"""The evaluate flow: measure Assay on SWE-QA questions over real PyPI sdists nobody here wrote.

prepare (pip download the sdist once; offline afterwards) -> index -> retrieval per configuration
(dense, bm25, hybrid, hybrid + each judge, the anchor system reproduced) -> judge keep/drop against
gold -> injection detection on a planted copy -> answer cost -> results (JSON, Parquet, markdown).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from assay.flows import runtime  # noqa: F401

from assay.flows.index import index_pipeline
from assay.flows.query import query_pipeline
from assay.flows.runtime import Caller, direct_call, flow_exports, lazy_flow, prefect_call, run_flow
from assay.stages.core.config import Settings, eval_dir
from assay.stages.query.threshold import default_thresholds
from assay.tasks import evaluate as t

DEFAULT_CORPORA = ("requests", "pytest")  # what `assay eval` runs when no --corpus is named
# clean code for the judge suite's false positives: the sdists of the first two SWE-QA sets
JUDGE_CLEAN_CORPORA = ("requests==2.32.5", "pytest==8.4.2")


def eval_home() -> Path:
    return eval_dir()


def questions_dir_candidates() -> list[Path]:
    """Where the SWE-QA question sets may be, in order: $ASSAY_EVAL_QUESTIONS, `../shared/eval/swe-qa` beside the
    checkout this module runs from, then beside the current directory (an installed wheel has no checkout)."""
    named = os.environ.get("ASSAY_EVAL_QUESTIONS")
    if named:
        return [Path(named).expanduser()]
    return shared_eval_candidates("swe-qa")


def shared_eval_candidates(name: str) -> list[Path]:
    """`../shared/eval/<name>` beside the checkout this module runs from, then beside the current directory."""
    return [Path(__file__).resolve().parents[2] / "shared" / "eval" / name,
            Path.cwd().resolve().parent / "shared" / "eval" / name]


def default_questions_dir() -> Path:
    candidates = questions_dir_candidates()
    for folder in candidates:
        if folder.is_dir():
            return folder
    looked = ", ".join(str(f) for f in candidates)
    raise FileNotFoundError(f"no SWE-QA question sets found (looked in {looked}); set ASSAY_EVAL_QUESTIONS or pass --questions")


def corpora_in(folder: Path) -> dict[str, str]:
    """Every `<name>.jsonl` there is a corpus, scored against the sdist its rows' `package` field pins."""
    from assay.stages.evaluate.metrics import discover_corpora

    if folder.is_file():
        raise ValueError(f"{folder} is a file; --questions takes the folder that holds <corpus>.jsonl "
                         f"(here: --questions {folder.parent} --corpus {folder.stem})")
    if not folder.is_dir():
        raise FileNotFoundError(f"no such questions folder: {folder}")
    found = discover_corpora(folder)
    if not found:
        raise ValueError(f"no question sets in {folder}: it holds no <corpus>.jsonl")
    return found


def evaluate_pipeline(
    settings: Settings, corpora: list[str] | None, questions_dir: str | None = None, judges: list[str] | None = None,
    limit: int | None = None, bipia_dir: str | None = None, call: Caller = prefect_call,
) -> dict:
    from assay.flows.audit import check_judges_local_mode
    from assay.stages.evaluate.runs import question_counts

    check_judges_local_mode(settings, judges or [])  # a cloud or off-loopback judge is refused before any corpus work
    home = eval_home()
    qdir = Path(questions_dir) if questions_dir else default_questions_dir()
    available = corpora_in(qdir)
    corpora = list(corpora or [c for c in DEFAULT_CORPORA if c in available] or available)
    unknown = [c for c in corpora if c not in available]
    if unknown:
        raise ValueError(f"no question set {', '.join(unknown)} in {qdir} (there: {', '.join(available)}); "
                         "pass one of those as --corpus")
    # every chosen set is read and checked before any corpus is downloaded or indexed: a bad row costs seconds, not a run
    sets = {name: call(t.load_questions, qdir / f"{name}.jsonl", limit) for name in corpora}
    bipia = Path(bipia_dir) if bipia_dir else qdir.parent / "bipia"
    judges = judges or ["local", "none"]
    results: dict = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "settings": {
        "embedder": settings.embedder, "pool_size": settings.pool_size, "top_k": default_thresholds("local", settings.thresholds, settings.chosen_top_k()).top_k,
        "judges": judges}, "corpora": {}}
    rows: list[dict] = []
    for name in corpora:
        root = call(t.prepare_corpus, available[name], home)
        index_report = index_pipeline(str(root), measured(settings), call=call)
        questions = sets[name]
        retrieval, per_q = call(t.evaluate_retrieval, root, questions, settings, judges)
        injection = call(t.evaluate_injection, root, bipia, settings)
        cost = call(t.evaluate_cost, root, questions, lambda q: query_pipeline(str(root), q, settings, call=direct_call))
        results["corpora"][name] = {"package": available[name], "entities": index_report.entities_total,
                                    "files": index_report.files_parsed + index_report.files_unchanged,
                                    "questions": question_counts(qdir / f"{name}.jsonl", limit),  # what was run
                                    "retrieval": retrieval, "injection": injection, "cost": cost}
        rows.extend({"corpus": name, **r} for r in per_q)
    return save_results(home, "", results, rows, "per_question.parquet", call(t.render, results))


def measured(settings: Settings) -> Settings:
    """An evaluation measures the embedder its settings name (and its results say so): a corpus indexed with
    another is re-embedded, not kept as an index run that names none keeps it."""
    return settings.model_copy(update={"embedder": settings.embedder, "embed_tokens": settings.embed_tokens})


def save_results(home: Path, prefix: str, results: dict, rows: list[dict], rows_file: str, markdown: str) -> dict:
    """results.json, the per-query Parquet table and results.md in a new timestamped folder."""
    out = home / "results" / (prefix + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    if rows:
        pq.write_table(pa.Table.from_pylist(rows), out / rows_file)
    (out / "results.md").write_text(markdown, encoding="utf-8")
    results["output_dir"] = str(out)
    results["markdown"] = markdown
    return results


def default_semble_dir() -> Path:
    """Semble's dev subset where `../shared` is; an installed wheel looks beside the current directory too."""
    candidates = shared_eval_candidates("semble")
    found = next((folder for folder in candidates if (folder / "repos.json").is_file()), None)
    if found is None:
        looked = ", ".join(str(f) for f in candidates)
        raise FileNotFoundError(f"no semble benchmark found (looked for repos.json in {looked}); pass --questions DIR")
    return found


def evaluate_semble_pipeline(
    settings: Settings, repos: list[str] | None = None, semble_dir: str | None = None, ablate: bool = True,
    limit: int | None = None, call: Caller = prefect_call,
) -> dict:
    """Semble's benchmark (dev subset): index each repository's benchmark_root, then NDCG@10 per configuration."""
    from assay.stages.evaluate import runs as jobs
    from assay.stages.evaluate import semble as sb

    home = eval_home()
    folder = Path(semble_dir) if semble_dir else default_semble_dir()
    if folder.is_file():
        raise ValueError(f"{folder} is a file; --questions takes the folder that holds repos.json and annotations/")
    specs = sb.load_repos(folder)
    unknown = [r for r in repos or [] if r not in specs]
    if unknown:
        raise ValueError(f"no such repository in {folder / 'repos.json'}: {', '.join(unknown)}")
    # every annotation file is read and checked before any repository is fetched or indexed; a repository with none
    # is reported beside the others, as one whose source cannot be had is
    annotations = {name: folder / "annotations" / f"{name}.json" for name in repos or list(specs)}
    chosen = {name: sb.read_queries(path, name) for name, path in annotations.items() if path.is_file()}
    results: dict = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "suite": "semble",
                     "settings": {"embedder": settings.embedder, "ranking": settings.ranking}, "repos": {}}
    rows: list[dict] = []
    for name in annotations:
        try:
            source = sb.source_for(specs[name])
            if name not in chosen:
                raise ValueError(f"no queries: {annotations[name]} does not exist")
            root = call(t.prepare_semble_repo, specs[name], home, source)
        except (RuntimeError, ValueError) as exc:  # one repository the registries lack does not end the run
            results["repos"][name] = {"error": str(exc)}
            continue
        index_pipeline(str(root), measured(settings), call=call)
        queries = chosen[name][:limit] if limit else chosen[name]
        present, total, orphaned = sb.present_targets(root, queries)
        results["repos"][name] = {"source": f"{source.registry} {source.package} {source.version}", "queries": len(queries),
                                  "targets_present": present, "targets_total": total, "orphaned": orphaned}
        rows.extend(call(t.evaluate_semble, root, name, queries, settings, ablate))
    results["summary"] = jobs.semble_summary(rows)
    return save_results(home, "semble-", results, rows, "per_query.parquet", call(t.render_semble, results))


@lazy_flow("assay-evaluate-semble")
def _evaluate_semble_flow(repos: list[str] | None = None, semble_dir: str | None = None, ablate: bool = True,
                          limit: int | None = None, settings: Settings | None = None) -> dict:
    """Run semble's code-search benchmark (dev repositories) against Assay's ranking and a plain BM25."""
    return evaluate_semble_pipeline(settings or Settings(), repos, semble_dir, ablate, limit)


def run_evaluate_semble(settings: Settings | None = None, **options) -> dict:
    def body(settings: Settings, call: Caller, **kw) -> dict:
        return evaluate_semble_pipeline(settings, call=call, **kw)

    return run_flow(_evaluate_semble_flow, body, settings=settings or Settings(), **options)


def _default_bipia() -> Path | None:
    """BIPIA's attack strings beside the SWE-QA sets; None where those are not found (the judge suite runs without)."""
    try:
        return default_questions_dir().parent / "bipia"
    except FileNotFoundError:
        return None


def default_labels_dir() -> Path:
    """The labelled judge pairs of a checkout (they are development data, not shipped in the wheel)."""
    return Path(__file__).resolve().parents[1] / "tests" / "benchmarks" / "judge_labels"


def check_labels_dir(folder: Path) -> None:
    """The judge suite's --questions: a folder holding at least one <name>.jsonl of labelled pairs."""
    from assay.stages.evaluate.judge_calibration import labelled_sets

    if folder.is_file():
        raise ValueError(f"{folder} is a file; --questions (judge) takes the folder that holds it (here: {folder.parent})")
    if not folder.is_dir():
        raise FileNotFoundError(f"no such labels folder: {folder}")
    if not labelled_sets(folder):
        raise ValueError(f"no labelled pairs in {folder}: it holds no <name>.jsonl")


def evaluate_judge_pipeline(settings: Settings, bipia_dir: str | None = None, call: Caller = prefect_call,
                            judges: list[str] | None = None, labels_dir: str | None = None) -> dict:
    """The judges: premise checks on sets generated from third-party sdists, injection detection on attacks planted
    into their code and docs (the local judge), and calibration of each judge on the labelled pairs, with
    reliability diagrams."""
    from assay.stages.audit.charts import reliability_diagram
    from assay.stages.evaluate import judge_calibration
    from assay.stages.evaluate import planted_attacks as injection_eval
    from assay.stages.evaluate import premise_set as premise_eval
    from assay.flows.audit import check_judges_local_mode

    check_judges_local_mode(settings, judges or [])  # a cloud or off-loopback judge is refused before any corpus work
    if labels_dir:  # a folder the user named is checked before any sdist is fetched
        check_labels_dir(Path(labels_dir))
    home = eval_home()
    bipia = Path(bipia_dir) if bipia_dir else _default_bipia()
    roots = {req.split("==")[0]: call(t.prepare_corpus, req, home) for req in premise_eval.PREMISE_CORPORA}
    premises = call(t.evaluate_premises, roots)
    clean = list(roots.values()) + [call(t.prepare_corpus, req, home) for req in JUDGE_CLEAN_CORPORA]
    injection = call(t.evaluate_injection_planted, clean, bipia if bipia is not None and bipia.exists() else None)
    calibration = call(t.evaluate_calibration, Path(labels_dir) if labels_dir else default_labels_dir(),
                       [j for j in (judges or ["local"]) if j != "none"], settings)
    results = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "suite": "judge",
               "premises": premises, "injection": injection, "calibration": calibration}
    curves = {name: per_repo["all"]["reliability"] for name, per_repo in calibration.get("backends", {}).items()}
    markdown = ("# Assay judge evaluation\n\n" + premise_eval.render(premises) + "\n" + injection_eval.render(injection)
                + "\n" + judge_calibration.render_section(calibration) + ("\n![reliability](reliability.png)\n" if curves else ""))
    saved = save_results(home, "judge-", results, [], "", markdown)
    if curves:
        reliability_diagram(curves, Path(saved["output_dir"]) / "reliability.png")
    return saved


@lazy_flow("assay-evaluate-judge")
def _evaluate_judge_flow(bipia_dir: str | None = None, settings: Settings | None = None, judges: list[str] | None = None,
                        labels_dir: str | None = None) -> dict:
    """Measure premise checking, injection detection and calibration of the judges."""
    return evaluate_judge_pipeline(settings or Settings(), bipia_dir, judges=judges, labels_dir=labels_dir)


def run_evaluate_judge(settings: Settings | None = None, **options) -> dict:
    def body(settings: Settings, call: Caller, **kw) -> dict:
        return evaluate_judge_pipeline(settings, call=call, **kw)

    return run_flow(_evaluate_judge_flow, body, settings=settings or Settings(), **options)


def evaluate_faithfulness_pipeline(settings: Settings, per_kind: int | None = None, corpora: list[str] | None = None,
                                   call: Caller = prefect_call) -> dict:
    """The local faithfulness guard alone: answers with planted faults and their faithful twins, generated from the
    `ast` facts of third-party sdists (`corpora`: NAME==VERSION pins, default tenacity and boltons). No index, no
    model: parse, generate and check."""
    from assay.stages.evaluate import faithfulness_set as faith

    home = eval_home()
    pins = corpora or list(faith.FAITHFULNESS_CORPORA)
    if any("==" not in p for p in pins):
        raise ValueError("faithfulness corpora are PyPI pins: NAME==VERSION")
    roots = {req.split("==")[0]: call(t.prepare_corpus, req, home) for req in pins}
    result = call(t.evaluate_faithfulness, roots, per_kind or 40)
    results = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "suite": "faithfulness", **result}
    return save_results(home, "faithfulness-", results, [], "", "# Assay faithfulness evaluation\n\n" + faith.render(result))


@lazy_flow("assay-evaluate-faithfulness")
def _evaluate_faithfulness_flow(per_kind: int | None = None, corpora: list[str] | None = None,
                                settings: Settings | None = None) -> dict:
    """Measure the faithfulness guard's detection of planted faults and its false alarms on faithful twins."""
    return evaluate_faithfulness_pipeline(settings or Settings(), per_kind, corpora)


def run_evaluate_faithfulness(settings: Settings | None = None, **options) -> dict:
    def body(settings: Settings, call: Caller, **kw) -> dict:
        return evaluate_faithfulness_pipeline(settings, call=call, **kw)

    return run_flow(_evaluate_faithfulness_flow, body, settings=settings or Settings(), **options)


@lazy_flow("assay-evaluate")
def _evaluate_flow(corpora: list[str] | None = None, questions_dir: str | None = None, judges: list[str] | None = None,
                   limit: int | None = None, settings: Settings | None = None) -> dict:
    """Run the SWE-QA retrieval and judge evaluation over the sdists the question sets pin (default: requests, pytest)."""
    return evaluate_pipeline(settings or Settings(), corpora or [], questions_dir, judges, limit)


def run_evaluate(settings: Settings | None = None, **options) -> dict:
    def body(settings: Settings, call: Caller, corpora=None, **kw) -> dict:
        return evaluate_pipeline(settings, corpora or [], call=call, **kw)

    return run_flow(_evaluate_flow, body, settings=settings or Settings(), **options)


# the Prefect flows, built on first access
__getattr__ = flow_exports(
    evaluate_semble_flow=_evaluate_semble_flow, evaluate_judge_flow=_evaluate_judge_flow, evaluate_flow=_evaluate_flow,
    evaluate_faithfulness_flow=_evaluate_faithfulness_flow,
)

"""Evaluation jobs: retrieval per configuration, planted-injection detection, answer cost, result tables.

Judges and the answer pipeline come in as callables, so the Prefect tasks decide how models are held.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from assay.stages.core.artifacts import Candidate, Judgment, QueryReport
from assay.stages.core.config import Settings
from assay.stages.core.llm_clients import timeout_breaker
from assay.stages.evaluate import metrics as ev
from assay.stages.index.embed import embedder_for
from assay.stages.index.store import Catalog, load_manifest
from assay.stages.query.graph import workspace_centrality
from assay.stages.query.judge.local import passage_injection
from assay.stages.query.retrieve import (DEFAULT_DEPTH, located_entities, ranking_for, retrieve, to_candidate, with_distances,
                                         with_turned_distances)
from assay.stages.query.report import status_of
from assay.stages.query.threshold import BEYOND_IN_ORDER, BEYOND_TOP_K, default_thresholds, select

Judge = Callable[[str, list[Candidate]], Judgment]


def answerable_questions(path: Path, limit: int | None) -> list[ev.Question]:
    """Questions with any gold to score against (SWE-QA has a few without), optionally the first N."""
    qs = [q for q in ev.load_questions(path) if _scorable(q)]
    return qs[:limit] if limit else qs


def _scorable(q: ev.Question) -> bool:
    return q.primary is not None or bool(q.gold_entities or q.gold_files)


def question_counts(path: Path, limit: int | None = None) -> dict[str, int]:
    """What the run read of a question set: its questions, those scored (any gold), those with no primary entity
    (kind `none`: no hit figure), and the named / paraphrased split of those with one. With `limit`, the questions up
    to the limit-th scored one (what `answerable_questions` ran), and `in_file` the whole set's count."""
    every = ev.load_questions(path)
    qs = every[: _prefix_length(every, limit)] if limit else every
    with_primary = [q for q in qs if q.primary is not None]
    counts = {"questions": len(qs), "scored": sum(map(_scorable, qs)), "primary_none": len(qs) - len(with_primary),
              "named": sum(q.named is True for q in with_primary), "paraphrased": sum(q.named is False for q in with_primary)}
    return {**counts, "in_file": len(every)} if limit else counts


def _prefix_length(qs: list[ev.Question], limit: int) -> int:
    """How many leading questions hold the first `limit` scorable ones."""
    scored = 0
    for i, q in enumerate(qs, start=1):
        scored += _scorable(q)
        if scored >= limit:
            return i
    return len(qs)


def primary_coverage(entities: list, questions: list[ev.Question]) -> dict:
    """Is each question's primary entity in the index at all? A primary the catalog lacks is a chunking or coverage
    problem, not a ranking one. `missing_qualname`: no passage of that file and qualified name; `missing_lines`: no
    passage of that file (other than its file row) overlapping the primary's lines; `missing_file`: the file has none."""
    by_file: dict[str, list] = {}
    for e in entities:
        by_file.setdefault(e.file, []).append(e)
    out: dict = {"with_primary": 0, "missing_file": [], "missing_qualname": [], "missing_lines": []}
    for q in questions:
        if q.primary is None:
            continue
        out["with_primary"] += 1
        here = by_file.get(q.primary.file, [])
        label = f"{q.id}: {q.primary.qualname} ({q.primary.file})"
        if not here:
            out["missing_file"].append(label)
        if not any(e.qualname == q.primary.qualname for e in here):
            out["missing_qualname"].append(label)
        if q.primary_span is not None and not any(
                e.kind != "file" and e.start_line <= q.primary_span[1] and e.end_line >= q.primary_span[0] for e in here):
            out["missing_lines"].append(label)
    return out


PLAIN_BM25 = "plain-bm25"  # the in-run baseline every figure is printed beside


def plain_bm25_ranked(entities: list, questions: list[ev.Question], pool: int) -> dict[str, list[ev.Ranked]]:
    """Question id -> the `pool` passages a stock BM25 (`plain_bm25`: bm25s's default tokenizer and English stop
    words, no identifier splitting, no stemming, no path, kind or name weighting) returns for its text, with lines,
    ready for `metrics.question_metrics` as every other configuration is scored."""
    search = plain_bm25(entities)
    return {q.id: [(e.file, e.qualname, e.start_line, e.end_line) for e in search(q.text, pool)] for q in questions}


@timeout_breaker("eval")  # a judge host that timed out on one question is not waited on for each of the others
def evaluate_retrieval(root: Path, questions: list[ev.Question], settings: Settings, judges: list[str], judge_for: Callable[[str], Judge]):
    """Per configuration: primary hit@1/5/10, MRR (by qualified name and by line overlap), entity and file recall@10,
    for all questions and split into named / paraphrased ones; a stock BM25 over the same passages as the baseline;
    whether each primary entity is in the index at all; judges' keep/drop vs gold."""
    manifest = load_manifest(root)
    embedder = embedder_for(settings)
    entities = list(Catalog(root).all())
    anchor = ev.AnchorIndex(entities, embedder)
    pool = max(30, settings.pool_size)
    baseline = plain_bm25_ranked(entities, questions, pool)
    ranking = ranking_for(settings)
    served = "ranked" if ranking is not None else "hybrid"  # what the search door and the judges get
    configs = [PLAIN_BM25, "dense", "bm25", "hybrid", *(["ranked"] if ranking is not None else []),
               *[f"{served}+{j}" for j in judges], "anchor"]
    per_config: dict[str, list[dict]] = {c: [] for c in configs}
    keep: dict[str, tuple[list[bool], list[bool]]] = {j: ([], []) for j in judges if j != "none"}
    trusted: dict[str, list[tuple[str, float | None, bool]]] = {j: [] for j in judges if j != "none"}
    rows: list[dict] = []
    for q in questions:
        results: dict[str, list[ev.Ranked]] = {PLAIN_BM25: baseline[q.id]}
        for mode in ("dense", "bm25", "hybrid"):
            res = retrieve(root, q.text, manifest, embedder, pool=pool, chroma_url=settings.chroma_url, mode=mode)
            results[mode] = ev.ranked_keys(res.candidates)
            if mode == "hybrid":
                hybrid = res.candidates
        if ranking is not None:
            hybrid = retrieve(root, q.text, manifest, embedder, pool=pool, chroma_url=settings.chroma_url, ranking=ranking).candidates
            results["ranked"] = ev.ranked_keys(hybrid)
        golds = {(g.file, g.qualname) for g in q.gold_entities}
        position = {c.id: i for i, c in enumerate(hybrid)}
        for j in judges:
            judgment = judge_for(j)(q.text, hybrid)
            sel = select(hybrid, judgment, default_thresholds(j, settings.thresholds, settings.chosen_top_k()), q.text)
            dropped = sorted(sel.dropped, key=lambda r: (-r.rank_score, r.candidate.fused_rank) if judgment.orders_kept else
                             (position[r.candidate.id],))
            ordered = sel.included + dropped
            results[f"{served}+{j}"] = ev.ranked_keys([r.candidate for r in ordered])
            if j in trusted and q.primary is not None:
                primary = (q.primary.file, q.primary.qualname)
                included = any((r.candidate.file, r.candidate.entity) == primary for r in sel.included)
                trusted[j].append((status_of(sel, judgment, q.text)[0], judgment.answerable, included))
            if j in keep and golds:
                for r in sel.included + sel.dropped:
                    keep[j][0].append(r.drop_reason in ("", BEYOND_TOP_K, BEYOND_IN_ORDER, "same entity"))
                    keep[j][1].append((r.candidate.file, r.candidate.entity) in golds)
        results["anchor"] = anchor.search(q.text, k=5, lines=True)
        for config in configs:
            m = ev.question_metrics(results[config], q)
            per_config[config].append(m)
            rows.append({"question": q.id, "config": config, "named": q.named, **{k: v for k, v in m.items()}})
    summary = {c: ev.aggregate(per_config[c]) for c in configs}
    split = {c: ev.split_summary(per_config[c], questions) for c in configs}
    judged = {j: ev.keep_drop_prf(*keep[j]) for j in keep}
    trust = {j: ev.trust_summary(records) for j, records in trusted.items()}
    return {"retrieval": summary, "split": split, "coverage": primary_coverage(entities, questions), "judges": judged,
            "trust": trust}, rows


_OPENING, _CLOSING = re.compile(r"[([{]"), re.compile(r"[)\]}]")


def _body_start(lines: list[str]) -> int:
    """Index of a definition's first body line: past its decorators and a signature written over several lines,
    so that what is planted there is a comment, docstring or statement of the body (one in a decorator or a parameter
    list would not be Python, and a parser reads it as something else). 1 when no signature ends a line."""
    depth, signed = 0, False
    for i, line in enumerate(lines):
        code = line.split("#", 1)[0].rstrip()
        signed = signed or (depth == 0 and code.lstrip().startswith(("def ", "async def ", "class ")))
        depth += len(_OPENING.findall(code)) - len(_CLOSING.findall(code))
        if signed and depth <= 0 and code.endswith(":"):
            return i + 1
    return 1


def plant(body: str, attack: str, where: int, ensure_ascii: bool = True) -> str:
    """Insert an attack string where a function's body begins: as a comment, a docstring or a string literal
    (`where` 0, 1, 2; `ensure_ascii=False` keeps other scripts readable in the literal)."""
    lines = body.splitlines()
    at = _body_start(lines)
    indent = " " * (len(lines[at]) - len(lines[at].lstrip())) if len(lines) > at and lines[at].strip() else "    "
    one = " ".join(attack.split())
    planted = [f"{indent}# {one}", f'{indent}"""{one}"""', f"{indent}_note = {json.dumps(one, ensure_ascii=ensure_ascii)}"][where % 3]
    return "\n".join([*lines[:at], planted, *lines[at:]])


def evaluate_injection(root: Path, bipia: Path, settings: Settings) -> dict:
    """BIPIA attacks planted into functions of the corpus: detection rate, and false positives on clean code."""
    attacks: list[str] = []
    for name in ("text_attack_train.json", "code_attack_train.json"):
        path = bipia / name
        if path.exists():
            for strings in json.loads(path.read_text(encoding="utf-8")).values():
                attacks.extend(strings)
    funcs = sorted((e for e in Catalog(root).all() if e.kind in ("function", "method") and e.language == "python" and e.part == 0
                    and e.body.count("\n") >= 1), key=lambda e: e.id)
    if not attacks or not funcs:  # nothing measured: null figures, and the reason, never a detection rate of 0
        why = f"no BIPIA attacks in {bipia}" if not attacks else "no Python functions in the corpus to plant them in"
        return {"attacks": len(attacks), "clean_functions": len(funcs), "detection_rate": None, "false_positive_rate": None,
                "note": f"not run: {why}"}
    th = default_thresholds("local", settings.thresholds)
    clean = [passage_injection(to_candidate(e, fused_rank=1, fused_score=0.01))[0] for e in funcs]
    step = max(1, len(funcs) // len(attacks))
    planted_scores = []
    by_host = {"comment": [], "docstring": [], "string": []}
    for i, attack in enumerate(attacks):
        e = funcs[(i * step) % len(funcs)]
        cand = to_candidate(e, fused_rank=1, fused_score=0.01).model_copy(update={"body": plant(e.body, attack, i)})
        score = passage_injection(cand)[0]
        planted_scores.append(score)
        by_host[("comment", "docstring", "string")[i % 3]].append(score >= th.injection_max)
    detected = [s >= th.injection_max for s in planted_scores]
    return {
        "judge": "local", "attacks": len(attacks), "clean_functions": len(funcs),
        "detection_rate": round(sum(detected) / len(detected), 4),
        "false_positive_rate": round(sum(s >= th.injection_max for s in clean) / len(clean), 4),
        "clean_above_0.15": sum(s > 0.15 for s in clean),
        "detection_by_host": {k: round(sum(v) / len(v), 4) if v else None for k, v in by_host.items()},
    }


@timeout_breaker("eval")
def evaluate_cost(root: Path, questions: list[ev.Question], answer: Callable[[str], QueryReport], sample: int = 12) -> dict:
    """Tokens the agent receives per answer (the whole report) vs the raw files the answer cites."""
    report_tokens, file_tokens = [], []
    for q in questions[:sample]:
        report = answer(q.text)
        report_tokens.append(ev.estimate_tokens(report.text))
        files = {rp.candidate.file for rp in report.selection.included}
        file_tokens.append(sum(ev.estimate_tokens((root / f).read_text(encoding="utf-8", errors="replace")) for f in files if (root / f).exists()))
    if not report_tokens:  # no question answered: no cost measured
        return {"answers": 0, "report_tokens_mean": None, "cited_files_tokens_mean": None, "ratio": None}
    n = len(report_tokens)
    mean_r, mean_f = sum(report_tokens) / n, sum(file_tokens) / n
    return {"answers": len(report_tokens), "report_tokens_mean": round(mean_r), "cited_files_tokens_mean": round(mean_f),
            "ratio": round(mean_r / mean_f, 3) if mean_f else None}


CONFIG_LABELS = {PLAIN_BM25: "plain BM25 (stock bm25s, baseline)", "bm25": "bm25 (Assay's, code-aware)",
                 "ranked": "ranked (`search`)", "ranked+local": "ranked + local judge (`ask`)"}


def _beside(m: dict, base: dict | None, key: str, digits: int) -> str:
    """A figure with the plain BM25's beside it in parentheses ("-" for one not measured)."""
    own = _figure(m.get(key), digits)
    return own if base is None or base is m else f"{own} ({_figure(base.get(key), digits)})"


def _figure(value: float | None, digits: int) -> str:
    """A measured figure; "-" where none was measured (no question had that gold, nothing was run), never 0."""
    return "-" if value is None else f"{value:.{digits}f}"


def render_split(results: dict) -> str:
    """Primary-entity hit@10 / MRR by qualified name and by line overlap, all / named / paraphrased questions, each
    beside the plain BM25's figure for the same questions."""
    head = ("| corpus | questions | configuration | n | hit@10 (plain) | MRR (plain) | n by line | line hit@10 (plain) | "
            "line MRR (plain) |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for name, data in results["corpora"].items():
        split = data["retrieval"].get("split") or {}
        base = split.get(PLAIN_BM25)
        for group in ("all", "named", "paraphrased"):
            for config, groups in split.items():
                m, b = groups[group], base[group] if base else None
                if not m["n"]:
                    continue
                lines.append(f"| {name} | {group} | {CONFIG_LABELS.get(config, config)} | {m['n']} | {_beside(m, b, 'hit@10', 2)} | "
                             f"{_beside(m, b, 'mrr', 3)} | {m['n_line']} | {_beside(m, b, 'line_hit@10', 2)} | "
                             f"{_beside(m, b, 'line_mrr', 3)} |")
    lines.append("")
    for name, data in results["corpora"].items():
        c, cov = data.get("questions") or {}, data["retrieval"].get("coverage") or {}
        if c:
            read = f" (the first of {c['in_file']} in the set: --limit)" if c.get("in_file", c["questions"]) != c["questions"] else ""
            lines.append(f"- {name} ({data.get('package')}): {c['questions']} questions{read}, {c['questions'] - c['primary_none']} with a "
                         f"primary entity ({c['named']} named, {c['paraphrased']} paraphrased), {c['primary_none']} without "
                         f"(kind none: excluded from hit figures), {c['scored']} scored for recall.")
        if cov:
            missing = [f"{len(cov[k])} by {label}" for k, label in (("missing_qualname", "qualified name"), ("missing_lines", "lines"),
                                                                       ("missing_file", "file"))]
            lines.append(f"  Primary entities not in the index at all (of {cov['with_primary']}): {', '.join(missing)}"
                         + (f": {'; '.join(cov['missing_qualname'])}" if cov["missing_qualname"] else "") + ".")
    return "\n".join(lines) + "\n"


def render(results: dict) -> str:
    lines = ["| corpus | configuration | hit@1 | hit@5 | hit@10 | MRR | line hit@10 | line MRR | entity R@10 | file R@10 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, data in results["corpora"].items():
        for config, m in data["retrieval"]["retrieval"].items():
            cells = [_figure(m.get(key), digits) for key, digits in (
                ("hit@1", 2), ("hit@5", 2), ("hit@10", 2), ("mrr", 3), ("line_hit@10", 2), ("line_mrr", 3),
                ("entity_recall@10", 2), ("file_recall@10", 2))]
            lines.append(f"| {name} | {CONFIG_LABELS.get(config, config)} | {' | '.join(cells)} |")
    lines += ["", render_split(results).rstrip("\n")]
    lines += ["", "| corpus | judge | keep precision | keep recall | F1 | passages |", "|---|---|---|---|---|---|"]
    for name, data in results["corpora"].items():
        for judge, m in data["retrieval"]["judges"].items():
            lines.append(f"| {name} | {judge} | {_figure(m['precision'], 2)} | {_figure(m['recall'], 2)} | "
                         f"{_figure(m['f1'], 2)} | {m['passages']} |")
    lines += ["", "| corpus | judge | answers | trust high | primary included when high | otherwise | AUROC of answerable |",
              "|---|---|---|---|---|---|---|"]
    for name, data in results["corpora"].items():
        for judge, m in data["retrieval"].get("trust", {}).items():
            lines.append(f"| {name} | {judge} | {m['answers']} | {m['trust_high']} | {_share(m['included_when_high'])} | "
                         f"{_share(m['included_otherwise'])} | {_share(m['answerable_auroc'])} |")
    lines += ["", "| corpus | attacks | detection | false positives | report tokens | cited-file tokens | ratio |",
              "|---|---|---|---|---|---|---|"]
    for name, data in results["corpora"].items():
        inj, cost = data["injection"], data["cost"]
        lines.append(f"| {name} | {inj.get('attacks')} | {_figure(inj.get('detection_rate'), 2)} | "
                     f"{_figure(inj.get('false_positive_rate'), 3)} | {_cell(cost['report_tokens_mean'])} | "
                     f"{_cell(cost['cited_files_tokens_mean'])} | {_cell(cost['ratio'])} |")
    notes = [f"- {name}: injection {data['injection']['note']}" for name, data in results["corpora"].items()
             if data["injection"].get("note")]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def _cell(value) -> str:
    return "-" if value is None else str(value)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


# ----------------------------------------------------------------------------- semble benchmark

SEMBLE_SIGNALS = ("query_shape", "definition", "path", "file_coherence", "penalties", "entity_facts", "doc_match", "phrase", "location", "centrality", "diversity", "learned")


def plain_bm25(entities: list) -> Callable[[str, int], list]:
    """The in-run baseline: bm25s with its stock tokenizer (English stop words, no code splitting, no
    stemming) over the same code chunks' text, without Assay's file rows or name weighting."""
    import bm25s

    chunks = [e for e in entities if e.kind not in ("file", "note")]
    corpus = [f"{e.signature}\n{e.docstring}\n{e.body}" for e in chunks]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", return_ids=False, show_progress=False), show_progress=False)

    def search(query: str, k: int) -> list:
        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        if not tokens[0]:
            return []
        docs, scores = retriever.retrieve(tokens, k=min(k, len(chunks)), show_progress=False)
        return [chunks[int(d)] for d, s in zip(docs[0], scores[0]) if s > 0]

    return search


def _entity_spans(entities: list) -> dict[tuple[str, str, str], tuple[int, int]]:
    """Each entity's whole span (a long body is stored in parts)."""
    spans: dict[tuple[str, str, str], tuple[int, int]] = {}
    for e in entities:
        key = (e.file, e.qualname, e.kind)
        lo, hi = spans.get(key, (e.start_line, e.end_line))
        spans[key] = (min(lo, e.start_line), max(hi, e.end_line))
    return spans


def _entity_hits(rows: list, spans: dict[tuple[str, str, str], tuple[int, int]], k: int = 10) -> list:
    """One hit per entity, in first-seen order, spanning the whole entity (as the search door shows it)."""
    from assay.stages.evaluate.semble import Hit

    order = dict.fromkeys((r.file, getattr(r, "entity", None) or r.qualname, r.kind) for r in rows)
    return [Hit(key[0], *spans.get(key, (0, 0))) for key in list(order)[:k]]


def evaluate_semble(root: Path, repo: str, queries: list, settings: Settings, ablate: bool = True) -> list[dict]:
    """NDCG@10 per query for: plain BM25 (in-run baseline), RRF hybrid (Assay before code-aware ranking),
    Assay (the `search` door), and Assay with each ranking signal switched off."""
    from assay.stages.query.graph import delegation_callees
    from assay.stages.query.rank import RankConfig, query_shape, rank
    from assay.stages.evaluate.semble import ndcg_at_10

    manifest = load_manifest(root)
    embedder = embedder_for(settings)
    catalog = Catalog(root)
    entities = list(catalog.all())
    callees = {q.query: delegation_callees(catalog, q.query, query_shape(q.query).identifiers) for q in queries}
    located = {q.query: located_entities(catalog, q.query, manifest.files) for q in queries}  # as `retrieve` reads them
    catalog.close()
    baseline = plain_bm25(entities)
    spans = _entity_spans(entities)
    central = workspace_centrality(root)
    configs: dict[str, RankConfig | None] = {"hybrid (RRF)": None, "assay": RankConfig()}
    if ablate:
        configs.update({f"assay - {s}": RankConfig(**{s: False}) for s in SEMBLE_SIGNALS})
    rows: list[dict] = []
    for q in queries:
        hits = {"BM25 (plain, in-run)": _entity_hits(baseline(q.query, 100), spans)}
        pool = retrieve(root, q.query, manifest, embedder, pool=10**6, depth=DEFAULT_DEPTH, chroma_url=settings.chroma_url,
                        look_up=True).candidates
        for name, config in configs.items():
            ordered = pool if config is None else rank(q.query, pool, config, paths=manifest.files.keys(), centrality=central,
                                                       callees=callees[q.query], located=located[q.query])
            if config is not None and config.learned:
                ordered = learned_order(root, manifest, settings, embedder, q.query, ordered)
            hits[name] = _entity_hits(ordered, spans)
        for name, found in hits.items():
            rows.append({"repo": repo, "query": q.query, "category": q.category, "config": name,
                         "ndcg": round(ndcg_at_10(found, q.targets), 4), "top": [h.file for h in found[:3]]})
    return rows


def learned_order(root: Path, manifest, settings: Settings, embedder, query: str, ranked: list[Candidate]) -> list[Candidate]:
    """What `retrieve` does after the rank stage for a question in words: the first `learned_rank.DEPTH` passages,
    each with its distances from the question's own vector and from its turned one (`query_adapter`), re-ordered by
    the learned model. (The pool itself was searched with the question's own vector.)"""
    from assay.stages.query import learned_rank, query_adapter

    if not learned_rank.applies(query):
        return ranked
    head = ranked[: learned_rank.DEPTH]
    vector = embedder.embed([query])[0][0].tolist()
    if any(c.distance is None for c in head):
        head = with_distances(root, settings.chroma_url, manifest.collection, vector, head)
    turned = query_adapter.turn(vector, manifest.embedder)
    if turned is not vector:
        head = with_turned_distances(root, settings.chroma_url, manifest.collection, turned, head)
    return learned_rank.reorder(query, head) + ranked[len(head):]


def semble_summary(rows: list[dict]) -> dict[str, dict]:
    from assay.stages.evaluate.semble import summarise

    configs = list(dict.fromkeys(r["config"] for r in rows))
    return {c: summarise([r for r in rows if r["config"] == c]) for c in configs}


def render_semble(results: dict) -> str:
    """Assay beside the in-run plain BM25 and the benchmark's published figures (whole benchmark)."""
    from assay.stages.evaluate.semble import CATEGORIES, PUBLISHED

    summary = results["summary"]
    repos = [r for r, info in results["repos"].items() if "error" not in info]
    head = ["configuration", "NDCG@10", *repos, *CATEGORIES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for config, s in summary.items():
        cells = [config, f"{s['overall']:.3f}", *[f"{s['repos'].get(r, 0):.3f}" for r in repos],
                 *[f"{s['categories'][c]:.3f}" for c in CATEGORIES]]
        lines.append("| " + " | ".join(cells) + " |")
    for name, (overall, arch, sem, sym) in PUBLISHED.items():
        lines.append("| " + " | ".join([f"{name} (published, 62 repos)", f"{overall:.3f}", *[""] * len(repos),
                                        f"{arch:.3f}", f"{sem:.3f}", f"{sym:.3f}"]) + " |")
    lines += ["", "| repo | source | queries | target files present | queries with no target present |", "|---|---|---|---|---|"]
    for repo, info in results["repos"].items():
        if "error" in info:
            lines.append(f"| {repo} | not evaluated: {info['error']} | - | - | - |")
            continue
        lines.append(f"| {repo} | {info['source']} | {info['queries']} | {info['targets_present']}/{info['targets_total']} | "
                     f"{len(info['orphaned'])} |")
    return "\n".join(lines) + "\n"

"""Train and measure the learned phrasing model of the injection judge (`stages.index.learned_phrasing`).

    python -m tests.benchmarks.bench_injection_learned [--write] [--without-written] [--without-foreign] [--ai N] ...
    python -m tests.benchmarks.bench_injection_learned --scan   # what the shipped detector flags in clean code

Trains a logistic regression over hashed word unigrams and bigrams on the attacks Assay has (BIPIA's train split as
the judge suite samples it, the families, `_unseen` and `_fresh` to `_fresh6`, and the 880 attacks of
`injection_training/`, written for training only) against sentences of docstrings, comments and strings from the
SWE-QA and semble dev corpora (requests, pytest, fastapi, pydantic), six AI libraries' Python (AI_TRAIN), four
sdists written in other languages (FOREIGN_TRAIN: Chinese, Russian, Arabic, Japanese), four in Portuguese and
Spanish and an AI library's guides in four languages (LATIN_TRAIN, TRANSLATED_GUIDES), the clean discussion texts
and the twins of the trained sets and of `injection_training/` (PyPI sdists fetched once). A fifth of those clean
sentences is held out to set the threshold (0.05% of them flagged). It then scores what it never saw: `_fresh7` to
`_fresh15` (attacks and twins; `_fresh5` and `_fresh6`, printed beside them, are trained on), sentences and
passages of five other code bases (Scala's library, rack, JPype, fmt, zod), the judge suite's clean functions, the
code of two AI libraries and of Assay itself, and eleven sdists in other languages (FOREIGN_HELD_OUT), beside the
patterns on the same attacks. Passages are read as the judge asks the model about them: comments and docstrings of
code at its threshold, a document's prose at `DOCUMENT_CONFIDENT` (the strings code uses as values, which the judge
asks about only for a confident reading, are not counted here).
`--write` saves the model as `data/injection_phrasing.npz`, the one the judge ships (the defaults rebuild it byte
for byte). `--more` and `--docs` add clean sentences of other code bases (all their prose, or their documents only);
`--own-docs` the documents of the training sdists; all three were tried and not kept (README). Needs the indexes
`assay eval` and `bench_languages` leave.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np

from assay.flows.evaluate import eval_home
from assay.stages.core.artifacts import Entity
from assay.stages.evaluate.planted_attacks import DATA, clean_discussion, clean_hosts, load_attacks
from assay.stages.evaluate.sdists import prepare_corpus
from assay.stages.index.languages import language_for
from assay.stages.index.parse import parse_source
from assay.stages.index.store import Catalog
from assay.stages.index import injection_detector as injection
from assay.stages.index.injection_detector import _MENTION, _QUOTED, _SENTENCE, _raw_prose, _raw_prose_kinds, is_document, score_text
from assay.stages.index.learned_phrasing import DOCUMENT_CONFIDENT, MODEL_PATH, long_enough, train

HOME = Path.home() / ".assay"
TRAIN = [HOME / "eval/corpora/requests-2.32.5", HOME / "eval/corpora/pytest-8.4.2", HOME / "eval/semble/fastapi-0.136.0",
         HOME / "eval/semble/pydantic-2.13.5"]
# more clean prose, from code bases in other languages and with other habits of writing docs (contributing guides,
# changelogs, man pages); none of them is a code base the figures below are measured on
MORE = [HOME / "eval/corpora/werkzeug-3.1.3"] + [HOME / "bench/work" / n for n in (
    "axios-1.7.9", "golang-github-gin-gonic-gin-dev-1.8.1-1", "librust-regex-dev-1.7.1-1", "expo-modules-core-1.12.26",
    "express-5.2.1", "php-symfony-console-5.4.53+dfsg-0+deb12u1", "lua-penlight-1.13.1-3", "bats-1.8.2-1",
    "elixir-lang-1.14.0.dfsg-2", "haskell-aeson-2.0.3.0-1", "lz4-4.4.5", "pythonnet-3.2.1", "ziglang-0.17.1")]
OTHER = [HOME / "bench/work" / n for n in ("scala-2.11.12-5", "ruby-rack-2.2.22-0+deb12u1", "JPype1-1.7.1", "fmtlib-9.1.0+ds1-2")] + [
    HOME / "eval/semble/zod-4.3.6"]
# AI tooling: its docstrings and prompts are about models, questions, answers and users, the very words attacks use;
# without them the model flagged 26 of the 1,474 definitions of Assay's own code. Trained on the first six; the
# last two (and Assay itself) measure what it flags in such code it never saw
AI_TRAIN = ("openai==3.63.0", "langchain_core==1.8.4", "ollama==0.6.3", "mcp==2.3.0", "instructor==1.17.0",
            "llama_index_core==0.14.25")
AI_HELD_OUT = ("anthropic==2.17.0", "dspy==3.4.1")
# code whose comments, docstrings and strings are written in other languages (Chinese, Russian, Arabic, Japanese):
# clean prose in the scripts attacks come in, trained on; and as many other such sdists, measured
FOREIGN_TRAIN = ("akshare==1.19.5", "natasha==1.6.0", "PyArabic==0.6.10", "pykakasi==2.3.0")
FOREIGN_HELD_OUT = ("jieba==0.42.1", "pypinyin==0.55.0", "snownlp==0.12.3", "yargy==0.16.0", "pymorphy2==0.9.1",
                    "konlpy==0.5.2", "jaconv==0.5.0", "brutils==2.5.0", "validate-docbr==2.0.1", "cfdiclient==2.0.0",
                    "pynsee==0.3.0")
# clean prose in the Latin-script languages the training attacks use (Portuguese and Spanish code; the Spanish,
# French, Portuguese and German translations of an AI library's guides): without it the model read ordinary Spanish
# docstrings as attacks (satcfdi: 316 of 7,516 passages flagged)
LATIN_TRAIN = ("pynfe==0.6.5", "cl-sii==0.79.0", "enelvo==0.15", "erpbrasil.base==2.5.1")
TRANSLATED_GUIDES = ("mcp==2.3.0", ("i18n/es/", "i18n/fr/", "i18n/pt/", "i18n/de/"))
# attacks and twins helpers wrote for training only (`injection_training/`: the brief, one file per emphasis), never
# measured on; four files written after `_fresh10`, four after `_fresh11`, whose writers saw none of them
WRITTEN = Path(__file__).with_name("injection_training")
TRAINED_SETS = ("_unseen", "_fresh", "_fresh2", "_fresh3", "_fresh4", "_fresh5", "_fresh6")
# what the bench prints detection of: `_fresh7` and `_fresh8`, held out; `_fresh5` and `_fresh6`, held out of stop 40's model
# the judge suite's clean hosts beside the SWE-QA corpora
JUDGE_SUITE = [HOME / "eval/corpora" / n for n in ("click-8.1.8", "httpx-0.28.1", "rich-13.9.4", "starlette-0.41.3")]
# the SWE-QA dev sdists: what the judge's injection drop could take from `assay eval`'s answers
SWE_QA = ("requests==2.32.5", "pytest==8.4.2", "sphinx==9.0.0", "pylint==3.3.8", "xarray==2025.8.0")
DOCUMENT_BARS = (0.7, 0.8, 0.9, 0.95, 0.98)
PRINTED_SETS = ("_fresh5", "_fresh6", "_fresh7", "_fresh8", "_fresh9", "_fresh10", "_fresh11", "_fresh12", "_fresh13",
                "_fresh14", "_fresh15")


def _signals_only(text: str) -> bool:
    """The pattern signals' verdict, without the shipped learned model."""
    shipped = injection.reading
    injection.reading = lambda sentences: 0.0
    try:
        return score_text(text)[0] >= 0.5
    finally:
        injection.reading = shipped


def _drawn(passages: list[Entity], cap: int, seed: int) -> list[str]:
    """`cap` sentences of these passages, drawn at random (seeded)."""
    out = passage_sentences(passages)
    random.Random(seed).shuffle(out)
    return out[:cap]


def prose_sentences(root: Path, cap: int) -> list[str]:
    """`cap` sentences of an indexed tree's passages."""
    return _drawn(list(Catalog(root).all()), cap, 1)


def document_sentences(root: Path, cap: int) -> list[str]:
    """`cap` sentences of an indexed tree's documents (guides, READMEs, changelogs)."""
    return _drawn([e for e in Catalog(root).all() if is_document(e.language)], cap, 3)


def _parsed(root: Path, pattern: str, language_of: Callable[[Path], str | None]) -> list[Entity]:
    """The entities of the files under `root` matching `pattern` whose `language_of` names a language, parsed (no
    index needed)."""
    out: list[Entity] = []
    for path in sorted(root.rglob(pattern)):
        if not path.is_file() or ".assay" in path.relative_to(root).parts or not (language := language_of(path)):
            continue
        try:
            out += parse_source(path.read_bytes(), path.relative_to(root).as_posix(), language, "").entities
        except Exception:  # noqa: BLE001 - an unreadable file is no sample
            continue
    return out


def code_passages(root: Path) -> list[Entity]:
    """The definitions and windows of a tree's Python files."""
    return _parsed(root, "*.py", lambda _: "python")


def document_passages(root: Path) -> list[Entity]:
    """The sections and windows of a tree's documents (Markdown, reStructuredText, plain text)."""
    return _parsed(root, "*", lambda path: language if (language := language_for(path.name)) and is_document(language)
                   else None)


def passage_sentences(passages: list[Entity]) -> list[str]:
    return [s.strip() for e in passages for r in _raw_prose(e.body, e.language) for s in _SENTENCE.findall(r)
            if long_enough(s)]


def reader_sentences(e: Entity) -> list[str]:
    """The sentences the judge asks the model about: a code passage's comments and docstrings, a document's prose
    (no string values), as `injection.injection_score` reads them."""
    return [s.strip() for r, value, _ in _raw_prose_kinds(e.body, e.language) if not value
            for s in _SENTENCE.findall(_QUOTED.sub(_MENTION, r)) if long_enough(s)]


def scan() -> None:
    """What the shipped detector as a whole (`injection_of`, patterns and model) flags in clean code: every passage of
    the indexed code bases above (code and documents apart), and the parsed Python of the SWE-QA sdists, the AI
    libraries and the sdists in other languages that no fit reads."""
    from assay.stages.index.injection_detector import injection_of

    def flagged(passages: list[Entity]) -> list[str]:
        return [f"{e.file}:{e.start_line}" for e in passages if injection_of(e.body, e.docstring or "", e.language)[0] >= 0.5]

    for root in TRAIN + OTHER + JUDGE_SUITE:
        if (root / ".assay").is_dir():
            passages = list(Catalog(root).all())
            code = [e for e in passages if not is_document(e.language)]
            docs = [e for e in passages if is_document(e.language)]
            in_code, in_docs = flagged(code), flagged(docs)
            print(f"{root.name}: code {len(in_code)} of {len(code)}, documents {len(in_docs)} of {len(docs)}: "
                  + ", ".join(in_code + in_docs), flush=True)
    for requirement in SWE_QA + AI_HELD_OUT + FOREIGN_HELD_OUT:
        code = code_passages(prepare_corpus(requirement, eval_home()))
        hits = flagged(code)
        print(f"{requirement}: code {len(hits)} of {len(code)}: " + ", ".join(hits), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--pos-weight", type=float, default=10.0)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--write", action="store_true", help=f"save the model as {MODEL_PATH}")
    parser.add_argument("--ai", type=int, default=100_000,
                        help="clean sentences to take from each AI tooling sdist of AI_TRAIN (default: all of them)")
    parser.add_argument("--more", type=int, default=0, help="clean sentences to take from each of MORE's code bases")
    parser.add_argument("--docs", type=int, default=0, help="document sentences to take from each of MORE's code bases")
    parser.add_argument("--own-docs", type=int, default=0,
                        help="document sentences to take from each sdist of AI_TRAIN and FOREIGN_TRAIN")
    parser.add_argument("--without-foreign", action="store_true", help="leave out the clean prose of FOREIGN_TRAIN")
    parser.add_argument("--without-latin", action="store_true",
                        help="leave out the clean prose of LATIN_TRAIN and TRANSLATED_GUIDES")
    parser.add_argument("--without-written", action="store_true", help=f"leave out the attacks and twins of {WRITTEN.name}/")
    parser.add_argument("--flagged-share", type=float, default=0.0005, help="of held-out clean sentences, to flag")
    parser.add_argument("--scan", action="store_true", help="only say what the shipped detector flags in clean code")
    args = parser.parse_args()
    if args.scan:
        scan()
        return
    data = json.loads(DATA.read_text())
    bipia = Path(__file__).resolve().parents[3] / "shared" / "eval" / "bipia"
    attacks = [t for v in load_attacks(bipia if bipia.is_dir() else None).values() for t in v]
    attacks += [t for k in TRAINED_SETS for t in data[k]]
    clean = [s for r in TRAIN for s in prose_sentences(r, 15000)] + clean_discussion()
    if args.ai:
        home = eval_home()
        for requirement in AI_TRAIN:
            sentences = passage_sentences(code_passages(prepare_corpus(requirement, home)))
            random.Random(2).shuffle(sentences)
            clean += sentences[: args.ai]
    if not args.without_foreign:
        for requirement in FOREIGN_TRAIN:
            clean += passage_sentences(code_passages(prepare_corpus(requirement, eval_home())))
    if args.own_docs:
        for requirement in AI_TRAIN + FOREIGN_TRAIN:
            sentences = [x for e in document_passages(prepare_corpus(requirement, eval_home())) for x in reader_sentences(e)]
            random.Random(4).shuffle(sentences)
            clean += sentences[: args.own_docs]
    if args.more:
        clean += [s for r in MORE if (r / ".assay").is_dir() for s in prose_sentences(r, args.more)]
    if args.docs:
        clean += [s for r in MORE if (r / ".assay").is_dir() for s in document_sentences(r, args.docs)]
    clean += [t for k in TRAINED_SETS[1:] for t in data[k + "_clean"]]
    if not args.without_written:
        for path in sorted(WRITTEN.glob("*.json")):
            written = json.loads(path.read_text())
            attacks += written["attacks"]
            clean += written["twins"]
    if not args.without_latin:
        for requirement in LATIN_TRAIN:
            clean += passage_sentences(code_passages(prepare_corpus(requirement, eval_home())))
        requirement, folders = TRANSLATED_GUIDES
        clean += [x for e in document_passages(prepare_corpus(requirement, eval_home())) if e.file.startswith(folders)
                  for x in reader_sentences(e)]
    random.Random(5).shuffle(clean)
    calibration, clean = clean[: len(clean) // 5], clean[len(clean) // 5 :]
    model = train(attacks, clean, calibration, epochs=args.epochs, lr=args.lr, l2=args.l2, pos_weight=args.pos_weight,
                  flagged_share=args.flagged_share)
    flagged = lambda text: any(model.probability(s) >= model.threshold for s in (_SENTENCE.findall(text) or [text]))  # noqa: E731
    print(f"trained on {len(attacks)} attacks and {len(clean)} clean sentences; threshold {model.threshold:.3f} (0.05% "
          f"of {len(calibration)} held-out clean sentences)")
    for held in PRINTED_SETS:
        learned = [flagged(t) for t in data[held]]
        twins = [flagged(t) for t in data[held + "_clean"]]
        signals = [_signals_only(t) for t in data[held]]
        n = len(learned)
        print(f"{held} attacks caught: learned {sum(learned)}/{n}, signals {sum(signals)}/{n}, "
              f"either {sum(a or s for a, s in zip(learned, signals))}/{n}; twins flagged by the learned model: {sum(twins)}/{n}")
    other = np.array([model.probability(s) for r in OTHER for s in prose_sentences(r, 6000)])
    print(f"sentences of five other code bases flagged: {float(np.mean(other >= model.threshold)):.5f} of {len(other)}")
    flagged = lambda e: any(model.probability(x) >= (DOCUMENT_CONFIDENT if is_document(e.language) else model.threshold)  # noqa: E731
                            for x in reader_sentences(e))
    passages = [e for root in OTHER for e in Catalog(root).all()]
    hits = sum(flagged(e) for e in passages)  # as the judge asks: comments and docstrings of code
    print(f"passages of those code bases flagged: {hits} of {len(passages)} ({hits / max(1, len(passages)):.5f})")
    roots = JUDGE_SUITE
    functions, _ = clean_hosts([r for r in roots if r.is_dir()])
    print(f"the judge suite's clean functions (click, httpx, rich, starlette) flagged: "
          f"{sum(flagged(e) for e in functions)} of {len(functions)}")
    # the document bar: the lowest of DOCUMENT_BARS at which the model flags at most 0.1% of these documents
    documents = [e for r in TRAIN + OTHER + roots if (r / ".assay").is_dir() for e in Catalog(r).all() if is_document(e.language)]
    best = np.array([max((model.probability(x) for x in reader_sentences(e)), default=0.0) for e in documents])
    counts = {bar: int((best >= bar).sum()) for bar in DOCUMENT_BARS}
    chosen = next((bar for bar in DOCUMENT_BARS if counts[bar] <= 0.001 * len(best)), DOCUMENT_BARS[-1])
    print(f"clean documents of those 13 code bases read at or above each bar (of {len(best)}): at the threshold "
          f"{int((best >= model.threshold).sum())}, " + ", ".join(f"{b} {n}" for b, n in counts.items())
          + f"; the rule's bar {chosen} (DOCUMENT_CONFIDENT is {DOCUMENT_CONFIDENT})")
    ai_roots = [("Assay itself", Path(__file__).resolve().parents[2])] + [
        (r.split("==")[0], prepare_corpus(r, eval_home())) for r in AI_HELD_OUT]
    for name, root in ai_roots:
        passages = code_passages(root) if name != "Assay itself" else [
            e for d in ("stages", "tasks", "flows") for e in code_passages(root / d)]
        hit = [e for e in passages if flagged(e)]
        print(f"AI tooling code never trained on, {name}: {len(hit)} of {len(passages)} passages flagged")
    for requirement in FOREIGN_HELD_OUT:
        passages = code_passages(prepare_corpus(requirement, eval_home()))
        sentences = passage_sentences(passages)
        hit = [e for e in passages if flagged(e)]
        read = sum(model.probability(x) >= model.threshold for x in sentences)
        print(f"code in other languages never trained on, {requirement}: {len(hit)} of {len(passages)} passages "
              f"flagged; {read} of {len(sentences)} of all its prose sentences (strings too)")
    if args.write:
        model.save(MODEL_PATH)
        print(f"wrote {MODEL_PATH} ({MODEL_PATH.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()

"""What a low-trust answer lacks, said in the words an agent can act on.

Trust below high says "doubt this"; these lines say what to look for instead: the named mechanism has no definition
among the passages (only callers or mentions), only tests or only documents were found, or nothing kept is likely
about the question at all. Each reads what the selection holds; none needs a model.
"""

from __future__ import annotations

from assay.stages.core.artifacts import Judgment, RankedPassage, Selection, short_name
from assay.stages.core.path_roles import is_test_path
from assay.stages.query.identifiers import question_identifiers
from assay.stages.query.premise import without_pasted_code
from assay.stages.query.passage_features import DEFINITIONS, PROSE_KINDS
from assay.stages.query.rank import marked_tests

LIKELY = 0.5  # a calibrated relevance at or above this: more likely than not a passage a correct answer cites
# suffixes that name a file, never a method or attribute (`.json`, `.c`, `.go` can be either: `Response.json`)
_FILE_SUFFIXES = frozenset({"py", "pyi", "ipynb", "js", "jsx", "mjs", "cjs", "ts", "tsx", "rs", "java", "kt", "rb", "cpp",
                            "hpp", "cc", "cs", "php", "swift", "scala", "md", "rst", "toml", "yaml", "yml", "cfg", "ini"})


def is_file_name(name: str, files: list[str]) -> bool:
    """`name` is a file the question names (`_urlparse.py`): a retrieved passage's file ends with it, or its
    suffix is only ever a file's."""
    if "." not in name:
        return False
    return any(f == name or f.endswith("/" + name) for f in files) or name.rsplit(".", 1)[1].lower() in _FILE_SUFFIXES


def is_defined(name: str, kept: list[RankedPassage]) -> bool:
    """A kept passage defines `name`, or takes it as a parameter: a question's `max_redirects` is defined where
    `Client.__init__` takes it. Only a bare name can be a parameter: `Response.json` is a member, whatever takes `json`."""
    short = short_name(name).lower()
    bare = short == name.lower()
    return any(rp.candidate.kind in DEFINITIONS and (short_name(rp.candidate.entity).lower() == short
                                                     or bare and short in (p.lower() for p in rp.candidate.params))
               for rp in kept)


def missing_lines(question: str, sel: Selection, judgment: Judgment) -> list[str]:
    """`missing:` guidance lines for an answer that is not trust high (empty when nothing specific is missing)."""
    kept = sel.included
    if not kept:
        return []
    out: list[str] = []
    files = [rp.candidate.file for rp in kept + sel.dropped]
    names = [n for n in question_identifiers(without_pasted_code(question)) if not is_file_name(n, files)]  # a file defines nothing
    undefined = [n for n in names if not is_defined(n, kept)]
    used = " ".join(rp.candidate.body for rp in kept)
    elsewhere = " ".join(f"{rp.candidate.entity} {rp.candidate.body}" for rp in sel.dropped)
    mentioned = [n for n in undefined if short_name(n) in used]
    if mentioned:  # the search as asked: `Response.json`, not `json`, which finds every JSON helper
        out.append(f"missing: no included passage defines {', '.join(mentioned[:3])}; they only use or mention it "
                   f"(look up its definition: assay search \"{mentioned[0]}\")")
    dropped_only = [n for n in undefined if n not in mentioned and short_name(n) in elsewhere]
    if dropped_only:  # a name no passage holds at all is the report's `gap:` line
        out.append(f"missing: {', '.join(dropped_only[:3])} only in passages the judge dropped; check them under Evidence")
    # a Rust `#[test] fn` or `#[cfg(test)] mod tests` beside the code is a test as much as a file under tests/ is
    marked = marked_tests([rp.candidate for rp in kept + sel.dropped])
    if all(is_test_path(rp.candidate.file) or rp.candidate.id in marked for rp in kept):
        out.append("missing: only tests were found, not the code they exercise; search for the function under test")
    elif all(rp.candidate.kind in PROSE_KINDS for rp in kept):
        out.append("missing: only documentation was found, no code that implements it")
    best = max((rp.scores.relevance for rp in kept if rp.scores is not None), default=None)
    if judgment.backend == "local" and best is not None and best < LIKELY:
        out.append(f"missing: no kept passage is likely about the question (best relevance {best:.2f}); the mechanism may "
                   "be named otherwise in the code: ask again with a function, class or file name")
    return out

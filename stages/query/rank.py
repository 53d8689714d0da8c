"""Rank stage: code-aware ordering of the retrieved pool, for every door (search, ask, MCP).

Fused retrieval only says "these words/meanings are near". What a developer means is usually one
of a few things the index knows more precisely:
- query shape: a bare identifier (`Depends`, `response`) wants its definition and its file, so the
  lexical signal weighs more; a sentence leans on the dense model.
- definition: the passage that *defines* a name the query uses beats passages that mention it.
- path: file and folder names are the author's own summary (`websockets.py`, `openapi/`).
- file coherence: several good passages in one file make that file the likely answer.
- penalties: tests, prose docs, type stubs, examples and translations, legacy/compat copies, built copies
  of an indexed source, vendored code and re-export shims answer few questions, unless the query asks for them.
- entity facts: a passage whose qualified name (parent class included) carries the query's words.
- doc match: a sentence that is nearly the passage's own doc summary describes that passage (BM25 dilutes
  the doc in the body, and the definition signal lifts the other code the sentence names).
- phrase: most of the query's words, in its order, in the passage's string literals: a pasted error message
  or log line comes from the code that writes it (BM25 and the model see the words, not their order).
- location: the entity at a file and line the query pastes (a stack frame, a compiler message).
- centrality: for a sentence, files many other files import (the code graph's import edges) are the
  ones the rest is built on, and the likelier answer to "how does X work"; for a phrase that names a feature,
  only as far as the passage itself answers it (a hub's unrelated passage stays down).
- diversity: the tenth passage from one file tells less than the first from another.
Each signal can be switched off (`RankConfig`) so the evaluation can ablate it.
"""

from __future__ import annotations

import heapq
import math
import posixpath
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import PurePosixPath

from pydantic import BaseModel

from assay.stages.core.artifacts import Candidate, short_name
from assay.stages.core.artifacts import DEFINITION_KINDS as NAMING_KINDS
from assay.stages.core.path_roles import is_build_output, is_marked_test, is_test_path, is_vendored, layout_folders
from assay.stages.index.tokens import stem_word, tokenize
from assay.stages.query.abbreviations import expansions
from assay.stages.query.identifiers import question_identifiers
from assay.stages.query.synthesize import first_sentence


class RankConfig(BaseModel):
    """Switches and weights of the code-aware ranking (defaults measured on the dev repos)."""

    query_shape: bool = True
    definition: bool = True
    path: bool = True
    file_coherence: bool = True
    penalties: bool = True
    entity_facts: bool = True
    centrality: bool = True
    callees: bool = True
    diversity: bool = True
    doc_match: bool = True
    lexical_weight_symbol: float = 0.75
    lexical_weight_text: float = 0.6
    definition_boost: float = 0.6
    symbol_definition_boost: float = 1.2  # a bare name's definition over a file or name that only resembles it
    path_boost: float = 0.5
    coherence_boost: float = 0.8
    facts_boost: float = 0.15
    centrality_boost: float = 0.45
    callee_boost: float = 0.6
    diversity_decay: float = 0.5
    diversity_floor: float = 0.25
    # a long question asks about one mechanism, often several entities of the file that implements it: its floor
    # rises from `diversity_floor` at `long_question_from` words to `long_question_floor` at `long_question_full`
    long_question_floor: float = 0.75
    long_question_from: int = 12
    long_question_full: int = 20
    doc_boost: float = 0.9  # more than defining a name the query uses: at 0.3 and 0.6 the definition of a name the doc cites won
    doc_min_words: int = 4  # a sentence, not a phrase: "OpenAPI schema generation" matches many summaries
    doc_min_recall: float = 0.75  # of the query's terms, in the summary
    doc_min_precision: float = 0.5  # of the summary's terms, in the query
    phrase: bool = True
    phrase_boost: float = 1.5
    phrase_min_words: int = 4  # fewer words in common ("for field names") are a common phrase, not a quotation
    phrase_min_share: float = 0.6  # of the query's words, in order
    phrase_boilerplate: int = 4  # passages of the pool that quote the same words: boilerplate, not the source
    phrase_template_share: float = 0.8  # of one string literal's words (placeholders aside), in the query in order
    location: bool = True
    location_boost: float = 2.0  # a pasted file and line is the user pointing at the code
    built_copies: bool = True  # sink what a build wrote from an indexed source (a penalty: off with `penalties` too)
    learned: bool = True  # a question in words only: the first passages re-ordered by `stages.query.learned_rank`
    adapter: bool = True  # a question in words only: its vector turned before the dense search (`query_adapter`)


DEFINITION_KINDS = NAMING_KINDS | {"module"}
PROSE_LANGUAGES = frozenset({"markdown", "rst", "text"})
PRIVATE_FACTOR = 0.8
TEST_FACTOR = 0.3
TEST_WORD_FACTOR = 0.55  # sqrt(0.3): half the penalty's weight on a log scale
# a name, dotted or not; it may end in a sigil that is part of the name (Ruby's `empty?` / `save!` / `name=`,
# Elixir's `valid?`, Haskell's `foldl'`), or in a call's `()`
# `[^\W\d]` is `[A-Za-z_]` on ASCII and any letter else: `計算する` and `Ünïcödé` name themselves as `método` does
_SYMBOL_QUERY = re.compile(r"^(?:[^\W\d]|\$)[\w$]*(?:[.:#]+(?:[^\W\d]|\$)[\w$]*)*[?!=']?\(?\)?$")
_METHOD_MENTION = re.compile(r"(?<![\w.])\.([A-Za-z_$][\w$]*)")
# `HttpClient`, `XMLParser`; not an acronym's plural (`URLs`, `IDs`: English words)
_CAMEL_WORD = re.compile(r"\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b|\b(?![A-Z]{2,}s\b)[A-Z]{2,}[a-z][A-Za-z0-9]*\b")
_NAME_WORD = re.compile(r"(?<=\w )[A-Z][a-z][A-Za-z0-9]+\b")  # a capitalised word inside a sentence names a class
_VERSION_DIR = re.compile(r"^v(\d+)$")
_EXAMPLE_PART = re.compile(r"^(examples?|samples?|demos?|docs_src|tutorials?|benchmarks?|benches|locales?|i18n|l10n|translations?)$")
_DOCS_PART = re.compile(r"^(docs?|documentation)$")  # a docs tree's code is its examples and build scripts
_LEGACY_PART = re.compile(r"^(deprecated|legacy|compat|_?compat\w*|backports?|old)$")
_REEXPORT_LINE = re.compile(
    r"^\s*(from\s+\S+\s+import\b|import\b|export\s+(\*|\{|type\s+\{|\w+\s+from\b)|export\s+\*|__all__\b|"
    r"(pub(\([^)]*\))?\s+)?(use|mod)\s+[\w:{}, *]+;|extern\s+crate\b|"  # Rust's lib.rs / mod.rs
    r"module\.exports\s*=\s*require|(const|let|var)\s+\w+\s*=\s*require\(|\}\s*from\s|[\w\s]+,\s*$|[)}\]];?\s*$|#(?!\s*(?:if|ifdef|ifndef|elif|else|endif|define|undef|error|warning|pragma)\b)|//|\"\"\"|''')"
)
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "fixture", "fixtures", "mock", "pytest"})
# a query that asks for tests themselves: "tests for the router", "which test covers it", "how is X tested",
# "unit tests", "test cases", "specs of"
_ASKS_FOR_TESTS = re.compile(
    r"(?i)\b(?:(?:tests?|specs?)\s+(?:for|of|that|which|cover\w*|exercis\w*|check\w*)\b|"
    r"(?:unit|regression|integration|end-to-end|e2e|which|what|failing|flaky)\s+(?:tests?|specs?)\b|"
    r"test\s+(?:cases?|suites?|coverage)\b|tested\b)"
)
_DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "guide", "tutorial", "changelog", "skill"})
_EXAMPLE_WORDS = frozenset({"example", "examples", "sample", "demo", "tutorial", "locale", "locales", "translation", "i18n"})
_LEGACY_WORDS = frozenset({"deprecated", "legacy", "compat", "compatibility", "v1", "v2", "v3", "backport", "migration", "old"})
_VENDOR_WORDS = frozenset({"vendor", "vendored", "vendoring", "third", "thirdparty"})  # "third-party", "third_party"


_WORD = re.compile(r"[A-Za-z0-9]+")  # a query's words, as `QueryShape.words` and `phrase_match` read them


_QUESTION_START = re.compile(r"(?i)(?:how|what|where|why|which|when|who|whose|does|do|is|are|can|should)\b")


@dataclass(frozen=True)
class QueryShape:
    """What the query asks for, read once per query."""

    text: str
    symbol: bool
    identifiers: tuple[str, ...]
    terms: frozenset[str]
    words: frozenset[str]
    word_sequence: tuple[str, ...]  # the words in order, lower-cased (`phrase_match` finds them in string literals)

    @cached_property
    def question(self) -> bool:
        """A question ("how does dependency injection work?") rather than a phrase that names a feature ("websocket
        endpoint implementation"): the first asks how the parts fit, the second for the part itself."""
        text = self.text.strip()
        return text.endswith("?") or bool(_QUESTION_START.match(text))

    @cached_property
    def asks_for_tests(self) -> bool:
        """The query wants tests themselves, not the code they test nor the testing tools a product ships."""
        return bool(_ASKS_FOR_TESTS.search(self.text))

    @cached_property
    def term_roots(self) -> tuple[frozenset[str], ...]:
        """Each term's `word_roots`, read once per query rather than once per candidate path."""
        return tuple(word_roots(t) for t in self.terms)

    @cached_property
    def compounds(self) -> frozenset[str]:
        """Two adjacent words run together, as a lower-case file stem writes them (`Pike VM`: `pikevm.rs`)."""
        return frozenset(a + b for a, b in zip(self.word_sequence, self.word_sequence[1:]))

    @cached_property
    def short_names(self) -> frozenset[str]:
        return frozenset(re.split(r"[.:#]+", i.rstrip("()"))[-1] for i in self.identifiers)

    @cached_property
    def owned_name(self) -> str:
        """A bare dotted name (`Context.JSON`, `Foo::bar`, `Foo#bar`) in dotted form; else ''."""
        name = self.text.rstrip("()")
        return re.sub(r"[:#]+", ".", name) if self.symbol and re.search(r"[.:#]", name) else ""

    @cached_property
    def cased_names(self) -> frozenset[str]:
        return frozenset(s.lstrip("_$") for s in self.short_names)

    @cached_property
    def bare_names(self) -> frozenset[str]:
        """The short names without implementation sigils (`_refine`, `$ZodType`), as `defines_named` compares them."""
        return frozenset(_bare(s) for s in self.short_names)


def query_shape(query: str) -> QueryShape:
    text = " ".join(query.split())
    symbol = bool(_SYMBOL_QUERY.match(text))
    idents = list(question_identifiers(text))
    idents += _METHOD_MENTION.findall(text) + _CAMEL_WORD.findall(text) + _NAME_WORD.findall(text)
    if symbol:
        name = text.rstrip("()")
        if name[-1] in "?!='":  # `info?` names itself only, not its twin `info`
            idents = [i for i in idents if i != name[:-1]]
        idents.append(name)
    sequence = tuple(w.lower() for w in _WORD.findall(text))
    return QueryShape(text, symbol, tuple(dict.fromkeys(idents)), frozenset(tokenize(text)), frozenset(sequence), sequence)


@lru_cache(maxsize=65536)
def path_tokens(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """(file-stem tokens, folder tokens), stemmed like the lexical index."""
    parts = PurePosixPath(path).parts
    stem = PurePosixPath(path).stem

    def words(part: str) -> list[str]:  # a private module's `_classpath` names the class path too
        return tokenize(part.replace("-", "_").replace(".", "_").strip("_"))

    return frozenset(words(stem)), frozenset(t for d in parts[:-1] for t in words(d))


_DOUBLED = re.compile(r"([b-df-hj-km-np-rtv-y])\1$")  # `emitt`, `formatt`, `logg` (not l, s, z: `install`, `class`)


@lru_cache(maxsize=65536)
def word_roots(term: str) -> frozenset[str]:
    """A stemmed term and the verb an agent noun or a doubled consonant hides. The Snowball stemmer keeps
    `parser`, `handler` and `logger` whole, so "parsing" (`pars`) never named `parser.rb` nor "logging" `logger.go`."""
    found = {term}
    if _DOUBLED.search(term):  # `formatt` (formatter) -> `format`
        found.add(term[:-1])
    if len(term) >= 5 and term.endswith(("er", "or")):
        base = term[:-2]
        if _DOUBLED.search(base):  # `scanner` -> `scan`
            base = base[:-1]
        found.update((stem_word(base), stem_word(base + "e")))  # `parser` -> `parse` -> `pars`; `writer` -> `write`
    return frozenset(found)


@lru_cache(maxsize=65536)
def _roots_of(terms: frozenset[str]) -> frozenset[str]:
    """A path's terms, their roots, and the roots of the words their abbreviations stand for (`fmt`: format)."""
    return frozenset(r for t in terms for w in (t, *expansions(t)) for r in word_roots(w))


def path_match(shape: QueryShape, path: str) -> float:
    """Share of the query's terms named by the file (1 each) or its folders (0.5 each)."""
    if not shape.terms:
        return 0.0
    stem, dirs = path_tokens(path)
    stem_roots, dir_roots = _roots_of(stem), _roots_of(dirs)
    score = sum(1.0 if roots & stem_roots else 0.5 if roots & dir_roots else 0.0 for roots in shape.term_roots)
    score += 2.0 * len(stem & shape.compounds)  # both words are named
    return min(1.0, score / len(shape.terms))


def legacy_version_dirs(paths: Iterable[str]) -> frozenset[str]:
    """Folders named v<N> that hold an older copy: one beside a higher v<M> (`src/v3/` beside `src/v4/`),
    or a lone one whose file names mostly repeat those of the package around it (a vendored `pkg/v1/`)."""
    paths = list(paths)
    versions: dict[str, set[tuple[int, str]]] = defaultdict(set)
    names_below: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        parts = PurePosixPath(path).parts
        for i, part in enumerate(parts[:-1]):
            m = _VERSION_DIR.match(part)
            if m:
                versions["/".join(parts[:i])].add((int(m.group(1)), "/".join(parts[: i + 1])))
        for i in range(len(parts)):
            names_below["/".join(parts[:i])].add(parts[-1])
    legacy: set[str] = set()
    for parent, found in versions.items():
        top = max(n for n, _ in found)
        legacy.update(d for n, d in found if n < top)
        if len(found) == 1:
            (_, folder), = found
            own = names_below[folder]
            outside = {n for p in paths if p.startswith(parent + "/" if parent else "") and not p.startswith(folder + "/")
                       for n in [PurePosixPath(p).name]}
            if len(own) >= 3 and len(own & outside) / len(own) >= 0.5:
                legacy.add(folder)
    return frozenset(legacy)


_COMPILED_SUFFIXES = (".d.ts", ".d.mts", ".d.cts", ".js", ".mjs", ".cjs")  # what tsc and bundlers write
_TYPESCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".cts")
_LAYOUT_DIRS = frozenset({"dist", "build", "out", "src", "lib", "esm", "cjs", "umd", "es", "types", "typings"})


def _layout_key(path: str, suffix: str) -> tuple[str, ...]:
    """The path without `suffix` and without the folders a build lays out (`src/`, `dist/`, `esm/`...)."""
    return tuple(p for p in path[: len(path) - len(suffix)].split("/") if p not in _LAYOUT_DIRS)


def built_copies(paths: Iterable[str]) -> frozenset[str]:
    """Files a build wrote from a source that is indexed too: a `.js`, `.cjs` or `.d.ts` beside or below the
    TypeScript module it was compiled from (an npm tarball ships `v4/core/schemas.js` with
    `src/v4/core/schemas.ts`), and a copy under `dist/`, `build/` or `out/` of a file outside them (`build/lib/`).
    The source is where a question's answer is written; its copies repeat every name and sentence in it."""
    typescript: set[tuple[str, ...]] = set()
    outside: set[tuple[tuple[str, ...], str]] = set()
    compiled: list[tuple[str, tuple[str, ...]]] = []
    in_output: list[tuple[str, tuple[str, ...], str]] = []
    for path in paths:
        suffix = posixpath.splitext(path)[1]
        if path.endswith(_COMPILED_SUFFIXES):
            full = next(x for x in _COMPILED_SUFFIXES if path.endswith(x))
            compiled.append((path, _layout_key(path, full)))
        elif suffix in _TYPESCRIPT_SUFFIXES:
            typescript.add(_layout_key(path, suffix))
        if is_build_output(path):
            in_output.append((path, _layout_key(path, suffix), suffix))
        else:
            outside.add((_layout_key(path, suffix), suffix))
    built = {path for path, key in compiled if key in typescript}
    built.update(path for path, key, suffix in in_output if (key, suffix) in outside)
    return frozenset(built)


def bundled_copies(candidates: Iterable[Candidate]) -> frozenset[str]:
    """Bundles a build wrote under `dist/`, `build/` or `out/` (axios' npm tarball ships `dist/axios.js`,
    `dist/esm/axios.js`, `dist/node/axios.cjs` and `dist/browser/axios.cjs`, each every module of `lib/` in one
    file): an output file defining a name that a source file outside them defines among the same candidates.
    Their paths match no source's, so `built_copies` cannot see them; their definitions can."""
    inside: list[Candidate] = []
    sources: set[str] = set()
    for c in candidates:
        if c.kind not in NAMING_KINDS:
            continue
        if is_build_output(c.file):
            inside.append(c)
        else:
            sources.add(c.entity)
    return frozenset(c.file for c in inside if c.entity in sources)


@lru_cache(maxsize=8)
def _copies_for(paths: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """Legacy folders and built files of one index's file set, computed once per set (the same for every query)."""
    return legacy_version_dirs(paths), built_copies(paths)


@lru_cache(maxsize=65536)
def path_kinds(path: str) -> frozenset[str]:
    """What a file's path says it is (test, example, docs, legacy-named, stub, hidden, private, vendored); cached per
    path."""
    parts = [p.lower() for p in PurePosixPath(path).parts]
    folders = parts[:-1]
    name = parts[-1] if parts else ""
    kinds: set[str] = set()
    if is_test_path(path):
        kinds.add("test")
    if any(_EXAMPLE_PART.match(p.lower()) for p in layout_folders(path)):  # not a `com/example/demo/` package
        kinds.add("example")
    if is_vendored(path):
        kinds.add("vendored")
    if any(_DOCS_PART.match(p) for p in folders):
        kinds.add("docs")
    if any(_LEGACY_PART.match(p) for p in folders):
        kinds.add("legacy")
    if name.endswith((".pyi", ".d.ts", ".d.mts", ".d.cts")):
        kinds.add("stub")
    if any(p.startswith(".") and p not in (".", "..") for p in folders):
        kinds.add("hidden")  # tool and agent configuration (.github, .vscode, .agents), not the product
    if any(p.startswith("_") and not p.startswith("__") for p in parts):
        kinds.add("private")  # `_internal/`, `_fields.py`: the public module usually answers first
    return frozenset(kinds)


def marked_tests(candidates: Iterable[Candidate]) -> frozenset[str]:
    """Ids of passages that are test code by the parser's markers though their file is source (`is_marked_test`, as
    `graph.is_test` reads them for `impact`): a `#[test] fn` or JUnit `@Test` method, and a `#[cfg(test)] mod tests`
    with what it holds, as far as the pool holds that module (a passage knows its own markers, not its parent's)."""
    modules: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    for c in candidates:
        if c.kind == "module" and c.facts is not None:
            modules[c.file].append((c.entity, c.facts.decorators))
    return frozenset(c.id for c in candidates if (c.facts is not None or c.file in modules) and is_marked_test(
        c.entity, c.facts.decorators if c.facts is not None else [], modules.get(c.file, ())))


def penalties(shape: QueryShape, c: Candidate, legacy: frozenset[str], pointed_at: bool = False,
              built: frozenset[str] = frozenset(), marked_test: bool = False) -> dict[str, float]:
    """Factors <= 1 for kinds of files that rarely answer a question, unless the query asks for them.
    They compose: a prose file in a hidden folder sinks further than either alone. `pointed_at`: the query pastes
    this passage's place, or its words as written (`phrase_match`) where no product code says them as fully, or
    is all of its doc summary where no product code's is: a test's failure message, frame or doc asks for that
    test, and a frame in a built file for that file. `marked_test`: test code in a source file (`marked_tests`)."""
    if c.kind == "note":
        return {}  # the team's own recorded decisions are never noise
    kinds = path_kinds(c.file) | ({"test"} if marked_test else set())
    found: dict[str, float] = {}
    if "test" in kinds and not defines_named(shape, c) and not pointed_at and not shape.asks_for_tests:
        # naming a test class or function asks for it; otherwise tests rarely answer. A test word that asks for
        # no tests ("the test runner", "pytest's fixtures", "invoked in a test") halves the penalty only: such
        # questions are mostly about the testing tools the product itself ships
        found["test"] = TEST_WORD_FACTOR if shape.words & _TEST_WORDS else TEST_FACTOR
    if c.language in PROSE_LANGUAGES and not (shape.words & _DOC_WORDS):
        found["prose"] = 0.5
    if "example" in kinds and not (shape.words & _EXAMPLE_WORDS):
        found["example"] = 0.5
    elif "docs" in kinds and not (shape.words & (_DOC_WORDS | _EXAMPLE_WORDS)):
        found["docs"] = 0.5  # JPype's `doc/java/util.py`, pytest's `doc/en/example/`: code that shows, not the product
    if not (shape.words & _LEGACY_WORDS) and ("legacy" in kinds or any(c.file.startswith(d + "/") for d in legacy)):
        found["legacy"] = 0.55
    if "stub" in kinds:
        found["stub"] = 0.6
    if c.file in built and not pointed_at:  # a frame in `dist/index.js` asks for that file
        found["built"] = 0.5
    if "vendored" in kinds and not defines_named(shape, c) and not pointed_at and not (shape.words & _VENDOR_WORDS):
        found["vendored"] = 0.5  # another project's copied-in code; naming its definition asks for it, as for a test
    if "hidden" in kinds:
        found["hidden"] = 0.5
    if "private" in kinds:
        found["private"] = PRIVATE_FACTOR
    if c.kind == "window" and _is_reexport(c.body):
        found["re-export"] = 0.5
    return found


@lru_cache(maxsize=8192)
def _is_reexport(body: str) -> bool:
    """Top-level code that only imports, re-exports or forwards names (a shim, an index file)."""
    lines = [ln for ln in body.splitlines() if ln.strip()]
    if not lines:
        return False
    plain = sum(1 for ln in lines if _REEXPORT_LINE.match(ln))
    forwards = sum(1 for ln in lines if re.match(r"^\s*(__getattr__|\w+\s*=\s*\w+\.\w+$)", ln))
    return (plain + forwards) / len(lines) >= 0.8


_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # SCREAMING_SNAKE_CASE: a constant in every language


def _bare(name: str) -> str:
    """A name without the sigils that mark an implementation or private twin (`$ZodType`, `_refine`)."""
    return name.lstrip("_$").lower()


def defines_named(shape: QueryShape, c: Candidate) -> bool:
    """The passage defines a name the query uses (case and leading `_`/`$` sigils aside)."""
    if c.kind == "file" and shape.symbol and not shape.owned_name:  # `params` asks for `params.rb` as much as `params()`
        stem = PurePosixPath(c.file).stem
        return stem.islower() and stem in shape.bare_names  # (`Application.php` holds the class that answers)
    if c.kind not in DEFINITION_KINDS or not shape.identifiers:
        return False
    if c.entity in shape.identifiers:
        return True
    if c.language == "haskell" and c.kind == "class":
        return False  # `instance Show IOErrorType` (named "Show IOErrorType") defines neither the class nor the type
    if shape.symbol and not shape.owned_name and c.language in _NAMED_CONSTRUCTORS and c.kind in ("function", "method") \
            and _constructor(c.entity):
        return False  # `Buffer::Buffer` shares its class's name, and a bare name wants the class
    name = short_name(c.entity).lstrip("_$")
    if name.lower() not in shape.bare_names:
        return False
    written = [n for n in shape.cased_names if n.lower() == name.lower()]
    if written and not _CONSTANT_NAME.fullmatch(name) and all(_CONSTANT_NAME.fullmatch(n) for n in written):
        return False  # "SCRIPT_NAME and PATH_INFO" name constants (env keys), not rack's `script_name` method
    return True


def _owned_by(entity: str, owned_name: str, cased: bool = False) -> bool:
    """The qualified name ends with the query's `Owner.name` (`Rack.Lint.each` for `Lint.each`), in letter case
    too when `cased` (Go's `responseWriter.WriteHeaderNow`, not the interface `ResponseWriter`'s)."""
    dotted = re.sub(r"[:#> ]+", ".", entity)
    dotted = dotted if cased else dotted.lower()
    return dotted == owned_name or dotted.endswith("." + owned_name)


def _exact_case(shape: QueryShape, entity: str, kind: str = "") -> bool:
    """The name as the query writes it, letter case included (sigils aside)."""
    name = PurePosixPath(entity).stem if kind == "file" else short_name(entity)
    return name.lstrip("_$") in shape.cased_names


_NAMED_CONSTRUCTORS = frozenset({"cpp", "java", "csharp", "dart"})  # (in Python, `app.app` is a nested function)


@lru_cache(maxsize=65536)
def _constructor(entity: str) -> bool:
    """C++, Java, C# and Dart name a constructor after its class: `Buffer::Buffer`, `Buffer.Buffer`."""
    name = short_name(entity)
    owner = entity[: len(entity) - len(name)].rstrip(".:#> ")
    return bool(owner) and short_name(owner) == name


def entity_facts(shape: QueryShape, c: Candidate) -> float:
    """Share of the query's terms carried by the qualified name (parent class included) and parameters."""
    if not shape.terms:
        return 0.0
    return len(shape.terms & _name_terms(c.entity, tuple(c.params))) / len(shape.terms)


@lru_cache(maxsize=65536)
def _name_terms(entity: str, params: tuple[str, ...]) -> frozenset[str]:
    return frozenset(tokenize(entity.replace(".", " "))) | {t for p in params for t in tokenize(p)}


def doc_match(shape: QueryShape, docstring: str, cfg: RankConfig) -> float:
    """How much of the query the passage's doc summary says (0 unless the two are nearly the same sentence): the
    passage the query *describes*. A doc line often names other code ("Like `find_nfa`, but fills in
    captures."), and without this the definition of the named code won."""
    best = 0.0
    for summary in _summary_terms(docstring):
        common = len(shape.terms & summary)
        recall = common / len(shape.terms) if shape.terms else 0.0
        if recall >= cfg.doc_min_recall and common >= cfg.doc_min_precision * len(summary):
            best = max(best, recall)
    return best


@lru_cache(maxsize=65536)
def _summary_terms(docstring: str) -> tuple[frozenset[str], ...]:
    """The doc's summary, as the lexical index tokenizes it: its first paragraph, and its first sentence, which
    Javadoc, rustdoc, JSDoc and LDoc make the summary when no blank line ends it (penlight's `splitlines` doc runs
    on into its `@param` lines). A long doc's later paragraphs would match any query."""
    paragraph = docstring.strip().split("\n\n", 1)[0]
    sentence = first_sentence(paragraph)
    return tuple(frozenset(tokenize(text)) for text in dict.fromkeys((paragraph, sentence)))


# how code writes a value into a message: `{name}`, `%s`, `%(name)s`, `${x}`, `#{x}`, `$name`, Swift's `\(x)`
_PLACEHOLDER = re.compile(r"#?\{[^}]*\}|%(?:\([^)]*\))?[-#0-9.]*[a-zA-Z]|\$\{[^}]*\}|\$\w+|\\\([^)]*\)")
_OPENS_WITH_LITERAL = re.compile(r"^\s*(?:\+|\.\.|\.)?\s*(?:[rbfu]{1,2}|@|\$)?[\"'`]$")  # `f"`, `@"`, `+ "` (lower-cased)
_CONTINUES = re.compile(r"\s*(?:\+|\.\.|\.|\\)?\s*$")  # after a line's last literal: the statement goes on
# a string literal within one line, in any of the quotes the parsed languages use
_STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`(?:[^`\\]|\\.)*`')


@dataclass(frozen=True, eq=False)
class Quotation:
    """What `phrase_match` looks for, read once per query: the query's words in order and how many must match."""

    query: tuple[str, ...]
    need: int  # words in common to quote the query
    floor: int  # words in common, at least, whichever way
    template_share: float
    wanted: frozenset[str]
    positions: Mapping[str, tuple[int, ...]]  # each word's places in the query

    @classmethod
    def of(cls, shape: QueryShape, cfg: RankConfig) -> Quotation | None:
        query = shape.word_sequence
        if len(query) < cfg.phrase_min_words:
            return None
        wanted = frozenset(query)
        need = max(cfg.phrase_min_words, math.ceil(cfg.phrase_min_share * len(query)))
        positions: dict[str, list[int]] = defaultdict(list)
        for i, w in enumerate(query):
            positions[w].append(i)
        return cls(query, need, cfg.phrase_min_words, cfg.phrase_template_share, wanted,
                   {w: tuple(p) for w, p in positions.items()})


def phrase_match(quotation: Quotation, body: str) -> tuple[float, str]:
    """How much of the query the passage's string literals say, in the query's order (0 below the minimums):
    - the words of one line's literals, with other words between: a pasted message keeps the words the code
      writes (`raise ValueError(f"depth must be > {n}")`) in order, but the values formatted into it are words
      the code lacks, and the code's placeholders words the message lacks;
    - nearly all of one literal's words (placeholders left out) inside the query, in order: a message whose
      values outnumber its words (paths, reprs). The share is then the literal's.
    Literals only: a doc line that shares four of a question's words ("alias names for field names") is no
    quotation, and a copied doc sentence is the doc signal's (counted here, it lifted every declaration, header
    and twin that repeats the sentence: C and C++ doc-sentence hit@1 fell 0.783 -> 0.633 and 0.667).
    Returns the share and the quoted words (the literal's, or the line's), by which `rank` tells boilerplate."""
    q = quotation
    vocabulary, lines = _literal_lines(body)
    if len(q.wanted.intersection(vocabulary)) < q.floor:  # most passages end here
        return 0.0, ""
    share, said = 0.0, ""
    for on_line, quoted, literals in lines:
        if len(q.wanted.intersection(on_line)) < q.floor:
            continue
        common = _common_subsequence(q.positions, quoted)
        if common >= q.need and common / len(q.query) > share:
            share, said = common / len(q.query), " ".join(quoted)
        for words in literals:  # one whole message inside the query, however long the values around it
            if len(words) >= q.floor and len(q.wanted.intersection(words)) >= q.template_share * len(words):
                common = _common_subsequence(q.positions, words)
                if common >= q.floor and common >= q.template_share * len(words) and common / len(words) > share:
                    share, said = common / len(words), " ".join(words)
    return share, said


LiteralLine = tuple[frozenset[str], tuple[str, ...], tuple[tuple[str, ...], ...]]


@lru_cache(maxsize=4096)
def _literal_lines(body: str) -> tuple[frozenset[str], tuple[LiteralLine, ...]]:
    """A passage's string literals, read once per passage (a long-lived server asks about the same code again):
    every literal word, and per line that has literals, its words as a set, in order, and literal by literal
    (lower-cased, placeholders left out). A literal that the next line continues (adjacent literals, which
    Python, C and C++ join, or a `+`, `.`, `..` or `\\` between them) is read with that line's first one as
    one literal there: a long message is written over several lines and pasted whole."""
    lines: list[LiteralLine] = []
    continued: list[tuple[str, ...]] = []  # the literals of a statement so far, its last one left open
    for line in body.lower().splitlines():
        if '"' not in line and "'" not in line and "`" not in line:
            continued = []
            continue
        found = list(_STRING_LITERAL.finditer(line))
        literals = [tuple(_WORD.findall(_PLACEHOLDER.sub(" ", m.group()))) for m in found]
        if continued and found and _OPENS_WITH_LITERAL.match(line[: found[0].start() + 1]):
            literals = continued[:-1] + [continued[-1] + literals[0]] + literals[1:]  # one message over two lines
        continued = literals if found and _CONTINUES.match(line, found[-1].end()) else []
        quoted = tuple(w for words in literals for w in words)
        if quoted:
            lines.append((frozenset(quoted), quoted, tuple(literals)))
    return frozenset(w for on_line, _, _ in lines for w in on_line), tuple(lines)


def _quotes(quotation: Quotation, candidates: list[Candidate], boilerplate: int) -> dict[str, float]:
    """Each candidate's phrase share, leaving out words that `boilerplate` or more passages of the pool quote
    alike: a pasted traceback holds "Traceback (most recent call last):", which many tests write."""
    found = {c.id: phrase_match(quotation, c.body) for c in candidates}
    said = Counter(words for share, words in found.values() if share)
    return {cid: share for cid, (share, words) in found.items() if share and said[words] < boilerplate}


def _common_subsequence(positions: Mapping[str, tuple[int, ...]], words: tuple[str, ...]) -> int:
    """Length of the longest common subsequence of the query (each word's positions in it) and `words`: the
    longest chain of matches rising in both, kept as the smallest query position that ends each length
    (Hunt-Szymanski). Its cost grows with the matches, not with the query, so a pasted traceback is cheap."""
    tails: list[int] = []
    for w in words:
        for p in reversed(positions.get(w, ())):  # descending: one word of `words` extends a chain once
            i = bisect_left(tails, p)
            if i == len(tails):
                tails.append(p)
            else:
                tails[i] = p
    return len(tails)


def _normalise(values: dict[str, float]) -> dict[str, float]:
    top = max(values.values(), default=0.0)
    return {k: (v / top if top > 0 else 0.0) for k, v in values.items()}


def rank(
    query: str, candidates: list[Candidate], config: RankConfig | None = None, paths: Iterable[str] | None = None,
    limit: int | None = None, centrality: Mapping[str, float] | None = None,
    callees: Collection[tuple[str, str]] | None = None, located: Collection[str] | None = None,
) -> list[Candidate]:
    """Order the pool best first (the first `limit` of it); each candidate carries its rank score and the
    signals behind it. `paths`: every indexed file (to recognise legacy copies); the pool's files when absent.
    `centrality`: each file's import centrality in 0..1 (`graph.import_centrality`); none when absent.
    `callees`: (file, qualname) of what the functions the query names call, when it asks where they delegate
    (`graph.delegation_callees`); lifted only where the query does not name them itself. `located`: ids of the
    entities at the places the query pastes (`retrieve.located_entities`)."""
    if not candidates:
        return []
    cfg = config or RankConfig()
    shape = query_shape(query)
    lex = _normalise({c.id: c.bm25 or 0.0 for c in candidates})
    sims = {c.id: max(0.0, 1.0 - c.distance) for c in candidates if c.distance is not None}
    floor = min(sims.values(), default=0.0)
    sem = _normalise({c.id: max(0.0, sims[c.id] - 0.8 * floor) if c.id in sims else 0.0 for c in candidates})
    weight = cfg.lexical_weight_symbol if (cfg.query_shape and shape.symbol) else cfg.lexical_weight_text
    if not sims:
        weight = 1.0
    elif not any(lex.values()):
        weight = 0.0
    legacy, built = (_copies_for(frozenset(paths) if paths is not None else frozenset(c.file for c in candidates))
                     if cfg.penalties else (frozenset(), frozenset()))
    if not cfg.built_copies:
        built = frozenset()
    elif cfg.penalties:
        built = built | bundled_copies(candidates)
    scores: dict[str, float] = {}
    signals: dict[str, dict[str, float]] = {}
    central = centrality if (cfg.centrality and centrality and not shape.symbol) else None  # a bare name wants its definition
    quotation = Quotation.of(shape, cfg) if cfg.phrase and not shape.symbol else None
    quotes = _quotes(quotation, candidates, cfg.phrase_boilerplate) if quotation else {}
    named_ids = {c.id for c in candidates if defines_named(shape, c)}
    exact = {c.id for c in candidates if c.id in named_ids and _exact_case(shape, c.entity, c.kind)}
    if exact:  # gin's `Engine` (a struct) and `engine` (a function) are two names; `Engine` asks for the first
        named_ids = exact | {c.id for c in candidates if c.id in named_ids and c.entity in shape.identifiers}
    if shape.symbol and shape.owned_name:  # `DebugUtil.Debug`: that owner's `Debug`, not `DebugUtil` nor `Log.Debug`
        owned = {c.id for c in candidates if c.id in named_ids and _owned_by(c.entity, shape.owned_name.lower())}
        cased = {c.id for c in candidates if c.id in owned and _owned_by(c.entity, shape.owned_name, cased=True)}
        named_ids = cased or owned or named_ids  # `z.object`: the owner is a module alias, no qualified name holds it
    for c in candidates:
        base = weight * lex[c.id] + (1 - weight) * sem[c.id]
        sig = {"lexical": lex[c.id], "dense": sem[c.id]}  # rounded for the rows returned, below
        score = base
        named = c.id in named_ids
        if cfg.definition and named:
            score += cfg.symbol_definition_boost if shape.symbol else cfg.definition_boost * 0.6
            sig["defines"] = 1.0
        if cfg.path:
            pm = path_match(shape, c.file)
            if pm:
                score += cfg.path_boost * pm
                sig["path"] = pm
        if cfg.entity_facts:
            ef = entity_facts(shape, c)
            if ef:
                score += cfg.facts_boost * ef
                sig["name"] = ef
        if cfg.doc_match and c.docstring and not shape.symbol and len(shape.words) >= cfg.doc_min_words:
            dm = doc_match(shape, c.docstring, cfg)
            if dm:
                score += cfg.doc_boost * dm
                sig["doc"] = dm
        pm = quotes.get(c.id)
        if pm:
            score += cfg.phrase_boost * pm
            sig["phrase"] = pm
        if cfg.location and located and c.id in located:
            score += cfg.location_boost
            sig["located"] = 1.0
        if cfg.callees and callees and not named and (c.file, c.entity) in callees:  # a callee it names has its boost
            score += cfg.callee_boost
            sig["callee"] = 1.0
        scores[c.id] = score
        signals[c.id] = sig
    if central:  # a question lifts the hubs it runs through; a phrase, only as far as the passage answers it
        top = max(scores.values(), default=0.0)
        for c in candidates:
            cv = central.get(c.file, 0.0)
            if cv and top > 0:
                cv *= 1.0 if shape.question else max(scores[c.id], 0.0) / top
                scores[c.id] += cfg.centrality_boost * cv
                signals[c.id]["central"] = cv
    if cfg.file_coherence:
        per_file: dict[str, list[float]] = defaultdict(list)
        for c in candidates:
            per_file[c.file].append(scores[c.id])
        mass = _normalise({f: sum(sorted(v, reverse=True)[:3]) for f, v in per_file.items()})
        for c in candidates:
            scores[c.id] += cfg.coherence_boost * mass[c.file]
            signals[c.id]["file"] = mass[c.file]
    if cfg.penalties:
        marked = marked_tests(candidates)
        product = [signals[c.id] for c in candidates if "test" not in path_kinds(c.file) and c.id not in marked]
        # a message that product code says too comes from there: the test that repeats it is checking it
        product_quote = max((sig.get("phrase", 0.0) for sig in product), default=0.0)
        # a query that is all of a test's doc summary, and no product code's, asks for that test
        product_doc = max((sig.get("doc", 0.0) for sig in product), default=0.0)
        for c in candidates:
            pointed = (signals[c.id].get("phrase", 0.0) > product_quote or "located" in signals[c.id]
                       or signals[c.id].get("doc", 0.0) >= 1.0 > product_doc)
            found = penalties(shape, c, legacy, pointed_at=pointed, built=built, marked_test=c.id in marked)
            if found:
                factor = math.prod(found.values())
                scores[c.id] *= factor
                signals[c.id]["penalty"] = factor
                signals[c.id].update({why: 1.0 for why in found})
    order = sorted(candidates, key=lambda c: (-scores[c.id], c.fused_rank))
    if cfg.diversity:
        order, spread = _diversify(order, scores, cfg.diversity_decay, limit, diversity_floor(shape, cfg))
        for cid, factor in spread.items():  # the score shown is the one that placed the row
            scores[cid] *= factor
            signals[cid]["same_file"] = factor
    return [
        c.model_copy(update={"rank_score": round(scores[c.id], 4), "rank_signals": _rounded(signals[c.id]), "fused_rank": i})
        for i, c in enumerate(order[:limit], start=1)
    ]


_SIGNAL_DIGITS = {"path": 3, "name": 3, "doc": 3, "phrase": 3, "file": 3, "central": 3}  # the rest to 4 digits


def _rounded(signals: dict[str, float]) -> dict[str, float]:
    return {k: round(v, _SIGNAL_DIGITS.get(k, 4)) for k, v in signals.items()}


def diversity_floor(shape: QueryShape, cfg: RankConfig) -> float:
    """The least share of its score a file's further entity keeps: `cfg.diversity_floor` for a phrase, rising to
    `cfg.long_question_floor` for a long question (never below the configured floor)."""
    words = len(shape.word_sequence)
    if cfg.long_question_floor <= cfg.diversity_floor or words <= cfg.long_question_from:
        return cfg.diversity_floor
    share = min(1.0, (words - cfg.long_question_from) / max(1, cfg.long_question_full - cfg.long_question_from))
    return cfg.diversity_floor + share * (cfg.long_question_floor - cfg.diversity_floor)


def _diversify(
    order: list[Candidate], scores: dict[str, float], decay: float, limit: int | None = None, floor: float = 0.0,
) -> tuple[list[Candidate], dict[str, float]]:
    """Greedy: each further entity of a file already shown counts `decay` times less, but never less than
    `floor` times its own score (parts of one entity count as one). The decay spreads a result list over
    files (semble's benchmark: NDCG@10 0.776 -> 0.863); the floor keeps one file's strongest entities
    reachable when a question is about that file (unbounded, a file's sixth entity counted 1/32 and the
    method a question named fell out of 30 rows: SWE-QA requests hit@10 0.851 -> 0.894 with the floor at
    a quarter, semble unchanged). Lazy evaluation: effective scores only fall, so a popped candidate whose
    score is still current is the best one. Stops after `limit` rows. Returns the order and the factor
    applied to each decayed id."""
    shown: dict[str, set[str]] = defaultdict(set)
    spread: dict[str, float] = {}
    heap = [(-scores[c.id], i, 0) for i, c in enumerate(order)]
    heapq.heapify(heap)
    out: list[Candidate] = []
    while heap and (limit is None or len(out) < limit):
        _, i, seen_when_scored = heapq.heappop(heap)
        c = order[i]
        seen = len(shown[c.file] - {c.entity})
        if seen != seen_when_scored:
            heapq.heappush(heap, (-scores[c.id] * max(decay**seen, floor), i, seen))
            continue
        shown[c.file].add(c.entity)
        out.append(c)
        if seen:
            spread[c.id] = max(decay**seen, floor)
    return out, spread


_PENALTY_NAMES = ("test", "prose", "example", "docs", "legacy", "stub", "built", "vendored", "hidden", "private",
                  "re-export")


def explain(c: Candidate) -> str:
    """A short receipt of why a passage ranks where it does: `defines; path 0.5; test`."""
    s = c.rank_signals
    if not s:
        return ""
    parts = ["defines"] if s.get("defines") else []
    parts += ["called by the named function"] if s.get("callee") else []
    parts += ["at the pasted location"] if s.get("located") else []
    parts += [f"{key} {s[key]:g}" for key in ("path", "name", "doc", "phrase", "central") if s.get(key)]
    parts += [key for key in _PENALTY_NAMES if s.get(key)]
    if s.get("same_file"):
        parts.append(f"same file x{s['same_file']:g}")
    return "; ".join(parts)

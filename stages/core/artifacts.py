"""Typed artifacts: the contracts passed between stages.

Every stage takes and returns these models, so a stage can be tested alone and
a Prefect task can pass them between processes without custom serialisation.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1

EntityKind = Literal[
    "function",
    "method",
    "class",
    "interface",
    "type",
    "enum",
    "struct",
    "trait",
    "module",
    "constant",
    "section",
    "rule",
    "element",
    "window",
    "file",
    "note",
]


# Kinds that define a name (what premises, the graph and diffs talk about); sections, windows, files and notes do not.
DEFINITION_KINDS = frozenset({"function", "method", "class", "interface", "type", "enum", "struct", "trait", "constant"})
_QUALIFIER = re.compile(r"[.:#> ]+")


@lru_cache(maxsize=65536)
def short_name(name: str) -> str:
    """The last part of a qualified name, whatever the language writes between parts: `Session.send`,
    `crate::a::f`, `ZodType#parse`, `Outer > inner` all end in the name a question would use."""
    return _QUALIFIER.split(name)[-1]


class SourceFile(BaseModel):
    """A file that passed discovery and will be parsed."""

    path: str = Field(description="POSIX path relative to the workspace root")
    language: str
    size: int
    content_hash: str = Field(description="sha256 of the raw bytes")
    mtime_ns: int = Field(0, description="modification time when discovered (freshness checks compare it, no re-hash)")
    ctime_ns: int = Field(0, description="inode change time when discovered: no tool can set it back")


class SkippedFile(BaseModel):
    """A file discovery or parsing refused, with the reason counted in the report."""

    path: str
    reason: str
    detail: str = ""


class DiscoveryResult(BaseModel):
    files: list[SourceFile]
    skipped: list[SkippedFile] = []
    unreadable: list[str] = Field(
        default_factory=list,
        description="paths that exist but could not be read now; their entities are kept",
    )


class CodeFacts(BaseModel):
    """What a definition states about itself; empty fields mean the grammar says nothing."""

    decorators: list[str] = []
    is_async: bool = False
    returns: str = ""
    defaults: dict[str, str] = {}
    raises: list[str] = []


class Entity(BaseModel):
    """One retrievable unit: a definition, a section, a window of text, or a note."""

    id: str
    kind: EntityKind
    name: str
    qualname: str
    parent: str | None = None
    signature: str = ""
    docstring: str = ""
    body: str = ""
    start_line: int
    end_line: int
    language: str
    file: str
    content_hash: str = Field(description="sha256 of this entity's source span")
    part: int = 0
    parts: int = 1
    bases: list[str] = []
    params: list[str] = []
    facts: CodeFacts | None = Field(None, description="decorators, async, return type, defaults, raises (functions and classes)")
    member_docs: str = Field("", description="a container's members' doc summaries, `name: summary` a line each")

    def embed_text(self) -> str:
        """Text the dense model sees: where it is, what it is, what its members do, then the code itself. BM25 does
        not read the members' summaries: there a class outranked the method that a question's words describe."""
        head = f"{self.kind} {self.qualname} in {self.file}"
        pieces = [head, self.signature]
        if self.docstring:
            pieces.append(self.docstring)
        if self.member_docs:
            pieces.append(self.member_docs)
        pieces.append(self.body)
        return "\n".join(p for p in pieces if p)

    def lexical_text(self) -> str:
        """Text the BM25 index sees: names weigh twice, then everything else."""
        return "\n".join([self.qualname, self.qualname, self.file, self.signature, self.docstring, self.body])


class Edge(BaseModel):
    """One site in the code graph: a call, an import, an inheritance or a reference, in the file that holds it."""

    kind: Literal["call", "import", "inherit", "ref"]
    name: str = Field(description="called, imported, base or referenced name (its last identifier)")
    line: int = Field(description="the site's line")
    source: str = Field("", description="qualified name of the innermost definition holding the site ('' = module level)")
    source_id: str = ""
    receiver: str = Field("", description="calls: the receiver text (`self`, `os.path`); inherit: the base as written")
    module: str = Field("", description="imports: the module as written (`.utils`, `./x`, `crate::a`)")
    alias: str = Field("", description="imports: the local name when renamed (`as`)")


class ParsedFile(BaseModel):
    path: str
    content_hash: str
    entities: list[Entity]
    edges: list[Edge] = []
    partial: bool = Field(False, description="tree-sitter reported syntax errors; what parsed is kept")
    error: str = ""
    lexical_tokens: list[str] = Field(
        [], description="each entity's BM25 tokens, space-joined, in entity order: computed where the parse ran (in "
        "parallel), so the catalog does not tokenize again",
    )


class ParseResult(BaseModel):
    files: list[ParsedFile]
    skipped: list[SkippedFile] = []

    def tokens_by_id(self) -> dict[str, str]:
        """Every parsed entity's space-joined BM25 tokens, by entity id."""
        return {e.id: t for pf in self.files for e, t in zip(pf.entities, pf.lexical_tokens)}


class EmbeddedBatch(BaseModel):
    """Entities with their vectors, ready to store."""

    embedder: str
    dimension: int
    ids: list[str]
    vectors: list[list[float]]
    truncated: int = Field(0, description="inputs longer than the model window (the lexical index still has all)")
    cached: int = Field(0, description="vectors reused from the content cache (not embedded again)")


class FileRecord(BaseModel):
    content_hash: str
    size: int
    language: str
    entity_ids: list[str]
    partial: bool = False
    mtime_ns: int = 0
    ctime_ns: int = Field(0, description="inode change time as indexed (0: not recorded): `cp -p`, `rsync -t`, "
                          "`tar x` and `touch -r` keep a same-size edit's mtime, never this")

    def stat_differs(self, st: os.stat_result) -> bool:
        """The file's size, modification time or inode change time is not what the index recorded: cheap, nothing
        re-hashed (a time that moved while the bytes did not reads as changed; a time never recorded, as the same).
        `changed_on_disk` confirms a moved change time by the content instead."""
        return self._size_or_mtime_differ(st) or self._ctime_moved(st)

    def changed_on_disk(self, path: str | os.PathLike[str], st: os.stat_result) -> bool:
        """Whether `path` (this file; `st` its stat) holds other bytes than indexed: its size or modification time
        differ, or only its change time does and the content hash confirms it (a chmod or a copied workspace keep the
        bytes). Hashed once per stat in this process; the next index run records the new change time."""
        if self._size_or_mtime_differ(st):
            return True
        if not self._ctime_moved(st):
            return False
        try:
            return not _holds(os.fspath(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, self.content_hash)
        except OSError:
            return False  # unreadable now: the index keeps it as it was, and `assay index` could not read it either

    def _size_or_mtime_differ(self, st: os.stat_result) -> bool:
        return st.st_size != self.size or bool(self.mtime_ns and st.st_mtime_ns != self.mtime_ns)

    def _ctime_moved(self, st: os.stat_result) -> bool:
        return bool(self.ctime_ns and st.st_ctime_ns != self.ctime_ns)


@lru_cache(maxsize=4096)
def _holds(path: str, ino: int, size: int, mtime_ns: int, ctime_ns: int, content_hash: str) -> bool:
    """Whether the file at `path` (as the stat fields say it is now) hashes to `content_hash`. Keyed on the stat, so
    any later change reads it again; an OSError is raised, never cached."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest() == content_hash


class IndexManifest(BaseModel):
    """What the index holds; written atomically after every successful run."""

    schema_version: int = SCHEMA_VERSION
    parser: int = Field(1, description="version of the parse stage that made these entities")
    tokenizer: int = Field(0, description="BM25 tokenizer whose tokens the catalog holds (0: not said, an older Assay "
                           "wrote it, whose entities this version's stored tokens may not match)")
    workspace: str
    embedder: str = ""
    dimension: int = 0
    collection: str = Field("", description="the Chroma collection holding this index's vectors")
    files: dict[str, FileRecord] = {}
    notes: list[str] = []
    dense_pending: list[str] = Field(
        default_factory=list,
        description="ids in the catalog and BM25 whose vectors are not stored yet (dense fill in progress or interrupted)",
    )
    vectors_stale: list[str] = Field(
        default_factory=list,
        description="ids purged from the catalog and BM25 whose vectors the dense phase has still to delete",
    )
    updated_at: str = ""
    git_commit: str = Field("", description="HEAD when this index was written (git workspaces)")
    git_branch: str = ""

    @property
    def entity_count(self) -> int:
        """Entities of indexed files (notes not included)."""
        return sum(len(r.entity_ids) for r in self.files.values())

    @property
    def entity_ids(self) -> set[str]:
        """Ids of the indexed files' entities (notes not included)."""
        return {i for r in self.files.values() for i in r.entity_ids}


class IndexPlan(BaseModel):
    """What an index run must do, from comparing discovery with the manifest."""

    to_parse: list[SourceFile]
    unchanged: list[str]
    removed: list[str]
    kept_unreadable: list[str]
    rebuild: bool = False
    rebuild_reason: str = ""


class IndexReport(BaseModel):
    workspace: str
    files_seen: int
    files_parsed: int
    files_unchanged: int
    files_removed: int
    files_partial: int
    skipped: dict[str, int]
    kept_unreadable: int
    entities_total: int
    entities_embedded: int
    entities_by_kind: dict[str, int]
    entities_by_language: dict[str, int]
    embed_truncated: int
    embed_cached: int = Field(0, description="vectors reused from the content cache instead of embedded again")
    dense_pending: int = Field(0, description="entities still waiting for their vectors when the run ended")
    timings: dict[str, float]
    embedder: str
    rebuild_reason: str = ""
    skipped_examples: list[SkippedFile] = []


# ----------------------------------------------------------------------------- query


class Candidate(BaseModel):
    """A retrieved passage with every retrieval signal that chose it."""

    id: str
    file: str
    start_line: int
    end_line: int
    entity: str
    kind: str
    language: str = ""
    signature: str = ""
    docstring: str = ""
    body: str = ""
    bases: list[str] = []
    params: list[str] = []
    facts: CodeFacts | None = None
    part: int = 0
    parts: int = Field(1, description="a long body is split into parts; each part is a passage")
    distance: float | None = Field(None, description="cosine distance from the dense index; lower is closer")
    turned_distance: float | None = Field(
        None, exclude=True, description="cosine distance from the question's turned vector (stages.query.query_adapter)")
    bm25: float | None = None
    dense_rank: int | None = None
    lexical_rank: int | None = None
    fused_rank: int
    fused_score: float
    rank_score: float | None = Field(None, description="code-aware rank score (stages.query.rank); None before ranking")
    rank_signals: dict[str, float] = Field(default_factory=dict, description="the ranking signals behind rank_score")
    stale: bool = Field(False, description="its file changed or vanished since it was indexed")
    injection_scan: tuple[float, list[str]] | None = Field(
        None, exclude=True, description="the index-time injection score and signals of this exact passage, if scanned")


class Freshness(BaseModel):
    """What an answer's evidence reflects."""

    indexed_at: str = Field("", description="when the index was last written (UTC)")
    indexed_commit: str = ""
    indexed_branch: str = ""
    head_commit: str = Field("", description="HEAD now ('' outside git)")
    head_branch: str = ""
    changed: list[str] = Field(default_factory=list, description="indexed files whose size or time differ now (first 50)")
    changed_count: int = 0
    deleted_count: int = 0

    @property
    def head_moved(self) -> bool:
        return bool(self.head_commit) and self.head_commit != self.indexed_commit

    def line(self) -> str:
        """One line for reports and search results."""
        parts = []
        if self.indexed_commit:
            parts.append(f"index of {self.indexed_commit[:10]} ({self.indexed_branch or 'detached'})")
        parts.append(f"written {self.indexed_at or 'at an unknown time'}")
        if self.head_moved:
            parts.append(f"HEAD is now {self.head_commit[:10]} ({self.head_branch or 'detached'})")
        stale = self.changed_count + self.deleted_count
        # Advice only when indexed files differ: a commit or `checkout -b` moves HEAD and leaves every file as indexed.
        parts.append(f"{stale} file(s) changed since" + (" — run `assay index` or `assay watch`" if stale else ""))
        return "; ".join(parts)


class Retrieval(BaseModel):
    query: str
    candidates: list[Candidate]
    dense_available: bool = True
    note: str = ""
    freshness: Freshness | None = None


class PassageScores(BaseModel):
    relevance: float = Field(ge=0, le=1)
    evidence: float = Field(ge=0, le=1)
    contradicts: float = Field(ge=0, le=1)
    injection: float = Field(ge=0, le=1)


class Premise(BaseModel):
    """Something a question presupposes about the code (stages.query.premise)."""

    kind: Literal["base", "param", "default", "decorator", "async", "returns", "raises", "file", "kind", "value"]
    subject: str = Field(description="the identifier the premise is about, as written")
    value: str = Field(description="base class, parameter, default, decorator, async|sync, type, exception, file or kind")
    param: str = Field("", description="default premises: the parameter whose default is claimed")
    negated: bool = Field(False, description="the question says it is *not* so")
    loose: bool = Field(False, description="inferred from cue words near a defined name, not from a stated phrase")
    text: str = Field("", description="the words of the question that state it")


class PremiseFinding(BaseModel):
    """A premise checked against the definition of its subject."""

    premise: Premise
    holds: bool
    contradicts: float = Field(ge=0, le=1)
    entity_id: str
    entity: str
    file: str
    line: int
    fact: str = Field("", description="the correction, citing the definition, when the premise does not hold")


class LLMCall(BaseModel):
    """One model call, for the usage ledger: tokens as the backend reported them, latency, what it was for."""

    purpose: Literal["judge", "writer", "brief", "guard"]
    backend: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = Field(0, description="prompt tokens the provider served from its prefix cache, when it says")
    latency_s: float = 0.0
    ok: bool = True


class PremiseCheck(BaseModel):
    """The premise stage's output: checked premises, and subject definitions retrieval did not bring."""

    findings: list[PremiseFinding] = []
    added: list["Candidate"] = []


class Judgment(BaseModel):
    """The judge's verdict on the whole candidate set."""

    backend: str
    model: str = ""
    scores: dict[str, PassageScores] = Field(description="by candidate id; a missing id means the judge failed for it")
    answerable: float | None = None
    coverage: int | None = None
    conflict: float | None = None
    calls: int = 0
    failure: str = Field("", description="why the judge failed (for some or all passages); empty when it did not")
    reasons: dict[str, str] = {}
    premises: list[PremiseFinding] = Field(default_factory=list, description="the question's premises checked against the index")
    usage: list[LLMCall] = Field(default_factory=list, description="model calls made to judge")
    notes: list[str] = Field(default_factory=list, description="one line each for the report: a fallback to the local judge, the query gate")
    orders_kept: bool = Field(True, description="whether its scores re-order the passages it keeps (false: they stay in "
                                                "the rank stage's order)")


class Thresholds(BaseModel):
    relevance_min: float
    evidence_min: float
    injection_max: float
    contradicts_min: float
    answerable_min: float = 0.4
    top_k: int = 5


Verdict = Literal["include", "conflict", "drop"]


class RankedPassage(BaseModel):
    candidate: Candidate
    scores: PassageScores | None = Field(None, description="None when the judge failed for this passage")
    verdict: Verdict
    drop_reason: str = ""
    rank_score: float
    final_rank: int | None = None


class Selection(BaseModel):
    """The threshold stage's output: what goes to synthesis, and why the rest does not."""

    included: list[RankedPassage]
    dropped: list[RankedPassage]
    thresholds: Thresholds
    fail_open: bool = False
    fail_open_reason: str = ""
    injection_dropped: int = 0
    conflicts: int = 0


class RouteDecision(BaseModel):
    target: Literal["local", "cloud"]
    reason: str
    mode: str


class Answer(BaseModel):
    text: str
    backend: str
    model: str = ""
    redactions: int = 0
    cited: list[str] = []
    failure: str = ""
    usage: list[LLMCall] = Field(default_factory=list, description="model calls made to write the answer")


ClaimVerdict = Literal["verified", "unsupported", "contradicted", "fabricated"]


class Claim(BaseModel):
    """One sentence of an answer with its citations, checked against the passages its writer was given."""

    text: str = Field(description="the sentence as the writer wrote it")
    citations: list[str] = Field(default_factory=list, description="`file:line` citations in it, as written")
    verdict: ClaimVerdict
    evidence: str = Field("", description="what supports or refutes it: a passage, a fact of the index, or what is missing")
    source: str = Field("", description="file:line of the passage or definition behind the verdict, when there is one")
    by: str = Field("local", description="the guard backend that gave the verdict")


class GuardReport(BaseModel):
    """The faithfulness guard's check of an answer (stages.query.guard): a verdict per claim."""

    backend: str = "local"
    model: str = ""
    claims: list[Claim] = []
    grounded: float | None = Field(None, description="share of claims verified, 0-1; None when the answer makes no claim")
    model_grounded: float | None = Field(
        None, description="the guard model's own grounded score of the whole answer, 0-1 (systemone); None when not asked"
    )
    marked: int = Field(0, description="fabricated or contradicted claims marked `[guard: ...]` in the answer text")
    original: str = Field("", description="the writer's text before marking (empty when nothing was marked)")
    failure: str = Field("", description="why a model guard fell back to the local verdicts; empty when it did not")
    calls: int = 0
    usage: list[LLMCall] = Field(default_factory=list, description="model calls made to check the answer")

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.claims)


class QueryReport(BaseModel):
    query_id: str
    query: str
    workspace: str
    status: Literal["supported", "partial", "unsupported"]
    coverage: int
    answer: Answer
    selection: Selection
    judgment: Judgment
    route: RouteDecision
    notes: list[str] = Field(default_factory=list, description="degradations the reader must know about")
    called_by: dict[str, int] = Field(default_factory=dict, description="resolved call sites of each included definition")
    freshness: Freshness | None = Field(None, description="what the index reflects: commit, branch, time, files changed since")
    guard: GuardReport | None = Field(None, description="the answer's claims checked against the passages and the index")
    trust: Literal["high", "medium", "low"] | None = Field(None, description="how far to rely on the answer (Guidance's trust line)")
    action: str = Field("", description="what to do with the answer (Guidance's action line)")
    guidance: list[str] = Field(default_factory=list, description=(
        "Guidance's other lines as the text shows them, each `kind: advice`: distrust, premise, freshness, security, gap, missing"))
    tokens_returned: int = Field(0, description="tokens of `text`, the report an agent reads")
    tokens_cited_files: int = Field(0, description="tokens of the whole files the included passages come from")
    flow_run_id: str | None = Field(None, description="the Prefect flow run that produced it (None: run directly)")
    timings: dict[str, float] = {}
    text: str = ""

"""Judge stage, local backend: scores every passage without an LLM, from what the index knows.

- relevance: how many of the question's terms the passage's name, signature, docstring and body cover
  and its dense similarity, plus the code-aware rank score (or BM25 and the fused rank where the pool
  was not ranked); an identifier the question names exactly, defined by the passage, is strong evidence.
- evidence: structure. A definition with a body and a docstring is concrete support; a window of
  text or a passage that merely mentions a named identifier is weaker.
- contradicts: symbol facts. When the question claims `X inherits Y`, `X takes parameter p`,
  `X is a class`, or `X is defined in F`, the passage that defines X is checked against it.
- injection: the AST-aware detector in `stages.injection`.
Set-level answerable, coverage (0-3) and conflict (two definitions of one name that disagree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from stages.artifacts import Candidate, Judgment, PassageScores
from stages.injection import injection_score, score_text
from stages.lexical import tokenize

_IDENT = re.compile(r"`([^`]+)`|\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\b|\b([A-Za-z_]+[A-Za-z0-9]*_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)\b|\b([A-Za-z_][A-Za-z0-9_]*)\(\)")
RANK_WEIGHT = 0.5  # share of relevance taken from the rank stage's score, when the pool was ranked
_DEFINITION_KINDS = frozenset({"function", "method", "class", "interface", "type", "enum", "struct", "trait", "module", "constant"})
_KIND_WORDS = {"class": "class", "function": "function", "method": "method", "constant": "constant",
               "interface": "interface", "enum": "enum", "struct": "struct", "trait": "trait"}


def question_identifiers(question: str) -> list[str]:
    """Code identifiers named in a question: `backticked`, dotted.paths, snake_case, camelCase, call()."""
    found: list[str] = []
    for m in _IDENT.finditer(question):
        raw = next(g for g in m.groups() if g)
        raw = raw.strip().rstrip("()")
        for part in re.split(r"[\s,]+", raw):
            part = part.strip("`'\".,:;()")
            if part and re.match(r"^[A-Za-z_][\w.]*$", part):
                found.append(part)
    return list(dict.fromkeys(found))


def _short(name: str) -> str:
    return re.split(r"[.:> ]+", name)[-1]


def _coverage(terms: set[str], text: str) -> float:
    if not terms:
        return 0.0
    have = set(tokenize(text))
    return len(terms & have) / len(terms)


@dataclass(frozen=True)
class Claim:
    subject: str
    relation: str  # inherits | param | kind | file
    value: str


_CLAIMS = (
    ("inherits", re.compile(r"`?([A-Za-z_][\w.]*)`?\s+(?:inherits\s+(?:from\s+)?|extends\s+|is\s+a\s+subclass\s+of\s+|subclasses\s+|derives\s+from\s+)`?([A-Za-z_][\w.]*)`?", re.I)),
    ("param", re.compile(r"`?([A-Za-z_][\w.]*)`?\s+(?:takes|accepts|has|receives|expects)\s+(?:an?\s+|the\s+)?(?:optional\s+|keyword\s+)?(?:parameter|argument|arg|kwarg|param)\s+(?:named\s+|called\s+)?`?([A-Za-z_]\w*)`?", re.I)),
    ("param", re.compile(r"(?:parameter|argument|kwarg)\s+`?([A-Za-z_]\w*)`?\s+(?:of|to|in)\s+`?([A-Za-z_][\w.]*)`?", re.I)),
    ("kind", re.compile(r"`?([A-Za-z_][\w.]*)`?\s+is\s+(?:a|an)\s+(class|function|method|constant|interface|enum|struct|trait)\b", re.I)),
    ("file", re.compile(r"`?([A-Za-z_][\w.]*)`?\s+(?:is\s+)?(?:defined|declared|implemented)\s+in\s+`?([\w./-]+\.[A-Za-z]+)`?", re.I)),
)


def question_claims(question: str) -> list[Claim]:
    claims: list[Claim] = []
    for relation, pattern in _CLAIMS:
        for m in pattern.finditer(question):
            a, b = m.group(1), m.group(2)
            if pattern.pattern.startswith("(?:parameter"):
                a, b = b, a  # "parameter p of X": subject X, value p
            claims.append(Claim(_short(a), relation, b))
    return claims


def contradiction(c: Candidate, claims: list[Claim]) -> float:
    """How strongly this passage's symbol facts contradict the question's premise."""
    score = 0.0
    name = _short(c.entity)
    for cl in claims:
        if cl.subject != name or c.kind not in _DEFINITION_KINDS:
            continue
        if cl.relation == "inherits" and c.kind in ("class", "interface", "struct"):
            if _short(cl.value) not in {_short(b) for b in c.bases}:
                score = max(score, 0.9 if c.bases or "(" not in c.signature else 0.8)
        elif cl.relation == "param" and c.kind in ("function", "method"):
            if c.params and cl.value not in c.params:
                # a **kwargs catch-all may still accept it: doubt, not contradiction
                score = max(score, 0.3 if "**" in c.signature else 0.85)
        elif cl.relation == "kind":
            claimed = _KIND_WORDS.get(cl.value.lower(), cl.value.lower())
            same = {claimed, c.kind} <= {"function", "method"} or claimed == c.kind
            if not same:
                score = max(score, 0.75)
        elif cl.relation == "file":
            if not (c.file == cl.value or c.file.endswith("/" + cl.value)):
                score = max(score, 0.7)
    return score


def passage_injection(c: Candidate) -> tuple[float, list[str]]:
    """The local detector's score for a passage (cached: the judge and the threshold both ask)."""
    score, hits = _injection(c.body, c.docstring, c.language or "text")
    return score, list(hits)


@lru_cache(maxsize=4096)
def _injection(body: str, docstring: str, language: str) -> tuple[float, tuple[str, ...]]:
    body_score, body_hits = injection_score(body, language)
    doc_score, doc_hits = score_text(docstring) if docstring else (0.0, [])
    if doc_score > body_score:
        return doc_score, tuple(doc_hits)
    return body_score, tuple(body_hits)


def judge_local(question: str, candidates: list[Candidate]) -> Judgment:
    """Score all passages in one pass (the local judge makes no calls)."""
    terms = set(tokenize(question))
    idents = question_identifiers(question)
    ident_short = {_short(i).lower() for i in idents}
    ident_full = {i.lower() for i in idents}
    claims = question_claims(question)
    max_bm25 = max((c.bm25 or 0.0 for c in candidates), default=0.0) or 1.0
    best_fused = max((c.fused_score for c in candidates), default=0.0) or 1.0
    best_rank = max((c.rank_score or 0.0 for c in candidates), default=0.0) or 1.0
    scores: dict[str, PassageScores] = {}
    reasons: dict[str, str] = {}
    for c in candidates:
        name_text = f"{c.entity} {c.file}"
        name_cov = _coverage(terms, name_text)
        text_cov = _coverage(terms, f"{c.signature}\n{c.docstring}\n{c.body}")
        dense_sim = max(0.0, 1.0 - (c.distance if c.distance is not None else 1.0))
        bm25_norm = (c.bm25 or 0.0) / max_bm25
        coverage = (0.25 * name_cov + 0.2 * text_cov + 0.25 * min(1.0, dense_sim / 0.7)) / 0.7  # 0..1
        if c.rank_score is not None:  # the code-aware rank stage already weighed lexical, dense, paths and files
            relevance = (1 - RANK_WEIGHT) * coverage + RANK_WEIGHT * max(0.0, c.rank_score) / best_rank
        else:
            relevance = 0.7 * coverage + 0.15 * bm25_norm + 0.15 * c.fused_score / best_fused
        short = _short(c.entity).lower()
        defines_named = short in ident_short or c.entity.lower() in ident_full
        mentions_named = bool(ident_short) and not defines_named and any(i in c.body.lower() for i in ident_short)
        if defines_named:
            relevance = max(relevance, 0.9)
        evidence = 0.45 if c.kind in _DEFINITION_KINDS else (0.35 if c.kind in ("section", "note", "element", "rule") else 0.25)
        nonblank = sum(1 for ln in c.body.splitlines() if ln.strip())
        if nonblank >= 2:
            evidence += 0.2
        if c.docstring:
            evidence += 0.15
        if defines_named:
            evidence += 0.2
        elif mentions_named:
            evidence = min(evidence, 0.6)
        inj, hits = passage_injection(c)
        contra = contradiction(c, claims)
        scores[c.id] = PassageScores(
            relevance=round(min(1.0, relevance), 3), evidence=round(min(1.0, evidence), 3),
            contradicts=round(contra, 3), injection=inj,
        )
        why = []
        if defines_named:
            why.append("defines a named identifier")
        elif mentions_named:
            why.append("mentions a named identifier")
        if hits:
            why.append("injection signals: " + ",".join(hits))
        if contra:
            why.append("conflicts with the question's premise")
        reasons[c.id] = "; ".join(why)
    answerable, coverage = set_answerability(scores)
    return Judgment(
        backend="local", model="assay-local-1", scores=scores, answerable=answerable, coverage=coverage,
        conflict=set_conflict(candidates), calls=0, reasons=reasons,
    )


def set_answerability(scores: dict[str, PassageScores]) -> tuple[float, int]:
    """answerable: strength of the best supported passages; coverage 0-3 from how many support."""
    support = sorted(((s.relevance * s.evidence) ** 0.5 for s in scores.values() if s.injection < 0.5), reverse=True)
    answerable = round(sum(support[:3]) / 3, 3) if support else 0.0
    strong = sum(1 for s in scores.values() if s.relevance >= 0.5 and s.evidence >= 0.4 and s.injection < 0.5)
    coverage = 0 if strong == 0 else 1 if strong == 1 else 2 if strong <= 3 else 3
    return answerable, coverage


def set_conflict(candidates: list[Candidate]) -> float:
    """Two definitions of one qualified name whose signatures differ disagree with each other."""
    seen: dict[tuple[str, str], str] = {}
    for c in candidates:
        if c.kind not in _DEFINITION_KINDS:
            continue
        key = (c.kind, c.entity)
        if key in seen and seen[key] != c.signature:
            return 0.6
        seen.setdefault(key, c.signature)
    return 0.0

"""Faithfulness evaluation set: answers over real sdists, each with one planted fault and a faithful twin.

Ground truth comes from Python `ast` (defaults, bases, annotations, raises, constructor assignments, calls),
independent of the tree-sitter facts and passages the guard reads. For each subject definition the "writer" is
given the subject's passage and its three nearest neighbours in the file (what retrieval brings), and the answer
makes three or four true claims about them in one of several writer styles (bullets or a paragraph; citations as
`(f:l)`, `[f:l]`, `(f:l-e)`, `(see f:l)`). One claim carries the fault of a kind; its twin is the same answer with
the true claim in its place. The scorer runs the local guard on both: a fault is detected when a claim overlapping
it gets the kind's verdict; a twin is a false alarm when any of its claims is not verified.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from assay.stages.core.artifacts import Candidate, Entity, RankedPassage
from assay.stages.evaluate.premise_set import _ancestors, _annotation_names, _Def, _direct_raises, _unique_defs, collect
from assay.stages.evaluate.premise_set import package_files
from assay.stages.index.languages import language_for
from assay.stages.index.parse import parse_source
from assay.stages.index.tokens import word_parts
from assay.stages.query.guard import IndexFacts, check_local, covers
from assay.stages.query.claims import Citation
from assay.stages.query.premise import resolver_from
from assay.stages.query.retrieve import to_candidate
from assay.stages.query.synthesize import extractive, first_sentence

FAITHFULNESS_CORPORA = ("tenacity==9.1.2", "boltons==25.0.0")
EXPECTED = {"fabricated-file": "fabricated", "fabricated-line": "fabricated", "fabricated-entity": "fabricated",
            "contradicted-default": "contradicted", "contradicted-value": "contradicted", "contradicted-param": "contradicted",
            "contradicted-base": "contradicted", "contradicted-returns": "contradicted", "contradicted-raises": "contradicted",
            "contradicted-file": "contradicted", "unsupported": "unsupported"}
_VAGUE_TYPES = frozenset({"None", "Any", "object", "Optional", "Union", "Self", "T", "t", "typing"})  # never false
_LITERAL_WORDS = frozenset({"true", "false", "none", "null", "nil", "undefined"})
CITE_STYLES = ("({f}:{l})", "[{f}:{l}]", "({f}:{l}-{e})", "(see {f}:{l})")
SUMMARY = ("`{n}`: {doc}", "`{n}` is documented as follows: {doc}", "The docstring of `{n}` reads: {doc}")
SENTENCES = {
    "fabricated-entity": ("`{S}` calls `{X}` {c}.", "`{S}` delegates to `{X}` {c}.", "Internally, `{S}` relies on `{X}` {c}."),
    "contradicted-default": ("The `{P}` parameter of `{S}` defaults to `{V}` {c}.", "`{S}` sets `{P}` to `{V}` by default {c}.",
                             "In `{S}`, `{P}` defaults to `{V}` {c}."),
    "contradicted-value": ("`{O}.{P}` starts at `{V}` {c}.", "`{O}.{P}` is initialised to `{V}` {c}.",
                           "The `{P}` attribute of `{O}` defaults to `{V}` {c}.", "`{O}` sets `{P}` to `{V}` by default {c}."),
    "contradicted-constant": ("`{P}` is set to `{V}` {c}.", "`{P}` defaults to `{V}` {c}."),
    "contradicted-param": ("`{S}` takes a `{P}` argument {c}.", "`{S}` accepts a `{P}` parameter {c}.",
                           "The `{P}` parameter of `{S}` is passed in by the caller {c}."),
    "contradicted-base": ("`{S}` inherits from `{V}` {c}.", "`{S}` is a subclass of `{V}` {c}.", "`{S}` extends `{V}` {c}."),
    "contradicted-returns": ("`{S}` returns `{V}` {c}.", "`{S}` returns a `{V}` {c}.", "The return type of `{S}` is `{V}` {c}."),
    "contradicted-raises": ("`{S}` raises `{V}` {c}.", "`{S}` can raise `{V}` {c}.", "`{V}` is raised by `{S}` {c}."),
    "contradicted-file": ("`{S}` is defined in `{V}`.", "`{S}` lives in `{V}`.", "The module `{V}` defines `{S}`."),
}


@dataclass
class FaithCase:
    kind: str
    corpus: str
    subject: str
    passages: list[Candidate]
    faulty: str
    twin: str
    span: tuple[int, int]  # the faulted claim in `faulty`
    twin_span: tuple[int, int]


@dataclass
class _Corpus:
    """One unpacked sdist: its passages (the parse stage's entities) and its `ast` facts."""

    name: str
    entities: list[Entity]
    facts: object
    by_file: dict[str, list[Entity]]
    names: set[str]
    sources: dict[str, str]

    def entity(self, d: _Def) -> Entity | None:
        return next((e for e in self.by_file.get(d.file, []) if e.qualname == d.qual and e.part == 0 and e.parts == 1), None)

    def index_facts(self) -> IndexFacts:
        return IndexFacts(resolver_from(self.entities), lambda: self.by_file.keys())


def load(root: Path, name: str) -> _Corpus:
    entities: list[Entity] = []
    sources: dict[str, str] = {}
    for path in package_files(root):
        rel = path.relative_to(root).as_posix()
        lang = language_for(rel)
        if lang is not None:
            data = path.read_bytes()
            sources[rel] = data.decode("utf-8", "replace")
            entities.extend(parse_source(data, rel, lang, "").entities)
    by_file: dict[str, list[Entity]] = defaultdict(list)
    for e in entities:
        by_file[e.file].append(e)
    names = {w for e in entities for w in re.findall(r"[A-Za-z_]\w*", f"{e.qualname} {e.signature} {e.docstring} {e.body}")}
    return _Corpus(name, entities, collect(root), by_file, names, sources)


def context(corpus: _Corpus, e: Entity) -> list[Candidate]:
    """The subject and its three nearest definitions in the file: the passages a writer is given."""
    near = sorted((x for x in corpus.by_file[e.file] if x.id != e.id and x.part == 0 and x.kind not in ("file", "window")),
                  key=lambda x: (abs(x.start_line - e.start_line), x.start_line))[:3]
    return [to_candidate(x, fused_rank=i + 1, fused_score=0.0) for i, x in enumerate([e, *near])]


def summary(c: Candidate | Entity, rng: random.Random) -> str:
    name = c.entity if isinstance(c, Candidate) else c.qualname
    doc = first_sentence(c.docstring).rstrip(":") if c.docstring else ""
    if len(doc.split()) < 4:
        return f"`{name}` is defined as `{c.signature.strip().rstrip(':')[:160]}`"
    return rng.choice(SUMMARY).format(n=name, doc=doc if doc.endswith((".", "!", "?")) else doc)


def _cite(style: str, file: str, line: int, end: int) -> str:
    return style.format(f=file, l=line, e=max(end, line))


def _literal(node: ast.AST | None, source: str = "") -> str | None:
    """A constant as the code writes it (`0o777`, not 511), or None for anything else."""
    simple = isinstance(node, ast.Constant) and not isinstance(node.value, (bytes, complex)) and len(repr(node.value)) <= 30
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
    if not (simple or negative):
        return None
    written = ast.get_source_segment(source, node) if source else None
    return written if written and "\n" not in written else ast.unparse(node)


def _other_literal(value: str, pool: list[str], rng: random.Random) -> str:
    """A different value of the same sort when there is one: a flipped bool, another number, string or None."""
    flips = {"True": "False", "False": "True", "None": rng.choice(["True", "0", "''"])}
    if value in flips:
        return flips[value]
    same = [v for v in pool if not _same_value(v, value) and (v[:1] in "'\"") == (value[:1] in "'\"")
            and v not in ("True", "False", "None")]
    return rng.choice(same) if same else "None"


def _same_value(a: str, b: str) -> bool:
    try:
        return bool(ast.literal_eval(a) == ast.literal_eval(b))
    except (ValueError, SyntaxError):
        return a == b


def _fake_name(real: str, corpus: _Corpus, rng: random.Random) -> str | None:
    """A name shaped like `real` from another identifier's word, defined nowhere in the package."""
    parts = word_parts(real)
    donors = sorted({p for n in corpus.names for p in word_parts(n) if len(p) > 3 and p.isalpha()} - set(parts))
    for _ in range(20):
        new = list(parts)
        new[rng.randrange(len(new))] = rng.choice(donors)
        name = ("_" if real.startswith("_") else "") + ("_".join(new) if "_" in real.strip("_") or real.islower()
                                                         else "".join(p.capitalize() for p in new))
        if name not in corpus.names and name != real and name.isidentifier() and not keyword.iskeyword(name) \
                and name.lower() not in _LITERAL_WORDS and not hasattr(builtins, name):
            return name
    return None


def _pairs(kind: str, d: _Def, e: Entity, ctx: list[Candidate], corpus: _Corpus, pools: dict, style: str,
           rng: random.Random) -> tuple[str, str] | None:
    """(true claim, faulty claim) of one kind about subject `d`, or None when it has nothing of that kind."""
    node, f = d.node, corpus.facts
    c = _cite(style, e.file, e.start_line, e.end_line)
    is_fn = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    fill = lambda t, **kw: rng.choice(SENTENCES[t]).format(S=e.qualname, c=c, **kw)  # noqa: E731
    if kind == "fabricated-file":
        stems = sorted({Path(p).stem for p in corpus.by_file if not Path(p).stem.startswith("_")})
        fake = f"{Path(e.file).parent.as_posix()}/{rng.choice(stems)}_{rng.choice(stems)}.py".lstrip("./")
        if fake in corpus.by_file:
            return None
        s = summary(e, rng)
        return f"{s} {c}.", f"{s} {_cite(style, fake, e.start_line, e.end_line)}."
    if kind == "fabricated-line":
        free = [n for n in range(1, corpus.sources[e.file].count("\n") + 2)
                if not any(covers(p, Citation(e.file, n, n, "")) for p in ctx)]
        if not free:
            return None
        s, n = summary(e, rng), rng.choice(free)
        return f"{s} {c}.", f"{s} {_cite(style, e.file, n, n)}."
    if kind == "fabricated-entity" and is_fn:
        calls = sorted({(n.func.id if isinstance(n.func, ast.Name) else n.func.attr) for n in ast.walk(node)
                        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))})
        calls = [x for x in calls if len(x) > 3 and x in e.body and not x[:1].isupper()]
        if not calls:
            return None
        real = rng.choice(calls)
        fake = _fake_name(real, corpus, rng)
        return (fill(kind, X=real), fill(kind, X=fake)) if fake else None
    if kind == "contradicted-default" and is_fn:
        a = node.args
        pos = [*a.posonlyargs, *a.args]
        pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + [(p, dv) for p, dv in zip(a.kwonlyargs, a.kw_defaults) if dv]
        src = corpus.sources[d.file]
        lits = [(p.arg, _literal(dv, src)) for p, dv in pairs if _literal(dv) is not None and e.facts and p.arg in e.facts.defaults]
        if not lits:
            return None
        p, v = rng.choice(lits)
        return fill(kind, P=p, V=v), fill(kind, P=p, V=_other_literal(v, pools["literals"], rng))
    if kind == "contradicted-value":
        if isinstance(node, ast.Assign):  # a module constant, assigned once in its file
            v = _literal(node.value, corpus.sources[d.file])
            if v is None or len(re.findall(rf"^\s*{d.name}\s*[:=]", corpus.sources[d.file], re.M)) != 1:
                return None
            t = rng.choice(SENTENCES["contradicted-constant"])
            return (t.format(P=d.name, V=v, c=c), t.format(P=d.name, V=_other_literal(v, pools["literals"], rng), c=c))
        if not (is_fn and d.name == "__init__" and d.cls):
            return None
        params = {p.arg for p in [*node.args.args, *node.args.kwonlyargs]}
        seen: dict[str, list[str | None]] = defaultdict(list)
        for n in ast.walk(node):
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        seen[t.attr].append(_literal(n.value, corpus.sources[d.file]))
        attrs = sorted(a for a, vs in seen.items() if len(vs) == 1 and vs[0] is not None and a not in params)
        if not attrs:
            return None
        a = rng.choice(attrs)
        v = seen[a][0]
        t = rng.choice(SENTENCES[kind])
        return t.format(O=d.cls, P=a, V=v, c=c), t.format(O=d.cls, P=a, V=_other_literal(v, pools["literals"], rng), c=c)
    if kind == "contradicted-param" and is_fn and node.args.kwarg is None:
        own = [p.arg for p in [*node.args.args, *node.args.kwonlyargs] if p.arg not in ("self", "cls")]
        others = sorted({p for x in ctx[1:] for p in x.params if p not in own and p not in ("self", "cls", "args", "kwargs")
                         and len(p) > 2 and not re.search(rf"\b{re.escape(p)}\b", e.body)})
        if not own or not others or node.args.vararg is not None:
            return None
        return fill(kind, P=rng.choice(own)), fill(kind, P=rng.choice(others))
    if kind == "contradicted-base" and isinstance(node, ast.ClassDef):
        bases = [b for b in f.class_bases.get(d.name, []) if b and b not in ("object", "Generic", "Protocol")]
        related = set(bases) | _ancestors(f, d.name)
        wrong = [x for x in pools["classes"] if x not in related and x != d.name and d.name not in _ancestors(f, x)]
        return (fill(kind, V=rng.choice(bases)), fill(kind, V=rng.choice(wrong))) if bases and wrong else None
    if kind == "contradicted-returns" and is_fn:
        names = _annotation_names(node)
        real = sorted(n for n in names if n in pools["types"] and n not in _VAGUE_TYPES and re.search(rf"\b{n}\b", e.signature))
        if names & _VAGUE_TYPES - {"None", "Optional"}:
            return None  # `-> Any` makes no claim about the type false
        related = names | {a for n in names for a in _ancestors(f, n)}
        wrong = [n for n in pools["types"] if n not in related and not (_ancestors(f, n) & names) and n not in _VAGUE_TYPES]
        return (fill(kind, V=rng.choice(real)), fill(kind, V=rng.choice(wrong))) if real and wrong else None
    if kind == "contradicted-raises" and is_fn:
        raised = sorted(_direct_raises(node))
        seen_names = {w for x in ctx for w in re.findall(r"\w+", f"{x.docstring} {x.body}")}
        related = set(raised) | {a for r in raised for a in _ancestors(f, r)}
        wrong = [x for x in pools["raised"] if x not in related and not (_ancestors(f, x) & set(raised)) and x not in seen_names]
        return (fill(kind, V=rng.choice(raised)), fill(kind, V=rng.choice(wrong))) if raised and wrong else None
    if kind == "contradicted-file":
        other = [p for p in corpus.by_file if Path(p).name != Path(e.file).name]
        if not other:
            return None
        t = rng.choice(SENTENCES[kind])
        return t.format(S=e.qualname, V=Path(e.file).name), t.format(S=e.qualname, V=Path(rng.choice(other)).name)
    if kind == "unsupported" and e.docstring and len(first_sentence(e.docstring).split()) >= 4:
        donors = [x for x in pools["documented"] if x.file != e.file]
        if not donors:
            return None
        donor = rng.choice(donors)
        t = rng.choice(SUMMARY)
        return (t.format(n=e.qualname, doc=first_sentence(e.docstring)) + f" {c}.",
                t.format(n=e.qualname, doc=first_sentence(donor.docstring)) + f" {c}.")
    return None


def _pools(corpus: _Corpus) -> dict:
    f = corpus.facts
    functions = [d for d in f.defs if isinstance(d.node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    literals = sorted({v for d in functions for dv in [*d.node.args.defaults, *d.node.args.kw_defaults]
                       if (v := _literal(dv)) is not None})
    documented = [e for e in corpus.entities if e.part == 0 and e.docstring and len(first_sentence(e.docstring).split()) >= 6
                  and not re.search(r"`|\w_\w|[a-z][A-Z]|\w\(\)", first_sentence(e.docstring))]
    return {"literals": literals, "classes": sorted({d.name for d in f.defs if isinstance(d.node, ast.ClassDef)}),
            "types": sorted({n for d in functions for n in _annotation_names(d.node)}),
            "raised": sorted({r for d in functions for r in _direct_raises(d.node)}), "documented": documented}


def generate(corpus: _Corpus, per_kind: int = 40, seed: int = 11) -> list[FaithCase]:
    """Up to `per_kind` cases of each kind, each subject used once per kind."""
    rng = random.Random(seed)
    pools = _pools(corpus)
    subjects = [d for d in _unique_defs(corpus.facts) if corpus.entity(d) is not None]
    subjects += [d for d in corpus.facts.defs if d.name == "__init__" and d.cls and corpus.entity(d) is not None]
    cases: list[FaithCase] = []
    for kind in EXPECTED:
        made = 0
        for d in rng.sample(subjects, len(subjects)):
            if made >= per_kind:
                break
            e = corpus.entity(d)
            ctx = context(corpus, e)
            style = rng.choice(CITE_STYLES)
            pair = _pairs(kind, d, e, ctx, corpus, pools, style, rng)
            if pair is None:
                continue
            claims = [summary(x, rng) + " " + _cite(style, x.file, x.start_line, x.end_line) + "." for x in ctx[:3]]
            if kind in ("fabricated-file", "fabricated-line", "unsupported"):
                claims = claims[1:]  # the subject's summary is the claim under test
            at = rng.randrange(len(claims) + 1)
            cases.append(_assemble(kind, corpus.name, e.qualname, ctx, claims, at, pair, rng.random() < 0.5))
            made += 1
    return cases


def _assemble(kind: str, corpus: str, subject: str, ctx: list[Candidate], claims: list[str], at: int,
              pair: tuple[str, str], bullets: bool) -> FaithCase:
    texts, spans = [], []
    for claim in pair:
        parts = claims[:at] + [claim] + claims[at:]
        joined = "\n".join(f"- {p}" for p in parts) if bullets else " ".join(parts)
        start = joined.index(claim)
        texts.append(joined)
        spans.append((start, start + len(claim)))
    return FaithCase(kind, corpus, subject, ctx, texts[1], texts[0], spans[1], spans[0])


def score(cases: list[FaithCase], facts: dict[str, IndexFacts]) -> dict:
    """Per kind: detection (the planted claim gets the kind's verdict), any flag on it, and twin false alarms."""
    per: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {"detected": [], "flagged": [], "twin": [], "twin_claim": []})
    misses: list[dict] = []
    for c in cases:
        checked = check_local(c.faulty, c.passages, facts[c.corpus])
        hit = [cl for s, cl in checked if s.start < c.span[1] and s.start + len(s.text) > c.span[0]]
        twin = check_local(c.twin, c.passages, facts[c.corpus])
        twin_hit = [cl for s, cl in twin if s.start < c.twin_span[1] and s.start + len(s.text) > c.twin_span[0]]
        row = per[c.kind]
        row["detected"].append(any(cl.verdict == EXPECTED[c.kind] for cl in hit))
        row["flagged"].append(any(cl.verdict != "verified" for cl in hit))
        row["twin"].append(any(cl.verdict != "verified" for _, cl in twin))
        row["twin_claim"].append(any(cl.verdict != "verified" for cl in twin_hit))
        if not row["detected"][-1] or row["twin"][-1]:
            misses.append({"kind": c.kind, "corpus": c.corpus, "faulty": c.faulty[c.span[0]:c.span[1]],
                           "verdicts": [(cl.verdict, cl.evidence) for cl in hit],
                           "twin_flags": [(cl.text, cl.verdict, cl.evidence) for _, cl in twin if cl.verdict != "verified"]})
    table = {k: {"n": len(v["detected"]), **{m: round(sum(x) / len(x), 3) for m, x in v.items()}} for k, v in per.items()}
    every = [x for v in per.values() for x in v["twin"]]
    return {"kinds": table, "twins": {"n": len(every), "false_alarm": round(sum(every) / max(1, len(every)), 3)},
            "misses": misses}


def extractive_check(corpus: _Corpus, facts: IndexFacts, n: int = 60, seed: int = 11) -> dict:
    """The extractive writer over the same kind of contexts: every claim should verify (it quotes its passages)."""
    rng = random.Random(seed)
    subjects = [d for d in _unique_defs(corpus.facts) if corpus.entity(d) is not None]
    claims = verified = whole = 0
    picked = rng.sample(subjects, min(n, len(subjects)))
    for d in picked:
        ctx = context(corpus, corpus.entity(d))
        answer = extractive(f"What does {d.name} do?", [RankedPassage(candidate=c, verdict="include", rank_score=0.0) for c in ctx])
        checked = check_local(answer.text, ctx, facts)
        claims += len(checked)
        ok = sum(c.verdict == "verified" for _, c in checked)
        verified += ok
        whole += ok == len(checked)
    return {"answers": len(picked), "claims": claims, "verified": round(verified / max(1, claims), 3),
            "answers_all_verified": round(whole / max(1, len(picked)), 3)}


def evaluate(roots: dict[str, Path], per_kind: int = 40) -> dict:
    corpora = {name: load(root, name) for name, root in roots.items()}
    facts = {name: c.index_facts() for name, c in corpora.items()}
    cases = [case for c in corpora.values() for case in generate(c, per_kind)]
    out = score(cases, facts)
    out["corpora"] = sorted(roots)
    out["extractive"] = {name: extractive_check(c, facts[name]) for name, c in corpora.items()}
    out["misses"] = out["misses"][:60]
    return out


def render(result: dict) -> str:
    lines = ["## Faithfulness guard (local), planted faults over " + ", ".join(result["corpora"]), "",
             "| fault kind | expected verdict | n | detected | flagged (any verdict but verified) | twin false alarm |",
             "|---|---|---|---|---|---|"]
    for kind, row in sorted(result["kinds"].items(), key=lambda kv: list(EXPECTED).index(kv[0])):
        lines.append(f"| {kind} | {EXPECTED[kind]} | {row['n']} | {row['detected']:.3f} | {row['flagged']:.3f} | {row['twin']:.3f} |")
    t = result["twins"]
    lines += ["", f"Faithful twins (the same answers, the fault replaced by the truth): {t['n']}, any claim flagged: "
              f"{t['false_alarm']:.3f}.", ""]
    for name, x in result["extractive"].items():
        lines.append(f"Extractive writer, {name}: {x['answers']} answers, {x['claims']} claims, verified {x['verified']:.3f}, "
                     f"answers all verified {x['answers_all_verified']:.3f}.")
    return "\n".join(lines) + "\n"

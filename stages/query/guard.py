"""Guard stage: check a written answer claim by claim against the passages its writer was given and the index.

Nobody else checks the dish: an LLM writer may cite a file that does not exist, name a function no passage shows,
or state a default the code contradicts. The local guard is deterministic and needs no model. Per claim, the first
rule that applies gives the verdict:

1. fabricated: a citation names a file no passage comes from (evidence says whether the index has it at all), or
   a line outside every passage of its file; a file mentioned in passing that the index lacks.
2. contradicted: the index's facts say otherwise (what the sentence states, `stages.query.statements`, checked by
   the premise checker: parameters, bases, return types, raised exceptions, the defining file), or a value it gives
   a parameter, attribute or constant differs from the code's initial value (`stages.query.values`).
3. fabricated: it names a code identifier that no passage contains.
4. verified when the cited passages (or, uncited, any passage) hold most of its words, else unsupported.

Fabricated and contradicted claims are marked inline, `[guard: <verdict>: <why>]` before the sentence, never
deleted: the reader sees what the writer said and why not to rely on it; the JSON keeps the writer's text.
"""

from __future__ import annotations

import builtins
import keyword
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from assay.stages.core.artifacts import Candidate, Claim, Entity, GuardReport, PremiseFinding
from assay.stages.index.languages import CONTAINER_KINDS
from assay.stages.index.source_text import source_lines
from assay.stages.index.tokens import tokenize
from assay.stages.query.claims import CODE_SPAN, Citation, Span, cuts_path, split_claims
from assay.stages.query.premise import check
from assay.stages.query.statements import stated_premises
from assay.stages.query.values import initial_values, value_claims

Resolver = Callable[[str], list[Entity]]
_CODE = CODE_SPAN  # read as the claim reader reads it: `` a`b `` is one span
_PRIVATE = re.compile(r"(?<![\w$])_+")
_PLAIN_NAME = re.compile(r"[\w$.]+(?:\(\))?")

SUPPORT_MIN = 0.6  # share of a claim's content words its passages must hold to verify it
NAME_WEIGHT = 2
# words about code rather than from it: a writer's own vocabulary, not evidence of anything
_META = frozenset(tokenize(
    "function functions method methods class classes parameter parameters argument arguments attribute attributes "
    "variable value values call calls called calling use uses used using defined defines define definition "
    "implementation implemented implements file files line lines module code passage part return returns returned "
    "take takes taking accept accepts given give gives instance object helper type types set sets default defaults "
    "also both each either just here there via whether docstring documented documents follows follow read reads says "
    "say states state described describes comment comments note notes see internally rely relies relying delegate "
    "delegates delegating invoke invokes invoked caller callers pass passes passed inherit inherits inherited extend "
    "extends subclass subclasses derive derives derived base parent initialise initialises initialised initialize "
    "initializes initialized start starts raise raises raised throw throws can may otherwise instead first then "
    "finally thus therefore hence short overall simply directly actually basically essentially"))
_NOT_NAMES = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(
    "self cls this super true false null undefined nil new const let var function async await def lambda yield "
    "string number boolean void any unknown never object int float str bool bytes dict list tuple set "
    "typing t args kwargs".split())


@dataclass
class IndexFacts:
    """What the index knows beyond the passages: definitions by name, and the files it holds (listed only when a
    citation falls outside the passages)."""

    resolve: Resolver
    list_files: Callable[[], Iterable[str]] = lambda: ()
    _files: set[str] | None = None

    @property
    def files(self) -> set[str]:
        if self._files is None:
            self._files = set(self.list_files())
        return self._files


@dataclass
class _Passages:
    """The passages a writer was given, read once per answer."""

    passages: list[Candidate]
    names: set[str] = field(default_factory=set)
    tokens: dict[str, set[str]] = field(default_factory=dict)
    flat: dict[str, str] = field(default_factory=dict)
    names_of: dict[str, set[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for c in self.passages:
            text = f"{c.entity} {c.file} {c.signature}\n{c.docstring}\n{c.body}"
            self.names_of[c.id] = set(re.findall(r"[A-Za-z_$][\w$]*", text))
            self.names |= self.names_of[c.id]
            self.flat[c.id] = " ".join(text.split())
            words = f"{c.entity} {c.kind} {c.file} {c.signature} {c.docstring} {c.body}"
            self.tokens[c.id] = set(tokenize(words)) | set(tokenize(_PRIVATE.sub(" ", words)))  # `_pool` holds "pool"

    def of_file(self, file: str) -> list[Candidate]:
        return [c for c in self.passages if same_file(c.file, file)]


def nfc(text: str) -> str:
    """One spelling per name: macOS stores `café` decomposed (NFD), a writer usually types it composed (NFC)."""
    return unicodedata.normalize("NFC", text)


def same_file(indexed: str, cited: str) -> bool:
    """A citation may shorten a path (`incremental.py` for `stages/index/incremental.py`), never lengthen it."""
    indexed, cited = nfc(indexed), re.sub(r"^(?:\.{0,2}/)+", "", nfc(cited))  # `./a.py`, not the dot of `.env.js`
    return indexed == cited or indexed.endswith("/" + cited)


def cut_files(files: Iterable[str]) -> list[str]:
    """The paths the claim reader cannot read whole: they hold a space or another character it ends a path at."""
    return [f for f in dict.fromkeys(files) if cuts_path(f)]


def _is_cut_tail(indexed: str, read: str) -> bool:
    """`read` is what the claim reader kept of `indexed`: its end, just after a character it cuts a path at."""
    indexed, read = nfc(indexed), nfc(read)
    cut = len(indexed) - len(read)
    return cut > 0 and indexed.endswith(read) and cuts_path(indexed[cut - 1])


def _spelled_out(c: Citation, text: str, cut: list[str]) -> Citation:
    """The citation of a path with a space (or another cut) in it (`my dir/a b.py:3`), which the claim reader cuts
    there (`b.py:3`): the file that ends with what it read and is spelled out whole, with the line, in the sentence."""
    tail, text = c.raw[len(c.file):], nfc(text)
    whole = next((f for f in cut if _is_cut_tail(f, c.file) and nfc(f) + tail in text), None)
    return c if whole is None else replace(c, file=whole, raw=whole + tail)


def covers(c: Candidate, cite: Citation) -> bool:
    """A citation's lines fall in what a passage shows: a file row shows its first line (its body is an outline), a
    class skeleton the lines before its first elided member."""
    return cite.line <= shown_end(c) and cite.end >= c.start_line


def shown_end(c: Candidate) -> int:
    if c.kind == "file":
        return c.start_line
    if c.kind in CONTAINER_KINDS:
        lines = source_lines(c.body)  # an offset here is a file line: a form feed starts none
        elided = next((i for i, line in enumerate(lines) if line.rstrip().endswith(" ...")), None)
        if elided is not None:
            return c.start_line + max(0, elided - 1)
    return c.end_line


def cite(c: Candidate | Entity) -> str:
    return f"{c.file}:{c.start_line}"


def check_local(text: str, passages: list[Candidate], facts: IndexFacts) -> list[tuple[Span, Claim]]:
    """Every claim of the answer with its local verdict."""
    ctx = _Passages(passages)
    return [(span, verdict(span, ctx, facts)) for span in split_claims(text)]


def verdict(span: Span, ctx: _Passages, facts: IndexFacts) -> Claim:
    spaced = cut_files(p.file for p in ctx.passages)
    # the receipts name the files as the verdicts read them: a path with a space whole, not the tail the reader cut
    whole = [_spelled_out(c, span.text, spaced) for c in span.citations]
    whole = [c if ctx.of_file(c.file) else _spelled_out(c, span.text, cut_files(facts.files)) for c in whole]

    def claim(v: str, evidence: str, source: str = "") -> Claim:
        return Claim(text=span.text, citations=[c.raw for c in whole], verdict=v, evidence=evidence,  # type: ignore[arg-type]
                     source=source)

    cited: list[Candidate] = []
    for c in whole:
        here = ctx.of_file(c.file)
        if not here:
            known = [f for f in facts.files if same_file(f, c.file)]
            why = (f"`{c.file}` is in the index but no passage given to the writer comes from it" if known
                   else f"there is no file `{c.file}` in the index")
            return claim("fabricated", why)
        hit = [p for p in here if covers(p, c)]
        if not hit:
            shown = ", ".join(f"{p.start_line}-{shown_end(p)}" for p in here[:4])  # what the writer saw, not the span
            return claim("fabricated", f"line {c.line} of `{here[0].file}` is outside the passages given to the writer "
                                       f"(lines {shown})")
        cited += hit
    for f in span.files:  # a path a passage itself mentions (a config value, a docstring) is not invented
        if any(_is_cut_tail(x, f) and nfc(x) in nfc(span.text) for x in spaced):
            continue  # the tail of a passage's path with a space (or another cut) in it (`my dir/a b.py`), named whole
        quoted = any(f in text for text in ctx.flat.values())
        if not ctx.of_file(f) and not quoted and not any(same_file(x, f) for x in facts.files):
            return claim("fabricated", f"there is no file `{f}` in the index")
    checked = fact_check(span, ctx, facts)
    if checked is not None and checked[0] == "contradicted":
        return claim(*checked)
    quoted = {n for c in span.code if _verbatim(c, ctx) for n in re.findall(r"[A-Za-z_$][\w$.]*", c)}
    missing = [n for n in span.names if _is_name(n) and n not in quoted and not _known(n, ctx.names)]
    if missing:
        defs = [e for e in facts.resolve(missing[0].split(".")[-1]) if e.part == 0]
        where = (f"it is defined at {cite(defs[0])}, but no passage given to the writer names it" if defs
                 else "it is not defined anywhere in the index")
        return claim("fabricated", f"`{missing[0]}` is in none of the passages: {where}", cite(defs[0]) if defs else "")
    if checked is not None:
        return claim(*checked)
    best, share = _best_support(span, cited or ctx.passages, ctx)
    if best is not None and share >= SUPPORT_MIN:
        how = "supported by" if cited else "uncited; supported by"
        return claim("verified", f"{how} {cite(best)} [{best.entity}]", cite(best))
    if cited:
        return claim("unsupported", f"the cited passage {cite(cited[0])} [{cited[0].entity}] does not state it "
                                    f"({share:.0%} of its words found)", cite(cited[0]))
    return claim("unsupported", "no passage given to the writer states it")


def _best_support(span: Span, pool: list[Candidate], ctx: _Passages) -> tuple[Candidate | None, float]:
    """The passage holding the largest share of what the claim says: the words of its prose (minus the writer's own
    vocabulary) and of the code it quotes, and the names it uses."""
    words = set(tokenize(_CODE.sub(" ", span.prose))) - set(tokenize(" ".join(span.names))) - _META
    words = {w for w in words if not w.isdigit()}
    need = words | {t for c in span.code if not _PLAIN_NAME.fullmatch(c) for t in tokenize(c)}
    names = {n.rstrip("()") for n in span.plain if _is_name(n)}
    best, share = None, 0.0
    for p in pool:
        # a name the passage holds says as much as a word of prose, twice over (an explanation of code is mostly
        # names), but the passage's own name says nothing: every summary of it, true or not, carries that
        own = {p.entity, *p.entity.split(".")}
        others = [n for n in names if n not in own]
        found = len(need & ctx.tokens[p.id]) + NAME_WEIGHT * sum(_known(n, ctx.names_of[p.id]) for n in others)
        total = len(need) + NAME_WEIGHT * len(others)
        s = found / total if total else 1.0
        if best is None or s > share:
            best, share = p, s
    return best, share


def _verbatim(code: str, ctx: _Passages) -> bool:
    """Quoted code found as it stands in a passage (a signature cut short included) invents no name."""
    flat = " ".join(code.split())
    return len(flat) > 3 and any(flat in text for text in ctx.flat.values())


def _is_name(name: str) -> bool:
    parts = [p for p in name.split(".") if p]
    return bool(parts) and not all(p in _NOT_NAMES or len(p) < 2 for p in parts)


def _known(name: str, names: set[str]) -> bool:
    return all(p in names or p in _NOT_NAMES or len(p) < 2 for p in name.rstrip("()").split(".") if p)


def fact_check(span: Span, ctx: _Passages, facts: IndexFacts) -> tuple[str, str, str] | None:
    """(verdict, evidence, source) from the index's facts and the code's values: contradicted when any says
    otherwise; verified when one confirms the claim from a definition the writer was given; None when none speaks."""
    # quoted code states nothing about itself: names stay, code goes
    premises = stated_premises(_CODE.sub(lambda m: m.group(0) if _PLAIN_NAME.fullmatch(m.group("code").strip()) else " ",
                                         span.prose))
    confirmed: list[tuple[str, str, str]] = []
    for f in check(premises, facts.resolve):
        if f.holds:
            subject = f.premise.subject.split(".")[-1]
            if _shown(ctx, f.file, f.line) or any(c.entity.split(".")[-1] == subject for c in ctx.passages):
                where = f"{f.file}:{f.line}"
                confirmed.append(("verified", f"the index confirms it: {f.premise.text} ({where})", where))
        elif not _callee_may_raise(f, ctx):
            return "contradicted", f.fact, f"{f.file}:{f.line}"
    for name, owner, value in value_claims(span):
        found = initial_values(name, owner, ctx.passages, facts.resolve)
        same = [v for v in found if v.matches(value)]
        if same:
            file, _, line = same[0].source.rpartition(":")
            if _shown(ctx, file, int(line)):
                confirmed.append(("verified", f"`{same[0].owner}` sets `{name}` to `{same[0].value}` ({same[0].source})",
                                  same[0].source))
        elif found and all(v.simple for v in found):  # an expression may evaluate to it: doubt is not contradiction
            v = found[0]
            return "contradicted", f"`{v.owner}` sets `{name}` to `{v.value}`, not `{value}` ({v.source})", v.source
    return confirmed[0] if confirmed else None


def _shown(ctx: _Passages, file: str, line: int) -> bool:
    return any(c.file == file and c.start_line <= line <= c.end_line for c in ctx.passages)


def _callee_may_raise(f: PremiseFinding, ctx: _Passages) -> bool:
    """A writer may credit a function with what a callee it was shown raises."""
    return f.premise.kind == "raises" and f.premise.value.split(".")[-1] in ctx.names


def mark(text: str, checked: list[tuple[Span, Claim]]) -> tuple[str, int]:
    """The answer with each fabricated or contradicted claim prefixed by `[guard: verdict: why]`."""
    out, last, marked = [], 0, 0
    for span, c in sorted(checked, key=lambda pair: pair[0].start):
        if c.verdict not in ("fabricated", "contradicted"):
            continue
        out += [text[last : span.start], f"[guard: {c.verdict}: {c.evidence}] "]
        last = span.start
        marked += 1
    return "".join(out) + text[last:], marked


def grounded(claims: Iterable[Claim]) -> float | None:
    claims = list(claims)
    return round(sum(c.verdict == "verified" for c in claims) / len(claims), 3) if claims else None


def finish(text: str, checked: list[tuple[Span, Claim]], **fields) -> tuple[str, GuardReport]:
    """The marked text and the report of a finished check (`fields`: backend, model, failure, calls, usage)."""
    marked_text, marked = mark(text, checked)
    claims = [c for _, c in checked]
    report = GuardReport(claims=claims, grounded=grounded(claims), marked=marked, original=text if marked else "", **fields)
    return marked_text, report


# -- shared by the model guards (guard_llm, guard_systemone) --------------------------------------------------------

VERDICTS = ("verified", "unsupported", "contradicted", "fabricated")
PROVEN = ("fabricated", "contradicted")  # local verdicts a model cannot overturn
VERDICT_CRITERIA = {  # what each verdict means, as every model guard is told
    "verified": "the cited passage (for an uncited claim: some passage) states or directly shows it",
    "unsupported": "no passage supports it, though none says otherwise",
    "contradicted": "a passage or a CHECKED FACT says otherwise (a default or other value, a base class, a parameter, a "
                    "return type, a raised exception, the defining file)",
    "fabricated": "it cites a file or line no passage comes from, or names a function, class or variable no passage "
                  "contains",
}


def proofs(checked: list[tuple[Span, Claim]]) -> list[str]:
    """What the local guard proved, given to a model guard as checked facts: true, and useful for other claims."""
    return [c.evidence for _, c in checked if c.verdict in PROVEN]


def merge(checked: list[tuple[Span, Claim]], verdicts: dict[int, tuple[str, str]], backend: str) -> list[tuple[Span, Claim]]:
    """The model's verdict per claim, except where the local guard proved the claim fabricated or contradicted."""
    out = []
    for i, (span, local) in enumerate(checked):
        if local.verdict in PROVEN or i not in verdicts:
            out.append((span, local))
            continue
        verdict, evidence = verdicts[i]
        out.append((span, local.model_copy(update={"verdict": verdict, "evidence": evidence or local.evidence, "by": backend})))
    return out

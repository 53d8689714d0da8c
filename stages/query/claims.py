"""Claims of an answer: its sentences, each with the citations, code names, code spans and files it carries.

The faithfulness guard checks sentences, not whole answers: a writer mixes true and invented sentences, and a
verdict per sentence says which to distrust. A citation belongs to the sentence it stands in (one standing alone,
"(a.py:3)", to the sentence before it). Code blocks, headings, refusals and sentences with nothing to check (no
citation, no code name, no file, no value: "In short:") are not claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_EXT = r"[A-Za-z][A-Za-z0-9]{0,7}"
CODE_EXTENSIONS = ("py", "pyi", "js", "jsx", "ts", "tsx", "mjs", "cjs", "go", "rs", "java", "kt", "rb", "php", "c", "h", "cc",
                   "cpp", "hpp", "cs", "swift", "scala", "dart", "lua", "ex", "exs", "hs", "zig", "sh", "m")
# Where prose cuts a path: white space, `/`, the ASCII marks that wrap or follow a path in prose, and Unicode
# punctuation (curly quotes, dashes, CJK brackets). Everything else is read as part of the path the index may hold:
# `+` (SvelteKit `+page.ts`), `@` (npm `@scope/pkg`), `\`, `$`, `%`, letters in any script and combining marks (NFD).
PATH_CUT = ("\\s/!\"#&'()*,:;<=>?\\[\\]^`{|}~\x00-\x1f\x7f\u00a1\u00a7\u00ab\u00b6\u00b7\u00bb\u00bf"
            "\u2000-\u206f\u3000-\u303f\ufe30-\ufe4f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65")
_CH = f"[^{PATH_CUT}]"
_CUT_CHAR = re.compile(f"[{PATH_CUT}]")
_PART = rf"(?:{_CH}|\({_CH}*\)|\[\[?{_CH}*\]\]?)"  # a bracketed part closed within the name: `(auth)`, `[id]`, `[[...slug]]`
_PATH_START = rf"(?<!{_CH})(?<![/)\]])"  # never from the middle of a path


def path_body(ext: str) -> str:
    """A path (folders, then a name) ending in one of these extensions, as every reader of prose reads one: the
    question grammar and the answer's statements must see `src/routes/+page.ts` whole, as the guard does."""
    return rf"(?:{_PART}+/)*{_PART}+\.(?:{ext})"


def _path(ext: str) -> str:
    """A path that starts where a path can start."""
    return _PATH_START + path_body(ext)


# `a/b.py:12`, `b.py:12-20`, `b.py#L12`, `b.py line 12`
_CITE = re.compile(rf"(?P<file>{_path(_EXT)})"
                   r"(?::|#L|,?\s+lines?\s+)(?P<line>\d+)(?:\s*(?:-|–|to)\s*L?(?P<end>\d+))?")
# a file named in passing: it ends where the path does (a sentence's full stop is not part of it)
_FILE = re.compile(_path("|".join(CODE_EXTENSIONS)) + rf"(?!/)(?=\.*(?:[{PATH_CUT}]|$))")
# inline code as CommonMark reads it: a run of n backticks up to the next run of exactly n, so a span fenced by
# more backticks (`` a`b ``, how synthesize.code_span quotes code and names holding backticks) is read whole
CODE_SPAN = re.compile(r"(?<!`)(?P<fence>`+)(?!`)(?P<code>[^\n]*?[^`\n])(?P=fence)(?!`)")
_STRING = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_IDENT = re.compile(r"(?<![\w$.-])[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
# code-shaped words in prose: snake_case, camelCase, CamelCase with two humps, dotted paths with a code-shaped part, calls
_CODEISH = re.compile(r"(?<![\w$.-])(?:[A-Za-z_$][\w$]*\.)*(?:[A-Za-z$][\w$]*_[\w$]+|_[\w$]+|[a-z][a-z0-9]*[A-Z][\w$]*|"
                      r"[A-Z][a-z0-9]+[A-Z][\w$]*|[A-Za-z_$][\w$]*(?=\(\)))(?:\.[A-Za-z_$][\w$]*)*")
_PLAIN = re.compile(r"[A-Za-z_$][\w$.]*(?:\(\))?")
_VALUE = re.compile(r"\b(?:True|False|None|null|undefined|nil)\b|(?<![\w.])-?\d+(?:\.\d+)?\b|'[^'\n]*'|\"[^\"\n]*\"")
_BULLET = re.compile(r"^\s*(?:[-*+>]\s+|\d+[.)]\s+)?")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "approx", "resp"})
# a sentence about the passages rather than the code ("I don't have this information", "the passages do not show ...")
_REFUSAL = re.compile(r"\bI\s+(?:do\s+not|don't|cannot|can't)\s+(?:have|know|see|find|tell)\b|"
                      r"\b(?:passages?|context|snippets?|excerpts?)\b[^.]{0,40}\b(?:do(?:es)?\s+not|don't|doesn't|never)\s+"
                      r"(?:show|say|state|mention|include|contain|answer|define|cover)", re.I)
_NON_PROSE = re.compile(r"[\s(),.;:\[\]-]+|\b(?:see|in|at|from|cf|and|lines?)\b", re.I)


def cuts_path(text: str) -> bool:
    """Whether the claim reader ends a path at a character of `text` (so a citation holds only what follows it);
    `/` only separates a path's parts."""
    return bool(_CUT_CHAR.search(text.replace("/", "")))


def code_spans(text: str) -> list[str]:
    """The code of each inline code span, its padding stripped."""
    return [m.group("code").strip() for m in CODE_SPAN.finditer(text)]


@dataclass(frozen=True)
class Citation:
    file: str
    line: int
    end: int
    raw: str


@dataclass
class Span:
    """One claim: its text, where it starts in the answer, and what it names."""

    text: str
    start: int
    citations: list[Citation] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    plain: list[str] = field(default_factory=list)  # names written as names (`x`, `a.b()`, snake_case), not inside code
    code: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    prose: str = ""

    @property
    def cited(self) -> list[str]:
        return [c.raw for c in self.citations]


def split_claims(text: str) -> list[Span]:
    """Every claim of an answer, in order."""
    spans: list[Span] = []
    offset = 0
    fenced = False
    for line in text.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not stripped or stripped.startswith("#"):
            continue
        lead = _BULLET.match(line)
        body = line[lead.end() if lead else 0 :].rstrip("\n")
        base = start + (lead.end() if lead else 0)
        for s, e in _sentences(body):
            span = read_span(body[s:e], base + s)
            if spans and not _has_prose(span) and span.citations:
                spans[-1].citations.extend(span.citations)  # "(a.py:3)" standing alone cites the sentence before
                continue
            spans.append(span)
    return [s for s in spans if _checkable(s)]


def _sentences(line: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: split after . ! ? followed by a space and not inside a code span."""
    out: list[tuple[int, int]] = []
    start = 0
    code = {i for m in CODE_SPAN.finditer(line) for i in range(m.start(), m.end())}
    for i, ch in enumerate(line):
        if ch in ".!?" and i not in code and (i + 1 == len(line) or line[i + 1] == " "):
            word = re.search(r"([\w.]+)$", line[start:i])
            rest = line[i + 1 :].lstrip()
            if word and word.group(1).lower() in _ABBREVIATIONS or rest[:1].islower():
                continue
            out.append((start, i + 1))
            start = i + 1
    if line[start:].strip():
        out.append((start, len(line)))
    return [(s + len(line[s:e]) - len(line[s:e].lstrip()), e) for s, e in out if line[s:e].strip()]


def read_span(text: str, start: int) -> Span:
    """What one sentence cites and names."""
    citations = [Citation(m.group("file"), int(m.group("line")), int(m.group("end") or m.group("line")), m.group(0))
                 for m in _CITE.finditer(text)]
    prose = _CITE.sub(" ", text)
    files = [m.group(0) for m in _FILE.finditer(prose)]
    prose_no_files = _FILE.sub(" ", prose)
    code = code_spans(prose_no_files)
    names: list[str] = []
    for c in code:
        if "://" in c:
            continue
        names += [m.group(0) for m in _IDENT.finditer(_STRING.sub(" ", c)) if not c[max(0, m.start() - 1) : m.start()] == "-"]
    outside = CODE_SPAN.sub(" ", prose_no_files)
    prose_names = [m.group(0) for m in _CODEISH.finditer(_STRING.sub(" ", outside))
                   if m.group(0).lower().rstrip(".") not in _ABBREVIATIONS]
    plain = [c.removesuffix("()") for c in code if _PLAIN.fullmatch(c)] + prose_names
    return Span(text=text.strip(), start=start, citations=citations, names=list(dict.fromkeys(names + prose_names)),
                plain=list(dict.fromkeys(plain)), code=code, files=list(dict.fromkeys(files)), prose=prose)


def _has_prose(span: Span) -> bool:
    return bool(_NON_PROSE.sub("", span.prose))


def _checkable(span: Span) -> bool:
    if _REFUSAL.search(span.text):
        return False
    return bool(span.citations or span.names or span.files or _VALUE.search(span.prose))

"""Search on languages the dev sets lack: a registry package's Kotlin, Swift, C#, Java..., queried eight ways.

    python -m tests.benchmarks.bench_languages [--package expo-modules-core@1.12.26] [--languages kotlin,swift]
    python -m tests.benchmarks.bench_languages --registry pypi --package pythonnet@3.2.1 --languages csharp
    python -m tests.benchmarks.bench_languages --registry debian --package golang-github-gin-gonic-gin-dev@1.8.1-1 --languages go
    python -m tests.benchmarks.bench_languages --registry wheel --package ziglang@0.17.1 --include ziglang/lib/std/json,... --languages zig
    python -m tests.benchmarks.bench_languages --registry debian-source --package elixir-lang@1.14.0.dfsg-2 --include elixir-1.14.0/lib --languages elixir

The dev sets are Python, JavaScript and TypeScript. This indexes a registry package that ships other languages
(with the defaults; Debian's `-dev` and library packages carry Go, Rust, Ruby, PHP, Lua, Haskell and shell
sources; the `ziglang` wheel carries Zig's standard library, of which `--include` keeps some folders; a Debian
source package's upstream tarball, `debian-source`, carries what a binary package ships compiled: Elixir) and
samples definitions of those languages (seed 7, 60 per row): a *symbol* query is the definition's own name
(names defined once only); a *doc sentence* query is the first sentence of its doc comment (left out
when under five words, such as a `//// ZodMap ////` banner; each definition whose doc opens with it counts); a
*famous name* is
one of the 30 names used by the most passages (`Context` in gin), where any of its definitions counts; an
*Owner.name* query names a member as a user does (`Lint.each`); a *file stem* asks for a module (`params` for
`params.rb`), where any passage of the file counts; an *error message* is a message the code raises, throws,
logs or fails a test with, pasted as a user sees it (placeholders filled with values); a *location* is a stack
frame or compiler message that names a definition's file and first line; a *split message* is an error
message written over several lines (literals side by side, or joined by `+`), pasted whole. `--rows` picks rows,
`--ablate` adds Assay with rank signals switched off, `--misses ROW` prints that row's misses. Each prints hit@1,
hit@10 and MRR of that definition for `assay search` beside the semble suite's in-run baseline (bm25s, stock
tokenizer, over the same passages). It prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from tests.benchmarks.common import CACHE


def unpack(spec: str, registry: str = "npm", reuse: bool = False, include: tuple[str, ...] = ()) -> Path:
    """Fetch the package once (`npm pack`, a PyPI sdist or wheel, or a Debian package), then a fresh copy of its
    tree per run (or the last run's copy and index, with `reuse`); a wheel's or tarball's members under `include` only."""
    from assay.stages.evaluate.semble import Source, download

    package, version = spec.rsplit("@", 1)
    target = CACHE / "work" / f"{package}-{version}"
    if reuse and (target / ".assay" / "manifest.json").exists():
        return target
    if registry == "debian":
        archive = debian_download(package, version)
    elif registry == "debian-source":
        archive = debian_source_download(package, version)
    elif registry == "wheel":
        archive = wheel_download(package, version)
    else:
        archive = download(Source(registry, package, version), CACHE / "downloads")
    if target.exists():
        import shutil

        shutil.rmtree(target)
    target.mkdir(parents=True)
    if registry == "debian":
        subprocess.run(["dpkg-deb", "-x", str(archive), str(target)], check=True)
        return target
    if registry == "wheel":
        with zipfile.ZipFile(archive) as wheel:
            wheel.extractall(target, [m for m in wheel.namelist() if not include or m.startswith(include)])
        return target
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if not include or m.name.startswith(include)]
        tar.extractall(target, members, filter="data")
    return target


def wheel_download(package: str, version: str) -> Path:
    """`pip download` of the wheel for this machine, once."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", f"{package}=={version}", "-d", ".", "-q"]
    return _fetch_once(f"{package.replace('-', '_')}-{version}-*.whl", command, f"the {package} {version} wheel")


def debian_download(package: str, version: str) -> Path:
    """`apt-get download`, once: the .deb is named `package_version_arch.deb`, an epoch's colon as `%3a`."""
    return _fetch_once(f"{package}_{version.replace(':', '%3a')}_*.deb", ["apt-get", "download", f"{package}={version}"],
                       f"{package} {version} from Debian")


DEBIAN_POOL = "http://deb.debian.org/debian/pool/main"
_ORIG_TARBALL = re.compile(r"\s(\S+\.orig\.tar\.\w+)$", re.MULTILINE)


def debian_source_download(package: str, version: str) -> Path:
    """A Debian source package's upstream tarball (`.orig.tar.*`, named in its `.dsc`), once, from the pool."""
    folder = f"{DEBIAN_POOL}/{package[:4] if package.startswith('lib') else package[0]}/{package}"
    upstream = version.split(":")[-1].rsplit("-", 1)[0]
    fetch = [sys.executable, "-c", "import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])"]
    dsc = _fetch_once(f"{package}_{upstream}-*.dsc", [*fetch, f"{folder}/{package}_{version}.dsc", f"{package}_{version}.dsc"],
                      f"{package} {version}'s source description from Debian")
    found = _ORIG_TARBALL.search(dsc.read_text(encoding="utf-8", errors="replace"))
    if not found:
        raise SystemExit(f"{dsc.name} names no upstream tarball")
    name = found.group(1)
    return _fetch_once(name, [*fetch, f"{folder}/{name}", name], f"{name} from Debian")


def _fetch_once(pattern: str, command: list[str], what: str) -> Path:
    """The download matching `pattern`, made by `command` (run in the downloads folder) unless one is there."""
    downloads = CACHE / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    found = sorted(downloads.glob(pattern))
    if not found:
        done = subprocess.run(command, cwd=downloads, capture_output=True, text=True)
        found = sorted(downloads.glob(pattern))
        if done.returncode != 0 or not found:
            raise SystemExit(f"could not download {what}: {(done.stderr or 'nothing written').strip().splitlines()[-1]}")
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--registry", choices=("npm", "pypi", "wheel", "debian", "debian-source"), default="npm")
    parser.add_argument("--package", default="expo-modules-core@1.12.26", help="name@version")
    parser.add_argument("--languages", default="kotlin,swift")
    parser.add_argument("--include", default="", help="a wheel's or tarball's folders to keep, comma-separated (default: all)")
    parser.add_argument("--per-row", type=int, default=60)
    parser.add_argument("--rows", default="", help="only these rows, comma-separated (`error message`); a row drawn alone gets other samples")
    parser.add_argument("--misses", default="", help="print the queries of this row (`error message`) that Assay ranks below first")
    parser.add_argument("--ablate", default="", help="rank signals to switch off, one configuration each (`phrase,penalties`)")
    parser.add_argument("--reuse", action="store_true", help="query the last run's copy of this package (an incremental index run, so a parser change re-parses it)")
    args = parser.parse_args()

    from assay.flows.index import run_index
    from assay.stages.core.config import Settings
    from assay.stages.evaluate.runs import plain_bm25
    from assay.stages.index.store import Catalog
    from assay.stages.query.rank import RankConfig
    from assay.stages.query.retrieve import search
    from assay.stages.query.synthesize import first_sentence

    root = unpack(args.package, args.registry, args.reuse, tuple(p for p in args.include.split(",") if p))
    settings = Settings(orchestration="direct")
    run_index(str(root), settings)  # with `reuse`, an incremental run that finds nothing changed
    languages = set(args.languages.split(","))
    entities = list(Catalog(root).all())
    defs = [e for e in entities if e.language in languages and e.part == 0 and e.kind not in ("window", "file")]
    by_name: dict[str, int] = {}
    for e in defs:
        by_name[e.name] = by_name.get(e.name, 0) + 1
    rng = random.Random(7)
    symbols = [e for e in defs if by_name[e.name] == 1 and len(e.name) > 3]
    documented = [e for e in defs if len(e.docstring.split()) >= 5]
    said: dict[str, set[tuple[str, str]]] = {}  # a doc sentence, and every definition whose doc opens with it
    for e in entities:  # in any language: expo's Objective-C protocol and its Java interface share their docs
        sentence = first_sentence(e.docstring)
        if len(re.findall(r"[A-Za-z]{2,}", sentence)) >= 5:  # a sentence, not a `//////// ZodMap ////` banner
            said.setdefault(sentence, set()).add((e.file, e.qualname))
    samplers = {
        "symbol": lambda: [(e.name, {(e.file, e.qualname)}) for e in rng.sample(symbols, min(args.per_row, len(symbols)))],
        "doc sentence": lambda: [(sentence, said[sentence]) for e in rng.sample(documented, min(args.per_row, len(documented)))
                                 if (sentence := first_sentence(e.docstring)) in said],
        "famous name": lambda: famous_names(entities, languages, args.per_row // 2),
        "Owner.name": lambda: owned_names(defs, rng, args.per_row // 2),
        "file stem": lambda: file_stems(entities, languages, rng, args.per_row // 2),
        "error message": lambda: error_messages(entities, languages, rng, args.per_row),
        "location": lambda: pasted_locations(defs, rng, args.per_row // 2),
        "split message": lambda: split_messages(entities, languages, rng, args.per_row // 2),
    }
    chosen = [r.strip() for r in args.rows.split(",")] if args.rows else list(samplers)
    rows = [(label, samplers[label]()) for label in samplers if label in chosen]  # in this order: one seed, same samples
    print(f"{args.package}: {len(defs)} definitions in {', '.join(sorted(languages))}")
    print(f"{'query':13s} {'configuration':24s} {'n':>3s} {'hit@1':>6s} {'hit@10':>6s} {'MRR':>6s}")
    baseline = plain_bm25(entities)
    def assay(ranking: RankConfig | None = None):
        return lambda q: [(c.file, c.entity) for c in search(root, q, settings, k=10, ranking=ranking).candidates]

    searches = (("Assay search", assay()),
                *((f"Assay - {signal}", assay(RankConfig(**{signal: False}))) for signal in args.ablate.split(",") if signal),
                ("plain BM25 (in-run)", lambda q: list(dict.fromkeys((e.file, e.qualname) for e in baseline(q, 100)))[:10]))
    for label, sample in rows:
        if not sample:
            continue  # C has no members: no Owner.name row
        for name, run in searches:
            ranks = []
            for query, wanted in sample:
                found = run(query)
                ranks.append(next((i for i, key in enumerate(found, 1) if key in wanted), None))
                if args.misses == label and name == "Assay search" and ranks[-1] != 1:
                    print(f"  miss (rank {ranks[-1]}): {query!r} wants {sorted(wanted)[:2]}, first {found[:1]}")
            hit1 = statistics.mean(r == 1 for r in ranks)
            hit10 = statistics.mean(r is not None for r in ranks)
            mrr = statistics.mean(1 / r if r else 0.0 for r in ranks)
            print(f"{label:13s} {name:24s} {len(ranks):3d} {hit1:6.3f} {hit10:6.3f} {mrr:6.3f}")


def file_stems(entities: list, languages: set[str], rng: random.Random, n: int) -> list[tuple[str, set[tuple[str, str]]]]:
    """n files asked for by their stem, as a benchmark asks for a module (`response` for express's `response.js`):
    lower-case word stems of 4 letters or more that one file of these languages has; any passage of it counts."""
    from pathlib import PurePosixPath

    by_stem: dict[str, set[str]] = {}
    for e in entities:
        if e.language in languages:
            by_stem.setdefault(PurePosixPath(e.file).stem, set()).add(e.file)
    stems = sorted(stem for stem, files in by_stem.items() if len(files) == 1 and re.fullmatch(r"[a-z]{4,}", stem))
    passages: dict[str, set[tuple[str, str]]] = {}
    for e in entities:
        passages.setdefault(e.file, set()).add((e.file, e.qualname))
    return [(stem, passages[next(iter(by_stem[stem]))]) for stem in rng.sample(stems, min(n, len(stems)))]


def owned_names(defs: list, rng: random.Random, n: int) -> list[tuple[str, set[tuple[str, str]]]]:
    """n functions and methods named as a user names a member (`Lint.each`, `DebugUtil.Debug`): the last part of the
    owner, a dot, the name; only pairs that name one definition in these languages."""
    def pair(e) -> str:
        return f"{re.split(r'[.:]+', e.parent)[-1]}.{e.name}"

    members = [e for e in defs if e.kind in ("function", "method") and e.parent and len(e.name) > 2
               and re.fullmatch(r"[A-Za-z_$][\w$]*", e.name)]
    count: dict[str, int] = {}
    for e in members:
        count[pair(e)] = count.get(pair(e), 0) + 1
    unique = [e for e in members if count[pair(e)] == 1]
    return [(pair(e), {(e.file, e.qualname)}) for e in rng.sample(unique, min(n, len(unique)))]


# a line that raises, throws, logs or fails with a message (outside its string literals): `raise ValueError(`,
# `throw new TypeError(`, `errors.New(`, `t.Errorf(`, `panic!(`, `log.Fatalf(`, `warn(`, Perl-ish `die`
_ERROR_LINE = re.compile(r"raise|throw|panic|error|exception|fatal|fail|abort|\bdie\b|warn|\berr\b", re.IGNORECASE)
_LITERAL = re.compile(r"""(["'`])((?:(?!\1)[^\\\n]|\\.){12,200})\1""")
# what a message's values are written as: `{name}`, `%s`, `%(name)s`, `${x}`, `#{x}`, `$name`, Swift's `\(x)`
_PLACEHOLDER = re.compile(r"#?\{[^}]*\}|%(?:\([^)]*\))?[-#0-9.]*[a-zA-Z]|\$\{[^}]*\}|\$\w+|\\\([^)]*\)")
_MID_WORD = re.compile(r"(?:^|[^\w])(?![fbruFBRU]{1,2}$)\w+$")  # text ending in a word (not a string prefix: f, b, r, u)
_VALUES = ("foo", "42", "/tmp/data.txt", "my_value", "3.5")


def error_messages(entities: list, languages: set[str], rng: random.Random, n: int) -> list[tuple[str, set[tuple[str, str]]]]:
    """n messages that code of these languages raises, throws, logs or fails with, as a user pastes them: escapes
    as spaces, each placeholder filled with a value the code does not have (`42`, `/tmp/data.txt`), at least four
    words of the code's own. Every entity with a string that could read so counts (the string's own words, in
    order, all in the pasted message), on an error line or not: a test that expects `invalid type for lines2: dict`
    and the code that raises `f"invalid type for lines2: {type(lines).__name__}"` both say it, and so does
    `msg = f"file or directory not found: {arg}"` before a `raise UsageError(msg)`."""
    said: dict[str, set[tuple[str, str]]] = {}  # messages of error lines: what is sampled
    written: dict[str, set[tuple[str, str]]] = {}  # every literal of four words or more: who else could say one
    language: dict[tuple[str, str], str] = {}
    for e in entities:
        if e.kind == "file":
            continue
        language[(e.file, e.qualname)] = e.language
        for line in e.body.splitlines():
            error_line = bool(_ERROR_LINE.search(re.sub(r"([\"'`]).*?\1", "", line)))
            for m in _LITERAL.finditer(line):
                if _MID_WORD.search(line[:m.start()]):
                    continue  # the apostrophe of "doesn't", not a quote
                template = re.sub(r"\\[nrt]", " ", m.group(2))
                if len(re.findall(r"[A-Za-z]{2,}", _PLACEHOLDER.sub(" ", template))) >= 4:
                    written.setdefault(template, set()).add((e.file, e.qualname))
                    if error_line:
                        said.setdefault(template, set()).add((e.file, e.qualname))
    once = sorted(t for t, keys in said.items() if len(written[t]) == 1 and language[next(iter(keys))] in languages)
    words = {t: _words(_PLACEHOLDER.sub(" ", t)) for t in written}
    out = []
    for template in rng.sample(once, min(n, len(once))):
        message = " ".join(_PLACEHOLDER.sub(lambda _: rng.choice(_VALUES), template).split()).strip(" :.,")
        pasted = _words(message)
        sayers = {key for t, keys in written.items() if _in_order(words[t], pasted) for key in keys}
        if sayers:  # a value glued to a word ("{indent}Too few") makes a message no code says
            out.append((message, sayers))
    return out


_LITERAL_ANY = re.compile(r"""(["'`])((?:(?!\1)[^\\\n]|\\.)*)\1""")
_GOES_ON = re.compile(r"""\s*(?:\+|\.\.|\.|\\)?\s*$""")  # after a line's last literal: the statement goes on
_OPENS = re.compile(r"""^\s*(?:\+|\.\.|\.)?\s*(?:[fbruFBRU]{1,2}|@|\$)?$""")  # before a line's first literal: it continues one


def split_messages(entities: list, languages: set[str], rng: random.Random, n: int) -> list[tuple[str, set[tuple[str, str]]]]:
    """n messages written over two or more lines (literals side by side, which Python, C and C++ join, or joined
    by `+`, `.`, `..` or a backslash) on an error line or just below one, pasted whole as a user sees them.
    Sayers as for `error_messages`: every literal of four words or more whose words the message holds in order,
    and the entity that writes the whole message."""
    said: dict[str, set[tuple[str, str]]] = {}
    written: dict[str, set[tuple[str, str]]] = {}
    language: dict[tuple[str, str], str] = {}
    for e in entities:
        if e.kind == "file":
            continue
        key = (e.file, e.qualname)
        language[key] = e.language
        lines = e.body.splitlines()
        run: list[str] = []  # the parts of the message being read, and the line it starts on
        first = 0

        def flush() -> None:
            if len(run) >= 2:
                template = re.sub(r"\\[nrt]", " ", "".join(run))
                around = re.sub(r"([\"'`]).*?\1", "", " ".join(lines[max(0, first - 1): first + 1]))
                if _ERROR_LINE.search(around) and len(re.findall(r"[A-Za-z]{2,}", _PLACEHOLDER.sub(" ", template))) >= 6:
                    said.setdefault(template, set()).add(key)

        for i, line in enumerate(lines):
            found = list(_LITERAL_ANY.finditer(line))
            if run and found and _OPENS.match(line[: found[0].start()]):
                run.append(found[0].group(2))
            else:
                flush()
                run, first = ([found[-1].group(2)], i) if found else ([], i)
            for m in found:
                template = re.sub(r"\\[nrt]", " ", m.group(2))
                if len(re.findall(r"[A-Za-z]{2,}", _PLACEHOLDER.sub(" ", template))) >= 4:
                    written.setdefault(template, set()).add(key)
            if not (found and _GOES_ON.match(line, found[-1].end())):
                flush()  # the message ends on this line (`"...")`)
                run = []
        flush()
    once = sorted(t for t, keys in said.items() if len(keys) == 1 and language[next(iter(keys))] in languages)
    words = {t: _words(_PLACEHOLDER.sub(" ", t)) for t in written}
    out = []
    for template in rng.sample(once, min(n, len(once))):
        message = " ".join(_PLACEHOLDER.sub(lambda _: rng.choice(_VALUES), template).split()).strip(" :.,")
        pasted = _words(message)
        sayers = {key for t, keys in written.items() if _in_order(words[t], pasted) for key in keys} | said[template]
        out.append((message, sayers))
    return out


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _in_order(needle: list[str], haystack: list[str]) -> bool:
    """Whether needle's words all occur in haystack, in needle's order."""
    rest = iter(haystack)
    return bool(needle) and all(w in rest for w in needle)


def pasted_locations(defs: list, rng: random.Random, n: int) -> list[tuple[str, set[tuple[str, str]]]]:
    """n functions and methods named by a place a user pastes: a Python frame under another root, a compiler's
    `path:line:col`, or a Java/JS frame with the file's name only; the line is the definition's first."""
    members = [e for e in defs if e.kind in ("function", "method")]
    out = []
    for e in rng.sample(members, min(n, len(members))):
        owner = f"{re.split(r'[.:]+', e.parent)[-1]}." if e.parent else ""
        frame = rng.choice((f'File "/srv/app/{e.file}", line {e.start_line}, in {e.name}',
                            f"{e.file}:{e.start_line}:5: error: expected expression",
                            f"at {owner}{e.name} ({e.file.rsplit('/', 1)[-1]}:{e.start_line})"))
        out.append((frame, {(e.file, e.qualname)}))
    return out


def famous_names(entities: list, languages: set[str], n: int) -> list[tuple[str, set[tuple[str, str]]]]:
    """The n names these languages define that the most passages use (their rarest word's document frequency),
    each defined at most 3 times in the package: what a benchmark's symbol queries ask for (`Context`, `Regex`,
    `Application`), and what every method of its class repeats. Any definition of the name counts, in any
    language of the package (expo defines one interface in Kotlin, Swift and Objective-C)."""
    from collections import Counter

    from assay.stages.core.artifacts import DEFINITION_KINDS
    from assay.stages.index.tokens import tokenize

    frequency = Counter(t for e in entities for t in set(tokenize(e.body)))
    definers: dict[str, set[tuple[str, str]]] = {}
    named_here: set[str] = set()
    for e in entities:
        if e.part == 0 and e.kind in DEFINITION_KINDS and len(e.name) > 2:
            definers.setdefault(e.name, set()).add((e.file, e.qualname))
            if e.language in languages:
                named_here.add(e.name)
    names = [name for name in named_here if len(definers[name]) <= 3 and re.fullmatch(r"[A-Za-z_$][\w$]*", name)
             and not name.lower().startswith("test")]
    fame = {name: min((frequency[t] for t in tokenize(name)), default=0) for name in names}
    return [(name, definers[name]) for name in sorted(names, key=lambda name: (-fame[name], name))[:n]]


if __name__ == "__main__":
    main()

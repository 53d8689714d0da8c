"""The guard reads every path the index can hold and every name the writer quotes: a correct citation of
`src/routes/blog/+page.ts`, `packages/@acme/utils/index.ts`, `back\\slash.py` or a decomposed (NFD) `café.py`, and a
name holding backticks (a note), is verified, not called fabricated."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from assay.flows.index import run_index
from assay.flows.query import run_query
from assay.stages.core.artifacts import Candidate, PassageScores, RankedPassage
from assay.stages.core.config import Settings
from assay.stages.index.embed import index_embedder
from assay.stages.index.notes import add_note
from assay.stages.index.store import read_manifest
from assay.stages.query.claims import split_claims
from assay.stages.query.guard import IndexFacts, check_local
from assay.stages.query.premise import entity_of, resolver_from
from assay.stages.query.synthesize import extractive

NFD_CAFE = unicodedata.normalize("NFD", "café")
ODD_PATHS = ("src/routes/blog/+page.ts", "packages/@acme/utils/index.ts", "weird/back\\slash.py",
             "app/(auth)/login/page.tsx", "pages/[id].tsx", "pages/[[...slug]].tsx", ".config/.eslintrc.js",
             f"weird/{NFD_CAFE}.py")


def _passage(file: str, entity: str, n: int, kind: str = "function", signature: str = "") -> Candidate:
    signature = signature or f"def {entity}(value)"
    return Candidate(id=f"p{n}", file=file, start_line=1, end_line=3, entity=entity, kind=kind, language="python",
                     signature=signature, params=["value"], docstring=f"Format the value for {entity}.",
                     body=f'{signature}:\n    """Format the value for {entity}."""\n    return value\n',
                     fused_rank=n + 1, fused_score=0.1)


def _verdicts(text: str, passages: list[Candidate], files: list[str]) -> list[tuple[str, str]]:
    facts = IndexFacts(resolver_from(entity_of(c) for c in passages), lambda: files)
    return [(c.verdict, c.evidence) for _, c in check_local(text, passages, facts)]


def _ranked(passages: list[Candidate]) -> list[RankedPassage]:
    strong = PassageScores(relevance=0.9, evidence=0.9, contradicts=0.0, injection=0.0)
    return [RankedPassage(candidate=c, scores=strong, verdict="include", rank_score=0.8) for c in passages]


# -- names holding backticks ----------------------------------------------------------------------------------------


def test_a_code_span_fenced_by_more_backticks_is_read_whole() -> None:
    """`` a`b. C `` is one span (CommonMark): its code is `a`b. C`, and its full stop ends no sentence."""
    claims = split_claims("- `` note `make release`. Then `` (note) is defined as ``` a``b ``` (pkg/a.py:3).")
    assert len(claims) == 1, [c.text for c in claims]
    assert claims[0].code == ["note `make release`. Then", "a``b"]
    assert claims[0].cited == ["pkg/a.py:3"]
    assert "defined" not in claims[0].names


def test_the_extractive_answer_about_a_name_holding_backticks_is_verified() -> None:
    note = _passage(".assay/notes", "note 2025-01-01 10:00:00: Deploy with `make release`: it tags the build.", 0,
                    kind="note", signature="Deploy with `make release`: it tags the build.")
    func = _passage("pkg/odd.py", "odd`name", 1)
    text = extractive("How do we deploy?", _ranked([note, func])).text
    assert "`` note 2025-01-01 10:00:00: Deploy with `make release`: it tags the build. `` (note)" in text
    assert "`` odd`name `` (function)" in text
    got = _verdicts(text, [note, func], [".assay/notes", "pkg/odd.py"])
    assert got and {v for v, _ in got} == {"verified"}, got


def test_a_note_holding_backticks_is_verified_end_to_end(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "tool.py").write_text('def build_tool():\n    """Build the tool."""\n    return 1\n')
    run_index(str(root))
    s = Settings()
    # one backtick in its name: quoted in single backticks, ` (note) is defined as ` read as code (`defined`)
    note = "Never hand-edit the `generated/ folder: rerun the schema generator instead."
    add_note(root, note, index_embedder(read_manifest(root).embedder, s), s.chroma_url)
    report = run_query(str(root), "Can I hand-edit the generated folder?")
    assert "(note) is defined as" in report.answer.text and report.guard is not None, report.answer.text
    assert report.guard.grounded == 1.0, report.guard.claims
    assert "[guard:" not in report.answer.text


# -- paths holding + @ \ ( [ and decomposed letters -------------------------------------------------------------------


def test_citations_of_paths_holding_odd_characters_are_verified() -> None:
    passages = [_passage(f, f"format_{n}", n) for n, f in enumerate(ODD_PATHS)]
    text = " ".join(f"`format_{n}` formats the value ({f}:1)." for n, f in enumerate(ODD_PATHS))
    got = _verdicts(text, passages, list(ODD_PATHS))
    assert [v for v, _ in got] == ["verified"] * len(ODD_PATHS), got


def test_a_path_shortened_in_the_middle_of_a_name_stays_fabricated() -> None:
    """`page.ts` is not a shortening of `+page.ts`: only whole folders may be left out (`blog/+page.ts`)."""
    passages = [_passage("src/routes/blog/+page.ts", "load_posts", 0)]
    got = _verdicts("`load_posts` formats the value (page.ts:1). `load_posts` formats the value (blog/+page.ts:1).",
                    passages, ["src/routes/blog/+page.ts"])
    assert got[0] == ("fabricated", "there is no file `page.ts` in the index")
    assert got[1][0] == "verified", got


def test_nfc_and_nfd_spellings_name_the_same_file() -> None:
    """macOS stores `café.py` decomposed; a writer types it composed: a citation or mention in either form is the
    indexed file, whichever form the index holds."""
    for stored, written in (("NFD", "NFC"), ("NFC", "NFD"), ("NFD", "NFD")):
        file = unicodedata.normalize(stored, "weird/café.py")
        cite = unicodedata.normalize(written, "café.py")
        text = f"`brew` formats the value ({cite}:1). The helper `brew` lives in {cite}."
        got = _verdicts(text, [_passage(file, "brew", 0)], [file])
        assert len(got) == 2 and got[0][0] == "verified" and got[1][0] != "fabricated", (stored, written, got)


def test_a_path_cut_at_a_character_prose_ends_paths_with_is_read_whole_when_spelled_out() -> None:
    """`cfg/x=y.py:1` is read as `y.py:1` (`=` ends a path in prose); spelled out whole it is the indexed file,
    alone it is not."""
    passages = [_passage("cfg/x=y.py", "load_cfg", 0)]
    got = _verdicts("`load_cfg` formats the value (cfg/x=y.py:1). `load_cfg` formats the value (y.py:1).",
                    passages, ["cfg/x=y.py"])
    assert got[0][0] == "verified", got
    assert got[1] == ("fabricated", "there is no file `y.py` in the index")


def test_asking_about_code_in_odd_paths_is_verified_end_to_end(tmp_path: Path) -> None:
    root = tmp_path / "ts"
    files = {"src/routes/blog/+page.ts": "export function loadBlogPosts(limit: number) {\n  return fetchPosts(limit);\n}\n",
             "packages/@acme/utils/index.ts": ("export function formatCurrencyAmount(value: number): string {\n"
                                               "  return value.toFixed(2);\n}\n"),
             f"weird/{NFD_CAFE}.py": 'def brew_espresso(shots):\n    """Brew espresso shots."""\n    return shots * 2\n',
             "weird/back\\slash.py": 'def odd_slash_helper(x):\n    """Odd slash helper."""\n    return x\n'}
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    run_index(str(root))
    for question, file in (("What does loadBlogPosts do?", "src/routes/blog/+page.ts"),
                           ("What does formatCurrencyAmount return?", "packages/@acme/utils/index.ts"),
                           ("What does brew_espresso do?", f"weird/{NFD_CAFE}.py"),
                           ("What does odd_slash_helper do?", "weird/back\\slash.py")):
        report = run_query(str(root), question)
        assert f"({file}:1)" in report.answer.text, report.answer.text
        assert report.guard is not None and report.guard.grounded == 1.0, (question, report.guard)
        assert "[guard:" not in report.answer.text


def test_a_citation_in_an_elided_member_names_the_lines_the_writer_saw() -> None:
    from assay.stages.core.artifacts import Candidate
    from assay.stages.query.guard import IndexFacts, check_local
    from assay.stages.query.premise import entity_of, resolver_from

    outline = Candidate(id="c", file="pkg/s.py", start_line=10, end_line=90, entity="Session", kind="class",
                        language="python", body="class Session:\n    timeout = 3\n    def send(self, request): ...\n",
                        fused_rank=1, fused_score=0.1)
    facts = IndexFacts(resolver_from([entity_of(outline)]), lambda: ["pkg/s.py"])
    [(_, claim)] = check_local("`Session` sends the request (pkg/s.py:50).", [outline], facts)
    assert claim.verdict == "fabricated"
    assert "(lines 10-11)" in claim.evidence  # was "(lines 10-90)", a range holding line 50


def test_a_claims_receipt_names_a_path_with_a_space_whole() -> None:
    """The verdict read `my folder/with space.py:1` whole, but the claim's citations kept the reader's cut tail
    (`space.py:1`): a tool following the receipt got a file that does not exist."""
    spaced = _passage("my folder/with space.py", "spaced_func", 0)
    facts = IndexFacts(resolver_from([entity_of(spaced)]), lambda: ["my folder/with space.py"])
    [(_, claim)] = check_local("`spaced_func` formats the value (my folder/with space.py:1).", [spaced], facts)
    assert claim.verdict != "fabricated" and claim.citations == ["my folder/with space.py:1"], claim

"""File names the question grammar and the answer's statements read whole, as the guard does: `+`, `@`, route groups."""

from __future__ import annotations

import pytest

from assay.stages.evaluate.premise_set import FLAG_AT
from assay.stages.index.parse import parse_source
from assay.stages.query.premise import check_question, extract, resolver_from
from assay.stages.query.statements import stated_premises

SOURCE = b"export async function load() {\n  return {};\n}\n"


@pytest.mark.parametrize(("question", "path"), [
    ("Why is load defined in src/routes/+page.ts?", "src/routes/+page.ts"),
    ("Why is `load` defined in `src/routes/+page.ts`?", "src/routes/+page.ts"),
    ("Does @scope/pkg/index.ts define createStore?", "@scope/pkg/index.ts"),
    ("Why does get_user in app/(auth)/[id]/page.tsx call fetch?", "app/(auth)/[id]/page.tsx"),
])
def test_the_question_grammar_reads_the_whole_path(question: str, path: str) -> None:
    assert [p.value for p in extract(question) if p.kind == "file"] == [path]


@pytest.mark.parametrize(("sentence", "path"), [
    ("`load` is defined in `src/routes/+page.ts`.", "src/routes/+page.ts"),
    ("The file @scope/pkg/index.ts defines `createStore`.", "@scope/pkg/index.ts"),
])
def test_an_answer_s_statement_reads_the_whole_path(sentence: str, path: str) -> None:
    assert [p.value for p in stated_premises(sentence) if p.kind == "file"] == [path]


def test_a_premise_on_a_plus_page_file_holds_and_one_on_its_namesake_does_not() -> None:
    """`+page.ts` was checked as `page.ts`: a true premise about a SvelteKit route read as false."""
    resolve = resolver_from(parse_source(SOURCE, "src/routes/+page.ts", "typescript", "h").entities)

    def flagged(question: str) -> list[str]:
        return [f.fact for f in check_question(question, resolve) if not f.holds and f.contradicts >= FLAG_AT]

    assert flagged("Why is `load` defined in src/routes/+page.ts?") == []
    assert any("+page.ts" in f for f in flagged("Why is `load` defined in src/routes/page.ts?"))


@pytest.mark.parametrize("written", ["./src/routes/+page.ts", "src\\routes\\+page.ts", "/home/me/app/src/routes/+page.ts",
                                     "C:\\app\\src\\routes\\+page.ts"])
def test_the_same_file_written_another_way_is_no_contradiction(written: str) -> None:
    """`./src/a.py` and `src\\a.py` were compared as written: "defined in `src/a.py`, not `./src/a.py`"."""
    resolve = resolver_from(parse_source(SOURCE, "src/routes/+page.ts", "typescript", "h").entities)
    facts = [f.fact for f in check_question(f"Why is `load` defined in {written}?", resolve)
             if not f.holds and f.contradicts >= FLAG_AT]
    assert facts == []


def test_a_name_holding_a_space_is_not_contradicted_by_its_last_word() -> None:
    resolve = resolver_from(parse_source(b"def spaced_helper(x):\n    return x\n", "dir with space/spaced mod.py", "python", "h").entities)
    facts = [f.fact for f in check_question("Why is spaced_helper defined in dir with space/spaced mod.py?", resolve)
             if not f.holds and f.contradicts >= FLAG_AT]
    assert facts == []


def test_a_module_shaped_last_word_of_a_spaced_name_is_no_contradiction() -> None:
    """`mod.py` reads as a module name (`mod`), which took another branch of the file check."""
    resolve = resolver_from(parse_source(b"def spaced_helper(x):\n    return x\n", "dir with space/spaced mod.py", "python", "h").entities)
    facts = [f.fact for f in check_question("What does spaced_helper in dir with space/spaced mod.py return?", resolve)
             if not f.holds and f.contradicts >= FLAG_AT]
    assert facts == []

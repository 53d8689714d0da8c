"""Pasted code and tracebacks are the user's code, not claims about the indexed code's signatures; a premise the
checker finds false keeps trust below high; a line past the end of a named file is said; a file name the index
holds is no gap (sweep 4, defects 1, 2, 3 and 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.flows.cli import app
from assay.stages.core.artifacts import (Answer, Candidate, Judgment, PassageScores, Premise, PremiseFinding, RankedPassage,
                                         RouteDecision, Selection, Thresholds)
from assay.stages.index.parse import parse_source
from assay.stages.query.locate import stated_lines
from assay.stages.query.premise import check_question, past_the_end, resolver_from
from assay.stages.query.report import make_report, missing_names

runner = CliRunner()

# a small requests-like package: a module-level `get`, an unrelated class with a method `get`
_SOURCES = {
    "src/pkg/api.py": b"def get(url, params=None, **kwargs):\n    return request('get', url, params=params, **kwargs)\n\n\n"
                      b"def request(method, url, **kwargs):\n    pass\n",
    "src/pkg/cookies.py": b"class CookieJar:\n    def get(self, name, default=None):\n        return default\n",
    "src/pkg/sessions.py": b"class Session:\n    def request(self, method, url, params=None, timeout=None):\n        pass\n\n"
                           b"    def mount(self, prefix, adapter):\n        pass\n\n    def send(self, request, **kwargs):\n        pass\n",
    "src/pkg/adapters.py": b"class HTTPAdapter:\n    def __init__(self, pool_connections=10):\n        self.n = pool_connections\n",
    "src/pkg/models.py": b"class HTTPError(Exception):\n    pass\n\n\nclass Response:\n    def raise_for_status(self):\n"
                         b"        raise HTTPError('bad', response=self)\n",
}


@pytest.fixture(scope="module")
def resolve():
    entities = [e for path, src in _SOURCES.items() for e in parse_source(src, path, "python", "h").entities]
    return resolver_from(entities)


def _false(question: str, resolve) -> list[str]:
    return [f.fact for f in check_question(question, resolve) if not f.holds]


def _both(question: str) -> list[str]:
    """The question as pasted, and flattened to one line as the query flow passes it on."""
    return [question, " ".join(question.split())]


TRACEBACK = """Traceback (most recent call last):
  File "/home/alice/proj/app.py", line 12, in <module>
    r = pkg.get("http://example.com", timeout=3)
  File "/usr/lib/python3.11/site-packages/pkg/api.py", line 2, in get
    return request("get", url, params=params, **kwargs)
  File "/opt/venv/lib/python3.11/site-packages/pkg/sessions.py", line 2, in request
    resp = self.send(prep, **send_kwargs)
  File "C:\\venv\\Lib\\site-packages\\pkg\\models.py", line 7, in raise_for_status
    raise HTTPError(http_error_msg, response=self)
pkg.exceptions.ConnectTimeout: HTTPSConnectionPool(host='example.com', port=443): Max retries exceeded
why does this fail?"""


@pytest.mark.parametrize("question", _both(TRACEBACK))
def test_a_pasted_traceback_states_no_parameter(question: str, resolve) -> None:
    assert _false(question, resolve) == []


@pytest.mark.parametrize("question", _both("```python\nresp = pkg.get(url, json=payload, timeout=5)\n"
                                           "resp.raise_for_status()\n```\nwhy does this hang?"))
def test_fenced_code_states_no_parameter(question: str, resolve) -> None:
    assert _false(question, resolve) == []


def test_a_keyword_belongs_to_the_innermost_call(resolve) -> None:
    assert _false("why does Session.mount('https://', HTTPAdapter(pool_connections=5)) not limit the pool?", resolve) == []
    # the call's own keyword is still checked
    wrong = _false("why does Session.mount('https://', HTTPAdapter(pool_connections=5), pool=3) fail?", resolve)
    assert len(wrong) == 1 and "no parameter `pool`" in wrong[0] and "Session.mount" in wrong[0]


def test_an_assignment_names_no_parameter(resolve) -> None:
    assert _false("r = Session.request('GET', u, timeout=3) fails; why?", resolve) == []
    assert _false("resp=Session.request('GET', u) then resp.raise_for_status() raises, why?", resolve) == []


def test_keywords_in_an_error_message_are_not_arguments(resolve) -> None:
    question = "Session.request fails with ConnectTimeout: HTTPSConnectionPool(host='x', port=443): Max retries exceeded"
    assert not any("no parameter" in f for f in _false(question, resolve))


@pytest.mark.parametrize("subject", ["pkg.get", "s.get", "requests.get"])
def test_a_dotted_subject_is_the_module_function_not_an_unrelated_method(subject: str, resolve) -> None:
    facts = _false(f"why does {subject}(url, params={{'a': 1}}, headers=h) drop my params?", resolve)
    assert not any("CookieJar" in f for f in facts), facts


def test_a_prefix_named_like_the_class_picks_its_method(resolve) -> None:
    facts = _false("why does cookiejar.get('n', headers=h) fail?", resolve)
    assert len(facts) == 1 and "`CookieJar.get` takes `name`, `default`; there is no parameter `headers`" in facts[0]


def test_a_false_premise_in_prose_is_still_found(resolve) -> None:
    assert any("no parameter `pool`" in f for f in _false("Does Session.mount take a pool parameter?", resolve))


# -- a false premise keeps trust below high ---------------------------------------------------------------


def _report(premises: list[PremiseFinding], question: str = "what does f do?", workspace: str = "/w"):
    cand = Candidate(id="a", file="a.py", start_line=1, end_line=2, entity="f", kind="function", body="def f(): pass",
                     fused_rank=1, fused_score=0.016)
    th = Thresholds(relevance_min=0.3, evidence_min=0.2, injection_max=0.5, contradicts_min=0.5)
    scores = PassageScores(relevance=0.9, evidence=0.9, contradicts=0.0, injection=0.0)
    sel = Selection(included=[RankedPassage(candidate=cand, scores=scores, verdict="include", rank_score=1.0)],
                    dropped=[], thresholds=th)
    judgment = Judgment(backend="local", scores={"a": scores}, coverage=3, answerable=0.95, premises=premises)
    return make_report("q1", question, workspace, Answer(text="f passes.", backend="extractive"), sel, judgment,
                       RouteDecision(target="local", reason="local mode", mode="local"), {})


def _finding(holds: bool) -> PremiseFinding:
    return PremiseFinding(premise=Premise(kind="async", subject="f", value="async"), holds=holds, contradicts=0.85,
                          entity_id="a", entity="f", file="a.py", line=1, fact="`f` is synchronous (a plain def, not async) (a.py:1)")


def test_a_false_premise_is_not_trust_high_and_the_action_says_to_correct_it() -> None:
    assert _report([_finding(True)]).trust == "high"  # the same report, its premise true
    report = _report([_finding(False)])
    assert report.trust != "high" and report.status != "supported"
    assert report.action.startswith("correct the question's false premise first")
    assert "premise: the question assumes otherwise; `f` is synchronous (a plain def, not async) (a.py:1)" in report.guidance


# -- a line past the end of a named file ------------------------------------------------------------------

_FILES = ["src/pkg/models.py", "src/pkg/api.py"]
_LINES = {"src/pkg/models.py": 1039, "src/pkg/api.py": 157}


@pytest.mark.parametrize("question,file,n,line", [
    ("why does models.py line 9999 call Session.send?", "src/pkg/models.py", 1039, 9999),
    ("What does the function at src/pkg/api.py:500 do?", "src/pkg/api.py", 157, 500),
    ("what is on line 400 of api.py?", "src/pkg/api.py", 157, 400),
])
def test_a_line_past_the_end_of_a_named_file_is_a_false_premise(question: str, file: str, n: int, line: int) -> None:
    found = past_the_end(question, _FILES, _LINES.get)
    assert [f.fact for f in found] == [f"`{file}` has {n} lines; there is no line {line} ({file}:{n})"]
    assert not found[0].holds


@pytest.mark.parametrize("question", [
    "why does models.py line 1000 call Session.send?",  # in range
    'File "/usr/lib/site-packages/pkg/api.py", line 500, in get',  # a frame: the installed copy's lines may differ
    "what is at /home/me/other/src/pkg/api.py:500?",  # another checkout
    "what is at nothere.py:500?",  # not indexed: nothing to count
])
def test_a_line_in_range_or_from_elsewhere_is_not_challenged(question: str) -> None:
    assert past_the_end(question, _FILES, _LINES.get) == []


def test_stated_lines_reads_lines_named_in_words() -> None:
    assert stated_lines("models.py, line 12 and line 40 in `api.py` and src/x.py:7") == [
        ("src/x.py", 7), ("models.py", 12), ("api.py", 40)]


def test_asking_about_a_line_past_the_end_is_not_trust_high(indexed_project: Path) -> None:
    out = runner.invoke(app, ["ask", "What does the function at pkg/session.py:500 do?", str(indexed_project), "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["trust"] != "high"
    assert any("`pkg/session.py` has 34 lines; there is no line 500" in g for g in report["guidance"]), report["guidance"]


# -- a file name the index holds is no gap ----------------------------------------------------------------


def test_an_indexed_file_name_is_no_gap_and_an_unknown_one_is(indexed_project: Path) -> None:
    sel = _report([]).selection  # its one passage is from `a.py`, none from `session.py`
    assert missing_names("Why does session.py line 5 define Session.send?", sel, str(indexed_project)) == ["Session.send"]
    assert missing_names("Why does nothere.py define f?", sel, str(indexed_project)) == ["nothere.py"]
    # a traceback's own file, on the user's machine, is not code the index should hold
    assert missing_names('File "/home/alice/proj/app.py", line 12, in f', sel, str(indexed_project)) == []


def test_a_premise_about_a_name_a_build_copies_cites_the_source() -> None:
    """`dist/bundle.cjs` sorts before `packages/`: the note said the compiled copy "raises nothing" while the
    TypeScript source raises RangeError."""
    from assay.stages.core.artifacts import Entity
    from assay.stages.query.premise import catalog_resolver

    def entity(file: str) -> Entity:
        return Entity(id=file, file=file, start_line=1, end_line=3, kind="function", name="parseQuantity",
                      qualname="parseQuantity", language="typescript", content_hash="")

    resolve = catalog_resolver(lambda name: [entity("dist/bundle.cjs"), entity("packages/util/src/format.ts")])
    assert [e.file for e in resolve("parseQuantity")] == ["packages/util/src/format.ts", "dist/bundle.cjs"]

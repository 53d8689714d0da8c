"""Premise checking: facts indexed per definition, premises read in many phrasings, corrections that cite lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.flows.query import run_query
from assay.stages.core.artifacts import Candidate
from assay.stages.evaluate import premise_set
from assay.stages.evaluate.premise_set import FLAG_AT, generate, resolver_for, score
from assay.stages.index.parse import parse_source
from assay.stages.query.judge.local import judge_local
from assay.stages.query.premise import check_question, entity_of, extract, resolver_from

SOURCE = b'''"""Clients."""
import functools


class TransportError(Exception):
    """Base of transport failures."""


class ReadTimeout(TransportError):
    pass


class BaseClient:
    """Shared plumbing."""

    def __init__(self, timeout: float = 5.0, retries: int = 3) -> None:
        self.timeout = timeout

    @property
    def closed(self) -> bool:
        return False

    @staticmethod
    def normalise(url: str) -> str:
        return url.strip()


class Client(BaseClient):
    """Synchronous client."""

    def send(self, request, stream=False) -> "Response":
        if request is None:
            raise ReadTimeout("no request")
        return Response()

    async def asend(self, request) -> "Response":
        return Response()

    @functools.lru_cache(maxsize=8)
    def lookup(self, host: str):
        return host


class Response:
    def read(self) -> bytes:
        return b""


MAX_REDIRECTS = 20


class Mounted(external.Adapter):
    pass


def stop(client: Client, args: list) -> None:
    client.close()
'''


@pytest.fixture(scope="module")
def resolve():
    parsed = parse_source(SOURCE, "http/client.py", "python", "h")
    return resolver_from(parsed.entities)


def flagged(question: str, resolve) -> list[str]:
    return [f.fact for f in check_question(question, resolve) if not f.holds and f.contradicts >= FLAG_AT]


def test_parse_stores_facts_per_definition() -> None:
    ents = {e.qualname: e for e in parse_source(SOURCE, "http/client.py", "python", "h").entities}
    assert ents["BaseClient.__init__"].facts.defaults == {"timeout": "5.0", "retries": "3"}
    assert ents["BaseClient.closed"].facts.decorators == ["property"] and ents["BaseClient.closed"].facts.returns == "bool"
    assert ents["Client.asend"].facts.is_async and not ents["Client.send"].facts.is_async
    assert ents["Client.send"].facts.raises == ["ReadTimeout"]
    assert ents["Client.lookup"].facts.decorators == ["lru_cache"]
    ts = parse_source(b"class A { @dec async m(a: number = 3): Promise<void> { throw new TypeError('x') } }", "a.ts", "typescript", "h")
    m = next(e for e in ts.entities if e.qualname == "A.m")
    assert (m.facts.decorators, m.facts.is_async, m.facts.returns, m.facts.defaults, m.facts.raises) == (
        ["dec"], True, "Promise<void>", {"a": "3"}, ["TypeError"])


@pytest.mark.parametrize(("false_q", "true_q", "correction"), [
    ("Why does Client inherit from Response?", "Why does Client inherit from BaseClient?", "`Client` inherits from `BaseClient`, not `Response`"),
    ("Which `Response` methods does `Client` inherit?", "Which `BaseClient` methods does `Client` inherit?", "not `Response`"),
    ("What does the verify parameter of Client.send do?", "What does the stream parameter of Client.send do?",
     "`Client.send` takes `request`, `stream`; there is no parameter `verify` (http/client.py:31)"),
    ("Can I pass verify= to `Client.send`?", "Can I pass stream= to `Client.send`?", "no parameter `verify`"),
    ("Why does `Client.send`'s stream default to True?", "Why does `Client.send`'s stream default to False?",
     "`stream` of `Client.send` defaults to `False`, not `True`"),
    ("In BaseClient.__init__, why is retries 5 by default?", "In BaseClient.__init__, why is retries 3 by default?", "defaults to `3`, not `5`"),
    ("Why is `BaseClient.closed` a static method?", "Why is `BaseClient.closed` a property?", "carries `@property`, not `@staticmethod`"),
    ("What does @lru_cache do for `normalise`?", "What does @staticmethod do for `normalise`?", "carries `@staticmethod`"),
    ("Why is `Client.send` async?", "Why is `Client.asend` async?", "`Client.send` is synchronous"),
    ("Why can `Client.asend` be called without await?", "Why can `Client.send` be called without await?", "`Client.asend` is async"),
    ("Why does `BaseClient.closed` return a str?", "Why does `BaseClient.closed` return a bool?", "annotated to return `bool`, not `str`"),
    ("When does `Client.send` raise KeyError?", "When does `Client.send` raise TransportError?", "raises `ReadTimeout`, not `KeyError`"),
    ("Why is `Client` defined in server.py?", "Why is `Client` defined in client.py?", "defined in `http/client.py`, not `server.py`"),
    ("Why is `MAX_REDIRECTS` a function?", "Why is `MAX_REDIRECTS` a constant?", "`MAX_REDIRECTS` is a constant, not a function"),
    ("Why did `Response` end up a function?", "Why did `Response` end up a class?", "is a class, not a function"),
])
def test_each_premise_kind_is_flagged_with_its_correction_and_its_true_twin_is_not(resolve, false_q, true_q, correction) -> None:
    facts = flagged(false_q, resolve)
    assert any(correction in f for f in facts), facts
    assert flagged(true_q, resolve) == []


def test_a_qualified_subject_is_that_class_s_member_not_one_whose_name_ends_the_same() -> None:
    """`Client.send` once matched `BaseClient.send` (a bare suffix), so a false premise about it held."""
    source = (b"class BaseClient:\n    async def send(self):\n        raise KeyError('x')\n\n\n"
              b"class Client(BaseClient):\n    def send(self):\n        return 1\n")
    resolve = resolver_from(parse_source(source, "c.py", "python", "h").entities)
    assert any("`Client.send` is synchronous" in f for f in flagged("Why is `Client.send` async?", resolve))
    assert any("KeyError" in f for f in flagged("When does `Client.send` raise KeyError?", resolve))
    assert flagged("Why is `BaseClient.send` async?", resolve) == []


def test_typing_any_and_a_coroutine_from_an_async_def_contradict_nothing() -> None:
    source = (b"import typing\n\n\nclass Response:\n    def json(self) -> typing.Any:\n        return {}\n\n"
              b"    async def body(self) -> bytes:\n        return b''\n\n    def size(self) -> typing.Optional[int]:\n"
              b"        return None\n")
    resolve = resolver_from(parse_source(source, "r.py", "python", "h").entities)
    assert flagged("Does `Response.json` return a dict?", resolve) == []
    assert flagged("Does `Response.body` return a coroutine?", resolve) == []
    assert any("not `str`" in f for f in flagged("Why does `Response.size` return a str?", resolve))  # still checked


def test_negated_premises_and_unknowns_are_not_guessed(resolve) -> None:
    assert flagged("Why doesn't Client inherit from BaseClient?", resolve)  # it does
    assert flagged("Why doesn't Client inherit from Response?", resolve) == []
    assert flagged("Why does Mounted inherit from SomethingNotIndexed?", resolve) == []  # its ancestry leaves the index
    assert flagged("Why does Client inherit from SomethingNotIndexed?", resolve)  # its whole ancestry is known
    assert flagged("Why does ReadTimeout inherit from Exception?", resolve) == []  # through a builtin base
    assert flagged("Why does ReadTimeout inherit from ValueError?", resolve)
    assert flagged("Why does `Client.lookup` return a str?", resolve) == []  # no annotation: cannot tell
    assert flagged("Is Client a class or a function?", resolve) == []  # a question, not a presupposition
    assert flagged("How does the client retry and time out?", resolve) == []


def test_a_premise_stated_in_passing_is_read_and_an_aspect_is_no_parameter(resolve) -> None:
    """Constructions read since stop 37: "the class named X", "the Y returned from X", "the Y X returns". And what
    made true premises look false: the verb after a subject (`read` in "`send` read its request argument"), a
    history verb ("was stream added to ...", "take a args argument"), an aspect of the function ("`send`'s
    signature") or half of a hyphenated word read as a parameter, and a verb read as the subject of an inheritance."""
    assert flagged("What does the class named `send` do?", resolve)  # a method
    assert flagged("What does the function named `Client` do?", resolve)  # a class
    assert flagged("What is inside the dict returned from Client.send?", resolve)  # it returns a Response
    assert ("returns", "Client.send", "dict") in [(p.kind, p.subject, p.value) for p in extract("What is inside the dict returned from Client.send?")]
    assert ("returns", "Client.send", "dict") in [(p.kind, p.subject, p.value) for p in extract("Where is the dict `Client.send` returns created?")]
    assert flagged("What is inside the Response returned from Client.send?", resolve) == []
    assert flagged("Where does `Client.send` read its request argument?", resolve) == []
    assert flagged("Where does `Client.send` read its chunk argument?", resolve)  # no such parameter
    assert flagged("Why was stream added to `Client.send`'s signature?", resolve) == []
    assert flagged("Why was the stream argument added to Client.send?", resolve) == []  # no parameter `added`
    assert flagged("Why was chunk added to Client.send's signature?", resolve)  # it has no `chunk`
    # found on SWE-QA pytest-33: "file-based argument input" names neither a parameter `based` nor `input`
    assert flagged("Why does Client.send handle file-based argument input?", resolve) == []
    assert flagged("What does the argument depth of Client.send mean?", resolve)  # "the argument X" still names one
    assert flagged("What is `Client.send`'s signature?", resolve) == []
    # the verb is no subject ("Client stop inheriting": there is a function `stop`), nor a parameter ("take a args",
    # "let me pass args"), nor is an adjective ("a bad args")
    assert flagged("Could Client stop inheriting from BaseClient?", resolve) == []
    # but a lower-case class written as code is a subject (`formatter`, `partial`): the grammar's name group holds
    # the name without its backticks, so the check reads the character before it
    bases = lambda q: [(p.kind, p.subject, p.value) for p in extract(q) if p.kind == "base"]  # noqa: E731
    assert bases("Why does `formatter` inherit from `Buffer`?") == [("base", "formatter", "Buffer")]
    assert bases("Why does formatter inherit from Buffer?") == []
    assert flagged("Why does `stop` take a args argument?", resolve) == []
    assert flagged("Does `stop` let me pass args?", resolve) == []
    assert flagged("What breaks if `stop` gets a bad args?", resolve) == []


@pytest.mark.parametrize("question", [
    "What happens to the {} I pass to Client.send?", "Is {} required when calling Client.send?",
    "Can Client.send be called with {} set?", "Which values of {} does Client.send accept?",
])
def test_a_parameter_presupposed_in_passing_is_checked(resolve, question: str) -> None:
    """Read since stop 37 (from the fresh phrasings): a parameter the function lacks is flagged, one it has is not."""
    assert flagged(question.format("chunk"), resolve)
    assert flagged(question.format("stream"), resolve) == []


@pytest.mark.parametrize("question", [
    "How does Client.send treat a None {}?", "When I call `Client.send`, is {} optional?", "Why would I give `Client.send` a {}?",
    "Is it ok to leave out {} when I call `Client.send`?", "Which type does `Client.send` expect for {}?",
    "How do I call `Client.send` without {}?", "Can I hand {} to `Client.send`?",
])
def test_a_word_where_a_call_input_stands_is_checked_as_a_parameter(resolve, question: str) -> None:
    """Stop 38: a plain word read as a parameter from what is said around it (optional, left out, handed, given, a
    None one, expected for), in no fixed phrasing."""
    assert flagged(question.format("chunk"), resolve)
    assert flagged(question.format("stream"), resolve) == []


def test_a_word_beside_an_input_cue_that_is_no_input_is_left_alone(resolve) -> None:
    assert flagged("What does `Client.send` do without a terminal?", resolve) == []  # a condition, not a call's input
    assert flagged("Does `Client.send` work without permissions?", resolve) == []
    assert flagged("How does `Client.send` return a result without throwing?", resolve) == []  # a gerund
    assert flagged("When I call `Client.send`, is retrying optional?", resolve) == []
    assert flagged("Why is None chosen when `stop` fails?", resolve) == []  # None with no article is no value of a word
    assert flagged("Can I hand a network connection to `Client.send`?", resolve) == []  # `network` modifies a noun
    assert flagged("What happens when `stop` gets a None client?", resolve) == []  # a parameter
    assert flagged("What happens when `Client.send` gets a None request?", resolve) == []
    assert flagged("Is ReadTimeout optional when I call `Client.send`?", resolve) == []  # a class, not a word
    # the word names something the definition's own code uses: the question may mean that
    assert flagged("When I call `stop`, is close optional?", resolve) == []
    assert flagged("When I call `stop`, is flush optional?", resolve)


@pytest.mark.parametrize("question", [
    "Why is the result of `Client.send` a {}?", "Where does the {} from `Client.send` go next?",
    "Is the {} that comes out of `Client.send` cached?", "Why does `Client.send` end up returning a {}?",
    "`Client.send`() -> a {}: why this signature?",
])
def test_a_result_named_around_the_function_is_checked_as_a_return(resolve, question: str) -> None:
    """Stop 38: the result of f, the T from f, what comes out of f, "returning", `-> a T`."""
    assert flagged(question.format("dict"), resolve)
    assert flagged(question.format("Response"), resolve) == []


def test_what_is_taken_from_a_result_or_raised_out_of_it_is_no_return(resolve) -> None:
    assert flagged("How do I get the dict from `Client.send`?", resolve) == []  # a part of what it returns
    assert flagged("Why does a ReadTimeout come out of `Client.send`?", resolve) == []  # raised, not returned
    assert flagged("Which ReadTimeout from `Client.send` should I catch?", resolve) == []
    assert flagged("Is the result of `Client.send` cached?", resolve) == []


@pytest.mark.parametrize(("false_q", "true_q"), [
    ("Which methods of Response does `Client` override?", "Which methods of BaseClient does `Client` override?"),
    ("Why was `Client` built on top of Response?", "Why was `Client` built on top of BaseClient?"),
    ("Is it safe to use `Client` wherever a Response is expected?", "Is it safe to use `Client` wherever a BaseClient is expected?"),
    ("Why does `BaseClient.closed` need to be a static method?", "Why does `BaseClient.closed` need to be a property?"),
    ("What does `BaseClient.closed` lose by being a class method?", "What does `BaseClient.closed` lose by being a property?"),
    ("Why does stream start out as True in `Client.send`?", "Why does stream start out as False in `Client.send`?"),
    ("When stream is left at True, what does `Client.send` do?", "When stream is left at False, what does `Client.send` do?"),
    ("Why does `Client.send` fall back to stream=True?", "Why does `Client.send` fall back to stream=False?"),
])
def test_base_decorator_and_default_read_from_more_cues(resolve, false_q: str, true_q: str) -> None:
    """Stop 38: overriding, "built on top of", "wherever B is expected"; a decorator word further from the one
    function named; "starts out as", "left at", "falls back to"."""
    assert flagged(false_q, resolve)
    assert flagged(true_q, resolve) == []


def test_words_around_a_function_that_name_no_parameter(resolve) -> None:
    """Stop 38's false alarms on its new phrasings: an adverb or a conjunction where a name could stand, a verb before
    a parameter that is named like the noun (`args`), a type in backticks, a function named like a verb (`pass_x`)."""
    assert flagged("Since `BaseClient.closed` is a property, what does it receive first?", resolve) == []
    assert flagged("Since request defaults to None in `Client.send`, do I need to set it?", resolve)  # no default
    assert flagged("Since stream defaults to False in `Client.send`, do I need to set it?", resolve) == []
    assert flagged("Does `stop` validate args before using it?", resolve) == []
    assert flagged("Why does `stop` assume args is a list?", resolve) == []
    assert flagged("Why does calling `stop` result in `Response`?", resolve) == []
    verbish = resolver_from(parse_source(b"def pass_obj(f):\n    return f\n", "deco.py", "python", "h").entities)
    assert flagged("Why does calling pass_obj result in `handler`?", verbish) == []
    assert flagged("Why does pass_obj take a `handler`?", verbish)  # `take` is still a verb


def test_a_negation_inside_a_supposition_or_said_of_a_person_denies_nothing(resolve) -> None:
    """fresh4's first run: "what would change if A no longer derived from B" presupposes that it does, and in "If I
    don't pass p to f, is it None?" the negation is the asker's."""
    assert flagged("What would change if `Client` no longer derived from BaseClient?", resolve) == []
    assert flagged("What would change if `Client` no longer derived from Response?", resolve)
    assert flagged("If I don't pass stream to `Client.send`, is it False?", resolve) == []
    assert flagged("Why doesn't Client inherit from BaseClient?", resolve)  # a plain negation still counts


def test_more_inheritance_and_input_cues_and_a_noun_inside_a_name(resolve) -> None:
    """From the fresh3 misses: "B hooks A implements", "A modelled as a B", "passed where a B is wanted"; "what
    happens to p once f receives it"; and `Parameter` inside `MissingParameter` is no parameter noun."""
    assert flagged("Which Response hooks does `Client` implement?", resolve)
    assert flagged("Why is `Client` modelled as a Response?", resolve)
    assert flagged("Can `Client` be passed where a Response is wanted, as its subclass?", resolve)
    assert flagged("Can `Client` be passed where a BaseClient is wanted, as its subclass?", resolve) == []
    assert flagged("What happens to chunk once `Client.send` receives it?", resolve)
    assert flagged("What happens to stream once `Client.send` receives it?", resolve) == []
    errors = resolver_from(parse_source(b"class BadParameter(Exception):\n    def __init__(self, message, ctx=None):\n        pass\n\n"
                                        b"class MissingParameter(BadParameter):\n    pass\n", "errors.py", "python", "h").entities)
    assert flagged("Is MissingParameter part of the BadParameter hierarchy?", errors) == []


def test_the_last_false_alarms_of_the_tuned_and_fresh2_sets() -> None:
    """A parameter named `default` is no default cue ("treat a None default"); a quoted value after `=` is no
    subject (`style='rule.line'` had resolved `rule.line` to another method)."""
    src = b"class Prompt:\n    def make(self, default):\n        return default\n\n    def line(self, count=1):\n        pass\n\n" \
          b"    def rule(self, style='rule.line'):\n        pass\n"
    r = resolver_from(parse_source(src, "prompt.py", "python", "h").entities)
    assert flagged("How does `Prompt.make` treat a None default?", r) == []
    assert flagged("Is style='rule.line' the default in `rule`?", r) == []
    assert flagged("Is style='rule.text' the default in `rule`?", r)  # the default is 'rule.line'


def test_a_plain_noun_after_a_kind_or_async_word_is_no_subject(resolve) -> None:
    """"an asynchronous result", "a native module's definition" (bench_topics queries flagged until stop 38)."""
    more = parse_source(b"def result():\n    return 1\n\ndef definition():\n    pass\n", "lib/util.py", "python", "h").entities
    both = resolver_from(list(parse_source(SOURCE, "http/client.py", "python", "h").entities) + more)
    assert flagged("blocking until an asynchronous result is ready, with a timeout", both) == []
    assert flagged("how is a native module's definition of functions built", both) == []
    assert flagged("Why is `result` asynchronous?", both)  # written as code, it is still the subject


def test_a_plain_word_used_as_english_names_no_function(resolve) -> None:
    """The held-out click questions (`bench_questions`) raised three false alarms: "a long option on the command
    line" (`command` has no parameter `long`), "user input read for a prompt with hidden input" (`prompt` has no
    `hidden`), "How does Click convert the value of a UUID parameter" (`convert` has no `UUID`). A plain word after
    "a", before a noun it modifies, or as the verb of a clause whose subject precedes it is English; an acronym
    before "parameter" is a type; "hidden input" is a noun phrase."""
    src = b"def command(name=None, cls=None):\n    pass\n\ndef prompt(text, default=None, hide_input=False):\n    pass\n\n" \
          b"def convert(value, param, ctx):\n    pass\n"
    r = resolver_from(parse_source(src, "click/core.py", "python", "h").entities)
    assert flagged("What happens when a long option on the command line does not match any option?", r) == []
    assert flagged("How is user input read for a prompt with hidden input?", r) == []
    assert flagged("How does Click convert the value of a UUID parameter?", r) == []
    assert flagged("How does it convert a value with a strict parameter?", r) == []
    # the same words written as code, or as the subject, are still read
    assert flagged("What does the long option of `command` do?", r)
    assert flagged("Does prompt accept a hidden parameter?", r)
    assert flagged("Does convert take a strict parameter?", r)
    assert flagged("What does the strict parameter of convert control?", r)  # "convert control": no determiner
    assert flagged("Why does `convert` accept a strict parameter?", r)


def test_extraction_reads_many_phrasings() -> None:
    kinds = {q: [(p.kind, p.subject, p.param or p.value) for p in extract(q)] for q in (
        "Why does `Session` inherit from `dict`?", "Foo, a subclass of Bar, does what?", "How is get's timeout argument used?",
        "What does the hooks argument of Request do?", "In Client.get, why does follow_redirects default to True?",
        "Why is Session.request a staticmethod?", "Is `send` async?", "Why does get_netrc_auth return a str?",
        "When does prepare_url raise InvalidURL?", "Why is Session defined in sessions.py?")}
    assert ("base", "Session", "dict") in kinds["Why does `Session` inherit from `dict`?"]
    assert ("base", "Foo", "Bar") in kinds["Foo, a subclass of Bar, does what?"]
    assert ("param", "get", "timeout") in kinds["How is get's timeout argument used?"]
    assert ("param", "Request", "hooks") in kinds["What does the hooks argument of Request do?"]
    assert ("default", "Client.get", "follow_redirects") in kinds["In Client.get, why does follow_redirects default to True?"]
    assert ("decorator", "Session.request", "staticmethod") in kinds["Why is Session.request a staticmethod?"]
    assert ("async", "send", "async") in kinds["Is `send` async?"]
    assert ("returns", "get_netrc_auth", "str") in kinds["Why does get_netrc_auth return a str?"]
    assert ("raises", "prepare_url", "InvalidURL") in kinds["When does prepare_url raise InvalidURL?"]
    assert ("file", "Session", "sessions.py") in kinds["Why is Session defined in sessions.py?"]


def test_local_judge_marks_the_defining_passage_and_the_set(resolve) -> None:
    ents = parse_source(SOURCE, "http/client.py", "python", "h").entities
    cands = [Candidate(id=e.id, file=e.file, start_line=e.start_line, end_line=e.end_line, entity=e.qualname, kind=e.kind,
                       language=e.language, signature=e.signature, docstring=e.docstring, body=e.body, bases=e.bases,
                       params=e.params, facts=e.facts, fused_rank=i + 1, fused_score=0.01) for i, e in enumerate(ents)]
    j = judge_local("Why does Client.send default stream to True?", cands)
    send = next(c for c in cands if c.entity == "Client.send")
    assert j.scores[send.id].contradicts >= 0.8 and j.conflict >= 0.8
    assert "defaults to `False`" in j.reasons[send.id] and not j.premises[0].holds
    assert entity_of(send).facts == send.facts


def test_report_guidance_and_answer_state_the_correction(indexed_project: Path) -> None:
    report = run_query(str(indexed_project), "Why does Session inherit from RetryError?")
    line = "`Session` inherits from `BaseSession`, not `RetryError` (pkg/session.py:14)"
    assert f"premise: the question assumes otherwise; {line}" in report.text
    assert report.answer.text.startswith(f"Note: {line}")
    assert any(rp.verdict == "conflict" and rp.candidate.entity == "Session" for rp in report.selection.included)
    plain = run_query(str(indexed_project), "Why does Session inherit from BaseSession?")
    assert "premise:" not in plain.text and not plain.answer.text.startswith("Note:")


def test_generated_set_has_twins_and_ten_phrasings_per_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "core.py").write_text(SOURCE.decode())
    (pkg / "other.py").write_text("class Other:\n    def go(self, depth: int = 2) -> int:\n        raise ValueError\n")
    cases = generate(tmp_path, "fixture", per_kind=10)
    assert sum(c.false_premise for c in cases) == sum(not c.false_premise for c in cases) > 0
    table, _ = score(cases, {"fixture": resolver_for(tmp_path)})
    assert table["all"]["false_alarm"] <= 0.05 and table["all"]["recall"] >= 0.85
    fresh = generate(tmp_path, "fixture", per_kind=10, phrasings="fresh")
    assert sum(c.false_premise for c in fresh) == sum(not c.false_premise for c in fresh) > 0
    monkeypatch.setitem(premise_set.PHRASINGS, "partial", {"kind": ("Is {S} a {K}?",)})  # a set covers only its kinds
    assert {c.kind for c in generate(tmp_path, "fixture", per_kind=10, phrasings="partial")} == {"kind"}


def test_cue_gates_never_hide_a_premise(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind's patterns run only when the question holds one of its cue words; over every phrasing of the
    template sets, and questions without cues, the gates change nothing."""
    import re

    from assay.stages.evaluate.premise_set import PHRASINGS
    from assay.stages.query import premise

    values = {"S": "`Session.request`", "V": "`dict`", "P": "timeout", "D": "a staticmethod", "N": "staticmethod",
              "W": "cached property", "B": "dict", "F": "sessions.py", "M": "sessions", "K": "class"}
    questions = [re.sub(r"{(\w+)}", lambda m: values[m.group(1)], t)
                 for sets in PHRASINGS.values() for ts in sets.values() for t in ts]
    questions += ["How does the retry loop back off?", "Where is the connection pool emptied?", "What does prepare_body do?",
                  "Why do hooks run after the response?", "Is `send` async?", "Why does get_netrc_auth return a str?"]
    gated = [premise.extract(q) for q in questions]
    monkeypatch.setattr(premise, "_GATES", {kind: ("",) for kind in premise._GRAMMAR})  # "" is in every question
    assert [premise.extract(q) for q in questions] == gated
    assert sum(map(bool, gated)) > len(questions) // 2  # most filled templates do state premises

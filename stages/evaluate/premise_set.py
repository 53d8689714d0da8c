"""Premise evaluation set, generated from Python `ast` facts of third-party sdists, and its scorer.

Ground truth comes from `ast` (independent of the tree-sitter facts the checker reads). For each
premise kind, subjects whose name is defined once in the package get a false premise and a
true-premise twin, phrased with one of at least ten templates per kind (why/how/what/is/does
questions, backticked or bare names, `Class.method` paths, possessives, appositives, call syntax).
The scorer parses the same tree with the parse stage, resolves names like the catalog does, and
reports per kind how many false premises were flagged (recall) and how many true twins were
flagged (false alarms).
"""

from __future__ import annotations

import ast
import builtins
import random
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from assay.stages.core.artifacts import Entity
from assay.stages.index.languages import language_for
from assay.stages.index.parse import parse_source
from assay.stages.query.premise import check_question, resolver_from

PREMISE_CORPORA = ("httpx==0.28.1", "click==8.1.8", "rich==13.9.4", "starlette==0.41.3")
KINDS = ("base", "param", "default", "decorator", "async", "returns", "raises", "file", "kind")
FLAG_AT = 0.5  # the local thresholds' contradicts_min

TEMPLATES: dict[str, tuple[str, ...]] = {
    "base": (
        "Why does {S} inherit from {V}?", "How does {S} extend {V}?", "Why is {S} a subclass of {V}?",
        "{S}, a subclass of {V}, does what when it is created?", "Since {S} derives from {V}, which methods does it reuse?",
        "Why is {V} the base class of {S}?", "What does {S} gain by subclassing {V}?",
        "Is {S} a child class of {V} for compatibility reasons?", "Why was {S} made to inherit {V} instead of wrapping it?",
        "How does the {S} class use {V} as its parent?", "What is the role of {V} as the parent class of {S}?",
        "What does {S} override from its base class {V}?",
    ),
    "param": (
        "What does the {P} parameter of {S} control?", "Why does {S} take a {P} argument?", "How is {S}'s {P} argument used?",
        "What happens when I pass {P} to {S}?", "Why does {S} accept an optional {P} parameter?",
        "In {S}, what is the {P} argument for?", "How does {S} validate the {P} keyword argument?",
        "What should I give {S} as its {P} parameter?", "Why is the {P} argument to {S} ignored sometimes?",
        "Explain {S}({P}=...) usage.", "When calling {S} with the {P} option, what changes?",
    ),
    "default": (
        "Why does the {P} parameter of {S} default to {V}?", "Why does {S}'s {P} default to {V}?",
        "What is the reason {P} defaults to {V} in {S}?", "Why is the default value of {P} in {S} set to {V}?",
        "{S} sets {P} to {V} by default; why?", "How does {S} behave with its default {P} of {V}?",
        "In {S}, why does {P} default to {V}?", "Why does {S} use {P}={V} by default?",
        "What changes if I override {S}'s default {P} of {V}?", "Why was {V} chosen as the default for {P} in {S}?",
        "Is {P}={V} the default in {S}?",
    ),
    "decorator": (
        "Why is {S} {D}?", "Why is {S} declared as {D}?", "Why is {S} decorated with @{N}?", "What does the @{N} decorator on {S} do?",
        "Why does {S} use @{N}?", "Why make {S} {D} rather than a plain method?", "Is {S} {D} so it can be used without arguments?",
        "How does the {W} {S} get its value?", "Why is {S} marked as {D}?", "What breaks if {S} stops being {D}?",
        "Why was {S} written as {D}?",
    ),
    "returns": (
        "Why does {S} return {V}?", "What is in the {B} that {S} returns?", "Why is the return type of {S} {V}?",
        "How is the {B} returned by {S} built?", "Why does {S} give back {V}?", "{S} returns {V}; when is it empty?",
        "Why is {S} annotated to return {V}?", "What does {S}'s return value of type {B} contain?",
        "Does {S} always return {V}?", "Why is {S} typed as returning {V}?",
    ),
    "raises": (
        "Why does {S} raise {V}?", "When does {S} throw a {V}?", "Why is {V} raised by {S}?",
        "How should I handle the {V} that {S} raises?", "What input makes {S} fail with {V}?", "Why can {S} raise {V}?",
        "Under which condition is {V} thrown from {S}?", "How do I catch {V} from {S}?",
        "Why raise {V} in {S} instead of returning None?", "{S} raises {V}: is that documented?",
    ),
    "file": (
        "Why is {S} defined in {F}?", "Why does {F} define {S}?", "How is {S} in {F} used by other modules?",
        "Why does {S} live in {F}?", "What else is implemented next to {S} in the {M} module?", "Why was {S} placed in {F}?",
        "Is {S} declared in {F} for import-cycle reasons?", "How does the {M} module's {S} work?",
        "Why is {S} located inside {F}?", "Which helpers does {S} from {F} call?",
    ),
    "kind": (
        "Why is {S} a {K}?", "How does the {K} {S} work?", "What does the {S} {K} do?", "Is {S} a {K} for historical reasons?",
        "Why was {S} implemented as a {K}?", "{S} is a {K}; how is it used?", "Why is {S} defined as a {K}?",
        "Where is the {K} {S} used?", "Why did the authors make {S} a {K}?", "Who calls the {K} {S}?",
    ),
}
ASYNC_TEMPLATES: tuple[tuple[str, str], ...] = (  # (states async, states sync), used as a pair per subject
    ("Why is {S} async?", "Why is {S} synchronous?"),
    ("Why is {S} a coroutine?", "Why is {S} a blocking function?"),
    ("Do I need to await {S}?", "Why does {S} run synchronously?"),
    ("Why does {S} have to be awaited?", "Is {S} a blocking call?"),
    ("How does the async function {S} handle cancellation?", "How does the synchronous {S} avoid the event loop?"),
    ("What happens while awaiting {S}?", "Why is {S} not async?"),
    ("Why was {S} written as an async def?", "Why was {S} written as a sync function?"),
    ("Is {S} asynchronous?", "Why isn't {S} a coroutine?"),
    ("Why does {S} run asynchronously?", "Why does {S} block until done?"),
    ("Why is {S}, which is async, slow?", "Why is {S}, which is synchronous, slow?"),
)
TEMPLATES["async"] = tuple(t for pair in ASYNC_TEMPLATES for t in pair)

# Phrasings written after the grammar was tuned on TEMPLATES and never tuned on: the generalisation check.
UNSEEN_TEMPLATES: dict[str, tuple[str, ...]] = {
    "base": (
        "Which {V} methods does {S} inherit?", "Does {S} still derive from {V} in this version?", "I see {S} subclasses {V}; why?",
        "Why did {S} become a {V} subclass?", "What is the point of {S} extending {V}?", "How does {S}'s parent {V} initialise it?",
        "Why would {S} derive from {V} rather than object?", "{S} (a {V} subclass): how is it constructed?",
        "Where does {S} call super() into {V}?", "Because {S} is a subclass of {V}, can I pass it anywhere a {V} goes?",
    ),
    "param": (
        "How do I set {P} when calling {S}?", "What is {S}'s {P} for?", "Can I pass {P}= to {S}?", "Why does {S} need {P} as an argument?",
        "What type should the {P} argument have in {S}?", "Why is {P} a parameter of {S}?", "Does {S} still accept {P}?",
        "How does {S} use the {P} it receives?", "What if I call {S} without {P}?", "Explain the {P} keyword that {S} takes.",
    ),
    "default": (
        "Why is {P} {V} by default in {S}?", "{S} defaults {P} to {V}. Why?", "Why does {S} default its {P} to {V}?",
        "What's the rationale for {P} defaulting to {V} in {S}?", "If I omit {P}, {S} uses {V}; why?",
        "Why does {S} assume {P}={V} unless told otherwise?", "Why has {S} got {P}={V} as its default?",
        "Why {V} as {S}'s default {P}?", "How come {P} is {V} by default for {S}?", "Why is {V} the default {P} of {S}?",
    ),
    "decorator": (
        "Why is {S} exposed as {D}?", "How is {S} implemented as {D}?", "Why use @{N} for {S}?", "What does @{N} do for {S}?",
        "Why is {S} defined with @{N}?", "Is {S} a {W}?", "Why did they turn {S} into {D}?", "What does {S} being {D} mean for subclasses?",
        "Why is {S} a {W} instead of a regular method?", "How does accessing {S} as {D} work?",
    ),
    "returns": (
        "Why does {S} hand back {V}?", "Where is the {B} {S} returns created?", "{S} gives me {V}; how do I use it?",
        "Why is {S}'s return type {V}?", "What's inside the {B} returned from {S}?", "Why does {S} produce {V}?",
        "Can {S} return something other than {V}?", "How do I read the {B} that comes back from {S}?",
        "Why is {S} declared to return {V}?", "What fields does the {B} from {S} have?",
    ),
    "raises": (
        "Why would {S} throw {V}?", "In what case does {S} raise a {V}?", "Why is a {V} raised inside {S}?",
        "How can I avoid the {V} from {S}?", "What triggers {V} in {S}?", "Does {S} raise {V} on bad input?",
        "Where in {S} is {V} thrown?", "Should I catch {V} around {S}?", "Why does calling {S} end in a {V}?",
        "Which path in {S} raises {V}?",
    ),
    "file": (
        "Why does {S} sit in {F}?", "Why is {S} kept in {F}?", "Why does {F} contain {S}?", "What imports {S} from {F}?",
        "How is {S}, defined in {F}, tested?", "Why was {S} put in {F}?", "{S} lives in {F}; why there?",
        "Why is {S} implemented in the {M} module?", "Why is {S} part of {F}?", "Where in {F} is {S}?",
    ),
    "kind": (
        "Why is {S} implemented as a {K} and not otherwise?", "Is {S} a {K}?", "What does {K} {S} return?", "Why did {S} end up a {K}?",
        "Where is {K} {S} defined?", "Why make {S} a {K}?", "{S}, a {K}, is used where?", "How do I call the {K} {S}?",
        "What does the {K} named {S} do?", "Why is {S} written as a {K}?",
    ),
}
UNSEEN_ASYNC: tuple[tuple[str, str], ...] = (
    ("Why must callers await {S}?", "Why can {S} be called without await?"),
    ("How is {S} scheduled as a coroutine?", "Why is {S} a regular blocking function?"),
    ("Why is {S} an async method?", "Why is {S} a sync method?"),
    ("What does {S} await internally, being async?", "Why is {S} synchronous even in async code?"),
    ("Why is {S} asynchronous?", "Why does {S} execute synchronously?"),
)
UNSEEN_TEMPLATES["async"] = tuple(t for pair in UNSEEN_ASYNC for t in pair)
# Written in stop 37 and never tuned on (no pattern was added for any of them): parameter, return and kind before that
# stop's grammar read "the {K} named {S}", "{B} returned from {S}" and "the {B} {S} returns" (found among the unseen
# phrasings' misses), the other six kinds after. The false alarms they raised were read and mended, so only the fresh
# false-alarm figure is not strictly held out.
FRESH_TEMPLATES: dict[str, tuple[str, ...]] = {
    "param": (
        "What happens to the {P} I pass to {S}?", "Why does {S} take a {P} argument?", "Is {P} required when calling {S}?",
        "How should I choose {P} for {S}?", "What does the {P} parameter of {S} control?", "Can {S} be called with {P} set?",
        "Where does {S} read its {P} argument?", "Why was {P} added to {S}'s signature?",
        "Which values of {P} does {S} accept?", "What is {S} doing with {P}?",
    ),
    "returns": (
        "What does the {B} returned from {S} hold?", "Why would {S} return {V} here?", "How big is the {B} {S} returns?",
        "When {S} returns {V}, who consumes it?", "Is the {B} that comes out of {S} cached?", "Why does {S} end up returning {V}?",
        "I get {V} back from {S}; why?", "Why is the result of {S} {V}?", "What's the {B} that {S} gives back used for?",
        "{S}() -> {V}: why this signature?",
    ),
    "base": (
        "What does {S} gain from extending {V}?", "Which methods of {V} does {S} override?", "Why was {S} built on top of {V}?",
        "Could {S} stop inheriting from {V}?", "{S} is a kind of {V}, right? What does it add?",
        "How does {S} differ from its base class {V}?", "Since {S} derives from {V}, what does super() call?",
        "Is it safe to use {S} wherever {V} is expected?", "What does {S} inherit from {V}?", "Why is {V} the parent of {S}?",
    ),
    "default": (
        "Why does {P} start out as {V} in {S}?", "What happens when {S} runs with the default {P} of {V}?",
        "Is {V} a sensible default for {S}'s {P}?", "Why did {S} pick {V} as the default for {P}?",
        "Calling {S} without {P} means {P}={V}; is that safe?", "Why is {S}({P}={V}) the default behaviour?",
        "Should the {P} default of {V} in {S} be changed?", "When {P} is left at {V}, what does {S} do?",
        "Why does {S} fall back to {P}={V}?", "What does the default {P}={V} of {S} mean?",
    ),
    "decorator": (
        "Why is {S} a {W}?", "What changes because {S} is decorated with @{N}?", "Could {S} work without @{N}?",
        "Why does {S} need to be {D}?", "How do subclasses override {S}, given it is {D}?", "Why mark {S} with @{N}?",
        "Is there a reason {S} uses @{N}?", "When was {S} turned into {D}?", "What does {S} lose by being {D}?",
        "Why is {S} wrapped in @{N}?",
    ),
    "raises": (
        "Why can {S} end up raising {V}?", "What makes {S} throw a {V}?", "Is catching {V} from {S} necessary?",
        "When {S} raises {V}, what state is left?", "How do I stop {S} from raising {V}?", "Which input leads {S} to raise {V}?",
        "Why does {S} signal errors with {V}?", "Does {S} ever raise {V} on purpose?", "What line of {S} raises {V}?",
        "Why does a {V} come out of {S}?",
    ),
    "file": (
        "Why does {S} live in {F}?", "Why was {S} placed in {F} and not elsewhere?", "What else in {F} uses {S}?",
        "How is {S} in {F} structured?", "Why is {S} kept inside {F}?", "Who imports {S} from the {M} module?",
        "Why is {S} declared in {F}?", "Should {S} move out of {F}?", "{F} defines {S}: why?", "Why is {S} found in {F}?",
    ),
    "kind": (
        "How is the {K} called {S} tested?", "Why is {S} defined as a {K}?", "What arguments does the {K} {S} take?",
        "Since {S} is a {K}, can I subclass it?", "Where do we use the {S} {K}?", "Is {S} really a {K}?",
        "Explain the {K} named {S}.", "Why did they write {S} as a {K}?", "Who calls the {K} {S}?",
        "What's the purpose of the {S} {K}?",
    ),
}
FRESH_ASYNC: tuple[tuple[str, str], ...] = (  # (an async phrasing, a sync one), as UNSEEN_ASYNC
    ("Why do I have to await {S}?", "Why can {S} be called directly without awaiting?"),
    ("What does {S} await on, as a coroutine?", "Why is {S} a plain synchronous function?"),
    ("Why was {S} made async?", "Why does {S} block the caller?"),
    ("Is awaiting {S} required?", "Why is {S} not a coroutine?"),
    ("Why is {S} declared with async def?", "Why is {S} declared with a plain def?"),
)
FRESH_TEMPLATES["async"] = tuple(t for pair in FRESH_ASYNC for t in pair)
# Parameter phrasings written in stop 37 before the grammar read the fresh set's ("the p I pass to f", "is p required
# when calling f", ...), and never tuned on: whether those patterns reach phrasings nobody wrote them for.
FRESH2_TEMPLATES: dict[str, tuple[str, ...]] = {
    "param": (
        "Does {S} let me pass {P}?", "What is the {P} argument to {S} used for?", "Why would I give {S} a {P}?",
        "Is it ok to leave out {P} when I call {S}?", "How does {S} treat a None {P}?", "What should {P} be when calling {S}?",
        "Where is {P} consumed inside {S}?", "Which type does {S} expect for {P}?", "When I call {S}, is {P} optional?",
        "What breaks if {S} gets a bad {P}?",
    ),
}
# Parameter phrasings written in stop 38 before its change to the grammar (a parameter read from the words around a
# call), and return phrasings written after it; never tuned on.
FRESH3_TEMPLATES: dict[str, tuple[str, ...]] = {
    "param": (
        "Can I hand {P} to {S}?", "What happens to {P} once {S} receives it?", "Is {P} forwarded by {S} to another call?",
        "Why is {P} keyword-only in {S}?", "What type is {S}'s {P}?", "Does {S} validate {P} before using it?",
        "How do I call {S} without {P}?", "What is a sensible value for {P} in {S}?", "Is {P} still accepted by {S}?",
        "What does {S} do when {P} is omitted?",
    ),
    "returns": (  # written in stop 38 after the parameter change, before any change for returns
        "Where does the {B} from {S} go next?", "Is {V} what {S} returns on success?", "Why does {S} come back with {V}?",
        "What do callers do with the {B} {S} gives them?", "Should {S} return {V} at all?", "{S} outputs {V}; is that documented?",
        "Why does calling {S} result in {V}?", "What does the {B} that {S} hands back contain?",
        "Is returning {V} from {S} intentional?", "Does the {B} {S} produces get cached?",
    ),
    # written in stop 38 after the return change, before any change for these kinds
    "default": (
        "Since {P} defaults to {V} in {S}, do I need to set it?", "With {P} left at {V}, how does {S} behave?",
        "Is {S} safe to call with its default {P} ({V})?", "Who decided that {S} should use {V} for {P} by default?",
        "What if I override {S}'s {P} default of {V}?", "{S} uses {P}={V} unless told otherwise; why?",
        "Why is {V} the out-of-the-box {P} for {S}?", "Does {S} still default {P} to {V}?",
        "When nobody passes {P}, {S} takes {V}; is that right?", "Why does {S} assume {P} is {V} by default?",
    ),
    "decorator": (
        "Is {S} meant to be used as {D}?", "Why does {S} carry @{N}?", "What would break if @{N} were removed from {S}?",
        "How is {S} accessed, being {D}?", "Why did someone put @{N} on {S}?", "Does {S} behave like {D}?",
        "Can I call {S} on the class, given it is {D}?", "Why does {S} need the @{N} decorator?",
        "Since {S} is {D}, what does it receive first?", "When did {S} get its @{N}?",
    ),
    "base": (
        "What does {S} borrow from {V}?", "Where does {S} override behaviour from {V}?", "Is {V} an ancestor of {S}?",
        "Why does {S} build on {V}?", "How much of {V} does {S} reuse?", "Can {S} be passed where a {V} is wanted, as its subclass?",
        "What made {S} derive from {V} instead of composing it?", "Which {V} hooks does {S} implement?",
        "Why is {S} modelled as a {V}?", "Should {S} keep {V} as a parent?",
    ),
}
# Questions about a function that presuppose no parameter, though their nouns are parameter names elsewhere
# (result, response, config, ...): every flag on them is a false alarm. Written in stop 38 with FRESH3_TEMPLATES.
DISTRACTOR_TEMPLATES: tuple[str, ...] = (
    "When I call {S}, how is the result cached?", "Does {S} write the response to disk?",
    "What happens to the request object after {S} returns?", "Why does {S} log the url at debug level?",
    "How does {S} compute the size of its output?", "Is the config reloaded every time {S} runs?",
    "Which name does {S} register the handler under?", "Why does {S} sort the items before returning?",
    "How long does {S} wait before the timeout fires?", "What text does {S} print when it fails?",
)
# Written in stop 38 after all of that stop's premise changes and before the fresh3 set's misses were read: the
# held-out check for the round that mended fresh3.
FRESH4_TEMPLATES: dict[str, tuple[str, ...]] = {
    "param": (
        "Is {P} an input of {S}?", "What role does {P} play when {S} is called?", "Do callers of {S} usually set {P}?",
        "How is {P} validated by {S}?", "What happens if {S} is invoked with an empty {P}?", "Can {P} be None when I call {S}?",
        "Why does {S} need {P} at all?", "Is {P} positional or keyword in {S}?", "Where in {S} is {P} used?",
        "Does changing {P} alter what {S} does?",
    ),
    "returns": (
        "Why does {S} hand me {V}?", "How should I consume the {B} {S} gives back?", "After {S} finishes, I have {V}; what next?",
        "Could {S} give {V} back under some condition?", "What's in the {B} object returned by {S}?", "Why is {V} the output of {S}?",
        "Does {S}'s {B} result need closing?", "How large can the {B} from {S} get?", "{S} -> {B}? Why?",
        "What kind of object is the {B} that {S} produces?",
    ),
    "base": (
        "What does {S} get for free from {V}?", "Is {S} a specialised {V}?", "How does {S} extend the behaviour of {V}?",
        "Which of {V}'s methods does {S} redefine?", "What would change if {S} no longer derived from {V}?",
        "Is {S} part of the {V} hierarchy?", "Can I treat {S} as a {V}?", "Why is {V} in the MRO of {S}?",
        "How does {S} specialise {V}?", "Why does {S} subclass {V}?",
    ),
    "default": (
        "If I don't pass {P} to {S}, is it {V}?", "Why would {S} fall back on {V} for {P}?",
        "What's the reasoning behind {P}={V} in {S}'s signature?", "Does {S} treat a missing {P} as {V}?",
        "Is {P} {V} unless I say otherwise in {S}?", "Why does {S} come with {P} set to {V}?",
        "What does {S} do with {P} when it keeps its default, {V}?", "{S}: why {P}={V} by default?",
        "Why is {P} preset to {V} in {S}?", "Who relies on {S}'s default {P} of {V}?",
    ),
    "decorator": (
        "What does @{N} on {S} change?", "Why is {S} declared via @{N}?", "Why would {S} be written as {D}?",
        "How does being {D} affect {S}?", "Should {S} stay {D}?", "Does {S} still work if it stops being {D}?",
        "Why does {S} use the {W} decorator?", "What's the effect of @{N} above {S}?", "Why make {S} {D}?",
        "Is there a benefit to {S} being {D}?",
    ),
}
PHRASINGS = {"tuned": TEMPLATES, "unseen": UNSEEN_TEMPLATES, "fresh": FRESH_TEMPLATES, "fresh2": FRESH2_TEMPLATES,
             "fresh3": FRESH3_TEMPLATES, "fresh4": FRESH4_TEMPLATES}
# each set's async phrasings as (async, sync) pairs, one pair per subject; its "async" templates are these, flattened
ASYNC_PAIRS = {"tuned": ASYNC_TEMPLATES, "unseen": UNSEEN_ASYNC, "fresh": FRESH_ASYNC}

_DECO_PHRASES = {"property": ("a property", "property"), "staticmethod": ("a static method", "static method"),
                 "classmethod": ("a class method", "class method"), "cached_property": ("a cached property", "cached property")}
_BUILTIN_WORDS = {"str": "a str", "int": "an int", "bool": "a bool", "float": "a float", "bytes": "bytes", "dict": "a dict",
                  "list": "a list", "tuple": "a tuple", "None": "None", "set": "a set"}


@dataclass
class PremiseCase:
    kind: str
    question: str
    false_premise: bool
    corpus: str
    subject: str


@dataclass
class _Def:
    name: str
    qual: str
    file: str
    node: ast.AST
    cls: str | None = None


@dataclass
class _Facts:
    defs: list[_Def] = field(default_factory=list)
    by_name: dict[str, list[_Def]] = field(default_factory=lambda: defaultdict(list))
    class_bases: dict[str, list[str]] = field(default_factory=dict)


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name_of(node.func)
    if isinstance(node, ast.Subscript):
        return _name_of(node.value)
    return ""


def package_files(root: Path) -> Iterator[Path]:
    """Library sources only: tests, docs and examples are not the package."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(part in ("tests", "test", "docs", "examples", "testing", "benchmarks") for part in rel.split("/")[:-1]):
            continue
        yield path


def collect(root: Path) -> _Facts:
    facts = _Facts()
    for path in package_files(root):
        try:
            tree = ast.parse(path.read_text("utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        rel = path.relative_to(root).as_posix()

        def visit(node: ast.AST, cls: str | None, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    qual = f"{prefix}{child.name}"
                    d = _Def(child.name, qual, rel, child, cls)
                    facts.defs.append(d)
                    facts.by_name[child.name].append(d)
                    if isinstance(child, ast.ClassDef):
                        facts.class_bases.setdefault(child.name, [_name_of(b) for b in child.bases])
                    visit(child, child.name if isinstance(child, ast.ClassDef) else None, qual + ".")
                elif isinstance(child, (ast.If, ast.Try, ast.With, ast.For, ast.While)) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, cls, prefix)  # definitions under `if WIN:` or `try:` are still module/class members
                elif isinstance(child, ast.Assign) and cls is None and prefix == "":
                    for t in child.targets:
                        if isinstance(t, ast.Name) and t.id.isupper() and len(t.id) > 2:
                            d = _Def(t.id, t.id, rel, child)
                            facts.defs.append(d)
                            facts.by_name[t.id].append(d)

        visit(tree, None, "")
    return facts


def _ancestors(facts: _Facts, name: str) -> set[str]:
    out: set[str] = set()
    stack = [name]
    while stack:
        n = stack.pop()
        bases = facts.class_bases.get(n)
        if bases is None:
            obj = getattr(builtins, n, None)
            bases = [b.__name__ for b in obj.__mro__[1:]] if isinstance(obj, type) else []
        for b in bases:
            if b and b not in out:
                out.add(b)
                stack.append(b)
    return out


def _direct_raises(fn: ast.AST) -> set[str]:
    found: set[str] = set()
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Raise) and n.exc is not None:
            name = _name_of(n.exc)
            if name[:1].isupper():
                found.add(name)
        stack.extend(ast.iter_child_nodes(n))
    return found


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs] if p.arg not in ("self", "cls")]


def _defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    out = {p.arg: ast.unparse(d) for p, d in zip(positional[len(positional) - len(a.defaults):], a.defaults)}
    out.update({p.arg: ast.unparse(d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    return {k: v for k, v in out.items() if k not in ("self", "cls")}


def _annotation_names(fn: ast.AST) -> set[str]:
    """Type names an annotation mentions (`t.Optional[email.message.Message]` -> Optional, Message)."""
    ret = getattr(fn, "returns", None)
    if ret is None:
        return set()
    text = ast.unparse(ret)
    return {tok.rsplit(".", 1)[-1] for tok in re.findall(r"[A-Za-z_][\w.]*", text) if not tok.startswith(("'", '"'))} - {"t", "typing"}


def _render_subject(d: _Def, rng: random.Random) -> str:
    name = f"{d.cls}.{d.name}" if d.cls and rng.random() < 0.4 else d.name
    return f"`{name}`" if rng.random() < 0.5 else name


def _type_phrase(name: str, rng: random.Random) -> tuple[str, str]:
    """(with article, bare) renderings of a type for the templates."""
    if name in _BUILTIN_WORDS:
        return _BUILTIN_WORDS[name], name
    bare = f"`{name}`" if rng.random() < 0.5 else name
    return (f"a {bare}" if rng.random() < 0.5 else bare), bare


def _unique_defs(facts: _Facts) -> list[_Def]:
    """Definitions whose name is defined once in the package (a subject the checker can resolve), dunders aside."""
    return [d for d in facts.defs if len(facts.by_name[d.name]) == 1 and not d.name.startswith("__")]


def generate(root: Path, corpus: str, per_kind: int = 40, seed: int = 7, phrasings: str = "tuned") -> list[PremiseCase]:
    """False premises with a true twin each, per kind, from one unpacked sdist, in one set of `PHRASINGS` (`unseen`
    and `fresh`: held back); a kind the set has no phrasings for gets no cases."""
    rng = random.Random(seed)
    templates = PHRASINGS[phrasings]
    async_pairs = ASYNC_PAIRS.get(phrasings, ())
    facts = collect(root)
    unique = _unique_defs(facts)
    functions = [d for d in unique if isinstance(d.node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    classes = [d for d in unique if isinstance(d.node, ast.ClassDef)]
    cases: list[PremiseCase] = []
    counters: dict[str, int] = defaultdict(int)

    def add(kind: str, subject: _Def, false_q: str, true_q: str) -> None:
        if kind not in templates:
            return
        cases.append(PremiseCase(kind, false_q, True, corpus, subject.qual))
        cases.append(PremiseCase(kind, true_q, False, corpus, subject.qual))
        counters[kind] += 1

    def template(kind: str) -> str:
        ts = templates.get(kind, ("",))  # no phrasings: `add` keeps no case
        return ts[counters[kind] % len(ts)]

    class_names = sorted(facts.class_bases)
    for d in rng.sample(classes, len(classes)):
        if counters["base"] >= per_kind:
            break
        bases = [b for b in facts.class_bases.get(d.name, []) if b and b not in ("object", "Generic", "Protocol")]
        if not bases:
            continue
        anc = _ancestors(facts, d.name)
        wrong = [c for c in class_names if c not in anc and c != d.name and len(facts.by_name[c]) == 1 and d.name not in _ancestors(facts, c)]
        if not wrong:
            continue
        t, s = template("base"), _render_subject(d, rng)
        add("base", d, t.format(S=s, V=rng.choice(wrong)), t.format(S=s, V=rng.choice(bases)))

    all_params = sorted({p for f in functions for p in _params(f.node) if len(p) > 2})  # type: ignore[arg-type]
    for d in rng.sample(functions, len(functions)):
        if counters["param"] >= per_kind:
            break
        fn = d.node
        params = _params(fn)  # type: ignore[arg-type]
        if not params or fn.args.kwarg is not None:  # type: ignore[attr-defined]
            continue
        wrong = [p for p in all_params if p not in params]
        t, s = template("param"), _render_subject(d, rng)
        add("param", d, t.format(S=s, P=rng.choice(wrong)), t.format(S=s, P=rng.choice(params)))

    for d in rng.sample(functions, len(functions)):
        if counters["default"] >= per_kind:
            break
        defaults = {k: v for k, v in _defaults(d.node).items() if len(v) <= 20 and "\n" not in v}  # type: ignore[arg-type]
        simple = {k: v for k, v in defaults.items() if v in ("None", "True", "False") or v.lstrip("-").isdigit() or v[:1] in "'\""}
        if not simple:
            continue
        p, v = rng.choice(sorted(simple.items()))
        wrong_v = {"None": "True", "True": "False", "False": "True"}.get(v) or (str(int(v) + 1) if v.lstrip("-").isdigit() else "None")
        t, s = template("default"), _render_subject(d, rng)
        show = (lambda x: f"`{x}`" if rng.random() < 0.5 else x)
        add("default", d, t.format(S=s, P=p, V=show(wrong_v)), t.format(S=s, P=p, V=show(v)))

    for d in rng.sample(functions, len(functions)):
        if counters["decorator"] >= per_kind:
            break
        decos = {_name_of(x) for x in d.node.decorator_list}  # type: ignore[attr-defined]
        have = [x for x in ("property", "staticmethod", "classmethod", "cached_property") if x in decos]
        if not have or d.cls is None:
            continue
        real = have[0]
        options = [x for x in ("property", "staticmethod", "classmethod") if x not in decos and not (real == "cached_property" and x == "property")]
        wrong = rng.choice(options)
        t, s = template("decorator"), _render_subject(d, rng)

        def fill(name: str) -> str:
            phrase, word = _DECO_PHRASES[name]
            return t.format(S=s, D=phrase, N=name, W=word)

        add("decorator", d, fill(wrong), fill(real))

    async_defs = [f for f in functions if isinstance(f.node, ast.AsyncFunctionDef)]
    sync_defs = rng.sample([f for f in functions if not isinstance(f.node, ast.AsyncFunctionDef)], min(len(async_defs) or 5, len(functions)))
    mixed = [x for pair_ in zip(async_defs, sync_defs) for x in pair_] or sync_defs  # as many sync subjects as async ones
    for pair, d in enumerate(mixed[:per_kind] if async_pairs else []):
        is_async = isinstance(d.node, ast.AsyncFunctionDef)
        a, sy = async_pairs[pair % len(async_pairs)]
        s = _render_subject(d, rng)
        true_t, false_t = (a, sy) if is_async else (sy, a)
        add("async", d, false_t.format(S=s), true_t.format(S=s))

    annotated = [f for f in functions if _annotation_names(f.node) and not (_annotation_names(f.node) & {"Any", "T", "Self"})]
    pool = sorted({n for f in annotated for n in _annotation_names(f.node)
                   if n not in ("Optional", "Union", "typing", "t", "Iterator", "Iterable", "Generator") and len(n) > 1})
    for d in rng.sample(annotated, len(annotated)):
        if counters["returns"] >= per_kind:
            break
        names = _annotation_names(d.node)
        real = sorted(n for n in names if n in pool and n != "None")
        if not real:
            continue
        related = set(names) | {a for n in names for a in _ancestors(facts, n)}
        wrong = [n for n in pool if n not in related and not (_ancestors(facts, n) & names) and n != "None"]
        if not wrong:
            continue
        t, s = template("returns"), _render_subject(d, rng)
        (wa, wb), (ra, rb) = _type_phrase(rng.choice(wrong), rng), _type_phrase(rng.choice(real), rng)
        add("returns", d, t.format(S=s, V=wa, B=wb), t.format(S=s, V=ra, B=rb))

    raised_anywhere = sorted({r for f in functions for r in _direct_raises(f.node)})
    for d in rng.sample(functions, len(functions)):
        if counters["raises"] >= per_kind:
            break
        raised = _direct_raises(d.node)
        if not raised:
            continue
        related = raised | {a for r in raised for a in _ancestors(facts, r)}
        wrong = [e for e in raised_anywhere if e not in related and not (_ancestors(facts, e) & raised)]
        if not wrong:
            continue
        t, s = template("raises"), _render_subject(d, rng)
        add("raises", d, t.format(S=s, V=rng.choice(wrong)), t.format(S=s, V=rng.choice(sorted(raised))))

    files = sorted({d.file for d in facts.defs})
    for d in rng.sample(unique, len(unique)):
        if counters["file"] >= per_kind:
            break
        if isinstance(d.node, ast.Assign) or len(files) < 2:
            continue
        other = rng.choice([f for f in files if f.rsplit("/", 1)[-1] != d.file.rsplit("/", 1)[-1]])
        t, s = template("file"), _render_subject(d, rng)

        def names(path: str) -> tuple[str, str]:
            return path.rsplit("/", 1)[-1], path.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")

        (ff, fm), (tf, tm) = names(other), names(d.file)
        add("file", d, t.format(S=s, F=ff, M=fm), t.format(S=s, F=tf, M=tm))

    for d in rng.sample(unique, len(unique)):
        if counters["kind"] >= per_kind:
            break
        if isinstance(d.node, ast.ClassDef):
            real, wrong = "class", "function"
        elif isinstance(d.node, ast.Assign):
            real, wrong = "constant", "function"
        else:
            real, wrong = ("method" if d.cls else "function"), "class"
        t, s = template("kind"), _render_subject(d, rng)
        add("kind", d, t.format(S=s, K=wrong), t.format(S=s, K=real))
    return cases


def distractors(root: Path, corpus: str, per_template: int = 8, seed: int = 7) -> list[PremiseCase]:
    """`DISTRACTOR_TEMPLATES` over functions whose parameters are all named (what the checker can check): true
    premises only, so each flag is a false alarm."""
    rng = random.Random(seed)
    facts = collect(root)
    functions = [d for d in _unique_defs(facts) if isinstance(d.node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and d.node.args.kwarg is None]
    picked = rng.sample(functions, min(len(functions), per_template * len(DISTRACTOR_TEMPLATES)))
    return [PremiseCase("param", DISTRACTOR_TEMPLATES[i % len(DISTRACTOR_TEMPLATES)].format(S=_render_subject(d, rng)),
                        False, corpus, d.qual) for i, d in enumerate(picked)]


def resolver_for(root: Path):
    """Parse the tree with the parse stage and resolve names as `Catalog.by_name` does."""
    entities: list[Entity] = []
    for path in package_files(root):
        rel = path.relative_to(root).as_posix()
        lang = language_for(rel)
        if lang is not None:
            entities.extend(parse_source(path.read_bytes(), rel, lang, "").entities)
    return resolver_from(entities)


def score(cases: list[PremiseCase], resolvers: dict) -> tuple[dict[str, dict[str, float]], list[dict]]:
    """Per kind: recall on false premises, false-alarm rate on true twins, and the cases missed."""
    per: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {"false": [], "true": []})
    misses: list[dict] = []
    for c in cases:
        findings = check_question(c.question, resolvers[c.corpus])
        flagged = any(not f.holds and f.contradicts >= FLAG_AT for f in findings)
        per[c.kind]["false" if c.false_premise else "true"].append(flagged)
        if flagged != c.false_premise:
            misses.append({"kind": c.kind, "question": c.question, "false_premise": c.false_premise,
                           "facts": [f.fact for f in findings if not f.holds]})
    table: dict[str, dict[str, float]] = {}
    for kind in [*KINDS, "all"]:
        if kind == "all":
            f = [x for k in per for x in per[k]["false"]]
            t = [x for k in per for x in per[k]["true"]]
        else:
            f, t = per[kind]["false"], per[kind]["true"]
        if not f:
            continue
        table[kind] = {"pairs": len(f), "recall": round(sum(f) / len(f), 3), "false_alarm": round(sum(t) / max(1, len(t)), 3)}
    return table, misses


def evaluate(roots: dict[str, Path], per_kind: int = 40) -> dict:
    """Every set of phrasings over every corpus: the table per kind, and the first misses of each."""
    resolvers = {name: resolver_for(root) for name, root in roots.items()}
    out: dict = {"corpora": sorted(roots), "flag_at": FLAG_AT}
    for label in PHRASINGS:
        cases = [c for name, root in roots.items() for c in generate(root, name, per_kind=per_kind, phrasings=label)]
        table, misses = score(cases, resolvers)
        out[label] = {"cases": len(cases), "table": table, "misses": misses[:40]}
    cases = [c for name, root in roots.items() for c in distractors(root, name)]
    _, flagged = score(cases, resolvers)
    out["distractors"] = {"cases": len(cases), "false_alarm": round(len(flagged) / max(1, len(cases)), 3), "misses": flagged[:40]}
    return out


def render(result: dict) -> str:
    """Markdown: recall and false alarms per kind, one column pair per phrasing set (each written after the last)."""
    sets = [label for label in PHRASINGS if label in result]
    lines = ["## Premise checking (generated from `ast` facts of " + ", ".join(result["corpora"]) + ")", "",
             "Recall / false alarm per kind and phrasing set (`-`: the set has no phrasings for that kind).", "",
             "| kind | pairs (tuned) | " + " | ".join(sets) + " |", "|---|---|" + "---|" * len(sets)]
    tuned = result["tuned"]["table"]

    def cell(label: str, kind: str) -> str:
        row = result.get(label, {}).get("table", {}).get(kind)
        return f"{row['recall']:.3f} / {row['false_alarm']:.3f}" if row else "-"

    for kind in [*KINDS, "all"]:
        if kind in tuned:
            lines.append(f"| {kind} | {tuned[kind]['pairs']} | " + " | ".join(cell(label, kind) for label in sets) + " |")
    d = result.get("distractors")
    if d:
        lines += ["", f"Questions that presuppose no parameter (`DISTRACTOR_TEMPLATES`, {d['cases']}): false alarm "
                  f"{d['false_alarm']:.3f}."]
    return "\n".join(lines) + "\n"

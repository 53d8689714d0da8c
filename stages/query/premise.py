"""Premise stage: what a question presupposes about the code, checked against the definitions.

"Why does `Session` inherit from `dict`?" presupposes a base class; "How does `get`'s `timeout`
argument default to 30?" presupposes a parameter and its default. `extract` finds such premises in
any phrasing through small grammars per kind (a subject slot, a cue, a value slot), and `check`
compares each with the facts the parse stage stored for every definition of the subject
(`Entity.bases/params/facts`, file and kind). A premise that no definition supports becomes a
finding with a correction line citing the definition ("`X` takes `a, b`; there is no parameter
`p` (file:line)"); one that cannot be checked (no definition, no annotation, `**kwargs`) is left
alone rather than guessed.

Kinds: base, param, default, decorator, async, returns, raises, file, kind.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Collection, Iterable, Iterator

from assay.stages.core.artifacts import Candidate, DEFINITION_KINDS, Entity, Premise, PremiseCheck, PremiseFinding, short_name
from assay.stages.core.path_roles import is_build_output
from assay.stages.query.claims import CODE_EXTENSIONS, path_body
from assay.stages.query.locate import resolve as resolve_path
from assay.stages.query.locate import stated_lines
from assay.stages.query import premise_implements as implements

Resolver = Callable[[str], list[Entity]]

_CLASS_KINDS = frozenset({"class", "interface", "struct", "trait", "enum", "type"})
_FUNC_KINDS = frozenset({"function", "method"})
_FUNCTION_WORDS = frozenset(
    "a an the this that these those it its it's their them they which what who whom whose when where why how is are was "
    "were be been do does did not no yes any some each every all one new old same other another more most such only "
    "also just even still so as at by for from in into of on onto or and to with without via per than then there here "
    "i we you me my our your can could will would should must may might self cls true false none null".split()
)
_STOP = _FUNCTION_WORDS | frozenset(  # never a subject: nouns and verbs of the question's own grammar
    "default defaults value values parameter parameters argument arguments arg args kwarg kwargs param params option "
    "options flag flags keyword class function method constant type module file defined declared implemented located "
    "used called passed set found written raised returned thrown put placed kept stored moved".split()
)
_VERBS = frozenset("async sync asynchronous synchronous blocking coroutine default defaulting property back await awaiting "
                   "have has had do does done be use uses used get gets mean means control controls work works change changes "
                   "call calls called make makes want need go goes come comes run runs happen happens expect see know "
                   "added removed renamed changed introduced dropped deprecated moved replaced "
                   "take takes took taking pass passes passed passing hand hands handed give gives gave given".split()
                   )  # not `receive` or `send`: ASGI's parameters
# adverbs and conjunctions a question puts where a name could stand ("what does it receive first?", "Since p ...")
_NOT_PARAM_WORDS = frozenset("first last next again later now too twice once instead anyway already since because although "
                             "though unless whether until".split())
_PARAM_ADJECTIVES = frozenset("optional keyword positional required extra named called additional boolean bad good wrong invalid "
                               "valid empty missing unknown malformed unexpected different".split())
_NOT_PARAM = r"(?!(?:parameter|argument|arg|kwarg|param|keyword|option|flag|input|value|default)s?\b)"
# a function word is no subject (nor `this.x`, `self::x`), unless it is Go's package `a` in `a.(*DB).Close`
_NOT_SUBJECT = r"(?!(?:" + "|".join(sorted(w for w in _FUNCTION_WORDS if "'" not in w)) + r")\b(?!\.\())"
_TYPE_WORDS = {
    "str": {"str", "string", "text", "anystr"}, "string": {"str", "string", "text", "anystr"},
    "int": {"int", "integer", "number"}, "integer": {"int", "integer", "number"},
    "bool": {"bool", "boolean"}, "boolean": {"bool", "boolean"}, "float": {"float", "number"},
    "bytes": {"bytes", "bytearray"}, "dict": {"dict", "mapping", "mutablemapping", "record", "object"},
    "dictionary": {"dict", "mapping", "mutablemapping", "record", "object"}, "mapping": {"dict", "mapping", "mutablemapping"},
    "list": {"list", "sequence", "mutablesequence", "array", "iterable"}, "array": {"list", "array", "sequence"},
    "tuple": {"tuple", "sequence"}, "set": {"set", "frozenset", "abstractset"},
    "none": {"none", "void", "noreturn", "null", "undefined", "never"}, "nothing": {"none", "void", "noreturn", "undefined", "never"},
    "void": {"none", "void", "undefined"}, "null": {"none", "null", "void"},
    "iterator": {"iterator", "iterable", "generator", "asynciterator", "asyncgenerator", "asynciterable"},
    "generator": {"iterator", "iterable", "generator", "asynciterator", "asyncgenerator"},
    "promise": {"promise", "awaitable", "coroutine", "future"}, "coroutine": {"promise", "awaitable", "coroutine"},
}
_UNCHECKABLE_RETURNS = frozenset({"any", "t", "self", "typing.any", "object", "unknown"})
_DECORATOR_WORDS = {
    "static method": {"staticmethod"}, "staticmethod": {"staticmethod"}, "static": {"staticmethod", "static"},
    "class method": {"classmethod"}, "classmethod": {"classmethod"},
    "property": {"property", "cached_property", "setter", "getter", "deleter", "abstractproperty"},
    "read-only property": {"property", "cached_property"}, "cached property": {"cached_property"},
    "cached_property": {"cached_property"}, "abstract method": {"abstractmethod", "abstractproperty"},
    "abstractmethod": {"abstractmethod", "abstractproperty"}, "abstract": {"abstractmethod", "abstractproperty"},
    "context manager": {"contextmanager", "asynccontextmanager"}, "contextmanager": {"contextmanager", "asynccontextmanager"},
    "dataclass": {"dataclass", "define", "frozen", "attrs", "s"}, "data class": {"dataclass", "define", "frozen", "attrs", "s"},
    "fixture": {"fixture"}, "overload": {"overload"}, "override": {"override", "Override"},
}
_KIND_WORDS = {"class": "class", "function": "function", "method": "function", "constant": "constant", "variable": "constant",
               "interface": "interface", "enum": "enum", "struct": "struct", "trait": "trait", "coroutine": "function"}
_ASYNC_WORDS = {"async": True, "asynchronous": True, "asynchronously": True, "coroutine": True, "awaitable": True,
                "non-blocking": True, "sync": False, "synchronous": False, "synchronously": False, "blocking": False}
_NEG = re.compile(r"\b(not|never|no\s+longer|isn't|aren't|doesn't|don't|didn't|wasn't|won't|cannot|can't)\b|n't\b", re.I)

# -- grammar ----------------------------------------------------------------------------------------------

# Go's method as its traces print it: `(*DB).Close`, `a.(*DB).Close`, `github.com/x/a.(*DB).Close` (`_clean` reads it)
_GO_METHOD_NAME = r"(?:[\w\-/]+(?:\.[\w\-/]+)*\.)?\(\*?[A-Za-z_]\w*\)\.[A-Za-z_$][\w$]*"
# a name starts after no identifier, dot or `x::`: in `kv::http::Server::handle` only `kv...` is a subject, not `http...`
_ID = (r"(?<![\w$.])(?<!\w::)[`'\"]?@?(?P<{g}>" + _GO_METHOD_NAME + r"|[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)"
       r"(?:\(\))?[`'\"]?")
_LIT = (r"(?<![\w$.'\"`])(?P<V>`[^`]{1,60}`|'[^']{0,40}'|\"[^\"]{0,40}\"|-?\d+(?:\.\d+)?|an?\s+empty\s+\w+|empty\s+\w+|"
        r"[A-Za-z_][\w.]*(?:\(\))?)")
_TYPE = r"(?<![\w$.'\"`])[`'\"]?(?P<V>[A-Za-z_][\w.]*(?:\[[^\]]{0,60}\])?)[`'\"]?"
_ADV = r"(?:\s+(?:not|never|really|still|also|actually|directly|always|only|even|no\s+longer|now|ever|already|just))*"
_PNOUN = r"(?<![\w$])(?:parameter|argument|arg|kwarg|param|keyword(?:\s+argument)?|option|flag|input)s?\b"  # not `MissingParameter`
_PADJ = r"(?:(?:an?|the|one|its|optional|keyword|keyword-only|positional|required|extra|boolean|bool|string|int|integer|named|called|additional)\s+)*"
_OF = r"(?:of|to|in|for|on|accepted\s+by|taken\s+by|passed\s+to|used\s+by|from)"
_DECO = (r"(?P<D>static\s*method|class\s*method|read-only\s+property|cached[\s_]property|property|abstract\s*method|abstract|"
         r"context\s*manager|data\s*class|fixture|overload)")
_ASYNC = r"(?P<A>async(?:hronous(?:ly)?)?|coroutine|awaitable|non-blocking|sync(?:hronous(?:ly)?)?|blocking)"
_KIND = r"(?P<K>class|function|method|constant|variable|interface|enum|struct|trait)"
# a call's arguments before the one a pattern reads, stepping over nested calls whole (two levels): in
# `mount('x', HTTPAdapter(pool_connections=5))` the keyword is `HTTPAdapter`'s, not `mount`'s
_ARGS = r"(?:[^()]|\((?:[^()]|\([^()]*\))*\))*?"
_FILE = (r"(?<![\w$./'\"`+@-])[`'\"]?(?P<F>(?:[A-Za-z]:(?=[\\/]))?" + path_body("py|pyi|js|jsx|ts|tsx|mjs|cjs|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|scala")
         + r"(?![\w])|[A-Za-z_][\w]*(?:[./][A-Za-z_]\w*)*)[`'\"]?")


class _LazyPattern:
    """A grammar pattern compiled when a question first passes its kind's gate: compiling all ~90 at import cost
    ~0.4 s of every cold `ask`, and a question passes few gates. A race compiles one twice, harmlessly."""

    __slots__ = ("source", "_compiled")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        if self._compiled is None:
            self._compiled = re.compile(self.source, re.I)
        return self._compiled.search(text, pos)


def _g(template: str) -> _LazyPattern:
    t = template.replace("{S0}", _NOT_SUBJECT + _ID.format(g="S"))
    t = t.replace("{S}", _NOT_SUBJECT + _ID.format(g="S") + r"(?:\s+(?:class|function|method|constructor|coroutine))?").replace("{V}", _ID.format(g="V")).replace("{P}", _NOT_PARAM + _ID.format(g="P"))
    t = (t.replace("{L}", _LIT).replace("{T}", _TYPE).replace("{ADV}", _ADV).replace("{PN}", _PNOUN)
         .replace("{PADJ}", _PADJ).replace("{OF}", _OF).replace("{DECO}", _DECO).replace("{ASYNC}", _ASYNC)
         .replace("{KIND}", _KIND).replace("{F}", _FILE).replace("{D}", _ID.format(g="D")).replace("{ARGS}", _ARGS))
    return _LazyPattern(t)


_INHERIT_VERB = r"(?:inherits?|inherited|inheriting|extends?|extended|extending|subclass(?:es|ed|ing)?|derives?|derived|deriving|speciali[sz]es?)"
_GRAMMAR: dict[str, tuple[_LazyPattern, ...]] = {
    "base": (
        _g(r"{S}(?:\s+class)?{ADV}\s+(?:is\s+|was\s+)?" + _INHERIT_VERB + r"(?:\s+directly)?(?:\s+from)?\s+(?:the\s+|a\s+|an\s+)?{V}"),
        _g(r"{S}(?:\s+class)?,?\s+(?:is\s+|being\s+|as\s+|which\s+is\s+|was\s+){0,2}(?:not\s+)?(?:a|an|the)?\s*(?:direct\s+)?"
           r"(?:subclass|subtype|child(?:\s+class)?|derived\s+class|descendant|speciali[sz]ation|kind|type)\s+of\s+(?:the\s+)?{V}"),
        _g(r"{V}(?:\s+class)?\s+is\s+(?:not\s+)?(?:the\s+|a\s+|an\s+)?(?:direct\s+)?(?:base|parent|super)\s*(?:class|type)?\s+(?:of|for)\s+(?:the\s+)?{S}"),
        _g(r"{S}'s\s+(?:direct\s+)?(?:base|parent|super)\s*(?:class(?:es)?|type)?,?\s+(?:is\s+|being\s+|as\s+)?(?:the\s+)?{V}"),
        _g(r"(?:base|parent|super)\s*(?:class|type)\s+(?:of|for)\s+(?:the\s+)?{S}(?:\s+class)?,?\s+(?:is\s+|being\s+|as\s+)?(?:the\s+)?{V}"),
        _g(r"{V}'s\s+(?:subclass|child(?:\s+class)?|descendant)\s+{S}"),
        _g(r"\bclass\s+{S}\s*\(\s*{V}"),
        _g(r"{S}(?:\s+class)?{ADV}\s+(?:is\s+)?based\s+on\s+(?:the\s+)?{V}(?:\s+class)"),
        _g(r"{S}(?:\s+class)?\s+(?:is|as)\s+(?:not\s+)?(?:a|an)\s+{V}\s+(?:subclass|subtype|child|descendant)"),
        _g(r"{S}(?:\s+class)?{ADV}\s+(?:uses?|has|have|takes?)\s+{V}\s+as\s+(?:its|a|the)\s+(?:base|parent|super)"),
        _g(r"\bis\s+{V}(?:\s+class)?\s+(?:the|a|an)\s+(?:direct\s+)?(?:base|parent|super)\s*(?:class|type)?\s+(?:of|for)\s+(?:the\s+)?{S}"),
        _g(r"{V}(?:\s+class)?\s+as\s+(?:the|a|its)\s+(?:base|parent|super)\s*(?:class|type)?\s+(?:of|for)\s+(?:the\s+)?{S}"),
        _g(r"{S}\b[^?.;]{0,40}?\b(?:by|when|from|through|via|for|in)\s+(?:subclassing|inheriting(?:\s+from)?|extending|deriving\s+from)\s+(?:the\s+)?{V}"),
        _g(r"{S}(?:\s+class)?\s+(?:was\s+|is\s+)?(?:made|designed|written|built|chosen|meant)\s+to\s+(?:inherit|extend|subclass|derive)\s+(?:from\s+)?(?:the\s+)?{V}"),
        _g(r"{S}\b[^?.;]{0,40}?\b(?:its|the)\s+(?:base|parent|super)\s*(?:class|type)?\s+{V}"),
    ),
    "param": (
        _g(r"{S}(?:'s)?{ADV}\s+(?:takes?|accepts?|has|have|receives?|expects?|gets?|supports?|requires?|needs?|allows?|exposes?)"
           r"\s+{PADJ}{PN}\s+(?:named\s+|called\s+)?{P}"),
        _g(r"{S}(?:'s)?{ADV}\s+(?:takes?|accepts?|has|have|receives?|expects?|supports?|requires?|needs?)\s+{PADJ}{P}\s+(?:as\s+(?:an?\s+)?)?{PN}"),
        _g(r"{PN}\s+{P}\s+{OF}\s+(?:the\s+)?{S}"),
        _g(r"\b(?:the|an?|its|this|that|their)\s+{P}\s+{PN}\s+{OF}\s+(?:the\s+)?{S}"),
        _g(r"`(?P<P>[A-Za-z_]\w*)`\s+{PN}\s+{OF}\s+(?:the\s+)?{S}"),
        _g(r"{S}'s\s+{P}\s+{PN}"),
        _g(r"\b(?:pass|passes|passing|passed|supply|supplying|provide|providing|specify|specifying|give|giving)\s+(?:an?\s+|the\s+)?{P}"
           r"\s+(?:{PN}\s+)?(?:to|into|when\s+calling)\s+(?:the\s+)?{S}"),
        _g(r"{S}\s+(?:(?!(?:that|which|who|when|if|where|while|because|and|or|but|so)\b)\w+\s+){0,3}?(?:with|using|the|its|an?|as\s+its)\s+{P}\s+{PN}"),
        _g(r"{S}\s*\({ARGS}\b(?P<kw>[A-Za-z_]\w*)\s*=(?!=)"),  # the call's own keyword, not a nested call's
        # "the p I pass to f", "is p required when calling f", "can f be called with p set", "p added to f's signature",
        # "which values of p does f accept"
        _g(r"\bthe\s+{P}\s+(?:{PN}\s+)?(?:I|we|you|they)\s+(?:pass|give|supply|provide|hand)\s+(?:in\s+)?to\s+(?:the\s+)?{S}"),
        _g(r"\bis\s+(?:the\s+)?{P}\s+(?:{PN}\s+)?(?:required|optional|mandatory|needed)\s+(?:when\s+calling|for|by|in)\s+(?:the\s+)?{S}"),
        _g(r"{S}\s+be\s+called\s+with\s+(?:the\s+|an?\s+)?{P}\s+(?:{PN}\s+)?(?:set|given|passed)\b"),
        _g(r"{P}\s+(?:{PN}\s+)?(?:was\s+|been\s+)?(?:added|introduced)\s+to\s+(?:the\s+)?{S}'s\s+(?:signature|parameters|arguments)"),
        _g(r"\bvalues?\s+(?:of|for)\s+(?:the\s+)?{P}\s+(?:{PN}\s+)?(?:does|do|can|will|would)\s+{S}\s+(?:accept|take|allow|support|expect)"),
        _g(r"^\W*(?:in|inside|within|for)\s+(?:the\s+)?{S},?\s+(?:why|how|what|when|where|which|does|do|is|can)\b[^?]*?\b(?:the\s+)?{P}\s+{PN}\b"),
    ),
    "default": (
        _g(r"{P}\s+(?:{PN}\s+)?{OF}\s+(?:the\s+)?{S}{ADV}\s+(?:defaults?|defaulting|is\s+defaulted|is\s+set\s+by\s+default|has\s+a\s+default(?:\s+value)?\s+of)\s+(?:to\s+|of\s+)?{L}"),
        _g(r"{S}'s\s+{P}\s+(?:{PN}\s+)?{ADV}(?:defaults?|defaulting|default\s+value\s+is|is\s+by\s+default|is\s+defaulted)\s+(?:to\s+)?{L}"),
        _g(r"default\s+(?:value\s+)?(?:of|for)\s+(?:the\s+)?{P}\s+(?:{PN}\s+)?{OF}\s+(?:the\s+)?{S}(?:\s+is|\s*=|,|\s+being|\s+as|\s+to|\s+set\s+to|\s+equal\s+to)\s+{L}"),
        _g(r"{S}'s\s+default\s+(?:value\s+)?(?:for\s+|of\s+)?(?:the\s+)?{P}(?:\s+{PN})?(?:\s+is|\s*=|,|\s+being|\s+of|\s+as)\s+{L}"),
        _g(r"{S}{ADV}\s+(?:defaults?|sets?|initiali[sz]es?|uses?|assigns?)\s+(?:its\s+|the\s+)?{P}\s+(?:{PN}\s+)?(?:to\s+|=\s*|of\s+|as\s+)?{L}\s+by\s+default"),
        _g(r"{S}{ADV}\s+defaults?\s+(?:its\s+|the\s+)?{P}\s+(?:{PN}\s+)?(?:to|=)\s*{L}"),
        _g(r"{P}\s+(?:{PN}\s+)?(?:defaults?|defaulting|is\s+defaulted|default\s+value\s+is)\s+(?:to\s+)?{L}\s+(?:in|of|for|inside|within|when\s+calling)\s+(?:the\s+)?{S}"),
        _g(r"(?:a|the|its)\s+default\s+(?!value\b){P}\s+(?:of|=|is)\s+{L}\s+(?:in|for|of)\s+(?:the\s+)?{S}"),
        _g(r"{S}\b[^?.;]{0,40}?\b(?:a|the|its)\s+default\s+(?!value\b){P}\s+(?:{PN}\s+)?(?:of|=|is|as)\s*{L}"),
        _g(r"{S}\s+(?:\w+\s+){0,2}?{P}\s*=\s*{L}\s+by\s+default"),
        _g(r"{L}\s+(?:was\s+|is\s+)?(?:chosen|picked|used|set|given)\s+as\s+(?:the\s+)?default\s+(?:value\s+)?(?:for|of)\s+(?:the\s+)?{P}\s+(?:{PN}\s+)?(?:in|of|for)\s+(?:the\s+)?{S}"),
        _g(r"{P}\s*=\s*{L}\s+(?:is\s+)?(?:the\s+|a\s+)?default\s+(?:in|of|for)\s+(?:the\s+)?{S}"),
        _g(r"{S}\s*\({ARGS}\b{P}\s*=\s*{L}[^)]*\)(?=[^?]*\bdefault)"),
        _g(r"(?:default|defaulting)\s+{P}\s+to\s+{L}\s+in\s+(?:the\s+)?{S}"),
        _g(r"^\W*(?:in|inside|within|for)\s+(?:the\s+)?{S},?\s+(?:why|how|what|when|where|which|does|do|is|can)\b[^?]*?\b{P}\s+(?:{PN}\s+)?"
           r"(?:defaults?|defaulting|is\s+defaulted|default\s+value\s+is)\s+(?:to\s+)?{L}"),
    ),
    "value": (  # a constant's value: "Why is `MAX_REDIRECTS` set to 50?"; `_slot_values` keeps literals only
        _g(r"{S0}{ADV}\s+(?:is|was|gets|got|being)\s+(?:set|initiali[sz]ed|defined|assigned|hard-?coded|fixed|pinned)\s+(?:to|as|at)\s+{L}"),
        _g(r"\b(?:is|was)\s+{S0}\s+(?:set\s+to\s+|equal\s+to\s+)?{L}\s*(?:\?|$)"),
        _g(r"\bvalue\s+of\s+{S0}\s+(?:is|being|=)\s*{L}"),
        _g(r"{S0}\s*(?:==?|equals)\s*{L}(?!\s*(?:by\s+default|in\b|for\b))"),
    ),
    "decorator": (
        _g(r"{S}(?:,?\s+(?:which|that))?{ADV}\s+(?:is|was|being|as)(?:\s+not)?\s+(?:declared\s+as\s+|defined\s+as\s+|implemented\s+as\s+|marked\s+as\s+|made\s+|written\s+as\s+)?(?:a|an)?\s*{DECO}\b"),
        _g(r"{S}{ADV}\s+(?:is\s+|was\s+|being\s+)?(?:decorated|wrapped|marked|annotated)\s+(?:with|by|as)\s+(?:the\s+|an?\s+)?@?{D}"),
        _g(r"@{D}\s+(?:decorator\s+)?(?:on|of|for|in|above|applied\s+to)\s+(?:the\s+)?{S}"),
        _g(r"{S}{ADV}\s+(?:uses?|has|carries|applies|needs|gets|wears)\s+(?:the\s+|an?\s+)?@{D}"),
        _g(r"{S}{ADV}\s+(?:uses?|has|carries|applies|needs|gets)\s+(?:the\s+|an?\s+)?{D}\s+decorator"),
        _g(r"(?:the\s+)?@?{D}\s+decorator\s+(?:on|of|for|in|above|applied\s+to)\s+(?:the\s+)?{S}"),
        _g(r"\b(?:the|a|an)\s+(?P<D>static\s*method|class\s*method|cached[\s_]property|property|abstract\s*method)\s+{S}"),
        _g(r"\b(?:make|makes|made|making|declare|declares|declared|declaring|mark|marks|marked|turn|turns|turned|define|defines|defined)\s+{S}\s+(?:as\s+)?(?:a|an)\s+{DECO}\b"),
        _g(r"\bis\s+{S}\s+(?:a|an)\s+{DECO}\b"),
        _g(r"{S}{ADV}\s+(?:declared|defined|implemented|marked|made|written|registered|exposed|kept|turned\s+into)\s+(?:as\s+)?(?:a|an)?\s*{DECO}\b"),
        _g(r"{S}{ADV}\s+(?:stops?|stopped|starts?|started|becomes?|became|stays?|remains?|keeps?)\s+(?:being\s+)?(?:a|an)?\s*{DECO}\b"),
    ),
    "async": (
        _g(r"{S}(?:\s+(?:function|method))?(?:,?\s+(?:which|that))?{ADV}\s+(?:is|was|being|as)(?:\s+not)?\s+(?:an?\s+)?(?:(?:declared|defined|written|implemented|made)\s+(?:as\s+)?(?:an?\s+)?)?{ASYNC}\b"),
        _g(r"{S}{ADV}\s+(?P<A>block|blocks)\b"),
        _g(r"{S}{ADV}\s+(?:(?:is|was|been|being)\s+)?(?:declared|defined|written|implemented|made|marked)\s+(?:as\s+)?(?:an?\s+)?{ASYNC}\b"),
        _g(r"\bis\s+{S}(?:\s+(?:function|method))?\s+(?:an?\s+)?{ASYNC}\b"),
        _g(r"\b(?:the\s+|an?\s+)(?P<A>async(?:hronous)?|sync(?:hronous)?|blocking|coroutine)\s+(?:function\s+|method\s+|def\s+|version\s+)?{S}"),
        _g(r"\b(?:await|awaiting|awaited|awaits)\s+(?:the\s+|a\s+)?(?:call\s+to\s+|result\s+of\s+)?{S}"),
        _g(r"{S}(?:\(\))?\s+(?:must|should|has\s+to|have\s+to|needs\s+to|need\s+to|can|cannot|can't)\s+(?:not\s+)?be\s+(?P<A>awaited)"),
        _g(r"{S}{ADV}\s+(?:returns?|gives\s+back|produces?)\s+(?:an?\s+)?(?P<A>coroutine|awaitable)"),
        _g(r"{S}{ADV}\s+(?:runs?|executes?|works?|operates?)\s+(?P<A>asynchronously|synchronously)"),
        _g(r"{S}{ADV}\s+(?:uses|is\s+written\s+with|is\s+defined\s+with|declared\s+with)\s+(?P<A>async)\s+def"),
        _g(r"\b(?:sync|synchronous|blocking)\s+(?:version|variant|call)\s+(?:of\s+)?{S}(?P<A>)"),
    ),
    "returns": (
        _g(r"{S}{ADV}\s+(?:returns?|returning|returned|gives?\s+back|hands?\s+back|outputs?)\s+(?:an?\s+|the\s+|back\s+)?(?:instance\s+of\s+|object\s+of\s+(?:type\s+)?)?{T}"),
        _g(r"return\s+(?:type|value|annotation)\s+(?:of|for)\s+(?:the\s+)?{S}(?:\s+(?:function|method))?(?:\s+is|\s+being|\s+as|,|\s*=|\s+to\s+be)?\s+(?:an?\s+)?{T}"),
        _g(r"{S}'s\s+return\s+(?:type|value|annotation)\s+(?:is\s+|being\s+|of\s+type\s+|of\s+|as\s+)?(?:an?\s+)?{T}"),
        _g(r"{S}\s*(?:\([^)]*\))?\s*->\s*(?:an?\s+)?{T}"),
        _g(r"\b(?:the\s+)?{T}\s+(?:that|which)\s+{S}\s+returns"),
        _g(r"\bthe\s+{T}\s+{S}\s+returns\b"),
        _g(r"{T}\s+(?:returned|produced)\s+(?:by|from)\s+(?:the\s+)?{S}"),
        _g(r"{S}{ADV}\s+(?:is\s+)?(?:annotated|typed|declared|hinted)\s+(?:as\s+|to\s+)?return(?:ing)?\s+(?:an?\s+)?{T}"),
        _g(r"{S}{ADV}\s+(?:has|with)\s+(?:an?\s+|the\s+)?return\s+(?:type|annotation)\s+(?:of\s+)?{T}"),
    ),
    "raises": (
        _g(r"{S}{ADV}(?:\s+(?:can|could|may|might|will|would|should|does|did|must|sometimes|ever|not))*\s+(?:raises?|raised|raising|throws?|threw|throwing)\s+(?:an?\s+|the\s+)?{V}"),
        _g(r"{V}\s+(?:is\s+|being\s+|gets\s+|get\s+)?(?:raised|thrown)\s+(?:by|from|in|inside|within)\s+(?:the\s+)?{S}"),
        _g(r"\b(?:the\s+)?{V}\s+(?:that|which)\s+{S}\s+(?:raises|throws)"),
        _g(r"{S}{ADV}\s+(?:fail(?:s|ed)?|errors?(?:\s+out)?|abort(?:s|ed)?|crash(?:es|ed)?|dies|exits)\s+with\s+(?:an?\s+|the\s+)?{V}"),
        _g(r"\b(?:raise|raising|throw|throwing)\s+(?:an?\s+|the\s+)?{V}\s+(?:in|from|inside|within)\s+(?:the\s+)?{S}"),
        _g(r"\b(?:catch|catching|handle|handling|except)\s+(?:an?\s+|the\s+)?{V}\s+(?:from|raised\s+by|thrown\s+by|when\s+calling)\s+(?:the\s+)?{S}"),
    ),
    "file": (
        _g(r"{S}{ADV}\s+(?:is\s+|was\s+|being\s+|gets\s+|get\s+)?(?:defined|declared|implemented|located|found|kept|written|living|lives|live|sits?|resides?|stored|placed)"
           r"\s+(?:in|inside|within|under|at)\s+(?:the\s+)?(?:file\s+|module\s+|package\s+)?{F}"),
        _g(r"{F}\s+(?:define|declare|implement|contain|hold|house)[sd]?\s+(?:the\s+)?{S}"),  # {F} knows where a path starts
        _g(r"(?:\bthe\s+)?{F}\s+(?:module|file)'s\s+{S}"),
        _g(r"{S}\s+(?:in|from)\s+(?:the\s+)?(?P<F>" + path_body("py|pyi|js|ts|tsx|go|rs|java") + r")\b"),
        _g(r"{S}\s+(?:in|from)\s+(?:the\s+)?{F}\s+(?:module|file)\b"),
    ),
    "kind": (
        _g(r"{S0}{ADV}\s+(?:is|was|being)\s+(?:a|an)\s+(?:[\w-]+\s+)?{KIND}\b"),
        _g(r"\bis\s+{S0}\s+(?:a|an)\s+(?:[\w-]+\s+)?{KIND}\b(?!\s+or\b)"),
        _g(r"\b(?:the|a|an)\s+{KIND}\s+(?:named\s+|called\s+)?{S0}"),
        _g(r"\bthe\s+{S0}\s+{KIND}\b"),
        _g(r"{S0}\s+(?:is\s+)?(?:defined|declared|implemented|written)\s+as\s+(?:a|an)\s+(?:[\w-]+\s+)?{KIND}\b"),
        _g(r"\b(?:make|makes|made|making|turn|turns|turned|declare|declares|declared|write|wrote|implement|implemented|keep|keeps|kept)\s+{S0}\s+(?:as\s+|into\s+)?(?:a|an)\s+(?:[\w-]+\s+)?{KIND}\b"),
        _g(r"\b(?:instantiat\w+|subclass(?:ing)?|inherit(?:ing)?\s+from|extending)\s+(?:the\s+)?{S0}(?P<K>)"),
    ),
}
# Words without which none of a kind's patterns can match (lower-cased substrings, read off the patterns
# above): a question without any of them skips that kind's patterns, most of the cost of `extract`.
_GATES: dict[str, tuple[str, ...]] = {
    "base": ("inherit", "extend", "subclass", "subtype", "derive", "speciali", "child", "descendant", "kind", "type",
             "base", "parent", "super", "class"),
    "param": ("param", "arg", "keyword", "option", "flag", "input", "pass", "suppl", "provid", "specif", "giv", "=", "hand",
              "requir", "optional", "mandatory", "needed", "called with", "signature", "value"),
    "default": ("default",),
    "value": ("set", "initiali", "defin", "assign", "hard", "fix", "pin", "value", "=", "equal", "is "),
    "decorator": ("static", "class", "property", "abstract", "context", "fixture", "overload", "decorat", "wrapped",
                  "marked", "annotated", "@"),
    "async": ("sync", "coroutine", "await", "block"),
    "returns": ("return", "give", "hand", "output", "->", "produced"),
    "raises": ("rais", "throw", "threw", "fail", "error", "abort", "crash", "dies", "exit", "catch", "handl", "except"),
    "file": ("defin", "declar", "implement", "locat", "found", "kept", "written", "liv", "sit", "resid", "stor", "plac",
             "contain", "hold", "hous", "module", "file", "."),
    "kind": ("class", "function", "method", "constant", "variable", "interface", "enum", "struct", "trait", "instantiat",
             "subclass", "inherit", "extending"),
}
_SUPPRESS = {  # a decorator word names a decorator premise, not a kind (a "static method" is a method)
    "kind": re.compile(r"\b(?:static|class|abstract)\s+method\b|\bdata\s+class\b", re.I),
}


_GO_RECEIVER = re.compile(r"^(?:[\w.\-/]*\.)?\(\*?(\w+)\)\.")  # the package and `(*T)` of Go's `pkg.(*T).M`


def _clean(name: str) -> str:
    """A name as the index writes it: C++'s and Rust's `a::C::m` is `a.C.m`, Go's `pkg.(*T).M` is `T.M` (the index
    names a Go method by its type). `graph.dotted_name` reads names by this rule too."""
    return _GO_RECEIVER.sub(r"\1.", name.strip("`'\"@").removesuffix("()")).replace("::", ".")


def _plausible_subject(name: str) -> bool:
    return bool(name) and name.lower() not in _STOP and len(name) > 1


def _negated(question: str, start: int, end: int) -> bool:
    """Negation inside the phrase, or in the word just before it ("Why doesn't X inherit from Y?")."""
    before = question[:start].split()
    lead = len(before[-1]) + 1 if before else 0
    window = (before[-1] + " " if before else "") + question[start:end]
    return any(not _supposed(question, start - lead + m.start()) for m in _NEG.finditer(window))


_SUPPOSING = re.compile(r"\b(if|unless|suppose|supposing|whether|once|imagine)\b", re.I)
_PERSON = frozenset("i we you they callers caller users user someone somebody people".split())


def _supposed(question: str, at: int) -> bool:
    """A negation that denies nothing about the code: inside a supposition ("what would change if X no longer
    derived from Y" presupposes that it does) or said of a person ("If I don't pass p to f, is it None?")."""
    clause = re.split(r"[,.;:?!]", question[:at])[-1]
    words = clause.split()
    return bool(_SUPPOSING.search(clause)) or bool(words) and words[-1].lower() in _PERSON


# Pasted code: a ``` fence, a traceback's frames (`File "...", line N, in f` and the code under it) and its
# exception line. What it passes, assigns and where its files live is the user's code and install, not a claim
# about the indexed code: the kinds below are not read from it (an `await` on a sync function still is).
_PASTED_KINDS = frozenset({"param", "default", "value", "file"})
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_FRAME = re.compile(r'File "[^"\n]+", line \d+(?:, in [^\s,]+)?')
# `requests.exceptions.ConnectTimeout: ...`, `KeyError: 'x'`: a capitalised (dotted) name, a colon, a space
_EXCEPTION_LINE = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*[A-Z]\w*:(?=\s|$)")
_SENTENCE_END = re.compile(r"[.?!](?=\s|$)|\n")


def pasted_code(question: str) -> list[tuple[int, int]]:
    """Character spans of the code a question pastes (see `_PASTED_KINDS`). A question flattened to one line
    (the query flow joins lines) ends a frame's code at the next frame or the exception line, and the exception's
    message at the end of its sentence."""
    spans = [(m.start(), m.end()) for m in _FENCE.finditer(question)]
    frames = list(_FRAME.finditer(question))
    for n, m in enumerate(frames):
        stop = frames[n + 1].start() if n + 1 < len(frames) else len(question)
        end = _frame_code_end(question, m.end(), stop)
        spans.append((m.start(), end))
        if n + 1 == len(frames):  # the exception line follows the last frame's code
            exc = _EXCEPTION_LINE.match(question, len(question) - len(question[end:].lstrip()))
            if exc is not None:
                tail = _SENTENCE_END.search(question, exc.end() + 1)
                spans.append((exc.start(), tail.start() if tail else len(question)))
    return spans


def _frame_code_end(question: str, start: int, stop: int) -> int:
    """Where the code a frame shows ends: the end of the line under the frame's; in flattened text the exception
    line or the end of the sentence, before the next frame (`stop`)."""
    newline = question.find("\n", start, stop)
    if newline >= 0:
        below = question.find("\n", newline + 1, stop)
        return below if below >= 0 else stop
    exc = _EXCEPTION_LINE.search(question, start, stop)
    tail = _SENTENCE_END.search(question, start, stop)
    return min(m.start() for m in (exc, tail) if m is not None) if exc or tail else stop


def without_pasted_code(question: str) -> str:
    """The question with its pasted code blanked: the prose whose code names are claims about the index (a fence's
    language tag and the paste's own locals, `python`, `s`, `r`, are not names the index should hold)."""
    return _blank(question, pasted_code(question))


def _blank(question: str, spans: list[tuple[int, int]]) -> str:
    """The question with those spans blanked (same length and lines, so match offsets still index `question`)."""
    chars = list(question)
    for a, b in spans:
        chars[a:b] = [c if c == "\n" else " " for c in chars[a:b]]
    return "".join(chars)


def extract(question: str, is_module: Callable[[str], bool] = lambda word: False) -> list[Premise]:
    """Every premise the question states, in order; duplicates removed. Pure text: no index needed, but a bare word
    in a file's place is read as one only where `is_module` says the index holds a file or folder of that name."""
    found: list[Premise] = []
    coded: set[tuple[str, str]] = set()  # (kind, param) of premises whose subject is written as code
    plain: list[int] = []  # indexes of premises whose subject is a plain word
    low = question.lower()
    pasted = pasted_code(question)
    prose = _blank(question, pasted) if pasted else question
    for kind, patterns in _GRAMMAR.items():
        if not any(cue in low for cue in _GATES[kind]):
            continue
        for pattern in patterns:
            for m in _overlapping(pattern, prose if kind in _PASTED_KINDS else question):
                g = m.groupdict()
                subject = _clean(g.get("S") or "")
                if not _plausible_subject(subject):
                    continue
                if kind == "base" and re.fullmatch(r"[a-z]+", subject) and not _quoted(question, m.start("S")):
                    continue  # "Could ColorSystem stop inheriting from IntEnum": a class is named as code, `stop` is the verb
                if _noun_after_cue(g.get("S") or "", question[: m.start("S")]):
                    continue
                if kind in ("param", "default") and _english_word_use(g.get("S") or "", question, m.start("S"), m.end("S"), m.end()):
                    continue
                suppress = _SUPPRESS.get(kind)
                if suppress is not None and suppress.search(m.group(0)):
                    continue
                text = m.group(0).strip()
                negated = _negated(question, m.start(), m.end())
                slots = _slot_values(kind, g, text)
                if slots is None:
                    continue
                value, param = slots
                if not value or (kind not in ("default", "kind", "async", "value") and value.lower() in _STOP):
                    continue
                if kind == "file" and not _names_a_file(question, m.start("F"), m.end("F"), is_module):
                    continue  # "which struct implements Store", "stored in memory": a word, not a file
                if kind == "default" and value.lower() in _FUNCTION_WORDS - {"true", "false", "none", "null"}:
                    continue
                if kind in ("param", "default") and (param.lower() in _FUNCTION_WORDS | _PARAM_ADJECTIVES | _VERBS | _NOT_PARAM_WORDS
                                                     or param == subject or _ACRONYM.fullmatch(param)):
                    continue  # "a UUID parameter" is a parameter of type UUID, not one named so
                if kind == "param" and g.get("P") and re.fullmatch(r"[a-z]+", g["P"]) and \
                        re.match(r"\s+inputs?\b", question[m.end("P"):]):
                    continue  # "hidden input", "user input": an English noun; a parameter called input is written as code
                found.append(Premise(kind=kind, subject=subject, value=value, param=param, negated=negated, text=text))  # type: ignore[arg-type]
                if _codeish(g.get("S") or "", m.start("S")):
                    coded.add((kind, param))
                else:
                    plain.append(len(found) - 1)
    # "`request_context` read its request argument": the try that starts at `read` takes the verb as the subject;
    # where the same parameter also has a subject written as code, that one is meant
    dropped = {i for i in plain if found[i].kind in ("param", "default") and (found[i].kind, found[i].param) in coded}
    return _dedupe([p for i, p in enumerate(found) if i not in dropped])


_CODE_EXTENSION = re.compile(r"\.(?:" + "|".join(CODE_EXTENSIONS) + r")$", re.I)
_MODULE_PATH = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+")  # `requests.sessions`, `com.example.kv`
_CONTAINER_NOUN = r"(?:file|module|package|crate|namespace|folder|directory)"


def _names_a_file(question: str, start: int, end: int, is_module: Callable[[str], bool]) -> bool:
    """The words at `start:end` name a file, module or folder: a source file's extension, a path separator, a dotted
    lower-case module path, a noun beside them that says so ("the `store` package"), or a word the index holds as a
    file stem or folder (`_models`, `api`). Any word stands in the place a file name takes ("which struct implements
    Store", "stored in memory"); only these can be checked."""
    raw = question[start:end]
    if "/" in raw or "\\" in raw or _CODE_EXTENSION.search(raw) or _MODULE_PATH.fullmatch(raw):
        return True
    if re.search(r"\b" + _CONTAINER_NOUN + r"\s+[`'\"]?$", question[:start], re.I) or \
            re.match(r"[`'\"]?\s+" + _CONTAINER_NOUN + r"\b", question[end:], re.I):
        return True
    asked = re.search(r"\b(?:which|what|whichever|each|every|any|a|an|no)\s+[`'\"]?$", question[:start], re.I)
    return not asked and is_module(raw.strip("`'\""))  # "which handler implements Store" asks of a handler


def _quoted(question: str, start: int) -> bool:
    """The name at `start` is written in backticks or quotes (the grammar's name groups leave them out)."""
    return question[start - 1 : start] in ("`", "'", '"')


# words that, right before a plain lower-case word, modify a noun: "an asynchronous result", "the property value",
# "a function call", "a native module's definition" are English, not premises about `result`, `value` or `definition`
_NOUN_MODIFIERS = frozenset("async asynchronous sync synchronous blocking coroutine awaitable property static abstract cached "
                            "class function method constant variable interface enum struct trait module file".split())


def _noun_after_cue(raw_subject: str, before: str) -> bool:
    """A plain lower-case subject written right after a kind, decorator or async word is that word's noun."""
    if not re.fullmatch(r"[a-z]+", raw_subject):
        return False
    words = before.split()
    return bool(words) and words[-1].lower().removesuffix("'s") in _NOUN_MODIFIERS


_ACRONYM = re.compile(r"[A-Z][A-Z0-9]+")
_AUXILIARIES = frozenset("do does did can could will would should must may might".split())
_DETERMINERS = frozenset("the a an its this that these those their our your my".split())
# nouns that name what a code word is, so "the fetch function" still names `fetch`
_KIND_NOUNS = frozenset("function functions method methods call calls class classes constructor helper api hook "
                        "callback decorator command endpoint route handler view signature".split())


def _english_word_use(raw_subject: str, question: str, start: int, end: int, match_end: int) -> bool:
    """A plain lower-case subject used as English, not as a code name: a noun after "a"/"an" ("input read for a
    prompt with hidden input"), the first half of a compound noun ("a long option on the command line"), or the
    verb of a clause whose subject comes before it ("How does Click convert the value of a UUID parameter"). A name
    in quotes or backticks is code."""
    if not re.fullmatch(r"[a-z]+", raw_subject) or _quoted(question, start):
        return False
    before = question[:start].split()
    if before and before[-1].lower() in ("a", "an"):
        return True
    if len(before) >= 2 and before[-2].lower() in _AUXILIARIES and before[-1].lower() not in _DETERMINERS:
        return True
    if end == match_end and before and before[-1].lower() in _DETERMINERS:  # "the command line", not "of echo control"
        after = re.match(r"\s+([a-z]+)\b", question[end:])
        if after and after.group(1) not in _STOP and after.group(1) not in _KIND_NOUNS:
            return True
    return False


def _slot_values(kind: str, g: dict, phrase: str) -> tuple[str, str] | None:
    """(value, param) a grammar match names for its kind; None when the slot holds no such thing."""
    value, param = "", ""
    if kind == "base" or kind == "raises":
        value = _clean(g["V"])
        if kind == "base" and not (_codeish(g["V"], 1) or isinstance(getattr(builtins, value, None), type)):
            return None  # "subclasses during processing": a base class is written as code
        if kind == "raises" and not value.rsplit(".", 1)[-1][:1].isupper():
            return None
    elif kind == "param":
        param = _clean(g.get("P") or g.get("kw") or "")
        value = param
    elif kind == "default":
        param, value = _clean(g["P"]), _clean_literal(g["V"])
    elif kind == "decorator":
        value = " ".join(_clean(g["D"]).lower().replace("_", " ").split()) if g.get("D") else ""
    elif kind == "async":
        word = (g.get("A") or "").lower()
        value = "async" if _ASYNC_WORDS.get(word, True) else "sync"  # "awaited": async
        if word.startswith("block") or (not word and re.search(r"\b(sync|synchronous|blocking)\b", phrase, re.I)):
            value = "sync"
    elif kind == "returns":
        value = _clean(g["V"])
        if not _typeish(g["V"], phrase):
            return None
    elif kind == "value":
        value = _clean_literal(g["V"])
        if not _LITERAL_VALUE.fullmatch(value):
            return None  # "why is `X` set to something else": only a literal can be checked against the code
    elif kind == "file":
        value = g["F"].strip("`'\"")  # a path keeps its `@` (npm scopes)
    elif kind == "kind":
        value = _KIND_WORDS.get((g.get("K") or "class").lower(), "class")
    return value, param


def _overlapping(pattern: re.Pattern[str] | _LazyPattern, text: str) -> Iterator[re.Match[str]]:
    """Every match, including those starting inside an earlier one: in "give to_bytes as its p parameter"
    the first try takes `give` as the subject; the one that names `to_bytes` must still be seen."""
    pos = 0
    while pos <= len(text):
        m = pattern.search(text, pos)
        if m is None:
            return
        yield m
        pos = m.start() + 1


def _typeish(raw: str, phrase: str) -> bool:
    """A return-type slot holds a type, not an adverb: `returns early` is no premise, `returns a str` is."""
    name = _clean(raw)
    return (name.lower() in _TYPE_WORDS or any(ch.isupper() for ch in name) or "[" in name or "." in name
            or f"`{name}`" in phrase)


def _dedupe(premises: list[Premise]) -> list[Premise]:
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Premise] = []
    defaults = {(p.subject, p.param) for p in premises if p.kind == "default"}
    kinds: dict[str, set[str]] = {}
    for p in premises:
        if p.kind == "kind":
            kinds.setdefault(p.subject, set()).add(p.value)
    for p in premises:
        key = (p.kind, p.subject, p.param, p.value)
        if key in seen:
            continue
        if p.kind == "param" and (p.subject, p.param) in defaults:
            continue  # the default premise checks the parameter too
        if p.kind == "kind" and len(kinds.get(p.subject, ())) > 1:
            continue  # "is X a class or a function?" asks, it does not presuppose
        seen.add(key)
        out.append(p)
    return out


def _clean_literal(raw: str) -> str:
    v = raw.strip().removesuffix("()") if raw.strip().endswith("()") and raw.strip()[:-2].isidentifier() else raw.strip()
    return v.strip("`").rstrip(".,;:") if not re.fullmatch(r"-?\d+\.\d+", v) else v


# -- checking ---------------------------------------------------------------------------------------------


def _loc(e: Entity) -> str:
    return f"{e.file}:{e.start_line}"


def _real_params(e: Entity) -> list[str]:
    return [p for p in e.params if p not in ("self", "cls", "this")]


def _definitions(name: str, resolve: Resolver) -> list[Entity]:
    """Definitions of a subject: `Session.request` by qualified name, `request` by name; part 0 only."""
    short = short_name(name)
    found = [e for e in resolve(short) if e.kind in DEFINITION_KINDS and e.part == 0]
    if "." in name and found:
        tail = name.split(".")
        owned = ".".join(tail[-2:])  # `Command.invoke` is `Command.invoke` or `x.Command.invoke`, not `BaseCommand.invoke`
        narrowed = [e for e in found if e.qualname in (owned, name) or e.qualname.endswith("." + owned)]
        found = narrowed or _by_prefix(tail[:-1], found) or found
    return found


def _owner(e: Entity) -> str:
    """The short name of the class (or other definition) that holds `e`; '' for a module-level one. Read from the
    qualname too: a passage seen as an entity (`entity_of`) has no `parent`."""
    if e.parent:
        return short_name(e.parent)
    return short_name(e.qualname.rsplit(".", 1)[0]) if e.qualname.endswith("." + e.name) else ""


def _by_prefix(prefix: list[str], found: list[Entity]) -> list[Entity]:
    """Definitions a dotted subject's prefix picks when no qualname ends with it: `session.request` is a method of
    a class named like the prefix; `requests.get` or `s.get` is a module-level function (one in a module named like
    the prefix first), not a method of an unrelated class that shares the name (`RequestsCookieJar.get`)."""
    owner = prefix[-1].lower()
    same_owner = [e for e in found if _owner(e).lower() == owner]
    if same_owner:
        return same_owner
    module = [p.lower() for p in prefix]
    top = [e for e in found if not _owner(e)]
    in_module = [e for e in top if _segments_hold(e.file, module)]
    if in_module:
        return in_module
    mod = "/".join(prefix)  # a module path (`pkg.mod.Name`): definitions whose file matches the module
    by_path = [e for e in found if mod and mod in e.file.rsplit(".", 1)[0]]
    return [e for e in by_path or found if not _owner(e)] or by_path


def _segments_hold(path: str, module: list[str]) -> bool:
    """The file's path, without its extension, holds the module's parts as consecutive segments."""
    parts = [p.lower() for p in path.rsplit(".", 1)[0].replace("\\", "/").split("/")]
    return any(parts[k : k + len(module)] == module for k in range(len(parts) - len(module) + 1))


def ancestors(cls: Entity, resolve: Resolver, depth: int = 6) -> tuple[set[str], bool]:
    """Short names of every base class reachable through indexed classes; and whether all were resolved."""
    seen: set[str] = set()
    complete = True
    frontier = [cls]
    for _ in range(depth):
        nxt: list[Entity] = []
        for c in frontier:
            for b in c.bases:
                short = short_name(b)
                if short in seen:
                    continue
                seen.add(short)
                defs = [e for e in resolve(short) if e.kind in _CLASS_KINDS and e.part == 0]
                builtin = getattr(builtins, short, None)
                if defs:
                    nxt.extend(defs)
                elif isinstance(builtin, type):  # `Exception`, `dict`: their ancestry is known without an index
                    seen.update(b.__name__ for b in builtin.__mro__[1:])
                elif short not in ("object", "Generic", "Protocol", "ABC"):
                    complete = False
        frontier = nxt
        if not frontier:
            break
    return seen, complete


def _norm_literal(v: str) -> str:
    s = v.strip().strip("`").strip()
    low = s.lower()
    m = re.match(r"^(?:an?\s+)?empty\s+(\w+)$", low)
    if m:
        return {"list": "[]", "array": "[]", "dict": "{}", "dictionary": "{}", "object": "{}", "mapping": "{}", "string": "''",
                "str": "''", "tuple": "()", "set": "set()", "bytes": "b''"}.get(m.group(1), low)
    if low in ("none", "null", "nil", "undefined"):
        return "none"
    if low in ("true", "false"):
        return low
    if re.fullmatch(r"-?\d+(?:\.\d+)?", s):
        return repr(float(s))
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return "'" + s[1:-1] + "'"
    if low in ("list()", "dict()", "tuple()"):
        return {"list()": "[]", "dict()": "{}", "tuple()": "()"}[low]
    return short_name(s.replace(" ", ""))


norm_literal = _norm_literal  # public: the faithfulness guard compares an answer's values the same way


_TYPE_MODULES = frozenset({"typing", "typing_extensions", "builtins", "collections", "abc", "t"})  # `typing.Any` is `Any`


def _type_tokens(annotation: str) -> set[str]:
    """The type names an annotation spells, lower-cased, without the modules that hold them (`typing.Any`: any)."""
    return {t.lower() for t in re.findall(r"[A-Za-z_]\w*", annotation)} - _TYPE_MODULES


def _returns_match(claimed: str, annotation: str, resolve: Resolver) -> bool | None:
    have = _type_tokens(annotation)
    if not have or have <= _UNCHECKABLE_RETURNS or len(annotation) == 1:
        return None
    words = _type_tokens(claimed)
    if not words:
        return None
    head = short_name(re.split(r"\[", claimed)[0]).lower()
    wanted = _TYPE_WORDS.get(head, {head})
    if wanted & have:
        return True
    for t in re.findall(r"[A-Za-z_]\w*", annotation):  # `returns a Request` when the annotation names a subclass of it
        for d in resolve(t):
            if d.kind in _CLASS_KINDS and head in {a.lower() for a in ancestors(d, resolve)[0]}:
                return True
    return False


def _decorator_match(claimed: str, decorators: list[str]) -> bool:
    names = {d for d in decorators}
    wanted = _DECORATOR_WORDS.get(claimed, {claimed.replace(" ", "_"), claimed.replace(" ", "")})
    return bool(names & wanted) or any(d.lower() in {w.lower() for w in wanted} for d in names)


def _file_match(claimed: str, path: str) -> bool:
    # `./src/a.py` and Windows' `src\a.py` name the same file as `src/a.py`
    c = re.sub(r"^(?:\./)+", "", claimed.replace("\\", "/")).strip("/")
    if _GO_IMPORT_PATH.match(c) and not _CODE_EXTENSION.search(c):  # `gopkg.in/yaml.v3` ends in no extension
        return _import_path_match(c, path.rsplit("/", 1)[0] if "/" in path else "")
    if re.search(r"\.\w{1,5}$", c) and not re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", c.rsplit(".", 1)[0] + ".x"):
        # a name read after a space may be the end of one holding spaces (`dir/spaced mod.py`), and an absolute one
        # (`/home/me/repo/src/a.py`, `C:\repo\src\a.py`) ends with the workspace path: neither is a contradiction
        return path == c or path.endswith(("/" + c, " " + c)) or c.endswith("/" + path)
    if path == c or path.endswith(("/" + c, " " + c)) or any(part.startswith(c + " ") for part in path.split("/")):
        return True  # the last two: a name read after or before a space may end or begin one holding spaces
    stem = path.rsplit(".", 1)[0]
    folder = path.rsplit("/", 1)[0] if "/" in path else ""  # a Go or Java package is the file's folder (`internal/store`)
    mod = c.replace(".", "/")
    return (stem == mod or stem.endswith("/" + mod) or stem.endswith("/" + mod + "/__init__") or stem == mod + "/__init__"
            or folder == mod or folder.endswith("/" + mod) or _on_path(c, stem))


# a Go import path: a domain, then folders (`github.com/acme/mux`, `golang.org/x/net/http2`)
_GO_IMPORT_PATH = re.compile(r"[\w-]+(?:\.[\w-]+)+/[\w./-]+$")


def _import_path_match(claimed: str, folder: str) -> bool:
    """A Go import path names the folder it ends in (`vendor/github.com/acme/mux`), or the folder it names after
    the go.mod module path (`github.com/example/gosvc/internal/store` is `internal/store`). A file at the root is in
    the module's own package, whose path only go.mod knows: not contradicted."""
    return not folder or folder == claimed or folder.endswith("/" + claimed) or claimed.endswith("/" + folder)


def _on_path(claimed: str, stem: str) -> bool:
    """A bare word names a folder the file is in (`httpx` holds `httpx/_transports/default.py`: a package holds its
    subpackages), or its stem; either one without its leading `_` (`models` is the private `_models.py`)."""
    return bool(re.fullmatch(r"[A-Za-z]\w*", claimed)) and any(p.removeprefix("_") == claimed for p in stem.split("/"))


def _implemented(e: Entity, claimed: list[Entity], resolve: Resolver) -> bool | None:
    """True when Go's method sets show that `e` implements a `claimed` interface; None when nothing can tell."""
    owners = implements.owner_names(e, ancestors(e, resolve)[0], resolve, _CLASS_KINDS)
    return implements.go_implements(e, claimed, owners, resolve)


def _params_text(e: Entity) -> str:
    params = _real_params(e)
    return ", ".join(f"`{p}`" for p in params) if params else "no parameters"


def _check_one(p: Premise, e: Entity, resolve: Resolver) -> tuple[bool | None, str]:
    """(holds, fact) for one definition: True, False, or None when this definition cannot tell."""
    facts = e.facts
    name = f"`{e.qualname}`"
    if p.kind == "base":
        if e.kind not in _CLASS_KINDS:
            return False, f"{name} is a {e.kind}, not a class ({_loc(e)})"
        direct = [short_name(b) for b in e.bases]
        if short_name(p.value) in direct:
            return True, ""
        seen, complete = ancestors(e, resolve)
        if short_name(p.value) in seen:
            return True, ""
        claimed = [d for d in resolve(short_name(p.value)) if d.kind in _CLASS_KINDS]
        claimed_known = bool(claimed)
        if p.loose:  # the words did not say which way: either direction holds
            if not claimed_known or any(short_name(e.qualname) in ancestors(d, resolve)[0] for d in claimed):
                return (None if not claimed_known else True), ""
            reverse = [_implemented(d, [e], resolve) for d in claimed if implements.undecidable(d, [e])]
            if reverse:
                return (True if any(reverse) else None), ""
        if not complete and not claimed_known:
            return None, ""
        if implements.undecidable(e, claimed):  # Go, Rust: implemented apart from the type, so no base is no proof
            return _implemented(e, claimed, resolve), ""
        bases = ", ".join(f"`{b}`" for b in direct) if direct else "no base class"
        return False, f"{name} inherits from {bases}, not `{p.value}` ({_loc(e)})"
    if p.kind in ("param", "default"):
        target = e
        if e.kind in _CLASS_KINDS:
            inits = [d for n in ("__init__", "constructor", "new") for d in resolve(f"{e.qualname}.{n}") if d.file == e.file]
            if not inits:
                return None, ""
            target = inits[0]
        elif e.kind not in _FUNC_KINDS:
            return None, ""
        params = _real_params(target)
        if p.param not in params:
            if "**" in target.signature or "..." in target.signature or not target.params and "(" not in target.signature:
                return None, ""  # a catch-all may accept it: doubt is not contradiction
            return False, f"{name} takes {_params_text(target)}; there is no parameter `{p.param}` ({_loc(target)})"
        if p.kind == "param":
            return True, ""
        if facts is None and target.facts is None:
            return None, ""
        defaults = (target.facts.defaults if target.facts else {}) or {}
        if p.param not in defaults:
            return False, f"`{p.param}` of {name} has no default: callers must pass it ({_loc(target)})"
        default = defaults[p.param]
        if _norm_literal(default) == _norm_literal(p.value):
            return True, ""
        shown = f"`{default}`"
        named_constant = re.fullmatch(r"[A-Za-z_$][\w$.]*", default) and not _LITERAL_VALUE.fullmatch(default)
        if named_constant and _LITERAL_VALUE.fullmatch(p.value):
            named = _named_value(default, resolve)
            if named is None:
                return None, ""  # its value is out of sight (imported, computed): doubt, not contradiction
            if _norm_literal(named) == _norm_literal(p.value):
                return True, ""
            shown = f"`{default}` (`{named}`)"
        return False, f"`{p.param}` of {name} defaults to {shown}, not `{p.value}` ({_loc(target)})"
    if p.kind == "decorator":
        if facts is None:
            return (None, "") if e.kind in _CLASS_KINDS or e.kind in _FUNC_KINDS else (False, f"{name} is a {e.kind} ({_loc(e)})")
        if _decorator_match(p.value, facts.decorators):
            return True, ""
        shown = ", ".join(f"`@{d}`" for d in facts.decorators) if facts.decorators else "no decorator"
        return False, f"{name} carries {shown}, not `@{p.value.replace(' ', '')}` ({_loc(e)})"
    if p.kind == "async":
        if e.kind not in _FUNC_KINDS or facts is None:
            return None, ""
        is_async = facts.is_async or bool(_type_tokens(facts.returns) & {"awaitable", "coroutine", "promise"})
        if is_async == (p.value == "async"):
            return True, ""
        return False, f"{name} is {'async' if is_async else 'synchronous (a plain def, not async)'} ({_loc(e)})"
    if p.kind == "returns":
        if facts is not None and facts.is_async and _type_tokens(p.value) & {"coroutine", "awaitable", "future"}:
            return True, ""  # calling an `async def` returns a coroutine, whatever the annotation says it resolves to
        if e.kind not in _FUNC_KINDS or facts is None or not facts.returns:
            return None, ""
        ok = _returns_match(p.value, facts.returns, resolve)
        if ok is None or ok:
            return ok, ""
        return False, f"{name} is annotated to return `{facts.returns}`, not `{p.value}` ({_loc(e)})"
    if p.kind == "raises":
        if e.kind not in _FUNC_KINDS or facts is None:
            return None, ""
        raised = facts.raises
        if short_name(p.value) in raised:
            return True, ""
        for r in raised:
            for d in resolve(r):
                if d.kind in _CLASS_KINDS and short_name(p.value) in ancestors(d, resolve)[0]:
                    return True, ""
        shown = ", ".join(f"`{r}`" for r in raised) if raised else "nothing"
        return False, f"{name}'s own body raises {shown}, not `{p.value}` (a callee may still raise it) ({_loc(e)})"
    if p.kind == "file":
        if _file_match(p.value, e.file):
            return True, ""
        return False, f"{name} is defined in `{e.file}`, not `{p.value}` ({_loc(e)})"
    if p.kind == "value":
        value = constant_value(e)
        if value is None:
            return None, ""
        if _norm_literal(value) == _norm_literal(p.value):
            return True, ""
        return False, f"{name} is `{value}`, not `{p.value}` ({_loc(e)})"
    if p.kind == "kind":
        actual = _KIND_WORDS.get(e.kind, e.kind)
        if actual == p.value or {actual, p.value} <= {"class", "struct", "interface", "trait", "enum"} and p.value == "class":
            return True, ""
        return False, f"{name} is a {e.kind}, not a {p.value} ({_loc(e)})"
    return None, ""


_SCORES = {"base": 0.9, "param": 0.85, "default": 0.85, "decorator": 0.8, "async": 0.85, "returns": 0.75,
           "raises": 0.6, "file": 0.8, "kind": 0.8, "value": 0.8}

# a literal a constant may be set to, as the question or the code writes it
_LITERAL_VALUE = re.compile(r"-?(?:0[xXoObB][0-9a-fA-F_]+|\d[\d_]*(?:\.\d+)?(?:[eE]-?\d+)?)|'[^'\n]*'|\"[^\"\n]*\"|"
                            r"True|False|None|true|false|null|nil|undefined")
# `NAME = 20`, `NAME: int = 20`, `const NAME = 20;`, `NAME := 20`: the literal a definition's first line gives
_DEFINED_AS = re.compile(r"^\s*(?:(?:export|const|let|var|static|final|public|private|pub)\s+)*[\w$.]+\s*(?::\s*[^=\n]+?)?\s*:?=\s*"
                         r"(?P<v>[^\n;]+?)\s*;?\s*(?:#.*|//.*)?$")


def constant_value(e: Entity) -> str | None:
    """The literal a constant's definition gives it (`MAX = 20` -> `20`); None for an expression or no constant."""
    if e.kind not in ("constant", "variable"):
        return None
    first = e.body.splitlines()[0] if e.body else ""
    found = _DEFINED_AS.match(first)
    value = found.group("v").strip() if found else ""
    return value if _LITERAL_VALUE.fullmatch(value) else None


def _named_value(name: str, resolve: Resolver) -> str | None:
    """The literal of the constant a default names (`max_redirects=DEFAULT_MAX_REDIRECTS` -> `20`), when one
    definition of that name gives one."""
    values = {v for e in resolve(name) if (v := constant_value(e)) is not None}
    return values.pop() if len(values) == 1 else None


def _without_constructors(defs: list[Entity]) -> list[Entity]:
    """The definitions less the constructors named like a class among them (Java, C#, C++ `MemoryStore.MemoryStore`):
    what the class is, inherits from or lives in is said of the class, not of its constructor ("is a method, not a class")."""
    classes = {e.qualname for e in defs if e.kind in _CLASS_KINDS}
    return [e for e in defs if not (e.kind in _FUNC_KINDS and e.name == _owner(e) and e.qualname.rsplit(".", 1)[0] in classes)]


def check(premises: Iterable[Premise], resolve: Resolver) -> list[PremiseFinding]:
    """One finding per premise whose subject is defined in the index. A premise fails only when every
    definition of its subject contradicts it (a name defined twice may hold in one place)."""
    findings: list[PremiseFinding] = []
    for p in premises:
        defs = _definitions(p.subject, resolve)
        if p.kind in ("base", "kind", "file"):
            defs = _without_constructors(defs)
        if not defs:
            continue
        results = [(e, *_check_one(p, e, resolve)) for e in defs]
        if p.negated:
            results = [(e, (None if h is None else not h), fact) for e, h, fact in results]
        decided = [r for r in results if r[1] is not None]
        if not decided:
            continue
        first = decided[0][0]
        if any(h for _, h, _ in decided):
            holder = next(e for e, h, _ in decided if h)
            findings.append(PremiseFinding(premise=p, holds=True, contradicts=0.0, entity_id=holder.id, entity=holder.qualname,
                                           file=holder.file, line=holder.start_line))
            continue
        fact = decided[0][2] or f"`{p.subject}` does not match the question's premise ({_loc(first)})"
        if p.negated and not decided[0][2]:
            fact = f"the premise that `{p.subject}` is not {p.value} does not hold ({_loc(first)})"
        if any(not f.holds and (f.entity_id, f.fact) == (first.id, fact) for f in findings):
            continue  # `a::b::C::m` and `C::m` of one question are one definition's one fact: said once
        findings.append(PremiseFinding(premise=p, holds=False, contradicts=_SCORES[p.kind], entity_id=first.id,
                                       entity=first.qualname, file=first.file, line=first.start_line, fact=fact))
    return findings




# -- loose inference: cues anywhere near a defined subject ----------------------------------------------
# The grammar needs the words in a known order; people do not write that way ("Which `Base` methods does `X`
# inherit?", "Can I pass timeout= to get?"). These rules use the index: a token counts as a subject only when
# it names a definition, and a value only when it is the right sort of thing (a class, a parameter-looking
# name, a literal, an exception). Each rule needs a cue word close by, and never overrides the grammar.

_TOKEN = re.compile(r"`[^`\n]{1,80}`|(?<![\w$.])" + _GO_METHOD_NAME + r"|@?[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*(?:\(\))?|-?\d+(?:\.\d+)?|'[^'\n]{0,40}'|\"[^\"\n]{0,40}\"|\S")
_INHERIT_CUE = re.compile(r"^(inherit\w*|subclass\w*|extend\w*|deriv\w*|parent|superclass\w*|super|base|descend\w*|mro|"
                          r"overrid\w*|ancestors?|implement|implements|implementing)$", re.I)
# what a function has besides parameters: "`f`'s signature?" asks about `f`, it names no parameter `signature`
_ASPECT_NOUNS = frozenset("signature name purpose job role body doc docs docstring definition implementation behaviour "
                          "behavior output result results return type source code caller callers callee callees test tests "
                          "usage location file module class owner cost speed".split())
_PARAM_NOUN = re.compile(r"^(parameters?|arguments?|args?|kwargs?|params?|keywords?|options?|flags?)$", re.I)
_PARAM_VERB = re.compile(r"^(pass\w*|accept\w*|take\w*|receiv\w*|need\w*|requir\w*|set|setting|without|omit\w*|support\w*)$", re.I)
_RETURN_CUE = re.compile(r"^(returns?|returned|returning|produces?|produced|yields?|hands?|gives?|back|outputs?)$", re.I)
# what a call gives, named around the function rather than by a verb after it: "the result of f is a T", "the T
# that comes out of f", "the T from f"
_RESULT_NOUN = re.compile(r"^(result|results|output|outcome|return)$", re.I)
_TAKE_FROM = re.compile(r"^(get|gets|getting|got|extract\w*|read\w*|take\w*|took|pull\w*|access\w*|obtain\w*|fetch\w*|pick\w*|"
                        r"parse\w*|find|finds|found|use|uses|using|strip\w*)$")
_LINKING = frozenset("is are was be being always still never really a an the of type value".split())
_RAISE_CUE = re.compile(r"^(rais\w*|throw\w*|thrown|trigger\w*|catch\w*|avoid\w*|fail\w*|end|ends|except)$", re.I)
_FILE_CUE = re.compile(r"^(in|inside|within|defin\w*|declar\w*|implement\w*|lives?|sits?|kept|keeps?|plac\w*|put|locat\w*|contain\w*|part)$", re.I)
_EXC_NAME = re.compile(r"(Error|Exception|Warning|Exit|Interrupt|Timeout|Abort|Failure|Invalid\w*)$")
_LITERAL = re.compile(r"^(-?\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\"|None|True|False|null|true|false|undefined|nil)$")
_DECO_CUE = {"property": "property", "staticmethod": "staticmethod", "classmethod": "classmethod",
             "cached_property": "cached property", "abstractmethod": "abstract method", "contextmanager": "context manager"}


def _inherit_phrase(low: list[str], j: int) -> bool:
    """"A built on top of B" (`top`), "use A wherever (where) B is expected", "A modelled as a B": B is A's base."""
    if low[j] == "top":
        return 0 < j < len(low) - 1 and low[j - 1] == "on" and low[j + 1] == "of"
    if low[j] in ("modelled", "modeled") and j + 1 < len(low) and low[j + 1] == "as":  # "why is A modelled as a B"
        return True
    return low[j] in ("wherever", "where") and any(w in ("expected", "accepted", "required", "wanted") for w in low[j + 1 : j + 6])


# an inheritance verb: between two classes it says which is the subject ("A implements B", "B is extended by A")
_INHERIT_VERB_CUE = re.compile(r"^(inherit\w*|subclass\w*|extend\w*|deriv\w*|overrid\w*|implement\w*|speciali[sz]\w*)$")


def _passive_cue(low: list[str], j: int) -> bool:
    """"B is implemented by A": `implemented` alone is no inheritance cue ("how is A implemented with B")."""
    return low[j] == "implemented" and j + 1 < len(low) and low[j + 1] == "by"


def _base_subject(a: int, b: int, near_cue: list[int], low: list[str]) -> tuple[int, int]:
    """(subject, base) of classes at tokens a < b. A verb between them reads as English does: "A implements B",
    "A extends B" name A; "B is implemented by A" names A too. Otherwise the class closest to the cue is the
    subject ("which `Base` methods does `X` inherit", "is B the parent of A")."""
    verbs = [j for j in near_cue if a < j < b and _INHERIT_VERB_CUE.match(low[j])]
    if verbs:
        j = verbs[0]
        possessive = low[j - 2 : j] == ["'", "s"]  # "B's subclass A"
        passive = j + 1 < len(low) and low[j + 1] == "by"
        return (b, a) if passive or possessive else (a, b)
    closer_b = min(abs(j - b) for j in near_cue) <= min(abs(j - a) for j in near_cue)
    return (b, a) if closer_b else (a, b)


def _path_ending(question: str, start: int, end: int) -> str:
    """The whole path whose last part is the token at `start:end`: a token stops at `/`, so `api/server.go` would
    be read as `server.go`."""
    head = re.findall(r"[\w.@+\-/\\]*$", question[:start])[0]  # always matches, if only the empty string
    return _clean(head + question[start:end])


def _tokens(question: str) -> list[str]:
    return [m.group(0) for m in _TOKEN.finditer(question)]


def _identifierish(raw: str, following: str) -> bool:
    """A name written as code: backticked, snake_case, dotted, or followed by `=`."""
    name = _clean(raw)
    return raw.startswith("`") or "_" in name.strip("_") or following == "=" or ("." in name and not name.endswith("."))


_TYPING_NAMES = frozenset("Iterator Iterable AsyncIterator AsyncIterable Generator AsyncGenerator Callable Awaitable Coroutine "
                          "Sequence Mapping MutableMapping Optional Union Tuple List Dict Set FrozenSet Type IO TextIO BinaryIO".split())
_RETURN_SKIP = frozenset("a an the me us you back something anything other than only always just its some".split())


def _typename(name: str, resolve: Resolver) -> bool:
    if name.lower() in _TYPE_WORDS:
        return True
    if not name[:1].isupper() or not re.fullmatch(r"[A-Za-z_][\w.]*", name):
        return False
    camel = sum(c.isupper() for c in name) >= 2 and any(c.islower() for c in name)  # `SSLContext`, `PathLike`
    return camel or isinstance(getattr(builtins, name, None), type) or name in _TYPING_NAMES or any(
        e.kind in _CLASS_KINDS for e in resolve(short_name(name)))


def _returned_type(toks: list[str], low: list[str], cue: int, subject: int, resolve: Resolver) -> str:
    """The type next to a return cue: after it ("returns a `Response`") or just before it ("the `URL` it returns")."""
    for k in range(cue + 1, min(len(toks), cue + 7)):
        if k == subject:
            break
        if low[k] in _RETURN_SKIP:
            continue
        name = _clean(toks[k])
        if _typename(name, resolve):
            return name
        break
    for k in range(cue - 1, max(-1, cue - 4), -1):
        if k == subject or low[k] in ("it", "that", "which"):
            continue
        name = _clean(toks[k])
        if _typename(name, resolve) and k < subject:
            return name
        if low[k] in ("the", "a", "an"):
            break
    return ""


def _result_type(toks: list[str], low: list[str], j: int, subject: int, resolve: Resolver) -> str:
    """The type token `j` names as the subject's result: "the result of f is a T" (`j` the noun, the subject after
    "of", the type after it) or "the T from f" (`j` the type, the subject right after "from"; not an exception:
    "which ValueError from f" is about what f raises)."""
    if _RESULT_NOUN.match(low[j]) and j + 2 == subject and low[j + 1] == "of":
        for k in range(subject + 1, min(len(toks), subject + 5)):
            if low[k] in _LINKING:
                continue
            name = _clean(toks[k])
            return name if _typename(name, resolve) else ""
        return ""
    if j + 2 == subject and low[j + 1] == "from" and j > 0 and low[j - 1] in ("the", "a", "an", "this", "that") and not (
            j > 1 and _TAKE_FROM.match(low[j - 2])):  # "get the Headers from f": a part of what f returns
        name = _clean(toks[j])
        if _typename(name, resolve) and not _exception_name(name, resolve):
            return name
    return ""


def _exception_name(name: str, resolve: Resolver) -> bool:
    """`ValueError`, or an indexed class whose ancestry reaches an exception (`BadParameter`)."""
    if not name[:1].isupper() or not re.fullmatch(r"[A-Za-z_][\w.]*", name):
        return False
    if _EXC_NAME.search(name):
        return True
    obj = getattr(builtins, name, None)
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return True
    for d in resolve(short_name(name)):
        if d.kind in _CLASS_KINDS and any(_EXC_NAME.search(a) or a == "BaseException" for a in ancestors(d, resolve)[0]):
            return True
    return False


def _codeish(raw: str, position: int) -> bool:
    """Written as code, not as an English word: backticks, `_`, a dot, inner capitals, or a capital mid-sentence."""
    name = _clean(raw)
    return (raw.startswith("`") or "_" in name or "." in name or any(c.isupper() for c in name[1:])
            or (name[:1].isupper() and position > 0))


def infer(question: str, resolve: Resolver, stated: list[Premise]) -> list[Premise]:
    """Premises the grammar missed, read from cues near names the index defines."""
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(question)]
    toks = [question[a:b] for a, b in spans]
    low = [t.lower().strip("`").removesuffix("()") for t in toks]
    pasted = pasted_code(question)

    def in_paste(i: int) -> bool:
        return any(a <= spans[i][0] < b for a, b in pasted)

    defs: dict[int, list[Entity]] = {}
    for i, t in enumerate(toks):
        name = _clean(t)
        if _plausible_subject(name) and re.fullmatch(r"[A-Za-z_$][\w$.]*", name) and _codeish(t, i) and not (
                i > 0 and toks[i - 1] == "="):  # `style='rule.line'`: the value after `=` is no subject
            found = _definitions(name, resolve)
            if found:
                defs[i] = found
    have = {(p.kind, p.subject) for p in stated}
    out: list[Premise] = []

    def near(i: int, pattern: re.Pattern[str], before: int, after: int, skip: Collection[int] = ()) -> int | None:
        for j in range(max(0, i - before), min(len(toks), i + after + 1)):
            if j != i and j not in skip and pattern.match(low[j]):
                return j
        return None

    def add(kind: str, i: int, value: str, param: str = "", negation_checked: bool = False) -> None:
        subject = _clean(toks[i])
        if (kind, subject) in have or any((p.kind, p.subject, p.value) == (kind, subject, value) for p in out):
            return
        window = question[spans[max(0, i - 3)][0] : spans[min(len(spans) - 1, i + 3)][1]]
        start = spans[max(0, i - 3)][0]
        negated = not negation_checked and any(not _supposed(question, start + m.start()) for m in _NEG.finditer(window))
        out.append(Premise(kind=kind, subject=subject, value=value, param=param, negated=negated, loose=True,  # type: ignore[arg-type]
                           text=" ".join(toks[max(0, i - 3) : i + 6])))

    # a name that is a parameter of another named function is that parameter here, not a subject of its own
    named_params = {p for i, d in defs.items() for e in d if e.kind in _FUNC_KINDS for p in _real_params(e) if _clean(toks[i]) != p}
    defs = {i: d for i, d in defs.items() if not (_clean(toks[i]) in named_params and not toks[i][:1].isupper())}
    classes = {i: d for i, d in defs.items() if any(e.kind in _CLASS_KINDS for e in d)}
    functions = {i: d for i, d in defs.items() if any(e.kind in _FUNC_KINDS for e in d)}
    # base: two classes and an inheritance cue after the first of them; direction is checked both ways
    cue = [j for j, w in enumerate(low) if _INHERIT_CUE.match(w) or _inherit_phrase(low, j) or _passive_cue(low, j)]
    ordered = sorted(classes)
    for a_i, a in enumerate(ordered):
        for b in ordered[a_i + 1 :]:
            near_cue = [j for j in cue if a < j <= b + 4]
            if near_cue and _clean(toks[a]) != _clean(toks[b]):
                subject, other = _base_subject(a, b, near_cue, low)
                add("base", subject, _clean(toks[other]))
    # params: a parameter-looking name near a parameter cue, checked against every function named
    own_params = {p for d in functions.values() for e in d if e.kind in _FUNC_KINDS for p in _real_params(e)}
    if functions:
        for i, t in enumerate(toks):
            if (i in defs and (t.strip("`")[:1].isupper() or len(functions) == 1 and i in functions)) or len(low[i]) < 2 or _clean(t)[:1].isupper() or (i > 0 and toks[i - 1] == "'") or low[i] in _STOP or low[i] in _PARAM_ADJECTIVES or low[i] in _VERBS or low[i] in _NOT_PARAM_WORDS or not re.fullmatch(r"`?[A-Za-z_]\w*`?", t):
                continue
            if question[spans[i][0] - 1 : spans[i][0]] == "-" or question[spans[i][1] : spans[i][1] + 1] == "-":
                continue  # half of a hyphenated word: "file-based argument" names no parameter `based`
            if in_paste(i):
                continue
            following = toks[i + 1] if i + 1 < len(toks) else ""
            if following == "=":  # `kw=`: the call whose parentheses hold it, if any; `x = f()` names no parameter
                callee = _keyword_of(question, spans, i)
                if callee is not None:
                    if callee in functions:
                        add("param", callee, _clean(t), _clean(t))
                    continue
            after = low[i + 1] if i + 1 < len(low) else ""
            def is_noun(k: int) -> bool:  # `Parameter` the class is not the word "parameter", nor a parameter named `params`
                return 0 <= k < len(toks) and bool(_PARAM_NOUN.match(low[k])) and toks[k].islower() and _clean(toks[k]) not in own_params

            named_after = is_noun(i - 1) and (i < 2 or low[i - 2] in ("the", "its", "a", "an", "this", "that") or _identifierish(t, following))
            noun = is_noun(i + 1) or named_after or (i > 1 and low[i - 1] in ("named", "called") and is_noun(i - 2)) or (
                after in ("a", "an", "the", "is") and is_noun(i + 2))
            verb = near(i, _PARAM_VERB, 3, 2, skip=defs)  # `pass_obj` the function is not the verb "pass"
            possessive = i > 2 and toks[i - 2] == "'" and low[i - 1] == "s" and (i - 3) in functions and after in (
                "for", "do", "does", "mean", "means", "control", "controls", "used", "?") and low[i] not in _ASPECT_NOUNS
            plain = i > 0 and (i - 1) not in defs and _PARAM_VERB.match(low[i - 1]) and not low[i].endswith("ing") and after in ("when", "to", "into", "?", "for", "") and (
                low[i - 1] != "without" or _identifierish(t, following) or _calling(low[:i]))  # "work without permissions": a condition
            role = _input_role(toks, low, i, functions)
            if following == "=" or noun or possessive or plain or role or (verb is not None and _identifierish(t, following)):
                others = [f for f in functions if f != i]
                if not others:
                    continue
                subject = min(others, key=lambda s: abs(s - i))
                if role and not noun and _used_in(_clean(t), functions[subject]):
                    continue  # a local or an attribute of that name: the question may mean it, not a parameter
                if len({_clean(toks[f]) for f in others}) == 1 or abs(subject - i) <= 4:  # one function besides the word
                    add("param", subject, _clean(t), _clean(t))
    # defaults: a parameter of the subject and a literal, with "default" in the question
    default_cue = re.compile(r"\bdefault|\bomit|\bunless\b|\bwithout\b|\bleft\s+at\b|\bstart(?:s|ed)?\s+out\b|\bfall(?:s|ing)?\s+back\b",
                             re.I)  # "p starts out as None in f", "when p is left at 3", "f falls back to p=1"
    if functions and default_cue.search(question):
        for s_i, entities in functions.items():
            params = {p for e in entities for p in _real_params(e)}
            for i, t in enumerate(toks):
                if _clean(t) not in params or in_paste(i):
                    continue
                if not default_cue.search(question[: spans[i][0]] + " " + question[spans[i][1] :]):
                    continue  # "treat a None default": the cue is the parameter `default` itself
                lits = [j for j in range(len(toks)) if _LITERAL.match(_clean(toks[j])) and j != i]
                if lits:
                    j = min(lits, key=lambda j: abs(j - i))
                    if abs(j - i) <= 8:
                        add("default", s_i, _clean_literal(toks[j]), _clean(t))
    # decorators, async, returns, raises, file: each cue speaks about the nearest named definition
    def nearest(j: int, pool: dict[int, list[Entity]]) -> int | None:
        close = [s for s in pool if s != j and abs(s - j) <= 8]
        return min(close, key=lambda s: (abs(s - j), s)) if close else None

    for j, w in enumerate(low):
        raw = toks[j]
        nxt = low[j + 1] if j + 1 < len(low) else ""
        f_i = nearest(j, functions)
        # a decorator word further away is about something else, unless one function is all the question names
        # ("Why does `f` need to be a class method?", "What does `f` lose by being a static method?")
        close = f_i is not None and (abs(f_i - j) <= 4 or len(functions) == 1 and abs(f_i - j) <= 8)
        if f_i is not None:
            if not close:
                pass
            elif w in ("static", "class", "abstract", "cached") and nxt in ("method", "property"):
                add("decorator", f_i, f"{w} {nxt}")
            elif w.lstrip("@") in _DECO_CUE or (raw.startswith("@") and len(raw) > 1):
                add("decorator", f_i, _DECO_CUE.get(w.lstrip("@"), w.lstrip("@").replace("_", " ")))
            if w in ("async", "asynchronous", "asynchronously", "coroutine", "await", "awaited", "awaiting", "awaitable"):
                flipped = j > 0 and bool(re.match(r"^(without|no|not|never|isn|aren|doesn|wasn)$", low[j - 1] if low[j - 1] != "t" else low[j - 3]))
                add("async", f_i, "sync" if flipped else "async", negation_checked=flipped)
            if w in ("sync", "synchronous", "synchronously", "blocking", "blocks", "block"):
                add("async", f_i, "sync")
            cue = bool(_RETURN_CUE.match(w)) or (w in ("comes", "come", "coming") and nxt in ("out", "back"))
            if cue and not (j > 0 and low[j - 1] in ("instead", "of", "than", "without", "before", "after")):
                named = _returned_type(toks, low, j, f_i, resolve)
                if named and not (w.startswith("com") and _exception_name(named, resolve)):  # "a TypeError comes out of f": raised
                    add("returns", f_i, named)
            named = _result_type(toks, low, j, f_i, resolve)
            if named:
                add("returns", f_i, named)
            if _exception_name(_clean(raw), resolve) and near(j, _RAISE_CUE, 6, 6) is not None:
                add("raises", f_i, _clean(raw))
        d_i = nearest(j, defs)
        if d_i is not None and not in_paste(j) and re.search(r"\.(py|pyi|js|jsx|ts|tsx|go|rs|java|rb|php|c|h|cpp|cs)$", _clean(raw)) \
                and near(d_i, _FILE_CUE, 4, 4) is not None and not any(x in low for x in ("import", "imports", "imported", "calls", "uses")):
            add("file", d_i, _path_ending(question, *spans[j]))
    for s_i in defs:
        for j in (s_i - 1, s_i - 3, s_i + 2, s_i + 3, s_i + 4):  # "function S", "the class named S", "S, a class", "S end up a class"
            if 0 <= j < len(toks) and low[j] in ("class", "function", "constant"):
                prev = low[j - 1] if j > 0 else ""
                named = j == s_i - 3 and low[s_i - 1] in ("named", "called") and low[s_i - 2] != "'"
                if j == s_i - 1 or named or (j > s_i and prev in ("a", "an")):
                    if prev in ("static", "abstract") or (j + 1 < len(low) and low[j + 1] in ("method", "methods")):
                        continue
                    add("kind", s_i, _KIND_WORDS[low[j]])
    return out


# A word in the place of a call's input, read from the words around it rather than from one phrasing: what is said
# of it after ("is P optional", "P is omitted", "P still accepted", "P keyword-only") or done to it before ("hand P",
# "leave out P", "a None P", "give f a P", "expect for P"). Words that also name conditions or things a function
# merely touches ("without a terminal", "where is memory consumed", "validate permissions") count only for a name
# written as code.
_ROLE_AFTER = frozenset("optional required mandatory omitted accepted keyword positional".split())
_ROLE_AFTER_CODE = _ROLE_AFTER | frozenset("forwarded consumed validated".split())
_ROLE_AFTER_SKIP = frozenset("is be being still really always ever left gets get".split())
_ROLE_BEFORE = frozenset("hand hands handing give gives giving pass passes passing supply supplies supplying provide provides "
                         "providing feed feeds feeding omit omits omitting".split())
_ROLE_BEFORE_CODE = _ROLE_BEFORE | frozenset("without validate validates validating".split())
_ROLE_BEFORE_SKIP = frozenset("a an the any some its my".split()) | _PARAM_ADJECTIVES
_FOR_CUES = frozenset("expect expects expected value values type types".split())
# what may follow a plain word: the end of its noun phrase ("a None suffix?", "leave out frame when"), so that in
# "hand a network connection" the modifier `network` is not read as the input
_PHRASE_END = frozenset("? , . ; ! when to in into inside within for before after if once is be being by as still set "
                        "accepted optional required mandatory omitted keyword positional used do does mean means".split())


def _input_role(toks: list[str], low: list[str], i: int, functions: dict[int, list[Entity]]) -> bool:
    """Whether token `i` stands where a call's input stands (see `_ROLE_AFTER`, `_ROLE_BEFORE`)."""
    nxt = low[i + 1] if i + 1 < len(low) else "?"
    code = _identifierish(toks[i], toks[i + 1] if i + 1 < len(toks) else "")
    if not code and (nxt not in _PHRASE_END or low[i].endswith("ing")):  # "without throwing": a gerund is no input
        return False
    after, before = (_ROLE_AFTER_CODE, _ROLE_BEFORE_CODE) if code else (_ROLE_AFTER, _ROLE_BEFORE)
    k = i + 1
    while k < len(low) and low[k] in _ROLE_AFTER_SKIP:
        k += 1
    if k < len(low) and (low[k] in after or (low[k] == "out" and k > i + 1 and low[k - 1] == "left")):
        return True
    # "what happens to P once f receives it": the function takes the word back as "it"
    n = i + 1
    if n + 3 < len(low) and low[n] in ("once", "when", "after", "before", "as", "if") and (n + 1) in functions \
            and re.match(r"^(receives?|gets?|takes?|accepts?|consumes?)$", low[n + 2]) and low[n + 3] == "it":
        return True
    k = i - 1
    while k >= 0 and low[k] in _ROLE_BEFORE_SKIP:
        k -= 1
    if k < 0:
        return False
    if low[k] in ("none", "null"):  # "a None suffix", not "None chosen as the default"
        return k > 0 and low[k - 1] in ("a", "an")
    if low[k] in before or (low[k] == "out" and k > 0 and low[k - 1] in ("leave", "leaving")):
        return True
    if low[k] == "without" and _calling(low[:k]):  # "call f without frame": the call's input, not "work without a terminal"
        return True
    if low[k] == "for" and any(w in _FOR_CUES for w in low[max(0, k - 4) : k]):
        return True
    return k in functions and k > 0 and low[k - 1] in ("give", "gives", "giving", "hand", "hands", "pass", "passes")


def _calling(words: list[str]) -> bool:
    return any(w in ("call", "calls", "calling", "called", "invoke", "invokes", "invoking", "invoked") for w in words)


def _used_in(name: str, entities: list[Entity]) -> bool:
    """`name` is a word of the definition's own code (a local, an attribute, a call), as `_` splits identifiers."""
    word = re.compile(r"(?<![A-Za-z0-9])" + re.escape(name) + r"(?![A-Za-z0-9])")
    return any(word.search(e.body or "") for e in entities)


def _keyword_of(question: str, spans: list[tuple[int, int]], i: int) -> int | None:
    """Whose keyword token `i` (followed by `=`) is: the index of the callee token right before the innermost
    parenthesis that holds it; -1 when it is no call's keyword (`x = f()` assigns, `a == b` compares, a bracket
    that follows no name); None for a bare `kw=` in prose ("can I pass timeout= to f?"), left to the cue rules."""
    eq = spans[i + 1][0]
    if question[eq + 1 : eq + 2] == "=":
        return -1
    depth = 0
    for k in range(spans[i][0] - 1, -1, -1):
        c = question[k]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth:
                depth -= 1
                continue
            if c != "(":
                return -1  # a dict or list literal's `=`: not a keyword
            end = len(question[:k].rstrip())
            callee = next((n for n, (_, b) in enumerate(spans) if b == end), None)
            named = callee is not None and re.fullmatch(r"[A-Za-z_$][\w$.]*", question[spans[callee][0] : end].strip("`"))
            return callee if named else -1
    rest = question[eq + 1 :]
    if question[eq - 1 : eq].isspace() or re.match(r"\s*[A-Za-z_][\w.]*\s*[(.]", rest):
        return -1  # `x = ...`, `resp=requests.post(...)`: an assignment
    return None


def check_question(question: str, resolve: Resolver, files: Iterable[str] = ()) -> list[PremiseFinding]:
    """The grammar's premises, then the looser cue-based ones, each checked against the index. `files` (the
    index's paths) lets a bare module or folder name (`_models`, `api`) be read as the file premise it is."""
    stated = extract(question, module_names(files, resolve))
    return check(stated + infer(question, resolve, stated), resolve)


def module_names(files: Iterable[str], resolve: Resolver) -> Callable[[str], bool]:
    """Whether a word names a file stem or a folder among `files` (a private `_models.py` also as `models`), read
    off the index rather than off a list of words. A word that names a definition is that definition: in Java
    "Does MemoryStore implement Store?" asks of the class, though `MemoryStore.java` holds it."""
    words: set[str] = set()
    todo = [files]

    def is_module(word: str) -> bool:
        if todo:  # built on the first bare word: most questions name none
            words.update(_path_words(todo.pop()))
        return word in words and not any(e.kind in DEFINITION_KINDS for e in resolve(word))

    return is_module


def _path_words(files: Iterable[str]) -> set[str]:
    """Each folder name and file stem of the paths, and each without its one leading `_` (`_models` as `models`)."""
    words: set[str] = set()
    for f in files:
        *folders, name = f.replace("\\", "/").split("/")
        for part in [*folders, name.rsplit(".", 1)[0] if "." in name else ""]:
            if part:
                words.add(part)
                if part.startswith("_") and not part.startswith("__"):
                    words.add(part[1:])
    return words


def entity_of(c: Candidate) -> Entity:
    """A retrieved passage seen as the entity it came from (the checker reads entity facts)."""
    return Entity.model_construct(
        id=c.id, kind=c.kind, name=short_name(c.entity), qualname=c.entity, parent=None, signature=c.signature,
        docstring=c.docstring, body=c.body, start_line=c.start_line, end_line=c.end_line, language=c.language,
        file=c.file, content_hash="", part=c.part, parts=c.parts, bases=c.bases, params=c.params, facts=c.facts,
    )


def candidate_of(e: Entity, **signals: float | int) -> Candidate:
    """A definition as a passage, the inverse of `entity_of` (as `retrieve.to_candidate` builds one): written here
    because retrieval imports the graph, which reads names by this module's `_clean`, and imports may not circle."""
    return Candidate(
        id=e.id, file=e.file, start_line=e.start_line, end_line=e.end_line, entity=e.qualname, kind=e.kind,
        language=e.language, signature=e.signature, docstring=e.docstring, body=e.body, bases=e.bases, params=e.params,
        facts=e.facts, part=e.part, parts=e.parts, **signals,  # type: ignore[arg-type]
    )


def resolver_from(entities: Iterable[Entity]) -> Resolver:
    """Resolve names among given entities only (the local judge without a catalog: tests, evaluation)."""
    index: dict[str, list[Entity]] = {}
    for e in entities:
        index.setdefault(e.name, []).append(e)
        if e.qualname != e.name:
            index.setdefault(e.qualname, []).append(e)
    return lambda name: list(index.get(name, []))


def catalog_resolver(lookup: Callable[[str], list[Entity]]) -> Resolver:
    """Memoise a catalog lookup (`Catalog.by_name`) for one question: the checker asks for a name many times."""
    cache: dict[str, list[Entity]] = {}

    def resolve(name: str) -> list[Entity]:
        if name not in cache:  # a build's copy (`dist/bundle.cjs`) after the source: a note cites what was written
            cache[name] = sorted(lookup(name), key=lambda e: is_build_output(e.file))
        return list(cache[name])

    return resolve


def subject_passages(findings: list[PremiseFinding], candidates: list[Candidate], fetch: Callable[[list[str]], dict[str, Entity]],
                     to_candidate: Callable[..., Candidate]) -> list[Candidate]:
    """Definitions a failed premise cites that retrieval did not bring: they join the pool, to be judged and cited."""
    have = {c.id for c in candidates}
    wanted = [f.entity_id for f in findings if not f.holds and f.entity_id not in have]
    found = fetch(list(dict.fromkeys(wanted)))
    start = len(candidates)
    return [to_candidate(found[eid], fused_rank=start + n + 1, fused_score=0.0) for n, eid in enumerate(dict.fromkeys(wanted)) if eid in found]


def past_the_end(question: str, files: list[str], line_count: Callable[[str], int | None]) -> list[PremiseFinding]:
    """A failed `file` premise for each line the question names in an indexed file (`models.py line 9999`,
    `src/x.py:500`, a traceback frame) past the end of every file the path may name: the question (or the
    version it was pasted from) is about code this index does not hold there."""
    out: list[PremiseFinding] = []
    for path, line in stated_lines(question):
        named = resolve_path(path, files)
        counts = [(f, n) for f in named if (n := line_count(f)) is not None]
        if not counts or len(counts) < len(named) or any(line <= n for _, n in counts):
            continue
        file, n = counts[0]
        premise = Premise(kind="file", subject=file, value=f"{path}:{line}", text=f"{path} line {line}")
        out.append(PremiseFinding(premise=premise, holds=False, contradicts=_SCORES["file"], entity_id="", entity=file,
                                  file=file, line=n, fact=f"`{file}` has {n} line{'s' if n != 1 else ''}; there is no line {line} "
                                       f"({file}:{n})"))
    return out


def _line_count(root, file: str, by_file: Callable[[str], list[Entity]]) -> int | None:
    """Lines of an indexed file as it is on disk now (what the user reads), else as its file row recorded them.
    Counted as the index numbers them: a lone CR ends a line, a UTF-16 file is decoded first."""
    from assay.stages.core.fs_names import on_disk
    from assay.stages.index.source_text import decoded_lines

    try:
        data = on_disk(root, file).read_bytes()
    except OSError:
        return next((e.end_line for e in by_file(file) if e.kind == "file"), None)
    return len(decoded_lines(data, ""))


def check_workspace(root, question: str, candidates: list[Candidate]) -> PremiseCheck:
    """The question's premises checked against the workspace catalog; cited definitions join the pool."""
    from assay.stages.index.store import Catalog

    catalog = Catalog(root)
    try:
        files = catalog.files()
        findings = check_question(question, catalog_resolver(catalog.by_name), files)
        findings += past_the_end(question, files, lambda f: _line_count(root, f, catalog.by_file))
        added = subject_passages(findings, candidates, catalog.get, candidate_of)
    finally:
        catalog.close()
    return PremiseCheck(findings=findings, added=added)

"""Code-aware ranking: each signal on a small pool built so that the order flips without it."""

from __future__ import annotations

from pathlib import PurePosixPath

from assay.stages.core.artifacts import Candidate
from assay.stages.index.tokens import tokenize
from assay.stages.query.rank import (Quotation, RankConfig, built_copies, explain, legacy_version_dirs, phrase_match, query_shape,
                               rank, word_roots)

_n = 0


def cand(file: str, entity: str, kind: str = "function", bm25: float | None = None, distance: float | None = None,
         body: str = "pass", language: str = "python", params: list[str] | None = None) -> Candidate:
    global _n
    _n += 1
    return Candidate(id=f"c{_n}", file=file, start_line=1, end_line=5, entity=entity, kind=kind, language=language,
                     body=body, bm25=bm25, distance=distance, params=params or [], fused_rank=_n, fused_score=0.01)


def order(query: str, pool: list[Candidate], **off: bool) -> list[str]:
    return [f"{c.file}:{c.entity}" for c in rank(query, pool, RankConfig(**off))]


def only(signal: str, **extra) -> dict:
    """A config with every other signal off, so a test sees its own signal alone."""
    names = ("query_shape", "definition", "path", "file_coherence", "penalties", "entity_facts", "doc_match", "phrase",
             "location", "centrality", "callees", "diversity")
    return {n: n == signal for n in names} | extra


def test_query_shape_tells_identifiers_from_sentences() -> None:
    assert query_shape("Depends").symbol and query_shape("z.object").symbol and query_shape("send_request()").symbol
    assert not query_shape("how does dependency injection work").symbol
    shape = query_shape("how .refine and `Schema.parse` use ZodType")
    assert {"refine", "Schema.parse", "ZodType"} <= set(shape.identifiers)


def test_an_acronyms_plural_is_an_english_word_not_an_identifier() -> None:
    """Found on expo-modules-core: "version 5 UUIDs" was read as an identifier `UUIDs` and split into `uui` + `ds`,
    so neither BM25 nor the path signal ever met `uuid`."""
    shape = query_shape("network types like URLs and UUIDs")
    assert shape.identifiers == () and {"url", "uuid"} <= shape.terms and not {"ur", "ls", "uui", "ds"} & shape.terms
    assert {"user", "id"} <= set(tokenize("userIDs")) and {"url", "fetch"} <= set(tokenize("URLsToFetch"))
    assert {"http", "server"} <= set(tokenize("HTTPServer"))  # an acronym before a word is still split off
    pool = [cand("misc.py", "helper", bm25=10.0, distance=0.3), cand("url.py", "parse", bm25=9.0, distance=0.35)]
    assert order("parsing URLs", pool, **only("path"))[0] == "url.py:parse"
    assert order("parsing URLs", pool, **only(""))[0] == "misc.py:helper"


def test_symbol_query_leans_on_lexical_evidence() -> None:
    pool = [cand("a.py", "lexical_match", bm25=10.0, distance=0.75), cand("b.py", "dense_match", bm25=6.0, distance=0.3)]
    assert order("Depends", pool, **only("query_shape"))[0] == "a.py:lexical_match"
    assert order("Depends", pool, **only(""))[0] == "b.py:dense_match"


def test_definition_of_a_named_identifier_comes_first() -> None:
    pool = [cand("user.py", "uses_widget", bm25=10.0, distance=0.4), cand("widget.py", "Widget", kind="class", bm25=7.0, distance=0.45)]
    assert order("how does Widget render", pool, **only("definition"))[0] == "widget.py:Widget"
    assert order("how does Widget render", pool, **only(""))[0] == "user.py:uses_widget"


def test_a_name_ending_in_its_sigil_finds_that_definition_not_its_twin() -> None:
    """Found on rack: `info?`, `load!` and `key_space_limit=` are names of their own, and the tokenizer reads each
    as its twin without the sigil (`info`, `load_for_read!`, `key_space_limit`)."""
    for query, twin in (("info?", "info"), ("load!", "load"), ("key_space_limit=", "key_space_limit"), ("foldl'", "foldl")):
        pool = [cand("logger.rb", twin, kind="method", bm25=10.0, distance=0.3, language="ruby"),
                cand("logger.rb", query, kind="method", bm25=10.0, distance=0.35, language="ruby")]
        assert query_shape(query).symbol
        assert order(query, pool, **only("definition"))[0] == f"logger.rb:{query}"
        assert order(query, pool, **only(""))[0] == f"logger.rb:{twin}"


def test_a_constant_written_in_screaming_case_names_no_method() -> None:
    """Found on rack (`bench_questions`): "how are SCRIPT_NAME and PATH_INFO rewritten" names two env keys, and
    rack's `script_name` and `path_info` methods took the definition boost. `script_name` written so still names it."""
    pool = [cand("lib/rack/request.rb", "Rack.Request.Helpers.script_name", bm25=10.0, distance=0.3, language="ruby"),
            cand("lib/rack/urlmap.rb", "Rack.URLMap.call", kind="method", bm25=9.0, distance=0.35, language="ruby")]
    query = "how are SCRIPT_NAME and PATH_INFO rewritten for the mounted app"
    assert order(query, pool, **only("definition"))[0] == "lib/rack/request.rb:Rack.Request.Helpers.script_name"  # no boost: BM25 leads
    assert "defines" not in explain(rank(query, pool, RankConfig(**only("definition")))[0])
    assert "defines" in explain(rank("how does script_name change", pool, RankConfig(**only("definition")))[0])
    constant = cand("lib/rack.rb", "Rack.SCRIPT_NAME", kind="constant", bm25=9.0, distance=0.35, language="ruby")
    assert order(query, [*pool, constant], **only("definition"))[0] == "lib/rack.rb:Rack.SCRIPT_NAME"


def test_a_name_in_its_own_letter_case_wants_that_definition() -> None:
    """Found on gin: `Engine` (the struct) and `engine` (a function in another package) are two names in Go, and
    the function, shorter and richer in the word, came first for `Engine`. A query in neither case lifts both."""
    pool = [cand("ginS/gins.go", "engine", bm25=10.0, distance=0.3, language="go"),
            cand("gin.go", "Engine", kind="struct", bm25=9.0, distance=0.35, language="go")]
    assert order("Engine", pool, **only("definition"))[0] == "gin.go:Engine"
    assert order("engine", pool, **only("definition"))[0] == "ginS/gins.go:engine"
    assert order("Engine", pool, **only(""))[0] == "ginS/gins.go:engine"
    ranked = rank("ENGINE", pool, RankConfig(**only("definition")))
    assert [c.rank_signals.get("defines") for c in ranked] == [1.0, 1.0]


def test_a_bare_name_wants_its_definition_over_a_file_named_like_it() -> None:
    """Found on pythonnet and rack: for `Borrow`, the constructor in `BorrowedReference.cs` (its file and name
    stem-match the query) outranked `NewReferenceExtensions.Borrow`; for `Body`, a method of `body_proxy.rb`
    outranked `Rack.Chunked.Body`. A bare name's definition now weighs more than those two signals together."""
    pool = [cand("BorrowedReference.cs", "BorrowedReference.BorrowedReference", kind="method", bm25=10.0, distance=0.3,
                 language="csharp"),
            cand("NewReference.cs", "NewReferenceExtensions.Borrow", kind="method", bm25=8.0, distance=0.4, language="csharp")]
    signals = only("definition", path=True, entity_facts=True)
    assert order("Borrow", pool, **signals)[0] == "NewReference.cs:NewReferenceExtensions.Borrow"
    assert order("Borrow", pool, **signals, symbol_definition_boost=0.6)[0] == "BorrowedReference.cs:BorrowedReference.BorrowedReference"


def test_an_owner_dot_name_query_wants_that_owners_member() -> None:
    """Found on pythonnet, rack and JPype: for `DebugUtil.Debug` the class `DebugUtil` (a name the query holds)
    came first, for `Lint.each` another class's `each`. A name whose owner no definition holds (`z.object`, a module
    alias) still lifts every definition of its last part, and `Foo.Foo` asks for the constructor."""
    pool = [cand("DebugUtil.cs", "Python.Runtime.DebugUtil", kind="class", bm25=10.0, distance=0.3, language="csharp"),
            cand("Log.cs", "Python.Runtime.Log.Debug", kind="method", bm25=9.0, distance=0.3, language="csharp"),
            cand("DebugUtil.cs", "Python.Runtime.DebugUtil.Debug", kind="method", bm25=8.0, distance=0.35, language="csharp")]
    assert order("DebugUtil.Debug", pool, **only("definition"))[0] == "DebugUtil.cs:Python.Runtime.DebugUtil.Debug"
    assert order("DebugUtil.Debug", pool, **only(""))[0] == "DebugUtil.cs:Python.Runtime.DebugUtil"
    pool = [cand("util.ts", "mergeShapes", bm25=10.0, distance=0.3, language="typescript"),
            cand("schemas.ts", "object", bm25=6.0, distance=0.4, language="typescript")]
    assert order("z.object", pool, **only("definition"))[0] == "schemas.ts:object"
    pool = [cand("Harness.java", "Harness.DeletedResource", kind="class", bm25=10.0, distance=0.3, language="java"),
            cand("Harness.java", "Harness.DeletedResource.DeletedResource", kind="method", bm25=8.0, distance=0.35,
                 language="java")]
    assert order("DeletedResource.DeletedResource", pool, **only("definition"))[0] == "Harness.java:Harness.DeletedResource.DeletedResource"
    assert order("DeletedResource", pool, **only("definition"))[0] == "Harness.java:Harness.DeletedResource"


def test_a_bare_word_that_is_a_files_stem_asks_for_that_file_as_much_as_for_a_definition() -> None:
    """Found on rack, gin and regex: with a bare name's definition weighing 1.2, `params` found `Rack.Request.params`
    before `params.rb`, `query` found `Context.Query` before `query.go`. A module is defined by its file."""
    pool = [cand("request.rb", "Rack.Request.params", kind="method", bm25=10.0, distance=0.3, language="ruby"),
            cand("params.rb", "params.rb", kind="file", bm25=8.0, distance=0.35, language="ruby")]
    assert order("params", pool, **only("definition", path=True))[0] == "params.rb:params.rb"
    assert order("Request.params", pool, **only("definition", path=True))[0] == "request.rb:Rack.Request.params"


def test_a_bare_class_name_wants_the_class_not_its_constructor() -> None:
    """Found on JPype's C++: `JPBuffer::JPBuffer` in the .cpp shares the name of the class in the header, and both
    were its definition. A sentence about the class still lifts the constructor, which C# docs describe."""
    pool = [cand("buffer.cpp", "JPBuffer::JPBuffer", bm25=10.0, distance=0.3, language="cpp"),
            cand("buffer.h", "JPBuffer", kind="class", bm25=9.0, distance=0.35, language="cpp")]
    assert order("JPBuffer", pool, **only("definition"))[0] == "buffer.h:JPBuffer"
    assert order("JPBuffer", pool, **only(""))[0] == "buffer.cpp:JPBuffer::JPBuffer"
    assert order("Creates a JPBuffer for a view", pool, **only("definition"))[0] == "buffer.cpp:JPBuffer::JPBuffer"


def test_a_haskell_instance_defines_neither_its_class_nor_its_type() -> None:
    """Found on Hugs: `instance Show IOErrorType` is named "Show IOErrorType", whose last word is the type's name,
    and it outranked `data IOErrorType` for the query `IOErrorType`."""
    pool = [cand("Prelude.hs", "Show IOErrorType", kind="class", bm25=10.0, distance=0.3, language="haskell"),
            cand("Prelude.hs", "IOErrorType", kind="type", bm25=9.0, distance=0.35, language="haskell")]
    assert order("IOErrorType", pool, **only("definition"))[0] == "Prelude.hs:IOErrorType"
    pool[1] = cand("Prelude.hs", "IOErrorType", kind="type", bm25=9.0, distance=0.35, language="haskell")
    assert order("IOErrorType", [pool[0], pool[1]], **only(""))[0] == "Prelude.hs:Show IOErrorType"


def test_a_sentence_that_is_a_passages_doc_summary_finds_that_passage() -> None:
    """"Like find_nfa, but fills in captures." is the doc of `captures_nfa`; it names `find_nfa`, whose definition
    the definition signal lifts. A phrase that a long summary happens to contain is no such match."""
    def pool() -> list[Candidate]:
        described = cand("exec.rs", "ExecNoSync.captures_nfa", bm25=10.0, distance=0.40)
        described.docstring = "Like find_nfa, but fills in captures.\n\nThe slots are written in place."
        named = cand("exec.rs", "ExecNoSync.find_nfa", bm25=7.0, distance=0.38)
        named.docstring = "Finds the leftmost-first match using only the NFA simulation."
        return [named, described]

    query = "Like find_nfa, but fills in captures."
    assert order(query, pool(), **only("definition", doc_match=True))[0] == "exec.rs:ExecNoSync.captures_nfa"
    assert order(query, pool(), **only("definition"))[0] == "exec.rs:ExecNoSync.find_nfa"
    long_doc = cand("app.py", "FastAPI.openapi", bm25=5.0, distance=0.5)
    long_doc.docstring = "Generate the OpenAPI schema of the application. This is called by FastAPI internally."
    other = cand("openapi/utils.py", "get_openapi", bm25=6.0, distance=0.45)
    assert order("OpenAPI schema generation", [long_doc, other], **only("doc_match"))[0] == "openapi/utils.py:get_openapi"
    assert "doc" not in rank("OpenAPI schema generation", [long_doc], RankConfig(**only("doc_match")))[0].rank_signals
    # a doc whose summary sentence runs on into its parameters with no blank line: the sentence is the summary
    splitlines = cand("pl/stringx.lua", "stringx.splitlines", bm25=5.1, distance=0.45, language="lua")
    splitlines.docstring = ("Split a string into a list of lines.\n`\"\\n\"` and `\"\\r\\n\"` are considered line ends.\n"
                            "They are not included in the lines unless `keepends` is passed.\n@string s the string.\n"
                            "@bool[opt] keep_ends include line ends.\n@return List of lines")
    split = cand("pl/List.lua", "List.split", bm25=5.0, distance=0.39, language="lua")
    split.docstring = "Split a string using a delimiter."
    query = "Split a string into a list of lines."
    assert order(query, [split, splitlines], **only("doc_match"))[0] == "pl/stringx.lua:stringx.splitlines"
    assert order(query, [split, splitlines], **only(""))[0] == "pl/List.lua:List.split"


def quoted(query: str, body: str) -> float:
    quotation = Quotation.of(query_shape(query), RankConfig())
    return phrase_match(quotation, body)[0] if quotation else 0.0


def test_a_pasted_message_finds_the_code_that_says_it() -> None:
    """The user's message carries the values (`-3`, `/tmp/x`) and the code its placeholders (`{depth}`); the words
    the two share are in one order. BM25 and the model see the words, not their order."""
    raiser = cand("pkg/pprint.py", "PrettyPrinter.__init__", bm25=6.0, distance=0.5,
                  body='def __init__(self, depth):\n    if depth <= 0:\n        raise ValueError(f"depth must be > 0, got {depth}")')
    lookalike = cand("pkg/depth.py", "check_depth", bm25=9.0, distance=0.35,
                     body="def check_depth(depth, got):\n    # got a depth? it must be positive\n    return depth > 0")
    query = "ValueError: depth must be > 0, got -3"
    assert order(query, [lookalike, raiser], **only("phrase"))[0] == "pkg/pprint.py:PrettyPrinter.__init__"
    assert order(query, [lookalike, raiser], **only(""))[0] == "pkg/depth.py:check_depth"
    assert "phrase" in explain(rank(query, [raiser], RankConfig(**only("phrase")))[0])
    # a Go format string split by the values the user saw
    go = 't.Errorf("handle mismatch for route \'%s\': Expected non-nil handle", request.path)'
    assert quoted("handle mismatch for route '/user/42': Expected non-nil handle", go) > 0.7
    # values longer than the message (paths): all of one literal's own words, in order, quote it
    paths = "Wrong result for '/home/me/app/routes/users.py': got /tmp/out/a.txt, 3; want /var/lib/app/b.txt, 4"
    assert quoted(paths, 't.Errorf("Wrong result for \'%s\': got %s, %d; want %s, %d", path, out, n, want, m)') == 1.0
    assert quoted(paths, "// Wrong result for a path: got or want") == 0.0  # a comment is no message
    # short literals side by side are no message: header names a question repeats
    headers = 'purged = ("Transfer-Encoding", "Content-Type")'
    assert quoted("why are Transfer-Encoding and Content-Type headers removed on redirect", headers) == 0.0
    # the words must keep their order, and a run shorter than four words is a common phrase
    assert quoted("nil non handle Expected route for mismatch", go) == 0.0
    assert quoted("for field names", 'raise KeyError("for field names")') == 0.0
    # a question that shares just over half its words with a literal (a C extension's docstring) asks; it quotes nothing
    docstring = 'PyDoc_STRVAR(compress__doc, "Compress with a dictionary of earlier blocks.");'
    assert quoted("compressing with a dictionary of previous data", docstring) == 0.0
    assert quoted("compress with a dictionary of earlier data", docstring) > 0.6


def test_a_message_written_over_several_lines_is_quoted_whole() -> None:
    """Python, C and C++ join literals side by side, and most languages join them with `+`: a long message is
    written over lines whose parts are each too short to be a quotation, and pasted whole."""
    message = "could not parse the config section named by path /etc/app.toml"
    python = 'raise ConfigError(\n    "could not parse "\n    f"the config section "\n    "named by {path}"\n)'
    java = 'throw new ConfigException("could not parse "\n    + "the config section "\n    + "named by " + path);'
    for body in (python, java):
        assert quoted(message, body) > 0.6, body
        assert quoted(message, body.replace("\n", "\n;\n")) == 0.0, body  # a statement between: three short literals
    listed = '["could not parse",\n "the config section",\n "named by path"]'  # a list's items are separate strings
    assert quoted(message, listed) == 0.0


def test_words_that_many_passages_quote_alike_are_boilerplate() -> None:
    """A pasted traceback holds "Traceback (most recent call last):", which many tests write; its message line is
    what one passage raises."""
    traceback = ('Traceback (most recent call last):\n  File "app.py", line 3, in main\n    render(data)\n'
                 'ValueError: depth must be > 0')
    tests = [cand(f"tests/test_{i}.py", f"test_{i}", bm25=9.0, distance=0.4,
                  body=f'def test_{i}(p):\n    p.stdout.fnmatch_lines(["Traceback (most recent call last):"])') for i in range(4)]
    raiser = cand("pkg/render.py", "render", bm25=5.0, distance=0.5, body='def render(d):\n    raise ValueError("depth must be > 0")')
    ranked = rank(traceback, [*tests, raiser], RankConfig(**only("phrase")))
    assert [c.entity for c in ranked if "phrase" in c.rank_signals] == ["render"]
    ranked = rank(traceback, [*tests, raiser], RankConfig(**only("phrase", phrase_boilerplate=5)))
    assert len([c for c in ranked if "phrase" in c.rank_signals]) == 5


def test_only_string_literals_are_quoted() -> None:
    """A parameter's doc line shares four of a question's five words, in order, with other words between; and a
    doc sentence copied word for word is the doc signal's, which knows whose doc it is."""
    doc = "by_alias: Whether to use alias names for field names."
    assert quoted("alias handling for field names", doc) == 0.0
    assert quoted("alias handling for field names", f'msg = "{doc}"') > 0.0
    assert quoted("whether to use alias names for field names", f"# {doc}") == 0.0


def test_a_tests_failure_message_asks_for_that_test_unless_product_code_says_it() -> None:
    message = "obj is not ProtoMessage"

    def pool(product_says_it: bool) -> list[Candidate]:
        failing = cand("binding/binding_test.go", "testProtoBodyBindingFail", bm25=7.0, distance=0.5, language="go",
                       body=f'func testProtoBodyBindingFail(t *testing.T) {{\n\tt.Errorf("{message}")\n}}')
        product = cand("binding/protobuf.go", "protobufBinding.BindBody", bm25=8.0, distance=0.4, language="go",
                       body=f'return errors.New("{message}")' if product_says_it else "return proto.Unmarshal(body, msg)")
        return [product, failing]

    assert order(message, pool(False), **only("phrase", penalties=True))[0] == "binding/binding_test.go:testProtoBodyBindingFail"
    assert order(message, pool(False), **only("penalties"))[0] == "binding/protobuf.go:protobufBinding.BindBody"
    assert order(message, pool(True), **only("phrase", penalties=True))[0] == "binding/protobuf.go:protobufBinding.BindBody"


def test_a_tests_whole_doc_summary_asks_for_that_test_unless_product_code_has_it() -> None:
    """pytest documents its regression tests ("Fix infinite recursion when writing pyc files: ..."); a query that is
    all of one's doc summary asks for that test, which the test penalty had sunk below the code it exercises."""
    doc = "Writing pyc files no longer recurses when an import hook triggers another write."

    def pool(product_doc: str) -> list[Candidate]:
        test = cand("testing/test_rewrite.py", "test_rewrite_recursion", bm25=9.0, distance=0.35).model_copy(
            update={"docstring": doc})
        product = cand("src/rewrite.py", "write_pyc", bm25=8.0, distance=0.4).model_copy(update={"docstring": product_doc})
        return [product, test]

    assert order(doc, pool("Write the pyc file."), **only("doc_match", penalties=True))[0] == "testing/test_rewrite.py:test_rewrite_recursion"
    assert order(doc, pool("Write the pyc file."), **only("penalties"))[0] == "src/rewrite.py:write_pyc"
    assert order(doc, pool(doc), **only("doc_match", penalties=True))[0] == "src/rewrite.py:write_pyc"


def test_file_and_folder_names_that_carry_the_query_lift_a_passage() -> None:
    pool = [cand("app/routing.py", "add_route", bm25=10.0, distance=0.4),
            cand("app/websockets.py", "accept", bm25=9.0, distance=0.42)]
    assert order("websocket endpoint", pool, **only("path"))[0] == "app/websockets.py:accept"
    assert order("websocket endpoint", pool, **only(""))[0] == "app/routing.py:add_route"


def named_against(rival: str, named: str) -> list:
    """A pool where `rival` (its stem as the entity) leads on both lists and only the path can lift `named`'s `run`."""
    return [cand(rival, PurePosixPath(rival).stem, bm25=10.0, distance=0.4), cand(named, "run", bm25=9.0, distance=0.42)]


def test_a_file_stem_that_runs_two_query_words_together_or_is_private_carries_them() -> None:
    """`pikevm.rs` is named by "Pike VM" as much as `pike_vm.rs` would be; `_classpath.py` names the class path."""
    for query, named in (("Pike VM simulation", "src/pikevm.rs"), ("building the class path", "jpype/_classpath.py")):
        pool = named_against("src/exec.rs", named)
        assert order(query, pool, **only("path"))[0] == f"{named}:run", query
        assert order(query, pool, **only(""))[0] == "src/exec.rs:exec", query


def test_a_file_named_for_the_doer_is_named_by_the_doing() -> None:
    """The stemmer keeps `parser`, `handler` and `logger` whole: "parsing" must still name `parser.rb`."""
    for query, named in (("parsing multipart form uploads", "lib/multipart/parser.rb"),
                         ("request validation and error handling", "app/exception_handlers.py"),
                         ("structured logging of requests", "pkg/logger.go"),
                         ("formatting numbers", "src/formatter.ts")):
        assert order(query, named_against("lib/utils.rb", named), **only("path"))[0] == f"{named}:run", query
    assert word_roots("parser") >= {"pars"} and word_roots("scanner") >= {"scan"} and word_roots("parse") == {"parse"}


def test_a_file_named_by_an_abbreviation_is_named_by_the_word() -> None:
    """`fmt.zig` formats, `config.py` holds the configuration, `big/int.zig` is integer arithmetic."""
    for query, named in (("formatting values with a format string", "std/fmt.zig"),
                         ("model configuration and settings", "pydantic/config.py"),
                         ("arbitrary precision integer arithmetic", "std/math/big/int.zig"),
                         ("the request context", "pkg/ctx.go")):
        assert order(query, named_against("std/json.zig", named), **only("path"))[0] == f"{named}:run", query
    assert order("the source tree", named_against("src/a.py", "src/b.py"), **only("path"))[0] == "src/a.py:a"


def test_several_good_passages_in_one_file_lift_the_file() -> None:
    pool = [cand("b.py", "lone", bm25=10.0, distance=0.4),
            *[cand("a.py", f"part{i}", bm25=9.0, distance=0.42) for i in range(3)]]
    assert order("cache eviction policy", pool, **only("file_coherence"))[0].startswith("a.py")
    assert order("cache eviction policy", pool, **only(""))[0] == "b.py:lone"


def test_tests_docs_examples_stubs_legacy_and_shims_sink_unless_asked_for() -> None:
    cases = [
        cand("tests/test_cache.py", "test_evict", bm25=10.0, distance=0.4),
        cand("docs/cache.md", "Cache", kind="section", language="markdown", bm25=10.0, distance=0.4),
        cand("examples/cache_demo.py", "main", bm25=10.0, distance=0.4),
        cand("doc/api/cache.py", "evict", bm25=10.0, distance=0.4),  # a docs tree's code shows the product
        cand("pkg/cache.pyi", "evict", bm25=10.0, distance=0.4),
        cand("pkg/deprecated/cache.py", "evict", bm25=10.0, distance=0.4),
        cand("pkg/__init__.py", "pkg/__init__.py (top-level 1-3)", kind="window", bm25=10.0, distance=0.4,
             body="from .cache import evict\nfrom .store import Store\n__all__ = ['evict', 'Store']"),
        cand("src/lib.rs", "src/lib.rs (top-level 4-6)", kind="window", bm25=10.0, distance=0.4, language="rust",
             body="pub use cache::evict;\npub(crate) use store::{Store, Entry};\n#[cfg(feature = \"lru\")]\npub mod lru;"),
    ]
    for noise in cases:
        pool = [noise, cand("pkg/cache.py", "evict_entries", bm25=8.0, distance=0.45)]
        assert order("cache eviction", pool, **only("penalties"))[0] == "pkg/cache.py:evict_entries", noise.file
        assert order("cache eviction", pool, **only(""))[0] != "pkg/cache.py:evict_entries", noise.file
    guards = cand("lib/lz4.h", "lib/lz4.h (top-level 116-125)", kind="window", bm25=10.0, distance=0.4, language="c",
                  body='#if !defined(LZ4_memset)\n#  error "LZ4_FREESTANDING requires macro LZ4_memset"\n#endif\n#define LZ4_HEAPMODE 0')
    assert "re-export" not in rank("cache eviction", [guards], RankConfig(**only("penalties")))[0].rank_signals  # no shim
    includes = guards.model_copy(update={"body": '#include "lz4.h"\n#include "lz4hc.h"\n#include "lz4frame.h"'})
    assert "re-export" in rank("cache eviction", [includes], RankConfig(**only("penalties")))[0].rank_signals  # an umbrella header
    guide = cand("docs/cache.md", "Eviction", kind="section", language="markdown", bm25=10.0, distance=0.4)
    readme = guide.model_copy(update={"file": "README.md", "id": "readme"})
    assert rank("cache eviction", [guide], RankConfig(**only("penalties")))[0].rank_score < \
        rank("cache eviction", [readme], RankConfig(**only("penalties")))[0].rank_score  # a docs tree's prose sinks further
    assert "docs" not in rank("cache eviction docs", [guide], RankConfig(**only("penalties")))[0].rank_signals
    note = cand(".assay/notes", "note: cache decisions", kind="note", bm25=10.0, distance=0.4)  # a hidden folder, yet kept
    assert order("cache eviction", [cand("pkg/cache.py", "evict_entries", bm25=8.0, distance=0.45), note], **only("penalties"))[0].startswith(".assay")
    named = [cand("tests/test_cache.py", "TestCache", kind="class", bm25=10.0, distance=0.4),
             cand("pkg/cache.py", "evict_entries", bm25=8.0, distance=0.45)]
    assert order("what does the TestCache class check", named, **only("penalties"))[0] == "tests/test_cache.py:TestCache"
    asked = [cases[0], cand("pkg/cache.py", "evict_entries", bm25=8.0, distance=0.45)]
    assert order("tests for cache eviction", asked, **only("penalties"))[0] == "tests/test_cache.py:test_evict"


def test_a_test_word_that_asks_for_no_tests_lifts_half_the_test_penalty() -> None:
    """Found on click: "How does the test runner isolate stdin ... while a command is invoked in a test?" asks for
    `CliRunner.isolation`, the testing tool click ships, and the word "test" had lifted every test file over it.
    Of 48 dev and held-out questions with a test word, 10 wanted a test, and 9 of those named it."""
    pool = [cand("tests/test_runner.py", "test_isolation", bm25=10.0, distance=0.4),
            cand("src/pkg/testing.py", "Runner.isolation", bm25=8.0, distance=0.45)]
    for tool in ("how does the test runner isolate output while a command is invoked in a test",
                 "pytest fixtures that isolate output"):
        assert order(tool, pool, **only("penalties"))[0] == "src/pkg/testing.py:Runner.isolation", tool
    for asking in ("which tests cover the runner's isolation of output", "how is output isolation tested",
                   "unit tests of the runner's output isolation", "test cases for output isolation"):
        assert query_shape(asking).asks_for_tests, asking
        assert order(asking, pool, **only("penalties"))[0] == "tests/test_runner.py:test_isolation", asking
    assert rank("output isolation", pool[:1], RankConfig(**only("penalties")))[0].rank_score < \
        rank("pytest output isolation", pool[:1], RankConfig(**only("penalties")))[0].rank_score  # still a lift


def test_older_version_folders_are_legacy_copies() -> None:
    assert legacy_version_dirs(["src/v3/types.ts", "src/v4/core/types.ts", "src/index.ts"]) == {"src/v3"}
    shadow = ["pkg/v1/main.py", "pkg/v1/fields.py", "pkg/v1/types.py", "pkg/main.py", "pkg/fields.py", "pkg/types.py"]
    assert legacy_version_dirs(shadow) == {"pkg/v1"}
    assert legacy_version_dirs(["api/v1/users.py", "api/v1/orders.py", "api/v1/auth.py", "api/app.py"]) == frozenset()
    pool = [cand("src/v3/types.ts", "parse", bm25=10.0, distance=0.4, language="typescript"),
            cand("src/v4/core/schemas.ts", "parse", bm25=8.0, distance=0.45, language="typescript")]
    paths = ["src/v3/types.ts", "src/v4/core/schemas.ts"]
    assert [c.file for c in rank("schema parse", pool, RankConfig(**only("penalties")), paths=paths)][0] == "src/v4/core/schemas.ts"


def test_qualified_name_and_parameters_carry_query_words() -> None:
    pool = [cand("a.py", "helper", bm25=10.0, distance=0.4),
            cand("b.py", "Session.merge_settings", kind="method", bm25=9.0, distance=0.42, params=["request", "proxies"])]
    assert order("merge session proxies", pool, **only("entity_facts"))[0] == "b.py:Session.merge_settings"
    assert order("merge session proxies", pool, **only(""))[0] == "a.py:helper"


def test_diversity_lets_another_file_in_before_a_files_fourth_passage() -> None:
    pool = [*[cand("a.py", f"f{i}", bm25=10.0 - 0.1 * i, distance=0.4) for i in range(3)], cand("b.py", "g", bm25=9.0, distance=0.42)]
    assert order("retry backoff", pool, **only("diversity"))[1] == "b.py:g"
    assert order("retry backoff", pool, **only(""))[3] == "b.py:g"


def test_a_files_strong_entities_stay_reachable_below_the_diversity_floor() -> None:
    """Six entities of one file (the question is about it) and a weak one elsewhere: unbounded decay puts the file's
    fourth to sixth (x1/8 .. x1/32) below the stranger; the floor (a quarter at least) keeps all six above it."""
    pool = [*[cand("a.py", f"f{i}", bm25=10.0 - 0.1 * i, distance=0.4) for i in range(6)], cand("b.py", "g", bm25=2.0, distance=0.8)]
    assert order("retry backoff", pool, **only("diversity"))[-1] == "b.py:g"
    assert order("retry backoff", pool, **only("diversity", diversity_floor=0.0)).index("b.py:g") == 3


def test_a_long_question_keeps_more_of_a_files_further_entities_than_a_phrase() -> None:
    """Found on held-out questions (`bench_questions`): regex's `Bounded.has_visited` (BM25 second, dense close)
    fell to 13th behind two other `backtrack.rs` methods and a stranger from another file. A long question asks about
    one mechanism, often several entities of one file; a short phrase is served best by a list spread over files."""
    from assay.stages.query.rank import diversity_floor

    pool = [*[cand("backtrack.rs", f"Bounded.m{i}", bm25=10.0 - 0.1 * i, distance=0.4) for i in range(3)],
            cand("exec.rs", "ExecBuilder.bounded", bm25=6.0, distance=0.5)]
    question = ("How does the bounded backtracker remember which pairs of instruction and input position it has already "
                "explored during one search of the haystack?")
    phrase = "bounded backtracker visited positions"
    cfg = RankConfig(**only("diversity"))
    assert diversity_floor(query_shape(phrase), cfg) == 0.25 and diversity_floor(query_shape(question), cfg) == 0.75
    assert 0.25 < diversity_floor(query_shape("how is the bounded backtracker told which positions of the input it has seen before now"), cfg) < 0.75

    def before(query: str, config: RankConfig) -> bool:  # the file's third method before the stranger
        names = [c.entity for c in rank(query, pool, config)]
        return names.index("Bounded.m2") < names.index("ExecBuilder.bounded")

    assert before(question, cfg) and not before(phrase, cfg)
    assert not before(question, RankConfig(**only("diversity", long_question_floor=0.25)))


def test_parts_of_one_entity_count_once_for_diversity() -> None:
    pool = [cand("a.py", "big", bm25=10.0, distance=0.4), cand("a.py", "big", bm25=9.9, distance=0.4),
            cand("b.py", "g", bm25=9.0, distance=0.42)]
    assert [c.entity for c in rank("retry", pool, RankConfig(**only("diversity")))][:2] == ["big", "big"]


def test_every_candidate_carries_its_score_and_signals() -> None:
    ranked = rank("Widget", [cand("widget.py", "Widget", kind="class", bm25=3.0, distance=0.5), cand("x.py", "y", distance=0.6)])
    assert [c.fused_rank for c in ranked] == [1, 2]
    top = ranked[0]
    assert top.rank_score is not None and top.rank_signals["defines"] == 1.0 and top.rank_signals["path"] > 0
    assert explain(top).startswith("defines; path 1")
    same = rank("retry", [cand("a.py", "f", bm25=10.0, distance=0.4), cand("a.py", "g", bm25=9.9, distance=0.4)])
    assert same[1].rank_signals["same_file"] == 0.5 and same[1].rank_score < same[0].rank_score
    assert explain(same[1]).endswith("same file x0.5")
    assert rank("anything", []) == []


def test_a_limit_returns_the_head_of_the_full_order() -> None:
    """The diversity pass stops once `limit` rows are placed; those rows, scores and signals are the full order's."""
    import random

    rnd = random.Random(7)
    pool = [cand(f"{rnd.choice('abcde')}.py", f"f{i}", bm25=rnd.uniform(0, 10), distance=rnd.uniform(0.3, 0.9)) for i in range(60)]
    full = rank("retry backoff session", pool)
    for limit in (1, 5, 30):
        head = rank("retry backoff session", pool, limit=limit)
        assert [(c.id, c.rank_score, c.rank_signals) for c in head] == [(c.id, c.rank_score, c.rank_signals) for c in full[:limit]]
    assert any(c.rank_signals.get("same_file") for c in full[:30])  # the head is shaped by the diversity pass


def test_a_file_the_code_is_built_on_lifts_for_a_sentence_not_for_a_name() -> None:
    """Centrality (share of files importing it) breaks a near tie toward the module the rest imports."""
    pool = [cand("pkg/helpers.py", "render_page", bm25=10.0, distance=0.40), cand("pkg/core.py", "render", bm25=9.6, distance=0.41)]
    central = {"pkg/core.py": 1.0, "pkg/helpers.py": 0.1}
    sentence = "how are pages rendered for the response"
    assert [c.file for c in rank(sentence, pool, RankConfig(**only("centrality")), centrality=central)][0] == "pkg/core.py"
    assert [c.file for c in rank(sentence, pool, RankConfig(**only("")), centrality=central)][0] == "pkg/helpers.py"
    assert [c.file for c in rank(sentence, pool, RankConfig(**only("centrality")))][0] == "pkg/helpers.py"  # no graph: no signal
    assert [c.file for c in rank("render_page", pool, RankConfig(**only("centrality")), centrality=central)][0] == "pkg/helpers.py"
    top = rank(sentence, pool, RankConfig(), centrality=central)
    assert top[0].rank_signals.get("central") == 1.0 and "central 1" in explain(top[0])


def test_a_hub_lifts_its_weak_passage_for_a_question_not_for_a_phrase_naming_a_feature() -> None:
    """"how are enums validated" asks how the parts fit, and the hub every file imports is part of the answer;
    "enum schema types" names a feature, and a hub's passage that barely matches it stays below the specific file
    (zod's `util.ts` had led "enum schema types for literal value sets", semble dev 0.870 -> 0.878)."""
    pool = [cand("src/enums.ts", "EnumSchema", bm25=10.0, distance=0.40), cand("src/util.ts", "joinValues", bm25=5.0, distance=0.50),
            cand("src/other.ts", "noise", bm25=1.0, distance=0.90)]
    central = {"src/util.ts": 1.0}
    for query, first in (("how are enum schema types validated", "src/util.ts"), ("enum schema types validation", "src/enums.ts")):
        assert query_shape(query).question == (first == "src/util.ts")
        assert [c.file for c in rank(query, pool, RankConfig(**only("centrality")), centrality=central)][0] == first
    assert query_shape("Does the router match trailing slashes?").question and not query_shape("router matching").question


def test_what_a_named_function_delegates_to_lifts_for_a_delegation_question() -> None:
    """The callees the graph resolves for a named function outrank a near tie that merely matches the words."""
    pool = [cand("pkg/api.py", "submit_job", bm25=10.0, distance=0.40), cand("pkg/worker.py", "run_job", bm25=9.5, distance=0.42)]
    called = {("pkg/worker.py", "run_job")}
    question = "where does `submit_job` delegate the actual work to"
    assert [c.entity for c in rank(question, pool, RankConfig(**only("callees")), callees=called)][0] == "run_job"
    assert [c.entity for c in rank(question, pool, RankConfig(**only("")), callees=called)][0] == "submit_job"
    assert [c.entity for c in rank(question, pool, RankConfig(**only("callees")))][0] == "submit_job"  # no graph: no signal
    top = rank(question, pool, RankConfig(), callees=called)
    run_job = next(c for c in top if c.entity == "run_job")
    assert run_job.rank_signals.get("callee") == 1.0 and "called by the named function" in explain(run_job)
    named = rank("where does `submit_job` delegate to `run_job`", pool, RankConfig(), callees=called)
    assert all("callee" not in c.rank_signals for c in named)  # a callee the question names has the definition boost


def test_delegation_callees_come_from_the_graph_only_for_a_delegation_question(indexed_project) -> None:
    from assay.stages.index.store import Catalog
    from assay.stages.query.graph import delegation_callees

    catalog = Catalog(indexed_project)
    try:
        asked = delegation_callees(catalog, "what does `session.send` delegate the retrying to?", ["session.send"])
        assert ("pkg/retry.py", "retry_call") in asked and ("pkg/session.py", "Session._transmit") in asked
        assert delegation_callees(catalog, "how does `session.send` retry?", ["session.send"]) == frozenset()
        assert delegation_callees(catalog, "what does `nothing_here` invoke?", ["nothing_here"]) == frozenset()
    finally:
        catalog.close()


def test_a_bundle_that_repeats_a_sources_definitions_is_a_built_copy() -> None:
    """Found on axios' npm tarball (`bench_questions`): `dist/axios.js`, `dist/esm/axios.js`, `dist/node/axios.cjs` and
    `dist/browser/axios.cjs` each hold every module of `lib/`, so no path maps to a source, and their four copies of
    `buildFullPath` filled the answer's five passages."""
    paths = ["package/lib/core/buildFullPath.js", "package/dist/axios.js", "package/dist/node/axios.cjs"]
    assert built_copies(paths) == frozenset()  # the file rule cannot see a bundle
    pool = [cand("package/dist/axios.js", "buildFullPath", bm25=10.0, distance=0.3, language="javascript"),
            cand("package/dist/node/axios.cjs", "buildFullPath", bm25=10.0, distance=0.3, language="javascript"),
            cand("package/dist/axios.js", "bundledOnly", bm25=9.5, distance=0.3, language="javascript"),
            cand("package/lib/core/buildFullPath.js", "buildFullPath", bm25=9.0, distance=0.35, language="javascript")]
    ranked = rank("build the full path", pool, RankConfig(**only("penalties")), paths=paths)
    assert ranked[0].file == "package/lib/core/buildFullPath.js"
    assert "built" in explain(ranked[1]) and "built" in explain(ranked[-1])  # the whole bundle is a build's output
    assert rank("build the full path", pool, RankConfig(**only("penalties", built_copies=False)), paths=paths)[0].file.startswith("package/dist")
    alone = [c for c in pool if c.entity == "bundledOnly"] + [cand("src/util.js", "other", bm25=9.0, distance=0.35)]
    assert "built" not in explain(rank("bundled", alone, RankConfig(**only("penalties")), paths=paths)[0])  # nothing repeated


def test_what_a_build_wrote_sinks_below_its_indexed_source() -> None:
    """Found on zod's npm tarball, which ships `v4/core/schemas.js`, `.cjs`, `.d.ts` and `.d.cts` beside
    `src/v4/core/schemas.ts`: each twin repeats every name and doc of the source."""
    paths = ["package/src/v4/core/schemas.ts", "package/v4/core/schemas.js", "package/v4/core/schemas.d.cts",
             "dist/index.js", "src/index.ts", "build/lib/pkg/mod.py", "pkg/mod.py", "lib/util.js", "src/helper.js"]
    assert built_copies(paths) == {"package/v4/core/schemas.js", "package/v4/core/schemas.d.cts", "dist/index.js",
                                   "build/lib/pkg/mod.py"}
    pool = [cand("package/v4/core/schemas.js", "ZodString", kind="class", bm25=10.0, distance=0.3, language="javascript"),
            cand("package/src/v4/core/schemas.ts", "ZodString", kind="class", bm25=9.0, distance=0.35, language="typescript")]
    ranked = rank("ZodString", pool, RankConfig(**only("penalties")), paths=paths)
    assert ranked[0].file == "package/src/v4/core/schemas.ts"
    assert "built" in explain(ranked[1])
    assert rank("ZodString", pool, RankConfig(**only("penalties", built_copies=False)), paths=paths)[0].file.endswith(".js")
    frame = "at ZodString.parse (package/v4/core/schemas.js:12:3)"  # a frame in the built file asks for it
    assert rank(frame, pool, RankConfig(**only("penalties", location=True)), paths=paths, located={pool[0].id})[0].file.endswith(".js")

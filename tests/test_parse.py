"""Entity extraction per language, spans, chunking and bad input (stage only, no Prefect)."""

from __future__ import annotations

import pytest

from assay.stages.index.discover import file_hash
from assay.stages.index.languages import language_for
from assay.stages.index.parse import parse_source
from tests.conftest import FIXTURES

LANGS = FIXTURES / "langs"

# file -> {(kind, qualname): (start_line, end_line)} read off the fixture files by hand
EXPECTED = {
    "sample.py": {
        ("constant", "MAX_RETRIES"): (2, 2), ("class", "Base"): (5, 6), ("class", "Greeter"): (9, 20),
        ("method", "Greeter.greet"): (12, 14), ("method", "Greeter.helper"): (16, 20),
        ("function", "Greeter.helper.inner"): (18, 19), ("function", "add"): (24, 25),
    },
    "sample.js": {
        ("constant", "MAX_SIZE"): (1, 1), ("function", "add"): (4, 6), ("function", "multiply"): (8, 8),
        ("class", "Shape"): (10, 14), ("method", "Shape.area"): (11, 13), ("function", "exported"): (16, 16),
    },
    "sample.ts": {
        ("interface", "Point"): (1, 4), ("type", "Id"): (6, 6), ("enum", "Color"): (8, 8),
        ("class", "Circle"): (10, 15), ("method", "Circle.area"): (12, 14), ("function", "dist"): (17, 19),
    },
    "sample.tsx": {("interface", "Props"): (1, 1), ("function", "Header"): (3, 5), ("function", "Footer"): (7, 7)},
    "sample.go": {
        ("constant", "MaxItems"): (3, 3), ("struct", "Server"): (6, 8), ("interface", "Handler"): (10, 12),
        ("method", "Server.Start"): (15, 17), ("function", "NewServer"): (19, 21),
    },
    "sample.rs": {
        ("constant", "LIMIT"): (1, 1), ("struct", "Point"): (4, 6), ("enum", "Shape"): (8, 8),
        ("trait", "Area"): (10, 12), ("method", "Point.new"): (16, 18), ("function", "main"): (21, 23),
    },
    "Sample.java": {
        ("class", "Calculator"): (4, 13), ("method", "Calculator.add"): (10, 12),
        ("method", "Calculator.Calculator"): (7, 7), ("interface", "Op"): (15, 17), ("enum", "Mode"): (19, 19),
    },
    "sample.c": {
        ("constant", "BUF_SIZE"): (3, 3), ("struct", "point"): (5, 8), ("enum", "color_t"): (10, 10),
        ("function", "add"): (13, 15), ("function", "make_buffer"): (17, 19),
    },
    "sample.cpp": {  # a namespace names its members but is no entity of its own
        ("class", "geo.Shape"): (5, 8), ("method", "geo.Shape.area"): (7, 7),
        ("struct", "geo.Vec"): (10, 10), ("function", "geo.Shape2"): (12, 12), ("function", "square"): (17, 19),
    },
    "Sample.cs": {
        ("class", "Demo.Service"): (3, 6), ("method", "Demo.Service.Run"): (5, 5),
        ("interface", "Demo.IRunner"): (8, 8), ("enum", "Demo.Level"): (10, 10), ("struct", "Demo.Pair"): (12, 12),
    },
    "sample.rb": {
        ("class", "Billing.Invoice"): (3, 11),  # `module Billing` holds a class only: a namespace
        ("method", "Billing.Invoice.total"): (4, 6), ("method", "Billing.Invoice.build"): (8, 10),
        ("function", "helper"): (14, 16),
    },
    "sample.php": {
        ("interface", "Shape"): (2, 2), ("trait", "Loggable"): (4, 4), ("class", "Square"): (7, 9),
        ("method", "Square.area"): (8, 8), ("function", "make_square"): (11, 11),
    },
    "sample.kt": {
        ("class", "User"): (4, 11), ("method", "User.compareTo"): (6, 6), ("method", "User.empty"): (9, 9),
        ("interface", "Repo"): (13, 15), ("method", "Repo.load"): (14, 14), ("enum", "Color"): (17, 17), ("function", "greet"): (20, 22),
    },
    "sample.swift": {
        ("struct", "User"): (4, 9), ("method", "User.greet"): (7, 7), ("method", "User.init"): (8, 8),
        ("interface", "Store"): (11, 13), ("method", "Store.load"): (12, 12), ("class", "User"): (15, 17),
        ("method", "User.shout"): (16, 16), ("function", "topLevel"): (19, 19),
    },
    "sample.scala": {
        ("class", "User"): (4, 6), ("method", "User.compare"): (5, 5), ("trait", "Repo"): (8, 10),
        ("method", "Repo.load"): (9, 9), ("class", "Registry"): (12, 14), ("method", "Registry.register"): (13, 13),
    },
    "sample.lua": {("function", "M.greet"): (4, 6), ("function", "M.reset"): (8, 10), ("function", "helper"): (12, 14)},
    "sample.ex": {
        ("module", "MyApp.Accounts"): (1, 11), ("function", "MyApp.Accounts.get_user"): (6, 8),
        ("function", "MyApp.Accounts.normalize"): (10, 10),
    },
    "sample.hs": {("type", "User"): (3, 3), ("interface", "Store"): (5, 6), ("function", "greet"): (9, 10)},  # its type signature is its first line
    "sample.zig": {
        ("struct", "Point"): (4, 11), ("method", "Point.shift"): (8, 10), ("struct", "List"): (13, 20),
        ("method", "List.len"): (16, 18), ("function", "test shift moves"): (22, 24),
    },
    "sample.sh": {("function", "build"): (5, 7)},
    "sample.m": {  # a method's doc comment sits before the node that wraps the method
        ("class", "UserStore"): (11, 25), ("method", "UserStore.initWithName"): (14, 18), ("method", "UserStore.shared"): (20, 23),
        ("function", "helper"): (27, 29), ("interface", "Greeter"): (31, 33), ("method", "Greeter.greet"): (32, 32),
    },
    "sample.dart": {  # a Dart body sits beside its signature: the span must reach the body's end
        ("class", "User"): (4, 14), ("method", "User.compareTo"): (9, 11), ("method", "User.guest"): (13, 13),
        ("class", "Loud"): (16, 18), ("method", "Loud.shout"): (17, 17), ("enum", "Color"): (20, 20), ("function", "greet"): (23, 25),
    },
    "sample.md": {
        ("section", "Title"): (1, 15), ("section", "Title > Install"): (5, 12),
        ("section", "Title > Install > Details"): (9, 12), ("section", "Title > Usage"): (13, 15),
    },
    "sample.html": {
        ("element", "style"): (4, 4), ("element", "nav#main-nav"): (7, 7), ("element", "main"): (8, 10),
        ("element", "main.div#content"): (9, 9), ("element", "script"): (11, 11),
    },
    "sample.css": {("rule", ".button"): (1, 3), ("rule", "#header, .top"): (5, 7), ("rule", "@media (max-width: 600px)"): (9, 11)},
}


def parse_fixture(name: str, **kw):
    data = (LANGS / name).read_bytes()
    return parse_source(data, name, language_for(name), file_hash(data), **kw)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_entities_and_line_spans(name: str) -> None:
    parsed = parse_fixture(name)
    assert not parsed.partial, parsed.error
    got = {(e.kind, e.qualname): (e.start_line, e.end_line) for e in parsed.entities if e.part == 0}
    for key, span in EXPECTED[name].items():
        assert key in got, f"{name}: missing {key}; got {sorted(got)}"
        assert got[key] == span, f"{name}: {key} spans {got[key]}, expected {span}"


def test_python_facts_docstrings_bases_params() -> None:
    ents = {e.qualname: e for e in parse_fixture("sample.py").entities}
    assert ents["Greeter"].bases == ["Base"]
    assert ents["Greeter"].docstring == "Greets people."
    assert ents["Greeter.greet"].docstring == "Return a greeting."
    assert ents["Greeter.greet"].params == ["self", "name"]
    assert ents["Greeter.greet"].signature == "def greet(self, name: str) -> str"
    assert ents["Greeter.greet"].parent == "Greeter"
    assert ents["Greeter.helper.inner"].parent == "Greeter.helper"
    assert ents["MAX_RETRIES"].docstring == "how often to retry"
    assert ents["add"].docstring == "Adds two numbers."  # leading comment


def test_leading_comments_become_docstrings_in_other_languages() -> None:
    assert {e.qualname: e for e in parse_fixture("sample.go").entities}["Server.Start"].docstring == "Start starts the server."
    assert {e.qualname: e for e in parse_fixture("sample.rs").entities}["Point"].docstring == "A point in space."
    assert {e.qualname: e for e in parse_fixture("Sample.java").entities}["Calculator.add"].docstring == "Adds."
    assert {e.qualname: e for e in parse_fixture("sample.c").entities}["add"].docstring == "Add two ints."


def test_newer_languages_keep_docs_signatures_params_and_bases() -> None:
    """Each grammar names things its own way (no `name` field in Kotlin, `def` is a call in Elixir, a Zig generic
    type is a function returning `type`); the entities must still carry what ranking reads."""
    def ents(name: str) -> dict:
        return {(e.kind, e.qualname): e for e in parse_fixture(name).entities}

    kt = ents("sample.kt")
    assert kt[("class", "User")].docstring == "Holds a user." and kt[("class", "User")].bases == ["Person", "Comparable"]
    assert kt[("method", "User.compareTo")].docstring == "Compares by age."
    assert kt[("function", "greet")].signature == "fun greet(user: User, loud: Boolean = false): String"
    assert kt[("function", "greet")].params == ["user", "loud"]
    sw = ents("sample.swift")
    assert sw[("struct", "User")].bases == ["Codable", "Equatable"] and sw[("struct", "User")].docstring == "A user record."
    assert sw[("method", "User.greet")].params == ["loud", "n"] and sw[("method", "User.init")].params == ["name"]
    sc = ents("sample.scala")
    assert sc[("class", "User")].bases == ["Person", "Ordered"] and sc[("class", "User")].docstring == "A user."
    assert sc[("method", "Registry.register")].signature == "def register(u: User, force: Boolean): Unit"
    assert ents("sample.lua")[("function", "M.greet")].docstring == "Greets a user."
    ex = ents("sample.ex")
    assert ex[("module", "MyApp.Accounts")].docstring == "The accounts context."
    assert ex[("function", "MyApp.Accounts.get_user")].docstring == "Gets a user."
    assert ex[("function", "MyApp.Accounts.get_user")].params == ["id", "opts"]
    assert ex[("function", "MyApp.Accounts.normalize")].signature == "defp normalize(x)"
    hs = ents("sample.hs")[("function", "greet")]
    assert (hs.signature, hs.docstring, hs.params) == ("greet :: User -> Bool -> String", "Greets a user.", ["u", "loud"])
    zig = ents("sample.zig")
    assert zig[("method", "Point.shift")].docstring == "Moves the point." and zig[("method", "Point.shift")].params == ["self", "dx"]
    generic = zig[("struct", "List")].body  # a container: its methods' bodies are not stored twice
    assert "pub fn len(self: @This()) usize { ..." in generic and "self.items.len" not in generic
    assert ents("sample.sh")[("function", "build")].docstring == "Builds the release."  # not the shebang
    objc = {(e.kind, e.qualname, e.start_line): e for e in parse_fixture("sample.m").entities}
    assert objc[("class", "UserStore", 5)].bases == ["NSObject", "NSCopying"] and objc[("class", "UserStore", 5)].docstring == "A user store."
    assert objc[("method", "UserStore.initWithName", 14)].docstring == "Creates a store."
    assert objc[("method", "Greeter.greet", 32)].params == ["who", "loud"] and objc[("function", "helper", 27)].params == ["x"]
    dart = ents("sample.dart")
    assert dart[("class", "User")].bases == ["Person", "Comparable"] and dart[("class", "User")].docstring == "A user."
    assert (dart[("method", "User.compareTo")].signature, dart[("method", "User.compareTo")].params) == ("int compareTo(User other)", ["other"])
    assert "return name.compareTo(other.name);" in dart[("method", "User.compareTo")].body
    assert "return name.compareTo" not in dart[("class", "User")].body  # the class skeleton does not repeat it
    assert dart[("function", "greet")].params == ["u", "loud"] and dart[("function", "greet")].docstring == "Greets a user."


def test_doc_comment_markup_is_reduced_to_its_words() -> None:
    """C#'s XML tags and Javadoc's `{@link}` were the first words of every such docstring that the report quoted
    and BM25 and the embedder read; angle brackets that are not doc markup stay. A Markdown link's target (rustdoc's
    `(struct.Captures.html)`) is no word either; brackets in code are no link."""
    def doc(source: bytes, path: str, language: str, qualname: str) -> str:
        return {e.qualname: e for e in parse_source(source, path, language, "h").entities}[qualname].docstring

    assert {e.qualname: e for e in parse_fixture("Sample.cs").entities}["Demo.Service"].docstring == "A service."
    cs = (b"class Pool {\n    /// <summary>\n    /// Takes a <see cref=\"T:System.Net.Socket\"/> from the pool.\n"
          b"    /// </summary>\n    /// <param name=\"wait\">how long to wait</param>\n    /// <returns>the socket</returns>\n"
          b"    Socket Take(int wait) { return null; }\n}\n")
    assert doc(cs, "Pool.cs", "csharp", "Pool.Take") == "Takes a System.Net.Socket from the pool.\n\nwait: how long to wait\nReturns the socket"
    java = b"/**\n * Finds {@link Repo#load} in {@code List<User>}.\n * <p>Then stops.\n */\nclass Finder {}\n"
    assert doc(java, "Finder.java", "java", "Finder") == "Finds Repo#load in List<User>.\nThen stops."
    python = b'def get():\n    """Returns <Response [200]> for a List<str>."""\n'
    assert doc(python, "api.py", "python", "get") == "Returns <Response [200]> for a List<str>."
    generic = b"/** Maps a {@code Pair<A>} to <b>one</b> Optional<B>. */\nclass Mapper {}\n"
    assert doc(generic, "Mapper.java", "java", "Mapper") == "Maps a Pair<A> to one Optional<B>."
    rust = (b"/// Like `captures`, but uses [`CaptureLocations`](struct.CaptureLocations.html) to amortize.\n"
            b"/// See [`Regex::new`] and [the guide][guide].\n///\n/// [guide]: https://docs.rs/regex\n"
            b"pub fn captures_read() {}\n")
    assert doc(rust, "re.rs", "rust", "captures_read") == (
        "Like `captures`, but uses `CaptureLocations` to amortize.\nSee `Regex::new` and the guide.")
    code = b'/** Reads T["_zod"]["input"] and calls handlers[0](req) on [1, 2]. */\nfunction read() {}\n'
    assert doc(code, "a.ts", "typescript", "read") == 'Reads T["_zod"]["input"] and calls handlers[0](req) on [1, 2].'


def test_a_python_doc_that_opens_with_an_admonition_has_its_summary_first() -> None:
    """pydantic opens BaseModel's, Field's and validate_call's docs with `!!! abstract "Usage Documentation"` and a
    link: that was their doc summary (what the rank stage matches a sentence against) and the first words the
    embedder read. The aside moves after the summary, its link reduced to its words like any doc link."""
    source = (b'def validate_call(func=None):\n    """!!! abstract "Usage Documentation"\n'
              b'        [Validation Decorator](../concepts/validation_decorator.md)\n\n'
              b'    Returns a wrapper that validates the arguments.\n\n    !!! note\n        Keeps `x`.\n    """\n    return func\n')
    doc = {e.qualname: e for e in parse_source(source, "v.py", "python", "h").entities}["validate_call"].docstring
    assert doc == "Returns a wrapper that validates the arguments.\n\nKeeps `x`.\n\nUsage Documentation\nValidation Decorator"
    plain = b'def f():\n    """Say !!! loudly.\n\n    !!! warning "Deprecated"\n        Use g.\n    """\n'
    assert {e.qualname: e for e in parse_source(plain, "f.py", "python", "h").entities}["f"].docstring == "Say !!! loudly.\n\nDeprecated\nUse g."


def test_a_comment_that_instructs_a_tool_is_no_doc_nor_a_window() -> None:
    """`// @__NO_SIDE_EFFECTS__` sits above 200 of zod's functions and was their whole doc; a linter's or coverage
    tool's directive above a doc comment hid nothing but was read as its first words. It still belongs to the
    definition, so it is no window of its own either."""
    source = (b"/** Makes a UUID schema. */\n// @__NO_SIDE_EFFECTS__\nexport function uuid(p) { return p; }\n\n"
              b"// @__NO_SIDE_EFFECTS__\nexport function guid(p) { return p; }\n\n"
              b"// eslint-disable-next-line no-console\n/** Logs it. */\nfunction log(x) { console.log(x); }\n")
    ents = parse_source(source, "a.ts", "typescript", "h").entities
    assert {e.qualname: e.docstring for e in ents if e.kind == "function"} == {"uuid": "Makes a UUID schema.", "guid": "", "log": "Logs it."}
    assert not [e for e in ents if e.kind == "window"]


def test_a_class_tells_the_dense_model_what_its_members_do() -> None:
    """A class passage is a skeleton of its members' names; their doc summaries go to the embedder with it (not to
    BM25, where the class then outranked the method a question described), so "where is multipart encoding done"
    can find `RequestEncodingMixin` as well as `_encode_files`."""
    source = (b'class RequestEncodingMixin:\n    @staticmethod\n    def _encode_params(data):\n'
              b'        """Encode parameters in a piece of data.\n\n        Will successfully encode parameters."""\n        return data\n\n'
              b'    @staticmethod\n    def _encode_files(files, data):\n        """Build the body for a multipart/form-data request. More."""\n'
              b'        return files\n\n    def plain(self):\n        return 1\n')
    ents = {e.qualname: e for e in parse_source(source, "models.py", "python", "h").entities}
    mixin = ents["RequestEncodingMixin"]
    assert mixin.member_docs == ("_encode_params: Encode parameters in a piece of data.\n"
                                 "_encode_files: Build the body for a multipart/form-data request.")
    assert mixin.member_docs in mixin.embed_text() and "multipart" not in mixin.lexical_text()
    assert ents["RequestEncodingMixin._encode_files"].member_docs == ""


def test_a_namespace_names_its_members_but_is_no_passage_of_its_own() -> None:
    """C#, C++, TypeScript and PHP namespaces and Ruby wrapper modules. As an entity, a C# or C++ namespace was the file's outline again plus its first class's doc comment, and it
    outranked that class for the class's own doc. Code in it outside a definition is still indexed."""
    assert not [e for name in ("Sample.cs", "sample.cpp") for e in parse_fixture(name).entities if e.kind == "module"]
    source = (b"namespace App.Jobs\n{\n    using System;\n    /// <summary>Runs jobs.</summary>\n    class Runner {}\n"
              b"    delegate void Done(int code);\n}\n")
    ents = parse_source(source, "Runner.cs", "csharp", "h").entities
    assert {(e.kind, e.qualname, e.parent) for e in ents if e.kind == "class"} == {("class", "App.Jobs.Runner", "App.Jobs")}
    assert [e.body.strip() for e in ents if e.kind == "window"] == ["using System;", "delegate void Done(int code);"]
    file_scoped = b"using System;\n\nnamespace App.Jobs;\n\n/// <summary>Runs.</summary>\nclass Runner {\n    void Go() {}\n}\n"
    ents = parse_source(file_scoped, "Runner.cs", "csharp", "h").entities  # C# 10: `namespace X;` names the rest
    assert {(e.kind, e.qualname) for e in ents if e.kind in ("class", "method")} == {("class", "App.Jobs.Runner"), ("method", "App.Jobs.Runner.Go")}
    assert [e.body for e in ents if e.kind == "window"] == ["using System;"]
    ruby = (b"module Rack\n  module Auth\n    # Basic auth.\n    class Basic\n      def call(env)\n      end\n    end\n  end\n"
            b"  module Utils\n    def self.escape(s)\n    end\n  end\nend\n")
    ents = parse_source(ruby, "basic.rb", "ruby", "h").entities  # rack wraps each file in `module Rack`
    assert {(e.kind, e.qualname) for e in ents if e.kind != "file"} == {
        ("class", "Rack.Auth.Basic"), ("method", "Rack.Auth.Basic.call"), ("module", "Rack.Utils"), ("function", "Rack.Utils.escape")}
    assert [e.docstring for e in ents if e.kind == "class"] == ["Basic auth."]
    typescript = (b"export namespace util {\n  /** Never. */\n  export function assertNever(x: never): never { const Y = 1; throw x; }\n"
                  b"  export const MAX = 3;\n}\nexport declare namespace Std {\n  interface Props { a: string }\n}\n")
    ents = parse_source(typescript, "util.ts", "typescript", "h").entities  # zod's v3 helpers are such namespaces
    assert {(e.kind, e.qualname, e.parent) for e in ents if e.kind not in ("file", "window")} == {
        ("function", "util.assertNever", "util"), ("constant", "util.MAX", "util"), ("interface", "Std.Props", "Std")}
    assert not [e for e in ents if e.kind == "window"]
    php = b"<?php\nnamespace Symfony\\Component\\Console\\Output;\n\nclass OutputStyle\n{\n    public function write($m) {}\n}\n"
    ents = parse_source(php, "OutputStyle.php", "php", "h").entities  # a PHP namespace names the file's classes
    assert {(e.kind, e.qualname) for e in ents if e.kind not in ("file", "window")} == {
        ("class", "Symfony.Component.Console.Output.OutputStyle"), ("method", "Symfony.Component.Console.Output.OutputStyle.write")}


def test_a_doc_comment_belongs_to_its_definition_not_to_a_window_or_its_class() -> None:
    """A top-level definition's doc comment was also a window of its own (beside the imports), and a class passage
    repeated each member's doc comment, so both outranked the definition for its own doc."""
    java = (b"import x.Y;\n\n/**\n * Loads users.\n */\npublic class Loader {\n    int size;\n    /** Loads one user. */\n"
            b"    User load(int id) { return null; }\n}\n")
    ents = {e.qualname: e for e in parse_source(java, "Loader.java", "java", "h").entities}
    assert [e.body for e in ents.values() if e.kind == "window"] == ["import x.Y;"]
    assert ents["Loader"].docstring == "Loads users." and ents["Loader.load"].docstring == "Loads one user."
    assert "Loads one user" not in ents["Loader"].body
    assert "int size;" in ents["Loader"].body and "User load(int id)" in ents["Loader"].body
    js = b'import x from "y";\n/** Max size. */\nexport const MAX_SIZE = 3;\n'  # above `export`: it was lost
    ents_js = parse_source(js, "m.js", "javascript", "h").entities
    assert {e.qualname: e.docstring for e in ents_js if e.kind == "constant"} == {"MAX_SIZE": "Max size."}
    assert [e.body for e in ents_js if e.kind == "window"] == ['import x from "y";']
    # a comment that is not the docstring (the function has one) stays indexed, as top-level code
    python = b'import os\n# kept: not the docstring\ndef f():\n    """Doc."""\n'
    assert [e.body for e in parse_source(python, "m.py", "python", "h").entities if e.kind == "window"] == ["import os\n# kept: not the docstring"]


def test_doc_comments_reach_definitions_however_the_grammar_nests_them() -> None:
    """Found on real Go, Rust and Ruby packages (gin, regex, rack): each grammar puts a doc comment somewhere the
    definition's own node does not reach, and the doc was lost to a window."""
    def parsed(source: bytes, path: str, language: str) -> tuple[dict, list[str]]:
        ents = parse_source(source, path, language, "h").entities
        return {e.qualname: e for e in ents if e.kind != "window"}, [e.body for e in ents if e.kind == "window"]

    go = (b"// Copyright 2014 The Authors.\n// Use of this source code is governed by a MIT licence.\n\n"
          b"// Package gin serves HTTP.\npackage gin\n\n// Accounts maps users to passwords.\ntype Accounts map[string]string\n\n"
          b"const (\n\t// AuthUserKey is the cookie name.\n\tAuthUserKey = \"user\"\n\tOther = 1\n)\n")
    ents, windows = parsed(go, "auth.go", "go")  # the comment sits above `type`, outside the type's spec
    assert ents["Accounts"].docstring == "Accounts maps users to passwords." and ents["Accounts"].start_line == 8
    assert ents["AuthUserKey"].docstring == "AuthUserKey is the cookie name." and ents["Other"].docstring == ""
    assert ents["auth.go"].docstring == "Package gin serves HTTP."  # the licence header above it is no doc
    assert not [w for w in windows if "Copyright" in w or "Accounts" in w]
    go = (b"package gin\n\ntype Engine struct {\n\tRouterGroup\n\t*log.Logger\n\tname string\n}\n\n"
          b"type Binding interface {\n\tio.Reader\n\t// Name names the binding.\n\tName() string\n}\n\n"
          b"func (s *Set[K, V]) Add(v K) {}\n")
    ents, _ = parsed(go, "gin.go", "go")  # embedding is Go's inheritance; an interface's methods are definitions
    assert ents["Engine"].bases == ["RouterGroup", "Logger"] and ents["Binding"].bases == ["Reader"]
    assert ents["Binding.Name"].docstring == "Name names the binding." and ents["Binding.Name"].kind == "method"
    assert "Set.Add" in ents  # the receiver's type, not its last type argument (`V.Add`)
    go = (b"package binding\n\n// Validator is the default.\nvar Validator StructValidator = &defaultValidator{}\n\n"
          b"var (\n\t// JSON binds JSON.\n\tJSON = jsonBinding{}\n\t_ = 1\n)\n\nfunc f() {\n\tvar local = 1\n}\n")
    ents, _ = parsed(go, "binding.go", "go")  # package-level vars are API (`binding.JSON`, `ErrNotFound`); locals are not
    assert {q: (e.kind, e.docstring) for q, e in ents.items() if e.kind == "constant"} == {
        "Validator": ("constant", "Validator is the default."), "JSON": ("constant", "JSON binds JSON.")}
    rust = (b"//! Regex engines.\n\n/// Compiles a program.\n/// In one pass.\n#[derive(Debug)]\npub struct Compiler;\n\n"
            b"mod parser;\n")
    ents, windows = parsed(rust, "lib.rs", "rust")  # an attribute stands between the doc and the item
    assert ents["Compiler"].docstring == "Compiles a program.\nIn one pass." and ents["lib.rs"].docstring == "Regex engines."
    assert "parser" not in ents  # `mod parser;` points at another file, as an import does
    generic = b"struct Fsm<'a> { x: &'a str }\nimpl<'a> Fsm<'a> {\n    fn next(&mut self) {}\n}\n"
    assert "Fsm.next" in parsed(generic, "dfa.rs", "rust")[0]  # not `Fsm<'a>.next`: a query names the type only
    assert not [w for w in windows if "Compiles" in w or "Regex engines" in w]
    php = (b"<?php\n\n/*\n * This file is part of the Symfony package.\n *\n * (c) Fabien Potencier\n */\n\n"
           b"namespace App;\n\n/**\n * Styles output.\n */\nclass Style {}\n")
    ents, windows = parsed(php, "Style.php", "php")  # `<?php` comes first, then the header: neither is code
    assert windows == [] and ents["Style.php"].docstring == "" and ents["App.Style"].docstring == "Styles output."
    ruby = (b"# frozen_string_literal: true\n\nmodule Rack\n  # Proxy for response bodies.\n  class BodyProxy\n"
            b"    # Wraps the body.\n    def initialize(body)\n    end\n  end\nend\n")
    ents, windows = parsed(ruby, "body_proxy.rb", "ruby")  # the comments sit before the body node, not in it
    assert ents["Rack.BodyProxy"].docstring == "Proxy for response bodies."
    assert ents["Rack.BodyProxy.initialize"].docstring == "Wraps the body."
    assert windows == [] and ents["body_proxy.rb"].docstring == ""
    spaced = (b"# frozen_string_literal: true\n\nclass Top\nend\n\nmodule Rack\n  # Rack::URLMap maps paths to apps.\n"
              b"  # It dispatches accordingly.\n\n  class URLMap\n  end\nend\n")
    ents, windows = parsed(spaced, "urlmap.rb", "ruby")  # YARD's rule: one blank line may part a doc from its class
    assert ents["Rack.URLMap"].docstring == "Rack::URLMap maps paths to apps.\nIt dispatches accordingly."
    assert ents["Top"].docstring == "" and windows == []  # the magic comment above `class Top` is no doc
    licensed = b"# Copyright 2020 Acme Inc.\n# See the LICENSE file.\n\nclass Top\nend\n"
    assert parsed(licensed, "top.rb", "ruby")[0]["Top"].docstring == ""  # nor is a licence, whatever its last line


def test_a_function_written_as_several_equations_is_one_definition() -> None:
    """Found on Hugs' Haskell libraries: `f 0 = 1` then `f n = ...` became one entity per equation (one row per
    clause in the results, the doc on the first only), and the type signature above them a window of its own.
    Elixir's `def f(0)` then `def f(n)` is the same idiom. A later clause with a doc of its own stays apart."""
    def parsed(source: bytes, path: str, language: str) -> tuple[dict, list[str]]:
        ents = [e for e in parse_source(source, path, language, "h").entities if e.kind != "file"]
        assert len({e.id for e in ents}) == len(ents)
        return {e.qualname: e for e in ents if e.kind != "window"}, [e.body for e in ents if e.kind == "window"]

    haskell = (b"module Count where\n\n-- | Counts down to zero.\ncountdown :: Int -> [Int]\ncountdown 0 = [0]\n"
               b"-- the step\ncountdown n = n : countdown (n - 1)\n\nsize :: [a] -> Int\nsize = go 0\n  where\n"
               b"    go n [] = n\n    go n (_:xs) = go (n + 1) xs\n\nlast' :: [a] -> a\nlast' [x] = x\n")
    ents, windows = parsed(haskell, "Count.hs", "haskell")
    down = ents["countdown"]  # the first declaration's doc sits before the declarations node
    assert (down.start_line, down.end_line, down.docstring) == (4, 7, "Counts down to zero.")
    assert down.body.startswith("countdown :: Int -> [Int]") and "countdown n = n" in down.body
    assert (ents["size.go"].start_line, ents["size.go"].end_line) == (12, 13)
    assert (ents["last'"].start_line, ents["last'"].end_line) == (15, 16)
    assert windows == ["module Count where"]
    elixir = (b"defmodule M do\n  @doc \"Factorial.\"\n  def fact(0), do: 1\n  def fact(n), do: n * fact(n - 1)\n\n"
              b"  @doc \"Factorial with an accumulator.\"\n  def fact(n, acc), do: acc\n  def other(x), do: x\nend\n")
    ents = [e for e in parse_source(elixir, "m.ex", "elixir", "h").entities if e.qualname == "M.fact"]
    assert [(e.start_line, e.end_line, e.docstring) for e in ents] == [(3, 4, "Factorial."), (7, 7, "Factorial with an accumulator.")]


def test_a_signature_stops_before_the_bodys_first_comment_and_block_words_are_no_window() -> None:
    """Python's and Lua's grammars put a body's first comment before the body node, so it was read into the
    signature (`def __call__(self, r): # Initialize per-thread state`); penlight's modules left `end` / `do` /
    `return M` lines between definitions as windows (42 of its 226). A comment inside a C head stays."""
    python = b"def prepare(value):  # Issue #1483: keep the slash\n    return value\n"
    assert parse_source(python, "a.py", "python", "h").entities[1].signature == "def prepare(value)"
    lua = b"local M = {}\ndo\n  local function parse(p) -- may be fractional\n    return p\n  end\nend\n\nreturn M\n"
    ents = parse_source(lua, "m.lua", "lua", "h").entities
    assert [e.signature for e in ents if e.kind == "function"] == ["local function parse(p)"]
    assert [e.body for e in ents if e.kind == "window"] == ["local M = {}\ndo"]
    c = b"LZ4_FORCE_O2 /* Exported, obsolete. */ int decompress(const char* src) { return 0; }\n"
    assert [e.signature for e in parse_source(c, "a.c", "c", "h").entities if e.kind == "function"] == ["LZ4_FORCE_O2 /* Exported, obsolete. */ int decompress(const char* src)"]


def test_a_c_window_of_preprocessor_conditionals_only_is_no_passage() -> None:
    """134 of the 321 windows in lz4's C were `#if` / `#else` / `#endif` lines between definitions: no code of their
    own, and each one a passage to embed and rank. A window with real code in it keeps its conditionals."""
    source = b"#include <a.h>\n#if defined(X)\n#  define Y 1\n#endif\n\nint f(void) { return 0; }\n\n#ifdef Z\n#else\n#endif\n"
    windows = [e.body for e in parse_source(source, "a.c", "c", "h").entities if e.kind == "window"]
    assert windows == ["#include <a.h>\n#if defined(X)"]
    python = b"import os\n# if the cache is cold\n# else warm it\n"  # a Python comment is no directive
    assert [e.body for e in parse_source(python, "m.py", "python", "h").entities if e.kind == "window"] == [python.decode().strip()]


def test_a_python_module_docstring_is_the_file_rows() -> None:
    """The grammar leaves a module docstring bare (no expression statement), so no Python file row had one: the
    text was only in a window beside the imports."""
    source = b'"""\nSession objects that persist settings.\n"""\nimport os\n\nclass Session:\n    pass\n'
    ents = parse_source(source, "sessions.py", "python", "h").entities
    assert [e.docstring for e in ents if e.kind == "file"] == ["Session objects that persist settings."]
    assert [e.body for e in ents if e.kind == "window"] == ["import os"]


def test_bodies_are_indexed_and_classes_keep_a_skeleton() -> None:
    ents = {e.qualname: e for e in parse_fixture("sample.py").entities}
    assert 'return f"hello {name}"' in ents["Greeter.greet"].body
    skeleton = ents["Greeter"].body
    assert "def greet(self, name: str) -> str: ..." in skeleton
    assert "hello" not in skeleton  # member bodies are not stored twice


def test_a_class_skeleton_names_its_decorated_members() -> None:
    """A decorated member used to shrink to its decorator (`@staticmethod ...`), so the class passage lost its name."""
    source = (b"class Mixin:\n    @property\n    def path_url(self):\n        return 1\n\n    @staticmethod\n"
              b"    @cached(\n        size=1,\n    )\n    def _encode_files(files, data):\n        return 2\n")
    skeleton = {e.qualname: e for e in parse_source(source, "m.py", "python", "h").entities}["Mixin"].body
    assert skeleton.splitlines() == ["class Mixin:", "    @property", "    def path_url(self): ...", "",
                                     "    @staticmethod", "    @cached(", "    def _encode_files(files, data): ..."]


def test_window_fallback_for_other_text() -> None:
    parsed = parse_fixture("config.yaml")
    assert [e.kind for e in parsed.entities] == ["window"]
    assert (parsed.entities[0].start_line, parsed.entities[0].end_line) == (1, 5)


def test_a_header_that_reads_as_objective_c_is_parsed_as_objective_c() -> None:
    """`.h` is C by name; as C, an `@interface` header parsed to nothing but syntax errors."""
    header = b'#import <Foundation/Foundation.h>\n\n/// A store.\n@interface Store : NSObject\n- (void)load:(int)n;\n@end\n'
    parsed = parse_source(header, "Store.h", language_for("Store.h"), "h")
    assert not parsed.partial and {(e.kind, e.qualname, e.language) for e in parsed.entities if e.kind != "file"} >= {
        ("class", "Store", "objc"), ("method", "Store.load", "objc")}
    plain = parse_source(b"#include <stdio.h>\nint add(int a, int b);\nstruct point { int x; };\n", "util.h", "c", "h")
    assert {e.language for e in plain.entities} == {"c"} and ("struct", "point") in {(e.kind, e.qualname) for e in plain.entities}


def test_a_header_that_reads_as_cpp_is_parsed_as_cpp() -> None:
    """As C, a C++ header's class was read as a function named after it, and its methods were lost."""
    header = (b"#pragma once\n#include <string>\n\nnamespace geo {\n/// A shape.\nclass Shape : public Base {\npublic:\n"
              b"  double area() const { return 0; }\n};\n}\n")
    parsed = parse_source(header, "shape.h", language_for("shape.h"), "h")
    got = {(e.kind, e.qualname, e.language) for e in parsed.entities if e.kind != "file"}
    assert {("class", "geo.Shape", "cpp"), ("method", "geo.Shape.area", "cpp")} <= got
    guarded = b'#ifdef __cplusplus\nextern "C" {\n#endif\nint add(int a, int b);\n#ifdef __cplusplus\n}\n#endif\n'
    assert {e.language for e in parse_source(guarded, "add.h", "c", "h").entities} == {"c"}  # a C header for C++ callers


def test_c_and_cpp_definitions_are_named_by_their_own_names() -> None:
    """Found on JPype and lz4: `void JPJavaFrame::Throw()` was a function named `JPJavaFrame::Throw`, which no
    lookup of `Throw` finds; `typedef _jclass* jclass;` was a type named `* jclass`; a function pointer typedef was
    named by its whole declarator; and a method returning a reference (`jvalue& getValue()`) was no entity."""
    source = (b"namespace ns { class Frame { public: void Throw(); jvalue& getValue() { return v; } }; }\n"
              b"void ns::Frame::Throw() { }\ntemplate <class T> void Box<T>::put(T v) { }\nFrame::~Frame() { }\n"
              b"typedef _jclass*        jclass;\ntypedef int (*callback_t)(int x);\ntypedef signed char int8_t;\n")
    got = {(e.kind, e.name, e.qualname, e.parent) for e in parse_source(source, "frame.cpp", "cpp", "h").entities}
    assert {("function", "Throw", "ns.Frame.Throw", "ns.Frame"), ("function", "put", "Box.put", "Box"),
            ("function", "~Frame", "Frame.~Frame", "Frame"), ("method", "getValue", "ns.Frame.getValue", "ns.Frame"),
            ("type", "jclass", "jclass", None), ("type", "callback_t", "callback_t", None),
            ("type", "int8_t", "int8_t", None)} <= got
    c_types = {e.name for e in parse_source(b"typedef void* (*LZ4F_AllocFunction)(void* state, size_t size);\n"
                                            b"typedef struct LZ4F_cctx_s* LZ4F_compressionContext_t;\n",
                                            "lz4frame.h", "c", "h").entities if e.kind == "type"}
    assert c_types == {"LZ4F_AllocFunction", "LZ4F_compressionContext_t"}


def test_a_cpp_specialisation_is_named_by_its_template_not_split_inside_its_arguments() -> None:
    """Found on fmt: `struct formatter<std::tuple<T>>` was split at the `::` inside its arguments, a struct named
    `tuple<T>>` owned by `formatter<std`, and one whose arguments ran over lines carried them in its name."""
    source = (b"template <> struct formatter<std::tuple<int>> { int parse(int y) { return y; } };\n"
              b"template <typename R> struct formatter<R, enable_if_t<kind<R>::value !=\n    fmt::off>> {};\n"
              b"template <typename K> int Map<K>::find(int k) { return k; }\n"
              b"bool Foo::operator<(const Foo& o) const { return true; }\n")
    got = [(e.kind, e.qualname) for e in parse_source(source, "ranges.h", "cpp", "h").entities if e.kind != "window"]
    assert got[1:] == [("struct", "formatter"), ("method", "formatter.parse"), ("struct", "formatter"),
                       ("function", "Map.find"), ("function", "Foo.operator<")]


def test_a_conditional_directive_that_cuts_a_statement_does_not_cost_the_class_its_members() -> None:
    """Found on pythonnet's `Finalizer.cs`: `#if FINALIZER_CHECK` / `lock (_queueLock)` / `#endif` before the block
    it guards is no statement the grammar knows; the methods after it were indexed without their class, and the
    file was reported partial. Parsed again with each conditional's first branch taken, the file reads whole, at
    the same lines."""
    source = (b"namespace Python.Runtime\n{\n    public class Finalizer\n    {\n        void Add(int obj)\n        {\n"
              b"#if FINALIZER_CHECK\n            lock (_queueLock)\n#endif\n            {\n                Enqueue(obj);\n"
              b"            }\n        }\n\n        public int Collect()\n        {\n            return 0;\n        }\n    }\n}\n")
    parsed = parse_source(source, "Finalizer.cs", "csharp", "h")
    got = {(e.kind, e.qualname, e.start_line) for e in parsed.entities}
    assert {("method", "Python.Runtime.Finalizer.Add", 5), ("method", "Python.Runtime.Finalizer.Collect", 15)} <= got
    assert not parsed.partial
    add = next(e for e in parsed.entities if e.qualname.endswith(".Add"))
    assert "#if FINALIZER_CHECK" in add.body  # the text is the file's own
    # each branch opens the block (the file lost `f`, or `H` and the whole class): the first branch is read
    branches = (b"class C {\n  void F() {\n#if WIDE\n    if (x) {\n#elif NARROW\n    if (y) {\n#else\n    if (z) {\n"
                b"#endif\n      G();\n    }\n  }\n  void H() { }\n}\n")
    assert {"C.F", "C.H"} <= {e.qualname for e in parse_source(branches, "C.cs", "csharp", "h").entities}
    c_branches = (b"int f(int a)\n{\n#ifdef WIDE\n  if (a) {\n#else\n  if (!a) {\n#endif\n    return 1;\n  }\n"
                  b"  return 0;\n}\nint g(void) { return 2; }\n")
    assert {"f", "g"} <= {e.qualname for e in parse_source(c_branches, "f.c", "c", "h").entities}


def test_lua_and_ruby_definitions_named_with_their_owner_are_named_by_their_own_names() -> None:
    """Found on penlight: 485 of its 688 Lua definitions were named `tablex.find`, `Date:add` (whole), which a lookup
    of `find` missed; Ruby's `class FCGI::Stream` was one name likewise. The qualified names stay."""
    lua = b"local tablex = {}\nfunction tablex.find(t, v) return nil end\nfunction Date:add(t) return self end\n"
    got = {(e.kind, e.name, e.qualname, e.parent) for e in parse_source(lua, "tablex.lua", "lua", "h").entities}
    assert {("function", "find", "tablex.find", "tablex"), ("function", "add", "Date.add", "Date")} <= got
    ruby = b"class FCGI::Stream\n  def read(n)\n    n\n  end\nend\n"
    got = {(e.kind, e.name, e.qualname, e.parent) for e in parse_source(ruby, "fastcgi.rb", "ruby", "h").entities}
    assert {("class", "Stream", "FCGI.Stream", "FCGI"), ("method", "read", "FCGI.Stream.read", "FCGI.Stream")} <= got


def test_code_without_a_definition_reader_is_still_indexed_as_windows() -> None:
    """A Julia or R file used to be skipped whole: no search could reach it."""
    for name in ("model.jl", "analysis.R", "App.vue", "Build.groovy", "main.ml"):
        language = language_for(name)
        assert language is not None, name
        parsed = parse_source(b"line one\nline two\n", name, language, "h")
        assert [e.kind for e in parsed.entities] == ["window"] and "line two" in parsed.entities[0].body


def test_long_bodies_split_on_line_boundaries_with_signature_repeated() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(100))
    src = f"def big(a):\n{body}\n    return a\n".encode()
    parsed = parse_source(src, "big.py", "python", file_hash(src), max_lines=40, max_chars=100_000)
    parts = [e for e in parsed.entities if e.qualname == "big"]
    assert len(parts) == 3 and all(p.parts == 3 for p in parts)
    assert all(p.signature == "def big(a)" for p in parts)
    covered = [ln for p in parts for ln in p.body.splitlines()]
    assert covered == src.decode().splitlines()  # nothing cut, nothing repeated
    assert [p.start_line for p in parts] == [1, 41, 81]
    assert parts[-1].end_line == 102
    assert len({p.id for p in parts}) == 3


def test_syntax_errors_keep_what_parses() -> None:
    src = b"def good(a):\n    return a\n\ndef broken(:\n    pass\n\nclass Fine:\n    def ok(self):\n        return 1\n"
    parsed = parse_source(src, "bad.py", "python", file_hash(src))
    assert parsed.partial and "syntax errors" in parsed.error
    names = {e.qualname for e in parsed.entities}
    assert {"good", "Fine", "Fine.ok"} <= names


def test_invalid_utf8_is_a_partial_parse_not_a_crash() -> None:
    src = b"def caf\xe9():\n    return '\xff\xfe'\n"
    parsed = parse_source(src, "latin.py", "python", file_hash(src))
    assert parsed.partial and "UTF-8" in parsed.error
    assert parsed.entities


def test_minified_single_line_is_split_by_characters() -> None:
    src = ("var a=" + "1+" * 50_000 + "1;").encode()
    parsed = parse_source(src, "min.js", "javascript", file_hash(src), max_chars=1000)
    text = "".join(e.body for e in parsed.entities)
    assert len(text) == len(src.decode())
    assert all(len(e.body) <= 1000 for e in parsed.entities)


def test_ids_are_deterministic() -> None:
    a = [e.id for e in parse_fixture("sample.ts").entities]
    b = [e.id for e in parse_fixture("sample.ts").entities]
    assert a == b and len(set(a)) == len(a)


def test_python_definitions_inside_every_statement_block_are_found() -> None:
    """The walk skips expression subtrees in Python; every statement that can hold a def must still be entered."""
    src = b"""\
if TYPE_CHECKING:
    def in_if(): pass
elif OTHER:
    def in_elif(): pass
else:
    def in_else(): pass
try:
    class InTry: pass
except ImportError:
    class InExcept: pass
else:
    def in_try_else(): pass
finally:
    def in_finally(): pass
with lock:
    def in_with(): pass
for x in y:
    def in_for(): pass
while cond:
    def in_while(): pass
match value:
    case 1:
        def in_case(): pass
@decorated
def decorated_fn():
    if flag:
        def nested_in_if(): pass
    return [lambda: 1 for _ in range(2)]
class Holder:
    if sys.version_info >= (3, 8):
        def method_in_if(self):
            try:
                raise ValueError("x")
            except KeyError:
                with ctx:
                    raise TypeError("y")
"""
    parsed = parse_source(src, "blocks.py", "python", file_hash(src))
    names = {e.qualname for e in parsed.entities if e.kind != "file"}
    assert {"in_if", "in_elif", "in_else", "InTry", "InExcept", "in_try_else", "in_finally", "in_with", "in_for",
            "in_while", "in_case", "decorated_fn", "decorated_fn.nested_in_if", "Holder", "Holder.method_in_if"} <= names
    method = next(e for e in parsed.entities if e.qualname == "Holder.method_in_if")
    assert method.kind == "method" and method.facts is not None and method.facts.raises == ["TypeError", "ValueError"]


@pytest.mark.parametrize("language", ["css", "javascript"])
def test_definitions_sharing_one_long_line_are_read_as_text_not_multiplied(language: str) -> None:
    """Minified code that reaches the parser (`ASSAY_INDEX_GENERATED`, or an unusual name) must not copy its one line
    into every definition on it: a 376 KB stylesheet once made 925,317 passages and 24 GB."""
    if language == "css":
        source = "".join(f".c{i}{{color:#{i:06x};margin:{i}px}}" for i in range(3000))
    else:
        source = "".join(f"function f{i}(a){{return a+{i}}}" for i in range(3000))
    parsed = parse_source(source.encode(), f"dist/min.{language[:3]}", language, "h", 40, 1200)
    assert "long lines" in parsed.error and parsed.partial
    assert {e.kind for e in parsed.entities} == {"window"}
    assert sum(len(e.body) for e in parsed.entities) <= len(source) + len(parsed.entities)
    spaced = parse_source(source.replace("}", "}\n").encode(), f"src/x.{language[:3]}", language, "h", 40, 1200)
    assert not spaced.error and len(spaced.entities) >= 3000  # the same code written out: a definition each


def test_a_file_with_classic_mac_line_endings_gets_the_lines_an_editor_shows() -> None:
    """CR alone ends a line for Python and editors; tree-sitter counts rows on LF only."""
    lines = ["import os", "", "def first():", "    return 1", "", "def second():", "    return os.sep"]
    for ending in ("\r", "\n", "\r\n"):
        source = ending.join(lines).encode() + ending.encode()
        entities = {e.qualname: e for e in parse_source(source, "m.py", "python", file_hash(source)).entities}
        assert (entities["first"].start_line, entities["second"].start_line, entities["second"].end_line) == (3, 6, 7), ending
        assert "\r" not in entities["second"].body.replace("\r\n", "")


def test_each_part_of_a_long_class_outline_spans_the_file_lines_its_text_is_on() -> None:
    """A class's outline drops its members' bodies; its later parts were numbered by offsets into the outline, so a
    receipt pointed at the first methods' bodies while the passage quoted lines hundreds further down."""
    methods = "".join(f"    def method_{i}(self):\n" + "".join(f"        x = {j}\n" for j in range(20)) + "\n" for i in range(6))
    constants = "".join(f"    CONSTANT_{i} = {i}\n" for i in range(60))
    source = f"class Big:\n    \"\"\"A big class.\"\"\"\n{methods}{constants}".encode()
    file_lines = source.decode().split("\n")
    parsed = parse_source(source, "big.py", "python", file_hash(source), max_lines=40)
    parts = sorted((e for e in parsed.entities if e.qualname == "Big"), key=lambda e: e.part)
    assert len(parts) >= 2
    for part in parts:
        body = part.body.split("\n")
        assert file_lines[part.start_line - 1] == body[0].removesuffix(" ..."), (part.part, part.start_line)
        assert file_lines[part.end_line - 1] == body[-1].removesuffix(" ..."), (part.part, part.end_line)
    assert parts[-1].end_line == len(file_lines) - 1 == 194  # the last constant, not an offset into the outline


def test_a_long_class_s_last_part_ends_with_the_class() -> None:
    """A class split into parts ended at its last member's `def` line (the skeleton's last line), so `get_entity`
    and the receipt cut off the last method's body (agentmcp defect 1)."""
    src = "class Mid:\n" + "".join(f"    def m{i}(self, a):\n        return a + {i}\n\n" for i in range(30))
    src += "    def last(self, a):\n        b = a * 2\n        return b\n"
    ents = [e for e in parse_source(src.encode(), "b.py", "python", "h").entities if e.qualname == "Mid"]
    assert len(ents) > 1 and ents[0].start_line == 1
    assert max(e.end_line for e in ents) == len(src.splitlines()) == 94

"""Which files Assay reads, and how each tree-sitter grammar names its definitions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


def node_text(node: Any) -> str:
    """A tree-sitter node's source text ('' for no node): the parse, facts and graph stages all read it so."""
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""

# extension (or exact file name) -> language id used by tree-sitter-language-pack
TREE_SITTER_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".qmd": "markdown", ".rmd": "markdown",
    ".html": "html", ".htm": "html",
    ".css": "css",
    ".kt": "kotlin", ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala", ".sc": "scala",
    ".lua": "lua",
    ".ex": "elixir", ".exs": "elixir",
    ".hs": "haskell",
    ".zig": "zig",
    ".sh": "bash", ".bash": "bash",
    ".dart": "dart",
    ".m": "objc", ".mm": "objc",
}

NOTEBOOK = "notebook"

# other text indexed as line windows
WINDOW_EXTENSIONS: dict[str, str] = {
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json", ".sql": "sql",
    ".zsh": "shell", ".ini": "ini", ".cfg": "ini",
    ".txt": "text", ".rst": "rst", ".xml": "xml", ".gradle": "gradle", ".tf": "terraform",
    ".proto": "proto", ".graphql": "graphql", ".env": "dotenv",
    # code in languages without a definition reader yet: windows still make it searchable
    ".jl": "julia", ".r": "r", ".ml": "ocaml", ".mli": "ocaml",
    ".erl": "erlang", ".hrl": "erlang", ".clj": "clojure", ".cljs": "clojure", ".cljc": "clojure", ".groovy": "groovy",
    ".pl": "perl", ".pm": "perl", ".vue": "vue", ".svelte": "svelte", ".fs": "fsharp", ".fsx": "fsharp", ".nim": "nim",
    ".elm": "elm", ".ps1": "powershell", ".scss": "scss", ".less": "less", ".cmake": "cmake", ".hcl": "hcl",
    ".ipynb": NOTEBOOK,  # parsed as Python through `notebook.python_view` where its layout allows
    # templates (a migration's `script.py.mako`, a project's `Makefile.jinja`), specs and scripts people ask about
    ".jinja": "jinja", ".jinja2": "jinja", ".j2": "jinja", ".mako": "mako", ".feature": "gherkin",
    ".bat": "batch", ".cmd": "batch", ".el": "elisp", ".pyx": "cython", ".pxd": "cython", ".pxi": "cython",
    ".cu": "cuda", ".cuh": "cuda",
}
WINDOW_FILENAMES: dict[str, str] = {
    "Dockerfile": "dockerfile", "Makefile": "make", "makefile": "make", ".env": "dotenv",
    "Procfile": "text", "Gemfile": "ruby", "Rakefile": "ruby",
}


def language_for(name: str) -> str | None:
    """Language id for a file name, or None when Assay does not index it."""
    if name in WINDOW_FILENAMES:
        return WINDOW_FILENAMES[name]
    if name.startswith(".env."):
        return "dotenv"
    dot = name.rfind(".")
    if dot < 0:
        return None
    ext = name[dot:].lower()
    return TREE_SITTER_EXTENSIONS.get(ext) or WINDOW_EXTENSIONS.get(ext)


# interpreter named on a `#!` line -> language: scripts in `bin/` or `libexec/` often have no extension
SHEBANG_LANGUAGES: dict[str, str] = {
    "sh": "bash", "bash": "bash", "dash": "bash", "ksh": "bash", "ash": "bash", "zsh": "shell",
    "python": "python", "node": "javascript", "nodejs": "javascript", "deno": "typescript", "bun": "javascript",
    "ruby": "ruby", "php": "php", "lua": "lua", "luajit": "lua", "elixir": "elixir", "perl": "perl",
}
_SHEBANG = re.compile(rb"#![ \t]*(\S+)(?:[ \t]+(-S[ \t]+)?(\S+))?")
_INTERPRETER_VERSION = re.compile(r"[\d.]+$")


def language_from_shebang(head: bytes) -> str | None:
    """Language of an extensionless script by its `#!` line (`#!/bin/sh`, `#!/usr/bin/env -S python3 -u`), or
    None when its first line names no interpreter Assay reads."""
    match = _SHEBANG.match(head)
    if match is None:
        return None
    program = match.group(1).rsplit(b"/", 1)[-1]
    if program == b"env" and match.group(3):
        program = match.group(3)
    name = _INTERPRETER_VERSION.sub("", program.decode("ascii", "replace"))
    return SHEBANG_LANGUAGES.get(name)


_OBJC_MARKS = re.compile(rb"^[ \t]*(?:@interface|@protocol|@implementation|#import)\b", re.MULTILINE)
# words that start a line of C++ and never one of C
_CPP_MARKS = re.compile(
    rb"^[ \t]*(?:namespace(?:[ \t]+[\w:]+)?[ \t]*\{|using[ \t]+namespace\b|template[ \t]*<|class[ \t]+\w+|(?:public|private|protected)[ \t]*:)",
    re.MULTILINE,
)


def refine_language(language: str, source: bytes) -> str:
    """A `.h` header is C by its name, but most headers declare Objective-C or C++ classes: one that reads as
    Objective-C (`@interface`, `@protocol`, `#import`) or as C++ (`namespace x {`, `class X`, `template <`,
    `public:`) is parsed as such. As C, nothing in an Objective-C header parsed, and a C++ class was a function."""
    if language == "c" and _OBJC_MARKS.search(source):
        return "objc"
    if language == "c" and _CPP_MARKS.search(source):
        return "cpp"
    return language


def uses_tree_sitter(language: str) -> bool:
    return language in set(TREE_SITTER_EXTENSIONS.values())


@dataclass(frozen=True)
class LanguageSpec:
    """Node types that define entities, and node types that only scope names (like Rust `impl`)."""

    defs: dict[str, str]
    scopes: dict[str, str] = field(default_factory=dict)  # node type -> field holding the scope name
    comment_types: frozenset[str] = frozenset({"comment"})
    function_kinds_in_container: str = "method"
    # For grammars without a `name` / `body` / `parameters` field (Kotlin, Dart): the first direct child of one of
    # these types names the definition, starts its body (the signature ends there) or holds its parameters.
    name_types: frozenset[str] = frozenset()
    body_types: frozenset[str] = frozenset()
    param_types: frozenset[str] = frozenset()
    param_items: frozenset[str] = frozenset()  # parameters that are direct children of the definition (Swift)
    fixed_names: dict[str, str] = field(default_factory=dict)  # definitions that have no name node (Swift `init`)
    keyword_kinds: dict[str, str] = field(default_factory=dict)  # a keyword token refines the kind (`struct`)
    doc_skip: frozenset[str] = frozenset()  # nodes between a doc comment and its definition (a Haskell signature)
    body_sibling: frozenset[str] = frozenset()  # a body that follows its definition node instead of sitting in it (Dart)
    wrappers: frozenset[str] = frozenset()  # a node around a definition that its doc comment precedes (Objective-C)
    # a namespace names what it holds but is no definition: as one, its passage was the file's outline again
    # with the first class's doc comment, and it outranked that class for its own doc (C#, C++)
    namespaces: frozenset[str] = frozenset()
    # node types a definition can sit inside; None means any. Python defines only in statements, so the
    # parse walk skips every expression subtree (most of a file's nodes: half the parse time on pytest)
    descend: frozenset[str] | None = None


CONTAINER_KINDS = frozenset({"class", "interface", "struct", "trait", "enum", "module", "section"})

_JS_DEFS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "method_definition": "method",
    # declarations without a body (`.d.ts`, `declare function`, an interface's or an abstract method) define names
    # as Go interface methods and Rust trait signatures do; parse folds overload signatures into their implementation
    "function_signature": "function",
    "method_signature": "method",
    "abstract_method_signature": "method",
    "variable_declarator": "function",  # only when its value is a function (checked in parse)
    # definitions written as values, as Aider's JS tags read them: `res.send = function send() {}`,
    # `View.prototype.lookup = ...` (a method), `{ onReset: (e) => {} }`, a class field `handleEvent = () => {}`
    "assignment_expression": "function",
    "pair": "function",
    "public_field_definition": "method",
    "field_definition": "method",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
}

SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        defs={"function_definition": "function", "class_definition": "class"},
        descend=frozenset({
            "block", "decorated_definition", "if_statement", "elif_clause", "else_clause", "for_statement",
            "while_statement", "try_statement", "except_clause", "except_group_clause", "finally_clause",
            "with_statement", "match_statement", "case_clause", "ERROR",
        }),
    ),
    "javascript": LanguageSpec(defs=_JS_DEFS),
    # `namespace util { ... }` names what it holds (`util.assertNever`), as a C# namespace does
    "typescript": LanguageSpec(defs=_JS_DEFS, namespaces=frozenset({"internal_module"})),
    "tsx": LanguageSpec(defs=_JS_DEFS, namespaces=frozenset({"internal_module"})),
    "go": LanguageSpec(
        defs={
            "function_declaration": "function",
            "method_declaration": "method",
            "type_spec": "type",
            "const_spec": "constant",
            "var_spec": "constant",  # a package-level `var ErrNotFound = errors.New(...)` (parse skips locals)
            "method_elem": "method",  # an interface's method
        },
        wrappers=frozenset({"type_declaration", "const_declaration", "var_declaration"}),
    ),
    "rust": LanguageSpec(
        defs={
            "function_item": "function",
            "function_signature_item": "function",
            "struct_item": "struct",
            "enum_item": "enum",
            "trait_item": "trait",
            "mod_item": "module",
            "const_item": "constant",
            "static_item": "constant",
            "type_item": "type",
            "union_item": "struct",
            "macro_definition": "function",
        },
        scopes={"impl_item": "type"},
        comment_types=frozenset({"line_comment", "block_comment"}),
        doc_skip=frozenset({"attribute_item"}),  # `/// Doc` then `#[derive(Debug)]` then the item
    ),
    "java": LanguageSpec(
        defs={
            "class_declaration": "class",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "record_declaration": "class",
            "annotation_type_declaration": "interface",
            "method_declaration": "method",
            "constructor_declaration": "method",
        },
        comment_types=frozenset({"line_comment", "block_comment"}),
    ),
    "c": LanguageSpec(
        defs={
            "function_definition": "function",
            "struct_specifier": "struct",
            "union_specifier": "struct",
            "enum_specifier": "enum",
            "type_definition": "type",
            "preproc_def": "constant",
            "preproc_function_def": "function",
        },
    ),
    "cpp": LanguageSpec(
        defs={
            "function_definition": "function",
            "class_specifier": "class",
            "struct_specifier": "struct",
            "union_specifier": "struct",
            "enum_specifier": "enum",
            "type_definition": "type",
            "alias_declaration": "type",
            "preproc_def": "constant",
            "preproc_function_def": "function",
        },
        namespaces=frozenset({"namespace_definition"}),
    ),
    "csharp": LanguageSpec(
        defs={
            "class_declaration": "class",
            "interface_declaration": "interface",
            "struct_declaration": "struct",
            "enum_declaration": "enum",
            "record_declaration": "class",
            "method_declaration": "method",
            "constructor_declaration": "method",
        },
        namespaces=frozenset({"namespace_declaration", "file_scoped_namespace_declaration"}),
    ),
    "ruby": LanguageSpec(
        defs={"method": "function", "singleton_method": "function", "class": "class", "module": "module"},
    ),
    "php": LanguageSpec(
        namespaces=frozenset({"namespace_definition"}),  # `namespace Symfony\Component\Console;` names the file's classes
        defs={
            "function_definition": "function",
            "class_declaration": "class",
            "interface_declaration": "interface",
            "trait_declaration": "trait",
            "enum_declaration": "enum",
            "method_declaration": "method",
        },
    ),
    "kotlin": LanguageSpec(
        defs={
            "class_declaration": "class",
            "object_declaration": "class",
            "function_declaration": "function",
            "type_alias": "type",
        },
        comment_types=frozenset({"line_comment", "multiline_comment"}),
        name_types=frozenset({"type_identifier", "simple_identifier"}),
        body_types=frozenset({"class_body", "enum_class_body", "function_body"}),
        param_types=frozenset({"function_value_parameters", "primary_constructor"}),
        keyword_kinds={"interface": "interface", "enum": "enum"},
    ),
    "swift": LanguageSpec(
        defs={
            "class_declaration": "class",
            "protocol_declaration": "interface",
            "function_declaration": "function",
            "protocol_function_declaration": "method",
            "init_declaration": "method",
            "typealias_declaration": "type",
        },
        comment_types=frozenset({"comment", "multiline_comment"}),
        param_items=frozenset({"parameter"}),
        fixed_names={"init_declaration": "init"},
        keyword_kinds={"struct": "struct", "enum": "enum", "actor": "class", "extension": "class"},
    ),
    "scala": LanguageSpec(
        defs={
            "class_definition": "class",
            "object_definition": "class",
            "trait_definition": "trait",
            "enum_definition": "enum",
            "function_definition": "function",
            "function_declaration": "function",
            "type_definition": "type",
        },
        comment_types=frozenset({"comment", "block_comment"}),
    ),
    "lua": LanguageSpec(defs={"function_declaration": "function"}),
    "elixir": LanguageSpec(
        defs={"call": "function"},  # `defmodule` / `def` / ... are calls: parse reads the called name
        function_kinds_in_container="function",
        body_types=frozenset({"do_block"}),
    ),
    "haskell": LanguageSpec(
        defs={
            "function": "function",
            "bind": "function",
            "data_type": "type",
            "newtype": "type",
            "type_synomym": "type",  # sic: the grammar's spelling
            "class": "interface",
            "instance": "class",
        },
        comment_types=frozenset({"comment", "haddock"}),
        body_types=frozenset({"match"}),
        param_types=frozenset({"patterns"}),
        doc_skip=frozenset({"signature"}),
    ),
    "zig": LanguageSpec(
        defs={"Decl": "function", "TestDecl": "function"},  # a Decl is a function or a struct/enum/union constant
        comment_types=frozenset({"doc_comment", "line_comment"}),
        body_types=frozenset({"Block"}),
    ),
    "dart": LanguageSpec(
        defs={
            "class_definition": "class",
            "mixin_declaration": "class",
            "extension_declaration": "class",
            "enum_declaration": "enum",
            "function_signature": "function",
            "method_signature": "method",
        },
        comment_types=frozenset({"comment", "documentation_comment"}),
        name_types=frozenset({"identifier"}),
        body_types=frozenset({"class_body", "extension_body"}),
        param_types=frozenset({"formal_parameter_list"}),
        body_sibling=frozenset({"function_body"}),
    ),
    "objc": LanguageSpec(
        defs={
            "class_interface": "class",
            "class_implementation": "class",
            "category_interface": "class",
            "category_implementation": "class",
            "protocol_declaration": "interface",
            "method_declaration": "method",
            "method_definition": "method",
            "function_definition": "function",
            "struct_specifier": "struct",
            "enum_specifier": "enum",
            "type_definition": "type",
            "preproc_def": "constant",
        },
        name_types=frozenset({"identifier"}),
        body_types=frozenset({"compound_statement"}),
        param_items=frozenset({"method_parameter"}),
        wrappers=frozenset({"implementation_definition"}),
    ),
    "bash": LanguageSpec(defs={"function_definition": "function"}),
    "markdown": LanguageSpec(defs={"section": "section"}, comment_types=frozenset()),
    "html": LanguageSpec(
        defs={"element": "element", "script_element": "element", "style_element": "element"},
    ),
    "css": LanguageSpec(
        defs={"rule_set": "rule", "media_statement": "rule", "keyframes_statement": "rule"},
    ),
}

HTML_LANDMARKS = frozenset({"header", "nav", "main", "footer", "section", "article", "aside", "form", "template"})

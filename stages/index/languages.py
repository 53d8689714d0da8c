"""Which files Assay reads, and how each tree-sitter grammar names its definitions."""

from __future__ import annotations

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
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
    ".html": "html", ".htm": "html",
    ".css": "css",
}

# other text indexed as line windows
WINDOW_EXTENSIONS: dict[str, str] = {
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json", ".sql": "sql",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ini": "ini", ".cfg": "ini",
    ".txt": "text", ".rst": "rst", ".xml": "xml", ".gradle": "gradle", ".tf": "terraform",
    ".proto": "proto", ".graphql": "graphql", ".env": "dotenv",
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


def uses_tree_sitter(language: str) -> bool:
    return language in set(TREE_SITTER_EXTENSIONS.values())


@dataclass(frozen=True)
class LanguageSpec:
    """Node types that define entities, and node types that only scope names (like Rust `impl`)."""

    defs: dict[str, str]
    scopes: dict[str, str] = field(default_factory=dict)  # node type -> field holding the scope name
    comment_types: frozenset[str] = frozenset({"comment"})
    function_kinds_in_container: str = "method"
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
    "variable_declarator": "function",  # only when its value is a function (checked in parse)
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
    "typescript": LanguageSpec(defs=_JS_DEFS),
    "tsx": LanguageSpec(defs=_JS_DEFS),
    "go": LanguageSpec(
        defs={
            "function_declaration": "function",
            "method_declaration": "method",
            "type_spec": "type",
            "const_spec": "constant",
        },
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
            "namespace_definition": "module",
            "preproc_def": "constant",
            "preproc_function_def": "function",
        },
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
            "namespace_declaration": "module",
        },
    ),
    "ruby": LanguageSpec(
        defs={"method": "function", "singleton_method": "function", "class": "class", "module": "module"},
    ),
    "php": LanguageSpec(
        defs={
            "function_definition": "function",
            "class_declaration": "class",
            "interface_declaration": "interface",
            "trait_declaration": "trait",
            "enum_declaration": "enum",
            "method_declaration": "method",
        },
    ),
    "markdown": LanguageSpec(defs={"section": "section"}, comment_types=frozenset()),
    "html": LanguageSpec(
        defs={"element": "element", "script_element": "element", "style_element": "element"},
    ),
    "css": LanguageSpec(
        defs={"rule_set": "rule", "media_statement": "rule", "keyframes_statement": "rule"},
    ),
}

HTML_LANDMARKS = frozenset({"header", "nav", "main", "footer", "section", "article", "aside", "form", "template"})

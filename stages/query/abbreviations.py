"""Programmers' abbreviations in file and folder names, and the words a question uses for them: "formatting
values" asks for `fmt.zig`, "arbitrary precision integer arithmetic" for `big/int.zig`, "the request context"
for `ctx.go`. The stemmer cannot see that `fmt` is `format`.

Only names that mean one thing in code are listed. Left out: layout folders every file shares (`src`, `lib`,
`std`), names a language gives its own files (`__init__`, Rust's `mod.rs`), the docs tree (its own penalty), and
names with several meanings (`res`: result, resource or response; `temp`; `re`; `id`).
"""

from __future__ import annotations

from functools import lru_cache

from assay.stages.index.tokens import tokenize

# abbreviation (as a file or folder name writes it) -> the words it stands for
WORDS: dict[str, str] = {
    "addr": "address", "arg": "argument", "args": "arguments", "async": "asynchronous", "attr": "attribute",
    "attrs": "attributes", "auth": "authentication authorization", "buf": "buffer", "calc": "calculate", "cb": "callback",
    "cfg": "configuration config", "char": "character", "chars": "characters", "cmd": "command", "cmp": "compare",
    "col": "column", "cols": "columns", "conf": "configuration config", "config": "configuration", "conn": "connection",
    "ctrl": "control controller", "ctx": "context", "db": "database", "decl": "declaration", "dep": "dependency",
    "deps": "dependencies", "dest": "destination", "dict": "dictionary", "dir": "directory", "dst": "destination",
    "elem": "element", "env": "environment", "err": "error", "errs": "errors", "eval": "evaluate evaluation",
    "exc": "exception", "expr": "expression", "ext": "extension", "fmt": "format", "fn": "function", "func": "function",
    "gen": "generate generator", "hdr": "header", "ident": "identifier", "idx": "index", "img": "image",
    "impl": "implementation", "info": "information", "int": "integer", "lang": "language", "len": "length",
    "mem": "memory", "mgr": "manager", "msg": "message", "msgs": "messages", "net": "network", "num": "number",
    "obj": "object", "op": "operator operation", "ops": "operators operations", "opt": "option", "opts": "options",
    "param": "parameter", "params": "parameters", "pkg": "package", "pos": "position", "prev": "previous",
    "proc": "process procedure", "prop": "property", "props": "properties", "ptr": "pointer", "rand": "random",
    "recv": "receive", "regex": "regular expression", "repo": "repository", "req": "request", "resp": "response",
    "ret": "return", "sched": "scheduler schedule", "seq": "sequence", "spec": "specification", "srv": "server",
    "stmt": "statement", "str": "string", "svc": "service", "sync": "synchronize synchronous", "sys": "system",
    "tbl": "table", "tmp": "temporary", "tok": "token", "tx": "transaction", "val": "value", "vals": "values",
    "var": "variable", "vars": "variables", "ver": "version", "ws": "websocket",
}


@lru_cache(maxsize=1)
def _expansions() -> dict[str, frozenset[str]]:
    """The abbreviations as the lexical index stems them (`args` -> `arg`), each to its words' stems."""
    found: dict[str, set[str]] = {}
    for short, words in WORDS.items():
        for token in tokenize(short):
            found.setdefault(token, set()).update(tokenize(words))
    return {token: frozenset(stems) for token, stems in found.items()}


def expansions(term: str) -> frozenset[str]:
    """The stems of the words a stemmed abbreviation stands for (none for other terms)."""
    return _expansions().get(term, frozenset())

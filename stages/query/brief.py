"""Project brief: an orientation document built from the index, byte-stable while the project is.

Sections: purpose (README or package metadata), entry points (declared scripts, `__main__` guards, `main`
functions), main packages and their roles (top folders, with their module docstrings), key classes (the
most used, by the code graph), how to run the tests, and where configuration lives. No LLM, no clock:
the same index gives the same bytes, so an agent can put the brief at the start of its prompt and keep
the provider's prefix cache warm. It is rewritten only when its inputs change (a fingerprint of them is
kept beside it), and the agent's corrections (`update_brief`) are kept verbatim at the end of every version.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from assay.stages.core.workspace import state_dir, state_writable
from assay.stages.index.languages import NOTEBOOK, SPECS, WINDOW_FILENAMES, language_for
from assay.stages.query.graph import Graph, sites

if TYPE_CHECKING:
    from assay.stages.core.artifacts import Entity
    from assay.stages.core.llm_clients import ChatResult

BRIEF_FILE = "brief.md"
CORRECTIONS_FILE = "brief_corrections.md"
FINGERPRINT_FILE = "brief.fingerprint"
_CONFIG_NAME = re.compile(r"(^|/)(settings|config|configuration|conf)\.(py|ts|js|go|rs|java)$|(^|/)[^/]*\.(toml|ini|cfg|ya?ml)$|"
                          r"(^|/)\.env\.example$|(^|/)(Dockerfile|docker-compose\.ya?ml|prefect\.yaml)$")
# a project's own configuration by its well-known names: listed first, then config-like files by depth (an MLflow
# `mlruns/` holds a `meta.yaml` per run, and in path order they pushed `pyproject.toml` out of the list)
_PROJECT_CONFIG = re.compile(r"(pyproject\.toml|setup\.cfg|setup\.py|tox\.ini|package\.json|Cargo\.toml|go\.mod|"
                             r"environment\.ya?ml|requirements[^/]*\.txt|Pipfile|pom\.xml|build\.gradle(\.kts)?)")
CONFIG_LISTED = 12
_TEST_DIR = re.compile(r"(^|/)(tests?|testing|__tests__|spec)/")
# a file is code when the index read it in a programming language: every language it parses into definitions
# (markup and style sheets aside), and those it reads as line windows only, so a Perl or Julia project has code too
_WINDOWED_CODE = frozenset({"batch", "clojure", "cuda", "cython", "elisp", "elm", "erlang", "fsharp", "groovy", "julia",
                            "nim", "ocaml", "perl", "powershell", "r", "shell", "svelte", "vue"})
CODE_LANGUAGES = (frozenset(SPECS) - {"markdown", "html", "css"}) | _WINDOWED_CODE
_CLASS_KINDS = ("class", "struct", "interface", "trait")
_USE_KINDS = ("call", "import", "inherit", "ref")  # the sites `assay references` lists
KEY_CLASSES = 10
# name-matching sites resolved for the key classes, at most: resolving is per site (0.1-0.5 ms each), and the
# brief is rebuilt on every call; past it, the classes not yet counted are ranked by their methods, uncounted
MAX_RESOLVED_SITES = 20_000


def _first_paragraph(text: str) -> str:
    paras = [p.strip() for p in re.split(r"\n\s*\n", text)]
    for p in paras:
        if not p or p.startswith(("#", "=", "[!", "<", "!", "|", "```", "[![", "..")) or set(p) <= set("=-~*#"):
            continue
        return " ".join(p.split())[:600]
    return ""


def _metadata(root: Path) -> dict:
    """name, description, scripts and test commands from pyproject.toml / package.json / Cargo.toml / go.mod."""
    meta: dict = {"scripts": [], "tests": []}
    py = root / "pyproject.toml"
    if py.exists():
        try:
            data = tomllib.loads(py.read_text("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            data = {}
        project = data.get("project", {})
        meta.setdefault("name", project.get("name", ""))
        meta.setdefault("description", project.get("description", ""))
        meta["scripts"] += [f"`{k}` -> `{v}`" for k, v in sorted(project.get("scripts", {}).items())]
        if "pytest" in data.get("tool", {}) or (root / "tests").is_dir():
            meta["tests"].append("`python -m pytest`")
    pkg = root / "package.json"
    if pkg.exists():
        try:
            data = json.loads(pkg.read_text("utf-8"))
        except (ValueError, UnicodeDecodeError):
            data = {}
        meta.setdefault("name", data.get("name", ""))
        meta.setdefault("description", data.get("description", ""))
        bins = data.get("bin", {})
        meta["scripts"] += [f"`{k}` -> `{v}`" for k, v in sorted(bins.items())] if isinstance(bins, dict) else []
        if data.get("main"):
            meta["scripts"].append(f"main module `{data['main']}`")
        if "test" in data.get("scripts", {}):
            meta["tests"].append(f"`npm test` (`{data['scripts']['test']}`)")
    if (root / "Cargo.toml").exists():
        meta["tests"].append("`cargo test`")
    if (root / "go.mod").exists():
        meta["tests"].append("`go test ./...`")
    if (root / ".ci" / "run").exists():
        meta["tests"].append("`.ci/run`")
    if (root / "Makefile").exists() and re.search(r"^test:", (root / "Makefile").read_text("utf-8", "replace"), re.M):
        meta["tests"].append("`make test`")
    return meta


def _code_files(catalog, files: list[str]) -> dict[str, list[Entity]]:
    """Each code file outside the tests, in file order, with its entities. Code by the language the index read
    it in, whatever its extension (`.kt`, `.mjs`, `.hpp`) or lack of one (a `#!/bin/sh` script); build files
    (`Makefile`, `Gemfile`) are not code. Files whose name already says they are not code are not loaded."""
    code: dict[str, list[Entity]] = {}
    for f in files:
        name = f.rsplit("/", 1)[-1]
        if _TEST_DIR.search(f) or name in WINDOW_FILENAMES:
            continue
        known = language_for(name)
        if known is not None and known != NOTEBOOK and known not in CODE_LANGUAGES:
            continue
        entities = catalog.by_file(f)
        if any(e.language in CODE_LANGUAGES for e in entities):
            code[f] = entities
    return code


def _is_main(e: Entity, owners: dict[str, Entity]) -> bool:
    """A program's entry function: a top-level `main` (C, Go, Rust, Kotlin, Python...), or a `main` method the
    runtime calls on its class: static in Java and C# (`Main`), `@JvmStatic` in Kotlin, in a Scala `object`."""
    if e.part != 0:
        return False
    if e.kind == "function" and e.parent is None:
        return e.name == "main"
    if e.kind != "method" or e.name not in ("main", "Main"):
        return False
    owner = owners.get(e.parent or "")
    in_object = owner is not None and re.match(r"(?:\w+\s+)*object\b", owner.signature) is not None
    return in_object or re.search(r"\bstatic\b|@JvmStatic\b", e.signature) is not None


def _entry_points(code: dict[str, list[Entity]]) -> list[str]:
    """Scripts (an extensionless file read by its `#!` line, a Python file with a `__main__` guard) and `main`s.
    The guard is module-level code: in the file entity, or in a top-level window when definitions surround it."""
    entry: list[str] = []
    for f, entities in code.items():
        guarded = not f.endswith(".ipynb") and any(
            e.kind in ("file", "window") and e.language == "python" and "__main__" in e.body for e in entities)
        if guarded or "." not in f.rsplit("/", 1)[-1]:
            entry.append(f"`{f}` (runs as a script)")
        owners = {e.qualname: e for e in entities if e.part == 0 and e.kind in _CLASS_KINDS}
        entry += [f"`{f}:{e.start_line}` `{e.name}`" for e in entities if _is_main(e, owners)]
    return entry


def _classes(code: dict[str, list[Entity]]) -> list[Entity]:
    """The classes, structs, interfaces and traits of the code, each once: an Objective-C `@interface` and its
    `@implementation`, a Swift type and its `extension` in the same file share a name and are one class here."""
    seen: dict[tuple[str, str], Entity] = {}
    for f, entities in code.items():
        for e in entities:
            if e.kind in _CLASS_KINDS and e.part == 0:
                seen.setdefault((f, e.qualname), e)
    return list(seen.values())


def _resolved_uses(catalog, classes: list[Entity], keep: int = KEY_CLASSES) -> dict[str, int]:
    """Sites that resolve to each class (by id), counted as `assay references` counts them, for the classes that
    can make the top `keep`. The edges named like a class bound its sites, so classes are resolved by that
    bound, highest first, until no class left can reach the `keep`-th count or the next would pass the budget of
    MAX_RESOLVED_SITES sites. Only a site that resolves is counted: a name match is no use of this class. The
    sites are those `references` lists (its `sites`), so the brief and the graph commands never disagree."""
    bound = dict(catalog.edge_name_counts(_USE_KINDS))
    graph = Graph(catalog)
    uses: dict[str, int] = {}
    best: list[int] = []  # the counts so far, highest first
    spent = 0
    for e in sorted(classes, key=lambda e: (-bound.get(e.name, 0), e.file, e.start_line)):
        most = bound.get(e.name, 0)
        spent += most
        if most == 0 or len(best) >= keep and most < best[keep - 1] or spent > MAX_RESOLVED_SITES:
            break
        uses[e.id] = len(sites(graph, e, _USE_KINDS, unresolved=False))
        best = sorted([*best, uses[e.id]], reverse=True)
    return uses


def _key_classes(code: dict[str, list[Entity]], classes: list[Entity], uses: dict[str, int]) -> list[Entity]:
    """The most used classes; those the graph cannot see used (a Go or Rust type is built and given methods, not
    called) by their methods, which every language declares: a type's methods say how central it is."""
    methods = Counter((e.language, e.parent) for entities in code.values() for e in entities
                      if e.part == 0 and e.kind in ("method", "function") and e.parent)
    ranked = sorted(classes, key=lambda e: (-uses.get(e.id, 0), -methods[(e.language, e.qualname)], e.file, e.start_line))
    return ranked[:KEY_CLASSES]


def build(root: Path, catalog, files: list[str]) -> str:
    """The brief's text from the workspace's metadata files and its index (catalog + file list)."""
    meta = _metadata(root)
    readme = next((root / n for n in ("README.md", "README.rst", "README.txt", "README") if (root / n).exists()), None)
    purpose = _first_paragraph(readme.read_text("utf-8", "replace")) if readme is not None else ""
    purpose = purpose or meta.get("description", "") or "(no README or package description found)"
    title = meta.get("name") or root.name
    code = _code_files(catalog, files)
    tests = sorted(f for f in files if _TEST_DIR.search(f))

    entry = list(meta["scripts"]) + _entry_points(code)
    packages: Counter[str] = Counter(f.split("/")[0] if "/" in f else "(top level)" for f in code)
    roles: list[str] = []
    for pkg, n in packages.most_common(8):
        doc = ""
        for candidate in (f"{pkg}/__init__.py", f"{pkg}/index.ts", f"{pkg}/index.js", f"{pkg}/mod.rs", f"{pkg}/lib.rs"):
            doc = next((e.docstring for e in catalog.by_file(candidate) if e.kind == "file" and e.docstring), "")
            if doc:
                break
        roles.append(f"- `{pkg}/` ({n} code files)" + (f": {_sentence(doc)}" if doc else ""))
    classes = _classes(code)
    uses = _resolved_uses(catalog, classes)
    key = [f"- `{e.qualname}` ({e.file}:{e.start_line}" + (f", used {uses[e.id]}x" if uses.get(e.id) else "") + ")"
           + (f": {_sentence(e.docstring)}" if e.docstring else "") for e in _key_classes(code, classes, uses)]
    config = _config_files(files)
    settings_classes = [f"`{e.qualname}` ({e.file}:{e.start_line})" for e in classes if re.search(r"(Settings|Config)$", e.name)][:5]

    lines = [f"# {title}: project brief", "", "## Purpose", purpose, "", "## Entry points"]
    lines += [f"- {x}" for x in dict.fromkeys(entry)] or ["- (none declared)"]
    lines += ["", "## Main packages"] + (roles or ["- (no code files indexed)"])
    lines += ["", "## Key classes (most used)"] + (key or ["- (none)"])
    lines += ["", "## Tests", f"{len(tests)} test file(s)" + (f", e.g. `{tests[0]}`" if tests else "") + "."]
    lines += [f"- run: {t}" for t in dict.fromkeys(meta["tests"])] or ["- run: (no test runner declared)"]
    lines += ["", "## Configuration"] + ([f"- `{c}`" for c in config] or ["- (no configuration files found)"])
    if settings_classes:
        lines.append("- settings classes: " + ", ".join(settings_classes))
    return "\n".join(lines) + "\n"


def _config_files(files: list[str]) -> list[str]:
    """Where configuration lives, the project's own first: shallower files before deeper ones, and at each depth
    the well-known project files (`pyproject.toml`, `package.json`, `requirements.txt`) before other config-like
    names, so generated run metadata deep in the tree cannot fill the list."""
    def project(path: str) -> bool:
        return _PROJECT_CONFIG.fullmatch(path.rsplit("/", 1)[-1]) is not None

    found = [f for f in files if (_CONFIG_NAME.search(f) or project(f)) and not _TEST_DIR.search(f)]
    return sorted(found, key=lambda f: (f.count("/"), not project(f), f))[:CONFIG_LISTED]


def _sentence(text: str) -> str:
    flat = " ".join(text.split())
    return (flat.split(". ", 1)[0].rstrip(".") + ".")[:200] if flat else ""


def brief_path(root: Path) -> Path:
    return state_dir(root) / BRIEF_FILE


def corrections(root: Path) -> str:
    path = state_dir(root) / CORRECTIONS_FILE
    return path.read_text("utf-8") if path.exists() else ""


def with_corrections(text: str, fixes: str) -> str:
    return text if not fixes.strip() else text + "\n## Corrections (from the agent, kept verbatim)\n" + fixes.rstrip("\n") + "\n"


BRIEF_SYSTEM = (
    "You edit orientation briefs that coding agents read before working in a repository. Rewrite the brief you are "
    "given into clear, compact Markdown for that reader. Keep every fact, name, path, number and command exactly as "
    "written; add nothing that is not in it; keep its section headings. Reply with the brief only."
)
Writer = Callable[[str, str], "ChatResult"]  # (system, user) -> reply; an Ollama or cloud chat bound to a model


def refresh(root: Path, catalog, files: list[str], writer: Writer | None = None, writer_name: str = "") -> tuple[str, bool, list]:
    """The current brief, rebuilt only when its inputs changed; returns (text, rewritten, model calls).

    With a `writer`, the deterministic brief is rewritten by that model once per change of its source (the
    fingerprint covers the source and the writer's name), so the text stays byte-stable between changes; the
    agent's corrections are appended after the rewrite, verbatim, never passed through the model."""
    source = build(root, catalog, files)
    fixes = corrections(root)
    digest = hashlib.sha256("\0".join([source, fixes, writer_name if writer else ""]).encode()).hexdigest()
    folder = state_dir(root)
    stamp, path = folder / FINGERPRINT_FILE, folder / BRIEF_FILE
    if path.exists() and stamp.exists() and stamp.read_text(encoding="utf-8").strip() == digest:
        return path.read_text("utf-8"), False, []
    calls = []
    body = source
    if writer is not None:
        reply = writer(BRIEF_SYSTEM, source)
        calls.append(reply)
        body = reply.text.strip() + "\n" if reply.text.strip() else source
    text = with_corrections(body, fixes)
    if state_writable(root):  # an index mounted read-only: the brief is built each time instead of kept
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        stamp.write_text(digest, encoding="utf-8")
    return text, True, calls


def add_correction(root: Path, note: str) -> None:
    """Keep an agent's correction verbatim; it ends every later version of the brief."""
    note = note.strip()
    if not note:
        raise ValueError("the correction is empty: say what the brief gets wrong, e.g. --correct \"Tests run with tox\"")
    path = state_dir(root) / CORRECTIONS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [line.rstrip() for line in note.splitlines()]
    item = "- " + "\n  ".join(lines) + "\n"
    if _has_item(path, item):  # a retried `update_brief` or a re-run script: the correction is there already
        return
    with path.open("a", encoding="utf-8") as fh:  # later lines indented into the item: they cannot start a heading
        fh.write(item)


def _has_item(path: Path, item: str) -> bool:
    """Whether the corrections file already holds this exact item (a multi-line item counts whole)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    items = re.split(r"(?m)^(?=- )", text)
    return item in items


def workspace_brief(root: Path, correction: str | None = None, writer: Writer | None = None,
                    writer_name: str = "") -> tuple[str, bool, list]:
    """The brief of an indexed workspace (adding a correction first, when given): the doors call this."""
    from assay.stages.index.store import Catalog, require_manifest

    require_manifest(root)
    if correction is not None:
        add_correction(root, correction)
    catalog = Catalog(root)
    try:
        return refresh(root, catalog, catalog.files(), writer, writer_name)
    finally:
        catalog.close()


def redacting(chat: Writer) -> Writer:
    """`chat` for a cloud writer: the brief is redacted before it leaves (its Purpose quotes the README, which may hold
    keys), as every cloud-bound text is, and the rewrite then says how many secrets were, as an ask report does."""
    from assay.stages.core.redact import redact

    def write(system: str, user: str) -> ChatResult:
        sent, redactions = redact(user)
        reply = chat(system, sent)
        if redactions and reply.text.strip():  # an empty reply keeps the local brief, which nothing redacted
            reply.text = f"{reply.text.strip()}\n\nsecurity: {redactions} secret(s) were redacted before the cloud call\n"
        return reply

    return write


def run_brief(root: Path, settings, writer_kind: str | None = None, correction: str | None = None) -> tuple[str, bool]:
    """The doors' entry: the brief, optionally rewritten by the Ollama or cloud writer (local mode allows only a
    loopback Ollama), with the writer's calls recorded in the usage ledger."""
    from assay.stages.query.ledger import prices_from, record_calls

    writer: Writer | None = None
    name = ""
    if writer_kind in ("ollama", "cloud"):
        from assay.stages.query.judge.backends import cloud_backend, ollama_backend
        from assay.stages.core.llm_clients import LLMError, require_loopback

        if writer_kind == "cloud":
            if settings.mode == "local":
                raise LLMError("local mode: the cloud writer is not allowed; use --writer ollama or ASSAY_MODE=hybrid")
            backend, model = cloud_backend(settings), settings.cloud_model
            writer = redacting(lambda system, user: backend.chat(model, system, user))
        else:
            require_loopback(settings.ollama_host, "Ollama") if settings.mode == "local" else None
            backend, model = ollama_backend(settings), settings.ollama_synth_model
            writer = lambda system, user: backend.chat(model, system, user)  # noqa: E731
        name = f"{writer_kind}:{model}"
    elif writer_kind not in (None, "", "none"):
        raise ValueError(f"unknown brief writer {writer_kind!r}; use ollama, cloud or none")
    text, rewritten, replies = workspace_brief(root, correction, writer, name)
    if replies:
        calls = [r.as_call("brief", writer_kind or "") for r in replies]
        record_calls(root, "brief-" + hashlib.sha256(text.encode()).hexdigest()[:12], calls, prices_from(settings.prices))
    return text, rewritten

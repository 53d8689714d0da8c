"""`assay mcp`: a stdio MCP server (official SDK) that is the IDE agent's door into the flows.

One warm process per IDE: Prefect, Chroma and the embedder load once. Its flows run on Prefect: the API
PREFECT_API_URL or `assay server` names, else a private one it starts in the background at a lower CPU
priority; tool calls run the same stages directly until that answers, so the first call never waits for a
server start (`flows.prefect_api`). Blocking work runs in worker threads so the server keeps answering
(index_status works while indexing). Every
tool takes a workspace path, resolved to its real path and checked against the allowed roots
(ASSAY_ALLOWED_ROOTS, default: the server's working directory), so results never cross
workspaces and `..` or symlink tricks are refused.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, NotificationParams, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from assay.flows import runtime  # noqa: F401
from assay.stages.core import registry
from assay.stages.core.errors import one_line
from assay.stages.core import progress as prog
from assay.stages.core.config import Settings, variable_error
from assay.stages.core.fs_names import on_disk
from assay.stages.core.path_roles import is_build_output
from assay.stages.core.workspace import (WorkspaceError, check_allowed, inside, owns_collection, parse_roots,
                                         refuse_assay_home, resolve_workspace, state_dir)
from assay.stages.core.visible import visible

if TYPE_CHECKING:
    from assay.stages.core.artifacts import Entity
    from assay.stages.index.store import Catalog

INSTRUCTIONS = (
    "Assay is this workspace's code memory. Call index_workspace once (it returns at once; poll index_status), "
    "then use search for cheap lookups and ask for judged, cited answers. Every answer carries receipts "
    "(file:line, scores, verdicts); cite them. Use get_entity to read an exact source span, and remember to "
    "store decisions and conventions verbatim."
)


def _shown(value: Any) -> str:
    """A rejected value as the error quotes it: short, on one line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def invalid_argument(err: Any) -> str:
    """One pydantic error (an argument of the wrong type or out of range) in the words of the argument it names."""
    name = str(err["loc"][0]) if err.get("loc") else "arguments"
    kind, got, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind == "missing":
        return f"{name} is required"
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        listed = ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else "".join(choices)
        return f"unknown {name} {_shown(got)}; use {listed}"
    if kind.startswith("int_"):
        return f"{name} must be an integer (got {_shown(got)})"
    if kind.startswith(("float_", "decimal_")):
        return f"{name} must be a number (got {_shown(got)})"
    if kind.startswith("bool_"):
        return f"{name} must be true or false (got {_shown(got)})"
    if kind.startswith("string_"):
        return f"{name} must be a string (got {_shown(got)})"
    if kind == "greater_than_equal":
        return f"{name} must be {ctx.get('ge')} or more (got {_shown(got)})"
    if kind == "less_than_equal":
        return f"{name} must be {ctx.get('le')} or less (got {_shown(got)})"
    return f"{name}: {str(err.get('msg', 'invalid')).lower()} (got {_shown(got)})"


def invalid_arguments(exc: ValidationError) -> str:
    """Every rejected argument in one line, the first complaint per argument (a union's branches repeat it)."""
    said: dict[str, str] = {}
    for err in exc.errors():
        said.setdefault(str(err["loc"][0]) if err.get("loc") else "", invalid_argument(err))
    return "; ".join(said.values()) or "invalid arguments"


class AssayServer(MCPServer):
    """The SDK's server, with its argument validation answered like every other Assay error: one line, isError,
    and `{"error": ...}` in the structured content (the SDK's own text is pydantic's multi-line report and a URL)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        unknown = unknown_arguments(name, self._tool_input_schema(name), arguments)
        if unknown:  # pydantic drops an unknown argument without a word: `top_k` for `k` was a silent no-op
            return failure(ValueError(unknown))
        if context is not None:
            await learn_client_roots(context)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return failure(ValueError(invalid_arguments(exc.__cause__)))
            raise

    async def list_tools(self) -> list[Any]:
        """The tools with input schemas a strict validator takes (`strict_schema`)."""
        return [t.model_copy(update={"input_schema": strict_schema(t.input_schema)}) for t in await super().list_tools()]

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        """An unknown prompt is Invalid params (-32602) in one line: the SDK raised a ValueError, which went out as
        error code 0 with a ~50-line traceback in the IDE's log."""
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name!r} (this server has no prompts)")
        return await super().get_prompt(name, arguments, context)

    async def run_stdio_async(self) -> None:
        """The SDK's stdio loop, with a reply to every line it cannot read (`flows.mcp_wire`)."""
        from mcp.server.stdio import stdio_server

        from assay.flows.mcp_wire import answering

        async with stdio_server() as (read_stream, write_stream), answering(read_stream, write_stream) as answered:
            await self._lowlevel_server.run(answered, write_stream, self._lowlevel_server.create_initialization_options())


def unknown_arguments(tool: str, schema: dict[str, Any] | None, arguments: dict[str, Any]) -> str:
    """One line naming the arguments the tool does not take and the ones it does ('' when all are known)."""
    if schema is None:  # an unknown tool: the SDK says so
        return ""
    valid = list(schema.get("properties") or {})
    unknown = [a for a in arguments if a not in valid]
    if not unknown:
        return ""
    return (f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; {tool} takes "
            + (", ".join(valid) or "no arguments"))


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema as strict validators (OpenAI strict mode, Gemini's function declarations) take it: no
    pydantic titles, `Optional[X] = None` as plain X (null stays accepted by the server: it means the default), and
    additionalProperties false (the server refuses unknown arguments)."""
    props = {}
    for name, prop in (schema.get("properties") or {}).items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        branches = prop.pop("anyOf", None)
        if branches is not None:
            kept = [b for b in branches if b.get("type") != "null"]
            prop = {**(kept[0] if len(kept) == 1 else {"anyOf": kept}), **prop}
        if prop.get("default", 0) is None:
            del prop["default"]
        props[name] = prop
    strict = {k: v for k, v in schema.items() if k not in ("title", "properties")}
    return {**strict, "type": "object", "properties": props, "additionalProperties": False}


def _version() -> str:
    """The installed package's version, which a client shows beside the server's name."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("assay")
    except PackageNotFoundError:
        return ""


server = AssayServer("assay", instructions=INSTRUCTIONS, version=_version())
server._lowlevel_server.add_notification_handler("notifications/roots/list_changed", NotificationParams,
                                                 lambda ctx, params: _roots_changed(ctx, params))
# the SDK puts an INFO handler on the root logger: httpx then logged every Prefect API request (~10 a tool call)
# to the IDE's MCP log
for _chatty in ("httpx", "httpcore"):
    logging.getLogger(_chatty).setLevel(logging.WARNING)
_jobs: dict[str, threading.Thread] = {}
_jobs_lock = threading.Lock()


def _choices(setting: str) -> tuple[str, ...]:
    """The values a Literal setting takes, read from Settings: the schema's enum and the server's check agree."""
    return get_args(Settings.model_fields[setting].annotation)


# Tool arguments as the schema describes them to an agent; bounds are the ones the server enforces.
from assay.stages.query.git_history import HISTORY_LIMIT_MAX  # noqa: E402 - light modules, needed for the bounds
from assay.stages.query.graph import MAX_DEPTH  # noqa: E402

SEARCH_K_MAX = 100
GRAPH_LIMIT_MAX = 500
ENTITY_TOKENS = 4000  # get_entity's default budget: a long class or function a page at a time (~150 lines)
BRIEF_WRITERS = ("ollama", "cloud", "none")  # what stages.query.brief.run_brief takes (it names no constant)
WorkspacePath = Annotated[str, Field(description=(
    "The workspace folder: an absolute path under the allowed roots (ASSAY_ALLOWED_ROOTS, else the client's roots, "
    "else the server's folder); a relative path resolves against the server's folder."))]
EntityName = Annotated[str, Field(description=(
    "A definition: `name`, `Class.method`, `path/to/file.py:name`, or a file:line receipt from search."))]
Question = Annotated[str, Field(description="The question about the code, in plain words.")]
Query = Annotated[str, Field(description="Words, a name, or a pasted error message, log line or stack frame.")]
SearchK = Annotated[int, Field(ge=1, le=SEARCH_K_MAX, description="How many results to return.")]
GraphLimit = Annotated[int, Field(ge=1, le=GRAPH_LIMIT_MAX, description="Most rows to return.")]
HistoryLimit = Annotated[int, Field(ge=1, le=HISTORY_LIMIT_MAX, description="Most commits to return.")]
Depth = Annotated[int, Field(ge=1, le=MAX_DEPTH, description="How many caller levels to follow.")]
Judge = Annotated[Literal[_choices("judge")] | None, Field(description=(
    "Passage judge backend (default: ASSAY_JUDGE, else local)."))]
Synth = Annotated[Literal[_choices("synth")] | None, Field(description=(
    "Answer writer backend (default: ASSAY_SYNTH, else extractive)."))]
Writer = Annotated[Literal[BRIEF_WRITERS] | None, Field(description=(
    "Have this model rewrite the brief (once per change); none (the default): as built."))]
Rebuild = Annotated[bool, Field(description="Re-index every file from scratch instead of only the changed ones.")]
Outline = Annotated[bool, Field(description="Signatures and locations only, no bodies.")]
Since = Annotated[str, Field(description="A commit, branch or tag to compare against.")]
EntityFile = Annotated[str | None, Field(description=(
    "Workspace-relative file path (or a file:line receipt); with line, the innermost definition there."))]
EntityLine = Annotated[int | None, Field(ge=1, description="A line of file (1-based).")]
EntityByName = Annotated[str | None, Field(description=(
    "A (qualified) name, `file.py:name`, or a note's id (note-...); with file, only definitions in that file."))]
FromLine = Annotated[int, Field(ge=0, description=(
    "Start the source at this line of the file (inside the entity): to read on after a cut reply; 0: its first line."))]
NoteText = Annotated[str, Field(description="The note, stored verbatim (a decision, a convention).")]
Correction = Annotated[str, Field(description="The correction, kept verbatim in every later brief.")]


def _budget_arg(default: str) -> Any:
    return Annotated[int | None, Field(ge=0, description=(
        f"Token budget of the reply, text and structured content each (default: {default}); 0: no limit. "
        "What does not fit is cut, and the reply says how much."))]


AskTokens = _budget_arg("ASSAY_MAX_TOKENS, else 2000")
SearchTokens = _budget_arg("rows without bodies, within ASSAY_MAX_TOKENS, else 2000; given: whole entities best-first")
EntityTokens = _budget_arg(str(ENTITY_TOKENS))

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _settings(**overrides: Any) -> Settings:
    """Settings with the tool's overrides validated as the CLI's are (an unknown synth, a negative max_tokens:
    one-line errors); `model_copy(update=...)` would take them unchecked."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given) if given else Settings()
    except ValidationError as exc:
        raise ValueError(invalid_settings(exc, set(given))) from None


def invalid_settings(exc: ValidationError, arguments: set[str]) -> str:
    """A settings error in one line: a tool argument in its own name, a value from the environment by its variable
    in the CLI's words (`ASSAY_TOP_K: Input should be ...`): "top_k must be 1 or more" named no variable to fix."""
    said: dict[str, str] = {}
    for err in exc.errors():
        field = str(err["loc"][0]) if err.get("loc") else ""
        said.setdefault(field, invalid_argument(err) if field in arguments else variable_error(err))
    return "; ".join(said.values()) or "invalid settings"


def allowed_roots() -> list[Path]:
    """ASSAY_ALLOWED_ROOTS, else the client's MCP roots (its open folders), else the folder the server started in."""
    spec = os.environ.get("ASSAY_ALLOWED_ROOTS")
    if spec:
        return parse_roots(spec, Path.cwd())
    if _client_roots:
        return list(_client_roots)
    return [default_root()]


def default_root() -> Path:
    """The folder the server started in, refused when it is `/` or the home folder: Claude Desktop starts servers
    in `/`, and that default allowed every folder on the machine."""
    cwd = Path(os.path.realpath(Path.cwd()))
    try:
        home = Path(os.path.realpath(Path.home()))
    except RuntimeError:  # no HOME to resolve
        home = None
    if cwd == Path(cwd.anchor) or cwd == home:
        raise WorkspaceError(f"the server started in {cwd}, which would allow every folder under it: set "
                             "ASSAY_ALLOWED_ROOTS in its environment to your project folder(s), or start it in the "
                             "project folder")
    return cwd


_client_roots: list[Path] | None = None  # the client's roots (MCP `roots` capability); None: not asked or none given
_roots_asked = False  # reset when the client says its roots changed
ROOTS_TIMEOUT_S = 5.0


async def learn_client_roots(ctx: Context) -> None:
    """Ask the client for its roots (once, and again after `notifications/roots/list_changed`) when
    ASSAY_ALLOWED_ROOTS is unset and the client declares the `roots` capability: they become the allowed roots.
    A client that does not answer leaves the default (the server's folder)."""
    global _client_roots, _roots_asked
    if _roots_asked or os.environ.get("ASSAY_ALLOWED_ROOTS"):
        return
    _roots_asked = True
    try:
        capabilities = ctx.client_capabilities
    except Exception:  # noqa: BLE001 - no request context (an in-process call)
        return
    if capabilities is None or capabilities.roots is None:
        return
    from mcp.shared.message import ServerMessageMetadata
    from mcp_types import ListRootsRequest, ListRootsResult

    try:
        with anyio.fail_after(ROOTS_TIMEOUT_S):  # roots are deprecated in the 2026-07-28 spec; clients still send them
            # tied to this call: a connection opened at a 2026 protocol version has no channel of its own to ask on
            listed = await ctx.session.send_request(
                ListRootsRequest(), ListRootsResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_context.request_id))
    except Exception as exc:  # noqa: BLE001 - the default stays
        logging.getLogger(__name__).info("roots/list failed: %s", one_line(exc))
        return
    _client_roots = _roots_from_uris([str(r.uri) for r in listed.roots]) or None


def _roots_from_uris(uris: list[str]) -> list[Path]:
    """The local folders of `file://` root URIs (others name nothing this server can read)."""
    from urllib.parse import unquote, urlparse

    folders = []
    for uri in uris:
        parsed = urlparse(uri)
        if parsed.scheme == "file" and parsed.path:
            folders.append(Path(os.path.realpath(unquote(parsed.path))))
    return folders


async def _roots_changed(ctx: Any, params: Any) -> None:
    """The client's roots changed: ask again at the next tool call."""
    global _roots_asked, _client_roots
    _roots_asked, _client_roots = False, None


def workspace(path: str) -> Path:
    """Resolve and authorise a workspace path (one readable error when refused)."""
    return check_allowed(resolve_workspace(path), allowed_roots())


def result(text: str, data: dict[str, Any], error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data, is_error=error)


# The stages word their advice for the CLI (flags, `assay` commands); an MCP client has arguments and tools.
_MCP_WORDS = [
    (re.compile(r"\brun `assay index --rebuild`"), "call index_workspace with rebuild true"),
    (re.compile(r"\bRun `assay index --rebuild`"), "Call index_workspace with rebuild true"),
    (re.compile(r"\brun `assay index` or `assay watch`"), "call index_workspace"),
    (re.compile(r"\brun `assay index`"), "call index_workspace"),
    (re.compile(r"\bRun `assay index`"), "Call index_workspace"),  # the BM25-missing note: "Run `assay index` (it rebuilds it)"
    (re.compile(r"\btry `assay search [^`\n]*`"), "try the search tool"),
    (re.compile(r"\bassay search (\"[^\"\n]*\")"), r"the search tool, query \1"),  # `missing:`'s "look up its definition"
    (re.compile(r"\(see --json ([\w.]+)\)"), r"(see \1 in the structured content)"),
    (re.compile(r"\bsee --json\b"), "see the structured content"),
    (re.compile(r"\buse --json\b"), "read the structured content"),
    # the structured content is cut to max_tokens too: only a larger budget shows more
    (re.compile(r"\ba larger --max-tokens \(--json prints them all\)"), "a larger max_tokens (0: no limit)"),
    (re.compile(r"\(raise --(limit|depth)\)"), r"(raise \1)"),
]
_MCP_FLAGS = [  # bare flags: only in an error's one line, which quotes no source
    (re.compile(r"(?<![\w-])--(limit|depth)\b"), r"\1"),
    (re.compile(r"\be\.g\. --correct "), "e.g. correction: "),
    (re.compile(r"\buse --writer (\w+)"), r"use writer \1"),
    (re.compile(r"\buse --(judge|guard|synth) "), r"use \1 "),  # local mode refusing a cloud backend
]


def mcp_words(text: str, flags: bool = False) -> str:
    """Assay's own advice in MCP terms (`assay index` -> index_workspace; with `flags`, `--limit` -> `limit` too).
    Only for lines Assay writes (errors, index notes, a report's advice): a note or code a report quotes may hold
    these very phrases, and it must stay verbatim (ask passes this to the report's renderer instead)."""
    for pattern, words in _MCP_WORDS + (_MCP_FLAGS if flags else []):
        text = pattern.sub(words, text)
    return text


def failure(exc: BaseException) -> CallToolResult:
    msg = mcp_words(one_line(exc), flags=True)
    if os.environ.get("ASSAY_DEBUG"):
        msg += "\n" + traceback.format_exc()
    return result(f"error: {msg}", {"error": msg}, error=True)


async def _run(fn, ctx: Context | None, label: str, *args: Any) -> Any:
    """Run blocking work in a thread, sending a progress notification every second (keeps clients' timers alive)."""
    done = anyio.Event()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001
            outcome["error"] = exc

    async def runner() -> None:
        await anyio.to_thread.run_sync(work)
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(runner)
        ticks = 0
        while not done.is_set():
            with anyio.move_on_after(1.0):
                await done.wait()
            if not done.is_set() and ctx is not None:
                ticks += 1
                try:
                    await ctx.report_progress(ticks, None, f"{label}: {ticks}s")
                except Exception:  # noqa: BLE001 - a client without a progress token
                    pass
    if "error" in outcome:
        error = outcome["error"]
        if isinstance(error, (Exception, KeyboardInterrupt, SystemExit)):
            raise error
        # a Rust panic in Chroma's bindings (pyo3's PanicException is a BaseException): this call's error, not the
        # server's end (it passed every tool's `except Exception`, and the server exited)
        raise RuntimeError(f"{type(error).__name__}: {error}") from error
    return outcome.get("value")


@server.tool(description=(
    "Start indexing a workspace folder in the background and return at once. Re-indexing is incremental "
    "(only changed files). Poll index_status(path) for progress."),
             annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                         open_world_hint=False))
def index_workspace(path: WorkspacePath, rebuild: Rebuild = False) -> CallToolResult:
    from assay.flows.index import run_index

    try:
        root = workspace(path)
        settings = _index_settings()  # a bad setting is this call's error, not a run that never starts
        if not rebuild:  # before the status file: a newer Assay's index, and its last run, stay as they are
            from assay.flows.index import refuse_newer_index

            refuse_newer_index(root)
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    key = str(root)
    with _jobs_lock:
        job = _jobs.get(key)
        if job is not None and job.is_alive():
            return result(f"already indexing {root}; poll index_status", {"workspace": key, "state": "running"})
        try:
            status = prog.StatusSink(root)  # "running" in status.json before this returns
        except Exception as exc:  # noqa: BLE001 - a state folder it cannot use (a dangling or shared link, too deep)
            return failure(exc)

        def work() -> None:
            try:
                run_index(key, settings, rebuild=rebuild, status=status)  # it finishes the status, done or failed
                registry.register(root)
                from assay.flows.watch import ensure_watching

                ensure_watching(root, settings)  # keep it fresh from here on (ASSAY_WATCH=false turns this off)
            except BaseException as exc:  # noqa: BLE001 - the status file carries the error (a Rust panic in
                _fail_unfinished(status, exc)  # Chroma's bindings too: a BaseException, it printed a traceback)

        job = threading.Thread(target=work, name=f"index {key}", daemon=True)
        _jobs[key] = job
        job.start()
    return result(f"indexing started for {root}; poll index_status(path) for progress", {"workspace": key, "state": "running"})


def _index_settings() -> Settings:
    """The settings an index run uses, with the check `run_index` makes before its run begins (local mode: loopback
    stores only): what fails at once fails the call, not a background run."""
    from assay.stages.core.llm_clients import require_local_stores

    settings = _settings()
    require_local_stores(settings)
    return settings


def _fail_unfinished(status: prog.StatusSink, exc: BaseException) -> None:
    """A run that raised before `run_index` tracked it (a check at its start) left status.json "running" under this
    server's live pid, so index_status said "running" for as long as the server lived: end it "failed", with why."""
    if status.state.get("state") != "running":
        return  # `run_index` finished it, done or failed (a later step, the watcher, failed after it)
    try:  # a thread's uncaught error would only be a traceback on the server's stderr
        status.finish("failed", error=one_line(status.gone() or exc))
    except (OSError, WorkspaceError):  # a full disk or a deleted folder: nothing more to record
        pass


@server.tool(description="Progress of the latest index run of a workspace: files done/total, entities, ETA, last error.",
             annotations=READ_ONLY)
def index_status(path: WorkspacePath) -> CallToolResult:
    from assay.stages.index.incremental import dense_note
    from assay.stages.index.store import load_manifest

    try:
        root = workspace(path)
        state = prog.read_status(root)  # the file every door's index run writes (a dead run reads "interrupted")
        manifest = load_manifest(root)
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    pending = len(manifest.dense_pending) if manifest else 0
    view = prog.run_view(state)
    dense = f"; {dense_note(manifest)}" if pending and (view is None or view["state"] != "running") else ""
    if view is None:
        indexed = manifest is not None
        from assay.stages.core.workspace import unindexable_here

        why = "" if indexed else unindexable_here(root)  # a dangling `.assay` link, too deep, read-only: as `assay status`
        text = f"{root}: " + ("indexed, no run recorded" if indexed else f"not indexed, and {why}" if why
                              else "not indexed; call index_workspace") + dense
        return result(text, {"workspace": str(root), "state": "idle" if indexed else "not_indexed",
                             "entities": manifest.entity_count if manifest else 0, "dense_pending": pending})
    current = (state or {}).get("stages", {}).get(view["stage"], {})
    data = {
        **view, "workspace": str(root), "done": current.get("done", 0), "total": current.get("total", 0),
        "entities": view["summary"].get("entities", manifest.entity_count if manifest else 0), "dense_pending": pending,
    }
    return result(mcp_words(f"{root}: {prog.run_line(view)}{dense}"), data)


@server.tool(description=(
    "Answer a question about the code with file:line citations; every passage judged (relevance, evidence, "
    "false premises, injection) and a report of the verdicts. max_tokens bounds the text and the structured content "
    "each (default 2000)."),
    # it writes only Assay's own caches (judgments, the usage ledger); a cloud judge or writer reaches out
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
async def ask(question: Question, path: WorkspacePath, ctx: Context, judge: Judge = None, synth: Synth = None,
              max_tokens: AskTokens = None) -> CallToolResult:
    from assay.flows.query import run_query
    from assay.stages.query.report import report_text, with_guidance

    try:
        root = workspace(path)
        settings = _settings(judge=judge, synth=synth, max_tokens=_budget(max_tokens))  # 0: no limit (the report's rule)
        report = await _run(run_query, ctx, "answering", str(root), question, settings)
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    # re-rendered with Assay's advice in MCP terms; the answer, notes and code it quotes stay verbatim. The guidance
    # fields too, so the structured content says what the text says
    report = _missing_in_mcp_words(with_guidance(report, mcp_words))
    text, tokens = report_text(report, settings.max_tokens, words=mcp_words)
    data = report.model_dump(mode="json", exclude={"text"}) | {"tokens_returned": tokens}
    # without the passages' code bodies (the text cites them by file:line, get_entity reads them): with them, a
    # 200-token answer came with ~17k tokens of structured content
    return result(text, fit_data(_without(data, ("body",)), settings.max_tokens or None, details=_ROW_DETAILS,
                                 keep=_ASK_KEPT))


_ASK_KEPT = ("status", "answer", "selection.included", "trust", "action", "guidance")  # cut last: what the text leads with


def data_tokens(data: Any) -> int:
    """The structured content's size in tokens, as it goes over the wire (JSON)."""
    import json

    from assay.stages.query.budget import count_tokens

    return count_tokens(json.dumps(data, ensure_ascii=False))


def fit_data(data: dict[str, Any], budget: int | None, details: tuple[str, ...] = (),
             keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """The structured content within `budget` tokens (None: no limit): first without the `details` keys, then the
    largest list (its last items), map or long string (its end) is halved until it fits, the `keep` paths last;
    `cut` names each one cut and how much is missing."""
    import copy

    if budget is None or data_tokens(data) <= budget:
        return data
    data, missing = _without(copy.deepcopy(data), details), {}
    left_out = ", ".join(details)
    while data_tokens({**data, **_cut_notes(missing, left_out)}) > budget:
        found = next(filter(None, (_largest(data, "", records, skip) for skip in (keep, ())
                                   for records in (False, True))), None)  # records only when nothing else is left
        if found is None:
            break
        holder, key, path, value = found
        kept = len(value) // 2
        holder[key] = dict(list(value.items())[:kept]) if isinstance(value, dict) else value[:kept]
        unit = "character(s)" if isinstance(value, str) else "item(s)"
        missing[path] = (missing.get(path, (0, unit))[0] + len(value) - kept, unit)
        if not kept:  # emptied: what was cut inside it is in its count now
            missing = {p: n for p, n in missing.items() if not p.startswith((path + ".", path + "["))}
    return {**data, **_cut_notes(missing, left_out)}


CUT_NOTE = "cut to max_tokens (the last items of each list named in cut, the end of each string): ask with a larger max_tokens (0: no limit)"


def _cut_notes(missing: dict[str, tuple[int, str]], left_out: str = "") -> dict[str, Any]:
    """`cut`: each path cut and how much of it is not shown (`details`: the keys left out everywhere); `cut_note`:
    what to do about it."""
    cut = ({"details": f"left out everywhere: {left_out}"} if left_out else {}) | {
        path: f"{n} more {unit}" for path, (n, unit) in missing.items()}
    return {"cut": cut, "cut_note": CUT_NOTE} if cut else {"cut": {}}


def _is_map(value: Any) -> bool:
    """A dict used as a map (by id, by name: judgment scores, reasons, timings), which may lose entries; not a record
    whose fields a reader expects."""
    return isinstance(value, dict) and len(value) >= 6 and len({type(v) for v in value.values()}) == 1


def _without(data: Any, keys: tuple[str, ...]) -> Any:
    """`data` without the `keys` at any depth."""
    if isinstance(data, dict):
        return {k: _without(v, keys) for k, v in data.items() if k not in keys}
    if isinstance(data, list):
        return [_without(v, keys) for v in data]
    return data


def _largest(node: Any, path: str, records: bool = False, skip: tuple[str, ...] = ()) -> tuple[Any, Any, str, Any] | None:
    """(holder, key, path, value) of the largest list, map or long string under `node` that can still be halved
    (`records`: any non-empty dict too), outside the `skip` paths."""
    import json

    best: tuple[int, tuple[Any, Any, str, Any]] | None = None
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        where = f"{path}[{key}]" if isinstance(node, list) else f"{path}.{key}" if path else str(key)
        if where in skip:
            continue
        holds_kept = any(k.startswith((where + ".", where + "[")) for k in skip)  # not cut whole; inside it may be
        if not holds_kept and ((isinstance(value, list) and value) or (isinstance(value, str) and len(value) > 80)
                               or _is_map(value) or (records and isinstance(value, dict) and value)):
            size = len(json.dumps(value, ensure_ascii=False))
            if best is None or size > best[0]:
                best = (size, (node, key, where, value))
        if isinstance(value, (dict, list)):
            inner = _largest(value, where, records, skip)
            if inner is not None:
                size = len(json.dumps(inner[3], ensure_ascii=False))
                if best is None or size > best[0]:
                    best = (size, inner)
    return best[1] if best else None


def _missing_in_mcp_words(report: Any) -> Any:
    """The `missing:` guidance lines in MCP terms: the report words them without its `words` ("look up its
    definition: assay search ..."); they are Assay's own advice, never quoted code."""
    lines = [mcp_words(g) if g.startswith("missing: ") else g for g in report.guidance or []]
    return report.model_copy(update={"guidance": lines})


def _budget(max_tokens: int | None) -> int | None:
    """A tool's max_tokens as given (None: the default; 0: no limit); a negative one is an error, as in the CLI."""
    if max_tokens is not None and max_tokens < 0:
        raise ValueError(f"max_tokens must be 0 (no limit) or more (got {max_tokens})")
    return max_tokens


@server.tool(description=("Retrieval only: the k best entities with file:line. query: words, a name, or a pasted error "
                          "message, log line or stack frame. max_tokens: whole entities best-first within it; outline: "
                          "signatures only. The reply (text and structured content each) stays within max_tokens "
                          "(default 2000 for the structured content)."), annotations=READ_ONLY)
async def search(query: Query, path: WorkspacePath, ctx: Context, k: SearchK = 10, max_tokens: SearchTokens = None,
                 outline: Outline = False) -> CallToolResult:
    from assay.stages.query.budget import search_json, search_text
    from assay.stages.query.rank import explain
    from assay.stages.query.retrieve import check_query_text
    from assay.stages.query.retrieve import search as search_stage

    try:
        root = workspace(path)
        query = check_query_text(query)  # empty: one line, as the CLI's search says it (the stage checks k)
        budget = _budget(max_tokens) or None  # 0: no limit, as for ask
        settings = _settings()
        reply_budget = budget if max_tokens is not None else settings.max_tokens or None  # None: the settings' budget
        res = await _run(lambda: search_stage(root, query, settings, k=min(k, SEARCH_K_MAX)), ctx, "searching")
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    hits = res.candidates
    data = search_json(res.query, res, explain, words=mcp_words)  # the CLI's --json, note in MCP terms
    text = search_text(hits, budget, outline, why=explain) if budget is not None or outline else ""
    shown = len(hits) - _not_shown(text)
    data, shown = _rows_within(data, shown, reply_budget)  # the same rows as the text, within the budget
    if budget is not None or outline:
        if shown < len(hits) - _not_shown(text):
            text = search_text(hits[:shown], budget, outline, why=explain)
    else:
        text = _search_rows_text(data["results"])
    if shown < len(hits) and not _not_shown(text):
        text += (f"\n{len(hits) - shown} more result(s) not shown: ask with a larger max_tokens (0: no limit), or "
                 "open one of them at its file:line")
    if data["note"]:
        text += f"\nnote: {data['note']}"
    if res.freshness is not None:
        text += f"\nindex: {mcp_words(res.freshness.line())}"
    return result(visible(text), data)


def _search_rows_text(rows: list[dict[str, Any]]) -> str:
    """Search rows as text without a budget: one line each, with the scores."""
    from assay.stages.query.budget import score_text

    return "\n".join(
        f"{r['rank']}. {r['file']}:{r['start_line']}-{r['end_line']} [{r['entity']}] ({r['kind']}) "
        f"distance={score_text(r['distance'], 3)} bm25={score_text(r['bm25'], 2)}" + (f" why: {r['why']}" if r["why"] else "")
        + (" STALE (file changed since indexing)" if r["stale"] else "")
        + (f" id={r['id']}" if r["kind"] == "note" else "")  # notes share .assay/notes:1: get_entity takes the id
        for r in rows
    ) or "no results"


_NOT_SHOWN = re.compile(r"^(\d+) more result\(s\) not shown", re.M)


def _not_shown(text: str) -> int:
    """The results a search text counts as not shown (its "N more result(s) not shown" line)."""
    found = _NOT_SHOWN.search(text)
    return int(found.group(1)) if found else 0


# a search row's details beyond its place, name and scores: left out first when the rows do not fit the budget
_ROW_DETAILS = ("docstring", "facts", "signals", "rank_signals", "bases", "params", "dense_rank", "lexical_rank",
                "fused_rank", "fused_score")


def _rows_within(data: dict[str, Any], shown: int, budget: int | None) -> tuple[dict[str, Any], int]:
    """The search data with its first `shown` rows, fewer (and without their details) when they do not fit
    `budget` tokens; the best row is always kept. `not_shown` counts the rows left out, `cut` says what was."""
    total = len(data["results"])
    rows = data["results"][:shown]
    fits = lambda rs, extra: budget is None or data_tokens({**data, "results": rs, **extra}) <= budget  # noqa: E731
    cut: dict[str, str] = {}
    if not fits(rows, {}):
        rows = [{k: v for k, v in r.items() if k not in _ROW_DETAILS} for r in rows]
        cut["results"] = "each row's details left out to fit max_tokens: " + ", ".join(_ROW_DETAILS)
    low, high = min(1, len(rows)), len(rows)  # the most rows that fit: a binary search over the count
    while low < high:
        mid = (low + high + 1) // 2
        if fits(rows[:mid], {"cut": cut, "not_shown": total - mid}):
            low = mid
        else:
            high = mid - 1
    rows = rows[:low]
    extra = ({"not_shown": total - len(rows)} if len(rows) < total else {}) | ({"cut": cut} if cut else {})
    return {**data, "results": rows, **extra}, len(rows)


@server.tool(description=("The exact source span of an entity, by file and line, or by (qualified) name or id (a note: "
                          "the note-... id remember and search give). A long span comes a page at a time within "
                          f"max_tokens (default {ENTITY_TOKENS}): the reply says where it stopped and from_line reads "
                          "on. A notebook shows its code only (never its outputs)."), annotations=READ_ONLY)
def get_entity(path: WorkspacePath, file: EntityFile = None, line: EntityLine = None, name: EntityByName = None,
               max_tokens: EntityTokens = None, from_line: FromLine = 0) -> CallToolResult:
    from assay.stages.index.store import Catalog, read_manifest

    try:
        root = workspace(path)
        budget = ENTITY_TOKENS if _budget(max_tokens) is None else max_tokens or None  # 0: no limit
        manifest = read_manifest(root)  # "not indexed yet" (or "in progress") rather than "no entity matches"
        catalog = Catalog(root)
        try:
            file, line = _located(root, catalog.files(), file, line) if file else (file, line)
            if name:
                matches = _named(catalog, name, file)
            elif file and line is not None:
                matches = _innermost(catalog, file, line)
            else:
                raise ValueError("give file and line (or a file:line receipt as file), or name")
            if not matches:
                raise ValueError(f"no entity named {name!r}" + (f" in {file}" if file else "") + "; try search first"
                                 if name else f"no entity covers {file}:{line}; try search first")
            matches = sorted(matches, key=lambda e: is_build_output(e.file))  # the source, not its dist/ copy
            first = matches[0]
            # a note is whole on its own: notes share one pseudo-file, and two alike in name are not parts of one
            parts = [first] if first.kind == "note" else catalog.parts_of(first.file, first.qualname, first.kind)
        finally:
            catalog.close()
        start, end = min(p.start_line for p in parts), max(p.end_line for p in parts)
        stale = False
        if first.kind == "note":
            lines = first.body.split("\n")
            end = start + len(lines) - 1
        else:
            stale = _changed_since_indexing(root, manifest, first.file)  # raises for a deleted file
            lines = _entity_file_lines(root, first)[start - 1 : end]
        begin = _page_start(first, start, end, from_line, None if name else line)
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    others = _other_definitions(first, matches)
    flag = (" STALE (file changed since indexing: these lines may no longer be this entity; call index_workspace "
            "to refresh)") if stale else ""
    also = f"{_others_line(others)}\n" if others else ""
    head = f"{first.file}:{start}-{end} [{first.qualname}] ({first.kind}){flag}\n{also}"
    data = {"entity": first.qualname, "id": first.id, "kind": first.kind, "file": first.file, "start_line": start,
            "end_line": end, "signature": first.signature, "source": "", "others": len(others), "stale": stale}
    page = _page(lines[begin - start :], begin, end, budget, head, data, notebook=_is_notebook(first.file))
    data.update(page)
    text = head + page["source"] + (f"\n{page['cut']}" if page.get("cut") else "")
    return result(visible(text), data)


FILE_CONTEXT_LINES = 10  # a file entity asked for by a line: the page starts this many lines above it
LINE_CHARS_MAX = 1000  # a longer line (minified code, a data literal) is cut: one line was 129 KB
BLANK_RUN_MIN = 3  # a notebook's code view: this many empty lines (its JSON, outputs) or more shown as one comment


def _is_notebook(file: str) -> bool:
    return file.lower().endswith(".ipynb")


def _entity_file_lines(root: Path, entity: Entity) -> list[str]:
    """The lines of the entity's file as it was parsed; a notebook's code view (its code at the file's own lines,
    everything else empty), never its raw JSON with outputs and base64 images (8 MB for one plot)."""
    from assay.stages.index.languages import NOTEBOOK
    from assay.stages.index.notebook import python_view
    from assay.stages.index.source_text import decoded_lines, source_lines, utf8_source

    data = _indexed_path(root, entity.file).read_bytes()
    if not _is_notebook(entity.file):
        return decoded_lines(data, entity.language)
    view = python_view(utf8_source(data, NOTEBOOK)[0])
    if view is None:  # no code view (not nbformat JSON): read as text, as the index did; the budget bounds it
        return decoded_lines(data, NOTEBOOK)
    return source_lines(view.decode("utf-8", "replace"))


def _page_start(entity: Entity, start: int, end: int, from_line: int, line: int | None) -> int:
    """The first line to show: from_line when given; a file entity asked for by a line starts near that line (a line
    outside any definition meant the lines around it, not the whole file); else the entity's first line."""
    if from_line:
        if not start <= from_line <= end:
            raise ValueError(f"from_line {from_line} is outside {entity.qualname} ({entity.file}:{start}-{end}); "
                             f"give a line from {start} to {end}")
        return from_line
    if entity.kind == "file" and line is not None:
        return max(start, min(line, end) - FILE_CONTEXT_LINES)
    return start


def _page(lines: list[str], begin: int, end: int, budget: int | None, head: str, data: dict[str, Any],
          notebook: bool) -> dict[str, Any]:
    """The source lines from `begin` that fit `budget` tokens in the text (after `head`) and in the structured
    content (`data`) alike, long lines cut and a notebook's non-code runs folded; with where it stopped and what is
    left (`cut`, also the text's last line). The first line is always shown."""
    import json

    from assay.stages.query.budget import count_tokens

    clip = _clipped if budget is not None else str  # max_tokens 0, no limit: whole lines too
    shown = _folded(lines, begin, clip) if notebook else [clip(t) for t in lines]
    last = begin + len(lines) - 1  # the file line of each shown line's end: a folded run spans several
    ends = _line_ends(lines, begin, notebook)
    count = len(shown)
    if budget is not None:
        reserve = count_tokens(_more_line(begin, end, end)) + 4
        text_used = count_tokens(head)
        data_used = data_tokens({**data, "shown_end_line": end, "more_lines": end, "cut": _more_line(begin, end, end)})
        count = 0
        for piece in shown:
            cost_text, cost_data = count_tokens(piece) + 1, count_tokens(json.dumps(piece, ensure_ascii=False))
            room = budget - (0 if count == len(shown) - 1 else reserve)  # the last line needs no "more" line
            if count and (text_used + cost_text > room or data_used + cost_data > room):
                break
            text_used, data_used, count = text_used + cost_text, data_used + cost_data, count + 1
    stop = ends[count - 1] if count else begin - 1
    page: dict[str, Any] = {"source": "\n".join(shown[:count]), "shown_start_line": begin, "shown_end_line": stop,
                            "more_lines": last - stop if count < len(shown) else 0}
    if count < len(shown):
        page["cut"] = _more_line(stop + 1, last, end)
    return page


def _more_line(first: int, last: int, end: int) -> str:
    return (f"... {last - first + 1} more line(s) cut ({first}-{end}): call get_entity again with from_line {first}, "
            "or ask for a narrower name or a larger max_tokens")


def _clipped(line: str) -> str:
    if len(line) <= LINE_CHARS_MAX:
        return line
    return line[:LINE_CHARS_MAX] + (f" ... [{len(line) - LINE_CHARS_MAX:,} more character(s) of this line cut; "
                                    "max_tokens 0 shows it whole]")


def _folded(lines: list[str], begin: int, clip: Callable[[str], str]) -> list[str]:
    """A notebook's code view with each run of BLANK_RUN_MIN or more empty lines (JSON, outputs, images) as one
    comment naming the lines it stands for."""
    out: list[str] = []
    for first, run in _runs(lines):
        if len(run) >= BLANK_RUN_MIN and not any(run):
            out.append(f"# lines {begin + first}-{begin + first + len(run) - 1}: notebook JSON and outputs, not code")
        else:
            out.extend(clip(t) for t in run)
    return out


def _line_ends(lines: list[str], begin: int, notebook: bool) -> list[int]:
    """The file line each shown line ends at (a folded run ends at its last line)."""
    if not notebook:
        return [begin + i for i in range(len(lines))]
    ends: list[int] = []
    for first, run in _runs(lines):
        if len(run) >= BLANK_RUN_MIN and not any(run):
            ends.append(begin + first + len(run) - 1)
        else:
            ends.extend(begin + first + i for i in range(len(run)))
    return ends


def _runs(lines: list[str]) -> list[tuple[int, list[str]]]:
    """(index of its first line, lines) of each run of empty or non-empty lines (whitespace-only counts as empty)."""
    runs: list[tuple[int, list[str]]] = []
    run_empty = False  # whether the last run is of empty lines (re-reading the run for it was quadratic: minutes
    for i, text in enumerate(lines):  # for a notebook output of 60,000 lines)
        empty = not text.strip()
        if runs and run_empty == empty:
            runs[-1][1].append("" if empty else text)
        else:
            runs.append((i, ["" if empty else text]))
            run_empty = empty
    return runs


def _other_definitions(first: Entity, matches: list[Entity]) -> list[Entity]:
    """The definitions a name also means besides the one shown, one per (file, qualname) (a long one is stored in
    parts), at its first line."""
    found: dict[tuple[str, str], Entity] = {}
    for e in sorted(matches, key=lambda e: (e.file, e.start_line)):
        if (e.file, e.qualname) != (first.file, first.qualname):
            found.setdefault((e.file, e.qualname), e)
    return list(found.values())


NAMED_OTHERS = 5  # other definitions named in get_entity's text; `others` in structuredContent counts them all


def _others_line(others: list[Entity]) -> str:
    """The visible note that a name has more definitions than the one shown, and how to get one of them: an agent
    reading only the text took the shown one (a dist/ copy, once) for the only one."""
    named = ", ".join(f"{e.qualname} ({e.file}:{e.start_line})" for e in others[:NAMED_OTHERS])
    more = f" and {len(others) - NAMED_OTHERS} more" if len(others) > NAMED_OTHERS else ""
    return (f"also defined in {len(others)} other place(s): {named}{more}; to get one, call get_entity with its "
            "file and line, or name and file")


def _named(catalog: Catalog, name: str, file: str | None) -> list[Entity]:
    """Entities by (qualified) name, else the one with that id (a note's `note-...` from remember or search)."""
    from assay.stages.query.graph import Graph, dotted_name, named_targets, split_file

    found = catalog.by_name(name) or list(catalog.get([name]).values())
    if not found and (dotted_name(name) != name or "." in name):
        # `kv::Server::run`, Go's `api.(*Server).run` or `api.Server.run` (the package picks the folder), as the graph
        # tools take them; none: their one line
        found = named_targets(Graph(catalog), name)
    if not found and split_file(name)[0]:  # `file.py:name` or a receipt, as the graph tools take them
        found = named_targets(Graph(catalog), name)  # none: the graph's one line saying which part is wrong
    return [e for e in found if file is None or e.file == file]


def _innermost(catalog: Catalog, file: str, line: int) -> list[Entity]:
    """The innermost entity covering file:line, a definition before the file entity of a file that holds only it.
    Every note starts at line 1 of the one pseudo-file `.assay/notes`, so there a line names a note only when one
    note alone covers it; else the id must (never a wrong note)."""
    from assay.stages.index.notes import NOTES_FILE
    from assay.stages.query.graph import innermost, line_problem

    entities = catalog.by_file(file)
    covering = [e for e in entities if e.start_line <= line <= e.end_line]
    if file == NOTES_FILE and len(covering) > 1:
        raise ValueError(f"{len(covering)} notes cover {file}:{line} (every note starts at line 1); give name: the "
                         "note's id (note-...) from search, notes or remember")
    problem = line_problem(file, line, max((e.end_line for e in entities), default=0))  # the graph tools' words
    if problem:
        raise ValueError(problem)
    hit = innermost(entities, line)
    return [hit] if hit is not None else []


def _located(root: Path, files: list[str], file: str, line: int | None) -> tuple[str, int | None]:
    """The file argument as the catalog names it, and the line: a receipt `utils.py:1010` given as file says both."""
    from assay.stages.query.graph import split_receipt

    try:
        return _workspace_file(root, files, file), line
    except WorkspaceError:
        raise  # escapes the workspace, with or without a line
    except ValueError:
        receipt = split_receipt(file)
        if receipt is None:
            raise
    if line is not None and line != receipt[1]:
        raise ValueError(f"file {file} names line {receipt[1]} and line is {line}; give the line once")
    return _workspace_file(root, files, receipt[0]), receipt[1]


def _workspace_file(root: Path, files: list[str], file: str) -> str:
    """A file argument as the catalog names it (`files`): `./x.py`, `a\\x.py`, an absolute path inside the workspace
    and the other Unicode normal form are the same file as `x.py`; a folder symlinked inside the workspace names the
    file where it lies (the index skips symlinks). A path escaping the workspace is refused; else a one-line error
    saying what the path is. The name as given wins over its normal-form twin: on Linux NFC `résumé.py` and a macOS
    checkout's NFD `résumé.py` are two files, and the NFC key alone made one of them unreachable."""
    import unicodedata

    from assay.stages.query.graph import file_key

    _indexed_path(root, file.replace("\\", "/"))  # raises for `..` and symlinks out
    exact = _exact_file(root, files, file)
    if exact is not None:
        return exact
    indexed: dict[str, str] = {}
    for f in sorted(files, key=lambda f: not unicodedata.is_normalized("NFC", f)):  # twins: the NFC one, always
        indexed.setdefault(unicodedata.normalize("NFC", f), f)
    if "\\" in file and (literal := file_key(file, root, backslash=False)) in indexed:
        return indexed[literal]  # `\` is a name character on Linux and macOS (`we\ird.py`): as given first
    key = file_key(file, root)
    if key in indexed:
        return indexed[key]
    lies = _indexed_path(root, key)
    if lies != root and (real := file_key(lies.relative_to(root).as_posix())) in indexed:
        return indexed[real]
    raise ValueError(_not_indexed(root, file, key, indexed))


def _exact_file(root: Path, files: list[str], file: str) -> str | None:
    """The indexed file spelled exactly as given, up to `./`, `//` and an absolute workspace prefix (no Unicode
    normalisation); `\\` kept as a name character first, as `_workspace_file` reads it."""
    import posixpath

    names, base = set(files), str(root).rstrip("/") + "/"
    for given in dict.fromkeys((file.strip(), file.strip().replace("\\", "/"))):
        given = given[len(base):] if given.startswith(base) else given
        if given and (given := posixpath.normpath(given)) in names:
            return given
    return None


def _indexed_path(root: Path, rel: str) -> Path:
    """`root / rel` as this process opens it (`fs_names.on_disk`: a name the locale cannot spell goes by its UTF-8
    bytes), refused when it escapes the workspace (`..`, a symlink out)."""
    return inside(root, os.path.relpath(on_disk(root, rel), root))


def _not_indexed(root: Path, file: str, key: str, indexed: dict[str, str]) -> str:
    """Why a file argument names no indexed file: a folder, a file the index skipped, or no such file."""
    where = on_disk(root, key)
    if where.is_dir():
        return f"{file} is a folder; give a file in it (workspace-relative, e.g. {key.rstrip('/')}/name.py) and a line"
    if where.exists():
        return f"{file} is not an indexed file: {_why_not_indexed(root, key, where)}"
    near = sorted(f for k, f in indexed.items() if k.endswith("/" + key))[:3]
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return f"{file} is not an indexed file (not found in {root}; paths are workspace-relative, with /){hint}"


# What helps a file the last index run skipped, by the reason it recorded (absent: the detail says it, or nothing does)
_GENERATED_HELP = "to index such files, set ASSAY_INDEX_GENERATED=1 in the server's environment and call index_workspace"
_SKIP_HELP = {
    "unsupported_type": "Assay parses no file of this type, so index_workspace will not add it",
    "lockfile": "lock files are never indexed",
    "binary": "binary files are not indexed (text is: UTF-8, or UTF-16 with a BOM)",
    "generated": _GENERATED_HELP,
    "minified": _GENERATED_HELP,
    "too_large": "to index it, raise ASSAY_MAX_FILE_BYTES in the server's environment and call index_workspace",
    "empty": "if it holds code now, call index_workspace",
    "unreadable": "make it readable, then call index_workspace",
}


def _why_not_indexed(root: Path, key: str, where: Path) -> str:
    """Why a file on disk is not in the index, from the last run's record: the reason it skipped the file (and what
    helps), else an ignore rule, else new since that run (only then does index_workspace help)."""
    from assay.stages.index.discover import root_ignore_check

    run = prog.read_status(root) or {}
    summary = run.get("summary") or {}
    recorded = _recorded_skip(summary.get("skipped_named") or {}, key)
    if recorded is not None:
        reason, detail = recorded
        why = "; ".join(filter(None, [detail, _SKIP_HELP.get(reason, "")]))
        return f"the last index run skipped it as {reason}" + (f" ({why})" if why else "")
    if root_ignore_check(root)(key):
        return ("the workspace's .gitignore or .assayignore (or a folder Assay never indexes) leaves it out; "
                "index_workspace will not add it while they do")
    started = run.get("started")
    st = where.stat()
    if not isinstance(started, (int, float)) or max(st.st_mtime, st.st_ctime) >= started:
        return "added or changed since the last index run: call index_workspace"
    counts = ", ".join(f"{reason} {n}" for reason, n in (summary.get("skipped") or {}).items())
    return ("the last index run left it out: a nested ignore file, or one of the skipped files its status counts but "
            f"does not name{' (' + counts + ')' if counts else ''}")


def _recorded_skip(named: dict[str, list[str]], key: str) -> tuple[str, str] | None:
    """(reason, detail) of `key` among the skipped files the status file names (`path` or `path (detail)`, as
    `assay status` shows them), compared in NFC as `key` is."""
    import unicodedata

    for reason, shown in named.items():
        for entry in shown:
            entry = unicodedata.normalize("NFC", entry)
            if entry == key:
                return reason, ""
            if entry.startswith(key + " (") and entry.endswith(")"):
                return reason, entry[len(key) + 2 : -1]
    return None


def _changed_since_indexing(root: Path, manifest: Any, file: str) -> bool:
    """Whether `file` changed since the index recorded it (size, times, the hash when only the change time moved:
    as search's freshness check); a one-line error when it is gone, since its lines can no longer be read."""
    try:
        st = os.stat(on_disk(root, file))
    except FileNotFoundError:
        raise ValueError(f"{file} was deleted since indexing; run index_workspace") from None
    record = manifest.files.get(file)
    return record is not None and record.changed_on_disk(on_disk(root, file), st)


def _graph(command: str, path: str, name: str, depth: int = 3, limit: int = 50) -> CallToolResult:
    from assay.stages.query.graph import query_workspace, render

    try:
        res = query_workspace(workspace(path), command, name, depth=depth, limit=min(limit, 500))  # < 1: the stage refuses it
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    return result(render(res, lambda text: mcp_words(text, flags=True)), res.model_dump())  # rows stay verbatim


@server.tool(description="Call sites of a function, method or class (`name`, `Class.method`, `file.py:name`), one row each.", annotations=READ_ONLY)
def callers(path: WorkspacePath, name: EntityName, limit: GraphLimit = 50) -> CallToolResult:
    return _graph("callers", path, name, limit=limit)


@server.tool(description="What a function or method calls, one row per call site, resolved where sound.", annotations=READ_ONLY)
def callees(path: WorkspacePath, name: EntityName, limit: GraphLimit = 50) -> CallToolResult:
    return _graph("callees", path, name, limit=limit)


@server.tool(description="Every use of a definition: calls, imports, subclasses, values passed.", annotations=READ_ONLY)
def references(path: WorkspacePath, name: EntityName, limit: GraphLimit = 50) -> CallToolResult:
    return _graph("references", path, name, limit=limit)


@server.tool(description="What breaks if a definition changes: transitive callers to `depth` and the tests that reach it.", annotations=READ_ONLY)
def impact(path: WorkspacePath, name: EntityName, depth: Depth = 3, limit: GraphLimit = 100) -> CallToolResult:
    return _graph("impact", path, name, depth=depth, limit=limit)


@server.tool(description=("Indexed entities a git diff touches: commits since `since` (a commit, branch or tag; default "
                          "HEAD) plus uncommitted edits, deleted files' entities (removed) and untracked files' (added)."), annotations=READ_ONLY)
def changed_symbols(path: WorkspacePath, since: Since = "HEAD") -> CallToolResult:
    from assay.stages.query.git_history import render_changed
    from assay.stages.query.git_questions import workspace_changed

    try:
        root = workspace(path)
        res = workspace_changed(root, since)
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    return result(render_changed(res), res.model_dump())


@server.tool(description="Commits that changed an entity's lines (git log -L), newest first: for 'why is this like this'.", annotations=READ_ONLY)
def history(path: WorkspacePath, name: EntityName, limit: HistoryLimit = 20) -> CallToolResult:
    from assay.stages.query.git_history import check_history_limit, render_history
    from assay.stages.query.git_questions import entity_history, history_stale_files

    try:
        root = workspace(path)
        check_history_limit(limit)  # the CLI's bounds: git's -n0 shows no commit, -n-1 all, past 2**31 it wraps
        res = entity_history(root, name, limit)
        stale = history_stale_files(root, res.file)  # as the CLI's `history --json`: the note says it only in prose
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    # only the note is Assay's advice: a commit subject quoting `assay index` stays as it was written
    shown = res.model_copy(update={"note": mcp_words(res.note)}) if res.note else res
    return result(render_history(shown), {**res.model_dump(), "stale_files": stale})


@server.tool(description=("Project brief (purpose, entry points, packages, key classes, tests, config). Byte-stable: put it "
                          "first. writer: ollama|cloud rewrites it once per change."), annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
def brief(path: WorkspacePath, writer: Writer = "none") -> CallToolResult:
    return _brief(path, None, writer)


@server.tool(description="Correct the project brief; the correction is kept verbatim in every later version.", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False))
def update_brief(path: WorkspacePath, correction: Correction) -> CallToolResult:
    return _brief(path, correction, None)


def _brief(path: str, correction: str | None, writer: str | None) -> CallToolResult:
    from assay.stages.query.brief import run_brief

    try:
        text, rewritten = run_brief(workspace(path), _settings(), writer, correction)
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    return result(text, {"brief": text, "rewritten": rewritten})


@server.tool(description="Model calls per day/backend/model: tokens, cache hits, estimated cost, latency.", annotations=READ_ONLY)
def usage(path: WorkspacePath) -> CallToolResult:
    from assay.stages.query.ledger import render, summary

    unreadable: list[Path] = []
    try:
        table = summary(workspace(path), unreadable)
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    notes = "".join(f"\nwarning: left out {p}: not a readable ledger file" for p in unreadable)
    return result(render(table) + notes, {"usage": table, "unreadable": [str(p) for p in unreadable]})


@server.tool(description="Workspaces this machine has indexed that this server may access.", annotations=READ_ONLY)
def list_workspaces() -> CallToolResult:
    rows = []
    try:
        roots = allowed_roots()  # ASSAY_ALLOWED_ROOTS naming no folder: the one-line error every tool gives
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    try:
        listed = registry.known()
    except ValueError as exc:  # a damaged list, no home for it: "no indexed workspaces" would be false
        return failure(exc)
    for item in listed:
        p = Path(item)
        try:
            check_allowed(p, roots)
        except WorkspaceError:
            continue
        if (state_dir(p) / "manifest.json").exists():
            rows.append(item)
    return result("\n".join(rows) or "no indexed workspaces", {"workspaces": rows})


@server.tool(description="Delete a workspace's index, notes and audit snapshots (its .assay folder keeps only its lock and .gitignore). Cannot be undone.", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False))
def forget_workspace(path: WorkspacePath) -> CallToolResult:
    try:
        gone = registry.listed_missing(path)  # moved or deleted: nothing on disk to delete, only its list entry
        if gone is not None:
            check_allowed(gone, allowed_roots())
            note = registry.forget(gone)  # a warning when a damaged list was set aside (its entries kept there)
            return result(f"{gone} is not on disk (moved or deleted): removed it from the workspace list"
                          + (f"\nwarning: {note}" if note else ""),
                          {"workspace": str(gone), "forgotten": True, "on_disk": False})
        root = workspace(path)
        with _jobs_lock:  # no index_workspace starts a run between the check and the deletion
            if _indexing(root):
                raise ValueError(FORGET_WHILE_INDEXING)
            # unlisted first: a list that cannot be written fails the call before anything is deleted
            note = registry.forget(root)
            _stop_watcher(root)  # else its next batch of changes would rebuild what is deleted here
            forgotten = _has_state(root)
            if forgotten:
                _delete_state(root)
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    warning = f"\nwarning: {note}" if note else ""
    if not forgotten:
        return result(f"nothing to forget: {root} is not indexed{warning}", {"workspace": str(root), "forgotten": False})
    return result(f"forgot {root}{warning}", {"workspace": str(root), "forgotten": True})


FORGET_WHILE_INDEXING = "an index run is in progress; wait until index_status says done, then forget"
_KEPT_STATE = ("write.lock", ".gitignore")  # the lock others may wait on; the .gitignore that keeps it out of git


def _indexing(root: Path) -> bool:
    """Whether an index run of the workspace is queued or running: this server's job, or any door's live run."""
    job = _jobs.get(str(root))
    if job is not None and job.is_alive():
        return True
    return prog.run_under_way(root)


def _stop_watcher(root: Path) -> None:
    """Stop this server's watcher of the workspace. One busy with a run is refused instead (and kept watching):
    its run, queued behind the deletion on the write lock, would rebuild the index."""
    from assay.flows.watch import ensure_watching, stop_watching

    stopped = stop_watching(root)
    for thread in stopped:
        thread.join(timeout=3.0)  # an idle watcher sees its stop within a watchfiles step (0.2 s)
    if any(thread.is_alive() for thread in stopped):
        ensure_watching(root, _settings())
        raise ValueError(FORGET_WHILE_INDEXING)


# Assay's per-workspace state files, by name (each also as `<name>-wal`, `<name>.damaged`, `<name>.<pid>.tmp`...):
# what forget deletes when the manifest is gone, since a lost manifest left the whole index behind. A `.assay/`
# holding none of them may be anything (Assay's home `~/.assay` of `~` is refused before this is asked).
_STATE_NAMES = ("manifest.json", "catalog.sqlite", "embed_cache.sqlite", "chroma", "lexical", "status.json",
                "write.holder", "notes.jsonl", "judgments", "usage", "audits", "brief.md", "brief_corrections.md",
                "brief.fingerprint", "centrality.json")


def _assay_owned(name: str) -> bool:
    """Whether a name in `.assay/` is one of Assay's state files (or a WAL, set-aside or temporary copy of one)."""
    return any(name == own or name.startswith((own + "-", own + ".")) for own in _STATE_NAMES)


def _indexed(root: Path) -> bool:
    return (state_dir(root) / "manifest.json").is_file()


def _state_files(root: Path) -> list[Path]:
    """The `.assay/` entries forget deletes (never creates the folder): all but the kept ones of an indexed
    workspace; without a manifest, only Assay's own files by name. A symlinked `.assay/` without a manifest is
    left alone: it may point anywhere."""
    folder = state_dir(root)
    if not folder.is_dir() or (folder.is_symlink() and not _indexed(root)):
        return []
    named = _indexed(root)
    return [c for c in folder.iterdir() if c.name not in _KEPT_STATE and (named or _assay_owned(c.name))]


def _has_state(root: Path) -> bool:
    """Whether the workspace has Assay state to delete: an index, or what a lost manifest left behind."""
    return bool(_state_files(root))


def _delete_state(root: Path) -> None:
    """Delete the workspace's index, notes and snapshots (and its Chroma server collection) under the write lock."""
    from assay.stages.index.store import VectorStore, forget_cached_client, load_manifest, write_lock

    refuse_assay_home(root)  # `workspace()` refused it already; this deletes, so it checks again
    with write_lock(root):
        manifest = load_manifest(root)
        s = _settings()
        # a copied workspace's manifest names the original's server collection, which is not this one's to drop
        if manifest is not None and manifest.collection and s.chroma_url and owns_collection(root, manifest.collection):
            VectorStore(root, s.chroma_url).drop(manifest.collection)
        for child in _state_files(root):
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        forget_cached_client(root)


@server.tool(description="Store a note (a decision, a convention) verbatim as a searchable entity of kind `note`.", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False))
async def remember(path: WorkspacePath, note: NoteText, ctx: Context) -> CallToolResult:
    from assay.stages.index.embed import index_embedder
    from assay.stages.index.notes import add_note
    from assay.stages.index.store import read_manifest

    def work():
        root = workspace(path)
        s = _settings()
        return add_note(root, note, index_embedder(read_manifest(root).embedder, s), s.chroma_url)  # the index's space

    try:
        ent = await _run(work, ctx, "remembering")
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    return result(f"remembered as {ent.id} (get_entity with name {ent.id} reads it back)", {"id": ent.id, "note": ent.body})


@server.tool(description="The notes stored in a workspace, verbatim, oldest first.", annotations=READ_ONLY)
def notes(path: WorkspacePath) -> CallToolResult:
    from assay.stages.index.notes import list_notes

    try:
        items = list_notes(workspace(path))
    except Exception as exc:  # noqa: BLE001
        return failure(exc)
    rows = [{"id": n.id, "note": n.body} for n in items]
    return result(visible("\n".join(f"- {n.body}" for n in items)) or "no notes", {"notes": rows})


def _warm() -> None:
    """Load the heavy parts once, in the background, so the first call is fast."""
    try:
        from assay.stages.index.embed import embedder_for

        s = Settings()
        embedder_for(s)
        import assay.flows.index  # noqa: F401
        import assay.flows.query  # noqa: F401
    except Exception:  # noqa: BLE001 - warming is best effort
        pass


def serve() -> None:
    import sys

    from assay.flows.prefect_api import start_private_api

    if sys.stdin is None:  # launched with stdin closed (`<&-`): the SDK would fail deep inside with a traceback
        if sys.stderr is not None:
            print("error: stdin is closed: assay mcp talks MCP over stdin/stdout; launch it from an IDE",
                  file=sys.stderr)
        raise SystemExit(2)

    threading.Thread(target=_warm, daemon=True).start()
    start_private_api()  # flows run on Prefect once its API answers; direct until then
    server.run("stdio")

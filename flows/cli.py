"""`assay`: the command-line door into the flows.

Every command takes a workspace PATH (default: the current directory). Errors are one line;
set ASSAY_DEBUG=1 to see tracebacks.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from assay.flows import runtime  # noqa: F401
from assay.stages.core.errors import one_line

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help=(
        "Assay: a workspace-isolated code memory that [bold]judges[/bold] its evidence.\n\n"
        "Typical use:\n\n"
        "  assay index .                      # parse + embed this repo into ./.assay/\n\n"
        "  assay search 'retry backoff'       # hybrid retrieval only (dense + BM25)\n\n"
        "  assay ask 'how are retries done?'  # judged, cited answer with receipts\n\n"
        "  assay mcp                          # stdio MCP server for Cursor / VS Code / Claude Code\n\n"
        "Runs offline by default (local mode: nothing leaves the machine). Settings come from\n"
        "ASSAY_* environment variables; see the README's configuration table."
    ),
)
console = Console(stderr=True)
out = Console()

PathArg = typer.Argument(".", help="workspace folder (default: current directory)", show_default=False)
# Narrower than this, Rich squeezes search's eight-column table until columns are one character or none wide (blank
# cells at 30 columns); such a terminal gets the one-line-per-row form pipes get.
MIN_TABLE_WIDTH = 80


def _settings(**overrides):
    """The environment's settings with the command's flags on top, each flag checked as its variable would be
    (`--synth olama` used to fall back to the extractive writer without a word; `ASSAY_SYNTH=olama` is an error)."""
    from pydantic import ValidationError

    from assay.stages.core.config import Settings

    settings = Settings().model_copy()
    for name, value in overrides.items():
        if value is None:
            continue
        try:
            Settings.__pydantic_validator__.validate_assignment(settings, name, value)
        except ValidationError as exc:
            first = exc.errors()[0]
            msg = str(first.get("msg", "invalid")).removeprefix("Value error, ")
            raise ValueError(f"--{name.replace('_', '-')}: {msg} (got {value!r})") from None
    return settings


def _at_most(option: str, value: int | None, most: int, variable: str = "") -> None:
    """An option's upper bound, one line naming it (and its variable, which has the same range): typer's `max=`
    prints a usage box, and an unbounded value failed late (an int32 snapshot column, git's 32-bit `-n`)."""
    if value is not None and value > most:
        also = f", as for {variable}" if variable else ""
        raise ValueError(f"{option}: must be {most} or less{also} (got {value})")


def _fail(exc: BaseException) -> None:
    if os.environ.get("ASSAY_DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):  # `ASSAY_DEBUG=0` is off
        raise exc
    msg = _one_line(exc)
    typer.echo(f"error: {msg}", err=True)  # one line, never wrapped
    raise typer.Exit(2)


def _one_line(exc: BaseException) -> str:
    """The error's first line; a settings error names the variable and what is wrong with it."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError) and exc.errors():
        from assay.stages.core.config import variable_error

        # only Settings fields are variables
        return one_line(ValueError(variable_error(exc.errors()[0], variable=exc.title == "Settings")))
    return one_line(exc)


class _RichSink:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, int] = {}

    def start(self, stage: str, total: int) -> None:
        self.tasks[stage] = self.progress.add_task(stage, total=max(total, 1))
        if total == 0:
            self.progress.update(self.tasks[stage], completed=1)

    def advance(self, stage: str, n: int = 1) -> None:
        if stage in self.tasks:
            self.progress.advance(self.tasks[stage], n)

    def skip(self, stage: str, n: int) -> None:
        self.advance(stage, n)

    def error(self, message: str) -> None:
        console.print(f"[yellow]warning:[/yellow] {message}")


@contextmanager
def _signals_interrupt() -> Iterator[list[int]]:
    """SIGINT and SIGTERM raise KeyboardInterrupt while the block runs, so a killed index run says what it left;
    the list holds the signals received (its exit code is 130 for Ctrl-C, 143 for SIGTERM, as the shell's would be)."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():  # signal handlers are the main thread's only
        yield received
        return

    def interrupt(signum: int, frame: object) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupted_line(root: Path) -> str:
    """What an interrupted index run left usable, from the status file it ended with."""
    from assay.stages.core.progress import read_status, run_view

    resume = "run `assay index` to resume (what it embedded is cached and is not embedded again)"
    try:
        view = run_view(read_status(root))
    except Exception:  # noqa: BLE001 -- a damaged status file must not hide the interruption itself
        view = None
    if view is None or view["pid"] != os.getpid():  # stopped before it ran (waiting for another run's lock)
        return f"interrupted before indexing began; {resume}"
    if view["lexical_committed"]:
        usable = "BM25 search covers every parsed file"
    else:
        usable = "searches use the last finished index, if any (this run's BM25 was not written yet)"
    if view["passages_stored"] is not None:
        ahead = view["passages_unstored"]
        usable += (f"; {view['passages_stored']} of {view['passages_in_index']} passages stored as vectors"
                   + (f" ({ahead} more embedded and cached)" if ahead > 0 else ""))
    return f"interrupted during {view['stage'] or 'start-up'}: {usable}; {resume}"


@app.command()
def index(
    path: str = PathArg,
    rebuild: bool = typer.Option(False, "--rebuild", help=(
        "re-parse every file, rebuild the catalog and BM25, and fill a fresh vector collection from the embedding "
        "cache (same content, same embedder): only passages it lacks are embedded again")),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """Index a workspace (incremental: only changed files are re-parsed and re-embedded).

    BM25 answers as soon as the lexical phase is done; vectors fill in after. A killed run resumes: the next one
    embeds only what is missing. `assay status` shows a running index's progress from another terminal.

    Examples:

      assay index                    # this folder, into ./.assay/

      assay index ~/src/myrepo --json

      assay index . --rebuild        # a fresh vector collection (after changing ASSAY_EMBEDDER, say)"""
    from assay.flows.index import run_index
    from assay.stages.index.report import summary_lines
    from assay.stages.core.workspace import resolve_workspace

    try:
        root = resolve_workspace(path)
        columns = (TextColumn("{task.description:>8}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with _signals_interrupt() as received:
            try:
                with Progress(*columns, console=console, transient=True, disable=as_json or not console.is_terminal) as progress:
                    report = run_index(str(root), _settings(), rebuild=rebuild, watcher=_RichSink(progress))  # it writes status.json
            except KeyboardInterrupt:  # caught here: Typer would turn it into a silent exit 130
                report = None
            except Exception:  # an interrupt inside a C extension's start-up surfaces as its error ("initialization failed")
                if not received:
                    raise
                report = None
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    if report is None:
        typer.echo(_interrupted_line(root), err=True)
        raise typer.Exit(143 if received[:1] == [signal.SIGTERM] else 130)
    if as_json:
        typer.echo(report.model_dump_json(indent=1))
        return
    typer.echo("\n".join(summary_lines(report)))


@app.command()
def status(path: str = PathArg, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show what a workspace's index holds and how the last index run went (a running one: its live progress).

    Examples:

      assay status

      assay status ~/src/myrepo --json   # the `run` field: state, files, passages embedded, rate, ETA"""
    from assay.stages.index.incremental import dense_note, older_parser
    from assay.stages.index.report import passages_line, skipped_line
    from assay.stages.core.progress import read_status, run_line, run_view
    from assay.stages.index.store import Catalog, load_manifest
    from assay.stages.core.workspace import resolve_workspace

    try:
        root = resolve_workspace(path)
        manifest = load_manifest(root)
        last_run = read_status(root)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    run = run_view(last_run)
    if manifest is None:
        if as_json:  # the indexed case's keys, empty: `jq .entities` reads 0 and `.by_kind | keys` works
            typer.echo(json.dumps({
                "workspace": str(root), "indexed": False, "files": 0, "entities": 0, "by_kind": {}, "by_language": {},
                "embedder": None, "updated_at": None, "notes": 0, "partial_files": 0, "last_run": _with_iso_times(last_run),
                "run": _with_iso_times(run), "dense_pending": 0, "parser": None, "parser_current": None,
            }))
            return
        typer.echo(_not_indexed_line(root, path))
        if run is not None:
            typer.echo(f"run: {run_line(run)}")
        return
    try:
        catalog = Catalog(root)
        entities, by_kind, by_language = catalog.count(), catalog.counts("kind"), catalog.counts("language")
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    data = {
        "workspace": str(root), "indexed": True, "files": len(manifest.files), "entities": entities,
        "by_kind": by_kind, "by_language": by_language, "embedder": manifest.embedder,
        "updated_at": manifest.updated_at, "notes": len(manifest.notes),
        "partial_files": sum(1 for r in manifest.files.values() if r.partial), "last_run": _with_iso_times(last_run),
        "run": _with_iso_times(run),
        "dense_pending": len(manifest.dense_pending), "parser": manifest.parser,
    }
    parser_note = older_parser(manifest)
    data["parser_current"] = not parser_note
    if as_json:
        typer.echo(json.dumps(data))
        return
    for key in ("workspace", "files", "entities", "notes", "partial_files", "embedder", "updated_at"):
        shown = passages_line(entities, sum(by_kind.values())) if key == "entities" else data[key]
        typer.echo(f"{key}: {shown}")
    if run is not None:
        typer.echo(f"run: {run_line(run)}")
    if manifest.dense_pending and (run is None or run["state"] != "running"):  # a running index's line says more
        typer.echo(f"dense (vectors in the store): {dense_note(manifest)}")
    if run is not None and run["state"] == "done" and skipped_line(run["summary"]):
        typer.echo(skipped_line(run["summary"]))
    if parser_note:
        typer.echo(f"parser: {parser_note}")
    typer.echo("by kind: " + ", ".join(f"{k} {v}" for k, v in data["by_kind"].items()))


EPOCH_TIMES = ("started", "ended", "updated", "finished")  # a run's times in epoch seconds, as its status file holds them


def _with_iso_times(run: dict | None) -> dict | None:
    """A run's epoch-second times with an ISO 8601 (UTC) twin each, `started` -> `started_at`: the manifest's
    `updated_at` is ISO, and one rule reads every time (`*_at`: ISO text; bare names: epoch seconds, kept for
    scripts that read them). The text lines use the run's own figures, not this copy."""
    if run is None:
        return None
    return {**run, **{f"{key}_at": _iso(run[key]) for key in EPOCH_TIMES if key in run}}


def _iso(seconds: object) -> str | None:
    """Epoch seconds as ISO 8601 UTC text; None for no time (a running run's `ended`) or one a damaged file garbled."""
    from datetime import datetime, timezone

    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return None
    try:
        return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return None


def _not_indexed_line(root: Path, path: str) -> str:
    """`status` of a folder with no index: the command to paste (shell-quoted), or, for a subfolder of an indexed
    workspace, that workspace (a second, nested index is rarely what was meant)."""
    import shlex

    from assay.stages.core.workspace import indexed_workspace_of, unindexable_here

    holder = indexed_workspace_of(root.parent)
    if holder is not None:
        return f"{root}: not indexed; it lies inside the indexed workspace {holder} (run `assay status {shlex.quote(str(holder))}`)"
    if why := unindexable_here(root):  # read-only, too deep: advising `assay index` there would only lead to an error
        return f"{root}: not indexed, and {why}"
    return f"{root}: not indexed (run `assay index {_pasteable(path)}`)"


def _pasteable(path: str) -> str:
    """A path as a command's argument, shell-quoted; one starting with `-` as `./-dash`, or the command would read
    it as an option (`assay index -dash`: "No such option: -d")."""
    import shlex

    return shlex.quote(f"./{path}" if path.startswith("-") else path)


@app.command()
def search(
    query: str = typer.Argument(..., help="what to look for, in words or identifiers"),
    path: str = PathArg,
    k: int = typer.Option(10, "-k", min=1, help="how many results (at most 1000)"),
    mode: str = typer.Option("hybrid", help="hybrid | dense | bm25"),  # the search stage refuses any other
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, help="print whole entities best-first within this budget"),
    outline: bool = typer.Option(False, "--outline", help="signatures and locations only"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Retrieval only (no judge, no answer): dense + BM25, ordered by the code-aware rank stage.

    One row per entity; a file row (kind `file`) stands for a whole file. `why` says what lifted or sank a
    row: `defines` (it defines a name you asked for), `path`/`name` (your words in its file or qualified
    name), `doc` (your sentence is its doc summary), `phrase` (it says your words in your order: paste an error
    message or log line to find the code that writes it), `at the pasted location` (a stack frame's or
    compiler message's file and line), `central` (many files import its file), penalties (test, prose,
    example, legacy, stub, built: a build's copy of an indexed source, hidden, private, re-export), and
    `same file xN` (a file already shown counts less, so more files reach the top).
    Set ASSAY_RANKING=rrf for plain reciprocal rank fusion.

    Examples:

      assay search "retry backoff"

      assay search "ValueError: invalid header name" ~/src/myrepo -k 5

      assay search "session cookies" --max-tokens 1500     # whole entities best-first, for an agent"""
    from assay.stages.query.rank import explain
    from assay.stages.core.workspace import resolve_workspace
    from assay.stages.core.one_shot import mark_one_shot
    from assay.stages.query.retrieve import search as search_stage

    mark_one_shot()  # one query in this process: skip loading that pays only over many
    from assay.stages.core.config import MAX_RESULTS

    try:
        _at_most("-k", k, MAX_RESULTS)  # a pool of 2**32 overflowed the vector store and blamed the index
        result = search_stage(resolve_workspace(path), query, _settings(), k=k, mode=mode)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    hits = result.candidates
    if as_json:  # the MCP tool's structured content: rows with `why`, the degraded-retrieval note, the freshness
        from assay.stages.query.budget import search_json

        typer.echo(json.dumps(search_json(result.query, result, explain)))
        return
    # every text form says when retrieval was degraded and what the index reflects (stderr: the rows stay rows)
    if result.note:
        typer.echo(f"note: {result.note}", err=True)
    if result.freshness is not None:
        typer.echo(f"index: {result.freshness.line()}", err=True)
    if max_tokens is not None or outline:
        from assay.stages.core.visible import visible
        from assay.stages.query.budget import search_text

        # a note's body may hold an ESC
        typer.echo(visible(search_text(hits, max_tokens, outline, why=explain, budget_name="--max-tokens")))
        return
    rows = [
        (str(position), c.entity + (" (stale)" if c.stale else ""), c.kind, f"{c.file}:{c.start_line}-{c.end_line}",
         f"{c.distance:.3f}" if c.distance is not None else "-", f"{c.bm25:.2f}" if c.bm25 is not None else "-",
         f"{c.rank_score:.3f}" if c.rank_score is not None else f"{c.fused_score:.4f}", explain(c))
        for position, c in enumerate(hits, start=1)
    ]
    # pipes and agents get whole lines, never truncated cells; so does a terminal too narrow for the table
    if not out.is_terminal or out.width < MIN_TABLE_WIDTH:
        for rank, entity, kind, loc, dist, bm25, score, why in rows:
            typer.echo(f"{rank}. {loc} [{entity}] ({kind}) distance={dist} bm25={bm25} score={score}" + (f" why: {why}" if why else "")
                       + (" STALE (file changed since indexing)" if hits[int(rank) - 1].stale else ""))
        return
    table = Table("#", "entity", "kind", "location", "distance", "bm25", "score", "why")
    from rich.markup import escape

    for row in rows:
        table.add_row(*(escape(cell) for cell in row))  # `app/[id]/page.py` is a path, not Rich markup
    for column in table.columns:
        column.overflow = "fold"
    out.print(table)


def _graph(command: str, name: str, path: str, depth: int, limit: int, as_json: bool) -> None:
    from assay.stages.query.graph import query_workspace, render
    from assay.stages.core.workspace import resolve_workspace

    try:
        res = query_workspace(resolve_workspace(path), command, name, depth=depth, limit=limit)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    if as_json:
        typer.echo(res.model_dump_json())
        return
    # the stale header is a notice: stderr, as search's, so stdout holds the result's lines only (rows keep their mark)
    if res.targets and res.stale_files:
        from assay.stages.query.graph import stale_line

        typer.echo(stale_line(res.stale_files), err=True)
        res = res.model_copy(update={"stale_files": []})
    typer.echo(render(res))


NameArg = typer.Argument(..., help="a definition: `merge_setting`, `Session.send`, or `path/to/file.py:send`")
LimitOpt = typer.Option(50, min=1, help="rows shown (the count line says how many more there are)")


@app.command()
def callers(name: str = NameArg, path: str = PathArg, limit: int = LimitOpt, as_json: bool = typer.Option(False, "--json")) -> None:
    """Who calls NAME: one row per call site (caller, where it is defined, the call's line).

    Calls are resolved through scopes, imports (aliases too) and `self`/`this` methods; a call on an
    arbitrary object whose method has the same name is listed and marked unresolved, never guessed.

    Examples:

      assay callers merge_setting

      assay callers Session.send ~/src/myrepo --json

      assay callers requests/sessions.py:send --limit 20"""
    _graph("callers", name, path, 1, limit, as_json)


@app.command()
def callees(name: str = NameArg, path: str = PathArg, limit: int = LimitOpt, as_json: bool = typer.Option(False, "--json")) -> None:
    """What NAME calls: one row per call site inside it, resolved to a definition where that is sound.

    Examples:

      assay callees Session.send

      assay callees merge_setting ~/src/myrepo --json"""
    _graph("callees", name, path, 1, limit, as_json)


@app.command()
def references(name: str = NameArg, path: str = PathArg, limit: int = LimitOpt, as_json: bool = typer.Option(False, "--json")) -> None:
    """Where NAME is used: calls, imports, subclasses and places it is passed or assigned as a value.

    Examples:

      assay references HTTPAdapter

      assay references merge_setting ~/src/myrepo --json"""
    _graph("references", name, path, 1, limit, as_json)


@app.command()
def impact(name: str = NameArg, path: str = PathArg, depth: int = typer.Option(3, min=1, max=6, help="caller levels to follow (1-6)"),
           limit: int = typer.Option(100, min=1, help="rows shown, and tests listed"), as_json: bool = typer.Option(False, "--json")) -> None:
    """What breaks if NAME changes: its callers, their callers (to --depth), and the tests that reach it.

    Examples:

      assay impact merge_setting

      assay impact Session.send --depth 2 --limit 30 --json"""
    _graph("impact", name, path, depth, limit, as_json)


def _terminal_line(text: str) -> str:
    """`text` as one terminal line: control characters in file names (an ESC that retitles the window, a newline
    that splits the line `watch` promises per run) shown as symbols, as `visible` shows them in reports."""
    from assay.stages.core.visible import visible

    return visible(text).replace("\n", "\u240a")


@app.command()
def watch(path: str = PathArg, debounce: Optional[int] = typer.Option(None, min=0, help="ms of quiet before a batch re-indexes (default 1600, at most 600000)")) -> None:
    """Keep the index fresh: watch the workspace and re-index what changed (Ctrl-C stops).

    It first catches up on what changed while nothing watched (an unindexed folder is indexed). Respects
    .gitignore/.assayignore and never reacts to .assay/ or .git/; changes within the debounce window are one
    incremental run, so a branch switch re-indexes once. Each run prints one line.

    Examples:

      assay watch                          # this folder

      assay watch ~/src/myrepo --debounce 500"""
    from assay.flows.watch import watch_workspace
    from assay.stages.core.config import MAX_DEBOUNCE_MS
    from assay.stages.core.workspace import resolve_workspace

    try:
        root = resolve_workspace(path)
        _at_most("--debounce", debounce, MAX_DEBOUNCE_MS, "ASSAY_WATCH_DEBOUNCE_MS")
        settings = _settings(watch_debounce_ms=debounce)  # checked: model_copy took 10**20 and watchfiles overflowed
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return

    def said(changed: list[str], report, error) -> None:
        typer.echo(_terminal_line(watch_line(changed, report, error)))

    typer.echo(_terminal_line(f"watching {root} (Ctrl-C stops)"))
    try:
        watch_workspace(root, settings, on_run=said, catch_up=True)
    except Exception as exc:  # noqa: BLE001 - the watcher's own failure (not a run's: those print a line and go on)
        _fail(exc)


def watch_line(changed: list[str], report, error: BaseException | None) -> str:
    """One watch run in one line: what changed, and what the run did; a full re-index says why (after an upgrade
    the parser changed and every file is parsed again: minutes, which the user should not take for a hang)."""
    head = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    if error is not None:
        return f"{head}: re-index failed: {one_line(error)}"
    full = f" (full re-index: {report.rebuild_reason})" if report.rebuild_reason else ""
    gone = report.files_removed  # a deletion re-parses nothing: without this the line says "0 file(s)"
    removed = f", removed {gone}" if gone else ""
    return f"{head}: re-indexed {report.files_parsed} file(s){removed}, {report.entities_total} entities{full}"


@app.command()
def changed(path: str = PathArg, since: str = typer.Option("HEAD", help="a commit, branch or tag: entities changed since it"),
            as_json: bool = typer.Option(False, "--json")) -> None:
    """Which indexed entities a diff touches: commits after --since plus uncommitted edits (innermost definitions);
    a deleted file's definitions are listed as removed, an untracked indexed file's as added, and entities of a file
    changed since indexing are marked STALE.

    Examples:

      assay changed                        # uncommitted edits

      assay changed --since main           # this branch's commits and edits

      assay changed ~/src/myrepo --since v2.3.0 --json"""
    from assay.stages.query.git_history import render_changed
    from assay.stages.query.git_questions import workspace_changed
    from assay.stages.core.workspace import resolve_workspace

    try:
        root = resolve_workspace(path)
        res = workspace_changed(root, since)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    if as_json:
        typer.echo(res.model_dump_json())
        return
    rows, notices = _split_warnings(render_changed(res))
    typer.echo(rows)
    if notices:
        typer.echo(notices, err=True)


def _split_warnings(text: str) -> tuple[str, str]:
    """A rendered result's lines, and its `warning:` lines apart (for stderr, as search's notices: stdout holds the
    rows). Rows are indented or name their command, so only a notice starts a line with `warning: `."""
    lines = text.split("\n")
    notices = [line for line in lines if line.startswith("warning: ")]
    return "\n".join(line for line in lines if not line.startswith("warning: ")), "\n".join(notices)


@app.command()
def history(name: str = NameArg, path: str = PathArg, limit: int = typer.Option(20, min=1, help="newest commits shown (at most 10000)"),
            as_json: bool = typer.Option(False, "--json")) -> None:
    """Commits that changed NAME's lines (git log -L), newest first: for "why is this like this" questions.
    Uncommitted edits are allowed: NAME's lines are mapped to HEAD's first; a name several definitions share is an
    error listing them (pass Class.method or path/to/file.py:name).

    Examples:

      assay history merge_setting

      assay history Session.send --limit 5

      assay history requests/sessions.py:send ~/src/myrepo --json"""
    from assay.stages.query.git_history import check_history_limit, render_history
    from assay.stages.query.git_questions import entity_history, history_stale_files
    from assay.stages.query.graph import require_name
    from assay.stages.core.workspace import resolve_workspace

    try:
        check_history_limit(limit)  # before the index is read: git wraps -n past 2**31 and showed no commit
        root = resolve_workspace(path)
        require_name(name)  # the graph commands' message (the lookup's own reads "no definition named ''")
        res = entity_history(root, name, limit)
        stale = history_stale_files(root, res.file) if as_json else []
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    if as_json:  # `stale_files` as the graph commands and `changed` carry it; the note keeps its prose for people
        typer.echo(json.dumps({**res.model_dump(), "stale_files": stale}))
        return
    typer.echo(render_history(res.model_copy(update={"note": ""})))
    if res.note:  # notices (stale lines, uncommitted edits, a submodule's history) go to stderr, as search's
        from assay.stages.core.visible import visible

        typer.echo(visible(res.note), err=True)  # it may name a file as git wrote it (an uncommitted rename's old name)


@app.command()
def brief(
    path: str = PathArg,
    correct: Optional[str] = typer.Option(None, "--correct", help="add a correction, kept verbatim"),
    writer: Optional[str] = typer.Option(None, help="ollama | cloud: have that model rewrite it (once per change)"),
) -> None:
    """The project brief: purpose, entry points, packages, key classes, tests, configuration — from the index,
    no LLM by default. Byte-identical while the project does not change, so agents can put it first in their
    prompts. --writer rewrites it with a model once per change; corrections are appended verbatim either way.

    Examples:

      assay brief

      assay brief --correct "Tests run with tox, not pytest directly"

      assay brief ~/src/myrepo --writer ollama      # rewritten by a local model, once per change"""
    from assay.stages.query.brief import run_brief
    from assay.stages.core.workspace import resolve_workspace

    try:
        text, _ = run_brief(resolve_workspace(path), _settings(), writer, correct)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    typer.echo(text, nl=False)


@app.command()
def usage(path: str = PathArg, as_json: bool = typer.Option(False, "--json")) -> None:
    """Model calls by day, backend, model and purpose: calls, tokens, cache hits, estimated cost (ASSAY_PRICES),
    median latency. The local judge and extractive writer make none; Ollama and cloud calls are all recorded.

    Examples:

      assay usage

      assay usage ~/src/myrepo --json"""
    from assay.stages.query.ledger import render, summary
    from assay.stages.core.workspace import resolve_workspace

    unreadable: list[Path] = []
    try:
        table = summary(resolve_workspace(path), unreadable)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    typer.echo(json.dumps(table) if as_json else render(table))
    for damaged in unreadable:
        typer.echo(f"warning: left out {damaged}: not a readable ledger file (move it away to silence this)", err=True)


@app.command()
def install(
    roots: list[Path] = typer.Option([], "--root", help="folders the server may touch (default: the current directory)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="say what would change, change nothing"),
) -> None:
    """Add Assay's MCP server to every agent found here (Claude Code, Claude Desktop, Cursor, Windsurf, VS Code,
    Codex). Only the `assay` entry is written; other servers are kept; each file is backed up before its first edit.

    Examples:

      assay install                        # the server may touch this folder

      assay install --root ~/src --root ~/work --dry-run"""
    from assay.stages.core.install import allowed_roots, apply, server_entry

    try:
        entry = server_entry(allowed_roots(roots or [Path.cwd()]))
    except ValueError as exc:
        _fail(exc)
        return
    _print_actions(apply(Path.home(), entry, dry_run), dry_run)


@app.command()
def uninstall(dry_run: bool = typer.Option(False, "--dry-run", help="say what would change, change nothing")) -> None:
    """Remove Assay's MCP server entry from every agent found here (nothing else is touched).

    Examples:

      assay uninstall --dry-run"""
    from assay.stages.core.install import apply

    _print_actions(apply(Path.home(), None, dry_run), dry_run)


def _print_actions(actions, dry_run: bool) -> None:
    if not actions:
        typer.echo("no supported agent found (Claude Code, Claude Desktop, Cursor, Windsurf, VS Code, Codex)")
    for a in actions:
        if a.action == "skipped":
            typer.echo(f"{a.agent}: skipped {a.path}: {a.reason}; the file is untouched: mend it and run the command "
                       "again, or edit the entry by hand (README: Use it from your IDE)", err=True)
            continue
        typer.echo(f"{a.agent}: {a.action}{' (dry run)' if dry_run and a.action not in ('unchanged', 'absent') else ''} {a.path}"
                   + (f" (backup {a.backup})" if a.backup else ""))
    if any(a.action == "skipped" for a in actions):
        raise typer.Exit(1)


@app.command()
def ask(
    question: str = typer.Argument(..., help="a question about the code"),
    path: str = PathArg,
    judge: Optional[str] = typer.Option(None, help="local (default) | ollama | cloud | systemone | none"),
    synth: Optional[str] = typer.Option(None, help="extractive (default) | ollama | cloud"),
    guard: Optional[str] = typer.Option(None, help="faithfulness guard: local (default) | ollama | cloud | systemone"),
    route: Optional[str] = typer.Option(None, help="auto (default) | local | cloud"),
    top_k: Optional[int] = typer.Option(None, "--top-k", min=1, help="passages kept for the answer (at most 1000)"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=0, help="budget of the printed report (default 2000; 0: no budget)"),
    as_json: bool = typer.Option(False, "--json", help="print the full report as JSON"),
) -> None:
    """Answer a question with judged, cited evidence and a report of every passage's verdict.

    The report reads: the answer, Assessment, Evidence, Guidance, Sources, then the Legend. It fits --max-tokens
    (ASSAY_MAX_TOKENS, default 2000): whole lines, the answer kept first, then the assessment, guidance, sources and
    evidence; one line counts what was left out. --json keeps everything.

    Examples:

      assay ask "How are retries backed off?"

      assay ask "Where is the session's base URL joined with a request path?" ~/src/myrepo --json

      assay ask "Which exceptions does send raise?" --judge none --max-tokens 800"""
    from assay.flows.query import run_query
    from assay.stages.core.one_shot import mark_one_shot

    mark_one_shot()  # one query in this process: skip loading that pays only over many
    from assay.stages.core.config import MAX_RESULTS

    try:
        _at_most("--top-k", top_k, MAX_RESULTS, "ASSAY_TOP_K")  # 2**31 lost the answer at the int32 snapshot write
        settings = _settings(judge=judge, synth=synth, guard=guard, route=route, top_k=top_k)
        if max_tokens is not None:
            settings = settings.model_copy(update={"max_tokens": max_tokens or None})
        report = run_query(path, question, settings)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    if as_json:
        typer.echo(report.model_dump_json(indent=1))
    else:
        typer.echo(report.text)


@app.command()
def audit(
    path: str = PathArg,
    rejudge: Optional[str] = typer.Option(None, help="re-score stored passages with this judge (local|ollama|cloud|systemone|none)"),
    judge: Optional[str] = typer.Option(None, help="judge for calibration and the injection baseline (default: ASSAY_JUDGE)"),
    labels: Optional[Path] = typer.Option(None, help="your labelled passages (CSV or JSONL) for calibration"),
    since: Optional[str] = typer.Option(None, help="first day to include (YYYY-MM-DD)"),
    until: Optional[str] = typer.Option(None, help="last day to include (YYYY-MM-DD)"),
    baseline: int = typer.Option(50, min=1, help="clean functions scored for the injection baseline"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Audit the judge: score distributions, judge agreement, calibration, and an injection baseline.

    Exits with status 1 when any clean function of the workspace scores above 0.15 for injection.

    Examples:

      assay audit                                  # this workspace's stored judgments

      assay audit --since 2026-11-01 --json        # from a day on, as JSON

      assay audit --labels my_labels.jsonl         # calibrate on your own labelled passages

      assay audit --rejudge systemone              # agreement and kappa with another judge"""
    from assay.flows.audit import run_audit

    try:
        data = run_audit(
            path, _settings(), rejudge=rejudge, labels=str(labels) if labels else None, baseline_n=baseline, judge=judge,
            start=_day(since, "--since"), end=_day(until, "--until"),
        )
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    if as_json:
        typer.echo(json.dumps(data, default=str))
    else:
        typer.echo(Path(data["report_path"]).read_text(encoding="utf-8"))
        typer.echo(f"report: {data['report_path']}")
    if not data["passed"]:
        raise typer.Exit(1)


def _day(text: str | None, option: str):
    """A YYYY-MM-DD option's date; a one-line error naming the option otherwise."""
    from datetime import date

    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{option} {text!r}: not a day; use YYYY-MM-DD, e.g. 2026-11-01") from None


@app.command(name="eval")
def evaluate(
    suite: str = typer.Option("swe-qa", help="swe-qa (SWE-QA questions over PyPI sdists) | semble (code-search NDCG@10) "
                              "| judge (premise checks and injection detection of the local judge) | faithfulness "
                              "(the answer guard on planted faults)"),
    corpus: list[str] = typer.Option([], help="swe-qa: any <name>.jsonl of the questions folder, e.g. requests, pytest, sphinx, "
                                     "pylint, xarray (default: requests and pytest where the folder has them, else every set "
                                     "in it); semble: names in repos.json (default: all of them); "
                                     "faithfulness: PyPI pins NAME==VERSION (default: tenacity, boltons)"),
    judge: list[str] = typer.Option(["local", "none"], help="swe-qa: judges to compare; judge: judges to calibrate "
                                    "(local, none, ollama, cloud, systemone)"),
    limit: Optional[int] = typer.Option(None, min=1, help="only the first N questions of each corpus (faithfulness: N cases per "
                                        "fault kind and corpus, default 40)"),
    questions: Optional[Path] = typer.Option(None, help="swe-qa: the folder (not a file) with <corpus>.jsonl (default: "
                                             "$ASSAY_EVAL_QUESTIONS, else ../shared/eval/swe-qa beside the checkout or the current "
                                             "directory); semble: folder with repos.json and annotations/ (default: "
                                             "../shared/eval/semble); judge: folder of labelled pairs, every <name>.jsonl in it "
                                             "(default: the checkout's tests/benchmarks/judge_labels)"),
    ablate: bool = typer.Option(True, help="semble: also score Assay with each ranking signal switched off"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Evaluate retrieval and judging on the development sets.

    [bold]swe-qa[/bold]: SWE-QA questions over the PyPI sdists their rows' `package` field pins. Prints hit@1/5/10, MRR
    (by qualified name and by line overlap), entity and file recall@10 per configuration, the same for all, named and
    paraphrased questions beside a stock BM25 over the same passages, primaries missing from the index, judge keep/drop
    precision and recall, injection detection on planted BIPIA attacks, and answer cost in tokens. Each row of a set:
    a unique `id`, the `question`, `package` NAME==VERSION, and a `primary_entity` {file, qualname, start_line,
    end_line} and/or `gold_entities` [{file, qualname}] and `gold_files`; every set is checked before any download.
    A figure no question can measure (no gold files, no line spans, no BIPIA attacks) prints "-" (null in --json).

    [bold]judge[/bold]: premise checking on false/true question twins generated from the `ast` facts of httpx, click,
    rich and starlette (recall and false alarms per premise kind, for tuned and held-back phrasings); injection
    detection on BIPIA and Assay's own attack families planted in code and Markdown, with false positives on clean
    code, docs and text that discusses injection; calibration of each --judge on 1,416 (question, passage) pairs
    labelled by reading the code: ECE, precision at recall 0.85, a reliability diagram, and the local judge refitted
    leaving each repository out.

    [bold]faithfulness[/bold]: the local answer guard alone. Answers over the tenacity and boltons sdists, each with one
    planted fault (a file, line or name that is not there; a default, value, parameter, base, return type, exception
    or file the code contradicts; a summary the cited passage does not state) and a faithful twin that differs only
    in the fault: detection per fault kind, false alarms on the twins, and the extractive writer's claims verified.

    [bold]semble[/bold]: semble's code-search benchmark on its development repositories, or on any folder of the
    same shape (--questions): a repository is fetched as its `registry` field says ("PyPI sdist: NAME", "npm
    tarball: NAME 1.2.3"; the newest release when no version is named), from a `path` to a checkout, or as a
    git clone of its `url` at its `revision`. Prints NDCG@10 overall, per repository
    and per category for a plain BM25 (built in the same run), RRF hybrid, Assay's ranking and each ranking
    signal switched off, beside the benchmark's published figures.

    The first run downloads each source tree (pip / npm, into ~/.assay/eval or ASSAY_EVAL_DIR); later runs are offline.

    Examples:

      assay eval --corpus requests --corpus pytest

      assay eval --suite semble

      assay eval --suite judge"""
    try:
        if suite == "semble":
            from assay.flows.evaluate import run_evaluate_semble

            data = run_evaluate_semble(_settings(), repos=corpus or None, semble_dir=str(questions) if questions else None,
                                       ablate=ablate, limit=limit)
        elif suite == "judge":
            from assay.flows.evaluate import run_evaluate_judge

            data = run_evaluate_judge(_settings(), judges=[j for j in judge if j != "none"] or ["local"],
                                      labels_dir=str(questions) if questions else None)
        elif suite == "faithfulness":
            from assay.flows.evaluate import run_evaluate_faithfulness

            data = run_evaluate_faithfulness(_settings(), per_kind=limit, corpora=corpus or None)
        elif suite == "swe-qa":
            from assay.flows.evaluate import run_evaluate

            data = run_evaluate(_settings(), corpora=corpus or None, judges=judge, limit=limit,  # None: the flow picks
                                questions_dir=str(questions) if questions else None)
        else:
            raise ValueError(f"unknown suite {suite!r}; use swe-qa, semble, judge or faithfulness")
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    if as_json:
        typer.echo(json.dumps({k: v for k, v in data.items() if k != "markdown"}, default=str))
    else:
        typer.echo(data["markdown"])
        typer.echo(f"results: {data['output_dir']}")


@app.command()
def server(
    port: int = typer.Option(4200, help="loopback port of the Prefect API and UI"),
    host: str = typer.Option("127.0.0.1", help="address to listen on (keep it loopback in local mode)"),
) -> None:
    """Run a long-lived Prefect server for Assay's flow runs (Ctrl-C stops it).

    While it runs, every `assay` command in any terminal records its flow run there (UI at http://HOST:PORT):
    commands never start a temporary server of their own, and without a server they run the same stages
    directly. Deployments from `prefect.yaml` (scheduled re-index, query, audit) need one too.

    Examples:

      assay server &                 # then use assay as usual; runs appear at http://127.0.0.1:4200

      assay server --port 4300"""
    from assay.flows import prefect_api as api
    from assay.stages.core.llm_clients import require_loopback

    try:
        if not 1 <= port <= 65535:  # 0 would ask the OS for a port whose number the commands never learn
            raise ValueError(f"--port must be 1-65535 (got {port})")
        if _settings().mode == "local":
            require_loopback(f"http://{host}:{port}", "the Prefect server")
        url = api.api_url(host, port)
        if api.answers(url):
            raise RuntimeError(f"port {port} is already in use on {host}: pass --port, or stop what listens there")
        proc = api.start_server(host, port)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    try:
        if not api.wait_until_healthy(url, proc):
            proc.terminate()
            _fail(RuntimeError(f"the Prefect server on {host}:{port} did not start (exit code {proc.poll()}); "
                               "run `prefect server start` to see why"))
            return
        api.write_record(url, proc.pid)
        console.print(f"Prefect server for Assay at {url} (UI http://{host}:{port}); Ctrl-C stops it")
        api.stop_on_signals()  # SIGTERM/SIGHUP as Ctrl-C (a background job ignores SIGINT)
        code = proc.wait()  # returns only when the server died on its own: a supervisor must notice
        _fail(RuntimeError(f"the Prefect server exited (code {code}); commands now run without recording: "
                           "run `assay server` again"))
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(30)
    finally:
        api.clear_record(proc.pid)


@app.command()
def mcp() -> None:
    """Serve the MCP tools over stdio (configure your IDE to launch `assay mcp`; `assay install` does it).

    Workspaces must lie under ASSAY_ALLOWED_ROOTS (default: the folder it starts in). Its flows run on Prefect once
    a Prefect API answers (PREFECT_API_URL, `assay server`, or a private one it starts); tool calls never wait for it.

    Examples:

      ASSAY_ALLOWED_ROOTS=~/src assay mcp"""
    from assay.flows.mcp_server import serve

    serve()


def main() -> None:
    """The `assay` command; it skips the interpreter's teardown at the end (`flows.process_exit`)."""
    from assay.flows.process_exit import (exit_code, exit_now, full_device, lost_output, prepare_streams,
                                           raise_open_file_limit)

    prepare_streams()  # before any output: a cp1252 terminal or a closed stream must not crash a command
    raise_open_file_limit()
    try:
        app()
        code = 0
    except KeyboardInterrupt:
        console.print("interrupted")
        code = 130
    except SystemExit as exc:
        code = exit_code(exc)
    except OSError as exc:
        if (why := full_device(exc)) is None:
            raise
        code = why
    except BaseException as exc:  # a Rust panic in Chroma's bindings (pyo3's PanicException) passes `except Exception`
        if isinstance(exc, GeneratorExit) or os.environ.get("ASSAY_DEBUG"):
            raise
        from assay.stages.core.errors import one_line

        typer.echo(f"error: {one_line(exc)}", err=True)
        code = 2
    exit_now(lost_output(code))


if __name__ == "__main__":
    main()

"""The workspace list (~/.assay/workspaces.json) when it is damaged, of the wrong type or cannot be written, and the
one-line errors of a constrained machine: Assay's home not writable, a full disk SQLite calls "disk I/O error",
out of memory. Each test gets its own ASSAY_HOME (never the real ~/.assay)."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from pathlib import Path

import pytest
import typer

from assay.stages.core import errors, registry
from assay.stages.core.errors import one_line


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "assay-home"
    monkeypatch.setenv("ASSAY_HOME", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    return folder


def listed_file(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    return home / "workspaces.json"


def folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


def set_aside(home: Path) -> list[Path]:
    return sorted(home.glob("workspaces.json.damaged-*"))


def leftovers(home: Path) -> list[str]:
    return sorted(p.name for p in home.glob("*.tmp"))


# 2. a list that cannot be read is set aside, never overwritten


def test_a_truncated_list_is_set_aside_with_a_warning_not_overwritten(tmp_path: Path, home: Path, capsys) -> None:
    one, two, new = folder(tmp_path, "one"), folder(tmp_path, "two"), folder(tmp_path, "new")
    damaged = f'[ "{one}", "{two}",'
    listed_file(home).write_text(damaged)
    registry.register(new)
    assert registry.known() == [str(new)]
    [aside] = set_aside(home)
    assert aside.read_text() == damaged  # the user's entries are kept, to recover by hand
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("warning: the workspace list ") and aside.name in err


def test_an_unreadable_list_is_named_in_one_line_not_reported_as_empty(home: Path) -> None:
    listed_file(home).write_text('["/a", ')
    with pytest.raises(registry.RegistryError) as caught:
        registry.known()
    line = one_line(caught.value)
    assert str(home / "workspaces.json") in line and "fix or delete it" in line and "\n" not in line


def test_mcp_list_workspaces_says_the_list_is_damaged_rather_than_none(home: Path) -> None:
    from assay.flows import mcp_server as m

    listed_file(home).write_text("{not json")
    res = m.list_workspaces()
    assert res.is_error
    assert "no indexed workspaces" not in res.content[0].text and "workspaces.json is damaged" in res.content[0].text
    assert listed_file(home).read_text() == "{not json"  # reading changes nothing


def test_a_list_that_is_a_folder_is_set_aside_and_leaves_no_temporary_files(tmp_path: Path, home: Path) -> None:
    listed_file(home).mkdir()
    (home / "workspaces.json" / "keep").write_text("x")
    ws = folder(tmp_path, "ws")
    registry.register(ws)
    assert registry.known() == [str(ws)]
    [aside] = set_aside(home)
    assert (aside / "keep").read_text() == "x" and leftovers(home) == []


def test_two_set_asides_in_the_same_second_keep_both(tmp_path: Path, home: Path) -> None:
    path = listed_file(home)
    path.write_text("first[")
    registry.register(folder(tmp_path, "a"))
    path.write_text("second[")
    registry.register(folder(tmp_path, "b"))
    assert sorted(p.read_text() for p in set_aside(home)) == ["first[", "second["]


# 3. valid JSON of the wrong type is damage too


@pytest.mark.parametrize("body", ["null", "5", '[1, "/tmp/x"]', "[1, 2]", '[["/tmp/x"]]', '"/"', '{"a": 1}', '[""]'])
def test_json_that_is_not_a_list_of_paths_is_damage_and_never_registers_the_root(tmp_path: Path, home: Path,
                                                                                   body: str) -> None:
    listed_file(home).write_text(body)
    with pytest.raises(registry.RegistryError, match="not a list of folder paths"):
        registry.known()
    ws = folder(tmp_path, "ws")
    registry.register(ws)  # the index run is not stopped by the damaged list
    assert registry.known() == [str(ws)] and "/" not in registry.known()
    assert [p.read_text() for p in set_aside(home)] == [body]


def test_an_empty_file_and_an_empty_list_are_an_empty_list(tmp_path: Path, home: Path) -> None:
    for body in ("", "  \n", "[]"):
        listed_file(home).write_text(body)
        assert registry.known() == []
    registry.register(folder(tmp_path, "ws"))
    assert set_aside(home) == []


def test_mcp_forget_workspace_with_a_damaged_list_forgets_and_warns(tmp_path: Path, home: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows import mcp_server as m

    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    ws = folder(tmp_path, "ws")
    listed_file(home).write_text('[["nested"]]')
    res = m.forget_workspace(str(ws))
    assert not res.is_error, res.content[0].text
    first, warning = res.content[0].text.split("\n")
    assert first == f"nothing to forget: {ws} is not indexed"
    assert warning.startswith("warning: the workspace list") and "set it aside" in warning
    assert [p.read_text() for p in set_aside(home)] == ['[["nested"]]']


# 4. forget checks the list can be written before deleting; a failed write leaves no temporary file


def test_a_failed_write_removes_its_temporary_file_and_names_the_list(tmp_path: Path, home: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = listed_file(home)
    path.write_text(json.dumps([str(tmp_path)]))

    def refuse(src, dst):  # os.replace as a full or read-only disk answers it
        raise OSError(errno.EROFS, "Read-only file system", str(dst))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(registry.RegistryError) as caught:
        registry.forget(tmp_path)
    assert leftovers(home) == []
    assert one_line(caught.value) == (f"cannot write the workspace list {path} (read-only file system); make {home} "
                                      "writable, or set ASSAY_HOME to a writable folder")
    assert json.loads(path.read_text()) == [str(tmp_path)]


def test_register_never_fails_the_index_run_when_the_list_cannot_be_written(tmp_path: Path, home: Path,
                                                                            monkeypatch: pytest.MonkeyPatch,
                                                                            capsys) -> None:
    ws = folder(tmp_path, "ws")
    listed_file(home)
    (home / f"workspaces.{os.getpid()}.tmp").mkdir()  # the temporary file cannot be written
    registry.register(ws)
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"warning: {ws} is indexed but not listed: cannot write the workspace list")
    assert (home / f"workspaces.{os.getpid()}.tmp").is_dir()  # not this call's file: left alone


def test_mcp_forget_workspace_deletes_nothing_when_the_list_cannot_be_written(tmp_path: Path, home: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows import mcp_server as m

    monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", str(tmp_path))
    ws = folder(tmp_path, "ws")
    state = ws / ".assay"
    state.mkdir()
    (state / "manifest.json").write_text("{}")
    (state / "catalog.sqlite").write_text("")
    listed_file(home).write_text(json.dumps([str(ws)]))
    (home / f"workspaces.{os.getpid()}.tmp").mkdir()
    res = m.forget_workspace(str(ws))
    assert res.is_error and "cannot write the workspace list" in res.content[0].text
    assert "\n" not in res.content[0].text
    assert (state / "manifest.json").exists() and (state / "catalog.sqlite").exists()  # the index is kept
    assert registry.known() == [str(ws)]


# 6. Assay's home folder is not a workspace's index


def _raised_from(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as exc:  # noqa: BLE001
        return exc


def test_an_unwritable_assay_home_says_set_assay_home_not_index_a_copy(tmp_path: Path, home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    home.mkdir()
    refused = PermissionError(errno.EACCES, "Permission denied", str(home / "workspaces.json.lock"))
    line = one_line(refused)
    assert line == (f"cannot write Assay's home folder {home} (permission denied): it holds the workspace list and "
                    "downloaded models; set ASSAY_HOME to a writable folder")
    # ASSAY_HOME unset: ~/.assay could not be made; `assay_home`'s own message is kept
    monkeypatch.delenv("ASSAY_HOME")
    default = tmp_path / "user" / ".assay"
    made = _raised_from(ValueError(f"{default} (ASSAY_HOME unset) cannot be created (Permission denied); point "
                                   "ASSAY_HOME at a writable folder"),
                        PermissionError(errno.EACCES, "Permission denied", str(default)))
    assert one_line(made).startswith(f"{default} (ASSAY_HOME unset) cannot be created")
    assert "index a writable copy" not in one_line(made)


def test_a_workspace_index_that_cannot_be_written_keeps_its_own_advice(tmp_path: Path) -> None:
    line = one_line(PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "ws" / ".assay" / "x.sqlite")))
    assert line.startswith(f"cannot write the index at {tmp_path / 'ws' / '.assay'} (permission denied)")


# 7. a full disk SQLite calls "disk I/O error"


class _Space:
    def __init__(self, free_blocks: int) -> None:
        self.f_bavail, self.f_frsize, self.f_flag = free_blocks, 4096, 0


def test_a_disk_io_error_on_a_full_disk_gives_the_disk_full_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "statvfs", lambda path: _Space(0))
    exc = sqlite3.OperationalError("disk I/O error")
    assert errors.disk_full(exc)
    assert one_line(exc) == f"the disk is full (disk I/O error): {errors.DISK_FULL_ADVICE}"


def test_a_disk_io_error_with_space_left_is_not_called_full_but_still_says_what_to_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "statvfs", lambda path: _Space(10**6))
    exc = sqlite3.OperationalError("disk I/O error")
    assert not errors.disk_full(exc)  # a file-size limit keeps its own message in an index run
    line = one_line(exc)
    assert line.startswith("disk I/O error (SQLite could not") and "if the disk is full" in line
    assert "`ulimit -f`" in line


def test_sqlite_full_is_the_disk_full_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert one_line(sqlite3.OperationalError("database or disk is full")).startswith("the disk is full (")


# 8. out of memory


@pytest.mark.parametrize("exc", [
    MemoryError(),
    RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Load model from /x/model.onnx failed:std::bad_alloc"),
    RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Mul node. Status "
                 "Message: bfc_arena.cc:360 Failed to allocate memory for requested buffer of size 46881792"),
    OSError(errno.ENOMEM, "Cannot allocate memory"),
])
def test_out_of_memory_is_one_line_saying_what_to_do(exc: BaseException) -> None:
    line = one_line(exc)
    assert line.startswith("Assay ran out of memory (") and "\n" not in line
    assert "`ulimit -v`" in line and "ASSAY_EMBEDDER=static" in line and "ASSAY_EMBED_BATCH" in line


def test_a_long_onnx_error_keeps_its_cause_in_the_memory_line() -> None:
    text = ("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running Cast node. "
            "Name:'inner.embeddings.word_embeddings.weight_cast' Status Message: " + "x" * 200 + " std::bad_alloc")
    line = one_line(RuntimeError(text))
    assert "std::bad_alloc" in line and len(line) < len(text) + len(errors.MEMORY_ADVICE)


def test_the_cli_prints_the_memory_line(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows.cli import _fail

    monkeypatch.delenv("ASSAY_DEBUG", raising=False)
    with pytest.raises(typer.Exit) as caught:
        _fail(MemoryError())
    assert caught.value.exit_code == 2
    assert capsys.readouterr().err.startswith("error: Assay ran out of memory (MemoryError): close other programs")


def test_the_memory_advice_names_only_real_settings() -> None:
    from assay.stages.core.config import Settings

    fields = Settings.model_fields
    assert "embedder" in fields and "embed_batch" in fields  # ASSAY_EMBEDDER, ASSAY_EMBED_BATCH


def test_an_error_quoting_a_huge_argument_is_cut_to_one_short_line() -> None:
    from assay.stages.core.errors import LONGEST_LINE, one_line

    line = one_line(OSError(36, "File name too long", "/tmp/" + "x" * 200_000))
    assert len(line) <= LONGEST_LINE and line.startswith("[Errno 36] File name too long: '/tmp/xxx")
    assert "characters cut" in line and line.endswith("xxx'")


def test_an_exhausted_open_file_limit_outside_the_store_says_how_to_raise_it() -> None:
    from assay.stages.core.errors import one_line

    line = one_line(OSError(24, "Too many open files", "/x/injection_detector.py"))
    assert line.startswith("too many open files") and "`ulimit -n 4096`" in line and "Errno 24" in line


def test_a_list_saved_with_a_byte_order_mark_is_read_not_set_aside(tmp_path: Path, monkeypatch) -> None:
    from assay.stages.core import registry

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    registry.registry_path().write_bytes(b"\xef\xbb\xbf" + json.dumps([str(tmp_path)]).encode())
    assert registry.known() == [str(tmp_path)]


def test_a_panic_that_escapes_a_command_is_one_line(tmp_path: Path) -> None:
    """pyo3's PanicException (Chroma's bindings at `ulimit -n 8`) is a BaseException: a traceback, before."""
    import subprocess
    import sys

    code = ("import sys\nfrom assay.flows import cli\n"
            "class PanicException(BaseException): pass\n"
            "def boom(*a, **k): raise PanicException('called `Result::unwrap()` on an `Err` value: Too many open files')\n"
            "cli.app = boom\nsys.argv = ['assay', 'status']\ncli.main()\n")
    env = {k: v for k, v in os.environ.items() if k != "ASSAY_DEBUG"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: too many open files") and done.stderr.count("\n") == 1, done.stderr


def test_sqlites_bare_open_failure_at_a_tiny_fd_limit_names_the_limit() -> None:
    """At `ulimit -n 15` `search` printed a bare "unable to open database file"; with descriptors to spare it is
    left as SQLite said it."""
    import subprocess
    import sys

    code = ("import os, resource, sqlite3\nfrom assay.stages.core.errors import one_line\n"
            "err = sqlite3.OperationalError('unable to open database file')\nprint(one_line(err))\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir('/proc/self/fd')) + 4, hard))\n"
            "print(one_line(err))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    spare, exhausted = done.stdout.splitlines()
    assert spare == "unable to open database file"
    assert exhausted.startswith("too many open files (limit ") and "ulimit -n 4096" in exhausted

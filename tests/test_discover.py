"""Discovery: ignore semantics (real gitignore rules via pathspec), skips with reasons, safe symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


from assay.stages.index import discover as discover_mod
from assay.stages.index.discover import discover
from tests.conftest import make_unreadable


def write(root: Path, rel: str, text: str = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def paths(result) -> set[str]:
    return {f.path for f in result.files}


def reasons(result) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


def test_gitignore_semantics_with_globstar_and_negation(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "**/tests/\n*.log.py\n!keep.log.py\nbuild/\n/rootonly.py\n")
    for rel in ["a.py", "src/tests/t.py", "tests/t.py", "deep/x/tests/y.py", "debug.log.py", "keep.log.py",
                "build/out.py", "rootonly.py", "sub/rootonly.py"]:
        write(tmp_path, rel)
    found = paths(discover(tmp_path))
    assert found == {"a.py", "keep.log.py", "sub/rootonly.py"}


def test_assayignore_and_nested_gitignore(tmp_path: Path) -> None:
    write(tmp_path, ".assayignore", "generated/\n")
    write(tmp_path, "pkg/.gitignore", "*.gen.py\n!important.gen.py\n")
    for rel in ["generated/g.py", "pkg/a.gen.py", "pkg/important.gen.py", "pkg/b.py", "other/a.gen.py"]:
        write(tmp_path, rel)
    assert paths(discover(tmp_path)) == {"pkg/important.gen.py", "pkg/b.py", "other/a.gen.py"}


def test_node_modules_and_git_are_pruned_before_walking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "node_modules/lib/index.js", "function f() {}\n")
    write(tmp_path, ".git/config", "[core]\n")
    write(tmp_path, "app.js", "function g() {}\n")
    visited: list[str] = []
    real_scandir = os.scandir
    monkeypatch.setattr(discover_mod.os, "scandir", lambda p: visited.append(str(p)) or real_scandir(p))
    assert paths(discover(tmp_path)) == {"app.js"}
    walked = [os.path.relpath(v, tmp_path) for v in visited]
    assert walked == ["."]  # the root only: neither node_modules nor .git was opened


def test_binary_large_empty_unsupported_and_lockfiles_are_counted(tmp_path: Path) -> None:
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02binary")
    write(tmp_path, "big.py", "x = 1\n" * 300_000)
    write(tmp_path, "empty.py", "")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    write(tmp_path, "package-lock.json", "{}\n")
    write(tmp_path, "ok.py")
    result = discover(tmp_path, max_file_bytes=1_000_000)
    assert paths(result) == {"ok.py"}
    assert reasons(result) == {"blob.py": "binary", "big.py": "too_large", "empty.py": "empty",
                               "image.png": "unsupported_type", "package-lock.json": "lockfile"}


def test_extensionless_scripts_are_read_by_their_shebang(tmp_path: Path) -> None:
    write(tmp_path, "bin/deploy", "#!/usr/bin/env bash\ndeploy() { rsync -a . host:; }\n")
    write(tmp_path, "bin/serve", "#!/usr/bin/env -S python3 -u\nprint('serving')\n")
    write(tmp_path, "bin/start", "#!/bin/sh\nexec node server.js\n")
    write(tmp_path, "LICENSE", "MIT License\n")
    (tmp_path / "bin" / "tool").write_bytes(b"\x7fELF\x02\x01")  # a compiled program
    os.mkfifo(tmp_path / "bin" / "pipe")  # opening it would block: never read
    result = discover(tmp_path)
    assert {f.path: f.language for f in result.files} == {"bin/deploy": "bash", "bin/serve": "python", "bin/start": "bash"}
    assert reasons(result) == {"LICENSE": "unsupported_type", "bin/tool": "unsupported_type", "bin/pipe": "unsupported_type"}


def test_templates_specs_notebooks_and_other_text_people_ask_about_are_indexed(tmp_path: Path) -> None:
    """A migration's `script.py.mako`, a `Makefile.jinja`, a Gherkin spec, a Cython module, a CUDA kernel, a Quarto
    page and a notebook are read (the last two parsed, the rest as windows); a PyTorch checkpoint still is not."""
    write(tmp_path, "migrations/script.py.mako", '"""${message}"""\nrevision = ${repr(up_revision)}\n')
    write(tmp_path, "templates/Makefile.jinja", "html:\n\t{{ sphinx_build }} -b html\n")
    write(tmp_path, "specs/login.feature", "Feature: Login\n  Scenario: wrong password\n")
    write(tmp_path, "fast/sum.pyx", "cpdef double total(double[:] xs):\n    return sum(xs)\n")
    write(tmp_path, "kernels/add.cu", "__global__ void add(float *a) { a[threadIdx.x] += 1; }\n")
    write(tmp_path, "report.qmd", "# Results\n\nThe fit converges.\n")
    write(tmp_path, "scripts/build.bat", "@echo off\npython -m build\n")
    write(tmp_path, "analysis.ipynb", '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    (tmp_path / "model.pt").write_bytes(b"PK\x03\x04\x00\x00weights")
    result = discover(tmp_path)
    assert {f.path: f.language for f in result.files} == {
        "migrations/script.py.mako": "mako", "templates/Makefile.jinja": "jinja", "specs/login.feature": "gherkin",
        "fast/sum.pyx": "cython", "kernels/add.cu": "cuda", "report.qmd": "markdown", "scripts/build.bat": "batch",
        "analysis.ipynb": "notebook"}
    assert reasons(result) == {"model.pt": "unsupported_type"}

def test_generated_files_are_skipped_unless_asked_for(tmp_path: Path) -> None:
    """A generator's file says so at the top (gin's `test.pb.go`, regex's `tests/fowler.rs`); its source is what to
    read. A Django migration says "Generated by Django" but is edited by hand: it stays."""
    write(tmp_path, "api/user.pb.go", "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n")
    write(tmp_path, "tests/fowler.rs", "// DO NOT EDIT. Automatically generated by 'scripts/regex-match-tests.py'\n")
    write(tmp_path, "tsconfig.json", "// @generated by expo-module-scripts\n{}\n")
    write(tmp_path, "migrations/0001_initial.py", "# Generated by Django 4.2 on 2023-01-01\nfrom django.db import migrations\n")
    write(tmp_path, "api/user.proto", "syntax = \"proto3\";\n")
    result = discover(tmp_path)
    assert paths(result) == {"migrations/0001_initial.py", "api/user.proto"}
    assert set(reasons(result).values()) == {"generated"}
    assert len(paths(discover(tmp_path, index_generated=True))) == 5


def test_minified_scripts_and_stylesheets_are_skipped_unless_asked_for(tmp_path: Path) -> None:
    """A minified bundle is a build product (alembic's docs theme, axios' `dist/axios.min.js`); the same code written
    out, and prose with long lines, stay."""
    rules = "".join(f".c{i}{{color:#{i:06x};margin:{i}px}}" for i in range(400))
    functions = "".join(f"function f{i}(a){{return a+{i}}}" for i in range(400))
    write(tmp_path, "docs/_static/theme.css", rules + "\n")
    write(tmp_path, "dist/bundle.js", functions + "\n")
    write(tmp_path, "src/theme.css", rules.replace("}", "}\n"))
    write(tmp_path, "src/bundle.js", functions.replace("}", "}\n"))
    write(tmp_path, "README.md", ("A paragraph that runs on without a break, as many do. " * 80 + "\n\n") * 3)
    result = discover(tmp_path)
    assert reasons(result) == {"docs/_static/theme.css": "minified", "dist/bundle.js": "minified"}
    assert paths(result) == {"src/theme.css", "src/bundle.js", "README.md"}
    assert len(paths(discover(tmp_path, index_generated=True))) == 5


def test_symlinks_loops_and_escapes_are_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    outside = write(tmp_path, "secret/outside.py", "TOKEN = 'x'\n")
    write(ws, "real.py")
    (ws / "escape.py").symlink_to(outside)
    (ws / "inside.py").symlink_to(ws / "real.py")
    (ws / "loop_a.py").symlink_to(ws / "loop_b.py")
    (ws / "loop_b.py").symlink_to(ws / "loop_a.py")
    (ws / "dirloop").mkdir()
    (ws / "dirloop" / "again").symlink_to(ws, target_is_directory=True)
    write(ws, "vendor/lib.py")
    (ws / ".gitignore").write_text("vendor/\n")
    (ws / "lib.py").symlink_to(ws / "vendor" / "lib.py")  # its target is ignored: the link is the only way in
    result = discover(ws)
    assert paths(result) == {"real.py", "lib.py"}
    assert reasons(result) == {"escape.py": "symlink_outside", "loop_a.py": "symlink_broken_or_loop",
                               "loop_b.py": "symlink_broken_or_loop", "dirloop/again": "symlink_dir",
                               "inside.py": "symlink_duplicate"}  # real.py is indexed: every hit would come twice


def test_unreadable_files_are_reported_as_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "a.py")
    locked = write(tmp_path, "locked.py")
    make_unreadable(monkeypatch, locked)
    result = discover(tmp_path)
    assert paths(result) == {"a.py"}
    assert result.unreadable == ["locked.py"]


def test_spaces_and_unicode_in_paths(tmp_path: Path) -> None:
    write(tmp_path, "dir with space/módulo ünï.py", "def f():\n    return 1\n")
    assert paths(discover(tmp_path)) == {"dir with space/módulo ünï.py"}


def test_a_name_with_a_newline_or_other_control_character_is_skipped_and_said(tmp_path: Path) -> None:
    """Every line that cites a file (`search`, receipts, the MCP tools) would break at a newline in its name, and a
    name could then print lines that look like results: such files and folders are skipped, named escaped."""
    write(tmp_path, "bad\nname.py", "def retry():\n    return 1\n")
    write(tmp_path, "tab\tdir/inside.py")
    write(tmp_path, "ok.py")
    result = discover(tmp_path)
    assert paths(result) == {"ok.py"}
    assert reasons(result) == {"bad\\nname.py": discover_mod.CONTROL_IN_NAME, "tab\\tdir": discover_mod.CONTROL_IN_NAME}
    assert all("rename" in s.detail for s in result.skipped)


def test_the_watchers_root_ignore_check_agrees_with_discovery(tmp_path: Path) -> None:
    from assay.stages.index.discover import root_ignore_check

    (tmp_path / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    for rel in ("src/a.py", "build/out.py", "src/debug.log", "src/keep.log", "node_modules/x/index.js", ".assay/m.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    ignored = root_ignore_check(tmp_path)
    assert [r for r in ("src/a.py", "src/keep.log") if ignored(r)] == []
    assert all(ignored(r) for r in ("build/out.py", "src/debug.log", "node_modules/x/index.js", ".assay/m.json"))
    assert {f.path for f in discover(tmp_path, 1_000_000).files} == {"src/a.py"}


def test_lockfiles_without_a_language_are_counted_as_lockfiles(tmp_path: Path) -> None:
    for name in ("yarn.lock", "bun.lockb", "Cargo.lock", "package-lock.json"):
        write(tmp_path, name, "{}\n")
    write(tmp_path, "a.js", "export const a = 1;\n")
    result = discover(tmp_path)
    assert paths(result) == {"a.js"}
    assert set(reasons(result).values()) == {"lockfile"}


def test_a_name_that_is_not_valid_utf8_is_skipped_with_what_to_do(tmp_path: Path) -> None:
    """A Latin-1 name crashed `index --json` (a surrogate cannot be written as JSON) and was dropped as a
    parse error; it is skipped, named printably, with the fix."""
    os.makedirs(tmp_path, exist_ok=True)
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.py"), "w") as handle:
        handle.write("def latin():\n    return 2\n")
    write(tmp_path, "ok.py")
    result = discover(tmp_path)
    assert paths(result) == {"ok.py"}
    [skip] = result.skipped
    assert (skip.path, skip.reason) == ("caf\\udce9.py", discover_mod.UNDECODABLE_NAME)
    assert skip.detail == "the name is not valid UTF-8 (written under another encoding): rename it"
    skip.model_dump_json()  # printable: no surrogate left

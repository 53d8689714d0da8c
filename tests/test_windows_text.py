"""Files from Windows and old Macs: ignore files saved with a byte-order mark or CRLF, lone-CR and UTF-16 sources
counted as the index numbers their lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.stages.index.discover import discover
from assay.stages.query.premise import _line_count, past_the_end


def _found(root: Path) -> set[str]:
    return {f.path for f in discover(root).files}


@pytest.mark.parametrize("name", [".gitignore", ".assayignore"])
def test_an_ignore_file_saved_with_a_byte_order_mark_applies_its_first_rule(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"\xef\xbb\xbfsecret_local.py\r\ndraft.py\r\n")
    for stem in ("secret_local", "draft", "kept"):
        (tmp_path / f"{stem}.py").write_text(f"def {stem}():\n    return 1\n")
    assert _found(tmp_path) == {"kept.py"}


def test_an_ignore_rule_ends_at_a_line_feed_as_in_git(tmp_path: Path) -> None:
    """git reads `a.py\\rb.py\\r` as one rule (which matches neither file); splitting at a lone CR ignored both."""
    (tmp_path / ".gitignore").write_bytes(b"a.py\rb.py\r")
    for stem in ("a", "b"):
        (tmp_path / f"{stem}.py").write_text("x = 1\n")
    assert _found(tmp_path) == {"a.py", "b.py"}


def test_lines_of_lone_cr_and_utf16_files_are_counted_as_the_index_numbers_them(tmp_path: Path) -> None:
    (tmp_path / "mac.py").write_bytes(b"def mac_a():\r    return 1\r\rdef mac_b():\r    return 2\r")
    (tmp_path / "u16.py").write_bytes('def u16_a():\r\n    return 1\r\n\r\ndef u16_b():\r\n    return "\u010a"\r\n'
                                      .encode("utf-16"))
    assert _line_count(tmp_path, "mac.py", lambda f: []) == 5
    assert _line_count(tmp_path, "u16.py", lambda f: []) == 5
    count = lambda f: _line_count(tmp_path, f, lambda _: [])  # noqa: E731
    assert past_the_end("What is at mac.py:4?", ["mac.py"], count) == []
    [finding] = past_the_end("What is at u16.py:8?", ["u16.py"], count)
    assert finding.fact == "`u16.py` has 5 lines; there is no line 8 (u16.py:5)"


def test_a_one_line_file_is_said_to_have_one_line() -> None:
    [finding] = past_the_end("What is at one.py:3?", ["one.py"], {"one.py": 1}.get)
    assert finding.fact == "`one.py` has 1 line; there is no line 3 (one.py:1)"


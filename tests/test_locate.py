"""Locate stage: places a query pastes, the indexed files they name, and the entity at each line."""

from __future__ import annotations

from pathlib import Path

from assay.stages.core.artifacts import Entity
from assay.stages.query.locate import entity_at, locations, resolve
from assay.stages.query.rank import RankConfig, explain, rank
from tests.test_rank import cand


def test_frames_and_compiler_messages_name_places() -> None:
    traceback = ('Traceback (most recent call last):\n  File "/srv/app/tests/test_fmt.py", line 12, in test_pretty\n'
                 '  File "/venv/lib/python3.11/site-packages/_pytest/_io/pprint.py", line 82, in __init__\n'
                 'ValueError: depth must be > 0')
    assert locations(traceback) == [("/srv/app/tests/test_fmt.py", 12, "test_pretty"),
                                    ("/venv/lib/python3.11/site-packages/_pytest/_io/pprint.py", 82, "__init__")]
    assert locations("src/lib.rs:12:5: error[E0308]: mismatched types") == [("src/lib.rs", 12, "")]
    assert locations("at com.acme.Foo.bar(Foo.java:123)") == [("Foo.java", 123, "bar")]
    assert locations("    at Router.handle (/srv/app/lib/router/index.js:45:12)") == [("/srv/app/lib/router/index.js", 45, "handle")]
    assert locations(r"C:\app\Program.cs(12,5): error CS1002") == [("/app/Program.cs", 12, "")]  # the drive is no segment
    assert locations("how does the retry policy back off?") == []
    assert locations("version 1.2:3 of the API") == []  # no extension-like suffix: not a file


def test_a_file_without_an_extension_is_a_place_when_the_index_has_it() -> None:
    """bats' scripts and Makefiles have no extension; `name:number` is read last, and only an indexed file of that
    name makes it a place (`localhost:8080` is none)."""
    assert locations("libexec/bats-core/bats-exec-test:291:5: error: unexpected token") == [
        ("libexec/bats-core/bats-exec-test", 291, "")]
    assert locations("make: *** [Makefile:12: all] Error 1") == [("Makefile", 12, "")]
    assert locations("tool:3 failed after src/lib.rs:12:5") == [("src/lib.rs", 12, ""), ("tool", 3, "")]
    assert locations("GET http://localhost:8080/users at 12:30:45") == []
    files = ["libexec/bats-core/bats-exec-test", "Makefile", "src/lib.rs"]
    assert resolve("/usr/libexec/bats-core/bats-exec-test", files) == ["libexec/bats-core/bats-exec-test"]
    assert resolve("localhost", files) == []


def test_a_pasted_path_finds_the_workspace_file_by_its_longest_suffix() -> None:
    files = ["src/_pytest/_io/pprint.py", "src/_pytest/python.py", "testing/python/approx.py", "a/utils.py", "b/utils.py",
             "c/utils.py", "d/utils.py"]
    assert resolve("/venv/lib/python3.11/site-packages/_pytest/_io/pprint.py", files) == ["src/_pytest/_io/pprint.py"]
    assert resolve("python.py", files) == ["src/_pytest/python.py"]
    assert resolve("/home/me/proj/b/utils.py", files) == ["b/utils.py"]
    assert resolve("utils.py", files) == []  # four files of that name: no one of them
    assert resolve("missing.py", files) == []


def entity(qualname: str, kind: str, start: int, end: int) -> Entity:
    return Entity(id=qualname, file="m.py", language="python", kind=kind, name=qualname.rsplit(".", 1)[-1],
                  qualname=qualname, start_line=start, end_line=end, body="pass", content_hash="h")


def test_the_innermost_entity_spans_the_line() -> None:
    rows = [entity("m.py", "file", 1, 100), entity("Printer", "class", 10, 60), entity("Printer.__init__", "method", 12, 30)]
    assert entity_at(rows, 20).qualname == "Printer.__init__"
    assert entity_at(rows, 40).qualname == "Printer"
    assert entity_at(rows, 80).qualname == "m.py"
    assert entity_at(rows, 200) is None
    one_line = [entity("Heap.delete", "function", 5, 5), entity("Heap.deleteAll", "function", 5, 5)]
    assert entity_at(one_line, 5, "deleteAll").qualname == "Heap.deleteAll"  # a frame's name tells them apart


def test_the_entity_at_a_pasted_place_comes_first_even_in_a_test() -> None:
    located = cand("tests/test_fmt.py", "test_pretty", bm25=2.0, distance=0.6)
    lookalike = cand("pkg/fmt.py", "pretty", bm25=9.0, distance=0.3)
    query = 'File "/srv/app/tests/test_fmt.py", line 12, in test_pretty'
    on = rank(query, [lookalike, located], RankConfig(), located={located.id})
    assert [c.entity for c in on][0] == "test_pretty" and "at the pasted location" in explain(on[0])
    off = rank(query, [lookalike, located], RankConfig(location=False), located={located.id})
    assert [c.entity for c in off][0] == "pretty"


def test_search_finds_the_code_a_pasted_frame_or_message_points_at(indexed_project: Path) -> None:
    """Through the search door, on the indexed fixture: a frame from an installed copy of the package, and the
    message `retry_call` raises with its value filled in."""
    from assay.stages.core.config import Settings
    from assay.stages.query.retrieve import search

    frame = 'File "/usr/lib/python3/site-packages/pkg/session.py", line 24, in send'
    assert search(indexed_project, frame, Settings(), k=3).candidates[0].entity == "Session.send"
    message = "pkg.retry.RetryError: gave up after 5 attempts"
    assert search(indexed_project, message, Settings(), k=3).candidates[0].entity == "retry_call"

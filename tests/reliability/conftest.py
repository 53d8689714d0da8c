"""The reliability suite's ledger: every case records what it tried and whether data was lost.

At the end of the run a summary table prints cases tried, passed and data lost (must be 0).
"""

from __future__ import annotations

import pytest

_LEDGER: dict[str, dict] = {}


class Ledger:
    def __init__(self, name: str) -> None:
        self.entry = _LEDGER.setdefault(name, {"checks": 0, "lost": 0})

    def kept(self, before: set[str], after: set[str]) -> None:
        """Record that every entity in `before` is still in `after` (the test then asserts it)."""
        self.entry["checks"] += 1
        self.entry["lost"] += len(before - after)
        assert before <= after, f"lost entities: {sorted(before - after)[:5]}"

    def check(self) -> None:
        self.entry["checks"] += 1


@pytest.fixture()
def ledger(request: pytest.FixtureRequest) -> Ledger:
    return Ledger(request.node.nodeid.split("::", 1)[-1])


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    reports = [r for key in ("passed", "failed", "error") for r in terminalreporter.stats.get(key, [])
               if getattr(r, "when", "call") == "call" and "reliability" in r.nodeid]
    if not reports:
        return
    passed = sum(r.outcome == "passed" for r in reports)
    lost = sum(e["lost"] for e in _LEDGER.values())
    checks = sum(e["checks"] for e in _LEDGER.values())
    tr = terminalreporter
    tr.section("reliability summary")
    tr.write_line(f"{'cases tried':<14}{'passed':<8}{'failed':<8}{'preservation checks':<21}data lost")
    tr.write_line(f"{len(reports):<14}{passed:<8}{len(reports) - passed:<8}{checks:<21}{lost}")

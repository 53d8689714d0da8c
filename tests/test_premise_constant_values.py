"""A question presupposing a constant's value the code contradicts is flagged, and a default that names a constant
is compared by that constant's value: `max_redirects=DEFAULT_MAX_REDIRECTS` was "not 20" for a true "defaults to 20"."""

from __future__ import annotations

import pytest

from assay.stages.evaluate.premise_set import FLAG_AT
from assay.stages.index.parse import parse_source
from assay.stages.query.premise import check_question, resolver_from

SOURCE = (b"DEFAULT_MAX_REDIRECTS = 20\nDEFAULT_NAME: str = 'client'\nTIMEOUT = compute_timeout()\n\n\n"
          b"class Client:\n    def __init__(self, max_redirects: int = DEFAULT_MAX_REDIRECTS, retries=OTHER_RETRIES):\n"
          b"        self.max_redirects = max_redirects\n")


@pytest.fixture(scope="module")
def resolve():
    return resolver_from(parse_source(SOURCE, "http/config.py", "python", "h").entities)


def flagged(question: str, resolve) -> list[str]:
    return [f.fact for f in check_question(question, resolve) if not f.holds and f.contradicts >= FLAG_AT]


@pytest.mark.parametrize(("false_q", "true_q", "correction"), [
    ("Why is DEFAULT_MAX_REDIRECTS set to 50?", "Why is DEFAULT_MAX_REDIRECTS set to 20?", "`DEFAULT_MAX_REDIRECTS` is `20`, not `50`"),
    ("Why is `DEFAULT_MAX_REDIRECTS` 50?", "Why is `DEFAULT_MAX_REDIRECTS` 20?", "is `20`, not `50`"),
    ("What does it mean that the value of DEFAULT_NAME is 'server'?", "What does it mean that the value of DEFAULT_NAME is 'client'?",
     "is `'client'`, not `'server'`"),
    ("Why does Client.__init__ default max_redirects to 50?", "Why does Client.__init__ default max_redirects to 20?",
     "defaults to `DEFAULT_MAX_REDIRECTS` (`20`), not `50`"),
])
def test_a_constant_s_value_is_checked_and_its_true_twin_is_not_flagged(resolve, false_q: str, true_q: str, correction: str) -> None:
    assert any(correction in f for f in flagged(false_q, resolve)), flagged(false_q, resolve)
    assert flagged(true_q, resolve) == []


def test_values_out_of_sight_are_doubt_not_contradiction(resolve) -> None:
    assert flagged("Why is TIMEOUT set to 5?", resolve) == []  # an expression, not a literal
    assert flagged("Why does Client.__init__ default retries to 3?", resolve) == []  # a constant the index lacks
    assert flagged("Why is DEFAULT_MAX_REDIRECTS set to something large?", resolve) == []  # no literal claimed

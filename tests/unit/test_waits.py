"""The suite's one wait (tests/helpers.wait_for): it returns what the probe saw once the condition holds, and fails
naming what it waited for when the bound passes; only the exceptions it is told to ignore count as "not yet"."""
from __future__ import annotations

import itertools

import pytest
from helpers import wait_for


def test_returns_the_value_that_held():
    counter = itertools.count()
    assert wait_for("three probes", lambda: next(counter), 5, every=0, until=lambda n: n >= 3) == 3


def test_fails_naming_what_and_the_last_value_after_the_bound():
    with pytest.raises(pytest.fail.Exception, match=r"the answer: not within 0.05 s \(last seen: 41\)\nmore"):
        wait_for("the answer", lambda: 41, 0.05, every=0.01, until=lambda n: n == 42, detail=lambda: "more")


def test_ignored_exceptions_are_not_yet_and_others_fail_at_once():
    attempts = iter([ConnectionRefusedError("starting"), ConnectionRefusedError("starting"), "up"])

    def probe():
        answer = next(attempts)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_for("a server", probe, 5, every=0, ignoring=(OSError,)) == "up"
    with pytest.raises(ZeroDivisionError):
        wait_for("a sum", lambda: 1 / 0, 5, ignoring=(OSError,))

"""The errors every floor may raise and the command line turns into exit codes (see loadtest.commands).

They sit at the bottom so that any module can say "bad input" without importing the command line.
"""
from __future__ import annotations


class UsageError(ValueError):
    """Bad input: the message names the option or value and the fix; `loadtest` exits 2."""


class ResourcesNotFound(UsageError):
    """The chart, values files or locustfiles are nowhere loadtest looks (see loadtest.paths)."""


class RunFailed(RuntimeError):
    """Something loadtest started or reached failed (a process, a tool, a server, a cluster): `loadtest` exits 4
    with the message, which says what failed and where its log is (1 is kept for a failed check)."""

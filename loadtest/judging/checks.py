"""The check language (`p95<200ms`, `fail_ratio<1%`, `rps>=5000`) and the exit codes of a judged run.

Its one implementation is plugin/loadtest_checks.py, standard library only, because the chart's Locust master
judges the same checks in its pod (`locust.mode: run`), where this package is not installed. The CLI loads that file,
so a check means the same thing in a pipeline's `loadtest run` and in the chart's Job.
"""
from __future__ import annotations

import textwrap

from .. import paths
from ..errors import UsageError

language = paths.pod_module("loadtest_checks")

Check, Figures, Outcome = language.Check, language.Figures, language.Outcome
PASSED, CHECK_FAILED, BAD_INPUT, INVALID, RUN_FAILED, INTERRUPTED = (
    language.PASSED, language.CHECK_FAILED, language.BAD_INPUT, language.INVALID, language.RUN_FAILED,
    language.INTERRUPTED)
EXIT_CODES, AGGREGATED, PATTERN = language.EXIT_CODES, language.AGGREGATED, language.PATTERN
from_entries, judge, exit_code, show = language.from_entries, language.judge, language.exit_code, language.show
rate_check, abort_outcome = language.rate_check, language.abort_outcome


def exit_codes_text(width: int = 100) -> str:
    """The exit-code table every --help ends with."""
    lines = ["exit codes:"]
    for code, exit in EXIT_CODES.items():
        lines += textwrap.wrap(f"{exit.meaning}. {exit.detail}", width, initial_indent=f"  {code:<5}",
                               subsequent_indent=" " * 7)
    return "\n".join(lines)


def exit_codes_markdown() -> str:
    """The same table for docs/ci.md."""
    rows = [f"| {code} | {exit.meaning}. {exit.detail} |" for code, exit in EXIT_CODES.items()]
    return "\n".join(["| exit code | meaning |", "|---|---|", *rows])


def parse(texts: list[str], option: str = "--check") -> list[Check]:
    """The checks, or a UsageError naming `option` and the fix."""
    try:
        return language.parse_all(texts)
    except language.CheckError as e:
        raise UsageError(f"{option}: {e}") from None

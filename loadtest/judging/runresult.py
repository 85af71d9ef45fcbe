"""A judged run's results folder: what ran, what it measured, its checks and its verdict, in files a pipeline keeps.

    result.json   everything below, for `loadtest compare` and for tools
    checks.xml    JUnit XML: one test case per check, one that the generator was not the limit, one per baseline
    summary.md    the same for a person (a CI job can post it)

The figures, the checks and the verdict are the steady window's (every user running, before the stop); result.json
says which window that was. The runtime adds Locust's own files (report.html, stats*.csv, stats.json) and the run's
series beside them. A folder
is never overwritten: the default one is new for every run (a timestamp), and a given one that holds a run is
refused unless the caller forces it.
"""
from __future__ import annotations

import time
from pathlib import Path

# The folder's files are written by one implementation, standard library only, which the chart's master runs too.
from loadtest_shared import results

from ..errors import UsageError


def check_output(out: Path, force: bool) -> None:
    if (out / results.RESULT).exists() and not force:
        raise UsageError(f"--output {out} holds an earlier run: give another folder, or --force to replace it")


def new_folder(base: Path, name: str, now: float | None = None) -> Path:
    """base/<UTC date-time>-<name>, never one that exists: the default place of a run's results."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    folder, n = base / f"{stamp}-{name}", 1
    while folder.exists():
        n += 1
        folder = base / f"{stamp}-{name}-{n}"
    return folder


def write(report: results.RunReport, out: Path, suite: str = "loadtest run") -> dict[str, Path]:
    """Write (or rewrite) the folder's judged files, each replaced whole."""
    return {kind: Path(path) for kind, path in results.write(report, str(out), suite).items()}

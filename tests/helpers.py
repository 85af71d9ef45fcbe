"""What tests of every layer do alike, written once: wait for a condition, run the CLI in-process, write a run's
folder as `loadtest run` does, read a rendered chart.

A test waits for a condition, not a clock: `wait_for` polls a probe within a bound and, when the bound passes, fails
naming what was awaited and the last thing it saw.
"""
from __future__ import annotations

import os
import re
import select
import time
from pathlib import Path
from typing import Callable, TypeVar

import pytest
import yaml

from loadtest_shared import checks, results, verdict

from loadtest import commands
from loadtest.judging import runresult

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T], timeout: float, *, every: float = 0.5,
             until: Callable[[T], bool] = bool, ignoring: tuple[type[BaseException], ...] = (),
             detail: Callable[[], str] | None = None) -> T:
    """Poll probe() every `every` seconds until until(its value) holds, and return that value. An exception of
    `ignoring` counts as "not yet" (a server still starting); any other, an assertion in the probe included, fails at
    once. After `timeout` seconds the test fails naming `what`, the last value or exception seen, and detail() (a
    log's tail) when given."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            last = value = probe()
            if until(value):
                return value
        except ignoring as e:
            last = e
        if time.monotonic() > deadline:
            more = f"\n{detail()}" if detail else ""
            pytest.fail(f"{what}: not within {timeout:g} s (last seen: {last!r}){more}", pytrace=False)
        time.sleep(every)


def manifests(text: str) -> list[dict]:
    """The objects of a rendered chart (`helm template`'s output), empty documents left out. Read with libyaml: the
    pure-Python loader took a quarter of a second a render, 19 times as long, about a third of the chart layer."""
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d]


def wait_until_flat(what: str, count: Callable[[], float], timeout: float) -> float:
    """Until count() stops rising (the same over two reads a second apart); returns when it last rose (monotonic)."""
    last = {"value": count(), "at": time.monotonic()}

    def rising() -> bool:
        value = count()
        flat = value == last["value"]
        last.update(value=value, at=last["at"] if flat else time.monotonic())
        return not flat or time.monotonic() - last["at"] < 1.0

    wait_for(what, rising, timeout, every=0.5, until=lambda still: not still)
    return last["at"]


def wait_for_line(proc, text: str, timeout: float) -> str:
    """Read proc's standard output (a pipe, not read before) until a line holds `text`, and return that line; fail
    after `timeout` seconds, or when the output ends first. It reads the pipe itself, so no line waits unseen in a
    buffer."""
    fd, pending, seen = proc.stdout.fileno(), b"", b""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            pytest.fail(f"the output ended (exit code {proc.wait()}) before a line with {text!r}:\n"
                        f"{seen[-2000:].decode(errors='replace')}", pytrace=False)
        *lines, pending = (pending + chunk).split(b"\n")
        seen += chunk
        for line in lines:
            if text.encode() in line:
                return line.decode(errors="replace")
    pytest.fail(f"no line with {text!r} within {timeout:g} s:\n{seen[-2000:].decode(errors='replace')}",
                pytrace=False)


def served_or_generator_bound(returncode: int, stdout: str) -> bool:
    """`loadtest local` exits 0 for a run served within its failures, 3 where the verdict it printed is
    generator-bound (the code `loadtest run --local` gives the same run); whichever this machine's cores made it."""
    generator_bound = re.search(r"verdict\s+generator-bound: ", stdout) is not None
    return returncode == (checks.INVALID if generator_bound else checks.PASSED)


def cli(capsys, *argv: str) -> tuple[int, object]:
    """`loadtest ARGV` run in this process: its exit code (returned, or raised by argparse) and what it printed
    (capsys.readouterr(): .out and .err)."""
    try:
        code = commands.main(list(argv))
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr()


def write_run(folder: Path, rps: float = 1000.0, p95: float = 100.0, kind: str = verdict.HEALTHY,
              incomplete: str | None = None, started: float = 1000.0, seconds: float = 60.0, failures: int = 0,
              target: str = "haproxy") -> Path:
    """A run's folder as `loadtest run` writes it (result.json, checks.xml, summary.md), with all requests' figures:
    `rps` for `seconds`, a p95 of `p95` ms (the p50 half of it, the p99 twice it)."""
    percentiles = {f: p95 / 2 for f in checks.PERCENTILES.values()}
    percentiles.update({0.95: p95, 0.99: p95 * 2, 0.999: p95 * 3})
    figures = {checks.AGGREGATED: checks.Figures(checks.AGGREGATED, requests=int(rps * seconds), failures=failures,
                                                 rps=rps, avg_ms=p95 / 3, max_ms=p95 * 4, percentiles_ms=percentiles)}
    report = results.RunReport({"scenario": "keepalive_1kb", "target": target}, started=started,
                                 ended=started + seconds, figures=figures, verdict=verdict.Verdict(kind, "why", "recorded"),
                                 incomplete=incomplete)
    runresult.write(report, folder)
    return folder

"""The whole suite, a layer at a time: what `scripts/test` runs when given no arguments.

Each layer is its own pytest session, so a layer's clusters and processes are gone before the next layer starts (a
session-wide fixture would keep the cluster layer's control plane up, idle noise, through the timing-sensitive
dataplane and node layers). The cluster, journeys and faults layers start in the background, beside the unit and
chart layers (their output printed whole when they end): the cluster layer judges no timing (three sessions share
its files, `OPTIONS`; its CPU, about half of this first phase's, is helm's, kubectl's and its API servers'); the
journeys are the README and docs as a user types them, whose judged runs accept a generator-bound verdict and whose
checks are a user's loose ones, on a machine that is often busy with something else; the faults' runs are light (a
few percent of a core) and judge events and counts, each against the run's own clock, not rates; so are the
dataplane's modules that judge no rate (`BESIDE`: a master's results folder and its bucket, the web UI in a browser,
a worker's last report, a swarm its master stops by itself, the processes' signals). The dataplane and node layers,
which judge rates and CPU shares, then run one at a time with nothing beside them. The end of the output is a
table: the set-up's wall time, then each layer's wall time and test counts, then the slowest tests of the whole
suite, then each failed test with the start of its message.

Exit code: 0 when every layer passed, 1 when a test failed in any layer, else the first other code pytest gave
(2 interrupted, 3 internal error, 4 usage error, 5 no tests collected).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

from conftest import LAYERS

TESTS = Path(__file__).resolve().parent
SLOWEST = 30
FAILURES_LISTED, FAILURE_LINES = 20, 12
# Layers that start in the background with the suite, beside the first layers in the foreground; the layers after
# those wait for all of them.
IN_THE_BACKGROUND = ("cluster", "journeys", "faults")
FIRST = ("unit", "chart")
# Modules of a timing-sensitive layer that judge no rate, no CPU share and no verdict of this machine's (files,
# stores, a browser on the web UI, the processes' signals): a session of their own, named "<layer>, beside", runs
# them in the background beside the first phase, and the layer's own session leaves them out. A test added to one of
# them that judges a rate belongs in another module. (Beside the node layer instead, their quarter of a core delayed a
# worker's heartbeats enough to fail the node layer's estimate of a killed worker's unreported requests, 2026-11-29.
# test_targets.py and test_lean_user.py are not: their runs of a fixed length expect a number of requests, and beside
# the first phase, at 100 % of both cores, one sent 3 of 100, 2026-12-02. Nor is test_one_verdict_prometheus.py: its
# Prometheus scrapes and evaluates every second, and beside the first phase on CI all 21 of its tests failed in its
# set-up, 2026-12-02.)
BESIDE = {"dataplane": ("test_pod_results.py", "test_web_ui.py", "test_s3_store.py", "test_last_report.py",
                          "test_self_stop.py", "test_processes.py")}
BESIDE_SUFFIX = ", beside"
SESSIONS = (*LAYERS, *(f"{layer}{BESIDE_SUFFIX}" for layer in BESIDE))
# A layer's own pytest options. The cluster layer's tests spend their time waiting on control planes (two whole
# cron minutes in one of them), so three sessions share its test files, each with its own control plane; the
# journeys' two shells (the newcomer's, the real node's) run side by side. Both bound the suite's first phase,
# beside the foreground's unit and chart layers. The cluster layer's files go out in its own order
# (tests/cluster/conftest.py, the longest first), not xdist's (the most tests first).
OPTIONS = {"cluster": ("-n", "3", "--dist", "loadfile", "--no-loadscope-reorder"),
           "journeys": ("-n", "2", "--dist", "load")}


@dataclass
class Layer:
    name: str  # a layer's, or "<layer>, beside" for its modules in BESIDE
    seconds: float = 0.0
    exit_code: int = 0
    tests: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (test id, the start of its failure's message)


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def start(layer: Layer, junit: Path, output=None) -> threading.Thread:
    """Start one layer's pytest session (its output to `output`, a file, or this terminal); the thread that stamps
    its end."""
    print(f"\n===== layer {layer.name}{' (in the background)' if output else ''} =====", flush=True)
    layer.seconds = time.monotonic()
    return stamp_the_end(layer, subprocess.Popen(
        [sys.executable, "-m", "pytest", f"--junitxml={junit}", *session_arguments(layer.name)], cwd=TESTS.parent,
        stdout=output, stderr=output))


def session_arguments(name: str) -> list[str]:
    """A session's marker, options and test paths: a layer's folder without its modules in BESIDE, or those
    modules alone for "<layer>, beside"."""
    layer, beside = name.removesuffix(BESIDE_SUFFIX), name.endswith(BESIDE_SUFFIX)
    folder = TESTS / layer
    if beside:
        return ["-m", layer, *(str(folder / module) for module in BESIDE[layer])]
    return ["-m", layer, *OPTIONS.get(layer, ()), *(f"--ignore={folder / module}" for module in BESIDE.get(layer, ())),
            str(folder)]



def stamp_the_end(layer: Layer, process: subprocess.Popen) -> threading.Thread:
    """A thread that waits for a layer's session and stamps its wall time when it ends, not when the suite comes to
    wait for it (the background layers end one after another, and are waited for in a fixed order)."""
    def wait():
        layer.exit_code = process.wait()
        layer.seconds = time.monotonic() - layer.seconds
    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def finish(layer: Layer, ended: threading.Thread, junit: Path) -> list[tuple[float, str]]:
    """Wait for a layer's session to end; fill in its figures and failures; return (seconds, test id) of each of its
    tests."""
    ended.join()
    if not junit.exists():  # pytest stopped before writing it (a usage error, an interrupt while collecting)
        return []
    cases = []
    for suite in ElementTree.parse(junit).getroot().iter("testsuite"):
        layer.tests += int(suite.get("tests", 0))
        layer.failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        layer.skipped += int(suite.get("skipped", 0))
        for case in suite.iter("testcase"):
            name = f"{case.get('classname')}::{case.get('name')}"
            cases.append((float(case.get("time", 0)), name))
            layer.failures += [(name, f"{fault.tag}: {fault.get('message') or fault.text or ''}")
                               for fault in (*case.iter("failure"), *case.iter("error"))]
    return cases


def failures(layers: list[Layer]) -> str:
    """Each failed test's id and the start of its message, at the very end of the output, where a log's tail shows
    it whatever layer it came from (a background layer's own output is printed long before)."""
    listed = [(layer.name, name, message) for layer in layers for name, message in layer.failures]
    rows = [f"\n{len(listed)} failed (the first {FAILURE_LINES} lines of each message):"]
    for layer_name, name, message in listed[:FAILURES_LISTED]:
        rows += [f"[{layer_name}] {name}", *(f"    {line}" for line in message.splitlines()[:FAILURE_LINES])]
    if len(listed) > FAILURES_LISTED:
        rows.append(f"... and {len(listed) - FAILURES_LISTED} more (each layer's output above has them whole)")
    return "\n".join(rows) if listed else ""


def table(setup_s: float, layers: list[Layer], wall_s: float, cases: list[tuple[float, str]]) -> str:
    """The set-up's and each layer's wall time and counts; the total is the wall time of the whole (layers that ran
    side by side are counted once), then the slowest tests."""
    rows = [f"{'step':<18} {'wall':>6} {'tests':>6} {'failed':>6} {'skipped':>7}",
            f"{'set-up':<18} {minutes(setup_s):>6}"]
    rows += [f"{layer.name:<18} {minutes(layer.seconds):>6} {layer.tests:>6} {layer.failed:>6} {layer.skipped:>7}"
             + ("" if layer.exit_code in (0, 1) else f"  (pytest exit {layer.exit_code})") for layer in layers]
    rows.append(f"{'total':<18} {minutes(setup_s + wall_s):>6} {sum(layer.tests for layer in layers):>6} "
                f"{sum(layer.failed for layer in layers):>6} {sum(layer.skipped for layer in layers):>7}")
    rows += ["", f"The {SLOWEST} slowest tests (set-up, call and teardown):"]
    rows += [f"{seconds:7.1f} s  {name}" for seconds, name in sorted(cases, reverse=True)[:SLOWEST]]
    return "\n".join(rows)


def exit_code(layers: list[Layer]) -> int:
    codes = [layer.exit_code for layer in layers]
    return 1 if 1 in codes else next((code for code in codes if code), 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup-seconds", type=float, default=0.0, help="the set-up's wall time, for the table")
    args = parser.parse_args()
    layers, cases, started = {name: Layer(name) for name in SESSIONS}, [], time.monotonic()
    with tempfile.TemporaryDirectory(prefix="loadtest-layers-") as reports:
        junit = {name: Path(reports) / f"{name.replace(BESIDE_SUFFIX, '-beside')}.xml" for name in SESSIONS}
        try:
            background = {}

            def start_in_the_background(names):
                for name in names:
                    log = junit[name].with_suffix(".log").open("w+")
                    background[name] = (start(layers[name], junit[name], log), log)

            start_in_the_background((*IN_THE_BACKGROUND, *(s for s in SESSIONS if s.endswith(BESIDE_SUFFIX))))

            def wait_for_the_background():
                for name, (ended, log) in background.items():
                    cases.extend(finish(layers[name], ended, junit[name]))
                    log.seek(0)
                    print(f"\n===== layer {name} (its output) =====\n{log.read()}", flush=True)
                background.clear()

            for name in LAYERS:
                if name in IN_THE_BACKGROUND:
                    continue
                if name not in FIRST:
                    wait_for_the_background()
                cases += finish(layers[name], start(layers[name], junit[name]), junit[name])
            wait_for_the_background()
        except KeyboardInterrupt:
            print("\ninterrupted", file=sys.stderr)
            return 130
    ordered = [layers[name] for name in SESSIONS]
    print("\n===== suite time =====\n" + table(args.setup_seconds, ordered, time.monotonic() - started, cases)
          + failures(ordered), flush=True)
    return exit_code(ordered)


if __name__ == "__main__":
    sys.exit(main())

"""The fault layer's shared set-up: the chart's judged run (`locust.mode: run`) as local processes, the way the
chart starts it, against the local stack's nginx, whose own count of requests (stub_status) every test holds the
run's result to."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from helpers import wait_for

from loadtest.runtime import stack as stack_module
from loadtest.runtime.locust import RESET_STATS_ENV, Locust
from loadtest.runtime.processes import STARTUP_TIMEOUT_S, Processes
from loadtest.workload import scenarios

RUN_NAME = "run-1"
SPAWNED = re.compile(r"All users spawned|Spawning is complete")


def steady_lines(series: Path) -> int:
    return sum(",steady," in line for line in series.read_text().splitlines()) if series.exists() else 0


# The local stack's start (nginx, the master, each worker up to STARTUP_TIMEOUT_S) and its ramp-up, beside the
# layers that run alongside this one on the same two cores: 30 s was once too short.
RUN_STARTED_TIMEOUT_S = 4 * STARTUP_TIMEOUT_S


def run_local_with_a_fault(out: Path, args: list[str], steady_s: int, fault, timeout_s: float):
    """`loadtest run --local --output OUT ARGS` as a user types it, and `fault(its pid)` once its series.csv has
    `steady_s` steady seconds: (exit code, stdout, stderr, when the fault was injected)."""
    # What it prints, beside the run's folder (which the run creates itself): a pipe nobody reads while it runs
    # could fill.
    printed = {name: out.parent / f"{out.name}.{name}" for name in ("stdout", "stderr")}
    with printed["stdout"].open("w") as stdout, printed["stderr"].open("w") as stderr, subprocess.Popen(
            [sys.executable, "-m", "loadtest", "run", "--local", "--output", str(out), *args], stdout=stdout,
            stderr=stderr, stdin=subprocess.DEVNULL) as proc:
        try:
            wait_for("steady seconds in series.csv", lambda: steady_lines(out / "series.csv") >= steady_s,
                     RUN_STARTED_TIMEOUT_S + steady_s, until=lambda ok: ok or proc.poll() is not None,
                     detail=lambda: "the run printed:\n" + "".join(p.read_text()[-2000:] for p in printed.values()))
            fault(proc.pid)
            injected = time.time()
            proc.wait(timeout=timeout_s)
        finally:
            if proc.poll() is None:  # the test failed: interrupted as a user would, so it stops its stack
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=STARTUP_TIMEOUT_S * 2)
                except subprocess.TimeoutExpired:
                    proc.kill()  # its nginx and Locust would be left running: the SIGKILL only when it hangs
                    proc.wait()
    return proc.returncode, printed["stdout"].read_text(), printed["stderr"].read_text(), injected


class JudgedRun:
    """A headless master with the chart's judged-run settings (LOADTEST_CHECKS, the results folder, LOCUST_RESET_STATS,
    --enable-rebalancing), its workers, and the nginx they load."""

    def __init__(self, folder: Path, exits: ExitStack):
        self.folder, self.store = folder, folder / "store"
        self.backend = exits.enter_context(stack_module.Stack(folder / "stack")).backend()
        self.procs = exits.enter_context(Processes(folder / "logs"))
        self.locust = self.master = None
        self.counted_before, self.reads = 0, 0
        self.steady_rate = 0.0  # the requests a second the target counted in wait_steady's window

    def start(self, users: int = 20, workers: int = 2, run_time_s: int = 30, locustfiles=None, **env: str) -> None:
        """The run, of the keep-alive scenario or of `locustfiles` (a test of the user's, with the plugin)."""
        self.locust = Locust(self.procs, locustfiles or scenarios.get("keepalive_1kb").locustfile, env={
            "LOADTEST_CHECKS": "", RESET_STATS_ENV: "true", "LOADTEST_WAIT": "0.01", "LOADTEST_PATH": "/1kb",
            "LOADTEST_RESULTS_DIR": str(self.store), "LOADTEST_RUN_NAME": RUN_NAME, **env})
        self.counted_before, self.reads = self.backend.requests_counted(), 1
        run = self.store / RUN_NAME  # Locust's own files in the run's folder, as the chart has them
        self.master = self.locust.start_master(
            "-u", str(users), "-r", str(users), "-t", f"{run_time_s}s", "--host", self.backend.http_url,
            "--enable-rebalancing", "--csv", str(run / "stats"), "--json-file", str(run / "stats"),
            "--html", str(run / "report.html"), web=False, expect_workers=workers,
            expect_workers_wait_s=STARTUP_TIMEOUT_S)
        self.locust.start_workers(workers)

    def log(self, name: str = "locust-master") -> str:
        return (self.folder / "logs" / f"{name}.log").read_text(errors="replace")

    def wait_steady(self, requests: int) -> None:
        """Until every user ran and the target counted `requests` more (a condition, not a clock)."""
        # Locust logs its ramp-up's end as "All users spawned", or, when a worker's report of its users came over a
        # second late (a busy host), as "Spawning is complete and report waittime is expired": both mean the same.
        wait_for("the swarm's users all running", lambda: SPAWNED.search(self.log()) is not None,
                 RUN_STARTED_TIMEOUT_S, until=lambda ok: ok or self.master.poll() is not None)
        start, since = self.served(), time.monotonic()
        counted = wait_for(f"{requests:,} requests at the target with every user running",
                           lambda: self.served() - start, STARTUP_TIMEOUT_S * 2,
                           until=lambda n: n >= requests or self.master.poll() is not None)
        self.steady_rate = counted / (time.monotonic() - since)

    def served(self) -> int:
        """The requests nginx counted since the run started, less the reads of its count (each is one)."""
        counted = self.backend.requests_counted()
        self.reads += 1
        return counted - self.counted_before - (self.reads - 1)

    def result(self) -> dict:
        return json.loads((self.store / RUN_NAME / "result.json").read_text())


class MemoryLimits:
    """cgroup v1 memory cgroups with a limit, each holding the processes given to it; removed on exit."""

    def __init__(self):
        self.mount = Path("/sys/fs/cgroup/memory")
        if os.geteuid() != 0 or not (self.mount / "memory.limit_in_bytes").exists():
            pytest.skip("a memory limit needs root and the cgroup v1 memory controller")
        self.created: list[Path] = []

    def limit(self, pid: int, limit_bytes: int) -> None:
        group = self.mount / f"loadtest-test-{os.getpid()}-{len(self.created)}"
        group.mkdir()
        self.created.append(group)
        (group / "memory.limit_in_bytes").write_text(str(limit_bytes))
        (group / "cgroup.procs").write_text(str(pid))

    def remove(self) -> None:
        for group in self.created:
            wait_for(f"{group} empty", lambda g=group: not (g / "cgroup.procs").read_text().strip(), 30)
            group.rmdir()


@pytest.fixture
def memory_limits():
    """Open it before the processes it limits: they have ended when their groups go."""
    limits = MemoryLimits()
    yield limits
    limits.remove()


@pytest.fixture
def judged_run(tmp_path):
    with ExitStack() as exits:
        yield JudgedRun(tmp_path, exits)

"""The one way loadtest starts Locust: a master and its workers (or one standalone process) on 127.0.0.1, through
a run's Processes, so they log beside the run's other processes and stop with them.

The CLI's local run, the sweep's local stack, the calibration, the benchmarks and the tests all start Locust here,
so the command lines they run are the same.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .processes import LOCAL_HOST, Processes, free_port

MASTER = "locust-master"


def command(locustfiles: Path | list[Path]) -> list[str]:
    """`python -m locust -f a.py,b.py` with this interpreter (the one that has Locust and the plugin's packages)."""
    files = locustfiles if isinstance(locustfiles, list) else [locustfiles]
    return [sys.executable, "-m", "locust", "-f", ",".join(str(f) for f in files)]


class Locust:
    """A Locust master (or a standalone process) and the workers it started, all through `procs`."""

    def __init__(self, procs: Processes, locustfiles: Path | list[Path], env: dict[str, str] | None = None,
                 cwd: Path | None = None):
        self.procs, self.cmd, self.env, self.cwd = procs, command(locustfiles), env or {}, cwd
        self.master_port = free_port()
        self.web_port: int | None = None
        self.workers: list[subprocess.Popen] = []

    @property
    def web_url(self) -> str:
        return f"http://{LOCAL_HOST}:{self.web_port}"

    def _ui(self, web: bool) -> list[str]:
        """The web UI on a free port, or none (headless)."""
        if not web:
            return ["--headless"]
        self.web_port = free_port()
        return ["--web-host", LOCAL_HOST, "--web-port", str(self.web_port)]

    def start_master(self, *args: str, web: bool = True, expect_workers: int = 0, expect_workers_wait_s: int = 15,
                     env: dict[str, str] | None = None) -> subprocess.Popen:
        """The master, with its web UI on a free port (`web`) or headless; `args` are the run's own options."""
        ui = self._ui(web)
        expect = (["--expect-workers", str(expect_workers), "--expect-workers-max-wait", str(expect_workers_wait_s)]
                  if expect_workers else [])
        return self.procs.start(MASTER, self.cmd + [
            "--master", "--master-bind-host", LOCAL_HOST, "--master-bind-port", str(self.master_port),
            *ui, *expect, *args], env={**self.env, **(env or {})}, cwd=self.cwd)

    def start_workers(self, count: int) -> list[subprocess.Popen]:
        """Start workers until `count` run (never fewer: a started worker keeps running)."""
        for i in range(len(self.workers), count):
            self.workers.append(self.procs.start(f"locust-worker-{i}", self.cmd + [
                "--worker", "--master-host", LOCAL_HOST, "--master-port", str(self.master_port)],
                env=self.env, cwd=self.cwd))
        return self.workers

    def start_standalone(self, *args: str, web: bool = False, env: dict[str, str] | None = None) -> subprocess.Popen:
        """One process that generates the load itself, headless or with its web UI (`web`)."""
        return self.procs.start("locust", self.cmd + [*self._ui(web), *args], env={**self.env, **(env or {})},
                                cwd=self.cwd)

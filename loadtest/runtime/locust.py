"""The one way loadtest starts Locust: a master and its workers (or one standalone process) on 127.0.0.1, through
a run's Processes, so they log beside the run's other processes and stop with them.

The CLI's local run, the sweep's local stack, the calibration, the benchmarks and the tests all start Locust here,
so the command lines they run are the same. A web UI gets a password of its own for the run (the chart's
`locust.webAuth`, on by default, does the same in a cluster): even on 127.0.0.1, another user of the machine could
otherwise aim the workers at any host.
"""
from __future__ import annotations

import importlib.metadata
import os
import secrets
import subprocess
import sys
from pathlib import Path

from loadtest_shared import settings

from .. import paths
from ..errors import UsageError
from .processes import LOCAL_HOST, Processes, free_port

MASTER = "locust-master"
# Locust resets its statistics once every user runs when this is set, on the master and on each worker (--reset-stats):
# its figures are then the steady window's, what a judged run is judged on.
RESET_STATS_ENV = "LOCUST_RESET_STATS"
# The locustfiles' loadtest_lib protects the web UI with the "user:password" in this variable.


def version() -> str:
    """The installed Locust's version, read from its package's metadata: importing Locust would patch this process
    with gevent (its threads made greenlets, Ctrl-C raised in whichever ran), and the CLI only starts it."""
    try:
        return importlib.metadata.version("locust")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def with_plugin(env: dict[str, str]) -> dict[str, str]:
    """`env` with the product's plugin folder last on PYTHONPATH: the scenarios import its modules (leanhttp,
    loadtest_lib), as in the pods, where one ConfigMap mounts both folders' files in one place."""
    parts = [p for p in env.get("PYTHONPATH", os.environ.get("PYTHONPATH", "")).split(os.pathsep) if p]
    return env if str(paths.PLUGIN) in parts else {**env, "PYTHONPATH": os.pathsep.join([*parts, str(paths.PLUGIN)])}


def command(locustfiles: Path | list[Path]) -> list[str]:
    """`python -m locust -f a.py,b.py` with this interpreter (the one that has Locust and the plugin's packages)."""
    files = locustfiles if isinstance(locustfiles, list) else [locustfiles]
    return [sys.executable, "-m", "locust", "-f", ",".join(str(f) for f in files)]


class Locust:
    """A Locust master (or a standalone process) and the workers it started, all through `procs`."""

    def __init__(self, procs: Processes, locustfiles: Path | list[Path], env: dict[str, str] | None = None,
                 cwd: Path | None = None):
        self.procs, self.cmd, self.env, self.cwd = procs, command(locustfiles), with_plugin(env or {}), cwd
        self.master_port = free_port()
        self.web_port: int | None = None
        self.web_credentials: str | None = None  # "user:password" of the web UI
        self.workers: list[subprocess.Popen] = []

    @property
    def web_url(self) -> str:
        return f"http://{LOCAL_HOST}:{self.web_port}"

    def _ui(self, web: bool, env: dict[str, str]) -> list[str]:
        """The web UI on a free port behind a password of its own (the caller's LOADTEST_WEB_AUTH when `env` has
        one; the locustfiles' loadtest_lib enforces it), or none (headless)."""
        if not web:
            return ["--headless"]
        self.web_port = free_port()
        env.setdefault(settings.WEB_AUTH.env, f"locust:{secrets.token_urlsafe(18)}")
        self.web_credentials = env[settings.WEB_AUTH.env]
        return ["--web-host", LOCAL_HOST, "--web-port", str(self.web_port)]

    def start_master(self, *args: str, web: bool = True, expect_workers: int = 0, expect_workers_wait_s: int = 15,
                     env: dict[str, str] | None = None) -> subprocess.Popen:
        """The master, with its web UI on a free port (`web`) or headless; `args` are the run's own options."""
        env = with_plugin({**self.env, **(env or {})})
        ui = self._ui(web, env)
        expect = (["--expect-workers", str(expect_workers), "--expect-workers-max-wait", str(expect_workers_wait_s)]
                  if expect_workers else [])
        return self.procs.start(MASTER, self.cmd + [
            "--master", "--master-bind-host", LOCAL_HOST, "--master-bind-port", str(self.master_port),
            *ui, *expect, *args], env=env, cwd=self.cwd)

    def _worker(self, name: str) -> subprocess.Popen:
        return self.procs.start(name, self.cmd + [
            "--worker", "--master-host", LOCAL_HOST, "--master-port", str(self.master_port)],
            env=self.env, cwd=self.cwd)

    def start_workers(self, count: int) -> list[subprocess.Popen]:
        """Start workers until `count` run (never fewer: a started worker keeps running)."""
        for i in range(len(self.workers), count):
            self.workers.append(self._worker(f"locust-worker-{i}"))
        return self.workers

    def restart_worker(self, index: int) -> subprocess.Popen:
        """A worker in place of worker `index`, which ended (as its Deployment would start one); its log beside the
        first one's."""
        restarts = sum(1 for name in self.procs.procs if name.startswith(f"locust-worker-{index}."))
        self.workers[index] = self._worker(f"locust-worker-{index}.{restarts + 1}")
        return self.workers[index]

    def start_standalone(self, *args: str, web: bool = False, env: dict[str, str] | None = None) -> subprocess.Popen:
        """One process that generates the load itself, headless or with its web UI (`web`)."""
        env = with_plugin({**self.env, **(env or {})})
        return self.procs.start("locust", self.cmd + [*self._ui(web, env), *args], env=env, cwd=self.cwd)


def user_classes(locustfiles: list[Path], env: dict[str, str] | None = None, timeout_s: float = 60) -> list[str]:
    """The User classes Locust finds in `locustfiles` (`locust --list`): Locust's own loader decides, imports of the
    user's helpers and packages included. Raises UsageError with Locust's last words when it cannot load them."""
    result = subprocess.run(command(locustfiles) + ["--list"], capture_output=True, text=True, timeout=timeout_s,
                            env={**os.environ, **with_plugin(env or {})}, stdin=subprocess.DEVNULL)
    lines = result.stdout.splitlines()
    if result.returncode != 0 or "Available Users:" not in lines:
        last = [line for line in (result.stderr + result.stdout).splitlines() if line.strip()][-3:]
        raise UsageError(f"Locust could not load {locustfiles[0]}:\n  " + "\n  ".join(last))
    return [line.strip() for line in lines[lines.index("Available Users:") + 1:] if line.strip()]

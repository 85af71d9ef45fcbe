"""Processes loadtest starts on this machine: free loopback ports, start with a log file, wait until they answer,
stop by PID (SIGTERM, then SIGKILL)."""
from __future__ import annotations

import os
import random
import socket
import subprocess
import time
from pathlib import Path

from ..errors import RunFailed
from . import http_client

LOCAL_HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 15
STOP_TIMEOUT_S = 10


# Ports handed out lie below the kernel's range of ephemeral ports. A port from bind(0) lies inside it, and before the
# listener given it binds, an outgoing connection can take it as its source port: under a load of new connections
# (http_close sends thousands a second) the range turns over in seconds, and a kube-controller-manager failed with
# "bind: address already in use" on such a port. Below Kubernetes' NodePort range (30000-32767) too.
PORTS = range(20000, 30000)
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()
_random = random.SystemRandom()  # not the random module's state, which forked processes share and repeat


def free_port() -> int:
    """A TCP port nothing listens on right now, on 127.0.0.1, outside the ephemeral range, not handed out before by
    this process."""
    try:
        first_ephemeral = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first_ephemeral = PORTS.stop
    candidates = [port for port in PORTS if port < first_ephemeral and port not in _handed_out]
    for port in _random.sample(candidates, min(len(candidates), 100)):
        with socket.socket() as s:
            try:
                s.bind((LOCAL_HOST, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket() as s:  # none of those tried was free: the kernel's choice, racy as it is
        s.bind((LOCAL_HOST, 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen, timeout: float = STOP_TIMEOUT_S) -> None:
    """Stop a process this program started: SIGTERM, then SIGKILL if it is still there after `timeout`."""
    if proc.poll() is None:
        proc.terminate()
    _wait_or_kill(proc, timeout)


def _wait_or_kill(proc: subprocess.Popen, timeout: float) -> None:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Processes:
    """Processes one run started, each logging to <logs>/<name>.log; all of them are stopped by PID on exit."""

    def __init__(self, logs: Path):
        self.logs = logs
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> subprocess.Popen:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = open(self.logs / f"{name}.log", "wb")
        # A session of its own: a Ctrl-C in the terminal reaches loadtest alone, which stops each process once, by
        # PID (a Locust master stopped twice, by the terminal's SIGINT and then by SIGTERM, writes its final
        # statistics twice, the second time empty).
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def log_tail(self, name: str, lines: int = 20) -> str:
        text = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def logs_text(self) -> str:
        """Every log of this run, in name order (for a failure message)."""
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.logs.glob("*.log")))

    def stop_all(self) -> None:
        """SIGTERM to each process once (a Locust master given two writes its final statistics twice, the second
        time empty), then SIGKILL to any still there after STOP_TIMEOUT_S."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for proc in self.procs.values():
            _wait_or_kill(proc, max(0.1, deadline - time.monotonic()))

    def wait_http(self, name: str, url: str, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Wait until `url` answers, whatever its status; fail early with the log tail if process `name` exits
        first."""
        proc = self.procs[name]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RunFailed(f"{name} exited with {proc.returncode}:\n{self.log_tail(name)}")
            if http_client.status(url, timeout=1) is not None:
                return  # it answers, whatever it says (a 401 of a web UI behind its password, say)
            time.sleep(0.1)
        raise RunFailed(f"{name} did not answer {url} within {timeout_s:.0f} s:\n{self.log_tail(name)}")

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc):
        self.stop_all()

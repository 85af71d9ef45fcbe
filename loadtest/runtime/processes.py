"""Processes loadtest starts on this machine, a run's and the local cluster's alike: free loopback ports, start
with a log file in a session of their own, wait until they answer, stop by PID (SIGTERM, then SIGKILL)."""
from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable
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


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:  # it ended since it was found running
        pass


def tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log, or where it should have been."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text[-lines:])


class Processes:
    """Processes loadtest starts, each logging to <logs>/<name>.log, in a session of its own (a Ctrl-C in the
    terminal reaches loadtest alone, which stops each process once: a Locust master stopped twice, by the terminal's
    SIGINT and then by SIGTERM, writes its final statistics twice, the second time empty), stopped by PID: SIGTERM
    once, SIGKILL after the timeout; a run's are all stopped when it ends (`with`).

    With `pids`, each PID is kept in <pids>/<name>.pid too, so that a later loadtest finds the processes an earlier
    one left running (the local cluster outlives `loadtest cluster up`); such a PID counts only while its command
    line still names `owner`, and a log is appended to, not replaced. `error` is what a wait that fails raises."""

    def __init__(self, logs: Path, pids: Path | None = None, owner: Path | None = None,
                 error: type[RunFailed] = RunFailed):
        self.logs, self.pids, self.owner, self.error = logs, pids, owner, error
        self.procs: dict[str, subprocess.Popen] = {}
        self.commands: dict[str, list[str]] = {}  # what each process was started with, for a restart

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def start(self, name: str, cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> subprocess.Popen:
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.log(name), "ab" if self.pids else "wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**os.environ, **(env or {})}, cwd=cwd or self.owner,
                                    start_new_session=True)
        self.procs[name], self.commands[name] = proc, cmd
        if self.pids:
            (self.pids / f"{name}.pid").write_text(f"{proc.pid}\n")
        return proc

    def pid(self, name: str) -> int | None:
        """The PID of process `name` while it runs: one this process started, or (with `pids`) one whose PID file
        names a process whose command line names `owner`."""
        if proc := self.procs.get(name):
            # Started here: poll() also reaps it. (Its /proc cmdline is briefly empty right after exec.)
            return proc.pid if proc.poll() is None else None
        if not self.pids:
            return None
        try:
            pid = int((self.pids / f"{name}.pid").read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            return None
        # A recycled PID belongs to some other program; a zombie is already dead (its parent has yet to reap it).
        return pid if str(self.owner) in cmdline and state != "Z" else None

    def running(self, names: tuple[str, ...]) -> dict[str, int | None]:
        return {name: self.pid(name) for name in names}

    def log_tail(self, name: str, lines: int = 20) -> str:
        return tail(self.log(name), lines)

    def logs_text(self) -> str:
        """Every log, in name order (for a failure message)."""
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.logs.glob("*.log")))

    def stop(self, names: tuple[str, ...], timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM to each running process of `names` once, SIGKILL to any still there after `timeout`; their PID
        files forgotten."""
        pids = {name: pid for name in names if (pid := self.pid(name))}
        for pid in pids.values():
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while any(self.pid(name) for name in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        for name in pids:
            if pid := self.pid(name):
                _signal(pid, signal.SIGKILL)
        while any(self.pid(name) for name in pids):
            time.sleep(0.05)
        for name in names:
            if name in self.procs:
                self.procs[name].wait()
            if self.pids:
                (self.pids / f"{name}.pid").unlink(missing_ok=True)

    def stop_all(self) -> None:
        self.stop(tuple(self.procs))

    def restart(self, name: str, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop process `name` (SIGTERM, as a service manager would) and start it again with the same command; only
        one this process started."""
        if name not in self.commands:
            raise self.error(f"{name} was not started by this process: stop it and start it again")
        self.stop((name,), timeout)
        self.start(name, self.commands[name])

    def wait(self, what: str, name: str, ready: Callable[[], bool], timeout_s: float) -> None:
        """Poll ready() until it is true; fail early if process `name` exits first, late, each with its log's tail."""
        deadline = time.monotonic() + timeout_s
        while not ready():
            if not self.pid(name):
                code = self.procs[name].returncode if name in self.procs else None
                raise self.error(f"{name} exited{'' if code is None else f' with {code}'} while waiting for "
                                 f"{what}; end of {self.log(name)}:\n{self.log_tail(name, 25)}")
            if time.monotonic() > deadline:
                raise self.error(f"timed out after {timeout_s:.0f} s waiting for {what}; end of "
                                 f"{self.log(name)}:\n{self.log_tail(name, 25)}")
            time.sleep(0.1)

    def wait_http(self, name: str, url: str, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Wait until `url` answers, whatever its status (a 401 of a web UI behind its password, say)."""
        self.wait(f"{url} to answer", name, lambda: http_client.status(url, timeout=1) is not None, timeout_s)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc):
        self.stop_all()

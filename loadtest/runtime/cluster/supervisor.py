"""The control plane's component processes: started in their own session, their PIDs in files, stopped by PID.

A cluster outlives the `loadtest cluster up` that started it, so its processes are found again through PID files
in the state directory, and a PID counts only while its command line still names that directory.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from .errors import ClusterError


def tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text[-lines:])


class Supervisor:
    """The components of the cluster in `state_dir`: each logs to logs/<component>.log, its PID in pids/."""

    def __init__(self, state_dir: Path, components: tuple[str, ...]):
        self.state_dir = state_dir
        self.components = components
        self.logs = state_dir / "logs"
        self.pids = state_dir / "pids"
        self._children: dict[str, subprocess.Popen] = {}
        self._commands: dict[str, list[str]] = {}  # what this process started each component with

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def pid(self, component: str) -> int | None:
        """PID of the component if it is running and really ours (its command line names this state dir)."""
        if proc := self._children.get(component):
            # Started by this process: poll() also reaps it. (Its /proc cmdline is briefly empty right after exec.)
            return proc.pid if proc.poll() is None else None
        try:
            pid = int((self.pids / f"{component}.pid").read_text())
        except (FileNotFoundError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return None
        # A recycled PID belongs to some other program; a zombie is already dead (its parent has yet to reap it).
        return pid if str(self.state_dir) in cmdline and state != "Z" else None

    def running(self) -> dict[str, int | None]:
        return {c: self.pid(c) for c in self.components}

    def spawn(self, component: str, argv: list[str]) -> None:
        with open(self.log(component), "ab") as log:
            # Own session: a Ctrl-C in the terminal that ran `cluster up` must not take the cluster down.
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=self.state_dir, start_new_session=True)
        self._children[component] = proc
        self._commands[component] = argv
        (self.pids / f"{component}.pid").write_text(f"{proc.pid}\n")

    def stop(self, components: tuple[str, ...], timeout: float) -> None:
        """SIGTERM the components' PIDs, SIGKILL what is left after `timeout`, and forget their PID files."""
        pids = {c: p for c in components if (p := self.pid(c))}
        for pid in pids.values():
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while any(self.pid(c) for c in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        for component in pids:
            if pid := self.pid(component):
                os.kill(pid, signal.SIGKILL)
        while any(self.pid(c) for c in pids):
            time.sleep(0.05)
        for component in components:
            if component in self._children:
                self._children.pop(component).wait(timeout=timeout)
            (self.pids / f"{component}.pid").unlink(missing_ok=True)

    def restart(self, component: str, timeout: float) -> None:
        """Stop the component (SIGTERM, as a service manager would) and start it again with the same command; only
        a component this process started."""
        if component not in self._commands:
            raise ClusterError(f"{component} was not started by this process: stop the cluster and start it again")
        self.stop((component,), timeout)
        self.spawn(component, self._commands[component])

    def wait(self, what: str, component: str, ready: Callable[[], bool], timeout: float) -> None:
        """Poll ready() until it is true; fail early if the component died, late with its log tail."""
        deadline = time.monotonic() + timeout
        while not ready():
            if not self.pid(component):
                raise ClusterError(f"{component} exited while waiting for {what}; "
                                   f"end of {self.log(component)}:\n{tail(self.log(component))}")
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                   f"end of {self.log(component)}:\n{tail(self.log(component))}")
            time.sleep(0.1)

"""The external programs loadtest runs (helm, nginx, haproxy, prometheus, the cluster binaries, ...): one lookup.

scripts/setup builds the pinned Go tools into ~/.cache/loadtest/bin and installs the rest with apt, some into
/usr/sbin, which a non-root PATH lacks.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from .. import paths
from ..errors import RunFailed, UsageError

SYSTEM_DIRS = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
VERSION = re.compile(r"\d+\.\d+(\.\d+)?")


class ToolMissing(UsageError):
    """A program loadtest needs is not installed: a set-up step is missing (exit 2, the step named), not a failed
    run."""


def find(name: str) -> str:
    """The absolute path of a tool: the cache's bin first (pinned builds), then PATH, then the system dirs."""
    for candidate in (paths.BIN / name, Path.home() / "go" / "bin" / name):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name) or shutil.which(name, path=SYSTEM_DIRS)
    if not found:
        raise ToolMissing(f"{name} not found: run scripts/setup (it installs every tool loadtest runs)")
    return found


def run(name: str, *args: str, input: str | None = None, timeout: float = 120, error: type[Exception] = RunFailed,
        shown: int | None = None) -> str:
    """Run one of the tools (helm, kubectl, ...) and return what it printed; a failure raises `error` with its
    message, naming the command by its first `shown` arguments (all by default). The one runner of the CLI's outside
    programs that answer and end."""
    result = subprocess.run([find(name), *args], input=input, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise error(f"{name} {' '.join(args[:shown])} failed:\n{(result.stderr or result.stdout).strip()}")
    return result.stdout


def version(name: str, flag: str = "-v") -> str:
    """The first version number a tool prints for `flag`, "unknown", or "not installed"."""
    try:
        path = find(name)
    except ToolMissing:
        return "not installed"
    out = subprocess.run([path, flag], capture_output=True, text=True, timeout=10)
    found = VERSION.search(out.stdout + out.stderr)
    return found.group(0) if found else "unknown"

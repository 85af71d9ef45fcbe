"""A user test's extra Python packages on this machine, installed the way the chart's init containers install them
(pip, hashes required, binary wheels only) into a folder of their own under the cache, one per requirements
content, so a second run starts at once and the project's venv stays as it is."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from .. import paths
from ..errors import RunFailed, UsageError
from ..workload import usertest

INSTALL_TIMEOUT_S = 300


def install(requirements: Path, option: str = "--requirements", progress=print) -> Path:
    """The folder that holds `requirements`' packages (to put on PYTHONPATH), installed now unless cached."""
    try:
        text = requirements.read_text()
    except OSError as e:
        raise UsageError(f"{option} {requirements}: {e.strerror}") from None
    usertest.check_requirements(text, f"{option} {requirements}")
    target = paths.CACHE / "packages" / hashlib.sha256(text.encode()).hexdigest()[:16]
    if (target / ".installed").exists():
        return target
    progress(f"installing the packages of {requirements} into {paths.shown(target)}")
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--require-hashes",
         "--only-binary=:all:", "--upgrade", "--target", str(target), "-r", str(requirements)],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise RunFailed(f"pip could not install {requirements}:\n{result.stderr.strip()[-1500:]}")
    (target / ".installed").write_text(text)
    return target

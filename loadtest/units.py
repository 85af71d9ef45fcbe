"""Kubernetes resource quantities as the plain integers the arithmetic uses (millicores, MiB)."""
from __future__ import annotations

import re

from . import paths
from .errors import UsageError

_units = paths.pod_module("loadtest_units")  # the one parser of durations, the pods' too
DURATION_FORMS = _units.DURATION_FORMS

_CPU = re.compile(r"^(?:(\d+)m|(\d+(?:\.\d+)?))$")
_MEM = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024, "M": 1e6 / 2**20, "G": 1e9 / 2**20}
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|M|G)$")


def parse_cpu_m(text: str | int | float, at_least: int = 0) -> int:
    """'1000m', '1', '1.5' or 2 -> millicores; below `at_least` millicores is refused (a container's CPU: 1)."""
    m = _CPU.match(str(text).strip())
    if not m:
        raise UsageError(f"CPU quantity {text!r} is not like '1000m' or '1.5'")
    millicores = int(m.group(1)) if m.group(1) else round(float(m.group(2)) * 1000)
    if millicores < at_least:
        raise UsageError(f"CPU quantity {text!r}: give at least {cpu(at_least)}, e.g. 1000m")
    return millicores


def parse_memory_mi(text: str, at_least: int = 0) -> int:
    """'512Mi', '1Gi', '1G' -> MiB (rounded down); below `at_least` MiB is refused (a container's memory: 1)."""
    m = _MEMORY.match(str(text).strip())
    if not m:
        raise UsageError(f"memory quantity {text!r} is not like '512Mi' or '1Gi'")
    mib = int(float(m.group(1)) * _MEM[m.group(2)])
    if mib < at_least:
        raise UsageError(f"memory quantity {text!r}: give at least {memory(at_least)}, e.g. 512Mi")
    return mib


def cpu(millicores: int) -> str:
    return f"{millicores}m"


def memory(mib: int) -> str:
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def parse_duration_s(text: str, option: str = "--run-time") -> int:
    """'20', '20s', '2m', '1h30m' -> whole seconds (loadtest_units' forms); `option` names the flag in the error."""
    try:
        seconds = _units.seconds(text)
    except ValueError:
        seconds = None
    if seconds is None or seconds != int(seconds):
        raise UsageError(f"{option}: {text!r} is not like {_units.DURATION_FORMS} in whole seconds")
    return int(seconds)

"""Kubernetes resource quantities as the plain integers the arithmetic uses (millicores, MiB)."""
from __future__ import annotations

import re

from loadtest_shared import units as durations  # the one parser of durations, the pods' too

from .errors import UsageError


_CPU = re.compile(r"^(?:(\d+)m|(\d+(?:\.\d+)?))$")
# Kubernetes' memory quantities: bytes, a binary or decimal suffix, or an exponent (1e9), as the API server writes a
# node's capacity and a pod's requests.
_BYTES = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)(?:[eE](\d+))?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")


def parse_cpu_m(text: str | int | float, at_least: int = 0) -> int:
    """'1000m', '1', '1.5' or 2 -> millicores; below `at_least` millicores is refused (a container's CPU: 1)."""
    m = _CPU.match(str(text).strip())
    if not m:
        raise UsageError(f"CPU quantity {text!r} is not like '1000m' or '1.5'")
    millicores = int(m.group(1)) if m.group(1) else round(float(m.group(2)) * 1000)
    if millicores < at_least:
        raise UsageError(f"CPU quantity {text!r}: give at least {cpu(at_least)}, e.g. 1000m")
    return millicores


def parse_memory_mi(text: str | int, at_least: int = 0) -> int:
    """'512Mi', '1Gi', '1G', '536870912' (bytes), '1e9' -> MiB (rounded down): the one parser of memory quantities,
    the CLI's options and the cluster's objects alike; below `at_least` MiB is refused (a container's memory: 1)."""
    m = _MEMORY.match(str(text).strip())
    if not m:
        raise UsageError(f"memory quantity {text!r} is not like '512Mi' or '1Gi'")
    number, exponent, suffix = m.groups()
    mib = int(float(number) * 10 ** int(exponent or 0) * _BYTES[suffix or ""] // 2**20)
    if mib < at_least:
        raise UsageError(f"memory quantity {text!r}: give at least {memory(at_least)}, e.g. 512Mi")
    return mib


def cpu(millicores: int) -> str:
    return f"{millicores}m"


def memory(mib: int) -> str:
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def parse_duration_s(text: str, option: str = "--run-time") -> int:
    """'20', '20s', '2m', '1h30m' -> whole seconds (loadtest_shared.units' forms); `option` names the flag in the
    error."""
    try:
        seconds = durations.seconds(text)
    except ValueError:
        seconds = None
    if seconds is None or seconds != int(seconds):
        raise UsageError(f"{option}: {text!r} is not like {durations.DURATION_FORMS} in whole seconds")
    return int(seconds)

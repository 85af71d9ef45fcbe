"""The units people and Prometheus write, parsed once: durations and shares. The CLI, the checks, the step load in
the pods and the Prometheus client all read them here, so `2m`, `1h30m`, `500ms` and `5%` mean the same everywhere.

Standard library only: the chart's pods load it beside the scenarios. A value that is not in its unit raises
ValueError with a message that shows the forms it takes; callers add the option or setting it came from.
"""
from __future__ import annotations

import math
import re

DURATION_UNITS_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
DURATION_FORMS = "20, 20s, 2m or 1h30m"  # and 500ms where a part of a second means something
SHARE_FORMS = "5% or 0.05"


def seconds(text: str) -> float:
    """A duration in seconds: a bare number is seconds; else parts such as 500ms, 20s, 2m, 1h30m (Prometheus' and
    Locust's forms, which agree on these)."""
    t = str(text).strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", t):
        return float(t)
    parts = _DURATION_PART.findall(t)
    if not parts or "".join(n + u for n, u in parts) != t:
        raise ValueError(f"{text!r} is not a duration like {DURATION_FORMS}")
    return sum(float(n) * DURATION_UNITS_S[u] for n, u in parts)


def share(text: str) -> float:
    """A share as a fraction: 5% or 0.05 (a number from 0 up)."""
    t = str(text).strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise ValueError(f"{text!r} is not a share like {SHARE_FORMS}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a share from 0 up, like {SHARE_FORMS}")
    return value

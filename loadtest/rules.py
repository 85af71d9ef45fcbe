"""The saturation rules (the monitoring chart's rules/loadtest.rules.yaml): where they are and what they set.

That file is the one source of the thresholds and of the verdict's logic: Prometheus evaluates it in the chart and in
the tests, the dashboards draw its series, and `loadtest local` (loadtest/verdict.py) takes its thresholds from here.
"""
from __future__ import annotations

import functools
import re

import yaml

from . import paths

RULES_FILE = paths.RULES_FILE
# A threshold is a recording rule of a constant: `expr: vector(0.9)`.
CONSTANT = re.compile(r"vector\(\s*([0-9.]+)\s*\)")


@functools.cache
def rules() -> tuple[dict, ...]:
    """Every rule of the file, recording rules and alerts, in file order."""
    return tuple(rule for group in yaml.safe_load(RULES_FILE.read_text())["groups"] for rule in group["rules"])


def recorded() -> list[str]:
    """Names of the recording rules, without repeats, in file order."""
    return list(dict.fromkeys(rule["record"] for rule in rules() if "record" in rule))


def threshold(record: str) -> float:
    """The value of a threshold rule, e.g. threshold("loadtest:cpu_saturation:threshold") == 0.9."""
    for rule in rules():
        if rule.get("record") == record:
            constant = CONSTANT.fullmatch(rule["expr"].strip())
            if not constant:
                raise ValueError(f"{record} in {RULES_FILE} is not a constant like vector(0.9)")
            return float(constant.group(1))
    raise KeyError(f"{RULES_FILE} has no recording rule {record}")

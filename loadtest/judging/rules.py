"""The saturation rules (the monitoring chart's rules/loadtest.rules.yaml): where they are and what they record.

Prometheus evaluates them in the chart and in the tests, and the dashboards draw their series. Their thresholds are
the verdict's (plugin/loadtest_verdict.py), written into the file by `loadtest values` (with_thresholds).
"""
from __future__ import annotations

import functools
import re

import yaml

from .. import paths
from . import verdict

RULES_FILE = paths.RULES_FILE


@functools.cache
def rules() -> tuple[dict, ...]:
    """Every rule of the file, recording rules and alerts, in file order."""
    return tuple(rule for group in yaml.safe_load(RULES_FILE.read_text())["groups"] for rule in group["rules"])


def recorded() -> list[str]:
    """Names of the recording rules, without repeats, in file order."""
    return list(dict.fromkeys(rule["record"] for rule in rules() if "record" in rule))


def with_thresholds(text: str) -> str:
    """The rules file's text with each threshold's constant (`expr: vector(0.9)` of its recording rule) written from
    the verdict's THRESHOLDS (plugin/loadtest_verdict.py): Prometheus judges by the numbers every other path does."""
    for record, value in verdict.THRESHOLDS.items():
        text, found = re.subn(rf"(- record: {re.escape(record)}\n\s+expr: vector\()[^)]*(\))", rf"\g<1>{value:g}\g<2>",
                              text)
        if found != 1:
            raise ValueError(f"{RULES_FILE} has no threshold rule {record} written as `- record:` then "
                             "`expr: vector(…)`")
    return text

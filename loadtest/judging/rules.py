"""The saturation rules (the monitoring chart's rules/loadtest.rules.yaml): where they are and what they record.

Prometheus evaluates them in the chart and in the tests, and the dashboards draw their series. Their thresholds and
their verdict are the verdict's (plugin/loadtest_verdict.py: THRESHOLDS, CAUSES), written into the file by `loadtest
values` (with_thresholds, with_verdict).
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


VERDICT_BEGIN = "      # verdict:begin (written by `loadtest values` from plugin/loadtest_verdict.py's CAUSES; edit them there)\n"
VERDICT_END = "      # verdict:end\n"


def verdict_rules() -> str:
    """`loadtest:verdict` at each steady evaluation, one recording rule a kind, from the verdict's CAUSES: a kind
    holds where one of its causes does and no cause before it (the judge's order, the first cause decides)."""
    lines = ["      # The verdict at each steady evaluation, one series per release labelled with its kind: the first of",
             "      # the verdict's causes (loadtest_verdict.CAUSES) that holds, in their order:",
             *(f"      #   {c.name}: {c.kind}" for c in verdict.CAUSES)]
    for kind in dict.fromkeys(c.kind for c in verdict.CAUSES):
        terms = []
        for i, cause in enumerate(verdict.CAUSES):
            if cause.kind != kind:
                continue
            term = [f"            ({cause.rule})"]
            if i:
                term += ["            unless on (release) (",
                         *(f"              {'or ' if j else ''}({before.rule})"
                           for j, before in enumerate(verdict.CAUSES[:i])),
                         "            )"]
            terms.append("\n".join(term))
        lines += ["      - record: loadtest:verdict", "        expr: |", "          group by (release) (",
                  "\n          or\n".join(terms), "          )", "        labels:", f"          verdict: {kind}"]
    return "\n".join(lines) + "\n"


def with_verdict(text: str) -> str:
    """The rules file's text with its verdict rules written from the verdict's CAUSES (verdict_rules)."""
    begin, end = text.find(VERDICT_BEGIN), text.find(VERDICT_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{RULES_FILE} has no verdict markers ({VERDICT_BEGIN.strip()} ... {VERDICT_END.strip()})")
    return text[:begin + len(VERDICT_BEGIN)] + verdict_rules() + text[end:]


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

"""The saturation rules (the monitoring chart's rules/loadtest.rules.yaml): where they are and what they record.

Prometheus evaluates them in the chart and in the tests, and the dashboards draw their series. Their thresholds and
their verdict are the verdict's (plugin/loadtest_shared/verdict.py: THRESHOLDS, CAUSES), and their advice tune's
(loadtest/judging/tuning.py: ADVICE), written into the file by `loadtest values` (with_thresholds, with_verdict).
"""
from __future__ import annotations

import functools
import re

import yaml

from loadtest_shared import verdict

from .. import paths
from . import tuning



@functools.cache
def rules() -> tuple[dict, ...]:
    """Every rule of the file, recording rules and alerts, in file order."""
    return tuple(rule for group in yaml.safe_load(paths.RULES_FILE.read_text())["groups"] for rule in group["rules"])


def recorded() -> list[str]:
    """Names of the recording rules, without repeats, in file order."""
    return list(dict.fromkeys(rule["record"] for rule in rules() if "record" in rule))


VERDICT_BEGIN = "      # verdict:begin (written by `loadtest values` from plugin/loadtest_shared/verdict.py's CAUSES; edit them there)\n"
VERDICT_END = "      # verdict:end\n"
ADVICE_BEGIN = "      # advice:begin (written by `loadtest values` from loadtest/judging/tuning.py's ADVICE; edit it there)\n"
ADVICE_END = "      # advice:end\n"
PENDING = "loadtest:workers_pending:count"


def _first_of(terms: list[tuple[str, list[str]]]) -> str:
    """A rule's expression: each term's condition where none of the conditions listed with it holds."""
    out = []
    for condition, before in terms:
        term = [f"            ({condition})"]
        if before:
            term += ["            unless on (release) (",
                     *(f"              {'or ' if j else ''}({b})" for j, b in enumerate(before)),
                     "            )"]
        out.append("\n".join(term))
    return "\n          or\n".join(out)


def _record(record: str, label: str, value: str, expr: str) -> list[str]:
    return [f"      - record: {record}", "        expr: |", "          group by (release) (", expr, "          )",
            "        labels:", f"          {label}: {value}"]


def verdict_rules() -> str:
    """`loadtest:verdict` at each steady evaluation, one recording rule a kind, from the verdict's CAUSES: a kind
    holds where one of its causes does and no cause before it (the judge's order, the first cause decides)."""
    causes = verdict.CAUSES
    lines = ["      # The verdict at each steady evaluation, one series per release labelled with its kind: the first of",
             "      # the verdict's causes (loadtest_shared.verdict.CAUSES) that holds, in their order:",
             *(f"      #   {c.name}: {c.kind}" for c in causes)]
    for kind in dict.fromkeys(c.kind for c in causes):
        terms = [(c.rule, [b.rule for b in causes[:i]]) for i, c in enumerate(causes) if c.kind == kind]
        lines += _record("loadtest:verdict", "verdict", kind, _first_of(terms))
    return "\n".join(lines) + "\n"


def advice_rules() -> str:
    """`loadtest:advice`, tune's diagnosis over the rules' window, one recording rule a diagnosis, from tune's ADVICE:
    worker pods Pending for the window first; else the diagnosis of the first of the verdict's causes that held over
    the window (their `window_rule`), narrowed where a cause has two."""
    causes = verdict.CAUSES
    lines = ["      # The next step, `loadtest tune`'s diagnosis (loadtest/judging/tuning.py: ADVICE) over its window, the",
             "      # last minute's steady evaluations: worker pods Pending for that minute; else the diagnosis of the first",
             "      # of the verdict's causes that held over it. One series per release, the diagnosis in its label",
             "      # `advice`; none while no test runs. tune adds the numbers (how many workers the nodes hold, nodes to",
             "      # add and their cost) that Prometheus cannot know.",
             *(f"      #   {c.name}: {', '.join(d for d, _ in tuning.ADVICE[c.name].diagnoses) or 'no advice'}"
               for c in causes)]
    lines += _record("loadtest:advice", "advice", tuning.WORKERS_PENDING, f"            {PENDING}")
    for diagnosis in tuning.DIAGNOSES[1:]:
        terms = [(f"{c.window_rule}{f' {narrow}' if narrow else ''}", [PENDING, *(b.window_rule for b in causes[:i])])
                 for i, c in enumerate(causes) for d, narrow in tuning.ADVICE[c.name].diagnoses if d == diagnosis]
        lines += _record("loadtest:advice", "advice", diagnosis, _first_of(terms))
    return "\n".join(lines) + "\n"


def _between(text: str, begin: str, end: str, body: str) -> str:
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"{paths.RULES_FILE} has no markers {begin.strip()} ... {end.strip()}")
    return text[:start + len(begin)] + body + text[stop:]


def with_verdict(text: str) -> str:
    """The rules file's text with its verdict and advice rules written from the verdict's CAUSES and tune's ADVICE
    (verdict_rules, advice_rules)."""
    return _between(_between(text, VERDICT_BEGIN, VERDICT_END, verdict_rules()), ADVICE_BEGIN, ADVICE_END,
                    advice_rules())


def with_thresholds(text: str) -> str:
    """The rules file's text with each threshold's constant (`expr: vector(0.9)` of its recording rule) written from
    the verdict's THRESHOLDS (plugin/loadtest_shared/verdict.py): Prometheus judges by the numbers every other path
    does."""
    for record, value in verdict.THRESHOLDS.items():
        text, found = re.subn(rf"(- record: {re.escape(record)}\n\s+expr: vector\()[^)]*(\))", rf"\g<1>{value:g}\g<2>",
                              text)
        if found != 1:
            raise ValueError(f"{paths.RULES_FILE} has no threshold rule {record} written as `- record:` then "
                             "`expr: vector(…)`")
    return text

"""Pass/fail checks of a run, one syntax wherever they are given: `loadtest run --check`, the chart's
`locust.run.checks` (the master of `locust.mode: run` judges them in its pod, where only the standard library and
Locust are), and `loadtest compare`'s figures.

    p95<200ms   p99[/checkout]<=1s   avg<50ms   max<2s   fail_ratio<1%   rps>=5000

A check is METRIC[NAME] OP NUMBER UNIT. METRIC is a response-time percentile (p50 p75 p90 p95 p99 p99.9), avg or max
(in ms or s), fail_ratio (% or a fraction) or rps (requests per second, no unit). NAME picks one request name (all
its methods together); without it the check judges all requests together. OP is <, <=, > or >=.

Figures come from Locust's own statistics, read the way Locust computes them: the --json-file of a run, or the
statistics in memory, on the master.

EXIT_CODES is the one map of exit codes: a judged run's (the CLI's and the chart's Job's) and every `loadtest`
command's. `loadtest --help`, each command's --help and docs/ci.md show it (`loadtest docs` writes the table).
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from . import units, verdict

PASSED, CHECK_FAILED, BAD_INPUT, INVALID, RUN_FAILED, INTERRUPTED = 0, 1, 2, 3, 4, 130


@dataclass(frozen=True)
class ExitCode:
    meaning: str  # what a run's log, result.json and summary say
    detail: str  # what a pipeline makes of it: the tables in --help and docs/ci.md


EXIT_CODES = {
    PASSED: ExitCode("every check passed", "Without checks: the command did what was asked."),
    CHECK_FAILED: ExitCode(
        "a check failed",
        "Only that: a run's check or failure ratio, an --abort-on condition that stopped it early, a regression "
        "against the baseline, a --check of generated files. "
        "A pipeline can read 1 as \"the target missed its bar\"."),
    BAD_INPUT: ExitCode(
        "bad input (an option, a value, a check): nothing ran",
        "Or a program is not installed. The message names the option or value and the fix, or the set-up step."),
    INVALID: ExitCode(
        "invalid: the load generator, not the target, was the limit; the figures are not the target's",
        "Never record them as the service's capacity: add workers or cores and run again. A run that lost workers "
        "while every user ran is invalid too: run it again (docs/faults.md)."),
    RUN_FAILED: ExitCode(
        "the run could not be made or was cut short (or sent no request): nothing was judged",
        "A process, tool, server or cluster failed; the folder keeps what was measured, marked incomplete, and the "
        "message names what failed."),
    INTERRUPTED: ExitCode("interrupted (Ctrl-C)", "The folder is kept, marked incomplete."),
}
AGGREGATED = "Aggregated"  # Locust's name for all requests together

PERCENTILES = {"p50": 0.5, "p75": 0.75, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p99.9": 0.999}
TIME_METRICS = (*PERCENTILES, "avg", "max")
OPERATORS = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}

_NAME = r"(?:\[[^\[\]]+\])?"
_OP = r"\s*(?:<=|>=|<|>)\s*"
_NUMBER = r"[0-9]+(?:\.[0-9]+)?\s*"
# The whole language as one regular expression: the chart's schema validates `locust.run.checks` with it.
PATTERN = ("^\\s*(?:(?:" + "|".join(re.escape(m) for m in TIME_METRICS) + ")" + _NAME + _OP + _NUMBER + "(?:ms|s)"
           + "|fail_ratio" + _NAME + _OP + _NUMBER + "%?"
           + "|rps" + _NAME + _OP + _NUMBER + ")\\s*$")
PARTS = re.compile(r"^(?P<metric>[a-z_]+[0-9.]*)(?:\[(?P<name>[^\[\]]+)\])?\s*(?P<op><=|>=|<|>)\s*"
                   r"(?P<number>[0-9.]+)\s*(?P<unit>[a-z%]*)$")
EXAMPLES = "p95<200ms, p99[/checkout]<=1s, fail_ratio<1%, rps>=5000"


class CheckError(ValueError):
    """A check that is not in the language; the message names it and the fix."""


@dataclass(frozen=True)
class Check:
    text: str
    metric: str  # a key of PERCENTILES, avg, max, fail_ratio or rps
    name: str  # a request name, or AGGREGATED
    op: str
    limit: float  # ms for times, a fraction for fail_ratio, requests per second for rps

    def __str__(self) -> str:
        return self.text


def parse(text: str) -> Check:
    text = text.strip()
    parts = PARTS.match(text)
    if not parts:
        raise CheckError(f"check {text!r} is not METRIC[NAME] OP NUMBER UNIT, e.g. {EXAMPLES}")
    metric, name, op, number, unit = parts.group("metric", "name", "op", "number", "unit")
    if not re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", number):
        raise CheckError(f"check {text!r}: {number!r} is not a number")
    value = float(number)
    if metric in TIME_METRICS:
        if unit not in ("ms", "s"):
            raise CheckError(f"check {text!r}: give {metric} a unit, ms or s, e.g. {metric}<200ms")
        value = units.seconds(number + unit) * 1000
    elif metric == "fail_ratio":
        if unit not in ("", "%"):
            raise CheckError(f"check {text!r}: fail_ratio is a percentage (1%) or a fraction (0.01)")
        value = units.share(number + unit)
        if value > 1:
            raise CheckError(f"check {text!r}: a fail ratio is at most 100% (or 1)")
    elif metric == "rps":
        if unit:
            raise CheckError(f"check {text!r}: rps takes no unit, e.g. rps>=5000")
    else:
        raise CheckError(f"check {text!r}: no metric {metric!r}; one of {', '.join(TIME_METRICS)}, fail_ratio, rps")
    return Check(text, metric, name or AGGREGATED, op, value)


# A comma outside [NAME] (a request name may hold one), or a new line.
SEPARATOR = re.compile(r",(?![^\[]*\])|\n")


def parse_all(texts) -> list[Check]:
    """Checks given one per item, or several in one item separated by commas or new lines (an env variable)."""
    found = []
    for text in texts:
        parts = [part for part in SEPARATOR.split(text) if part.strip()]
        if text.strip() and not parts:
            raise CheckError(f"check {text!r} holds no check, only separators; give one such as {EXAMPLES}")
        found += [parse(part) for part in parts]
    return found


@dataclass(frozen=True)
class Figures:
    """What one request name (or all of them) measured over the run."""

    name: str
    requests: int
    failures: int
    rps: float
    avg_ms: float
    max_ms: float
    percentiles_ms: dict  # fraction -> ms, PERCENTILES' fractions

    @property
    def fail_ratio(self) -> float:
        return self.failures / self.requests if self.requests else 0.0

    def value(self, metric: str) -> float:
        if metric in PERCENTILES:
            return self.percentiles_ms[PERCENTILES[metric]]
        return {"avg": self.avg_ms, "max": self.max_ms, "fail_ratio": self.fail_ratio, "rps": self.rps}[metric]


def percentile(histogram: dict, fraction: float) -> float:
    """Locust's own percentile of a histogram of rounded response times (locust.stats): the smallest time below which
    all but int(requests * (1 - fraction)) requests fell, so the figures agree with its CSV and HTML report."""
    total = sum(histogram.values())
    if not total:
        return 0.0
    allowed_above = int(total * fraction)
    seen = 0
    for ms in sorted(histogram, reverse=True):
        seen += histogram[ms]
        if total - seen <= allowed_above:
            return ms
    return min(histogram)


# The key that names an entry's master where the statistics of several are side by side (a run from several
# releases): each master's rate is over its own window, and the whole's RPS is their sum, as its requests are.
SOURCE = "loadtest_source"


def _figures(name: str, entries: list[dict]) -> Figures:
    histogram: dict[float, int] = {}
    for e in entries:
        for ms, count in e["response_times"].items():
            histogram[float(ms)] = histogram.get(float(ms), 0) + count
    requests = sum(e["num_requests"] for e in entries)
    sources: dict[str | None, list[dict]] = {}
    for e in entries:
        sources.setdefault(e.get(SOURCE), []).append(e)
    return Figures(
        name=name, requests=requests, failures=sum(e["num_failures"] for e in entries),
        rps=sum(map(_rate, sources.values())),
        avg_ms=sum(e["total_response_time"] for e in entries) / requests if requests else 0.0,
        max_ms=max((e["max_response_time"] or 0 for e in entries), default=0.0),
        percentiles_ms={f: percentile(histogram, f) for f in PERCENTILES.values()},
    )


def _rate(entries: list[dict]) -> float:
    """One master's requests a second: its entries' requests over the span from the first start to the last."""
    starts = [e["start_time"] for e in entries]
    ends = [e["last_request_timestamp"] for e in entries if e["last_request_timestamp"]]
    seconds = max(ends) - min(starts) if starts and ends else 0
    return sum(e["num_requests"] for e in entries) / seconds if seconds > 0 else 0.0


def from_entries(entries: list[dict]) -> dict[str, Figures]:
    """Figures per request name and AGGREGATED from Locust's serialized statistics (its --json-file, or
    `[e.serialize() for e in stats.entries.values()]` on the master)."""
    by_name: dict[str, list[dict]] = {}
    for e in entries:
        by_name.setdefault(e["name"], []).append(e)
    figures = {name: _figures(name, group) for name, group in by_name.items()}
    figures[AGGREGATED] = _figures(AGGREGATED, entries)
    return figures


@dataclass(frozen=True)
class Outcome:
    check: Check
    measured: float | None  # None: the run has no request of that name (or none at all)
    passed: bool

    def describe(self) -> str:
        c = self.check
        if self.measured is None:
            named = "" if c.name == AGGREGATED else f" named {c.name!r}"
            return f"{c.text}: FAILED, no request{named} in this run"
        return f"{c.text}: {show(c.metric, self.measured)} {'passed' if self.passed else 'FAILED'}"


def show(metric: str, value: float) -> str:
    if metric == "fail_ratio":
        return f"{value:.2%}"
    if metric == "rps":
        return f"{value:,.1f} RPS"
    return f"{value:g} ms"


def judge(checks: list[Check], figures: dict[str, Figures]) -> list[Outcome]:
    outcomes = []
    for check in checks:
        found = figures.get(check.name)
        measured = found.value(check.metric) if found is not None and found.requests else None
        passed = measured is not None and OPERATORS[check.op](float(measured), check.limit)
        outcomes.append(Outcome(check, measured, passed))
    return outcomes


def held(offered_rps: float, achieved_rps: float) -> bool:
    """The open model's offered rate was sent: achieved within the verdict's ACHIEVED_SHARE of it. Below it the run
    measured a smaller load than it was asked to, and never passes (rate_check); the arrival-rate sweep's knee is
    the first rate not held."""
    return achieved_rps >= offered_rps * verdict.ACHIEVED_SHARE


def rate_check(offered_rps: float) -> Check:
    """The check every open-model run is held to beside its own: all requests together at verdict.ACHIEVED_SHARE of the
    offered rate or more. A run that sent less judged another load than the one asked for."""
    limit = offered_rps * verdict.ACHIEVED_SHARE
    return Check(f"rps>={limit:g} (the offered {offered_rps:g}/s, {verdict.ACHIEVED_SHARE:.0%} held)", "rps",
                 AGGREGATED, ">=", limit)


def abort_outcome(condition: Check, measured: float) -> Outcome:
    """A run stopped early by `condition` (an --abort-on, loadtest_abort) as a failed outcome among its checks."""
    return Outcome(Check(f"abort-on {condition.text}", condition.metric, condition.name, condition.op,
                         condition.limit), measured, passed=False)


def exit_code(outcomes: list[Outcome], generator_bound: bool, requests: int) -> int:
    """Generator-bound wins over the checks: neither a pass nor a failure of the target can be read from it. A run
    without a single request judged nothing: it failed as a run, checks or none."""
    if generator_bound:
        return INVALID
    if not requests:
        return RUN_FAILED
    return PASSED if all(o.passed for o in outcomes) else CHECK_FAILED


def exit_codes_text(width: int = 100) -> str:
    """The exit-code table every `loadtest` --help ends with."""
    lines = ["exit codes:"]
    for code, exit in EXIT_CODES.items():
        lines += textwrap.wrap(f"{exit.meaning}. {exit.detail}", width, initial_indent=f"  {code:<5}",
                               subsequent_indent=" " * 7)
    return "\n".join(lines)


def exit_codes_markdown() -> str:
    """The same table for docs/ci.md."""
    rows = [f"| {code} | {exit.meaning}. {exit.detail} |" for code, exit in EXIT_CODES.items()]
    return "\n".join(["| exit code | meaning |", "|---|---|", *rows])

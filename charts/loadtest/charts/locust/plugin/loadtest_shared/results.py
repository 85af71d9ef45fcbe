"""A judged run's results folder, and a run held to a pinned baseline: standard library only, because the chart's
Locust master writes the same folder in its pod (`locust.mode: run`, scheduled or not) that `loadtest run` writes on
a laptop, where this project's package is not installed. loadtest.judging (runresult, compare) loads this file.

    result.json   what ran, what it measured, its checks, its verdict and (with a baseline) the comparison
    checks.xml    JUnit XML: one test case per check, one that the generator was not the limit, one per baseline
    summary.md    the same for a person

A store is a folder of run folders and, once one is pinned, a file `baseline` naming the baseline run's folder
(`loadtest history --baseline RUN` writes it). A run is held to it by RPS and p95 limits: a regression is a failed
check (exit 1).
"""
from __future__ import annotations

import csv
import io
import json
import os
import string
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field

from . import checks
from .verdict import GENERATOR_BOUND, Verdict

RESULT, JUNIT, SUMMARY, SERIES_CSV = "result.json", "checks.xml", "summary.md", "series.csv"
BASELINE = "baseline"
VALIDITY_CASE = "measurement is the target's: the generator was not the limit"


@dataclass(frozen=True)
class Limits:
    max_rps_drop: float  # a fraction: 0.05 is a 5 % drop
    max_p95_rise: float


# What a run is held to against its baseline unless told otherwise (`loadtest compare`, `loadtest tune`, the pod).
DEFAULT_LIMITS = Limits(max_rps_drop=0.05, max_p95_rise=0.10)


@dataclass(frozen=True)
class Figure:
    what: str
    baseline: float | None
    current: float | None
    change: float | None  # current / baseline - 1
    limit: str  # what the change was held to, or "" for a figure shown only
    regressed: bool


class Incomparable(ValueError):
    """Two results that cannot be compared (an incomplete one); the message says which."""


def change(baseline: float | None, current: float | None) -> float | None:
    """current / baseline - 1, rounded so that a change of exactly a limit (950 of 1000: 5 %) is that limit."""
    if baseline is None or current is None or baseline == 0:
        return None
    return round(current / baseline - 1, 9)


# Locust rounds a response time under 100 ms to the nearest millisecond: a p95 that reads 0 ms is one under half of
# one. Held as 0, a baseline's p95 of 0 ms would make every later rise "no change computable" and so no regression
# (a throttled backend's 73 ms passed against it, the node layer, 2026-12-02).
P95_READ_AS_ZERO_UNDER_MS = 0.5


def p95_change(baseline: float | None, current: float | None) -> float | None:
    """change() of a p95: one that reads 0 ms in the baseline is held at the most it can have been (half a
    millisecond), so a rise from it is the least it can be; 0 ms in both is no change."""
    if baseline == 0 and current is not None:
        return 0.0 if current == 0 else change(P95_READ_AS_ZERO_UNDER_MS, current)
    return change(baseline, current)


def rps_p95(what: str, base: tuple[float, float], cur: tuple[float, float], limits: Limits) -> list[Figure]:
    rps, p95 = change(base[0], cur[0]), p95_change(base[1], cur[1])
    return [
        Figure(f"{what} RPS", base[0], cur[0], rps, f"drop <= {limits.max_rps_drop:.0%}",
               rps is not None and -rps > limits.max_rps_drop),
        Figure(f"{what} p95 (ms)", base[1], cur[1], p95, f"rise <= {limits.max_p95_rise:.0%}",
               p95 is not None and p95 > limits.max_p95_rise),
    ]


def compare_runs(base: dict, cur: dict, limits: Limits = DEFAULT_LIMITS) -> tuple[list[Figure], str | None]:
    """Two runs' result.json: all requests' RPS and p95 against the limits, and why the comparison cannot be read
    (a generator-bound side), if it cannot."""
    for side, result in (("baseline", base), ("current", cur)):
        if not result.get("complete", False):
            raise Incomparable(f"the {side} run is incomplete ({result.get('incomplete')}): compare complete runs")
    invalid = [side for side, r in (("baseline", base), ("current", cur))
               if r["exit_code"] == checks.INVALID]
    b, c = base["figures"][checks.AGGREGATED], cur["figures"][checks.AGGREGATED]
    if not b["rps"]:
        raise Incomparable("the baseline run sent no request: there is no RPS or p95 to hold the current one to")
    figures = rps_p95("all requests", (b["rps"], b["percentiles_ms"]["0.95"]),
                      (c["rps"], c["percentiles_ms"]["0.95"]), limits)
    figures.append(Figure("failure ratio", b["fail_ratio"], c["fail_ratio"], None, "", False))
    why = (f"the {' and the '.join(invalid)} run{'s were' if len(invalid) > 1 else ' was'} generator-bound: "
           "its RPS is the generator's ceiling" if invalid else None)
    return figures, why


@dataclass(frozen=True)
class BaselineOutcome:
    """The run held to its store's baseline."""

    run: str  # the baseline run's folder name
    figures: list[Figure]
    invalid: str | None

    @property
    def regressed(self) -> bool:
        return not self.invalid and any(f.regressed for f in self.figures)

    def describe(self) -> str:
        if self.invalid:
            return f"not comparable with baseline {self.run}: {self.invalid}"
        worse = [f"{f.what} {f.change:+.1%} (limit: {f.limit})" for f in self.figures if f.regressed]
        return f"REGRESSION against baseline {self.run}: {'; '.join(worse)}" if worse else (
            f"no regression against baseline {self.run}")

    def to_json(self) -> dict:
        return {"run": self.run, "regressed": self.regressed, "invalid": self.invalid,
                "figures": [asdict(f) for f in self.figures]}


@dataclass
class RunReport:
    conditions: dict[str, str]  # what ran: scenario, target, workers, users, versions, values
    started: float  # unix time
    ended: float
    figures: dict = field(default_factory=dict)  # checks.Figures per request name and Aggregated
    outcomes: list = field(default_factory=list)  # checks.Outcome
    verdict: Verdict | None = None
    cpu: dict = field(default_factory=dict)  # the CPU figures the verdict was judged from
    incomplete: str | None = None  # why the run ended before its run time, if it did
    window: dict | None = None  # the steady window judged: start, end (unix time), seconds, samples, ramp-up, stop
    judged: str | None = None  # the same in words
    baseline: BaselineOutcome | None = None  # the comparison with the store's baseline, when one is pinned
    faults: dict | None = None  # what happened to the generator (loadtest_faults), and the target's count beside it
    offered_rps: float | None = None  # the open model's rate, which the run is held to (checks.rate_check)
    notes: list = field(default_factory=list)  # what could not be measured or collected, and why
    # A run from several releases: each region's release, users, start, figures, verdict, exit code and loss, by
    # region (its own folder holds its whole result); the report's own figures are the regions' merged.
    regions: dict | None = None

    @property
    def generator_bound(self) -> bool:
        return self.verdict is not None and self.verdict.kind == GENERATOR_BOUND

    @property
    def exit_code(self) -> int:
        if self.incomplete:
            return checks.INTERRUPTED if self.incomplete == "interrupted" else checks.RUN_FAILED
        total = self.figures.get(checks.AGGREGATED)
        code = checks.exit_code(self.outcomes, self.generator_bound, total.requests if total else 0)
        if code == checks.PASSED and self.baseline is not None and self.baseline.regressed:
            return checks.CHECK_FAILED
        return code

    @property
    def meaning(self) -> str:
        """What the exit code says of this run: an incomplete one names why, not a check that did not fail."""
        if self.incomplete:
            return f"incomplete: {self.incomplete}"
        if self.exit_code == checks.CHECK_FAILED and self.baseline is not None and self.baseline.regressed and all(
                o.passed for o in self.outcomes):
            return self.baseline.describe()
        return checks.EXIT_CODES[self.exit_code].meaning

    def to_json(self) -> dict:
        return {
            "complete": self.incomplete is None, "incomplete": self.incomplete,
            "exit_code": self.exit_code, "meaning": self.meaning,
            "conditions": self.conditions, "started": self.started, "ended": self.ended,
            "window": self.window, "verdict": asdict(self.verdict) if self.verdict else None, "cpu": self.cpu,
            "checks": [{"check": o.check.text, "measured": o.measured, "passed": o.passed} for o in self.outcomes],
            "figures": {name: {**asdict(f), "fail_ratio": f.fail_ratio} for name, f in self.figures.items()},
            "baseline": self.baseline.to_json() if self.baseline else None,
            "faults": self.faults, "offered_rps": self.offered_rps, "notes": self.notes, "regions": self.regions,
        }


def junit(report: RunReport, suite: str) -> str:
    cases = []
    for o in report.outcomes:
        case = ET.Element("testcase", classname="loadtest.checks", name=o.check.text)
        if not o.passed:
            ET.SubElement(case, "failure", message=o.describe(), type="check").text = o.describe()
        cases.append(case)
    valid = ET.Element("testcase", classname="loadtest.verdict", name=VALIDITY_CASE)
    if report.generator_bound:
        ET.SubElement(valid, "failure", message=report.verdict.reason, type=GENERATOR_BOUND).text = (
            report.verdict.reason)
    elif report.verdict is None:
        ET.SubElement(valid, "skipped", message="no CPU figures to judge the generator from")
    cases.append(valid)
    if report.baseline is not None:
        held = ET.Element("testcase", classname="loadtest.baseline", name=f"no regression against {report.baseline.run}")
        if report.baseline.regressed:
            ET.SubElement(held, "failure", message=report.baseline.describe(), type="regression").text = (
                report.baseline.describe())
        elif report.baseline.invalid:
            ET.SubElement(held, "skipped", message=report.baseline.describe())
        cases.append(held)
    if report.incomplete:
        ended = ET.Element("testcase", classname="loadtest.run", name="the run went to its end")
        ET.SubElement(ended, "error", message=report.incomplete, type="incomplete").text = report.incomplete
        cases.append(ended)
    failures = sum(c.find("failure") is not None for c in cases)
    suites = ET.Element("testsuites")
    suite_element = ET.SubElement(
        suites, "testsuite", name=suite, tests=str(len(cases)), failures=str(failures),
        errors=str(sum(c.find("error") is not None for c in cases)),
        skipped=str(sum(c.find("skipped") is not None for c in cases)),
        time=f"{max(0.0, report.ended - report.started):.3f}",
        timestamp=time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(report.started)))
    properties = ET.SubElement(suite_element, "properties")
    for key, value in report.conditions.items():
        ET.SubElement(properties, "property", name=key, value=str(value))
    suite_element.extend(cases)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def faults_lines(faults: dict) -> list[str]:
    """summary.md's account of the generator's workers and of the requests: what a fault cost."""
    lines = [f"STOPPED EARLY: {faults['stopped_early']['description']}"] if faults.get("stopped_early") else []
    lines += [f"Faults: {event['description']}" for event in faults["events"]]
    lines.append(f"Requests sent by the workers' own count: {faults['requests_sent']:,}"
                 + (f", about {faults['requests_unreported']:,} of them never reported by a lost worker"
                    if faults["requests_unreported"] else ""))
    if faults.get("target_requests") is not None:
        lines.append(f"Requests counted by the target: {faults['target_requests']:,} "
                     f"({faults['target_requests'] - faults['requests_sent']:+,} against the workers' count)")
    return lines + [""]


def regions_lines(regions: dict) -> list[str]:
    """summary.md's table of a several-release run's regions, each beside the whole (the table below it)."""
    lines = ["| region | users | requests | RPS | p50 (ms) | p95 (ms) | p99 (ms) | verdict | exit code |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in regions.items():
        f = r.get("figures") or {}
        formats = {"requests": ",", "rps": ",.1f", "p50_ms": "g", "p95_ms": "g", "p99_ms": "g"}
        cells = [format(f[k], shown) if k in f else "-" for k, shown in formats.items()]
        lines.append(f"| {name} | {r['users']:,} | {' | '.join(cells)} | {r.get('verdict') or 'none'} | "
                     f"{r['exit_code']} |")
    lost = [f"LOST: region {name} at {r['lost']['at_s']:.0f} s: {r['lost']['cost']}"
            for name, r in regions.items() if r.get("lost")]
    return lines + [""] + ([*lost, ""] if lost else [])


def summary(report: RunReport) -> str:
    code = report.exit_code
    lines = [f"# Load test run: {report.conditions.get('scenario', '')} against {report.conditions.get('target', '')}",
             "", f"**{'PASSED' if code == checks.PASSED else 'INVALID' if code == checks.INVALID else 'FAILED'}"
             f"** (exit code {code}: {report.meaning})", ""]
    if report.incomplete:
        lines += [f"INCOMPLETE: {report.incomplete}", ""]
    if report.judged:
        lines += [f"Judged: {report.judged}", ""]
    if report.verdict:
        lines += [f"Verdict: {report.verdict.kind}: {report.verdict.reason}", ""]
    if report.baseline:
        lines += [f"Baseline: {report.baseline.describe()}", ""]
    if report.faults:
        lines += faults_lines(report.faults)
    if report.regions:
        lines += regions_lines(report.regions)
    if report.outcomes:
        lines += ["| check | measured | result |", "|---|---|---|"]
        lines += [f"| `{o.check.text}` | {'-' if o.measured is None else checks.show(o.check.metric, o.measured)} | "
                  f"{'passed' if o.passed else '**failed**'} |" for o in report.outcomes]
        lines.append("")
    lines += ["| request | requests | failures | RPS | p50 (ms) | p95 (ms) | p99 (ms) |", "|---|---|---|---|---|---|---|"]
    for name, f in sorted(report.figures.items(), key=lambda item: item[0] == checks.AGGREGATED):
        p = f.percentiles_ms
        lines.append(f"| {name} | {f.requests:,} | {f.failures:,} ({f.fail_ratio:.2%}) | {f.rps:,.1f} | "
                     f"{p[0.5]:g} | {p[0.95]:g} | {p[0.99]:g} |")
    lines += ["", "## Conditions", ""] + [f"- {k}: {v}" for k, v in report.conditions.items()]
    return "\n".join(lines) + "\n"


def replace_file(path: str, text: str) -> None:
    """Write `text` through a temporary file and a rename: a crash mid-write leaves the previous file whole."""
    partial = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.partial")
    with open(partial, "w") as f:
        f.write(text)
    os.replace(partial, path)


def write(report: RunReport, out: str, suite: str = "loadtest run") -> dict[str, str]:
    """Write (or rewrite) the folder's judged files, each replaced whole."""
    os.makedirs(out, exist_ok=True)
    files = {"json": os.path.join(out, RESULT), "junit": os.path.join(out, JUNIT),
             "markdown": os.path.join(out, SUMMARY)}
    replace_file(files["json"], json.dumps(report.to_json(), indent=2) + "\n")
    replace_file(files["junit"], junit(report, suite))
    replace_file(files["markdown"], summary(report))
    return files


def read_baseline(store: str) -> tuple[str, dict | str] | None:
    """The store's pinned baseline: (its folder name, its result.json, or why it cannot be read), None when none is
    pinned."""
    try:
        with open(os.path.join(store, BASELINE)) as f:
            name = f.read().strip()
    except FileNotFoundError:
        return None
    if not name:
        return None
    try:
        with open(os.path.join(store, name, RESULT)) as f:
            return name, json.load(f)
    except (OSError, ValueError) as e:
        return name, f"its {RESULT} cannot be read ({e}); pin another with `loadtest history --baseline RUN`"


def hold_to(baseline: tuple[str, dict | str] | None, current: dict,
            limits: Limits = DEFAULT_LIMITS) -> BaselineOutcome | None:
    """The current run's result.json held to the baseline (its result.json, or why it could not be read: then not
    comparable, and said so), None when no baseline is pinned."""
    if baseline is None:
        return None
    name, base = baseline
    if isinstance(base, str):
        return BaselineOutcome(name, [], base)
    current = json.loads(json.dumps(current))  # as written: percentile keys become the strings result.json holds
    try:
        figures, invalid = compare_runs(base, current, limits)
    except (Incomparable, KeyError, TypeError) as e:
        return BaselineOutcome(name, [], f"{e}")
    return BaselineOutcome(name, figures, invalid)



# The run's series (series.csv), one format wherever it ran: a line a second from `loadtest run --local`, a line a
# scrape from the release's Prometheus (`loadtest run --release`, and the master of a judged run in its pod). A cell
# is empty where its path has no such figure (p99 and throttling locally; the host's CPU in a cluster). `phase` is
# ramp-up (users being spawned), steady (every user running: the judged window) or stop. `scrape_gap_s` marks a
# line Prometheus had no fresh scrape of the master for (it was down or restarting, or the master unreachable): the
# seconds since its last scrape, the figures left empty (Prometheus would carry the last ones over for minutes).
SERIES_COLUMNS = ("time", "phase", "users", "rps", "fail_ratio", "p50_ms", "p95_ms", "p99_ms", "worker_cpu_max",
                  "worker_throttling_max", "target_cpu_ratio", "host_cpu", "scrape_gap_s")
GAP_SCRAPES = 2  # a scrape this many intervals old is missed, not late
RAMP_UP, STEADY, STOP = "ramp-up", "steady", "stop"
# One query of the release's Prometheus per column ($sel: the release's series, $r: the rate window), and the
# runner's states, of which the phase is made.
SERIES = {
    "users": "sum(locust_users{$sel})",
    "rps": "sum(rate(locust_requests_total{$sel}[$r]))",
    "fail_ratio": "sum(rate(locust_request_failures_total{$sel}[$r])) / sum(rate(locust_requests_total{$sel}[$r]))",
    "p50_ms": '1000 * max(locust_aggregated_response_time_seconds{$sel, quantile="0.5"})',
    "p95_ms": '1000 * max(locust_aggregated_response_time_seconds{$sel, quantile="0.95"})',
    "p99_ms": '1000 * max(locust_aggregated_response_time_seconds{$sel, quantile="0.99"})',
    "worker_cpu_max": "max(loadtest:worker_cpu_saturation:ratio{$sel})",
    "worker_throttling_max": "max(loadtest:worker_cpu_throttling:ratio{$sel})",
    "target_cpu_ratio": "max(loadtest:target_cpu_saturation:ratio{$sel})",
    "host_cpu": "max(loadtest:host_cpu_saturation:ratio{$sel})",
    "spawning": 'max(locust_runner_state{$sel, state="spawning"})',
    "running": 'max(locust_runner_state{$sel, state="running"})',
    "scraped": "max(timestamp(locust_users{$sel}))",
}


def series_queries(release: str, scrape_interval_s: float) -> dict[str, str]:
    """SERIES for one release, with a rate window of at least 4 scrapes (and 30 s)."""
    where = {"sel": f'release="{release}"', "r": f"{max(4 * scrape_interval_s, 30):g}s"}
    return {name: string.Template(expr).substitute(where) for name, expr in SERIES.items()}


def series_csv(columns: dict[str, dict[float, float]], start: float, end: float, scrape_interval_s: float) -> str:
    """series.csv of SERIES' columns as queried from `start` to `end` every scrape interval: a line at each step (a
    cell empty where a column has no value). A step whose last scrape of the master is more than GAP_SCRAPES
    intervals old, or that has none at all (Prometheus was down, or lost what it had not written out when it was
    killed), is a gap: its figures are left out and scrape_gap_s says how long since a scrape."""
    def cell(value):
        return "" if value is None or value != value else f"{value:.6g}"

    columns = {name: {round(t, 3): v for t, v in values.items()} for name, values in columns.items()}
    if not any(columns.values()):
        return ",".join(SERIES_COLUMNS) + "\n"
    first = round(start, 3)  # Prometheus' steps: from the start it was given, to the millisecond
    steps = range(int((end - first) // scrape_interval_s) + 1)
    times = sorted({round(first + k * scrape_interval_s, 3) for k in steps}
                   | {t for column in columns.values() for t in column})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SERIES_COLUMNS)
    seen_steady, last_scrape = False, first
    judged = bool(columns.get("scraped"))  # a Prometheus that cannot say when it scraped marks nothing
    for t in times:
        running, spawning = columns.get("running", {}).get(t), columns.get("spawning", {}).get(t)
        seen_steady = seen_steady or running == 1
        phase = STEADY if running == 1 else RAMP_UP if spawning == 1 else STOP if seen_steady else ""
        last_scrape = max(last_scrape, columns.get("scraped", {}).get(t, last_scrape))
        if judged and t - last_scrape > GAP_SCRAPES * scrape_interval_s:
            writer.writerow((f"{t:.3f}", phase, *[""] * (len(SERIES_COLUMNS) - 3), f"{t - last_scrape:.3g}"))
        else:
            writer.writerow((f"{t:.3f}", phase, *(cell(columns.get(name, {}).get(t)) for name in SERIES_COLUMNS[2:])))
    return out.getvalue()

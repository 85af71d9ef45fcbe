"""A judged run's results folder: what ran, what it measured, its checks and its verdict, in files a pipeline keeps.

    result.json   everything below, for `loadtest compare` and for tools
    checks.xml    JUnit XML: one test case per check, and one that the generator was not the limit
    summary.md    the same for a person (a CI job can post it)

The figures, the checks and the verdict are the steady window's (every user running, before the stop); result.json
says which window that was. The runtime adds Locust's own files (report.html, stats*.csv, stats.json) and the run's
series beside them. A folder
is never overwritten: the default one is new for every run (a timestamp), and a given one that holds a run is
refused unless the caller forces it.
"""
from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import checks, verdict
from .report import replace_file
from .errors import UsageError

RESULT, JUNIT, SUMMARY = "result.json", "checks.xml", "summary.md"
VALIDITY_CASE = "measurement is the target's: the generator was not the limit"


@dataclass
class RunReport:
    conditions: dict[str, str]  # what ran: scenario, target, workers, users, versions, values
    started: float  # unix time
    ended: float
    figures: dict[str, checks.Figures] = field(default_factory=dict)  # per request name and Aggregated
    outcomes: list[checks.Outcome] = field(default_factory=list)
    verdict: verdict.Verdict | None = None
    cpu: dict[str, object] = field(default_factory=dict)  # the CPU figures the verdict was judged from
    incomplete: str | None = None  # why the run ended before its run time, if it did
    window: dict | None = None  # the steady window judged: start, end (unix time), seconds, samples, ramp-up, stop
    judged: str | None = None  # the same in words

    @property
    def generator_bound(self) -> bool:
        return self.verdict is not None and self.verdict.kind == verdict.GENERATOR_BOUND

    @property
    def exit_code(self) -> int:
        if self.incomplete:
            return checks.INTERRUPTED if self.incomplete == "interrupted" else checks.RUN_FAILED
        total = self.figures.get(checks.AGGREGATED)
        return checks.exit_code(self.outcomes, self.generator_bound, total.requests if total else 0)

    @property
    def meaning(self) -> str:
        """What the exit code says of this run: an incomplete one names why, not a check that did not fail."""
        return f"incomplete: {self.incomplete}" if self.incomplete else checks.EXIT_CODES[self.exit_code]

    def to_json(self) -> dict:
        return {
            "complete": self.incomplete is None, "incomplete": self.incomplete,
            "exit_code": self.exit_code, "meaning": self.meaning,
            "conditions": self.conditions, "started": self.started, "ended": self.ended,
            "window": self.window, "verdict": asdict(self.verdict) if self.verdict else None, "cpu": self.cpu,
            "checks": [{"check": o.check.text, "measured": o.measured, "passed": o.passed} for o in self.outcomes],
            "figures": {name: {**asdict(f), "fail_ratio": f.fail_ratio} for name, f in self.figures.items()},
        }


def check_output(out: Path, force: bool) -> None:
    if (out / RESULT).exists() and not force:
        raise UsageError(f"--output {out} holds an earlier run: give another folder, or --force to replace it")


def new_folder(base: Path, name: str, now: float | None = None) -> Path:
    """base/<UTC date-time>-<name>, never one that exists: the default place of a run's results."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    folder, n = base / f"{stamp}-{name}", 1
    while folder.exists():
        n += 1
        folder = base / f"{stamp}-{name}-{n}"
    return folder


def junit(report: RunReport, suite: str) -> str:
    cases = []
    for o in report.outcomes:
        case = ET.Element("testcase", classname="loadtest.checks", name=o.check.text)
        if not o.passed:
            ET.SubElement(case, "failure", message=o.describe(), type="check").text = o.describe()
        cases.append(case)
    valid = ET.Element("testcase", classname="loadtest.verdict", name=VALIDITY_CASE)
    if report.generator_bound:
        ET.SubElement(valid, "failure", message=report.verdict.reason, type=verdict.GENERATOR_BOUND).text = (
            report.verdict.reason)
    elif report.verdict is None:
        ET.SubElement(valid, "skipped", message="no CPU figures to judge the generator from")
    cases.append(valid)
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


def summary(report: RunReport) -> str:
    code = report.exit_code
    lines = [f"# Load test run: {report.conditions.get('scenario', '')} against {report.conditions.get('target', '')}",
             "", f"**{'PASSED' if code == checks.PASSED else 'INVALID' if code == checks.GENERATOR_BOUND else 'FAILED'}"
             f"** (exit code {code}: {report.meaning})", ""]
    if report.incomplete:
        lines += [f"INCOMPLETE: {report.incomplete}", ""]
    if report.judged:
        lines += [f"Judged: {report.judged}", ""]
    if report.verdict:
        lines += [f"Verdict: {report.verdict.kind}: {report.verdict.reason}", ""]
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


def write(report: RunReport, out: Path, suite: str = "loadtest run") -> dict[str, Path]:
    """Write (or rewrite) the folder's judged files, each replaced whole."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / RESULT, "junit": out / JUNIT, "markdown": out / SUMMARY}
    replace_file(files["json"], json.dumps(report.to_json(), indent=2) + "\n")
    replace_file(files["junit"], junit(report, suite))
    replace_file(files["markdown"], summary(report))
    return files

"""A store of judged runs and its history: every `loadtest run` folder under one folder (`runs/` by default), their
figures in a table and a self-contained HTML page with the trend of each, and a baseline the newest run is held to.

A store is a plain folder: one subfolder per run (its result.json, summary, Locust's report, series) and, once one is
pinned, a file `baseline` naming the baseline run's folder. A run compared with the baseline is judged by
`loadtest compare`'s limits (loadtest.judging.compare.DEFAULT_LIMITS): a regression is a failed check.
"""
from __future__ import annotations

import csv
import datetime
import html
import json
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from loadtest_shared import checks, results

from ..errors import UsageError
from . import compare, sweepreport

# Locust's statistics so far (--csv PREFIX writes PREFIX_stats.csv): the chart's judged master and `loadtest run`
# use the prefix `stats`.
LOCUST_STATS = "stats_stats.csv"
PAGE = "history.html"


@dataclass(frozen=True)
class Run:
    folder: str  # the run's folder name in the store
    started: float
    scenario: str
    target: str
    rps: float | None
    p95_ms: float | None
    fail_ratio: float | None
    verdict: str | None
    checks_passed: int
    checks_failed: int
    exit_code: int
    complete: bool

    @property
    def when(self) -> str:
        return datetime.datetime.fromtimestamp(self.started, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    @property
    def generator_bound(self) -> bool:
        return self.exit_code == checks.INVALID

    @property
    def can_be_baseline(self) -> str | None:
        """Why this run cannot be a baseline, or None."""
        if not self.complete:
            return "it is incomplete"
        if self.generator_bound:
            return "it was generator-bound: its RPS is the generator's ceiling"
        if not self.rps:
            return "it sent no request: there is no RPS to hold later runs to"
        return None


def _so_far(folder: Path) -> dict:
    """The figures of a run cut off before it wrote its own (its master killed): the Aggregated row of Locust's
    statistics file, which Locust rewrites every second while it runs, as figures of result.json; {} without one."""
    try:
        with (folder / LOCUST_STATS).open(newline="") as f:
            row = next((r for r in csv.DictReader(f) if r.get("Name") == checks.AGGREGATED), None)
        if row is None:
            return {}
        requests = int(row["Request Count"])
        return {"rps": float(row["Requests/s"]), "percentiles_ms": {"0.95": float(row["95%"])},
                "fail_ratio": int(row["Failure Count"]) / requests if requests else None}
    except (OSError, ValueError, KeyError, TypeError):  # "N/A" before the first request
        return {}


def _run(folder: Path) -> Run | None:
    try:
        data = json.loads((folder / results.RESULT).read_text())
        figures = data["figures"].get(checks.AGGREGATED) or ({} if data.get("complete") else _so_far(folder))
        outcomes = data.get("checks", [])
        return Run(folder.name, float(data["started"]), data["conditions"].get("scenario", ""),
                   data["conditions"].get("target", ""), figures.get("rps"),
                   figures.get("percentiles_ms", {}).get("0.95"), figures.get("fail_ratio"),
                   (data.get("verdict") or {}).get("kind"), sum(o["passed"] for o in outcomes),
                   sum(not o["passed"] for o in outcomes), int(data["exit_code"]), bool(data.get("complete")))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not a run folder (or one cut off before its result.json): not part of the history


def runs(store: Path) -> list[Run]:
    """The store's runs, oldest first."""
    if not store.is_dir():
        raise UsageError(f"--store {store}: no such folder; `loadtest run` writes its runs to runs/ (or --output)")
    found = [r for r in (_run(p) for p in store.iterdir() if p.is_dir()) if r]
    return sorted(found, key=lambda r: (r.started, r.folder))


def baseline(store: Path) -> str | None:
    """The pinned baseline run's folder name, if one is pinned."""
    file = store / results.BASELINE
    return file.read_text().strip() or None if file.is_file() else None


def pin(store: Path, folder: str, known: list[Run]) -> Run:
    """Pin `folder` as the store's baseline; refused with the reason for a run that cannot be one."""
    run = next((r for r in known if r.folder == folder.rstrip("/").rsplit("/", 1)[-1]), None)
    if run is None:
        raise UsageError(f"--baseline {folder}: no run of that name in {store}; the runs: "
                         f"{', '.join(r.folder for r in known) or 'none'}")
    if why := run.can_be_baseline:
        raise UsageError(f"--baseline {folder}: {why}; pin a complete run the target, not the generator, limited")
    sweepreport.replace_file(store / results.BASELINE, run.folder + "\n")
    return run


def against_baseline(store: Path, current: Path) -> compare.Comparison | None:
    """The run at `current` compared with the store's baseline (None with no baseline, or when it is the baseline)."""
    pinned = baseline(store)
    if pinned is None or pinned == current.name:
        return None
    if not (store / pinned / results.RESULT).is_file():
        raise UsageError(f"{store / results.BASELINE} names {pinned}, which holds no {results.RESULT}: pin another "
                         f"with `loadtest history --store {store} --baseline RUN`")
    return compare.compare(store / pinned, current, results.DEFAULT_LIMITS)


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def table(known: list[Run], pinned: str | None) -> list[str]:
    lines = [f"{'run':<44} {'time':<20} {'scenario':<16} {'RPS':>10} {'p95 ms':>8} {'failures':>9} {'verdict':<16} "
             "checks"]
    for r in known:
        mark = " (baseline)" if r.folder == pinned else "" if r.complete else " (incomplete)"
        lines.append(f"{r.folder[:44]:<44} {r.when:<20} {r.scenario[:16] or '-':<16} {_cell(r.rps, ',.0f'):>10} "
                     f"{_cell(r.p95_ms, 'g'):>8} "
                     f"{_cell(r.fail_ratio, '.2%'):>9} {r.verdict or '-':<16} "
                     f"{r.checks_passed} passed, {r.checks_failed} failed{mark}")
    return lines


def html_page(store: Path, known: list[Run], pinned: str | None, against: dict[str, str] | None = None) -> str:
    """One self-contained page: each figure's trend over the runs (red rings: generator-bound runs; the dashed line:
    the baseline), and the runs with links to their own reports and, in `against`, each one against the baseline."""
    against = against or {}
    xs = list(range(1, len(known) + 1))
    marked = [r.generator_bound for r in known]
    at = next((i + 1 for i, r in enumerate(known) if r.folder == pinned), None)
    charts = [
        sweepreport.svg_chart("RPS by run", xs, {"RPS": [r.rps for r in known]}, "RPS", marked, baseline_x=at),
        sweepreport.svg_chart("p95 latency by run", xs, {"p95": [r.p95_ms for r in known]}, "ms", marked,
                              baseline_x=at),
        sweepreport.svg_chart("Failure ratio by run (%)", xs,
                              {"failures": [None if r.fail_ratio is None else 100 * r.fail_ratio for r in known]}, "%",
                              marked, baseline_x=at),
    ]

    def link(r: Run, name: str, text: str) -> str:
        # A folder name is a relative path's first part, whatever it holds (a bucket's keys are anyone's names).
        href = html.escape(f"./{urllib.parse.quote(r.folder)}/{name}")
        return f'<a href="{href}">{text}</a>' if (store / r.folder / name).is_file() else ""

    rows = "".join(
        f'<tr{" class=baseline" if r.folder == pinned else ""}><td>{n}</td><td>{html.escape(r.folder)}</td>'
        f"<td>{r.when}</td><td>{html.escape(r.scenario)}</td><td>{_cell(r.rps, ',.0f')}</td>"
        f"<td>{_cell(r.p95_ms, 'g')}</td><td>{_cell(r.fail_ratio, '.2%')}</td><td>{html.escape(r.verdict or '-')}</td>"
        f"<td>{r.checks_passed} passed, {r.checks_failed} failed</td><td>{'' if r.complete else 'incomplete'}</td>"
        f"<td>{html.escape(against.get(r.folder, ''))}</td>"
        f"<td>{link(r, 'report.html', 'Locust report')} {link(r, results.SUMMARY, 'summary')}</td></tr>"
        for n, r in enumerate(known, 1))
    head = ("<th>#</th><th>run</th><th>time</th><th>scenario</th><th>RPS</th><th>p95 ms</th><th>failures</th>"
            "<th>verdict</th><th>checks</th><th></th><th>vs baseline</th><th>reports</th>")
    base = f"run {at}, {html.escape(pinned)}" if at else "none pinned (`loadtest history --baseline RUN`)"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Load test history</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto}}td,th{{padding:2px 8px;text-align:right}}
tr.baseline td{{background:#e0ecfd}}svg{{margin:8px 16px 8px 0}}</style></head><body>
<h1>Load test history: {html.escape(str(store))}</h1>
<p>{len(known)} run(s). Baseline: {base}. Red rings: the generator was the limit (the RPS is its ceiling).</p>
<h2>Trends</h2>
{''.join(charts)}
<h2>Runs</h2><table><tr>{head}</tr>{rows}</table>
</body></html>
"""

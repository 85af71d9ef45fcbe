"""Sweep reports: CSV, JSON, a self-contained HTML page with plots, and an NGINX-style Markdown sizing table.

Every file says under which conditions the sweep was taken and marks the steps where the generator was saturated,
whose RPS is the generator's ceiling and not the target's capacity. An open-model sweep (arrival rate) adds each
step's offered rate, the share of it achieved, its late starts by cause and its service-time p99; its latencies are
from each request's slot.
"""
from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..capacity import catalog
from ..workload.scenarios import SCENARIOS
from .knee import Knee, Step, failing, find_knee, knee_reason, rate_slipped

# The target sizes NGINX's table maps CPU counts to: network-optimised c5n, the smallest with enough vCPUs.
TARGET_FAMILY = "c5n"


@dataclass(frozen=True)
class StepRecord:
    step: Step
    start: float  # unix time of the measured window (after the step's warm-up)
    end: float
    p50_ms: float
    p99_ms: float
    requests: int
    failures: int
    users: int
    workers: int
    worker_cpu_max: float  # busiest worker, as a fraction of its core or limit
    worker_cpu_cores: float  # CPU all workers used together, in cores
    target_cpus: int  # CPUs the target runs with (its worker processes or threads)
    target_cpu_cores: float | None  # cores it used
    verdict: str  # generator-bound, target-bound or healthy (loadtest.judging.verdict)
    # The open model's (an arrival-rate sweep), over the same window; None in the closed model.
    offered_rps: float | None = None  # the rate offered, all workers together
    late_users_share: float | None = None  # share of the slots started late for want of a free user
    late_cpu_share: float | None = None  # share of the slots started late by a worker woken late (its CPU)
    service_p99_ms: float | None = None  # p99 from the actual send (the latency columns are from the slot)
    # A sweep of several releases (regions): how far apart their swarms began, the first start sent to the last
    # answered (None for one release), and how many targets target_cpus is over (one a region).
    start_skew_s: float | None = None
    targets: int = 1

    @property
    def late_share(self) -> float | None:
        """Share of the slots started late, whatever the cause."""
        if self.late_users_share is None or self.late_cpu_share is None:
            return None
        return self.late_users_share + self.late_cpu_share


@dataclass
class Sweep:
    conditions: dict[str, str]  # scenario, target, node types, versions, durations, date, …
    sweep_of: str  # what the steps raise: "users", "workers" or "target CPUs"
    records: list[StepRecord] = field(default_factory=list)
    incomplete: str | None = None  # why the sweep ended before its plan did (interrupted, a failed step), if it did
    # A sweep of several releases: each region's release, its folder (its own report) and its part of each step.
    regions: dict[str, dict] | None = None

    @property
    def knee(self) -> Knee:
        return find_knee([r.step for r in self.records])

    @property
    def open_model(self) -> bool:
        """An arrival-rate sweep: each step offered a rate of requests."""
        return any(r.offered_rps is not None for r in self.records)


def target_instance(cpus: float) -> catalog.InstanceType:
    sizes = sorted((i for i in catalog.INSTANCES.values() if i.family == TARGET_FAMILY), key=lambda i: i.vcpu)
    return next((i for i in sizes if i.vcpu >= cpus), sizes[-1])


COLUMNS = ("step", "load", "users", "workers", "rps", "p50_ms", "p95_ms", "p99_ms", "requests", "failures",
           "failure_ratio", "worker_cpu_max", "worker_cpu_cores", "target_cpus", "target_cpu_cores", "verdict",
           "generator_bound", "window_start", "window_end")
# Columns an open-model sweep adds (latencies are then from each request's slot; the service time from the send).
ARRIVAL_COLUMNS = ("offered_rps", "achieved_share", "late_start_share", "late_users_share", "late_cpu_share",
                   "service_p99_ms")


def columns(sweep: Sweep) -> tuple[str, ...]:
    return COLUMNS + ARRIVAL_COLUMNS if sweep.open_model else COLUMNS


def _share(value: float | None) -> float | None:
    return None if value is None else round(value, 5)


def arrival_cells(r: StepRecord) -> dict:
    return {"offered_rps": r.offered_rps,
            "achieved_share": _share(r.step.rps / r.offered_rps) if r.offered_rps else None,
            "late_start_share": _share(r.late_share), "late_users_share": _share(r.late_users_share),
            "late_cpu_share": _share(r.late_cpu_share), "service_p99_ms": r.service_p99_ms}


def rows(sweep: Sweep) -> list[dict]:
    open_model = sweep.open_model
    return [
        {
            "step": r.step.index + 1, "load": r.step.load, "users": r.users, "workers": r.workers,
            "rps": round(r.step.rps, 1),
            "p50_ms": r.p50_ms, "p95_ms": r.step.p95_ms, "p99_ms": r.p99_ms, "requests": r.requests,
            "failures": r.failures, "failure_ratio": round(r.step.failure_ratio, 5),
            "worker_cpu_max": round(r.worker_cpu_max, 3), "worker_cpu_cores": round(r.worker_cpu_cores, 3),
            "target_cpus": r.target_cpus,
            "target_cpu_cores": None if r.target_cpu_cores is None else round(r.target_cpu_cores, 3),
            "verdict": r.verdict, "generator_bound": r.step.generator_saturated, "window_start": r.start, "window_end": r.end,
            **(arrival_cells(r) if open_model else {}),
        }
        for r in sweep.records
    ]


def verdict_line(sweep: Sweep) -> str:
    if sweep.incomplete:
        return f"INCOMPLETE after {len(sweep.records)} step(s): {sweep.incomplete}. " + knee_line(sweep)
    return knee_line(sweep)


def knee_line(sweep: Sweep) -> str:
    k = sweep.knee
    if k.generator_bound_at is not None:
        g = k.generator_bound_at
        best = f"; the last target-side figure is {k.capacity_step.rps:,.0f} RPS" if k.capacity_step else ""
        return (f"The generator saturated at step {g.index + 1} ({sweep.sweep_of} {g.load:g}): the sweep stopped "
                f"there and no step from then on measures the target{best}. Add workers before reading capacity.")
    if k.found:
        c, n = k.capacity_step, k.knee_step
        why = knee_reason(n)
        capacity = (f"Capacity: {c.rps:,.0f} RPS at {sweep.sweep_of} {c.load:g} (p95 {c.p95_ms:g} ms)." if c
                    else "No step below it to call the capacity: start the sweep lower.")
        return f"Knee at step {n.index + 1}: {why}. {capacity}"
    if k.capacity_step and sweep.open_model:
        last = sweep.records[-1]
        return (f"No knee within the sweep: every offered rate was held, up to {last.step.rps:,.0f} of "
                f"{last.offered_rps:,g} requests/s (p95 {last.step.p95_ms:g} ms, p99 {last.p99_ms:g} ms from each "
                "request's slot); extend the sweep to find the limit.")
    if k.capacity_step:
        return (f"No knee within the sweep: RPS still rose at the last step ({k.capacity_step.rps:,.0f} RPS); "
                "extend the sweep to find the limit.")
    return "No step was measured."


def sizing_table(sweep: Sweep) -> str:
    """NGINX's table shape: CPUs -> RPS or TLS TPS, with the instance type and monthly cost such a target needs;
    one row per step, the capacity and the knee named."""
    scenario = SCENARIOS.get(sweep.conditions.get("scenario", ""))
    tls = scenario is not None and scenario.target_metric == "tls_tps"
    knee = sweep.knee
    open_model = sweep.open_model
    # The open model's table adds the offered rate and the p99 (its SLO figure), both latencies from the slot.
    offered, p99 = ("offered | ", " p99 (ms) |") if open_model else ("", "")
    lines = [f"| CPUs | users | {offered}RPS | TLS TPS | p95 (ms) |{p99} instance type | monthly cost (USD) | note |",
             "|---|---|---|---|---|---|---|---|" + ("---|---|" if open_model else "")]
    for r in sweep.records:
        # Several regions' targets: each its own instance, sized by its share of the CPUs (each region's own table
        # has its exact one).
        each = r.target_cpus / r.targets
        inst = target_instance(each)
        cpus, name = ((f"{r.target_cpus:g}", inst.name) if r.targets == 1
                      else (f"{r.targets} x {each:g}", f"{r.targets} x {inst.name}"))
        rps, tps = ("-", f"{r.step.rps:,.0f}") if tls else (f"{r.step.rps:,.0f}", "-")
        note = ("generator-bound: not the target's capacity" if r.step.generator_saturated
                else f"knee: {r.step.failure_ratio:.1%} failed" if r.step == knee.knee_step and failing(r.step)
                else f"knee: rate not held ({r.step.rps / r.step.offered_rps:.1%})"
                if r.step == knee.knee_step and rate_slipped(r.step)
                else "knee" if r.step == knee.knee_step else "capacity" if r.step == knee.capacity_step else "")
        cells = (f"{r.offered_rps:,g} | " if open_model else "", f" {r.p99_ms:g} |" if open_model else "")
        lines.append(f"| {cpus} | {r.users:,} | {cells[0]}{rps} | {tps} | {r.step.p95_ms:g} |{cells[1]} "
                     f"{name} | {r.targets * inst.monthly_usd:,.0f} | {note} |")
    return "\n".join(lines)


def markdown(sweep: Sweep) -> str:
    cond = "\n".join(f"- {k}: {v}" for k, v in sweep.conditions.items())
    return (f"# Load sweep: {sweep.conditions.get('scenario', '')} against {sweep.conditions.get('target', '')}\n\n"
            f"{verdict_line(sweep)}\n\n## Conditions\n\n{cond}\n\n## Sizing table\n\n{sizing_table(sweep)}\n")


def svg_chart(title: str, xs: list[float], series: dict[str, list[float | None]], unit: str,
              marked: list[bool], baseline_x: float | None = None) -> str:
    """A small line chart; red rings mark generator-bound steps (or runs), a dashed line the baseline's x."""
    w, h, pad = 560, 240, 44
    values = [v for s in series.values() for v in s if v is not None] or [0.0]
    top = max(values) * 1.1 or 1.0
    left, right = min(xs, default=0), max(xs, default=1)
    span = (right - left) or 1

    def pos(x, y):
        return pad + (x - left) / span * (w - 2 * pad), h - pad - y / top * (h - 2 * pad)

    colours = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img">',
             f'<text x="{pad}" y="18" font-size="14">{html.escape(title)}</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#888"/>',
             f'<text x="4" y="{pad}" font-size="11">{top:,.0f} {html.escape(unit)}</text>',
             f'<text x="{pad}" y="{h - 8}" font-size="11">{left:g}</text>',
             f'<text x="{w - pad}" y="{h - 8}" font-size="11" text-anchor="end">{right:g}</text>']
    if baseline_x is not None:
        x, _ = pos(baseline_x, 0)
        parts.append(f'<line x1="{x:.1f}" y1="{pad}" x2="{x:.1f}" y2="{h - pad}" stroke="#555" '
                     'stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{x + 3:.1f}" y="{pad + 10}" font-size="11">baseline</text>')
    for n, (name, ys) in enumerate(series.items()):
        pts = [pos(x, y) for x, y in zip(xs, ys) if y is not None]
        colour = colours[n % len(colours)]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
        parts.append(f'<text x="{w - pad}" y="{18 + 14 * n}" font-size="11" fill="{colour}" '
                     f'text-anchor="end">{html.escape(name)}</text>')
        for (x, y), bad in zip(pts, marked):
            ring = ' stroke="#d62728" stroke-width="2"' if bad else ""
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{5 if bad else 3}" fill="{colour}"{ring}/>')
    return "\n".join(parts + ["</svg>"])


def html_page(sweep: Sweep) -> str:
    xs = [r.step.load for r in sweep.records]
    marked = [r.step.generator_saturated for r in sweep.records]
    rps: dict[str, list[float | None]] = {"RPS": [r.step.rps for r in sweep.records]}
    latency: dict[str, list[float | None]] = {"p95": [r.step.p95_ms for r in sweep.records]}
    if sweep.open_model:
        rps["offered"] = [r.offered_rps for r in sweep.records]
        latency["p99 (from the slot)"] = [r.p99_ms for r in sweep.records]
        latency["service p99 (from the send)"] = [r.service_p99_ms for r in sweep.records]
    charts = [
        svg_chart(f"RPS by {sweep.sweep_of}", xs, rps, "RPS", marked),
        svg_chart(f"{'latency' if sweep.open_model else 'p95 latency'} by {sweep.sweep_of}", xs, latency, "ms",
                  marked),
        svg_chart(f"CPU by {sweep.sweep_of}", xs, {
            "busiest worker (share of its core)": [r.worker_cpu_max for r in sweep.records],
            "target (cores)": [r.target_cpu_cores for r in sweep.records],
        }, "", marked),
    ]
    shown = columns(sweep)
    table_rows = "".join(
        "<tr" + (' class="bound"' if row["generator_bound"] else "") + ">"
        + "".join(f"<td>{html.escape(str(row[c]))}</td>" for c in shown) + "</tr>"
        for row in rows(sweep)
    )
    cond = "".join(f"<li>{html.escape(k)}: {html.escape(str(v))}</li>" for k, v in sweep.conditions.items())
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Load sweep report</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto}}td,th{{padding:2px 8px;text-align:right}}
tr.bound td{{background:#fde0dc}}svg{{margin:8px 16px 8px 0}}</style></head><body>
<h1>Load sweep: {html.escape(sweep.conditions.get('scenario', ''))} against {html.escape(sweep.conditions.get('target', ''))}</h1>
<p><strong>{html.escape(verdict_line(sweep))}</strong></p>
<h2>Conditions</h2><ul>{cond}</ul>
<h2>Plots</h2><p>Red rings: the generator was saturated (RPS is the generator's ceiling, not the target's).</p>
{''.join(charts)}
<h2>Steps</h2><table><tr>{''.join(f'<th>{c}</th>' for c in shown)}</tr>{table_rows}</table>
</body></html>
"""


def replace_file(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename: a crash mid-write leaves the previous file."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text)
    partial.replace(path)


def files_in(out: Path) -> dict[str, Path]:
    """The report's files in folder `out`, by kind."""
    return {"csv": out / "steps.csv", "json": out / "sweep.json", "html": out / "report.html",
            "markdown": out / "sizing.md"}


def write(sweep: Sweep, out: Path) -> dict[str, Path]:
    """Write (or rewrite, after each step) the report's files; each is replaced whole."""
    out.mkdir(parents=True, exist_ok=True)
    files = files_in(out)
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, fieldnames=columns(sweep))
    writer.writeheader()
    writer.writerows(rows(sweep))
    replace_file(files["csv"], table.getvalue())
    k = sweep.knee
    replace_file(files["json"], json.dumps({
        "conditions": sweep.conditions, "sweep_of": sweep.sweep_of, "steps": rows(sweep),
        "complete": sweep.incomplete is None, "incomplete": sweep.incomplete,
        "verdict": verdict_line(sweep),
        "capacity_step": k.capacity_step.index + 1 if k.capacity_step else None,
        "knee_step": k.knee_step.index + 1 if k.knee_step else None,
        "generator_bound_step": k.generator_bound_at.index + 1 if k.generator_bound_at else None,
        "records": [asdict(r) for r in sweep.records],
        **({"regions": sweep.regions} if sweep.regions else {}),
    }, indent=2) + "\n")
    replace_file(files["html"], html_page(sweep))
    replace_file(files["markdown"], markdown(sweep))
    return files

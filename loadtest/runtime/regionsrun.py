"""`loadtest run` with several --release: one run from several releases (regions), each in its kube context,
started together, stopped together, judged per region and as one.

Every release is opened first (its values read, its port-forwards up, its workers connected, its swarm idle); one
that cannot be aborts the run before a single request, so no region loads alone. Then a thread a region waits at a
barrier and sends its start; the start skew is the span from the first start sent to the last one acknowledged, an
upper bound of how far apart the regions began (printed, and kept in the results). Every region stops at one
deadline: the first start plus the run time.

A region whose master stops answering for MASTER_SILENT_S (its pod gone, its port-forward or its cluster's API lost) is
lost: the others go on to the end; the result names it, when, and what it cost (the rest of its run time; what it
sent after its statistics were last read, at most a progress interval, is not counted), and the run is incomplete.
Ctrl-C stops every region. Each region's folder (named after it) holds what a one-release run's holds; the run's own
folder holds the whole: the regions' statistics side by side (stats.json), judged as one.
"""
from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from loadtest_shared import checks, results, settings

from ..errors import RunFailed, UsageError
from ..judging import regions as judged_regions, runresult
from ..workload import regions as split_regions
from ..workload.sweep import USERS_PER_WORKER
from . import releaserun, together
from .release import Release
from .locustweb import MASTER_SILENT_S

START_SKEW_S = 1.0  # the regions' starts must fall within this of each other
BARRIER_TIMEOUT_S = 60  # every region opened: the start requests go out at once


@dataclass
class Leg:
    """One region's part of the run."""

    region: str
    opened: releaserun.Opened
    users: int
    spawn_rate: float  # its share of the whole's; 0: every user at once
    out: Path
    sent: float | None = None  # unix time its start request went out
    acknowledged: float | None = None  # and its master answered
    steady_from: float | None = None
    ended: float | None = None
    entries: list = field(default_factory=list)  # its statistics as last read
    entries_at: float | None = None
    lost: dict | None = None
    failed: str | None = None  # why it did not run (its start refused)
    notes: list = field(default_factory=list)


@dataclass
class Several:
    """What a several-release run gives the command: the whole's report (figures and outcomes are judged_run's),
    and each region's checks judged on its own figures."""

    report: results.RunReport
    region_outcomes: list


def open_all(releases: dict[str, Release], stack: contextlib.ExitStack, progress) -> dict[str, releaserun.Opened]:
    """Every release opened for the run, or none: the first that cannot be ends the run before any load."""
    opened = {}
    for region, release in releases.items():
        try:
            opened[region] = releaserun.open_release(release, stack, lambda line, r=region: progress(f"[{r}] {line}"))
        except (RunFailed, UsageError) as e:
            raise type(e)(f"region {region}: {e}\nno region was started: every release must be ready first") \
                from None
    return opened


def users_by_region(opened: dict[str, releaserun.Opened], users: int, shares: dict[str, float] | None) -> dict:
    """Each region's users: in the open model the pool its release's rate needs (every region in one model); in the
    closed model --users (else 50 a worker) split by the shares, else by the workers."""
    rates = {region: o.rate for region, o in opened.items()}
    if any(rates.values()):
        closed = [region for region, rate in rates.items() if not rate]
        if closed:
            open_region = next(region for region, rate in rates.items() if rate)
            raise UsageError(f"region {closed[0]} runs the closed model and region {open_region} the open one "
                             f"({settings.ARRIVAL_RATE.value} {rates[open_region]:g}): one run holds one model; give "
                             "--arrival-rate N to set every region's part of one rate")
        if shares:
            raise UsageError("--share with releases in the open model: each offers its own chart's rate; give "
                             "--arrival-rate N with the shares to split one rate by them")
        return {region: releaserun.users_for(o, users) for region, o in opened.items()}
    workers = {region: o.workers for region, o in opened.items()}
    total = users or USERS_PER_WORKER * sum(workers.values())
    parts = split_regions.split(total, split_regions.weights(shares, workers))
    empty = [region for region, n in parts.items() if n < 1]
    if empty:
        raise UsageError(f"--users {total}: region {empty[0]} would get no user of the split "
                         f"({', '.join(f'{r} {n}' for r, n in parts.items())}); give --users {len(parts)} or more")
    return parts


def run(releases: dict[str, Release], users: int, shares: dict[str, float] | None, spawn_rate: float,
        run_time_s: int, region_checks: dict[str, list[checks.Check]], out: Path, progress=print) -> Several:
    progress = together.one_line_at_a_time(progress)
    with contextlib.ExitStack() as stack:
        opened = open_all(releases, stack, progress)
        split = users_by_region(opened, users, shares)
        out.mkdir(parents=True, exist_ok=True)  # only now: a run refused before it started leaves no folder
        total = sum(split.values())
        # The spawn rate is the whole's, split as the users are: every region's ramp ends together.
        legs = [Leg(region, o, split[region], spawn_rate * split[region] / total,
                    out / split_regions.folder_name(region)) for region, o in opened.items()]
        progress("starting together: " + ", ".join(f"{leg.region} {leg.users} users on {leg.opened.workers} "
                                                    "worker(s)" for leg in legs))
        interrupted = _drive(legs, run_time_s, progress)
        entries = {leg.region: _entries(leg) for leg in legs}
        reports = {leg.region: _region_report(leg, entries[leg.region], run_time_s, region_checks.get(leg.region, []),
                                              interrupted) for leg in legs}
    (out / "stats.json").write_text(json.dumps(judged_regions.merged_entries(entries)))
    several = _whole(legs, reports, spawn_rate, run_time_s)
    if interrupted:  # the whole is kept as far as it went, as a one-release run's is
        several.report.incomplete = "interrupted"
    return several


def _drive(legs: list[Leg], run_time_s: int, progress) -> bool:
    """Every region's swarm started at once, watched to the common deadline, stopped and collected (Ctrl-C stops
    every region, and each keeps what it collected); True when Ctrl-C cut it short."""
    start, begun, stop = threading.Barrier(len(legs)), threading.Barrier(len(legs)), threading.Event()

    def drive(leg: Leg) -> None:
        say = lambda line: progress(f"[{leg.region}] {line}")  # noqa: E731
        web = leg.opened.web
        try:
            start.wait(BARRIER_TIMEOUT_S)
            leg.sent = time.time()
            try:
                leg.opened.swarm(leg.users, leg.spawn_rate, run_time_s, say)
            finally:
                leg.acknowledged = time.time()
            begun.wait(BARRIER_TIMEOUT_S)
            first = min(other.sent for other in legs)
            if leg is legs[0]:
                progress(f"all {len(legs)} regions started within "
                         f"{(max(other.acknowledged for other in legs) - first) * 1000:.0f} ms (the first start sent "
                         "to the last answered)")

            def seen(entries):
                leg.entries, leg.entries_at = entries, time.time()

            leg.steady_from = releaserun.watch(web, leg.users, first + run_time_s, run_time_s, say, stop.is_set,
                                                seen, patience_s=MASTER_SILENT_S)
        except releaserun.MasterLost as e:
            leg.lost = {"at": e.since, "what": str(e)}
            say(f"LOST: {e}; the other regions go on")
        except threading.BrokenBarrierError:
            leg.failed = leg.failed or (f"stopped {'at once' if leg.acknowledged else 'before its start'}: another "
                                        "region's start failed, or the run was interrupted")
        except RunFailed as e:  # its start refused
            leg.failed = f"its swarm did not start: {e}"
            begun.abort()
            stop.set()
        finally:
            leg.ended = time.time()
            if leg.lost is None and leg.sent is not None:
                releaserun.stop(web, say)
                leg.notes += leg.opened.collect(leg.sent, leg.ended, leg.out)

    for leg in legs:
        leg.out.mkdir(parents=True, exist_ok=True)

    def interrupted() -> None:
        progress("interrupted: stopping every region")
        stop.set()
        start.abort()
        begun.abort()

    return together.at_once({f"region {leg.region}": lambda leg=leg: drive(leg) for leg in legs}, interrupted)


def _entries(leg: Leg) -> list[dict]:
    """The region's statistics (Locust's --json-file format), read once for its figures and the whole's: as its
    master wrote them at the end, or as last read before it was lost (then kept in its folder as stats.json)."""
    found = leg.out / "stats.json"
    if leg.lost is None and found.exists():
        return json.loads(found.read_text())
    if leg.entries:
        found.write_text(json.dumps(leg.entries))
    return leg.entries


def _region_report(leg: Leg, entries: list[dict], run_time_s: int, judged: list[checks.Check],
                   interrupted: bool) -> results.RunReport:
    """The region's own result, in its folder: as a one-release run's, its checks those given with its name (and,
    interrupted, as a one-release run's interrupted: its figures so far, no verdict)."""
    opened = leg.opened
    report = results.RunReport(opened.conditions(leg.users, leg.spawn_rate, run_time_s), leg.sent or time.time(),
                               leg.ended or time.time(), notes=list(leg.notes))
    if leg.lost:
        report.incomplete = f"region {leg.region} lost at {leg.lost['at'] - leg.sent:.0f} s: {leg.lost['what']}"
    elif leg.failed:
        report.incomplete = leg.failed
    elif interrupted:
        report.incomplete = "interrupted"
    figures = checks.from_entries(entries) if entries else {}
    if not report.incomplete:
        releaserun.judge(report, opened.prometheus, opened.release.name, leg.sent, leg.steady_from, leg.ended,
                         figures)
    report = replace(report, figures=figures, outcomes=checks.judge(judged, figures))
    runresult.write(report, leg.out)
    return report


def _whole(legs: list[Leg], reports: dict[str, results.RunReport], spawn_rate: float, run_time_s: int) -> Several:
    sent = [leg.sent for leg in legs if leg.sent is not None]
    acknowledged = [leg.acknowledged for leg in legs if leg.acknowledged is not None]
    skew = max(acknowledged) - min(sent) if len(acknowledged) == len(legs) else None
    verdict, why = judged_regions.combined({region: r.verdict for region, r in reports.items()})
    steady = [leg.steady_from for leg in legs]
    first = min(sent) if sent else time.time()
    end = max(leg.ended for leg in legs if leg.ended)

    def each(key: str) -> str:  # one value when every release has the same, else each region's
        found = {leg.region: str(leg.opened.locust.get(key, "?")) for leg in legs}
        return next(iter(found.values())) if len(set(found.values())) == 1 else ", ".join(
            f"{region} {value}" for region, value in found.items())

    report = results.RunReport(
        {"regions": ", ".join(f"{leg.region} ({leg.opened.release})" for leg in legs),
         "scenario": each("scenario"), "target": each("target"),
         "users": f"{sum(leg.users for leg in legs)} ({', '.join(f'{leg.region} {leg.users}' for leg in legs)})",
         **({"arrival rate": f"{sum(leg.opened.rate for leg in legs):g} requests/s ("
             + ", ".join(f"{leg.region} {leg.opened.rate:g}" for leg in legs) + ")"} if legs[0].opened.rate else {}),
         "workers": str(sum(leg.opened.workers for leg in legs)), "spawn rate": f"{spawn_rate:g}/s, split as the users"
         if spawn_rate else "every user at once", "run time": f"{run_time_s} s",
         "start skew": "-" if skew is None else f"{skew:.3f} s at most (the first start sent to the last answered)"},
        first, end, verdict=verdict, notes=[why] if why else [])
    if None not in steady:
        report.window = {"start": max(steady), "end": end, "seconds": round(end - max(steady), 1),
                         "ramp_up_s": round(max(steady) - first, 1)}
        report.judged = (f"each region's steady window (every user running, until the stop), the latest from "
                         f"{max(steady) - first:.0f} s")
    if skew is not None and skew > START_SKEW_S:
        report.notes.append(f"the regions began up to {skew:.2f} s apart, more than {START_SKEW_S:g} s: the whole's "
                            "first seconds had only some regions' load")
    offered = [r.offered_rps for r in reports.values()]
    # The open model: each release offers its own chart's rate, and the whole is held to their sum.
    report.offered_rps = sum(offered) if None not in offered else None
    lost = [leg for leg in legs if leg.lost or leg.failed]
    if lost:
        report.incomplete = "; ".join(
            f"region {leg.region} lost at {leg.lost['at'] - first:.0f} s of {run_time_s}" if leg.lost
            else f"region {leg.region}: {leg.failed}" for leg in lost) + ": the run was not whole"
    report.regions = {leg.region: _region_json(leg, reports[leg.region], first, run_time_s) for leg in legs}
    outcomes = [o for region, r in reports.items() for o in judged_regions.region_outcomes(region, r.outcomes)]
    return Several(report, outcomes)


def _region_json(leg: Leg, report: results.RunReport, first: float, run_time_s: int) -> dict:
    total = report.figures.get(checks.AGGREGATED)
    found = {"release": str(leg.opened.release), "users": leg.users, "workers": leg.opened.workers,
             "folder": leg.out.name, "start_sent": leg.sent, "start_acknowledged": leg.acknowledged,
             "exit_code": report.exit_code, "verdict": report.verdict.kind if report.verdict else None,
             "figures": {"requests": total.requests, "failures": total.failures, "rps": round(total.rps, 1),
                         **{f"p{round(p * 100):g}_ms": total.percentiles_ms[p] for p in (0.5, 0.95, 0.99)}}
             if total else None, "lost": None}
    if leg.lost:
        at = leg.lost["at"] - first
        seen = total.requests if total else 0
        found["lost"] = {
            "at_s": round(at, 1), "what": leg.lost["what"],
            "cost": f"its last {max(0.0, run_time_s - at):.0f} s of {run_time_s} s of load; {seen:,} of its requests "
                    f"counted (its statistics as last read, {leg.entries_at - first:.0f} s in), what it sent after "
                    "not" if leg.entries_at else f"its last {max(0.0, run_time_s - at):.0f} s of {run_time_s} s of "
                    "load, and every request it sent (its statistics were never read)"}
    return found

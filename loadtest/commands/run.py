"""`loadtest run`: one bounded run a pipeline can trust. It starts the load, shows progress, stops by itself, judges
the checks and keeps every result in a folder of its own.

    loadtest run --local --users 100 --run-time 1m --check 'p95<200ms' --check 'fail_ratio<1%'
    loadtest run --release lt --namespace loadtest --users 600 --run-time 5m --check 'p95<200ms'

--local starts the whole stack on this machine. --release drives an installed release (locust.mode interactive)
through port-forwards the command opens and closes itself, reading the web UI's credentials from the release's
Secret (or LOADTEST_LOCUST_AUTH), and collects Locust's files from the master and the run's series from the
release's Prometheus. With --arrival-rate it sets the release's open-model rate (locust.load.arrivalRate; with
several, each release's part) by helm upgrade before the run, and sets it back after.

Checks are METRIC[NAME] OP NUMBER UNIT: p50 p75 p90 p95 p99 p99.9 avg max (ms or s), fail_ratio (% or a fraction),
rps; [NAME] picks one request name, without it all requests count. The chart's `locust.checks` take the same.

The folder (--output, or a new runs/<UTC time>-<test> for each run; never overwritten without --force) holds:
result.json, checks.xml (JUnit, one test case per check), summary.md, Locust's own report.html, stats*.csv and
stats.json, the run's series second by second (series.csv) and the process logs. A run cut short (Ctrl-C, a failed
process) still leaves its folder, marked incomplete.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from loadtest_shared import checks, results, settings

from .. import paths, units
from ..errors import RunFailed, UsageError
from ..judging import compare, locuststats, regions as judged_regions, runresult
from ..runtime import localrun, regionsrun, release, releaserates, releaserun
from ..workload import regions
from . import local, types

RUNS = Path("runs")


def print_outcomes(report: results.RunReport, files: dict[str, Path], out=print) -> None:
    for outcome in report.outcomes:
        out(f"  check            {outcome.describe()}")
    code = report.exit_code
    out(f"  exit code        {code}: {report.meaning}")
    folder = files["json"].parent
    regions = [f"{found['folder']}/" for found in (report.regions or {}).values()]
    out(f"  results          {folder} ({', '.join(p.name for p in files.values())}, "
        + (f"stats.json; each region's own in {', '.join(regions)})" if regions else
           "report.html, stats*.csv, series.csv)"))


def hold_to_baseline(report: results.RunReport, out: Path, say=print) -> None:
    """A finished run in a store with a pinned baseline is held to it as the chart's master holds its run (one
    implementation, loadtest_shared.results.hold_to): the comparison goes into its result.json, checks.xml and
    summary, and a regression makes its exit code 1; the comparison's table is kept beside them (baseline.md)."""
    pinned = results.read_baseline(str(out.parent))
    if pinned is None or pinned[0] == out.name:
        return
    report.baseline = held = results.hold_to(pinned, report.to_json())
    paths.write_text(out / "baseline.md", compare.markdown(
        compare.Comparison("run", out.parent / held.run, out, held.figures, held.invalid)))
    say(f"  baseline         {held.describe()} (baseline.md)")


def run(args) -> int:
    if any(not text.strip() for text in args.check):
        raise UsageError("--check '': give a check such as 'p95<200ms', or leave --check out")
    if args.release:
        return run_release(args)
    if args.share:
        raise UsageError("--share with --local: shares split a run over several --release; a local run is one")
    if types.given(args, RELEASE_ONLY):
        raise UsageError("--chart with --local: it is the chart --arrival-rate upgrades releases with; drop it")
    judged = types.parse_checks(args.check)
    if any(not text.strip() for text in args.abort_on):
        raise UsageError("--abort-on '': give a condition such as 'fail_ratio>5%', or leave --abort-on out")
    aborts = types.parse_checks(args.abort_on, "--abort-on")
    plan = local.prepare(args)
    conditions = {"scenario": plan.name, "target": args.host or plan.target, "users": str(plan.users),
                  "run time": f"{plan.run_time_s} s"}

    def run_local(out: Path) -> Ran:
        result = local.start(args, plan, out, abort_on=[a.text for a in aborts])
        stopped = (result.faults or {}).get("stopped_early")
        return Ran(
            results.RunReport(
                localrun.conditions(result, args.spawn_rate or plan.users, args.wait, args.host), 0, 0,
                verdict=result.verdict,
                cpu={"worker_cpu": result.worker_cpu, "target_cpu_cores": result.target_cpu,
                     "target_cpus": result.target_cpus, "host_cpu": result.host_cpu,
                     "generator_saturated_share": result.window.generator_share,
                     "target_saturated_share": result.window.target_share},
                window=result.phases.to_json(), judged=result.phases.describe(),
                incomplete=None if result.phases.samples or stopped else result.phases.describe(),
                faults=result.faults, offered_rps=result.arrival.offered_rps if result.arrival else None),
            # A run its --abort-on condition stopped failed that condition, whatever its checks say of the time
            # before.
            stops=([checks.abort_outcome(types.parse_checks([stopped["check"]])[0], stopped["measured"])]
                   if stopped else []),
            show=lambda report: local.print_result(result),
            invalid=("workers were lost while every user ran (see the verdict and faults in result.json); run again"
                     if result.window.losses else "the generator was the limit; add workers or cores and run again"))

    return judged_run(Path(args.output) if args.output else runresult.new_folder(RUNS, plan.name), args.force,
                      conditions, judged, run_local)


@dataclass
class Ran:
    """What one path's run gives judged_run: its report's own fields (figures and outcomes are judged_run's; the
    open model's rate is held to), outcomes beside the checks', how it prints itself, and why a generator-bound run
    is invalid."""

    report: results.RunReport
    stops: list = field(default_factory=list)
    show: Callable[[results.RunReport], None] = lambda report: None
    invalid: str = "the generator was the limit; add workers or cores and run again"


def judged_run(out: Path, force: bool, conditions: dict[str, str], judged: list[checks.Check],
               start: Callable[[Path], Ran]) -> int:
    """One judged run, whatever runs it (this machine's stack or a release): its folder checked, the run, its
    checks judged on Locust's statistics, the baseline, the files and the exit code. A run cut short keeps what it
    measured, with the checks judged on it, marked incomplete."""
    runresult.check_output(out, force)
    paths.check_output("--output", out)
    started = time.time()
    try:
        ran = start(out)
    except (KeyboardInterrupt, RunFailed) as e:
        if not out.exists():  # refused before it started: nothing to keep
            raise
        why = "interrupted" if isinstance(e, KeyboardInterrupt) else str(e).splitlines()[0]
        figures = locuststats.figures(out / "stats.json")
        runresult.write(results.RunReport(conditions, started, time.time(), figures,
                                            checks.judge(judged, figures), incomplete=why), out)
        print(f"loadtest run: ended early ({why}); what was measured is in {out}, marked incomplete",
              file=sys.stderr)
        raise
    figures = locuststats.figures(out / "stats.json")
    # The open model's run is held to its offered rate too: one that sent less never passes.
    offered = ran.report.offered_rps
    held_to = judged + ([checks.rate_check(offered)] if offered else [])
    report = replace(ran.report, started=started, ended=time.time(), figures=figures,
                     outcomes=checks.judge(held_to, figures) + ran.stops)
    ran.show(report)
    hold_to_baseline(report, out)
    files = runresult.write(report, out)
    print_outcomes(report, files)
    if report.generator_bound:
        print(f"loadtest run: invalid measurement: {ran.invalid}", file=sys.stderr)
    return report.exit_code


def run_release(args) -> int:
    passed = types.given(args, LOCAL_ONLY)
    if passed:
        raise UsageError(f"{', '.join(passed)}: what runs is the release's (its values); these options are for "
                         "--local. Change the release with helm upgrade --reuse-values --set ...")
    run_time_s = units.parse_duration_s(args.run_time)
    if run_time_s > 24 * 3600:
        raise UsageError(f"--run-time {args.run_time}: at most 24 h")
    named = regions.parse_all(args.release)
    shares = regions.parse_shares(args.share, named)
    kubeconfig = Path(args.kubeconfig) if args.kubeconfig else None
    releases = dict(zip((r.region for r in named), release.resolve(named, args.namespace, kubeconfig)))
    rates = rates_for(args, releases, shares)
    if len(releases) == 1:
        (target,) = releases.values()
        return run_one_release(args, types.parse_checks(args.check), target, run_time_s, rates)
    whole, by_region = judged_regions.split_checks(args.check, list(releases))
    judged = types.parse_checks(whole)
    region_checks = {region: types.parse_checks(texts) for region, texts in by_region.items()}

    def run_on_regions(out: Path) -> Ran:
        with rates():
            several = regionsrun.run(releases, args.users, None if args.arrival_rate else shares, args.spawn_rate,
                                     run_time_s, region_checks, out)
        return Ran(several.report, stops=several.region_outcomes, show=show_release,
                   invalid="the generator was the limit in a region (see its folder); add workers there or give each "
                           "a whole core (helm upgrade --reuse-values --set locust.worker.cpu=1000m) and run again")

    return judged_run(Path(args.output) if args.output else runresult.new_folder(RUNS, "regions"), args.force,
                      {"regions": ", ".join(releases)}, judged, run_on_regions)


def show_release(report: results.RunReport) -> None:
    for note in report.notes:
        print(f"  note             {note}")
    for region, found in (report.regions or {}).items():
        f = found["figures"] or {}
        print(f"  region           {region}: {f.get('requests', 0):,} requests, {f.get('rps', 0):,.1f} RPS, p99 "
              f"{f.get('p99_ms', '-')} ms, verdict {found['verdict'] or 'none'}, exit code {found['exit_code']}"
              + (f"; LOST at {found['lost']['at_s']:.0f} s" if found["lost"] else ""))
    if report.verdict:
        print(f"  verdict          {report.verdict.kind}: {report.verdict.reason}")


def rates_for(args, releases: dict[str, release.Release], shares: dict[str, float] | None):
    """What sets the releases at their parts of --arrival-rate for the run and back after it (checked now, before
    anything changes); nothing without --arrival-rate, when each release offers what its chart says."""
    if not args.arrival_rate:
        if types.given(args, RELEASE_ONLY):
            raise UsageError("--chart without --arrival-rate: it is the chart the releases are upgraded with to "
                             "their parts of the rate; drop it, or give --arrival-rate")
        return contextlib.nullcontext
    if why := settings.refusal({settings.ARRIVAL_RATE: args.arrival_rate, settings.USERS: args.users}):
        raise UsageError(why)
    changes = releaserates.parts(releases, args.arrival_rate, shares)
    return lambda: releaserates.applied(changes, Path(args.chart))


def run_one_release(args, judged: list[checks.Check], target: release.Release, run_time_s: int, rates) -> int:
    def run_on_release(out: Path) -> Ran:
        with rates():
            report = releaserun.run(target, args.users, args.spawn_rate, run_time_s, out)
        return Ran(report, show=show_release,
                   invalid="the generator was the limit; add workers or give each a whole core (helm upgrade "
                           "--reuse-values --set locust.worker.cpu=1000m) and run again")

    return judged_run(Path(args.output) if args.output else runresult.new_folder(RUNS, target.name), args.force,
                      {"release": f"{target.name} (namespace {target.namespace})"}, judged, run_on_release)


# Options of --local that a release sets in its values instead.
LOCAL_ONLY = {"--scenario": "scenario", "-f": "locustfile", "--requirements": "requirements", "--host": "host",
              "--target": "target", "--tls-mode": "tls_mode", "--workers": "workers", "--wait": "wait",
              "--abort-on": "abort_on"}
# Options of --release that --local has no use for.
RELEASE_ONLY = {"--chart": "chart"}


def register(sub) -> None:
    p = sub.add_parser("run", help="one bounded run with pass/fail checks and a results folder, for CI",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--local", action="store_true", help="run the whole stack on this machine (127.0.0.1)")
    types.add_releases(where, p, "drive this installed release (locust.mode interactive) through port-forwards; "
                       "repeat it for one run from several releases (regions), each in its kube context, started "
                       "together and judged per region and as one (docs/regions.md)", "the users or of --arrival-rate")
    p.add_argument("--kubeconfig", type=types.existing_file, help="kubeconfig of the release's cluster (default: kubectl's)")
    p.add_argument("--chart", type=types.existing_folder, default=str(paths.CHART),
                   help="with --release and --arrival-rate: the chart each release is upgraded with to its part of "
                        "the rate, and back after the run (default: loadtest's own)")
    local.add_run_arguments(p)
    p.add_argument("--check", action="append", default=[], metavar="CHECK",
                   help="a pass/fail check, e.g. 'p95<200ms', 'p99[/checkout]<=1s', 'fail_ratio<1%%', 'rps>=5000' "
                        "(repeat it, or separate checks with commas)")
    p.add_argument("--abort-on", action="append", default=[], metavar="CONDITION",
                   help="stop the run early when this holds over the last 10 s of the workers' reports, e.g. "
                        "'fail_ratio>5%%', 'p95>2s' (the checks' language; repeat it, or separate with commas): the "
                        "run ends as a failed check, exit 1, its folder kept (--local; a release's is "
                        "locust.abortOn)")
    p.add_argument("--output", help=f"folder for the results (default: a new {RUNS}/<UTC time>-<test>)")
    p.add_argument("--force", action="store_true", help="replace the results of an earlier run in --output")
    p.set_defaults(func=run)
    types.with_defaults(p, LOCAL_ONLY, RELEASE_ONLY)

"""`loadtest run`: one bounded run a pipeline can trust. It starts the load, shows progress, stops by itself, judges
the checks and keeps every result in a folder of its own.

    loadtest run --local --users 100 --run-time 1m --check 'p95<200ms' --check 'fail_ratio<1%'

Checks are METRIC[NAME] OP NUMBER UNIT: p50 p75 p90 p95 p99 p99.9 avg max (ms or s), fail_ratio (% or a fraction),
rps; [NAME] picks one request name, without it all requests count. The chart's `locust.checks` take the same.

The folder (--output, or a new runs/<UTC time>-<test> for each run; never overwritten without --force) holds:
result.json, checks.xml (JUnit, one test case per check), summary.md, Locust's own report.html, stats*.csv and
stats.json, the run's series second by second (series.csv) and the process logs. A run cut short (Ctrl-C, a failed
process) still leaves its folder, marked incomplete.

Exit codes: 0 every check passed; 1 a check failed (or the run could not be made); 2 bad input, nothing ran;
3 invalid: the generator, not the target, was the limit, so the figures are the generator's ceiling and must not be
recorded as the target's capacity (add workers or cores and run again); 130 interrupted.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .. import checks, locuststats, runresult, verdict
from ..errors import RunFailed
from ..runtime import localrun
from . import local

RUNS = Path("runs")


def print_outcomes(report: runresult.RunReport, files: dict[str, Path], out=print) -> None:
    for outcome in report.outcomes:
        out(f"  check            {outcome.describe()}")
    code = report.exit_code
    out(f"  exit code        {code}: {checks.EXIT_CODES[code]}")
    out(f"  results          {files['json'].parent} ({', '.join(p.name for p in files.values())}, "
        "report.html, stats*.csv, series.csv)")


def run(args) -> int:
    judged = checks.parse(args.check)
    plan = local.prepare(args)
    out = Path(args.output) if args.output else runresult.new_folder(RUNS, plan.name)
    runresult.check_output(out, args.force)
    started = time.time()
    conditions = {"scenario": plan.name, "target": args.host or args.target, "users": str(plan.users),
                  "run time": f"{plan.run_time_s} s"}
    try:
        result = local.start(args, plan, out)
    except (KeyboardInterrupt, RunFailed) as e:
        # Whatever Locust wrote before it was stopped stays, with the checks judged on it, marked incomplete.
        why = "interrupted" if isinstance(e, KeyboardInterrupt) else str(e).splitlines()[0]
        figures = locuststats.figures(out / "stats.json")
        runresult.write(runresult.RunReport(conditions, started, time.time(), figures,
                                            checks.judge(judged, figures), incomplete=why), out)
        print(f"loadtest run: ended early ({why}); what was measured is in {out}, marked incomplete",
              file=sys.stderr)
        raise
    figures = locuststats.figures(out / "stats.json")
    report = runresult.RunReport(
        localrun.conditions(result, args.spawn_rate or plan.users, args.wait, args.host), started, time.time(),
        figures, checks.judge(judged, figures), verdict=result.verdict,
        cpu={"worker_cpu": result.worker_cpu, "target_cpu_cores": result.target_cpu,
             "target_cpus": result.target_cpus, "host_cpu": result.host_cpu})
    files = runresult.write(report, out)
    local.print_result(result)
    print_outcomes(report, files)
    if report.verdict.kind == verdict.GENERATOR_BOUND:
        print("loadtest run: invalid measurement: the generator was the limit; add workers or cores and run again",
              file=sys.stderr)
    return report.exit_code


def register(sub) -> None:
    p = sub.add_parser("run", help="one bounded run with pass/fail checks and a results folder, for CI",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--local", action="store_true", required=True,
                   help="run the whole stack on this machine (127.0.0.1)")
    local.add_run_arguments(p)
    p.add_argument("--check", action="append", default=[], metavar="CHECK",
                   help="a pass/fail check, e.g. 'p95<200ms', 'p99[/checkout]<=1s', 'fail_ratio<1%%', 'rps>=5000' "
                        "(repeat it, or separate checks with commas)")
    p.add_argument("--output", help=f"folder for the results (default: a new {RUNS}/<UTC time>-<test>)")
    p.add_argument("--force", action="store_true", help="replace the results of an earlier run in --output")
    p.set_defaults(func=run)

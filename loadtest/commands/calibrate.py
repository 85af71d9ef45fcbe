"""`loadtest calibrate`: the RPS one worker core delivers per scenario, measured on this machine.

One worker, enough users to keep it busy, a short run per scenario against the local stack; RPS divided by the
worker's measured CPU (in cores) is the figure the planner multiplies by the worker count. A run where the worker
did not reach the saturation threshold was limited by the target, so its figure is only a lower bound and is
labelled so.

`-f yours.py` measures your own locustfile the same way, so that `loadtest plan --scenario <its name>` sizes the
workers for your test: a heavier user class gives fewer RPS per worker core than a 1 KB GET.

`--from-sweep` takes the figure from a `loadtest sweep` report instead: on a release, that is the worker nodes' own
CPUs doing the work, which is what the planner multiplies.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


from loadtest_shared import checks

from .. import paths, units
from ..capacity import calibration
from ..errors import UsageError
from ..runtime import calibrate, localrun
from ..runtime.locust import version as locust_version
from ..runtime.cpu import cpu_model
from ..workload import scenarios
from . import owntest, types


def from_sweep(args) -> int:
    if args.locustfile or args.requirements:
        given = "-f" if args.locustfile else "--requirements"
        raise UsageError(f"{given} with --from-sweep: the figure comes from the sweep's report, which names its "
                         "scenario; drop -f and --requirements, or --from-sweep to measure your test here")
    paths.check_output("--output", Path(args.output), folder=False)
    calibration.check_mergeable(Path(args.output))
    scenario, figure = calibration.from_sweep(Path(args.from_sweep))
    out = Path(args.output)
    calibration.merge(out, scenario, figure, {"locust_version": locust_version(),
                                              "cpu_model": "the workers of each scenario's source", "cores": None})
    bound = " (workers not saturated: a lower bound)" if figure["lower_bound"] else ""
    print(f"{scenario}: {figure['rps']:,.0f} RPS on {figure['worker_cpu']:.2f} worker cores -> "
          f"{figure['rps_per_core']:,} RPS per worker core{bound}, from {figure['source']}")
    print(f"wrote {out}; {plan_hint(out)}")
    return 0


def plan_hint(out: Path, scenario: str | None = None) -> str:
    """How `loadtest plan` reads the file just written: by itself from the default place, else with --calibration."""
    option = "" if out.resolve() == calibration.DEFAULT_FILE.resolve() else f" --calibration {out}"
    return f"size for it with `loadtest plan{f' --scenario {scenario}' if scenario else ''}{option} --target-rps N`"


def own_test(args, run_time_s: int) -> int:
    test = localrun.own_test(args.locustfile, args.requirements)
    print(f"calibrating {test.locustfile} ({', '.join(test.user_classes)}), {run_time_s} s, one worker with "
          f"{args.users} users against the local backend, on {cpu_model()}")
    f = calibrate.measure(test.name, run_time_s, test, args.users)
    out = Path(args.output)
    calibration.merge(out, test.name, f, {"locust_version": locust_version(), "cpu_model": cpu_model(),
                                          "cores": os.cpu_count(), "run_time_s": run_time_s})
    note = " (worker not saturated, a lower bound: with think time, raise --users)" if f["lower_bound"] else ""
    print(f"  {test.name:<15} {f['rps']:>9,.0f} RPS at {f['worker_cpu']:.0%} of a core -> "
          f"{f['rps_per_core']:>7,} RPS per worker core{note}")
    print(f"wrote {out}; {plan_hint(out, test.name)}")
    return failed_requests({test.name: f})


def run(args) -> int:
    if args.from_sweep:
        return from_sweep(args)
    owntest.check(args)
    run_time_s = units.parse_duration_s(args.run_time)
    paths.check_output("--output", Path(args.output), folder=False)
    if args.locustfile:
        calibration.check_mergeable(Path(args.output))
        return own_test(args, run_time_s)
    print(f"calibrating {len(args.scenarios)} scenario(s), {run_time_s} s each, one worker with "
          f"{args.users} users, on {cpu_model()}")
    figures = {}
    for name in args.scenarios:
        figures[name] = f = calibrate.measure(name, run_time_s, users=args.users)
        note = " (worker not saturated: the target limited the run, a lower bound)" if f["lower_bound"] else ""
        print(f"  {name:<15} {f['rps']:>9,.0f} RPS at {f['worker_cpu']:.0%} of a core -> "
              f"{f['rps_per_core']:>7,} RPS per worker core ({f['user_class']}){note}")
    out = Path(args.output)
    calibration.write(out, figures, {"locust_version": locust_version(), "cpu_model": cpu_model(),
                                     "cores": os.cpu_count(), "run_time_s": run_time_s})
    print(f"wrote {out}; {plan_hint(out)}")
    return failed_requests(figures)


def failed_requests(figures: dict[str, dict]) -> int:
    """A figure measured with failed requests is not one to plan with: exit 4, naming the scenarios (1 is kept for a
    failed check)."""
    failed = [name for name, f in figures.items() if f["failures"]]
    if failed:
        print(f"loadtest calibrate: requests failed while measuring {', '.join(failed)}: the figures above are "
              "not to plan with; the local stack's logs say why", file=sys.stderr)
        return checks.RUN_FAILED
    return checks.PASSED


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="measure RPS per worker core for each scenario on this machine",
                       description=__doc__)
    p.add_argument("--scenarios", nargs="+", default=list(scenarios.SCENARIOS), metavar="SCENARIO",
                   type=types.checked(scenarios.get),
                   help=f"scenarios to measure (default: all of {', '.join(scenarios.SCENARIOS)})")
    p.add_argument("--users", type=types.number(int, minimum=1), default=calibrate.USERS_PER_WORKER,
                   help=f"users on the one worker (default {calibrate.USERS_PER_WORKER}: enough without think time; "
                        "a test with think time needs more to keep the worker busy)")
    p.add_argument("--run-time", type=types.duration(), default="15s", help="run time per scenario (default 15s)")
    owntest.add_arguments(p, "measure your own locustfile instead (its figure is kept under its name)")
    p.add_argument("--from-sweep", metavar="REPORT",
                   help="take the figure from a `loadtest sweep` report instead (its folder or sweep.json): a sweep "
                        "on a release measures your worker nodes; updates that scenario in the file")
    p.add_argument("--output", default=str(calibration.DEFAULT_FILE), help="calibration file to write")
    p.set_defaults(func=run)

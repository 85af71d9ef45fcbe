"""`loadtest calibrate`: the RPS one worker core delivers per scenario, measured on this machine.

One worker, enough users to keep it busy, a short run per scenario against the local stack; RPS divided by the
worker's measured CPU (in cores) is the figure the planner multiplies by the worker count. A run where the worker
did not reach the saturation threshold was limited by the target, so its figure is only a lower bound and is
labelled so.

`--from-sweep` takes the figure from a `loadtest sweep` report instead: on a release, that is the worker nodes' own
CPUs doing the work, which is what the planner multiplies.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

import locust

from . import local, planner, verdict

USERS_PER_WORKER = 50


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure(scenario: str, run_time_s: int, progress=print) -> dict:
    with tempfile.TemporaryDirectory(prefix="loadtest-calibrate-") as workdir:
        result = local.run(scenario, USERS_PER_WORKER, USERS_PER_WORKER, run_time_s, 1, Path(workdir),
                           progress=lambda line: None)
    cpu = result.worker_cpu[0] if result.worker_cpu else 0.0
    saturated = cpu >= verdict.SATURATED_CPU * 0.9
    figure = {
        "rps_per_core": round(result.rps / cpu) if cpu > 0 else 0,
        "rps": round(result.rps, 1),
        "worker_cpu": round(cpu, 3),
        "failures": result.failures,
        "user_class": planner.user_class(scenario),
        "lower_bound": not saturated,
    }
    note = "" if saturated else " (worker not saturated: the target limited the run, a lower bound)"
    progress(f"  {scenario:<15} {figure['rps']:>9,.0f} RPS at {cpu:.0%} of a core -> "
             f"{figure['rps_per_core']:>7,} RPS per worker core ({figure['user_class']}){note}")
    return figure


class CalibrationError(ValueError):
    pass


def from_sweep(path: Path) -> tuple[str, dict]:
    """(scenario, figure) from a sweep's report: the step where the workers were busiest, RPS over the cores all
    workers used. A sweep on a release measures the worker nodes' own CPUs, as the planner wants."""
    file = path / "sweep.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
        conditions, steps = data["conditions"], data["steps"]
    except (OSError, ValueError, KeyError) as e:
        raise CalibrationError(f"--from-sweep {path}: not a sweep report ({e}); give the folder `loadtest sweep` "
                               "wrote") from None
    scenario = conditions.get("scenario")
    if scenario not in planner.SCENARIOS:
        raise CalibrationError(f"--from-sweep {path}: scenario {scenario!r} is not one the planner knows")
    measured = [s for s in steps if s.get("worker_cpu_cores", 0) > 0 and s["requests"] > 0]
    if not measured:
        raise CalibrationError(f"--from-sweep {path}: no step has the workers' CPU measured")
    best = max(measured, key=lambda s: s["worker_cpu_max"])
    where = conditions.get("node types") if "local" not in conditions.get("node types", "local") \
        else conditions.get("where", "this machine")
    return scenario, {
        "rps_per_core": round(best["rps"] / best["worker_cpu_cores"]),
        "rps": best["rps"],
        "worker_cpu": best["worker_cpu_cores"],
        "failures": best["failures"],
        "user_class": planner.user_class(scenario),
        "lower_bound": best["worker_cpu_max"] < verdict.SATURATED_CPU * 0.9,
        "source": f"sweep {file}, step {best['step']} ({where}, {conditions.get('date', 'undated')})",
    }


def cmd_from_sweep(args) -> int:
    from .cli import UsageError

    try:
        scenario, figure = from_sweep(Path(args.from_sweep))
    except CalibrationError as e:
        raise UsageError(str(e)) from None
    out = Path(args.output)
    data = json.loads(out.read_text()) if out.exists() else {
        "date": datetime.date.today().isoformat(), "locust_version": locust.__version__,
        "cpu_model": "the workers of each scenario's source", "cores": None, "scenarios": {}}
    data["scenarios"][scenario] = figure
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    bound = " (workers not saturated: a lower bound)" if figure["lower_bound"] else ""
    print(f"{scenario}: {figure['rps']:,.0f} RPS on {figure['worker_cpu']:.2f} worker cores -> "
          f"{figure['rps_per_core']:,} RPS per worker core{bound}, from {figure['source']}")
    print(f"wrote {out}; `loadtest plan` uses it from now on")
    return 0


def cmd_calibrate(args) -> int:
    from .cli import UsageError

    if args.from_sweep:
        return cmd_from_sweep(args)
    unknown = [s for s in args.scenarios if s not in planner.SCENARIOS]
    if unknown:
        raise UsageError(f"unknown scenario(s) {', '.join(unknown)}; scenarios: {', '.join(planner.SCENARIOS)}")
    try:
        run_time_s = local.parse_duration_s(args.run_time)
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(f"calibrating {len(args.scenarios)} scenario(s), {run_time_s} s each, one worker with "
          f"{USERS_PER_WORKER} users, on {cpu_model()}")
    try:
        scenarios = {s: measure(s, run_time_s) for s in args.scenarios}
    except local.LocalRunError as e:
        print(f"loadtest calibrate: {e}", file=sys.stderr)
        return 1
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "date": datetime.date.today().isoformat(), "locust_version": locust.__version__, "cpu_model": cpu_model(),
        "cores": os.cpu_count(), "run_time_s": run_time_s, "scenarios": scenarios,
    }, indent=2) + "\n")
    print(f"wrote {out}; `loadtest plan` uses it from now on")
    return 0 if all(f["failures"] == 0 for f in scenarios.values()) else 1


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="measure RPS per worker core for each scenario on this machine",
                       description=__doc__)
    p.add_argument("--scenarios", nargs="+", default=list(planner.SCENARIOS), metavar="SCENARIO",
                   help=f"scenarios to measure (default: all of {', '.join(planner.SCENARIOS)})")
    p.add_argument("--run-time", default="15s", help="run time per scenario (default 15s)")
    p.add_argument("--from-sweep", metavar="REPORT",
                   help="take the figure from a `loadtest sweep` report instead (its folder or sweep.json): a sweep "
                        "on a release measures your worker nodes; updates that scenario in the file")
    p.add_argument("--output", default=str(planner.DEFAULT_CALIBRATION), help="calibration file to write")
    p.set_defaults(func=cmd_calibrate)

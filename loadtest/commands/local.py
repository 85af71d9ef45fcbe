"""`loadtest local`: the whole load test on one machine, no cluster.

It renders the chart's configs (the backend's nginx.conf, and the target's: HAProxy's haproxy.cfg or the nginx.conf
the NGINX Ingress Controller generates for the chart's Ingress), runs them with the machine's nginx and haproxy on
127.0.0.1, starts a Locust master and one worker per core with the project's locustfiles, runs a bounded test, and
prints RPS, failures, latency and which side was the bottleneck.

`-f yours.py` runs your own locustfile instead of a scenario, with the same progress, result and verdict: the
project's plugin loads beside it, the modules beside it and `--requirements` (pinned, hash-checked, installed into
the cache) are importable, and your environment reaches it (tokens, hosts). It loads the built-in target unless
you give `--host`.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from loadtest_shared import checks, results, settings, verdict

from .. import paths, units
from ..errors import UsageError
from ..capacity import calibration, machine
from ..runtime import cpu, localrun
from ..workload import arrival, scenarios, targets
from ..workload.sweep import USERS_PER_WORKER
from . import owntest, types


DEFAULT_TARGET = "backend"


def print_result(r: localrun.Result, out=print) -> None:
    v = r.verdict
    out("")
    out(f"Result ({r.scenario} against {r.target}{'' if r.tls_mode == 'none' else ' TLS ' + r.tls_mode}, "
        f"{r.workers} worker(s), {r.users} users, {r.run_time_s} s)")
    out(f"  requests         {r.requests:,} ({r.failures:,} failed, {r.failure_ratio:.2%})" if r.requests
        else "  requests         none sent: no failure ratio")
    if r.arrival:
        a = r.arrival
        out(f"  RPS              {r.rps:,.0f} of {a.offered_rps:,g} offered ({r.rps / a.offered_rps:.1%}"
            f"{'' if checks.held(a.offered_rps, r.rps) else ': the rate was not held'})")
        out(f"  late starts      {a.describe_late()}")
        out(f"  response time    p50 / p95 / p99 / p99.9  {r.p50_ms:g} / {r.p95_ms:g} / {r.p99_ms:g} / "
            f"{r.p999_ms:g} ms (from each request's slot)")
        service = " / ".join("-" if a.service_time_ms.get(q) is None else f"{a.service_time_ms[q]:g}"
                             for q in (0.5, 0.95, 0.99, 0.999))
        out(f"  service time     p50 / p95 / p99 / p99.9  {service} ms (from the actual send)")
        if a.late_share("users") >= verdict.LATE_STARTS:
            out(f"  pool             {r.users} users were too few for the target's latency: slots waited for a free "
                "user (their latency counts from the slot all the same)")
    else:
        out(f"  RPS              {r.rps:,.0f}")
        out(f"  p50 / p95 / p99  {r.p50_ms:g} / {r.p95_ms:g} / {r.p99_ms:g} ms")
    out(f"  judged           {r.phases.describe() if r.phases else 'nothing'}")
    if r.worker_cpu:
        out(f"  worker CPU       {', '.join(f'{c:.0%}' for c in r.worker_cpu)} (of one core each, steady mean)")
    if r.target_cpu is not None:
        out(f"  target CPU       {r.target_cpu:.2f} of {r.target_cpus} core(s) ({r.target})")
    if r.host_cpu is not None:
        out(f"  machine CPU      {r.host_cpu:.0%} of {psutil.cpu_count()} core(s) busy")
    out(f"  verdict          {f'{v.kind}: {v.reason}' if v else 'none: no steady window to judge'}")
    for line in results.faults_lines(r.faults)[:-1] if r.faults else ():
        out(f"  {line}")


@dataclass(frozen=True)
class LocalRun:
    """What the options of a local run ask for, checked before anything starts."""

    name: str  # the scenario's, or the user's test's
    test: localrun.OwnTest | None
    users: int
    run_time_s: int
    target: str  # the local target (unused with --host)
    arrival_rate: float | None = None


def prepare(args) -> LocalRun:
    run_time_s = units.parse_duration_s(args.run_time)
    if not 1 <= run_time_s <= 3600:
        raise UsageError("--run-time must be between 1 s and 1 h")
    if why := settings.refusal({settings.ARRIVAL_RATE: args.arrival_rate, settings.USERS: args.users,
                                settings.WAIT: args.wait}):
        raise UsageError(why)
    users = arrival.pool_size(args.arrival_rate, args.workers) if args.arrival_rate else args.users or USERS_PER_WORKER * args.workers
    here = cpu.this_machine()
    warnings = machine.check(here, args.workers, users,
                             users_option="--arrival-rate's pool" if args.arrival_rate else "--users")
    if args.host:
        if args.target is not None or args.tls_mode is not None:
            option = "--target" if args.target is not None else "--tls-mode"
            raise UsageError(f"{option} with --host: --host replaces the local target, and its scheme says whether "
                             "TLS is used (https://...); drop " + option)
        if not args.locustfile:
            host = args.host
            targets.check_scenario_tls(scenarios.get(args.scenario or scenarios.DEFAULT),
                                       host.lower().startswith("https://"),
                                       f"--host {host} is plain HTTP: give an https:// --host, or another --scenario",
                                       f"--host {host} is HTTPS: give an http:// --host, or another --scenario")
    if args.locustfile and args.scenario is not None:
        raise UsageError(f"--scenario with -f: your test {args.locustfile} is what runs; drop --scenario")
    if args.arrival_rate and not args.locustfile:
        name = args.scenario or scenarios.DEFAULT
        calibrated = calibration.load_calibration().rps_per_core.get(name)
        warnings += machine.check_rate(here, args.arrival_rate, calibrated and calibrated * arrival.CLOSED_SHARE,
                                       name)
    for warning in warnings:
        print(f"loadtest {args.command}: warning: {warning}", file=sys.stderr)
    if args.spawn_rate and users / args.spawn_rate >= run_time_s:
        raise UsageError(f"--spawn-rate {args.spawn_rate:g}: {users} users take {users / args.spawn_rate:.0f} s to "
                         f"start, the whole --run-time of {run_time_s} s, and only the time with every user running "
                         "is judged; raise --spawn-rate or --run-time")
    if args.wait and args.locustfile:
        raise UsageError("--wait sets the built-in scenarios' wait; your -f test sets its own wait_time")
    owntest.check(args)
    test = None
    if args.locustfile:
        test = localrun.own_test(args.locustfile, args.requirements)
        print(f"loadtest {args.command}: {test.locustfile} has User class(es) {', '.join(test.user_classes)}")
    target = args.target or DEFAULT_TARGET
    if not test:
        scenario = scenarios.get(args.scenario or scenarios.DEFAULT)
        if not args.host:
            targets.check_tls_mode(scenario, targets.get(target), args.tls_mode or scenario.default_tls_mode)
    return LocalRun(test.name if test else args.scenario or scenarios.DEFAULT, test, users, run_time_s, target,
                    args.arrival_rate)


def start(args, plan: LocalRun, workdir: Path, abort_on: list[str] = ()) -> localrun.Result:
    return localrun.run(plan.name, plan.users, args.spawn_rate or plan.users, plan.run_time_s, args.workers,
                        workdir, target=plan.target, tls_mode=args.tls_mode, test=plan.test, host=args.host,
                        wait_s=args.wait, arrival_rate=plan.arrival_rate, abort_on=abort_on)


def run(args) -> int:
    plan = prepare(args)
    if args.output:
        paths.check_output("--output", Path(args.output))
    workdir = Path(args.output) if args.output else Path(tempfile.mkdtemp(prefix="loadtest-local-"))
    try:
        result = start(args, plan, workdir)
    finally:
        if not args.output:
            shutil.rmtree(workdir, ignore_errors=True)
    print_result(result)
    if args.output:
        print(f"  files            {workdir} (Locust CSV, process logs)")
    if result.requests == 0:
        print("loadtest local: not one request was sent: the workers' logs (--output DIR keeps them) say why",
              file=sys.stderr)
        return checks.RUN_FAILED
    generator_bound = result.verdict is not None and result.verdict.kind == verdict.GENERATOR_BOUND
    failing = result.failure_ratio > args.max_failure_ratio  # some request was sent (above)
    # The same code as `loadtest run --local` gives the same run: generator-bound (3) wins over the failures.
    code = checks.exit_code([], generator_bound, result.requests)
    if code == checks.PASSED and failing:
        code = checks.CHECK_FAILED
    if code == checks.INVALID:
        print("loadtest local: invalid measurement: the generator was the limit (the verdict above); add workers or "
              "cores before reading the target's capacity", file=sys.stderr)
    elif failing:
        print(f"loadtest local: failure ratio {result.failure_ratio:.2%} above {args.max_failure_ratio:.2%}",
              file=sys.stderr)
    return code


def add_run_arguments(p) -> None:
    """What runs where: the options `local` and `run --local` share."""
    # No defaults in argparse for --scenario and --target: given beside -f or --host, which replace them, they are
    # refused rather than ignored (prepare).
    p.add_argument("--scenario", choices=list(scenarios.SCENARIOS),
                   help=f"what each request does (default {scenarios.DEFAULT})")
    owntest.add_arguments(p, "your own locustfile instead of --scenario")
    p.add_argument("--host", metavar="URL", type=types.url,
                   help="load this URL instead of the local target (only hosts you are allowed to load; its scheme "
                        "says whether TLS is used)")
    p.add_argument("--target", choices=list(targets.TARGETS),
                   help=f"what Locust loads: the payload backend itself (default, {DEFAULT_TARGET}), nginx (the NGINX "
                        "Ingress Controller's config) or haproxy, both in front of the backend")
    p.add_argument("--tls-mode", choices=targets.TLS_MODES,
                   help="none: HTTP; edge: TLS terminated at the target; passthrough, reencrypt: haproxy only "
                        "(default: edge for the scenarios that need TLS, none otherwise)")
    p.add_argument("--workers", type=types.number(int, minimum=1), default=os.cpu_count() or 1, help="Locust workers (default: one per core)")
    p.add_argument("--users", type=types.number(int, minimum=1),
                   help="closed model: concurrent users, each sending once its answer came (default 50 per worker)")
    p.add_argument("--arrival-rate", metavar="RPS", type=types.number(float, minimum=0.1),
                   help="open model: send this many requests per second, split over the workers, whatever the target "
                        "does, and measure latency from when each was due (the SLO question: does p99 hold at this "
                        "rate?); instead of --users")
    p.add_argument("--spawn-rate", type=types.number(float, minimum=0), default=0, help="users started per second (default: all at once)")
    p.add_argument("--run-time", type=types.duration(), default="20s", help="how long to run, e.g. 20s, 2m (default 20s)")
    p.add_argument("--wait", type=types.number(float, minimum=0), default=0.0,
                   help="seconds each user of a built-in scenario waits between requests (default 0)")


def register(sub) -> None:
    p = sub.add_parser("local", help="run a bounded load test on this machine (target + payload + Locust), no cluster",
                       description=__doc__)
    add_run_arguments(p)
    p.add_argument("--max-failure-ratio", type=types.number(float, minimum=0, maximum=1), default=0.01,
                   help="exit 1 when more than this share of requests failed (default 0.01)")
    p.add_argument("--output", help="keep Locust's CSV files and the process logs in this folder")
    p.set_defaults(func=run)

"""`loadtest sweep`: raise the load step by step, read what each step gave from Prometheus, find the knee, report.

Each step sets the load (users; workers; the target's CPUs, as NGINX measured its tables; or the arrival rate),
waits out a warm-up, then holds for a measured window. RPS, failures and latency percentiles of the window come from
Prometheus (the Locust metrics plugin's series), and so does the step's verdict: the one the chart's saturation rules
recorded. The sweep stops at the knee (RPS stopped rising while p95 grew) or as soon as the generator saturates:
from then on the RPS is the generator's ceiling, never the target's capacity. The report (CSV, JSON, HTML, Markdown
table) is rewritten after every step; a sweep cut short (Ctrl-C, a lost port-forward, a failed upgrade) leaves the
steps so far, marked incomplete. An --output folder that holds an earlier sweep is refused unless --force.

Two ways to run: `--local` starts the whole stack on this machine, `--release` drives an installed release through
`helm upgrade` and Locust's web API, reading the release's Prometheus.

Several releases (regions), `--release lt@us-east-1 --release lt@eu-west-1 --steps 200,400,800`: a users sweep
whose every step is split over the releases (by --share, else by their workers) and started together in all of
them; the command opens each release's port-forwards itself. Each region's window is read from its own Prometheus
and judged; the whole step adds their requests and RPS and takes its percentiles from the union of their requests
(docs/regions.md). The folder holds the whole's report, and a sub-folder a region its own.

Open model, `--sweep arrival-rate --steps 500,1000,2000` (--local only): each step offers that many requests per
second, split over the workers and sent on a fixed schedule whatever the target does (the pool of users is sized from
the rate, so no --users-per-worker, no --wait); each step restarts the Locust master and workers with its rate. Its
latency percentiles count from each request's slot, and each step reports the rate offered and achieved, the share of
requests started late (no user free / worker woke late) and the service time's p99. The knee is the first step whose
rate was not held (achieved under 99 % of offered) or whose requests failed; late starts for want of worker CPU make
a step generator-bound and stop the sweep. For a release, step by hand: `loadtest run --release RELEASE
--arrival-rate N` for each rate N (it sets the release's rate by helm upgrade, and back after the run).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .. import paths, units
from ..errors import RunFailed, UsageError
from ..judging import sweepreport
from ..capacity import machine
from ..runtime import cpu, regionsweep, release, sweep_cluster, sweep_local
from ..runtime.locustweb import CREDENTIALS_ENV, LocustWeb
from ..runtime.prom import Prometheus
from ..runtime.sweeper import Sweeper
from ..workload import arrival, regions, scenarios, targets
from ..workload.sweep import (ARRIVAL_RATE, KINDS, MIN_WARMUP_S, USERS_PER_WORKER, Spec, check_open_model,
                              measured_window, parse_steps)
from . import types


def print_summary(sweep: sweepreport.Sweep, files: dict[str, Path], out=print) -> None:
    out("")
    out(sweepreport.sizing_table(sweep))
    out("")
    out(sweepreport.verdict_line(sweep))
    out("report: " + ", ".join(str(p) for p in files.values()))


def locust_credentials(args) -> str | None:
    """The web UI's "user:password": --locust-auth-file, else $LOADTEST_LOCUST_AUTH, else none."""
    if args.locust_auth_file:
        try:
            return Path(args.locust_auth_file).read_text().strip()
        except OSError as e:
            raise UsageError(f"--locust-auth-file {args.locust_auth_file}: {e.strerror}") from None
    return os.environ.get(CREDENTIALS_ENV) or None


def check_output(out: Path, force: bool) -> None:
    if sweepreport.files_in(out)["json"].exists() and not force:
        raise UsageError(f"--output {out} holds an earlier sweep: give another folder, or --force to replace it")


def check_machine(spec: Spec, workers: int) -> None:
    """The biggest step of a local sweep, held to what this machine holds (capacity.machine)."""
    most = max(spec.loads)
    if spec.kind == "workers":
        sizes = {"workers": most, "users": spec.users_per_worker * most, "as": ("--steps", "--steps x --users-per-worker")}
    elif spec.open_model:
        sizes = {"workers": workers, "users": arrival.pool_size(most, workers), "as": ("--workers", "--steps' pool")}
    else:
        sizes = {"workers": workers, "users": most, "as": ("--workers", "--steps")}
    for warning in machine.check(cpu.this_machine(), sizes["workers"], sizes["users"], *sizes["as"]):
        print(f"loadtest sweep: warning: {warning}", file=sys.stderr)


def run(args) -> int:
    check_output(Path(args.output), args.force)
    paths.check_output("--output", Path(args.output))
    spec = Spec(kind=args.sweep, loads=parse_steps(args.steps),
                warmup_s=units.parse_duration_s(args.warmup, "--warmup"),
                hold_s=units.parse_duration_s(args.hold, "--hold"),
                users_per_worker=args.users_per_worker or USERS_PER_WORKER, spawn_rate=args.spawn_rate,
                p99_bound_ms=args.max_p99)
    if args.local == bool(args.release):
        raise UsageError("say where to sweep: --local (this machine) or --release NAME (an installed release)")
    given = types.given(args, RELEASE_ONLY if args.local else LOCAL_ONLY)
    if given:
        raise UsageError(f"{', '.join(given)} with {'--local' if args.local else '--release'}: "
                         + ("the local stack runs its own Prometheus and Locust, and no release; drop them"
                            if args.local else "what runs is the release's (its values); these options are for "
                            "--local. Change the release with helm upgrade --reuse-values --set ..."))
    if spec.open_model:
        check_open_model(users_per_worker=args.users_per_worker, wait_s=args.wait,
                         release=" ".join(map(str, args.release or [])) or None)
    if args.local:
        check_machine(spec, args.workers)
        # Checked before the stack starts; a release's scrape interval is read from its Prometheus first thing.
        measured_window(spec.hold_s, sweep_local.SCRAPE_S)
        driver = sweep_local.LocalDriver(
            Path(args.output) / "stack", scenario=args.scenario, target=args.target, tls_mode=args.tls_mode,
            workers=args.workers, wait_s=args.wait, values=sweep_local.parse_set(args.set), spec=spec,
            progress=print)
    else:
        named = regions.parse_all(args.release)
        shares = regions.parse_shares(args.share, named)
        found = release.resolve(named, args.namespace, Path(args.kubeconfig) if args.kubeconfig else None)
        if len(found) > 1:
            return run_regions(args, spec, dict(zip((r.region for r in named), found)), shares)
        if not (args.prometheus and args.locust):
            raise UsageError("--release needs --prometheus URL and --locust URL (port-forwards; see NOTES.txt)")
        driver = sweep_cluster.ClusterDriver(
            found[0], Path(args.chart), LocustWeb(args.locust, locust_credentials(args)), Prometheus(args.prometheus),
            spec=spec, progress=print)
    out = Path(args.output)
    try:
        with driver:
            sweep = Sweeper(driver, spec, report_dir=out).run()
    except (KeyboardInterrupt, RunFailed):
        say_where_the_report_is(out)
        raise
    if not sweep.records:
        raise RunFailed("no step was measured")
    print_summary(sweep, sweepreport.files_in(out))  # the sweeper wrote them after the last step
    return 0


def say_where_the_report_is(out: Path, where: str = "") -> None:
    """After Ctrl-C or a failure: the report's folder, and whether the sweep ended before it was done. A Ctrl-C
    after its last step (while its swarm stops) leaves the report complete, and it says so."""
    found = sweepreport.files_in(out)["json"]
    if not found.exists():
        return
    if json.loads(found.read_text()).get("complete"):
        print(f"loadtest sweep: stopped after its last step; its report is in {out}{where}, complete", file=sys.stderr)
    else:
        print(f"loadtest sweep: ended early; the steps measured so far are in {out}{where}, marked incomplete",
              file=sys.stderr)


def run_regions(args, spec: Spec, releases: dict, shares: dict[str, float] | None) -> int:
    """A users sweep of several releases (regions), each opened through its own port-forwards."""
    if spec.kind != "users":
        raise UsageError(f"--sweep {args.sweep} with several --release: a sweep of several releases raises the users, "
                         "split by --share or by each release's workers; sweep workers or target CPUs on each "
                         "release on its own")
    given = [option for option, dest in REGIONS_OPEN_THEMSELVES.items() if getattr(args, dest)]
    if given:
        raise UsageError(f"{', '.join(given)} with several --release: the command opens each release's port-forwards "
                         "and reads its web UI's password from the release's Secret; drop them")
    out = Path(args.output)
    try:
        sweep = regionsweep.run(releases, spec, shares, Path(args.chart), out)
    except (KeyboardInterrupt, RunFailed):
        say_where_the_report_is(out, " (each region's in its sub-folder)")
        raise
    if not sweep.records:
        raise RunFailed("no step was measured")
    print_summary(sweep, sweepreport.files_in(out))
    print("each region's own report: " + ", ".join(str(out / found["folder"]) for found in sweep.regions.values()))
    return 0


def register(sub) -> None:
    p = sub.add_parser("sweep", help="raise the load step by step, find the knee, write a sizing report",
                       description=__doc__)
    where = p.add_argument_group("where")
    where.add_argument("--local", action="store_true", help="start the whole stack on this machine (127.0.0.1)")
    types.add_releases(where, where, "drive this installed release (helm upgrade and Locust's web API); repeat it "
                       "for one users sweep from several releases (regions), each step's users split over them, "
                       "started together, judged per region and as one (docs/regions.md)", "each step's users")
    where.add_argument("--prometheus", type=types.url, help="the release's Prometheus, e.g. http://127.0.0.1:9090 (port-forward)")
    where.add_argument("--locust", type=types.url, help="the release's Locust web UI, e.g. http://127.0.0.1:8089 (port-forward)")
    where.add_argument("--locust-auth-file", metavar="FILE", type=types.existing_file,
                       help=f"file holding the web UI's user:password (locust.webAuth; default: ${CREDENTIALS_ENV})")
    where.add_argument("--chart", type=types.existing_folder, default=str(paths.CHART), help="chart to upgrade with (default: loadtest's own)")
    where.add_argument("--kubeconfig", type=types.existing_file, help="kubeconfig for helm (default: helm's own)")
    steps = p.add_argument_group("steps")
    steps.add_argument("--sweep", default="users", choices=list(KINDS),
                       help="what each step raises (default users); target-cpus needs a release; "
                            f"{ARRIVAL_RATE}: the requests/s offered (open model, --local only)")
    steps.add_argument("--steps", required=True,
                       help="the load of each step, rising: users, workers, target CPUs, or requests/s for "
                            f"{ARRIVAL_RATE}, e.g. 50,100,200,400 or 500,1000,2000")
    steps.add_argument("--warmup", type=types.duration(), default="15s", help=f"unmeasured time at the start of each step (default 15s, "
                                                       f"at least {MIN_WARMUP_S}s)")
    steps.add_argument("--hold", type=types.duration(), default="180s", help="measured window of each step (default 180s, the seed's method)")
    steps.add_argument("--users-per-worker", type=types.number(int, minimum=1),
                       help=f"users per worker in workers and target-cpus sweeps (default {USERS_PER_WORKER}); "
                            f"{ARRIVAL_RATE} sizes its pool from the rate")
    steps.add_argument("--spawn-rate", type=types.number(float, minimum=0), default=0, help="users started per second (default: all at once)")
    steps.add_argument("--max-p99", type=types.latency_ms, metavar="LATENCY",
                       help="a latency bound, e.g. 200ms: the first step whose p99 is above it is the knee (in an "
                            f"{ARRIVAL_RATE} sweep, p99 from each request's slot); default: no bound")
    loc = p.add_argument_group("local stack (--local)")
    loc.add_argument("--scenario", default=scenarios.DEFAULT, choices=list(scenarios.SCENARIOS),
                     help=f"what each request does (default {scenarios.DEFAULT})")
    loc.add_argument("--target", default="haproxy", choices=list(targets.TARGETS),
                     help="what Locust loads (default haproxy)")
    loc.add_argument("--tls-mode", choices=targets.TLS_MODES,
                     help="as for `loadtest local` (default: edge for the scenarios that need TLS, none otherwise)")
    loc.add_argument("--workers", type=types.number(int, minimum=1), default=1, help="Locust workers of users sweeps (default 1)")
    loc.add_argument("--wait", type=types.number(float, minimum=0), default=0.0,
                     help=f"seconds each user waits between requests (default 0; not with {ARRIVAL_RATE})")
    loc.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="chart value for the local target, as helm --set, e.g. haproxy.sessionRateLimit=2000")
    p.add_argument("--output", default="sweep-report", help="folder for the report (default ./sweep-report)")
    p.add_argument("--force", action="store_true", help="replace the report of an earlier sweep in --output")
    p.set_defaults(func=run)
    types.with_defaults(p, RELEASE_ONLY, LOCAL_ONLY)


# The options of one place to sweep that the other has no use for: given there, they are refused, not ignored.
RELEASE_ONLY = {"--prometheus": "prometheus", "--locust": "locust", "--locust-auth-file": "locust_auth_file",
                "--chart": "chart", "--kubeconfig": "kubeconfig", "--namespace": "namespace", "--share": "share"}
# The options that reach one release's master and Prometheus: several releases are reached by the command itself.
REGIONS_OPEN_THEMSELVES = {option: RELEASE_ONLY[option] for option in ("--prometheus", "--locust",
                                                                       "--locust-auth-file")}
LOCAL_ONLY = {"--scenario": "scenario", "--target": "target", "--tls-mode": "tls_mode", "--workers": "workers",
              "--wait": "wait", "--set": "set"}

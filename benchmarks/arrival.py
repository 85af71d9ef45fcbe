"""The open model's rate per generator core: the highest arrival rate one Locust process on one core holds with
fewer than 1 % late starts (keepalive_1kb, LOADTEST_ARRIVAL_RATE), beside vegeta's rate on one core.

    ~/.cache/loadtest/venv/bin/python benchmarks/arrival.py [--step-s 8] [--rates 1000,2000,...] [--runs 3]

nginx (one process, 1 KB file, keep-alive: benchmarks/generators.py's Target) runs on CPU 0, the generator on CPU 1;
for the benchmark's time the host's idle CPUs poll before they halt (benchmarks/host_idle.py: paced below its
ceiling, the open model leaves nginx's CPU idle between requests, and waking a halted vCPU was charged to the
generator's every send, as it is not on EKS, where the target runs on another node).
Each run starts with vegeta paced at 4,000/s and benchmarks/steadiness.py on both CPUs, the host's noise: a p99 over
10 ms there, or a CPU slowed for longer than a late start, marks the run's figures as the host's ceiling. Then the
closed model on the same core (LeanHttpUser with CLOSED_USERS users and no wait, benchmarks/generators.py's way:
requests over the generator's CPU seconds), and the open model's climb: from CLIMB_FROM of the closed model's rate,
CLIMB_STEP of it apart (or the --rates given), so it reaches the open model's ceiling on any host and the rate held
over the closed model's a core is a ratio of one run on one host; then the gap between the last rate held and the
first not held, halved REFINE times, so that ratio is to within CLIMB_STEP / 2**REFINE. Then the open model's
ceiling: one step asked CEILING_ASK of the closed model's rate, more than it sends, so every slot is late and what it
sends is the most its core sends in this mode (a rate held lies below it: after a stall the backlog drains only as
fast as the ceiling exceeds the rate, docs/open-model.md). Then the closed model once more: the ratios take the mean
of its two rates, the host's speed drifting over a run's minutes. Locust runs standalone (the
same per-core figure as one worker: TOOLING.md) at each rate in turn, its statistics reset once its pool runs. A
rate is held when the achieved rate is within 1 % of it and fewer than 1 % of the slots started late (for want of a
free user or of CPU); the climb stops at the first rate not held. vegeta (built by scripts/setup) runs with one Go
processor (-cpus 1) pinned to CPU 1, as fast as it goes: its ceiling on one core. Then both run at half the rate
held, vegeta paced, to compare Locust's p99 (from each request's slot) with vegeta's; and the Locust process's
largest resident memory gives its memory per 1,000 pool users. Each of --runs runs does all of that; the end prints
min / median / max. No assertions: this prints figures and the ratios for docs/open-model.md ("Per core").
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import host_idle  # sibling scripts
import psutil
from generators import GENERATOR_CPU, TARGET_CPU, Measurement, Target, spread  # the same pinned nginx
from generators import measure as closed_model
from steadiness import Steadiness, slowest_ms
from steadiness import measure as cpu_steadiness  # and the host's CPUs, checked the same way

from loadtest_shared import checks, settings, verdict

from loadtest.errors import RunFailed
from loadtest.judging import locuststats
from loadtest.runtime import localrun, tools, vegeta
from loadtest.runtime.locust import command as locust_command
from loadtest.runtime.locust import with_plugin
from loadtest.runtime.processes import stop
from loadtest.workload import arrival, scenarios

# The climb without --rates, in shares of the run's closed-model rate a core: from CLIMB_FROM up, CLIMB_STEP apart,
# each rounded to CLIMB_ROUND requests/s, up to the closed model's rate. (A fixed list ran out: its top, 20,000/s,
# was held on a host where 42,000/s was, 2026-12-01.)
CLIMB_FROM, CLIMB_STEP, CLIMB_ROUND = 0.4, 0.05, 1000
# Then the rate midway between the last rate held and the first not held, REFINE times, each rounded to
# REFINE_ROUND requests/s: where a climb ended read up to a whole step (5 % of the closed model's rate, 3,700-4,000/s
# on the project's VM) below the highest rate the open model held, and arrival.CLOSED_SHARE is the median of such
# readings. Two halvings cost two steps a run and leave 1.25 % of the closed model's rate.
REFINE, REFINE_ROUND = 2, 100
# The ceiling step asks this share of the closed model's rate a core: above what the open model sends on that core
# (0.75-0.77 of it with chart 0.7.7, 0.82-0.91 with 0.7.8, three runs each, 2026-12-07), so that it sends as fast as
# it can, every slot late.
CEILING_ASK = 1.25
# vegeta's workers when paced (the host check, half the rate held), as many as its run as fast as it goes has, and
# no more: with one Go processor, its workers are often not back at the pacer's channel when a tick comes, so it
# starts one more per tick, each with a connection of its own (2,384 connections for 8,000 requests at 4,000/s with
# its default 10), and unbounded it collapses: at 16,000/s on one core it sent 397-474/s with a p99 of 8 s; held to
# 64, 15,932-15,999/s with a p99 of 2.1-2.4 ms (2026-11-29, two runs each).
VEGETA_WORKERS = 64
LATE_MAX = 0.01
# The host's own noise, checked before each run: vegeta paced at HOST_CHECK_RATE on the generator's core, and both
# CPUs' steadiness. On a quiet host vegeta's p99 stays within a few ms; a host whose CPUs slow down for tens of ms at
# a time stalls loopback answers as long and makes every open-model generator late, so the rate held is the host's
# ceiling, not the generator's (docs/open-model.md has both days).
HOST_CHECK_RATE, HOST_CHECK_S, HOST_QUIET_P99_MS = 4000, 5, 10.0
CLOSED_USERS = 50  # the closed model's users: benchmarks/generators.py's default connections


@dataclass
class Step:
    offered: float
    achieved: float
    late_share: float
    p50_ms: float
    p99_ms: float
    users: int = 0  # the pool
    rss_mib: float = 0.0  # the Locust process's resident memory at its largest

    @property
    def rss_per_1000_users(self) -> float:
        return self.rss_mib * 1000 / self.users if self.users else 0.0

    @property
    def held(self) -> bool:
        return checks.held(self.offered, self.achieved) and self.late_share < LATE_MAX


def locust_step(url: str, rate: float, seconds: int, workdir: Path) -> Step:
    """One standalone Locust on CPU 1 at `rate` for `seconds`."""
    workdir.mkdir(parents=True)
    env = {**with_plugin(dict(os.environ)), settings.ARRIVAL_RATE.env: repr(rate),
           settings.ARRIVAL_FILE.env: str(workdir / arrival.FILE), localrun.RESET_STATS_ENV: "true"}
    users = arrival.pool_size(rate, 1)
    cmd = ["taskset", "-c", str(GENERATOR_CPU), *locust_command(scenarios.get("keepalive_1kb").locustfile),
           "--headless", "-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--host", url,
           "--json-file", str(workdir / "stats"), "--only-summary", "--exit-code-on-error", "0"]
    with open(workdir / "locust.log", "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    rss, deadline = 0, time.monotonic() + seconds + 60
    while proc.poll() is None:  # taskset execs Locust: the PID is Locust's
        if time.monotonic() > deadline:
            stop(proc)
            raise RunFailed(f"Locust did not end; see {workdir}/locust.log")
        try:
            rss = max(rss, psutil.Process(proc.pid).memory_info().rss)
        except psutil.Error:
            pass  # it just ended
        time.sleep(0.5)
    figures = arrival.Figures.read(workdir / arrival.FILE)
    if proc.returncode != 0 or figures is None:
        raise RunFailed(f"Locust exited with {proc.returncode}; see {workdir}/locust.log")
    total = locuststats.figures(workdir / "stats.json")[checks.AGGREGATED]
    return Step(offered=rate, achieved=total.rps, late_share=figures.late_share("users") + figures.late_share("cpu"),
                p50_ms=total.percentiles_ms[0.5], p99_ms=total.percentiles_ms[0.99], users=users,
                rss_mib=rss / 2**20)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step-s", type=int, default=8, help="seconds per rate (default 8)")
    # %% in a help text: argparse formats it with %.
    parser.add_argument("--rates", default="", help=f"rates to climb, requests/s (default: from "
                        f"{CLIMB_FROM * 100:.0f}%% of the run's closed-model rate a core, {CLIMB_STEP * 100:.0f}%% of "
                        f"it apart, then the gap where it ended halved {REFINE} times)")
    parser.add_argument("--runs", type=int, default=3, help="climbs, each with its vegeta figures (default 3)")
    host_idle.add_option(parser)
    args = parser.parse_args(argv)
    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        parser.error(f"--rates {args.rates!r}: numbers separated by commas, e.g. 1000,2000")
    if any(r <= 0 for r in rates) or not 3 <= args.step_s <= 120 or not 1 <= args.runs <= 10:
        parser.error("--rates must be positive, --step-s 3..120 and --runs 1..10")
    if not shutil.which("nginx") or not shutil.which("taskset") or psutil.cpu_count() < 2:
        parser.error("needs nginx, taskset and two CPUs")
    try:
        tools.find("vegeta")
    except tools.ToolMissing:
        parser.error("needs vegeta: bash scripts/setup builds it")

    workdir = Path(tempfile.mkdtemp(prefix="loadtest-arrival-bench-"))
    target = None
    runs: list[Run] = []
    with host_idle.for_benchmark(args.host_as_is) as idle:
        print(f"the host: {idle}", flush=True)
        try:
            target = Target(workdir / "nginx")
            for number in range(1, args.runs + 1):
                print(f"run {number}/{args.runs}", flush=True)
                runs.append(one_run(target, sorted(set(rates)), args.step_s, workdir / f"run-{number}"))
        except RunFailed as e:
            print(f"arrival benchmark: {e}", file=sys.stderr)
            return checks.RUN_FAILED
        finally:
            if target is not None:
                stop(target.proc)
    shutil.rmtree(workdir, ignore_errors=True)  # kept when a step failed: its Locust log says why
    print(f"\nvegeta {vegeta.version()}; the host: {idle}; over {len(runs)} runs, min / median / max:")
    if noisy := [r for r in runs if r.noisy_host]:
        print(f"{len(noisy)} of {len(runs)} run(s) on a noisy host (vegeta's p99 over {HOST_QUIET_P99_MS:g} ms at "
              f"{HOST_CHECK_RATE:,}/s, or a CPU slowed for over {verdict.LATE_MS} ms): their rates held are the "
              "host's ceiling, not the generator's; run again on a quiet machine")
    held = [r for r in runs if r.best is not None]
    if len(held) < len(runs):
        print(f"Locust held none of the rates asked in {len(runs) - len(held)} run(s): start lower (--rates)")
    if not held:
        return 0
    for what, values, form in (
            ("Locust open model held, requests/s on 1 core (< 1 % late starts)", [r.best.offered for r in held],
             "{:,.0f}"),
            ("vegeta as fast as it goes on 1 core, requests/s", [r.reference.achieved_rps for r in runs], "{:,.0f}"),
            ("ratio to vegeta's per-core rate", [r.best.offered / r.reference.achieved_rps for r in held], "{:.2f}"),
            ("the closed model (LeanHttpUser) on the same core, requests/s a core (the mean of before and after)",
             [r.closed_rps for r in runs if r.closed_rps], "{:,.0f}"),
            ("open model held / closed model a core, in the same run (a ratio inside the project: it moves less "
             "from host to host than one to vegeta, not nothing)", open_closed_ratios(runs), "{:.2f}"),
            ("the open model's ceiling (asked more than it sends, every slot late) / the closed model a core, in the "
             "same run: a rate held lies below it", ceiling_closed_ratios(runs), "{:.2f}"),
            ("at half that rate, Locust's p99 from the slot minus vegeta's p99, ms (runs where vegeta sent its rate)",
             [r.half.p99_ms - r.vegeta_half.p99_ms for r in held if r.vegeta_comparable], "{:+.1f}"),
            ("Locust's memory per 1,000 pool users at the held rate, MiB", [r.best.rss_per_1000_users for r in held],
             "{:.0f}")):
        print(f"  {what}: {spread(values, form)}")
    print(f"  the host's noise, vegeta's p99 at {HOST_CHECK_RATE:,}/s before each run, ms: "
          f"{spread([r.host_p99_ms for r in runs], '{:.1f}')}")
    print(f"  the host's CPUs before each run, their longest slowed stretch, ms: "
          f"{spread([r.slowed_ms for r in runs], '{:.1f}')}")
    return 0


@dataclass
class Run:
    best: Step | None  # the highest rate held
    reference: vegeta.Attack  # vegeta as fast as it goes
    closed: Measurement | None = None  # the closed model on the same core, before the climb
    ceiling: Step | None = None  # the open model asked more than it sends (ceiling_ask)
    closed_after: Measurement | None = None  # the closed model again, after the ceiling step
    half: Step | None = None  # Locust at half the rate held
    vegeta_half: vegeta.Attack | None = None  # vegeta paced at that rate
    host_p99_ms: float = 0.0  # vegeta's p99 at HOST_CHECK_RATE before the run
    steadiness: tuple[Steadiness, ...] = ()  # both CPUs', before the run

    @property
    def closed_rps(self) -> float:
        """The closed model's requests a core: the mean of its measurements before and after the climb (0 without
        one)."""
        rates = [m.rps_per_core for m in (self.closed, self.closed_after) if m and m.rps_per_core]
        return sum(rates) / len(rates) if rates else 0.0

    @property
    def slowed_ms(self) -> float:
        return slowest_ms(self.steadiness)

    @property
    def vegeta_comparable(self) -> bool:
        """vegeta sent the half rate: its p99 is a paced run's, comparable with Locust's at that rate."""
        return bool(self.vegeta_half and checks.held(self.vegeta_half.offered_rps, self.vegeta_half.achieved_rps))

    @property
    def noisy_host(self) -> bool:
        return self.host_p99_ms > HOST_QUIET_P99_MS or self.slowed_ms > verdict.LATE_MS


def open_closed_ratios(runs: list[Run]) -> list[float]:
    """Per run that held a rate and measured the closed model: the open model's rate held on one core over the
    closed model's requests a core (the planner's arrival.CLOSED_SHARE)."""
    return [r.best.offered / r.closed_rps for r in runs if r.best and r.closed_rps]


def ceiling_closed_ratios(runs: list[Run]) -> list[float]:
    """Per run that measured both: what the open model sent asked more than it can (its ceiling) over the closed
    model's requests a core. A rate held lies below the ceiling, so this ratio bounds open_closed_ratios'."""
    return [r.ceiling.achieved / r.closed_rps for r in runs if r.ceiling and r.closed_rps]


def rounded(rate: float) -> float:
    """A rate to ask, to CLIMB_ROUND requests/s: never nothing."""
    return max(CLIMB_ROUND, round(rate / CLIMB_ROUND) * CLIMB_ROUND)


def ceiling_ask(closed_rps: float) -> float:
    """The ceiling step's rate for a closed-model rate a core: CEILING_ASK of it."""
    return rounded(closed_rps * CEILING_ASK)


def climb(closed_rps: float) -> list[float]:
    """The default climb for a closed-model rate a core (see CLIMB_FROM)."""
    shares = (CLIMB_FROM + CLIMB_STEP * i for i in range(round((1 - CLIMB_FROM) / CLIMB_STEP) + 1))
    return sorted({rounded(closed_rps * share) for share in shares})


def midway(held: float, missed: float) -> float | None:
    """The rate to ask between a rate held and a higher one not held, to REFINE_ROUND requests/s; None when no such
    rate lies between them."""
    rate = round((held + missed) / 2 / REFINE_ROUND) * REFINE_ROUND
    return rate if held < rate < missed else None


def print_step(step: Step, note: str = "") -> None:
    print(f"{step.offered:>8,.0f} {step.achieved:>9,.0f} {step.late_share:>7.2%} {step.p50_ms:>4g}ms "
          f"{step.p99_ms:>4g}ms {step.rss_mib:>5.0f}  {'held' if step.held else 'NOT held'}{note}", flush=True)


def one_run(target: Target, rates: list[float], step_s: int, workdir: Path) -> Run:
    """The closed model's rate a core; then the climb (`rates`, or climb()'s and the halvings of its last gap) until
    a rate is not held; then vegeta's ceiling, and Locust and vegeta at half the rate held."""
    url = f"{target.url}/1kb"
    host_p99_ms = vegeta.attack(url, HOST_CHECK_RATE, HOST_CHECK_S, workers=VEGETA_WORKERS, cpus=1,
                                pin=[GENERATOR_CPU], max_workers=VEGETA_WORKERS).p99_ms
    steadiness = tuple(cpu_steadiness([TARGET_CPU, GENERATOR_CPU]))
    slowed_ms = slowest_ms(steadiness)
    print(f"the host's noise: vegeta's p99 at {HOST_CHECK_RATE:,}/s {host_p99_ms:.1f} ms "
          f"({'quiet' if host_p99_ms <= HOST_QUIET_P99_MS else 'NOISY'}: a quiet host's is under "
          f"{HOST_QUIET_P99_MS:g} ms)\nthe host's CPUs: {'; '.join(map(str, steadiness))} "
          f"({'steady' if slowed_ms <= verdict.LATE_MS else 'NOISY'}: a stretch over {verdict.LATE_MS} ms makes "
          "slots late)", flush=True)
    workdir.mkdir(parents=True, exist_ok=True)
    closed = closed_model("LeanHttpUser", target, CLOSED_USERS, step_s, workdir)
    print(f"the closed model (LeanHttpUser, {CLOSED_USERS} users, no wait) on 1 core: "
          f"{closed.rps_per_core:,.0f} requests/s a core", flush=True)
    print(f"{'offered':>8} {'achieved':>9} {'late':>7} {'p50':>6} {'p99':>6} {'MiB':>5}  (Locust open model, 1 core)")
    best, missed = None, None
    for rate in rates or climb(closed.rps_per_core):
        step = locust_step(target.url, rate, step_s, workdir / f"rate-{rate:g}")
        print_step(step)
        if not step.held:
            missed = rate
            break
        best = step
    for _ in range(0 if rates else REFINE):  # the rates given are the climb: none between them
        if best is None or missed is None or (rate := midway(best.offered, missed)) is None:
            break
        step = locust_step(target.url, rate, step_s, workdir / f"rate-{rate:g}")
        print_step(step, "  (between the last held and the first not)")
        if step.held:
            best = step
        else:
            missed = rate
    ceiling = locust_step(target.url, ceiling_ask(closed.rps_per_core), step_s, workdir / "ceiling")
    print(f"the open model's ceiling: asked {ceiling.offered:,.0f}/s ({CEILING_ASK:.0%} of the closed rate), it sent "
          f"{ceiling.achieved:,.0f}/s, {ceiling.late_share:.0%} of its slots late"
          f"{' (held: its ceiling lies higher, the ratio below is a floor)' if ceiling.held else ''}", flush=True)
    (workdir / "closed-after").mkdir()
    closed_after = closed_model("LeanHttpUser", target, CLOSED_USERS, step_s, workdir / "closed-after")
    run = Run(best, vegeta.max_rate(url, duration_s=step_s, cpus=1, workers=VEGETA_WORKERS, pin=[GENERATOR_CPU]),
              closed=closed, ceiling=ceiling, closed_after=closed_after, host_p99_ms=host_p99_ms,
              steadiness=steadiness)
    print(f"the closed model again: {closed_after.rps_per_core:,.0f} requests/s a core (the ratios take the mean, "
          f"{run.closed_rps:,.0f})", flush=True)
    print(f"vegeta on 1 core, as fast as it goes: {run.reference.achieved_rps:,.0f} requests/s", flush=True)
    if best is not None:
        half = best.offered / 2
        run.half = locust_step(target.url, half, step_s, workdir / f"half-{half:g}")
        run.vegeta_half = vegeta.attack(url, half, step_s, workers=VEGETA_WORKERS, cpus=1, pin=[GENERATOR_CPU],
                                        max_workers=VEGETA_WORKERS)
        behind = "" if run.vegeta_comparable else \
            f" (vegeta sent {run.vegeta_half.achieved_rps:,.0f}/s: behind its pace, not comparable)"
        print(f"at {half:,.0f}/s: p99 Locust {run.half.p99_ms:g} ms from the slot, vegeta {run.vegeta_half.p99_ms:.2f} "
              f"ms{behind}", flush=True)
    return run


if __name__ == "__main__":
    sys.exit(main())

"""The open model's rate per generator core: the highest arrival rate one Locust process on one core holds with
fewer than 1 % late starts (keepalive_1kb, LOADTEST_ARRIVAL_RATE), beside vegeta's rate on one core.

    ~/.cache/loadtest/venv/bin/python benchmarks/arrival.py [--step-s 8] [--rates 1000,2000,...]

nginx (one process, 1 KB file, keep-alive: benchmarks/generators.py's Target) runs on CPU 0, the generator on CPU 1.
Locust runs standalone (the same per-core figure as one worker: TOOLING.md) at each rate in turn, its statistics
reset once its pool runs. A rate is held when the achieved rate is within 1 % of it and fewer than 1 % of the slots
started late (for want of a free user or of CPU); the climb stops at the first rate not held. vegeta (built by
scripts/setup) runs with one Go processor (-cpus 1) pinned to CPU 1, as fast as it goes: its ceiling on one core.
No assertions: this prints figures and the ratio for docs/open-model.md ("Per core") and the issue's closing note.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil
from generators import GENERATOR_CPU, Target  # a sibling script: the same pinned nginx

from loadtest.errors import RunFailed
from loadtest.judging import checks, locuststats
from loadtest.runtime import localrun, tools, vegeta
from loadtest.runtime.locust import command as locust_command
from loadtest.runtime.locust import with_plugin
from loadtest.runtime.processes import stop
from loadtest.workload import arrival, scenarios

DEFAULT_RATES = "1000,2000,3000,4000,5000,6000,7000,8000,9000,10000,12000"
LATE_MAX = 0.01


@dataclass
class Step:
    offered: float
    achieved: float
    late_share: float
    p50_ms: float
    p99_ms: float

    @property
    def held(self) -> bool:
        return arrival.held(self.offered, self.achieved) and self.late_share < LATE_MAX


def locust_step(url: str, rate: float, seconds: int, workdir: Path) -> Step:
    """One standalone Locust on CPU 1 at `rate` for `seconds`."""
    workdir.mkdir(parents=True)
    env = {**with_plugin(dict(os.environ)), localrun.ARRIVAL_RATE_ENV: repr(rate), localrun.ARRIVAL_FILE_ENV: str(workdir / arrival.FILE),
           localrun.RESET_STATS_ENV: "true"}
    users = arrival.pool_size(rate, 1)
    cmd = ["taskset", "-c", str(GENERATOR_CPU), *locust_command(scenarios.get("keepalive_1kb").locustfile),
           "--headless", "-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--host", url,
           "--json-file", str(workdir / "stats"), "--only-summary", "--exit-code-on-error", "0"]
    with open(workdir / "locust.log", "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        proc.wait(timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        stop(proc)
        raise RunFailed(f"Locust did not end; see {workdir}/locust.log") from None
    figures = arrival.Figures.read(workdir / arrival.FILE)
    if proc.returncode != 0 or figures is None:
        raise RunFailed(f"Locust exited with {proc.returncode}; see {workdir}/locust.log")
    total = locuststats.figures(workdir / "stats.json")[checks.AGGREGATED]
    return Step(offered=rate, achieved=total.rps, late_share=figures.late_share("users") + figures.late_share("cpu"),
                p50_ms=total.percentiles_ms[0.5], p99_ms=total.percentiles_ms[0.99])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step-s", type=int, default=8, help="seconds per rate (default 8)")
    parser.add_argument("--rates", default=DEFAULT_RATES, help=f"rates to climb, requests/s (default {DEFAULT_RATES})")
    args = parser.parse_args(argv)
    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        parser.error(f"--rates {args.rates!r}: numbers separated by commas, e.g. 1000,2000")
    if not rates or any(r <= 0 for r in rates) or not 3 <= args.step_s <= 120:
        parser.error("--rates must be positive and --step-s 3..120")
    if not shutil.which("nginx") or not shutil.which("taskset") or psutil.cpu_count() < 2:
        parser.error("needs nginx, taskset and two CPUs")
    try:
        tools.find("vegeta")
    except tools.ToolMissing:
        parser.error("needs vegeta: bash scripts/setup builds it")

    workdir = Path(tempfile.mkdtemp(prefix="loadtest-arrival-bench-"))
    target = None
    try:
        target = Target(workdir / "nginx")
        url = f"{target.url}/1kb"
        print(f"{'offered':>8} {'achieved':>9} {'late':>7} {'p50':>6} {'p99':>6}  (Locust open model, 1 core)")
        best = None
        for rate in sorted(set(rates)):
            step = locust_step(target.url, rate, args.step_s, workdir / f"rate-{rate:g}")
            print(f"{step.offered:>8,.0f} {step.achieved:>9,.0f} {step.late_share:>7.2%} {step.p50_ms:>4g}ms "
                  f"{step.p99_ms:>4g}ms  {'held' if step.held else 'NOT held'}", flush=True)
            if not step.held:
                break
            best = step
        reference = vegeta.max_rate(url, duration_s=args.step_s, cpus=1, pin=[GENERATOR_CPU])
    except RunFailed as e:
        print(f"arrival benchmark: {e}", file=sys.stderr)
        return checks.RUN_FAILED
    finally:
        if target is not None:
            stop(target.proc)
    shutil.rmtree(workdir, ignore_errors=True)  # kept when a step failed: its Locust log says why
    print(f"vegeta {vegeta.version()} on 1 core (-cpus 1, as fast as it goes): {reference.achieved_rps:,.0f} requests/s")
    if best is None:
        print("Locust held none of the rates asked: start lower (--rates)")
        return 0
    print(f"Locust open model held {best.offered:,.0f} requests/s on 1 core (< 1 % late starts): "
          f"{best.offered / reference.achieved_rps:.2f} of vegeta's per-core rate")
    return 0


if __name__ == "__main__":
    sys.exit(main())

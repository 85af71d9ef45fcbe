"""Which saturated share predicts that more workers raise the RPS: a sample counted saturated when any worker is at
its ceiling (the verdict before chart 0.7.0), or the share of worker-samples at the ceiling (from 0.7.0)?

The same CPU is split two ways, one worker of QUOTA cores and SPLIT workers of QUOTA / SPLIT each (cgroup CPU quotas,
as a pod's CPU limit), under the same load (USERS users, each waiting WAIT s between requests, against the chart's
nginx backend); then each is run again with twice the workers of the same size. Each base run prints both shares
(from one CPU sample per worker a second, psutil, over the steady seconds) and the RPS gain that doubling the workers
gave. A share that predicts says "the generator was the limit" (at least the verdict's SATURATED_SHARE) where the gain
came, and not where it did not: for the same load split two ways it must read the same.

    python benchmarks/saturation_share.py [--users 40 --wait 0.005 --quota 0.4 --split 4 --seconds 20]

Needs root (cgroups). Exit 0 with the table, 4 when a run could not be made.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from loadtest_shared import checks, settings, verdict

from loadtest.errors import RunFailed
from loadtest.judging import locuststats
from loadtest.runtime.cpu import CpuQuotaError, CpuQuotas
from loadtest.runtime.locust import Locust
from loadtest.runtime.processes import STARTUP_TIMEOUT_S, Processes
from loadtest.runtime.stack import Stack
from loadtest.workload import scenarios

WARMUP_S = 4  # after every user started, before the samples count: the workers' first reports


@dataclass(frozen=True)
class Run:
    workers: int
    quota: float  # cores per worker
    rps: float
    any_share: float  # samples with any worker at the ceiling
    worker_share: float  # worker-samples at the ceiling
    mean_cpu: float  # the workers' mean CPU as a share of their quota

    def row(self) -> str:
        return (f"{self.workers:>3} x {self.quota:<5g} {self.rps:>9,.0f} {self.any_share:>10.0%} "
                f"{self.worker_share:>13.0%} {self.mean_cpu:>9.0%}")


def measure(workers: int, quota: float, users: int, wait_s: float, seconds: int, logs: Path) -> Run:
    """One run: a master and `workers` workers held to `quota` cores each, loading the backend."""
    with Stack(logs / "stack") as stack, CpuQuotas() as quotas, Processes(logs) as procs:
        backend = stack.backend()
        locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile, env={settings.WAIT.env: f"{wait_s:g}"})
        stats = logs / "stats.json"
        master = locust.start_master("-u", str(users), "-r", str(users), "-t", f"{seconds + WARMUP_S}s",
                                     "--host", backend.http_url, "--json-file", str(stats.with_suffix("")),
                                     "--reset-stats", web=False, expect_workers=workers,
                                     expect_workers_wait_s=STARTUP_TIMEOUT_S)
        procs_ = [psutil.Process(w.pid) for w in locust.start_workers(workers)]
        for proc in procs_:
            quotas.limit([proc.pid], quota)
        time.sleep(WARMUP_S)
        for proc in procs_:
            proc.cpu_percent(None)
        samples: list[verdict.Sample] = []
        while master.poll() is None and len(samples) < seconds - 1:
            time.sleep(1)
            samples.append(verdict.Sample(worker_cpu=tuple(p.cpu_percent(None) / 100 / quota for p in procs_)))
        master.wait(timeout=STARTUP_TIMEOUT_S + seconds)
        if not samples:
            raise RunFailed(f"no sample of the workers' CPU: see {logs}")
        total = locuststats.figures(stats).get(checks.AGGREGATED)
        if total is None or not total.requests:
            raise RunFailed(f"Locust sent no request: see {logs}")
    window = verdict.Window.of(samples)
    return Run(workers, quota, total.rps,
               sum(any(c >= verdict.SATURATED_CPU for c in s.worker_cpu) for s in samples) / len(samples),
               window.generator_share,
               sum(sum(s.worker_cpu) / len(s.worker_cpu) for s in samples) / len(samples))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", type=int, default=40)
    p.add_argument("--wait", type=float, default=0.005, help="seconds each user waits between requests")
    p.add_argument("--quota", type=float, default=0.4, help="cores of the one worker (split over --split workers)")
    p.add_argument("--split", type=int, default=4)
    p.add_argument("--seconds", type=int, default=20)
    args = p.parse_args(argv)
    print(f"{args.users} users waiting {args.wait:g} s, keepalive_1kb against the backend; {args.seconds} s a run; "
          f"{args.quota:g} cores as 1 worker or {args.split} x {args.quota / args.split:g}, then twice the workers")
    print(f"{'workers':<11} {'RPS':>9} {'any worker':>10} {'worker-samples':>13} {'mean CPU':>9}   gain from 2x workers")
    try:
        with tempfile.TemporaryDirectory(prefix="saturation-share-") as folder:
            for count, quota in ((1, args.quota), (args.split, args.quota / args.split)):
                base = measure(count, quota, args.users, args.wait, args.seconds, Path(folder) / f"{count}")
                double = measure(2 * count, quota, args.users, args.wait, args.seconds, Path(folder) / f"{count}x2")
                print(f"{base.row()}   {double.rps / base.rps:.2f}x")
                print(f"{double.row()}")
    except (CpuQuotaError, RunFailed) as e:
        print(f"saturation_share: {e}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())

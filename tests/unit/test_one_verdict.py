"""The same windows (tests/verdict_table.py) judged as `loadtest run --local` judges them (through its sampler's
ticks) and as the chart's judged master does, from worker reports as Locust delivers them: one verdict module (plugin/loadtest_shared/verdict.py), the same
shares, the same verdict wherever the master can see what decides it."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
from locust.runners import STATE_RUNNING, WORKER_REPORT_INTERVAL
from verdict_table import CASES, OFFERED_RPS

from loadtest_shared import verdict

from loadtest.runtime import localrun

import loadtest_judge
import loadtest_metrics
from loadtest_shared import checks
import loadtest_arrival


def master_window(samples):
    """The master's CPU record of `samples`, each sent as one round of worker reports (CPU limit: one core)."""
    cpu = loadtest_judge.WorkerCpu(SimpleNamespace(state=STATE_RUNNING))
    for worker in samples[0].workers():  # each worker's first report may cover the spawning: left out
        cpu.add(f"worker-{worker}", {loadtest_metrics.REPORT_KEY: {"cpu_cores": 1.0, "cpu_limit_cores": None}},
                now=0.1 * worker)
    for i, sample in enumerate(samples, 1):
        for worker, share in sample.workers().items():
            cpu.add(f"worker-{worker}", {loadtest_metrics.REPORT_KEY: {
                "cpu_cores": share, "cpu_limit_cores": None,
                "cpu_throttled": sample.throttling().get(worker)}},
                now=i * WORKER_REPORT_INTERVAL + 0.1 * worker)
    return cpu


def master_figures(case) -> dict:
    """Locust's aggregated figures as the master holds them at the end: 1,000 requests, the case's share failed, at
    the case's share of the offered rate."""
    failures = round(1000 * (case.failure_ratio or 0.0))
    rps = OFFERED_RPS * (case.arrival.sent if case.arrival else 1.0)
    return {checks.AGGREGATED: checks.Figures(checks.AGGREGATED, 1000, failures, rps, 10.0,
                                                                50.0, {})}


def master_arrival(case):
    """The open model's totals as the master sums them from one worker's reports: the slots the 1,000 requests were
    sent for, every one on time, the case's share of the loop's probes late."""
    if case.arrival is None:
        return None
    totals, counts = loadtest_arrival.Totals(OFFERED_RPS), loadtest_arrival.Counts()
    counts.slots = round(1000 / case.arrival.per_slot)
    counts.late["cpu"] = round(counts.slots * case.arrival.late_cpu)
    counts.loop = {"probes": 1000, "lagged": round(1000 * case.arrival.loop_lagged), "max_lag_ms": 40.0}
    totals.add("worker-0", {loadtest_arrival.REPORT_KEY: counts.report()})
    return totals


def sampled(case) -> verdict.Window:
    """The local run's window of the case: its sampler's ticks, a second each (a saturated ramp-up tick first, and
    the stop after: neither is judged), then the window as the local run builds it from the steady samples."""
    phases = localrun.Phases()
    hot = verdict.Sample(worker_cpu=(1.0,) * len(case.samples[0].workers()), target_cpu=1.0)
    phases.tick(0.0, "spawning", hot)
    phases.tick(1.0, "running", hot)  # the first running tick began while users were still spawned
    for second, sample in enumerate(case.samples, 2):
        phases.tick(float(second), "running", sample)
    phases.tick(float(len(case.samples) + 2), "stopping", hot)
    assert phases.samples == list(case.samples)
    return replace(case, samples=tuple(phases.samples)).window()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_local_run_and_the_master_judge_the_same_window_alike(case):
    local = sampled(case)
    master = loadtest_judge.steady_window(master_window(case.samples), master_arrival(case), master_figures(case),
                                          case.losses, case.silences)
    assert verdict.judge(local).kind == case.kind
    assert verdict.judge(master).kind == case.master_kind
    assert master.samples == local.samples
    if case.samples[0].host_cpu is None:  # a shared machine is the local stack's signal, which the master cannot see
        assert master.generator_share == local.generator_share
        assert master.busiest_worker == pytest.approx(local.busiest_worker)

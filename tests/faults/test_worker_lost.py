"""A worker killed hard mid-run (SIGKILL), on the local stack: `loadtest run --local` as a user types it, and the
chart's judged master (`locust.mode: run`: LOADTEST_CHECKS, --enable-rebalancing, the results folder) with its
workers as local processes. What the user must see: the master noticed within seconds, the replacement rejoined and
got users, the result names the loss and its cost, the verdict does not call the window healthy, and nothing is lost
unnamed: the target's own count of requests (nginx's stub_status) against the workers' own count, the gap being the
lost worker's unreported requests, named in result.json."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil
from conftest import run_local_with_a_fault
from helpers import wait_for

from loadtest_shared import checks, verdict

from loadtest import paths
from loadtest.runtime.processes import STARTUP_TIMEOUT_S

RUN_TIME_S = 25
# Killed once this many steady seconds passed, leaving as many for the replacement to rejoin before the stop.
KILL_AFTER_STEADY_S = 8
# The judged master writes nothing while it runs: its workers are killed once the target counted this many requests
# with every user running (some 5 s at 20 users a hundredth of a second apart).
STEADY_REQUESTS = 10_000
# The leaking test's worker (80 MB kept at once, then 10 KB a request, some 9 MB/s) fills this in some 8 s from
# its ~50 MiB at start.
LEAKY_WORKER_LIMIT = 200 << 20
# Locust marks a worker missing after 3 heartbeats missed (one a second); the master looks twice a second.
DETECTED_WITHIN_S = 8


def workers_of(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True) if "--worker" in p.cmdline()]


def assert_the_loss_is_named(faults: dict, verdict_: dict) -> dict:
    """The one loss: seen within seconds, made good by the replacement, named in the verdict; returns it."""
    [lost] = [e for e in faults["events"] if e["kind"] == "worker lost"]
    assert 0 < lost["detected_s"] <= DETECTED_WITHIN_S, lost
    assert lost["users"] > 0 and lost["restored_s"] is not None and lost["restored_s"] <= 2 * DETECTED_WITHIN_S, lost
    assert [e["kind"] for e in faults["events"]].count("worker joined") == 1
    assert faults["workers_lost"] == 1 and faults["seconds_with_fewer_workers"] == lost["restored_s"]
    assert verdict_["kind"] == verdict.GENERATOR_BOUND and lost["description"] in verdict_["reason"]
    return lost


def assert_nothing_lost_unnamed(sent: int, unreported: int, target: int, rate: float) -> None:
    """The target read what the workers counted, less what the lost worker sent after its last report: that gap is
    named (estimated from its rate) and held to one report interval's worth of the swarm's `rate` (the lost worker's
    share of it, twice over: a report a second late on a busy host)."""
    gap = target - sent
    assert 0 <= gap <= rate * 3, (target, sent)
    assert unreported > 0 and abs(gap - unreported) <= rate * 3, (gap, unreported)


def test_a_worker_killed_in_a_local_run_is_replaced_and_its_loss_is_the_result(tmp_path):
    out = tmp_path / "run"
    code, stdout, stderr, _ = run_local_with_a_fault(
        out, ["--workers", "2", "--users", "20", "--wait", "0.01", "--run-time", f"{RUN_TIME_S}s"],
        KILL_AFTER_STEADY_S, lambda loadtest_pid: workers_of(loadtest_pid)[1].send_signal(signal.SIGKILL),
        RUN_TIME_S + 120)
    assert code == checks.INVALID, stderr
    assert "worker 1 ended (signal 9)" in stdout and "started again" in stdout
    assert "workers were lost while every user ran" in stderr
    result = json.loads((out / "result.json").read_text())
    faults = result["faults"]
    lost = assert_the_loss_is_named(faults, result["verdict"])
    assert f"Faults: {lost['description']}" in (out / "summary.md").read_text()
    assert (out / "locust-worker-1.1.log").exists()  # the replacement's log beside the first one's
    assert_nothing_lost_unnamed(faults["requests_sent"], faults["requests_unreported"], faults["target_requests"],
                                result["figures"]["Aggregated"]["rps"])


def test_a_worker_killed_under_the_judged_master_is_replaced_and_counted(judged_run):
    """The chart's mode run: the master's result.json says what the kill cost, and Locust's statistics keep the
    steady window's counts through the rebalances (its reset only at the first)."""
    judged_run.start(run_time_s=RUN_TIME_S)
    judged_run.wait_steady(STEADY_REQUESTS)
    os.kill(judged_run.locust.workers[1].pid, signal.SIGKILL)
    judged_run.locust.workers[1].wait()
    judged_run.locust.restart_worker(1)  # as its Deployment would
    judged_run.master.wait(timeout=RUN_TIME_S + 120)
    served = judged_run.served()
    assert judged_run.master.returncode == checks.INVALID, judged_run.log()[-3000:]
    result = judged_run.result()
    faults = result["faults"]
    assert_the_loss_is_named(faults, result["verdict"])
    figures = result["figures"]["Aggregated"]
    # The rate the target counted just before the kill: the run's own average is pulled down by the time the
    # replacement took to start, which has nothing to do with what the lost worker had sent.
    assert_nothing_lost_unnamed(faults["requests_sent"], faults["requests_unreported"], served, judged_run.steady_rate)
    # Locust's statistics hold the whole steady window, through the rebalances: every request the workers reported
    # but the ramp-up's (its users all start within a second). A reset at a rebalance would drop a third of them.
    assert figures["requests"] >= faults["requests_sent"] - figures["rps"]


def test_a_worker_killed_for_its_memory_is_named_with_the_value_to_raise(memory_limits, judged_run):
    """A test that leaks, its worker under a memory limit (as a pod's): the kernel kills it (OOMKilled); the master
    sees a worker lost, and its last report's memory says why and what to change."""
    judged_run.start(run_time_s=60, locustfiles=[Path(__file__).with_name("leaky_locustfile.py"),
                                                 paths.PLUGIN / "loadtest_plugin.py"])
    memory_limits.limit(judged_run.locust.workers[1].pid, LEAKY_WORKER_LIMIT)
    judged_run.locust.workers[1].wait(timeout=STARTUP_TIMEOUT_S + 60)
    assert judged_run.locust.workers[1].returncode == -signal.SIGKILL  # the kernel's out-of-memory kill
    wait_for("the master to see the worker lost", lambda: "worker lost" in judged_run.log(), 30)
    judged_run.master.terminate()  # the rest of the run time would show nothing more: stopped as a user would
    judged_run.master.wait(timeout=60)
    [lost] = [e for e in judged_run.result()["faults"]["events"] if e["kind"] == "worker lost"]
    assert "out of memory, most likely (OOMKilled)" in lost["cause"], lost
    assert f"of its {LEAKY_WORKER_LIMIT >> 20} MiB limit" in lost["cause"] and "locust.worker.memory" in lost["cause"]
    assert lost["cause"] in judged_run.result()["verdict"]["reason"]

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
import subprocess
import sys

import psutil
from helpers import wait_for

from loadtest.judging import checks, verdict
from loadtest.runtime import stack as stack_module
from loadtest.runtime.locust import RESET_STATS_ENV, Locust
from loadtest.runtime.processes import STARTUP_TIMEOUT_S, Processes
from loadtest.workload import scenarios

RUN_TIME_S = 30
# Killed once this many steady seconds passed, leaving as many for the replacement to rejoin before the stop.
KILL_AFTER_STEADY_S = 8
# The judged master writes nothing while it runs: its workers are killed once the target counted this many requests
# with every user running (some 5 s at 20 users a hundredth of a second apart).
STEADY_REQUESTS = 10_000
# Locust marks a worker missing after 3 heartbeats missed (one a second); the master looks twice a second.
DETECTED_WITHIN_S = 8


def steady_lines(series) -> int:
    return sum(",steady," in line for line in series.read_text().splitlines()) if series.exists() else 0


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
    named (estimated from its rate) and held to one report interval's worth of the run's rate."""
    gap = target - sent
    assert 0 <= gap <= rate * 3, (target, sent)
    assert unreported > 0 and abs(gap - unreported) <= rate * 3, (gap, unreported)


def test_a_worker_killed_in_a_local_run_is_replaced_and_its_loss_is_the_result(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "loadtest", "run", "--local", "--output", str(out), "--workers",
                             "2", "--users", "20", "--wait", "0.01", "--run-time", f"{RUN_TIME_S}s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        wait_for("steady seconds in series.csv", lambda: steady_lines(out / "series.csv") >= KILL_AFTER_STEADY_S,
                 STARTUP_TIMEOUT_S * 2, until=lambda ok: ok or proc.poll() is not None)
        victim = workers_of(proc.pid)[1]
        victim.send_signal(signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=RUN_TIME_S + 120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == checks.INVALID, stderr
    assert "worker 1 ended (signal 9)" in stdout and "started again" in stdout
    assert "workers were lost while every user ran" in stderr
    result = json.loads((out / "result.json").read_text())
    faults = result["faults"]
    lost = assert_the_loss_is_named(faults, result["verdict"])
    assert f"Faults: {lost['description']}" in (out / "summary.md").read_text()
    assert (out / "locust-worker-1.1.log").exists()  # the replacement's log beside the first one's
    assert_nothing_lost_unnamed(faults["requests_sent"], faults["requests_unreported"], faults["target_requests"],
                                result["figures"]["Aggregated"]["rps"])


def test_a_worker_killed_under_the_judged_master_is_replaced_and_counted(tmp_path):
    """The chart's mode run: the master's result.json says what the kill cost, and Locust's statistics keep the
    steady window's counts through the rebalances (its reset only at the first)."""
    with stack_module.Stack(tmp_path / "stack") as stack:
        backend = stack.backend()
        env = {"LOADTEST_CHECKS": "", RESET_STATS_ENV: "true", "LOADTEST_WAIT": "0.01", "LOADTEST_PATH": "/1kb",
               "LOADTEST_RESULTS_DIR": str(tmp_path / "store"), "LOADTEST_RUN_NAME": "run-1"}
        with Processes(tmp_path / "logs") as procs:
            locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile, env=env)
            before = backend.requests_counted()
            master = locust.start_master("-u", "20", "-r", "20", "-t", f"{RUN_TIME_S}s", "--host", backend.http_url,
                                         "--enable-rebalancing", web=False, expect_workers=2,
                                         expect_workers_wait_s=STARTUP_TIMEOUT_S)
            locust.start_workers(2)
            master_log = tmp_path / "logs" / "locust-master.log"
            wait_for("the swarm's users all running", lambda: "All users spawned" in master_log.read_text(),
                     STARTUP_TIMEOUT_S * 2, until=lambda ok: ok or master.poll() is not None)
            steady_count = backend.requests_counted()
            wait_for(f"{STEADY_REQUESTS:,} requests at the target with every user running",
                     lambda: backend.requests_counted() - steady_count, STARTUP_TIMEOUT_S * 2,
                     until=lambda n: n >= STEADY_REQUESTS or master.poll() is not None)
            os.kill(locust.workers[1].pid, signal.SIGKILL)
            locust.workers[1].wait()
            locust.restart_worker(1)  # as its Deployment would
            master.wait(timeout=RUN_TIME_S + 120)
            after = backend.requests_counted()
    assert master.returncode == checks.INVALID, (tmp_path / "logs" / "locust-master.log").read_text()[-3000:]
    result = json.loads((tmp_path / "store" / "run-1" / "result.json").read_text())
    faults = result["faults"]
    assert_the_loss_is_named(faults, result["verdict"])
    figures = result["figures"]["Aggregated"]
    assert_nothing_lost_unnamed(faults["requests_sent"], faults["requests_unreported"], after - before - 1,
                                figures["rps"])
    # Locust's statistics hold the whole steady window, through the rebalances: all but the ramp-up's requests.
    assert figures["requests"] >= (faults["requests_sent"] - faults["requests_unreported"]) * 0.9
    assert "Resetting stats" not in (tmp_path / "logs" / "locust-worker-1.1.log").read_text()


"""The target gone or hung mid-run, on the local stack, as a user types the run.

Gone (its nginx SIGKILLed, workers and all), with an SLO stop: `loadtest run --local --abort-on 'fail_ratio>5%'`.
What the user must see: the run stopped within seconds of the loss instead of loading nothing for the rest of its
run time, exit 1, the stop among its checks, the verdict naming the target, and the series kept up to the stop.

Hung (its nginx SIGSTOPped, then SIGCONTinued): nothing fails until the requests' 60 s timeout, so the failures that
name a target gone cannot name this one. What the user must see: the silence in the result, from when and for how
long, the verdict naming the target, and the requests the workers counted held to nginx's own count once it ran again.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import time

import psutil
from conftest import run_local_with_a_fault

from loadtest_shared import checks, verdict


import loadtest_faults

RUN_TIME_S = 120  # never reached: the stop comes first
KILL_AFTER_STEADY_S = 6
# The condition is judged over the last 10 s of reports (every 3 s): a target refusing every request crosses 5 %
# with the first report after it went.
STOPPED_WITHIN_S = 15
PAUSE_S = 10  # the hung target's pause: longer than the silence's SILENT_S (6 s), short of the requests' timeout
USERS = 10  # a light load (some 500 requests/s): this layer runs beside the chart layer's


def test_a_target_gone_mid_run_stops_it_early_and_the_verdict_names_the_target(tmp_path):
    out = tmp_path / "run"

    def kill_the_target(loadtest_pid: int) -> None:
        [nginx] = [p for p in psutil.Process(loadtest_pid).children() if p.name() == "nginx"]
        os.killpg(nginx.pid, signal.SIGKILL)  # its master and workers: nothing answers on its port any more

    code, stdout, stderr, killed = run_local_with_a_fault(
        out, ["--workers", "1", "--users", "10", "--wait", "0.01", "--run-time", f"{RUN_TIME_S}s",
              "--abort-on", "fail_ratio>5%", "--check", "p95<1s"], KILL_AFTER_STEADY_S, kill_the_target,
        STOPPED_WITHIN_S + 60)
    assert code == checks.CHECK_FAILED, stderr
    result = json.loads((out / "result.json").read_text())
    stopped = result["faults"]["stopped_early"]
    assert stopped["check"] == "fail_ratio>5%" and stopped["measured"] > 0.05
    assert 0 < stopped["at"] - killed <= STOPPED_WITHIN_S, stopped
    assert {"check": "abort-on fail_ratio>5%", "measured": stopped["measured"], "passed": False} in result["checks"]
    assert result["complete"] and result["exit_code"] == checks.CHECK_FAILED
    assert result["verdict"]["kind"] == verdict.TARGET_BOUND and "the target failed" in result["verdict"]["reason"]
    assert f"STOPPED EARLY: {stopped['description']}" in (out / "summary.md").read_text()
    assert "STOPPED EARLY" in stdout
    # The series is kept to the stop: seconds with requests, then seconds of failures, then the stop.
    rows = list(csv.DictReader((out / "series.csv").open()))
    assert any(float(r["fail_ratio"] or 0) > 0.5 for r in rows) and rows[-1]["phase"] == "stop"
    assert float(rows[-1]["time"]) - float(rows[0]["time"]) < RUN_TIME_S / 2


def test_a_target_that_hangs_mid_run_is_named_silent_and_its_count_holds(tmp_path):
    out = tmp_path / "run"

    def pause_the_target(loadtest_pid: int) -> None:
        [nginx] = [p for p in psutil.Process(loadtest_pid).children() if p.name() == "nginx"]
        os.killpg(nginx.pid, signal.SIGSTOP)
        try:
            time.sleep(PAUSE_S)  # the fault's length, not a wait for something
        finally:
            os.killpg(nginx.pid, signal.SIGCONT)

    code, stdout, stderr, resumed = run_local_with_a_fault(
        out, ["--workers", "1", "--users", str(USERS), "--wait", "0.02", "--run-time", "30s"], KILL_AFTER_STEADY_S,
        pause_the_target, 120)
    assert code == checks.PASSED, stderr
    result = json.loads((out / "result.json").read_text())
    faults = result["faults"]
    [silent] = faults["events"]
    print(silent["description"], f"; nginx {faults['target_requests']:,}, workers {faults['requests_sent']:,}")
    assert silent["kind"] == loadtest_faults.SILENT and silent["users"] == USERS, silent
    # Silent from the last report with an answer (the pause began within a report interval of it), seen once no
    # answer came for SILENT_S, answering again at the first report after the pause.
    report_s, paused = faults["report_interval_s"], resumed - PAUSE_S
    assert paused - report_s - 1 <= silent["at"] <= paused + report_s, (silent, resumed)
    assert loadtest_faults.SILENT_S <= silent["detected_s"] <= loadtest_faults.SILENT_S + 1, silent
    assert PAUSE_S - report_s - 1 <= silent["restored_s"] <= PAUSE_S + 2 * report_s + 1, silent
    assert faults["seconds_target_silent"] == silent["restored_s"]
    assert result["verdict"]["kind"] == verdict.TARGET_BOUND and silent["description"] in result["verdict"]["reason"]
    assert f"Faults: {silent['description']}" in (out / "summary.md").read_text() and "target silent" in stdout
    # Nothing lost: nginx served the requests queued on its sockets once it ran again; it counts a request as it
    # reads it, the workers as its answer comes, so it is ahead by at most the requests in flight at the stop.
    assert 0 <= faults["target_requests"] - faults["requests_sent"] <= USERS, faults
    # The series shows the pause: steady seconds without a request answered.
    rows = list(csv.DictReader((out / "series.csv").open()))
    assert sum(r["phase"] == "steady" and float(r["rps"] or 0) == 0 for r in rows) >= PAUSE_S - 3, rows

"""The target gone mid-run (its nginx SIGKILLed, workers and all), on the local stack, with an SLO stop: `loadtest run
--local --abort-on 'fail_ratio>5%'` as a user types it. What the user must see: the run stopped within seconds of the
loss instead of loading nothing for the rest of its run time, exit 1, the stop among its checks, the verdict naming
the target, and the series kept up to the stop."""
from __future__ import annotations

import csv
import json
import os
import signal

import psutil
from conftest import run_local_with_a_fault

from loadtest.judging import checks, verdict

RUN_TIME_S = 120  # never reached: the stop comes first
KILL_AFTER_STEADY_S = 6
# The condition is judged over the last 10 s of reports (every 3 s): a target refusing every request crosses 5 %
# with the first report after it went.
STOPPED_WITHIN_S = 15


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

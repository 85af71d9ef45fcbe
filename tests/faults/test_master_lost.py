"""The master cut off from its workers, on the local stack's processes run as the chart's judged run: killed outright
(SIGKILL, its pod's node lost), and cut apart from one worker for 10 s (iptables on the loopback, that worker's
connection only). What must hold: no orphan load (workers stop their users within seconds of losing the master,
where Locust's own go on for 60 s), no double load (a worker cut off does not keep its users while the master gives
them to the others), the store keeps the killed run's folder marked incomplete with its cause, and `loadtest
history` lists it."""
from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from helpers import wait_until_flat

from loadtest_shared import checks, verdict

from loadtest.runtime.processes import LOCAL_HOST

STEADY_REQUESTS = 10_000
MASTER_LOST_S = 6  # plugin/loadtest_faults.py's MASTER_LOST_S
CUT_S = 10
# The master gives the cut worker's users to the other 4-5 s after its last heartbeat, the worker stops its own after
# 6 s without the master's, looking every 0.5 s: a second or two of double load, not the rest of the cut.
DOUBLE_LOAD_S = 3.0


def test_a_master_killed_mid_run_leaves_no_orphan_load_and_its_folder_marked_incomplete(judged_run, tmp_path):
    judged_run.start(run_time_s=60)
    judged_run.wait_steady(STEADY_REQUESTS)
    judged_run.master.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    last_request = wait_until_flat("the target's count to stop rising", judged_run.served, 30)
    assert last_request - killed <= MASTER_LOST_S + 3, "the workers went on loading the target without a master"
    for worker in (0, 1):
        assert "no heartbeat from the master" in judged_run.log(f"locust-worker-{worker}")
        assert judged_run.locust.workers[worker].poll() is None  # stopped its users; Locust quits it at 60 s
    result = judged_run.result()
    assert not result["complete"] and "the master ended before the run did" in result["incomplete"]
    assert result["exit_code"] == checks.RUN_FAILED
    run = judged_run.store / "run-1"
    # What Locust wrote while it ran (its CSV files every second): the requests until the kill.
    assert (run / "stats_stats_history.csv").stat().st_size > 0
    rows = (run / "stats_stats.csv").read_text().splitlines()
    assert len(rows) >= 2 and int(rows[-1].split(",")[2]) > 0, rows
    listed = subprocess.run([sys.executable, "-m", "loadtest", "history", "--store", str(judged_run.store),
                             "--output", str(tmp_path / "history.html")], capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert listed.returncode == 0, listed.stderr
    [line] = [line for line in listed.stdout.splitlines() if line.startswith("run-1 ")]
    # Its figures until the kill, from Locust's statistics file: the RPS column holds a number.
    assert "(incomplete)" in line and line.split("keepalive_1kb")[1].split()[0] != "-", line


def connection(worker: subprocess.Popen, port: int) -> int:
    """The local port of `worker`'s connection to the master's `port`."""
    [local] = [c.laddr.port for c in psutil.Process(worker.pid).net_connections("tcp")
               if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED]
    return local


def iptables(action: str, worker_port: int, master_port: int) -> None:
    for source, destination in ((worker_port, master_port), (master_port, worker_port)):
        subprocess.run(["iptables", action, "INPUT", "-i", "lo", "-s", LOCAL_HOST, "-p", "tcp", "--sport",
                        str(source), "--dport", str(destination), "-j", "DROP"], check=True, timeout=30)


def logged_at(log: str, text: str) -> datetime.datetime:
    """When the first line of a Locust log with `text` was written (its own clock, the same for every process)."""
    [line] = [line for line in log.splitlines() if text in line][:1]
    return datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f")


@pytest.mark.skipif(os.geteuid() != 0, reason="cutting a connection takes iptables, as root")
def test_a_worker_cut_from_its_master_for_10_s_stops_its_users_and_comes_back(judged_run):
    """The master marks the worker missing after 3 heartbeats and gives its users to the other; the worker, which
    still reaches the target, stops its own a second or two later, not at the end of the cut. When
    the connection is back, the master gives it users again, and its reports, held in the connection, arrive."""
    judged_run.start(run_time_s=40)
    judged_run.wait_steady(STEADY_REQUESTS)
    port = judged_run.locust.master_port
    cut = connection(judged_run.locust.workers[1], port)
    iptables("-A", cut, port)
    try:
        time.sleep(CUT_S)  # the fault's own length
    finally:
        iptables("-D", cut, port)
    judged_run.master.wait(timeout=120)
    given_away = logged_at(judged_run.log(), "setting state to missing")
    stopped = logged_at(judged_run.log("locust-worker-1"), "no heartbeat from the master")
    print(f"the worker stopped its users {(stopped - given_away).total_seconds():.1f} s after the master moved them")
    assert datetime.timedelta(0) <= stopped - given_away <= datetime.timedelta(seconds=DOUBLE_LOAD_S), (
        given_away, stopped)
    result = judged_run.result()
    events = [e["kind"] for e in result["faults"]["events"]]
    assert events == ["worker lost", "worker back"], events
    assert result["faults"]["events"][0]["restored_s"] is not None
    # Its reports waited in its connection and came with it: every request it sent is in the statistics.
    assert result["faults"]["requests_unreported"] == 0
    assert result["figures"]["Aggregated"]["requests"] >= 0.99 * result["faults"]["requests_sent"]
    assert result["verdict"]["kind"] == verdict.GENERATOR_BOUND

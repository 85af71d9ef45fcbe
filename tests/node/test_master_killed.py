"""Issue #36 on the real node: the master of a judged run (`locust.mode: run`) killed outright mid-run, as the
kernel's out-of-memory killer or a lost node would (SIGKILL of its container's process, no last word). What must
hold: no orphan load (the workers stop their users within seconds of the master's last heartbeat; HAProxy's count
stops), no second load (the Job fails at once, PodFailurePolicy, and starts no other master), the run's folder on the
release's claim keeps what was written, marked incomplete with its cause, and `loadtest history --release` lists it.

The fault layer's tests/faults/test_master_lost.py holds the same run as local processes; this one holds the chart's
Job, its claim and the kubelet. Monitoring is off: the master, a worker and HAProxy fill the node's CPU."""
from __future__ import annotations

import json
import time

from conftest import (aggregated, claim_folder, container_processes, finished, haproxy_served, install, job_pods,
                      loadtest_history, master, master_jobs)
from helpers import wait_for, wait_until_flat

from loadtest_shared import checks

from loadtest.errors import RunFailed

MASTER_LOST_S = 6  # plugin/loadtest_faults.py's MASTER_LOST_S
CRASHED = "the master ended before the run did"  # plugin/loadtest_judge.py's CRASHED
STEADY_REQUESTS = 5_000


def counted(cluster, namespace: str) -> int:
    """Locust's count so far (0 until the master's web API answers with the workers' first reports)."""
    try:
        return aggregated(master(cluster, namespace))["num_requests"]
    except (AssertionError, OSError, StopIteration, RunFailed):  # RunFailed: ClusterError, LocustWebError
        return 0


def test_a_judged_runs_master_killed_leaves_no_orphan_load_no_second_run_and_its_folder_incomplete(
        cluster, namespace, helm, tmp_path):
    store = tmp_path / "claim"
    volume = claim_folder(cluster, namespace, store)
    try:
        install(helm, namespace, "--set", "locust.mode=run", "--set", "locust.autostart.runTime=90s",
                "--set", f"locust.results.pvc.storageClass={volume}", "--set", "monitoring.enabled=false",
                "--set", "haproxy.enabled=true", "--set", "locust.target=haproxy", "--set", "locust.worker.cpu=300m",
                "--set", "locust.autostart.users=10", "--set", "locust.autostart.spawnRate=10",
                "--set", "locust.extraEnv[0].name=LOADTEST_WAIT", "--set-string", "locust.extraEnv[0].value=0.02")
        [job] = wait_for("the run's master Job", lambda: master_jobs(cluster, namespace), 120, every=2)
        name = job["metadata"]["name"]
        wait_for(f"{STEADY_REQUESTS:,} requests counted", lambda: counted(cluster, namespace), 240, every=2,
                 until=lambda n: n >= STEADY_REQUESTS)
        [pod] = job_pods(cluster, namespace, name)
        [process] = container_processes(pod["metadata"]["uid"], "--master")
        process.kill()
        killed = time.monotonic()

        last_request = wait_until_flat("HAProxy's count to stop rising", lambda: haproxy_served(cluster, namespace),
                                       30)
        print(f"the master killed: HAProxy's count stopped {last_request - killed:.1f} s after")
        assert last_request - killed <= MASTER_LOST_S + 3, "the workers went on loading the target without a master"
        workers = cluster.kubectl("logs", "-n", namespace, "-l", "app.kubernetes.io/component=locust-worker",
                                  "--tail=-1")
        assert "no heartbeat from the master" in workers, workers[-2000:]

        # The Job failed at once (its pod's exit 137 is not a check's 1) and made no second master.
        ended = wait_for("the master's Job to fail", lambda: finished(master_jobs(cluster, namespace)[0]), 60,
                         every=1)
        assert ended == "Failed"
        assert len(job_pods(cluster, namespace, name)) == 1, "the Job started the run again"

        run = next(store.iterdir())
        result = json.loads((run / "result.json").read_text())
        assert not result["complete"] and CRASHED in result["incomplete"], result
        assert result["exit_code"] == checks.RUN_FAILED
        # What Locust wrote while it ran (its CSV files every second): the requests until the kill.
        rows = (run / "stats_stats.csv").read_text().splitlines()
        assert len(rows) >= 2 and int(rows[-1].split(",")[2]) > 0, rows

        listed = loadtest_history(cluster, namespace, tmp_path)
        assert listed.returncode == 0
        [line] = [line for line in listed.stdout.splitlines() if line.startswith(run.name[:40])]
        # Its figures until the kill, from Locust's statistics file: the RPS column holds a number.
        assert "(incomplete)" in line and line.split("keepalive_1kb")[1].split()[0] != "-", line
    finally:
        cluster.kubectl("delete", "pv", volume, "--wait=false", "--ignore-not-found")

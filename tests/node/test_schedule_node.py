"""Issue #29 on the real node: a scheduled release's judged run, started twice now from its CronJobs as a user
tries a schedule out (`kubectl create job --from=cronjob/...`, docs/history.md); each run's folder reaches the
release's PersistentVolumeClaim; `loadtest history --release` lists both; with the first pinned as the baseline and
the backend slowed between the runs, the second fails its Job (exit 1, a regression) and LoadTestRegression fires.

The schedule itself (every minute on the real kube-controller-manager, and a run still going when the next is due:
concurrencyPolicy Forbid, the JobAlreadyActive event) is the cluster layer's:
tests/cluster/test_schedule_cluster.py, with no minute of load to wait. Here the schedule is once a year, so only the
runs started by hand come.

The real node has no volume provisioner: the test makes the claim's PersistentVolume itself, a folder of this
machine (the node's disk), owned by the pods' user. Each run holds 10 s of load and its master stays 6 s after
(locust.autostart.autoquitSeconds), the least the chart allows over the node layer's 5 s scrape, not that layer's
15 s (examples/real-node/values.yaml): nothing here needs a master's last counters in Prometheus. The regression is
judged from Locust's own figures, series.csv need only be written, and LoadTestRegression reads the Jobs' status
from kube-state-metrics; it has no `for:`, so it fires within a scrape or two of the failed Job.
"""
from __future__ import annotations

import json

from conftest import (Prometheus, claim_folder, finished, install, job_pods, loadtest_history, master,
                      master_jobs, wait_ready)
from helpers import wait_for

from loadtest import paths
from loadtest.errors import RunFailed

RELEASE = "lt"
RUN_S = 10
AUTOQUIT_S = 6  # above the node layer's 5 s scrape, as the chart requires
RUN_TIMEOUT_S = 240  # a run: its pods started, 10 s of load, its master's 6 s after, and its Job's end
# Each user's wait between requests: 10 users send some 1,800 requests/s, several times what the backend slowed to a
# hundredth of a core serves in its 10 ms of CPU a second. At 0.02 s (480/s offered) a fast host's nginx served them
# within it: 3.9 % fewer requests and the same p95, no regression (the node layer, 2026-12-07).
WAIT_S = 0.005


def run_now(cluster, namespace: str, number: int) -> str:
    """Start a run of the schedule now, its master's Job and its workers', as docs/history.md says; the master Job's
    name, `<release>-locust-master-<number>`, the form the scheduled runs' names have (LoadTestRegression's)."""
    for component in ("master", "worker"):
        cluster.kubectl("create", "job", "-n", namespace, f"{RELEASE}-locust-{component}-{number}",
                        f"--from=cronjob/{RELEASE}-locust-{component}")
    return f"{RELEASE}-locust-master-{number}"


def running(cluster, namespace: str, job: str) -> bool:
    found = job_pods(cluster, namespace, job)
    return bool(found) and all(p["status"].get("phase") == "Running" for p in found)


def result_of(folder) -> str:
    """A run's result.json as its master wrote it, to say why its Job failed."""
    found = folder / "result.json"
    return found.read_text(errors="replace") if found.exists() else f"no {found}"


def load_over(cluster, namespace: str) -> bool:
    """The running master's swarm has stopped: its run time is over and its figures are final (the master stays up
    for its --autoquit)."""
    try:
        return master(cluster, namespace, RELEASE).state()["state"] == "stopped"
    except (AssertionError, OSError, RunFailed):  # RunFailed: ClusterError, LocustWebError
        return False  # no master pod with an address yet, or its web UI not up yet


def test_a_schedules_runs_keep_both_on_the_claim_and_the_second_is_flagged_a_regression(cluster, namespace, helm,
                                                                                       tmp_path):
    store = tmp_path / "claim"
    volume = claim_folder(cluster, namespace, store, RELEASE)
    try:
        install(helm, namespace, "--set", "locust.mode=run", "--set", f"locust.autostart.runTime={RUN_S}s",
                "--set", f"locust.autostart.autoquitSeconds={AUTOQUIT_S}", "--set", "locust.schedule.cron=0 0 1 1 *",
                "--set", f"locust.results.pvc.storageClass={volume}",
                "--set", "locust.checks={fail_ratio<1%}", "--set", "locust.target=backend",
                "--set", "locust.autostart.users=10", "--set", "locust.autostart.spawnRate=10",
                "--set", "locust.extraEnv[0].name=LOADTEST_WAIT", "--set-string", f"locust.extraEnv[0].value={WAIT_S}")
        # As a user tries the schedule out: once the release is up. A run started before the backend is ready counts
        # its refused requests as failures, and on a busy host that can be over the 1 % its check allows.
        wait_ready(cluster, namespace)
        first_name = run_now(cluster, namespace, 1)
        # Once the first run's load is over (its figures are final), the backend is slowed to a hundredth of a core
        # for the second: the chart's nginx, throttled by its CPU limit.
        wait_for("the first run's master runs", lambda: running(cluster, namespace, first_name), RUN_TIMEOUT_S, every=1)
        wait_for("the first run's load is over", lambda: load_over(cluster, namespace), RUN_TIMEOUT_S, every=1)
        helm("upgrade", RELEASE, str(paths.CHART), "-n", namespace, "--reuse-values",
             "--set", "backend.resources.requests.cpu=10m", "--set", "backend.resources.limits.cpu=10m")
        # The slowed backend serves the second run alone: its old pod gone, not still behind the Service.
        cluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{RELEASE}-backend", "--timeout=120s",
                        timeout=150)
        first_ended = wait_for("the first run ends", lambda: finished(master_jobs(cluster, namespace)[0]),
                               RUN_TIMEOUT_S, every=1)
        assert first_ended == "Complete", result_of(store / first_name)
        pinned = loadtest_history(cluster, namespace, tmp_path, "--baseline", first_name)
        assert pinned.returncode == 0 and f"baseline: {first_name}" in pinned.stdout

        second_name = run_now(cluster, namespace, 2)
        ended = wait_for("the second run ends", lambda: finished(next(
            j for j in master_jobs(cluster, namespace) if j["metadata"]["name"] == second_name)), RUN_TIMEOUT_S,
            every=1)
        assert ended == "Failed", f"the slowed backend's run passed: {result_of(store / second_name)}"

        # Both folders on the claim, as the masters wrote them.
        for name in (first_name, second_name):
            assert {"result.json", "checks.xml", "summary.md", "report.html", "stats.json", "series.csv"} <= {
                p.name for p in (store / name).iterdir()}, name
        second_result = json.loads((store / second_name / "result.json").read_text())
        assert second_result["exit_code"] == 1 and second_result["baseline"]["regressed"], second_result["meaning"]

        listed = loadtest_history(cluster, namespace, tmp_path)
        assert listed.returncode == 0
        assert first_name in listed.stdout and second_name in listed.stdout and "REGRESSED" in listed.stdout
        assert (tmp_path / f"history-{RELEASE}" / "history.html").is_file()
        sizes = {name: sum(p.stat().st_size for p in (store / name).iterdir()) for name in (first_name, second_name)}
        print(f"runs on the claim: {sizes} bytes; {second_result['meaning']}")

        alert = Prometheus(cluster, namespace).wait(
            f'ALERTS{{alertname="LoadTestRegression",alertstate="firing",release="{RELEASE}"}}',
            lambda v: v == 1, timeout=180)
        assert alert == 1
    finally:
        # No `helm uninstall --wait` for the pods' graceful stops: the namespace's teardown deletes them (and the
        # claim, which an uninstall keeps).
        cluster.kubectl("delete", "pv", volume, "--wait=false", "--ignore-not-found")

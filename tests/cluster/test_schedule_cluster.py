"""locust.schedule on the real API server, kube-controller-manager (its CronJob, Job and PersistentVolume controllers)
and scheduler, in a namespace enforcing Pod Security "restricted": a run every minute.

The master's pods are placed on the node type's nodes with the results claim mounted, and KWOK ends them at once
(exit code 0), so each minute's master Job completes and the history limit of 1 shows in the Jobs left. The workers
are held back by a nodeSelector no node has, so their first Job stays active as a run still going would: at the next
minute the workers' CronJob (concurrencyPolicy Forbid) starts no second Job and records why. The cluster layer has no
volume provisioner: a PersistentVolume made here is bound in advance to the chart's claim.
"""
from __future__ import annotations

from loadtest import paths
from loadtest.capacity import profiles
from loadtest.runtime.cluster import wait_for

RELEASE = "lt"
PROFILE = profiles.by_file("c5-xlarge.yaml")
MASTER, WORKER, CLAIM = f"{RELEASE}-locust-master", f"{RELEASE}-locust-worker", f"{RELEASE}-locust-results"
# From install to the first scheduled minute at most 60 s, then the controller's few seconds.
FIRST_RUN_S = 90


def test_runs_every_minute_under_restricted_and_forbid_skips_a_run_still_going(cluster, node_group, namespace, helm):
    nodes = node_group(PROFILE)
    volume = f"{namespace}-results"
    cluster.apply([{
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/nonexistent/loadtest-results"},
                 "claimRef": {"namespace": namespace, "name": CLAIM}}}])
    try:
        helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
             "--set", "locust.mode=run", "--set", "locust.autostart.runTime=1m",
             "--set", "locust.schedule.cron=* * * * *", "--set", "locust.schedule.historyLimit=1",
             "--set-string", r"locust.worker.nodeSelector.loadtest\.dev/no-such-node=true")
        assert_scheduled_runs(cluster, namespace, nodes)
    finally:
        cluster.kubectl("delete", "persistentvolume", volume, "--wait=false")


def jobs(cluster, namespace: str, component: str) -> dict[str, dict]:
    selector = f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component={component}"
    items = cluster.api_get(f"/apis/batch/v1/namespaces/{namespace}/jobs", labelSelector=selector)["items"]
    return {j["metadata"]["name"]: j for j in items}


def pods_of(cluster, namespace: str, job: str) -> list[dict]:
    return cluster.api_get(f"/api/v1/namespaces/{namespace}/pods",
                           labelSelector=f"batch.kubernetes.io/job-name={job}")["items"]


def finished(job: dict) -> str | None:
    return next((c["type"] for c in job["status"].get("conditions", [])
                 if c["type"] in ("Complete", "Failed") and c["status"] == "True"), None)


def assert_scheduled_runs(cluster, namespace: str, nodes: list[str]) -> None:
    api = f"/apis/batch/v1/namespaces/{namespace}/cronjobs"
    cronjobs = {c["metadata"]["name"]: c["spec"] for c in cluster.api_get(api)["items"]}
    assert set(cronjobs) == {MASTER, WORKER}
    assert all(c["concurrencyPolicy"] == "Forbid" and c["successfulJobsHistoryLimit"] == 1 for c in cronjobs.values())

    # The first minute: a master Job and a workers' Job, named after it; the master placed, its claim bound.
    wait_for("the first scheduled master and workers' Jobs",
             lambda: jobs(cluster, namespace, "locust-master") and jobs(cluster, namespace, "locust-worker"),
             FIRST_RUN_S, lambda: f"master {list(jobs(cluster, namespace, 'locust-master'))}, "
                                  f"workers {list(jobs(cluster, namespace, 'locust-worker'))}")
    (first,) = jobs(cluster, namespace, "locust-master")
    (workers,) = jobs(cluster, namespace, "locust-worker")
    minute = int(first.rsplit("-", 1)[1])
    assert first == f"{MASTER}-{minute}" and workers == f"{WORKER}-{minute}"
    wait_for(f"job/{first} to complete",
             lambda: finished(jobs(cluster, namespace, "locust-master")[first]) == "Complete", 60,
             lambda: str(jobs(cluster, namespace, "locust-master")[first]["status"]))
    (pod,) = pods_of(cluster, namespace, first)  # admitted under "restricted", the results claim and all
    assert pod["spec"]["nodeName"] in nodes and pod["status"]["phase"] == "Succeeded"
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == first  # what LOADTEST_RUN_NAME reads
    assert {"name": "results", "persistentVolumeClaim": {"claimName": CLAIM}} in pod["spec"]["volumes"]
    claim = cluster.api_get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{CLAIM}")
    assert claim["status"]["phase"] == "Bound" and claim["spec"]["volumeName"] == f"{namespace}-results"
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    worker_pods = pods_of(cluster, namespace, workers)
    assert len(worker_pods) == PROFILE.plan.replicas and all(p["status"]["phase"] == "Pending" for p in worker_pods)

    # The next minute: a second master Job, the first one gone (history limit 1); the workers' run still going, so
    # no second workers' Job, and the CronJob says why.
    second = f"{MASTER}-{minute + 1}"
    wait_for(f"job/{second} to complete and job/{first} to leave the history",
             lambda: list(jobs(cluster, namespace, "locust-master")) == [second]
             and finished(jobs(cluster, namespace, "locust-master")[second]) == "Complete",
             75, lambda: str({n: finished(j) for n, j in jobs(cluster, namespace, "locust-master").items()}))

    def skipped() -> list[dict]:
        return cluster.api_get(f"/api/v1/namespaces/{namespace}/events",
                               fieldSelector=f"involvedObject.name={WORKER},reason=JobAlreadyActive")["items"]

    wait_for("the workers' CronJob to record the skipped run", skipped, 30, lambda: "no JobAlreadyActive event")
    assert list(jobs(cluster, namespace, "locust-worker")) == [workers]
    assert "concurrency policy is Forbid" in skipped()[0]["message"]
    status = cluster.api_get(f"{api}/{WORKER}")["status"]
    assert [a["name"] for a in status["active"]] == [workers]

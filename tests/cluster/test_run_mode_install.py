"""locust.mode=run on the real API server, scheduler and Job controller, under Pod Security "restricted": the
master's and the workers' Jobs are admitted, their pods scheduled on the node type's nodes, and `helm install
--wait --wait-for-jobs` returns once both Jobs completed, as a pipeline waits for a run.

KWOK ends each pod with exit code 0 at once: that the Jobs and helm's wait work is shown here, not what Locust
judges in them (the dataplane layer runs the same master with the same LOADTEST_CHECKS)."""
from __future__ import annotations

from loadtest import paths
from loadtest.capacity import profiles

RELEASE = "lt"
PROFILE = profiles.by_file("c5-xlarge.yaml")


def test_a_judged_run_installs_restricted_and_its_jobs_complete(cluster, node_group, namespace, helm):
    nodes = node_group(PROFILE)
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         "--set", "locust.mode=run", "--set", "locust.autostart.runTime=1m",
         "--set-json", 'locust.checks=["p95<200ms", "fail_ratio<1%"]',
         # No volume provisioner here, so no results claim (test_schedule_cluster.py binds one to a volume it makes).
         "--set", "locust.results.store=none",
         "--wait", "--wait-for-jobs", "--timeout", "120s")
    jobs = {j["metadata"]["name"]: j for j in
            cluster.api_get(f"/apis/batch/v1/namespaces/{namespace}/jobs")["items"]}
    master, workers = jobs[f"{RELEASE}-locust-master"], jobs[f"{RELEASE}-locust-worker"]
    assert master["status"].get("succeeded") == 1
    assert workers["status"].get("succeeded") == PROFILE.plan.replicas
    for job in (master, workers):
        assert "Complete" in [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"]
    pods = cluster.api_get(f"/api/v1/namespaces/{namespace}/pods",
                           labelSelector="app.kubernetes.io/component in (locust-master,locust-worker)")["items"]
    assert len(pods) == 1 + PROFILE.plan.replicas
    assert all(p["status"]["phase"] == "Succeeded" and p["spec"]["nodeName"] in nodes for p in pods)

"""`loadtest run --release ... --arrival-rate N` when a release cannot take its part of the rate (issue #57: a
region is a fault domain), against the real API server and scheduler: each release is upgraded to its part with
`helm upgrade --reuse-values --wait` (the new pods scheduled and running on KWOK nodes) before any load.

Region b's release first keeps a user count (locust.autostart.users), which a rate cannot go with: the run is
refused before anything changes, in the settings' own words, exit 2; the upgrade it advises clears the count, once
(helm's --all would still show it until the next upgrade, helm/helm#30765, so the CLI reads the values set). Then
region b's release is stuck, an operation on it still pending (as a helm command killed mid-upgrade leaves it), so
its upgrade fails: the run ends there,
naming region b and helm's words, with no results folder; region a, which took its part, is set back to the rate it
had. KWOK nodes run no containers, so no run could start here anyway: the node layer's two-region run
(tests/node/test_regions_node.py) sends the split rate for real.
"""
from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys

from loadtest import paths
from loadtest.capacity import profiles
from loadtest.runtime import releaserun
from loadtest.runtime.release import Release
from loadtest_shared import checks

RELEASE = "lt"
PROFILE = profiles.by_file("c5-xlarge.yaml")
RATE = 100  # requests/s, split by the releases' workers (one each): 50 a region
LIGHT = ("--set", "locust.worker.replicas=1", "--set", "locust.target=backend", "--set", "nginx.enabled=false",
         "--set", "haproxy.enabled=false", "--set", "monitoring.enabled=false")


def rate_and_revisions(cluster, namespace: str) -> tuple[float, int]:
    release = Release(RELEASE, namespace, cluster.kubeconfig)
    revisions = json.loads(release.helm("history", RELEASE, "-o", "json"))
    return releaserun.rate_of(release.values()["locust"]), len(revisions)


def loadtest_run(cluster, a: str, b: str, out) -> subprocess.CompletedProcess:
    ran = subprocess.run([sys.executable, "-m", "loadtest", "run", "--release", f"{a}/{RELEASE}", "--release",
                          f"{b}/{RELEASE}", "--kubeconfig", str(cluster.kubeconfig), "--arrival-rate", str(RATE),
                          "--run-time", "10s", "--output", str(out)],
                         capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    print(ran.stdout, ran.stderr)
    assert "Traceback" not in ran.stderr, ran.stderr
    return ran


def mark_pending(cluster, namespace: str) -> None:
    """The release's last revision left "pending-upgrade", as a helm upgrade killed midway leaves it: helm refuses
    every other operation on it until it is rolled back."""
    name = f"sh.helm.release.v1.{RELEASE}.v{rate_and_revisions(cluster, namespace)[1]}"
    secret = json.loads(cluster.kubectl("get", "secret", "-n", namespace, name, "-o", "json"))
    stored = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))
    stored["info"]["status"] = "pending-upgrade"
    secret["data"]["release"] = base64.b64encode(base64.b64encode(gzip.compress(json.dumps(stored).encode()))).decode()
    secret["metadata"]["labels"]["status"] = "pending-upgrade"
    cluster.kubectl("replace", "-f", "-", input=json.dumps(secret))


def test_a_release_that_cannot_take_its_part_ends_the_run_before_any_load_and_the_others_are_set_back(
        cluster, node_group, module_namespace_pair, helm, tmp_path):
    node_group(PROFILE)
    a, b = module_namespace_pair
    for namespace, extra in ((a, ()), (b, ("--set", "locust.autostart.users=40"))):
        # Locust and the backend alone: two releases of the values file, targets and monitoring too, do not fit
        # its node groups beside each other.
        helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
             *LIGHT, *extra, "--wait", "--timeout", "120s")
    out = tmp_path / "run"
    refused = loadtest_run(cluster, a, b, out)
    assert refused.returncode == 2, refused.stderr
    assert (f"region {b}/{RELEASE}: --arrival-rate with its locust.autostart.users 40: the open model's rate replaces "
            f"a user count") in refused.stderr
    assert f"helm upgrade {RELEASE} --reuse-values --set locust.autostart.users=null" in refused.stderr
    assert rate_and_revisions(cluster, a) == (0, 1) and not out.exists()  # nothing changed

    helm("upgrade", RELEASE, str(paths.CHART), "-n", b, "--reuse-values", "--set", "locust.autostart.users=null",
         "--wait", "--timeout", "120s")  # as the refusal advises, once
    assert "users" not in Release(RELEASE, b, cluster.kubeconfig).values(defaults=False)["locust"]["autostart"]
    mark_pending(cluster, b)
    ran = loadtest_run(cluster, a, b, out)
    assert ran.returncode == checks.RUN_FAILED, ran.stderr
    assert f"region {b}/{RELEASE}: helm upgrade --set locust.load.arrivalRate=... failed" in ran.stderr
    assert "another operation (install/upgrade/rollback) is in progress" in ran.stderr  # helm's own words
    assert "no region was started" in ran.stderr and not out.exists()
    assert f"[{a}/{RELEASE}] locust.load.arrivalRate 50 (its part of 100 requests/s): helm upgrade" in ran.stdout
    assert f"setting back each release's rate: {a}/{RELEASE} 0, {b}/{RELEASE} 0" in ran.stdout
    # Region a took its part (a revision) and was set back (another); region b's upgrade never ran.
    assert rate_and_revisions(cluster, a) == (0, 3)
    assert rate_and_revisions(cluster, b) == (0, 2)

"""A worker killed for its memory on the real node: a test of the user's that leaks (the fault layer's
tests/faults/leaky_locustfile.py, through `locust.test`) under the chart's `locust.worker.memory`. The kernel kills
the container (its status says OOMKilled) and the kubelet starts it again; the master, which cannot read that status,
names the lost worker, the likely cause from its last report's memory, and the value to raise."""
from __future__ import annotations

from pathlib import Path

from conftest import install
from helpers import wait_for

from loadtest.runtime.cluster import pods

LEAKY = Path(__file__).parents[1] / "faults" / "leaky_locustfile.py"
# The leaking test (80 MB kept at once, then 10 KB a request, 10 users 0.01 s apart: some 9 MB/s) fills it in
# some 8 s.
MEMORY = "200Mi"


def oom_killed(cluster, namespace: str) -> list[str]:
    """The worker containers whose last end was the kernel's out-of-memory kill."""
    return [pod["metadata"]["name"] for pod in pods(cluster, namespace, "app.kubernetes.io/component=locust-worker")
            for status in pod["status"].get("containerStatuses", [])
            if status.get("lastState", {}).get("terminated", {}).get("reason") == "OOMKilled"]


def test_a_worker_killed_for_its_memory_is_named_with_the_value_to_raise(cluster, namespace, helm):
    install(helm, namespace, "--set-file", f"locust.test.files.locustfile={LEAKY}",
            "--set", f"locust.worker.memory={MEMORY}", "--set", "locust.worker.replicas=1",
            "--set", "locust.mode=autostart", "--set", "locust.autostart.users=10",
            "--set", "locust.autostart.spawnRate=10", "--set", "locust.target=backend",
            "--set", "monitoring.enabled=false")
    wait_for("a worker OOMKilled", lambda: oom_killed(cluster, namespace), 180, every=2)

    def lost() -> list[str]:
        log = cluster.kubectl("logs", "-n", namespace, "deploy/lt-locust-master")
        return [line for line in log.splitlines() if "loadtest_faults: worker lost" in line]

    [line, *_] = wait_for("the master to see the worker lost", lost, 30, every=1)
    print(line)
    assert "out of memory, most likely (OOMKilled)" in line and "locust.worker.memory" in line, line
    assert f"of its {MEMORY.removesuffix('Mi')} MiB limit" in line, line

"""The used-by line for real: `helm install` of the local values on a real node, every container started by the
kubelet from the images built here, ready by its own probes; `helm test`. Worker CPU tuned with `helm upgrade` (the
thin worker's experiment, beside a CPU hog) is test_tune's, through `loadtest tune --apply`."""
from __future__ import annotations

from conftest import install, wait_ready

HAPROXY = ("--set", "haproxy.enabled=true", "--set", "locust.target=haproxy")


def test_install_starts_every_container_and_helm_test_passes(cluster, namespace, helm):
    install(helm, namespace, *HAPROXY)
    seconds = wait_ready(cluster, namespace)
    print(f"install -> all containers ready: {seconds:.0f} s")
    out = helm("test", "lt", "-n", namespace, "--timeout", "180s")
    # The test pods ran for real and passed: the master's web UI counted every worker and the target answered
    # (lt-test-locust), the backend served its 1 KB payload (lt-test-backend); each exits non-zero otherwise.
    assert out.count("Phase:          Succeeded") == 2, out

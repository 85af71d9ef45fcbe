"""The targets under test install and run under Pod Security "restricted" on their own node group."""
from __future__ import annotations

import pytest

from loadtest import paths, profiles
from scheduling import assert_all_running

RELEASE = "lt"
PROFILE = profiles.by_file("c5-xlarge.yaml")

TARGET_SETS = {
    "nginx-tls": ("--set", "nginx.enabled=true", "--set", "locust.target=nginx", "--set", "locust.https=true"),
    "haproxy-reencrypt": ("--set", "haproxy.enabled=true", "--set", "haproxy.tls.mode=reencrypt",
                          "--set", "backend.tls.enabled=true", "--set", "locust.target=haproxy",
                          "--set", "locust.scenario=tls_handshake"),
    "haproxy-passthrough-close": ("--set", "haproxy.enabled=true", "--set", "haproxy.tls.mode=passthrough",
                                  "--set", "haproxy.keepAlive=false", "--set", "backend.tls.enabled=true",
                                  "--set", "locust.target=haproxy", "--set", "locust.scenario=http_close"),
}


@pytest.mark.parametrize("targets", TARGET_SETS)
def test_targets_run_restricted_and_off_the_generator_nodes(targets, cluster, node_group, namespace, helm):
    generator_nodes = set(node_group(PROFILE))
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         *TARGET_SETS[targets], "--wait", "--timeout", "120s")
    running = assert_all_running(cluster, namespace, f"app.kubernetes.io/instance={RELEASE}")
    by_name = {}
    for pod in running:
        by_name.setdefault(pod["metadata"]["labels"]["app.kubernetes.io/name"], set()).add(pod["spec"]["nodeName"])
    target = targets.split("-")[0]
    assert target in by_name, f"no {target} pod running: {sorted(by_name)}"
    assert not by_name[target] & generator_nodes, f"{target} shares a node with the Locust workers"
    helm("test", RELEASE, "-n", namespace, "--timeout", "60s")

"""One local control plane with simulated EKS nodes for the whole session (loadtest/runtime/cluster).

It runs in a pytest temp dir, not in ~/.cache/loadtest/cluster, so a developer's own `loadtest cluster up` is left
alone; pytest keeps the last runs' dirs, so the component logs are there after a failure.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from loadtest import profiles
from loadtest.runtime.cluster import NODE_GROUP_LABEL, Cluster, use_node_group

START_TIMEOUT_S = 60


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Cluster:
    cluster = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        cluster.start(timeout=START_TIMEOUT_S)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def node_group(cluster):
    """use(profile): give the cluster the node group the profile is sized for (and its targets' node group),
    unless it already has them; returns the generator nodes."""
    current = {"file": None}

    def use(profile: profiles.Profile) -> list[str]:
        if current["file"] != profile.file:
            current["file"] = None  # if the switch fails half-way, the next test switches again
            use_node_group(cluster, profile)
            current["file"] = profile.file
        selector = f"{NODE_GROUP_LABEL}={Path(profile.file).stem}"
        return [n["metadata"]["name"] for n in cluster.api_get("/api/v1/nodes", labelSelector=selector)["items"]]

    return use

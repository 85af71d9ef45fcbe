"""One local control plane with simulated EKS nodes for the whole session (loadtest/runtime/cluster).

It runs in a pytest temp dir, not in ~/.cache/loadtest/cluster, so a developer's own `loadtest cluster up` is left
alone; pytest keeps the last runs' dirs, so the component logs are there after a failure.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.capacity import clusterfiles, profiles
from loadtest.capacity.profiles import NODE_GROUP_LABEL
from loadtest.runtime.cluster import Cluster, use_node_groups

# xdist hands each of the layer's three sessions two files at first, then one as each ends, in this order
# (tests/layers.py turns its own, the most tests first, off): the longest files first, each beside a short one. In
# xdist's order test_values_fit.py (16 tests, some 290 s) and test_targets_install.py (100 s) went to one session,
# which ended the layer a minute after the others, and test_schedule_cluster.py (one test, two whole cron minutes)
# started late. Durations from the suite's run of 2026-11-29; the other files follow in name order.
FIRST = ("test_values_fit.py", "test_schedule_cluster.py", "test_targets_install.py", "test_run_mode_install.py",
         "test_sweep_cluster.py", "test_tune_sizing.py", "test_localcluster.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(FIRST)))


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
    """use(profile, groups=None): give the cluster the node group the profile is sized for and its targets' node
    group (or `groups`, e.g. read from a written ClusterConfig) with the profile's add-ons, unless it already has
    them; returns the first (the generator's) group's nodes."""
    current = {"key": None}

    def use(profile: profiles.Profile, groups: list[clusterfiles.NodeGroup] | None = None) -> list[str]:
        groups = groups or clusterfiles.node_groups(profile)
        key = (profile.file, tuple(groups))
        if current["key"] != key:
            current["key"] = None  # if the switch fails half-way, the next test switches again
            use_node_groups(cluster, groups, profile)
            current["key"] = key
        selector = f"{NODE_GROUP_LABEL}={groups[0].name}"
        return [n["metadata"]["name"] for n in cluster.api_get("/api/v1/nodes", labelSelector=selector)["items"]]

    return use

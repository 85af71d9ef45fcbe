"""`loadtest plan --regions` on two real control planes: one plan for two regions writes an eksctl ClusterConfig a
region and one values file; each region's KWOK nodes are made from its own written file, and the one values file
installs in each region's cluster with nothing Pending. The second region is a control plane of its own (etcd, an
apiserver, a scheduler, KWOK), not a namespace of the first: two clusters, as two EKS clusters are.
"""
from __future__ import annotations

import yaml
from scheduling import assert_all_running

from loadtest import commands, paths
from loadtest.capacity import clusterfiles, profiles
from loadtest.runtime import tools
from loadtest.runtime.cluster import Cluster, use_node_groups

REGIONS = ("us-east-1", "eu-west-1")
RELEASE = "lt"
RELEASE_SELECTOR = f"app.kubernetes.io/instance={RELEASE}"
START_TIMEOUT_S = 60


def install_and_check(cluster: Cluster, values, namespace: str) -> list[dict]:
    """The release installed from `values` in the cluster's namespace (helm --wait), every one of its pods
    Running."""
    tools.run("helm", "--kubeconfig", str(cluster.kubeconfig), "install", RELEASE, str(paths.CHART), "-n", namespace,
              "-f", str(values), "--wait", "--timeout", "120s", timeout=180)
    return assert_all_running(cluster, namespace, RELEASE_SELECTOR)  # 0 Pending, or each one with its reason


def test_a_plan_for_two_regions_installs_in_each_regions_cluster_with_nothing_pending(cluster, node_group, namespace,
                                                                                     tmp_path, capsys):
    values, eks = tmp_path / "values.yaml", tmp_path / "eks.yaml"
    assert commands.main(["plan", "--target-rps", "100000", "--regions", ",".join(REGIONS),
                          "--write-values", str(values), "--write-cluster", str(eks)]) == 0
    printed = capsys.readouterr().out
    assert f"loadtest run --release lt@{REGIONS[0]} --release lt@{REGIONS[1]}" in printed
    written = {region: tmp_path / f"eks-{region}.yaml" for region in REGIONS}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["values.yaml", *(p.name for p in written.values())])
    configs = {region: yaml.safe_load(path.read_text()) for region, path in written.items()}
    assert {region: c["metadata"]["region"] for region, c in configs.items()} == dict(zip(REGIONS, REGIONS))
    groups = {region: clusterfiles.read_node_groups(path.read_text()) for region, path in written.items()}
    assert groups[REGIONS[0]] == groups[REGIONS[1]], "an even split: the same node groups in every region"
    generator = groups[REGIONS[0]][0]
    replicas = yaml.safe_load(values.read_text())["locust"]["worker"]["replicas"]
    profile = profiles.eks(generator.instance_type, generator.nodes, "the plan's")

    second = Cluster(tmp_path / "second-region")
    try:
        second.start(timeout=START_TIMEOUT_S)
        node_group(profile, groups[REGIONS[0]])  # the session's control plane, its node groups as the fixture keeps
        use_node_groups(second, groups[REGIONS[1]], profile)
        second.kubectl("create", "namespace", namespace)
        second.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
        for region, on in zip(REGIONS, (cluster, second)):
            running = install_and_check(on, values, namespace)
            workers = [p for p in running if p["metadata"]["labels"].get("app.kubernetes.io/component")
                       == "locust-worker"]
            assert len(workers) == replicas, region
    finally:
        second.stop()
    tools.run("helm", "--kubeconfig", str(cluster.kubeconfig), "uninstall", RELEASE, "-n", namespace, "--wait",
              "--timeout", "60s", timeout=90)

"""The eksctl ClusterConfig and the Karpenter NodePools `loadtest plan --write-cluster/--write-karpenter` writes:
the node groups a values file assumes, with the counts of its header, and nothing the plan did not count.
(Their checks against eksctl's schema and Karpenter's CRDs: tests/chart/test_cluster_files.py.)"""
from __future__ import annotations

import re

import pytest
import yaml

from loadtest import commands, paths
from loadtest.capacity import catalog, clusterfiles, profiles, sizing

EKS_PROFILES = [p for p in profiles.PROFILES if p.target_node_type]


def header_groups(values_file: str) -> list[tuple[int, str]]:
    """(nodes, node type) of the generator's and the targets' node groups, as a values file's header states them."""
    header = (paths.VALUES / values_file).read_text().split("\nlocust:")[0]
    node_type = re.search(r"^# Node type: ([\w.]+):", header, re.M).group(1)
    nodes = int(re.search(r"^# Nodes assumed: (\d+)", header, re.M).group(1))
    target = re.search(r"^# Target node group: (\d+) x ([\w.]+):", header, re.M)
    return [(nodes, node_type), (int(target.group(1)), target.group(2))]


@pytest.mark.parametrize("profile", EKS_PROFILES, ids=lambda p: p.file)
def test_cluster_config_has_the_node_groups_of_the_values_files_header(profile):
    config = yaml.safe_load(clusterfiles.cluster_config(profile))
    groups = config["managedNodeGroups"]
    assert [(g["desiredCapacity"], g["instanceType"]) for g in groups] == header_groups(profile.file)
    for g in groups:
        assert g["minSize"] == g["maxSize"] == g["desiredCapacity"], "the plan holds for one node count only"
        assert g["labels"] == {profiles.NODE_GROUP_LABEL: g["name"]}
        assert "taints" not in g, "the chart's pods tolerate no taint"
    assert [g["name"] for g in groups] == [profile.file.removesuffix(".yaml"), clusterfiles.TARGET_GROUP]


def test_cluster_config_names_the_region_the_cluster_and_only_the_add_ons_the_plan_counts():
    profile = profiles.by_file("c5-xlarge.yaml")
    config = yaml.safe_load(clusterfiles.cluster_config(profile, "perf", "eu-west-1"))
    assert (config["apiVersion"], config["kind"]) == ("eksctl.io/v1alpha5", "ClusterConfig")
    assert config["metadata"] == {"name": "perf", "region": "eu-west-1", "version": clusterfiles.KUBERNETES_VERSION}
    # eksctl would add metrics-server, which no plan counts.
    assert config["addonsConfig"] == {"disableDefaultAddons": True}
    assert [a["name"] for a in config["addons"]] == ["vpc-cni", "kube-proxy", "coredns"]


def test_cluster_config_comments_name_the_daemonsets_budget_and_the_arithmetic():
    profile = profiles.by_file("c5-xlarge.yaml")
    text = clusterfiles.cluster_config(profile)
    comments = " ".join(line.lstrip("# ").strip() for line in text.splitlines() if line.lstrip().startswith("#"))
    for ds in sizing.EKS_DAEMONSETS:
        assert f"{ds.name} {ds.cpu_m}m" in comments
    assert f"= {sum(d.cpu_m for d in sizing.EKS_DAEMONSETS)}m" in comments
    assert f"-> {profile.plan.replicas} workers" in comments
    assert f"-> {profile.target_nodes} node(s)" in comments
    assert f"{clusterfiles.hourly_usd(profile):g} USD/h" in comments
    assert all(len(line) <= 120 for line in text.splitlines())


def test_hourly_cost_is_both_node_groups_and_the_control_plane():
    profile = profiles.eks("c5.2xlarge", 3, "test")
    assert clusterfiles.hourly_usd(profile) == pytest.approx(
        3 * 0.34 + profile.target_nodes * catalog.get(profiles.TARGET_NODE_TYPE).price_usd_hour + 0.10)


def test_read_node_groups_gives_back_the_written_groups_with_catalog_shapes():
    profile = profiles.eks("c5.2xlarge", 3, "test")
    groups = clusterfiles.read_node_groups(clusterfiles.cluster_config(profile))
    assert groups == clusterfiles.node_groups(profile)
    generator = groups[0]
    assert (generator.shape.allocatable_cpu_m, generator.shape.max_pods) == (7910, 58)
    assert generator.shape.labels["node.kubernetes.io/instance-type"] == "c5.2xlarge"
    assert generator.shape.labels[profiles.NODE_GROUP_LABEL] == "c5-2xlarge"


@pytest.mark.parametrize("profile", EKS_PROFILES, ids=lambda p: p.file)
def test_karpenter_pools_allow_only_the_planned_instance_type_and_cpu(profile):
    docs = list(yaml.safe_load_all(clusterfiles.karpenter(profile, "perf")))
    (node_class,) = [d for d in docs if d["kind"] == "EC2NodeClass"]
    assert node_class["apiVersion"] == "karpenter.k8s.aws/v1"
    assert node_class["spec"]["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "perf"}}]
    pools = [d for d in docs if d["kind"] == "NodePool"]
    for pool, group in zip(pools, clusterfiles.node_groups(profile), strict=True):
        assert pool["apiVersion"] == "karpenter.sh/v1"
        spec = pool["spec"]["template"]["spec"]
        (instance_type,) = [r for r in spec["requirements"] if r["key"] == "node.kubernetes.io/instance-type"]
        assert (instance_type["operator"], instance_type["values"]) == ("In", [group.instance_type])
        assert pool["spec"]["limits"] == {"cpu": str(group.nodes * catalog.get(group.instance_type).vcpu)}
        assert spec["nodeClassRef"]["name"] == node_class["metadata"]["name"]
        assert pool["spec"]["template"]["metadata"]["labels"] == {profiles.NODE_GROUP_LABEL: group.name}
        assert "taints" not in spec
        assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty", "no repacking during a test"


def test_plan_writes_the_cluster_beside_the_values_file_with_the_same_counts(tmp_path, capsys):
    eks, values = tmp_path / "eks.yaml", tmp_path / "mine.yaml"
    assert commands.main(["plan", "--target-rps", "200000", "--write-values", str(values),
                          "--write-cluster", str(eks), "--region", "eu-central-1"]) == 0
    out = capsys.readouterr().out
    config = yaml.safe_load(eks.read_text())
    workers = yaml.safe_load(values.read_text())["locust"]["worker"]["replicas"]
    generator, targets = config["managedNodeGroups"]
    assert f"Nodes assumed: {generator['desiredCapacity']} " in values.read_text()
    assert f"Target node group: {targets['desiredCapacity']} x {targets['instanceType']}:" in values.read_text()
    assert f"-> {workers} workers" in eks.read_text()
    assert config["metadata"]["region"] == "eu-central-1"
    assert f"eksctl create cluster -f {eks}" in out and f"eksctl delete cluster -f {eks}" in out
    assert "USD/h on demand" in out


def test_plan_refuses_a_generator_of_the_targets_node_type_and_writes_nothing(tmp_path, capsys):
    eks = tmp_path / "eks.yaml"
    with pytest.raises(SystemExit) as exit_:
        commands.main(["plan", "--target-rps", "10000", "--node-types", profiles.TARGET_NODE_TYPE,
                       "--write-cluster", str(eks)])
    assert exit_.value.code == 2
    assert "by instance type only" in capsys.readouterr().err
    assert not eks.exists()

import pytest
import yaml

from loadtest import paths
from loadtest.capacity import chartpods, profiles
from loadtest.generate import valuesgen


@pytest.mark.parametrize("profile", profiles.PROFILES, ids=lambda p: p.file)
def test_values_file_carries_the_planned_workers_and_node_type(profile):
    values = yaml.safe_load((paths.VALUES / profile.file).read_text())
    assert values["locust"]["worker"]["replicas"] == profile.plan.replicas
    assert values["locust"]["worker"]["cpu"] == "1000m"
    assert values["locust"]["nodeType"] == (profile.node_type or "")


@pytest.mark.parametrize("profile", profiles.PROFILES, ids=lambda p: p.file)
def test_values_file_header_explains_the_arithmetic(profile):
    header = (paths.VALUES / profile.file).read_text().split("\nlocust:")[0]
    assert f"Nodes assumed: {profile.nodes}" in header
    assert "allocatable" in header and f"{profile.plan.replicas} workers" in header


def test_every_values_file_comes_from_a_profile():
    shipped = {p.name for p in paths.VALUES.glob("*.yaml")}
    assert shipped == {p.file for p in profiles.PROFILES}


TARGET_GROUP_PROFILES = [p for p in profiles.PROFILES if p.target_node_type]


@pytest.mark.parametrize("profile", TARGET_GROUP_PROFILES, ids=lambda p: p.file)
def test_node_type_file_runs_both_targets_backend_and_monitoring_on_the_target_node_group(profile):
    values = yaml.safe_load((paths.VALUES / profile.file).read_text())
    for component in ("backend", "nginx", "haproxy", "monitoring"):
        assert values[component] == {"nodeType": profile.target_node_type, "enabled": True}, component
    assert values["locust"]["target"] == profiles.TARGET == "nginx"


@pytest.mark.parametrize("profile", TARGET_GROUP_PROFILES, ids=lambda p: p.file)
def test_node_type_file_header_counts_the_target_node_group(profile):
    header = (paths.VALUES / profile.file).read_text().split("\nlocust:")[0]
    group = profile.target_plan
    assert f"# Target node group: {group.nodes} x {profile.target_node_type}: " in header
    # Every pod of the group with its request, and their sum as the chart's values give it.
    for pod in chartpods.pods(chartpods.values(profile.target_group)):
        listed = f"{pod.name} {pod.replicas} x {pod.cpu_m}m" if pod.replicas > 1 else f"{pod.name} {pod.cpu_m}m"
        assert listed in header
    assert f"= {group.pods_cpu_m}m\n" in header
    assert f"-> {group.nodes} node(s): " in header
    assert "`--set locust.target=haproxy` away" in header


def test_the_target_group_counts_what_the_charts_values_request():
    """The one source is the charts' values: backend 3 x 1 CPU, each target one CPU per worker or thread, and the
    monitoring's three pods (Grafana only when it is on, none in operator mode)."""
    profile = profiles.by_file("c5-xlarge.yaml")
    pods = {p.name: p for p in profile.target_plan.pods}
    assert set(pods) == {"backend", "nginx-ingress", "haproxy", "prometheus", "grafana", "kube-state-metrics"}
    assert (pods["backend"].replicas, pods["backend"].cpu_m) == (3, 1000)
    assert pods["nginx-ingress"].cpu_m == pods["haproxy"].cpu_m == 1000
    assert profile.target_plan.pods_cpu_m == 3000 + 2000 + 250 + 100 + 50
    raised = profile.target_group_plan({"nginx": {"workerProcesses": 2}, "monitoring": {"grafana": {"enabled": False}}})
    assert {p.name: p.cpu_m for p in raised.pods}["nginx-ingress"] == 2000 and "grafana" not in {
        p.name for p in raised.pods}
    operator = profile.target_group_plan({"monitoring": {"mode": "operator"}, "haproxy": {"enabled": False}})
    assert {p.name for p in operator.pods} == {"backend", "nginx-ingress"}


def test_target_node_count_follows_the_requests():
    profile = profiles.by_file("c5-xlarge.yaml")
    assert profile.target_nodes == profile.target_plan.nodes == 1
    # Four CPUs more for nginx no longer fit one c5n.2xlarge beside the rest: the group needs a second node.
    assert profile.target_group_plan({"nginx": {"workerProcesses": 5}}).nodes == 2


def test_local_file_keeps_the_targets_off():
    values = yaml.safe_load((paths.VALUES / "local.yaml").read_text())
    assert not {"nginx", "haproxy", "monitoring"} & set(values)
    assert "target" not in values["locust"]
    assert profiles.by_file("local.yaml").target_nodes == 0


def test_the_header_says_how_far_a_target_cpus_sweep_can_go():
    """Each step runs the new target pod beside the old one: on one c5n.2xlarge beside the other target there is no
    room for a second nginx CPU (5400m + 2000m + 200m of CoreDNS > 7485m), with haproxy off there is."""
    profile = profiles.by_file("c5-xlarge.yaml")
    assert valuesgen.sweep_room(profile) == 1
    assert valuesgen.sweep_room(profile, {"haproxy": {"enabled": False}}) == 2
    header = (paths.VALUES / profile.file).read_text().split("\nlocust:")[0].replace("\n# ", " ")
    assert "no room to raise nginx.workerProcesses, up to 2 with --set haproxy.enabled=false" in header

import pytest

from loadtest.capacity import catalog, profiles, sizing
from loadtest.capacity.sizing import PodRequest


def plan(node_type, nodes, **kw):
    return sizing.plan_workers(sizing.node_shape(catalog.get(node_type)), nodes, **kw)


def test_c5_xlarge_pair_fits_six_workers():
    assert plan("c5.xlarge", 2).replicas == 6


def test_c5_4xlarge_pair_fits_thirty_workers():
    assert plan("c5.4xlarge", 2).replicas == 30


def test_m5_large_pair_with_1250m_workers_leaves_one_of_two_pending():
    p = plan("m5.large", 2, worker_cpu_m=1250)
    assert p.replicas == 1, "the seed saw the second 1250m worker stay Pending"
    assert p.best_case_replicas == 2


def test_m5_large_pair_fits_two_1100m_workers():
    assert plan("m5.large", 2, worker_cpu_m=1100).replicas == 2


def test_sixteen_c5_large_fit_sixteen_workers():
    assert plan("c5.large", 16).replicas == 16


def test_fewer_bigger_nodes_fit_more_workers_for_the_same_vcpus():
    assert plan("c5.xlarge", 2).replicas > plan("c5.large", 4).replicas


def test_master_grows_to_a_whole_core_beyond_1000_workers():
    small, big = plan("c5.4xlarge", 60), plan("c5.4xlarge", 80)
    assert small.replicas <= 1000 and small.master == sizing.MASTER_SMALL
    assert big.replicas > 1000 and big.master == sizing.MASTER_LARGE


def test_more_workers_than_one_master_was_measured_to_take_is_refused_with_what_to_do():
    with pytest.raises(sizing.SizingError, match="one Locust master was measured to take .5,000.*several releases"):
        plan("c5.18xlarge", 80)


def test_node_too_small_for_a_worker_is_refused_with_the_reason():
    with pytest.raises(sizing.SizingError, match="no 2000m worker fits"):
        plan("c5.large", 2, worker_cpu_m=2000)


def test_workers_below_100m_are_refused():
    with pytest.raises(sizing.SizingError, match="at least 100m"):
        plan("c5.large", 2, worker_cpu_m=50)


def test_memory_can_bind_before_cpu():
    p = plan("c5.large", 1, worker_memory_mi=2500, worker_cpu_m=100)
    assert p.replicas == 1, "a 4 GiB c5.large holds one 2500Mi worker whatever its CPU"


def test_pod_limit_binds_before_cpu_for_thin_workers():
    p = plan("c5.2xlarge", 1, worker_cpu_m=100, worker_memory_mi=10)
    # 58 pods per node, minus 4 DaemonSet pods, 2 CoreDNS pods and the master
    assert p.replicas == 58 - 4 - 3


@pytest.mark.parametrize("profile", profiles.PROFILES, ids=lambda p: p.file)
def test_every_shipped_profile_is_tight(profile):
    """One worker more than planned cannot schedule anywhere, so the cluster test can prove it Pending."""
    assert profile.plan.tight, "\n".join(profile.plan.explain())


@pytest.mark.parametrize("profile", profiles.PROFILES, ids=lambda p: p.file)
def test_every_planned_worker_and_cluster_pod_fits_the_worst_placement(profile):
    p = profile.plan
    free = p.free_cpu_m * p.nodes - p.cluster_pods_cpu_m
    assert p.replicas * p.worker_cpu_m <= free


def test_explanation_shows_each_step_of_the_arithmetic():
    text = "\n".join(plan("c5.xlarge", 2).explain())
    for part in ("capacity 4000m", "kube-reserved 80m", "allocatable 3920m", "425m", "free for pods 3495m",
                 "coredns 2 x 100m", "6 workers", "Pending"):
        assert part in text


def group(node_type, pods, **kw):
    return sizing.plan_group(sizing.node_shape(catalog.get(node_type)), pods, **kw)


def test_backend_targets_and_monitoring_fit_one_c5n_2xlarge():
    pods = (PodRequest("backend", 1000, 128, replicas=3), PodRequest("nginx-ingress", 1000, 256),
            PodRequest("haproxy", 1000, 512), PodRequest("prometheus", 250, 512))
    p = group("c5n.2xlarge", pods)
    assert p.nodes == 1
    assert p.free_cpu_m == 7910 - 425 and p.pods_cpu_m == 5250


def test_a_group_gets_the_fewest_nodes_that_hold_its_pods_in_every_placement():
    """c5.large nodes have 1505m free after the DaemonSets."""
    assert group("c5.large", (PodRequest("a", 1000, 0, replicas=2),), cluster_pods=()).nodes == 2
    assert group("c5.large", (PodRequest("a", 700, 0, replicas=3),), cluster_pods=()).nodes == 2
    assert group("c5.large", (PodRequest("a", 700, 0, replicas=2),), cluster_pods=()).nodes == 1
    # CoreDNS counts as if it landed here: 2 x 700m + 2 x 100m no longer fit one node
    assert group("c5.large", (PodRequest("a", 700, 0, replicas=2),)).nodes == 2


def test_a_group_plan_holds_against_the_worst_placement_not_the_best():
    """2 x 600m and 2 x 900m fit two c5.large nodes when packed 600 + 900 per node (3000m of 2 x 1505m), but a
    scheduler that puts both 600m pods on one node and a 900m pod on the other leaves 305m and 605m: the second
    900m pod stays Pending. Two nodes are therefore not enough."""
    pods = (PodRequest("small", 600, 0, replicas=2), PodRequest("big", 900, 0, replicas=2))
    assert group("c5.large", pods, cluster_pods=()).nodes > 2


def test_a_group_pod_bigger_than_a_node_is_refused_with_its_name():
    with pytest.raises(sizing.SizingError, match="nginx-ingress cannot fit an empty c5.large node"):
        group("c5.large", (PodRequest("nginx-ingress", 2000, 256),))


def test_group_explanation_counts_every_pod_and_the_nodes():
    pods = (PodRequest("backend", 1000, 128, replicas=3), PodRequest("haproxy", 1000, 512))
    text = "\n".join(group("c5n.2xlarge", pods).explain("Requested there"))
    for part in ("capacity 8000m", "allocatable 7910m", "free for pods 7485m", "backend 3 x 1000m", "haproxy 1000m",
                 "= 4000m", "coredns 2 x 100m", "-> 1 node(s): 4200m of 1 x 7485m free"):
        assert part in text

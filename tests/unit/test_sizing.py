import pytest

from loadtest import catalog, profiles, sizing


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


def test_master_grows_to_a_whole_core_beyond_100_workers():
    small, big = plan("c5.4xlarge", 2), plan("c5.4xlarge", 8)
    assert small.master == sizing.MASTER_SMALL
    assert big.replicas > 100 and big.master == sizing.MASTER_LARGE


def test_more_workers_than_one_master_handles_is_refused():
    with pytest.raises(sizing.SizingError, match="one Locust master"):
        plan("c5.18xlarge", 20)


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

import pytest

from loadtest.capacity import catalog

REQUIRED = ["m5.large", "m5.xlarge", "m5.4xlarge", "c5.large", "c5.xlarge", "c5.2xlarge", "c5.4xlarge",
            "c5.9xlarge", "c5n.large", "c5n.xlarge", "c5n.2xlarge", "c5n.4xlarge", "c5n.9xlarge", "c5n.18xlarge"]


@pytest.mark.parametrize("name", REQUIRED)
def test_catalog_covers_the_node_types_users_size_for(name):
    assert catalog.get(name).vcpu >= 2


@pytest.mark.parametrize("vcpu, reserved_m", [(2, 70), (4, 80), (8, 90), (16, 110), (36, 160), (72, 250)])
def test_eks_cpu_reservation_follows_the_ami_formula(vcpu, reserved_m):
    assert catalog.eks_kube_reserved_cpu_m(vcpu) == reserved_m


@pytest.mark.parametrize("name, max_pods", [("c5.large", 29), ("c5.xlarge", 58), ("c5.4xlarge", 234),
                                            ("c5n.18xlarge", 737)])
def test_max_pods_match_eni_max_pods(name, max_pods):
    assert catalog.get(name).max_pods == max_pods


def test_c5_xlarge_allocatable_matches_eks():
    c5 = catalog.get("c5.xlarge")
    assert c5.allocatable_cpu_m == 3920
    assert c5.allocatable_memory_mi == 8192 - (255 + 11 * 58) - 100


def test_c5_is_cheaper_than_m5_per_vcpu():
    assert catalog.get("c5.large").price_usd_hour / 2 < catalog.get("m5.large").price_usd_hour / 2


def test_unknown_node_type_error_lists_known_types():
    with pytest.raises(catalog.UnknownInstanceType, match=r"unknown node type 'c5.mega'.*c5.xlarge"):
        catalog.get("c5.mega")

"""EC2 instance catalog: the one place that knows vCPU, memory, pods, price and bandwidth per node type.

Everything that sizes something (values files, the planner, the local cluster's simulated nodes, the chart schema's
node-type enum) reads this table. Allocatable CPU and memory are computed with the EKS AMI's kubelet reservation
formulas, so they match what `kubectl describe node` shows on an EKS node of that type.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError

# Sources: EC2 instance type pages (vCPU, memory, network), amazon-vpc-cni-k8s eni-max-pods.txt (ENIs and IPv4
# addresses per ENI), us-east-1 Linux on-demand prices. "Up to" bandwidth is a burst figure; the baseline is what a
# sustained load test gets.
PRICE_REGION = "us-east-1"
# An EKS cluster's control plane (standard support), on top of its nodes.
EKS_CONTROL_PLANE_USD_HOUR = 0.10

EVICTION_HARD_MEMORY_MI = 100  # EKS AMI: --eviction-hard memory.available<100Mi


@dataclass(frozen=True)
class InstanceType:
    name: str
    vcpu: int
    memory_gib: float
    enis: int
    ipv4_per_eni: int
    price_usd_hour: float
    network_gbps_baseline: float
    network_gbps_burst: float
    arch: str = "amd64"

    @property
    def family(self) -> str:
        return self.name.split(".")[0]

    @property
    def max_pods(self) -> int:
        """Pods per node with the VPC CNI (no prefix delegation): ENIs × (IPv4 per ENI − 1) + 2."""
        return self.enis * (self.ipv4_per_eni - 1) + 2

    @property
    def cpu_m(self) -> int:
        return self.vcpu * 1000

    @property
    def memory_mi(self) -> int:
        # Nominal size; the kubelet reports a few per cent less. Memory never binds for Locust workers.
        return int(self.memory_gib * 1024)

    @property
    def kube_reserved_cpu_m(self) -> int:
        return eks_kube_reserved_cpu_m(self.vcpu)

    @property
    def kube_reserved_memory_mi(self) -> int:
        return eks_kube_reserved_memory_mi(self.max_pods)

    @property
    def allocatable_cpu_m(self) -> int:
        return self.cpu_m - self.kube_reserved_cpu_m

    @property
    def allocatable_memory_mi(self) -> int:
        return self.memory_mi - self.kube_reserved_memory_mi - EVICTION_HARD_MEMORY_MI

    @property
    def monthly_usd(self) -> float:
        """On-demand cost of one node for a month of 730 hours."""
        return round(self.price_usd_hour * 730, 2)


def eks_kube_reserved_cpu_m(vcpu: int) -> int:
    """EKS AMI kube-reserved CPU: 6 % of the first core, 1 % of the second, 0.5 % of cores 3–4, 0.25 % above."""
    tiers = ((1, 60.0), (1, 10.0), (2, 5.0), (max(vcpu - 4, 0), 2.5))
    reserved, left = 0.0, vcpu
    for cores, per_core_m in tiers:
        used = min(cores, left)
        reserved += used * per_core_m
        left -= used
    return int(reserved)


def eks_kube_reserved_memory_mi(max_pods: int) -> int:
    """EKS AMI kube-reserved memory: 255 MiB plus 11 MiB per pod the node may hold."""
    return 255 + 11 * max_pods


_I = InstanceType
INSTANCES: dict[str, InstanceType] = {
    i.name: i
    for i in (
        # general purpose
        _I("m5.large", 2, 8, 3, 10, 0.096, 0.75, 10),
        _I("m5.xlarge", 4, 16, 4, 15, 0.192, 1.25, 10),
        _I("m5.2xlarge", 8, 32, 4, 15, 0.384, 2.5, 10),
        _I("m5.4xlarge", 16, 64, 8, 30, 0.768, 5, 10),
        # compute optimised: the load generator is CPU-bound, so c5 gives more RPS per dollar
        _I("c5.large", 2, 4, 3, 10, 0.085, 0.75, 10),
        _I("c5.xlarge", 4, 8, 4, 15, 0.17, 1.25, 10),
        _I("c5.2xlarge", 8, 16, 4, 15, 0.34, 2.5, 10),
        _I("c5.4xlarge", 16, 32, 8, 30, 0.68, 5, 10),
        _I("c5.9xlarge", 36, 72, 8, 30, 1.53, 12, 12),
        _I("c5.12xlarge", 48, 96, 8, 30, 2.04, 12, 12),
        _I("c5.18xlarge", 72, 144, 15, 50, 3.06, 25, 25),
        # network optimised: for large payloads, where a node's bandwidth caps RPS before its CPU does
        _I("c5n.large", 2, 5.25, 3, 10, 0.108, 3, 25),
        _I("c5n.xlarge", 4, 10.5, 4, 15, 0.216, 5, 25),
        _I("c5n.2xlarge", 8, 21, 4, 15, 0.432, 10, 25),
        _I("c5n.4xlarge", 16, 42, 8, 30, 0.864, 15, 25),
        _I("c5n.9xlarge", 36, 96, 8, 30, 1.944, 50, 50),
        _I("c5n.18xlarge", 72, 192, 15, 50, 3.888, 100, 100),
    )
}


class UnknownInstanceType(UsageError):
    pass


def get(name: str) -> InstanceType:
    try:
        return INSTANCES[name]
    except KeyError:
        raise UnknownInstanceType(
            f"unknown node type {name!r}; known types: {', '.join(INSTANCES)} "
            "(add it to loadtest/capacity/catalog.py to size for it)"
        ) from None

"""How many Locust workers fit a node group, and why.

The rule from the field (Locust on EKS): a worker uses at most one core, so give each worker one whole vCPU
(request = limit = 1000m) and fill the nodes with as many such workers as the scheduler can place. Thin workers
(100m) plateau early; fat ones waste nothing because a worker cannot use more than a core anyway.

What the scheduler sees on a node is its allocatable CPU minus the DaemonSets that run on every node. Cluster pods
that land somewhere among the workers (CoreDNS, the Locust master) take the leftovers; the plan counts the worst
placement of those pods, so every planned worker schedules whatever the scheduler decides.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

from ..errors import UsageError
from . import catalog

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


@dataclass(frozen=True)
class PodRequest:
    name: str
    cpu_m: int
    memory_mi: int
    replicas: int = 1


# What an EKS node group with Container Insights runs on every node (requests as the add-ons ship them; the
# CloudWatch agent and fluentd figures are those measured in the Locust-on-EKS write-up).
EKS_DAEMONSETS: tuple[PodRequest, ...] = (
    PodRequest("aws-node", 25, 0),
    PodRequest("kube-proxy", 100, 0),
    PodRequest("cloudwatch-agent", 200, 200),
    PodRequest("fluentd", 100, 200),
)
# Cluster add-ons that are not per node but still land on one of the worker nodes.
EKS_CLUSTER_PODS: tuple[PodRequest, ...] = (PodRequest("coredns", 100, 70, replicas=2),)

WORKER_CPU_M = 1000


def thin_worker_warning(worker_cpu_m: int) -> str | None:
    """Why a worker below one core is a mistake, in the field's numbers; None for a whole core or more."""
    if worker_cpu_m >= WORKER_CPU_M:
        return None
    return (f"workers at {worker_cpu_m}m CPU: a worker uses up to one core, and a thinner one plateaus early (in the "
            "field: 5 workers at 100m gave ~230 RPS, at 500m 1,150, and 2 workers at 1100m 1,450); give each worker "
            f"{WORKER_CPU_M}m and fewer replicas")
WORKER_MEMORY_MI = 512
# The master aggregates its workers' heartbeats (1 s) and reports (3 s). benchmarks/master.py (a real master with the
# plugin, against simulated workers sending a real worker's messages; docs/sizing.md) measured it on one core: 10 % of
# it and 96 MiB at 1,000 workers, 56 % and 321 MiB at 5,000 (the highest of three runs), no heartbeat missed and no
# report dropped. 200m covers 1,000 workers twice over; a whole core covers 5,000, the most measured, and the plan
# refuses more per master.
MASTER_SMALL = PodRequest("locust-master", 200, 256)
MASTER_LARGE = PodRequest("locust-master", 1000, 1024)
MASTER_LARGE_ABOVE_WORKERS = 1000
MAX_WORKERS_PER_MASTER = 5000


@dataclass(frozen=True)
class NodeShape:
    """What one node offers the scheduler."""

    name: str
    cpu_m: int
    memory_mi: int
    allocatable_cpu_m: int
    allocatable_memory_mi: int
    max_pods: int
    labels: dict[str, str] = field(default_factory=dict, hash=False)


def node_shape(instance: catalog.InstanceType) -> NodeShape:
    return NodeShape(
        name=instance.name,
        cpu_m=instance.cpu_m,
        memory_mi=instance.memory_mi,
        allocatable_cpu_m=instance.allocatable_cpu_m,
        allocatable_memory_mi=instance.allocatable_memory_mi,
        max_pods=instance.max_pods,
        labels={
            "node.kubernetes.io/instance-type": instance.name,
            "kubernetes.io/arch": instance.arch,
            "kubernetes.io/os": "linux",
        },
    )


def master_for(workers: int) -> PodRequest:
    return MASTER_LARGE if workers > MASTER_LARGE_ABOVE_WORKERS else MASTER_SMALL


class SizingError(UsageError):
    pass


@dataclass(frozen=True)
class WorkerPlan:
    shape: NodeShape
    nodes: int
    worker_cpu_m: int
    worker_memory_mi: int
    daemonsets: tuple[PodRequest, ...]
    cluster_pods: tuple[PodRequest, ...]  # includes the master
    replicas: int  # workers that schedule in every placement of the cluster pods
    best_case_replicas: int  # workers that schedule in the kindest placement

    @property
    def daemonset_cpu_m(self) -> int:
        return sum(d.cpu_m * d.replicas for d in self.daemonsets)

    @property
    def free_cpu_m(self) -> int:
        """CPU per node left for pods after DaemonSets."""
        return self.shape.allocatable_cpu_m - self.daemonset_cpu_m

    @property
    def cluster_pods_cpu_m(self) -> int:
        return sum(p.cpu_m * p.replicas for p in self.cluster_pods)

    @property
    def workers_per_empty_node(self) -> int:
        return self.free_cpu_m // self.worker_cpu_m

    @property
    def tight(self) -> bool:
        """True when one worker more than planned cannot schedule in any placement."""
        return self.replicas == self.best_case_replicas

    @property
    def master(self) -> PodRequest:
        return next(p for p in self.cluster_pods if p.name == "locust-master")

    @property
    def requested_cpu_fraction(self) -> float:
        """Share of the node group's allocatable CPU that DaemonSets, cluster pods and workers request."""
        used = self.nodes * self.daemonset_cpu_m + self.cluster_pods_cpu_m + self.replicas * self.worker_cpu_m
        return used / (self.nodes * self.shape.allocatable_cpu_m)

    def explain(self) -> list[str]:
        """The arithmetic, one line per step, as written into values-file headers and printed by `loadtest size`."""
        lines = _node_cpu_lines(self.shape, self.daemonsets)
        lines.append(f"Cluster pods among the workers: {', '.join(_listed(self.cluster_pods))} = "
                     f"{self.cluster_pods_cpu_m}m")
        per_node = self.workers_per_empty_node
        leftover = self.free_cpu_m - per_node * self.worker_cpu_m
        lines.append(
            f"Workers at {self.worker_cpu_m}m (request = limit): {per_node} per empty node, "
            f"{leftover}m left over per node"
        )
        lines.append(
            f"Worst placement of the cluster pods over {self.nodes} node(s) -> {self.replicas} workers "
            f"({self.requested_cpu_fraction:.0%} of allocatable CPU requested)"
        )
        if self.tight:
            lines.append(f"One more worker ({self.replicas + 1}) cannot fit anywhere: it stays Pending (Insufficient cpu)")
        else:
            lines.append(
                f"A kind placement fits up to {self.best_case_replicas}; more than {self.replicas} "
                "may stay Pending depending on where the cluster pods land"
            )
        return lines


def _node_cpu_lines(shape: NodeShape, daemonsets: tuple[PodRequest, ...]) -> list[str]:
    """Capacity, kube-reserved, allocatable, DaemonSets and what is left for pods on one node, one line each."""
    lines = [f"Per node CPU:   capacity {shape.cpu_m}m"]
    if shape.cpu_m != shape.allocatable_cpu_m:
        lines.append(
            f"  - kube-reserved {shape.cpu_m - shape.allocatable_cpu_m}m (EKS: 6 % of core 1, 1 % of core 2, "
            "0.5 % of cores 3-4, 0.25 % above)"
        )
    lines.append(f"  = allocatable {shape.allocatable_cpu_m}m")
    ds = ", ".join(f"{d.name} {d.cpu_m}m" for d in daemonsets)
    lines.append(f"  - pods on every node {_cpu_sum(daemonsets)}m ({ds})")
    lines.append(f"  = free for pods {shape.allocatable_cpu_m - _cpu_sum(daemonsets)}m")
    return lines


def _cpu_sum(pods: tuple[PodRequest, ...]) -> int:
    return sum(p.cpu_m * p.replicas for p in pods)


def _listed(pods: tuple[PodRequest, ...]) -> list[str]:
    """'coredns 2 x 100m', 'locust-master 200m': each pod's CPU request, with its replicas."""
    return [f"{p.name} {p.replicas} x {p.cpu_m}m" if p.replicas > 1 else f"{p.name} {p.cpu_m}m" for p in pods]


def _wrapped(head: str, items: list[str], tail: str, width: int = 110) -> list[str]:
    """head, the items joined by ", " and tail, broken between items into lines of at most `width` (indented)."""
    lines, line = [], head
    for i, item in enumerate(items):
        text = item + ("," if i < len(items) - 1 else tail)
        if line not in (head, "  ") and len(line) + len(text) > width:
            lines.append(line.rstrip())
            line = "  "
        line += text + " "
    return lines + [line.rstrip()]


@dataclass(frozen=True)
class GroupPlan:
    """How many nodes of a node group hold a set of pods (the backend, targets and monitoring) whatever node the
    scheduler puts each on (see `plan_group`)."""

    shape: NodeShape
    daemonsets: tuple[PodRequest, ...]
    pods: tuple[PodRequest, ...]  # what the group is for
    cluster_pods: tuple[PodRequest, ...]  # add-ons (CoreDNS) that may land here too, counted as if they do
    nodes: int

    @property
    def free_cpu_m(self) -> int:
        """CPU per node left for pods after DaemonSets."""
        return self.shape.allocatable_cpu_m - _cpu_sum(self.daemonsets)

    @property
    def pods_cpu_m(self) -> int:
        return _cpu_sum(self.pods)

    @property
    def requested_cpu_fraction(self) -> float:
        """Share of the group's allocatable CPU that DaemonSets, the pods and the cluster pods request."""
        used = self.nodes * _cpu_sum(self.daemonsets) + self.pods_cpu_m + _cpu_sum(self.cluster_pods)
        return used / (self.nodes * self.shape.allocatable_cpu_m)

    def explain(self, what: str) -> list[str]:
        """The arithmetic, one line per step; `what` names the pods (e.g. "Backend, targets and monitoring")."""
        lines = _node_cpu_lines(self.shape, self.daemonsets)
        lines += _wrapped(f"{what}: ", _listed(self.pods), f" = {self.pods_cpu_m}m")
        if self.cluster_pods:
            lines += _wrapped("Cluster pods that may land here too: ", _listed(self.cluster_pods),
                              f" = {_cpu_sum(self.cluster_pods)}m")
        total = self.pods_cpu_m + _cpu_sum(self.cluster_pods)
        lines.append(
            f"-> {self.nodes} node(s): {total}m of {self.nodes} x {self.free_cpu_m}m free, whatever node each pod "
            f"lands on ({self.requested_cpu_fraction:.0%} of allocatable CPU requested)"
        )
        return lines


def _fits_anywhere(shape: NodeShape, daemonsets, singles: list[PodRequest], nodes: int) -> bool:
    """True when each pod finds a node whatever order and nodes the others got: a pod that found none would mean
    every node has less than its request left, i.e. the others take more than nodes x (free - its request). Checked
    for CPU, memory and pod count alike."""
    free = (shape.allocatable_cpu_m - sum(d.cpu_m * d.replicas for d in daemonsets),
            shape.allocatable_memory_mi - sum(d.memory_mi * d.replicas for d in daemonsets),
            shape.max_pods - sum(d.replicas for d in daemonsets))
    total = (sum(p.cpu_m for p in singles), sum(p.memory_mi for p in singles), len(singles))
    for p in singles:
        need = (p.cpu_m, p.memory_mi, 1)
        for f, t, n in zip(free, total, need):
            if n > f or t - n > nodes * (f - n):
                return False
    return True


def plan_group(shape: NodeShape, pods: tuple[PodRequest, ...], *, daemonsets: tuple[PodRequest, ...] = EKS_DAEMONSETS,
               cluster_pods: tuple[PodRequest, ...] = EKS_CLUSTER_PODS, max_nodes: int = 100) -> GroupPlan:
    """Nodes of `shape` that hold `pods` and `cluster_pods` in every placement (CPU, memory, pod count): the fewest
    for which `_fits_anywhere` proves it. That bound is exact for one node; for more, it may ask one node more than
    the scheduler's worst placement needs, never one less."""
    singles = [p for p in pods + cluster_pods for _ in range(p.replicas)]
    free_cpu = shape.allocatable_cpu_m - _cpu_sum(daemonsets)
    if too_big := [p.name for p in singles if not _fits_anywhere(shape, daemonsets, [p], 1)]:
        raise SizingError(f"{', '.join(sorted(set(too_big)))} cannot fit an empty {shape.name} node ({free_cpu}m CPU "
                          "left after DaemonSets); choose a bigger node type for them or give them less")
    nodes = next((n for n in range(1, max_nodes + 1) if _fits_anywhere(shape, daemonsets, singles, n)), None)
    if nodes is None:
        raise SizingError(f"{max_nodes} {shape.name} nodes cannot hold {', '.join(_listed(pods))} in every "
                          "placement; choose a bigger node type or give the pods less")
    return GroupPlan(shape, daemonsets, pods, cluster_pods, nodes)


def _set_partitions(items: list) -> list[list[list]]:
    """All ways to split items into non-empty groups (each group lands on one node)."""
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    out = []
    for k in range(len(rest) + 1):
        for together in combinations(range(len(rest)), k):
            group = [first] + [rest[i] for i in together]
            others = [rest[i] for i in range(len(rest)) if i not in together]
            out.extend([group] + p for p in _set_partitions(others))
    return out


def _workers_on_node(shape: NodeShape, free_cpu_m: int, free_memory_mi: int, free_pods: int,
                     worker_cpu_m: int, worker_memory_mi: int) -> int:
    if free_cpu_m < 0 or free_memory_mi < 0 or free_pods < 0:
        return -1
    by_memory = free_memory_mi // worker_memory_mi if worker_memory_mi else free_pods
    return min(free_cpu_m // worker_cpu_m, by_memory, free_pods)


def plan_workers(
    shape: NodeShape,
    nodes: int,
    *,
    worker_cpu_m: int = WORKER_CPU_M,
    worker_memory_mi: int = WORKER_MEMORY_MI,
    daemonsets: tuple[PodRequest, ...] = EKS_DAEMONSETS,
    cluster_pods: tuple[PodRequest, ...] = EKS_CLUSTER_PODS,
    master: PodRequest | None = None,
) -> WorkerPlan:
    """Workers that fit `nodes` nodes of `shape`, guaranteed whatever node the cluster pods and the master land on.

    The master is sized from the worker count (see `master_for`) unless given.
    """
    if nodes < 1:
        raise SizingError(f"nodes must be at least 1, got {nodes}")
    if worker_cpu_m < 100:
        raise SizingError(f"worker CPU must be at least 100m, got {worker_cpu_m}m")
    # A bigger master can lower the worker count, which can make the master smaller again: settle on the smaller.
    masters = (master,) if master else (MASTER_SMALL, MASTER_LARGE)
    plans = [
        _plan(shape, nodes, worker_cpu_m, worker_memory_mi, daemonsets, cluster_pods + (m,)) for m in masters
    ]
    fitting = [p for p in plans if master or master_for(p.replicas) == p.master]
    plan = fitting[0] if fitting else plans[-1]
    if plan.replicas > MAX_WORKERS_PER_MASTER:
        raise SizingError(
            f"{plan.replicas} workers exceed what one Locust master was measured to take ({MAX_WORKERS_PER_MASTER:,}, "
            "benchmarks/master.py); split the load over several releases, each with its own master and at most "
            f"{MAX_WORKERS_PER_MASTER:,} workers, and add their RPS"
        )
    return plan


def _plan(shape, nodes, worker_cpu_m, worker_memory_mi, daemonsets, cluster_pods) -> WorkerPlan:
    free_cpu = shape.allocatable_cpu_m - sum(d.cpu_m * d.replicas for d in daemonsets)
    free_mem = shape.allocatable_memory_mi - sum(d.memory_mi * d.replicas for d in daemonsets)
    free_pods = shape.max_pods - sum(d.replicas for d in daemonsets)
    if free_cpu < worker_cpu_m:
        raise SizingError(
            f"a {shape.name} node has {free_cpu}m CPU left after DaemonSets: no {worker_cpu_m}m worker fits; "
            "choose a bigger node type or smaller workers"
        )
    singles = [p for p in cluster_pods for _ in range(p.replicas)]
    totals = []
    for groups in _set_partitions(singles):
        if len(groups) > nodes:
            continue
        counts = [
            _workers_on_node(
                shape,
                free_cpu - sum(p.cpu_m for p in g),
                free_mem - sum(p.memory_mi for p in g),
                free_pods - len(g),
                worker_cpu_m,
                worker_memory_mi,
            )
            for g in groups
        ]
        if min(counts, default=0) < 0:
            continue  # these cluster pods cannot share one node; the scheduler never places them so
        empty = _workers_on_node(shape, free_cpu, free_mem, free_pods, worker_cpu_m, worker_memory_mi)
        totals.append(sum(counts) + (nodes - len(groups)) * empty)
    if not totals:
        raise SizingError(f"the cluster pods ({', '.join(p.name for p in singles)}) do not fit {nodes} {shape.name}")
    return WorkerPlan(
        shape=shape,
        nodes=nodes,
        worker_cpu_m=worker_cpu_m,
        worker_memory_mi=worker_memory_mi,
        daemonsets=daemonsets,
        cluster_pods=cluster_pods,
        replicas=min(totals),
        best_case_replicas=max(totals),
    )

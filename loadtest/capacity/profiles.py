"""The node groups the shipped values files are sized for: one profile per file in values/."""
from __future__ import annotations

from dataclasses import dataclass

from . import catalog, chartpods, sizing
from .sizing import PodRequest

# What Locust loads in a node-type values file: the NGINX Ingress Controller. Both targets run there, so the other
# one is a `--set locust.target=<name>` away.
TARGET = "nginx"
# The label naming the node group a node belongs to: on the local cluster's nodes, and on EKS's through the files
# loadtest.capacity.clusterfiles writes.
NODE_GROUP_LABEL = "loadtest.dev/node-group"


@dataclass(frozen=True)
class Profile:
    file: str  # values/<file>
    node_type: str | None  # EC2 instance type, None for a generic local cluster (no node selector)
    nodes: int
    shape: sizing.NodeShape
    daemonsets: tuple[PodRequest, ...]
    cluster_pods: tuple[PodRequest, ...]  # add-ons such as CoreDNS; the plan adds the master (and shared_backend)
    description: str
    # Where the backend, targets and monitoring run: their own node group, so they never take a worker's CPU
    # (the NGINX method puts the Ingress Controller and the backend on nodes of their own); its node count is
    # what their requests need (target_plan).
    target_node_type: str | None = None
    # On a single-node cluster the backend shares the node: one small replica, counted among the cluster pods.
    shared_backend: PodRequest | None = None

    @property
    def plan(self) -> sizing.WorkerPlan:
        shared = (self.shared_backend,) if self.shared_backend else ()
        return sizing.plan_workers(
            self.shape, self.nodes, daemonsets=self.daemonsets, cluster_pods=self.cluster_pods + shared
        )

    @property
    def target_group(self) -> dict:
        """The values that put every component but Locust (backend, both targets, monitoring) on the target node
        group, all enabled; {} without one."""
        if not self.target_node_type:
            return {}
        return {c: {"nodeType": self.target_node_type, "enabled": True} for c in chartpods.components()}

    def target_group_plan(self, overrides: dict | None = None,
                          extra: tuple[PodRequest, ...] = ()) -> sizing.GroupPlan | None:
        """Nodes of the target node type that hold its pods, as the chart's values size them (with `overrides`,
        e.g. a target's CPUs raised), the `extra` pods (e.g. the old pods of a rolling update) and the cluster pods
        that may land there; None without a target group."""
        if not self.target_node_type:
            return None
        values = chartpods.values(chartpods.merged(self.target_group, overrides or {}))
        return sizing.plan_group(sizing.node_shape(catalog.get(self.target_node_type)),
                                 chartpods.pods(values) + extra, daemonsets=self.daemonsets,
                                 cluster_pods=self.cluster_pods)

    @property
    def target_plan(self) -> sizing.GroupPlan | None:
        return self.target_group_plan()

    @property
    def target_nodes(self) -> int:
        """Nodes the target node group needs (0 without one): the cluster layer creates that many."""
        plan = self.target_plan
        return plan.nodes if plan else 0


# 8 vCPU, 10 Gbps baseline: on one node, the backend's 3 CPUs, both targets at 1 CPU and the monitoring, with room
# for a target-cpus sweep to add a CPU (the header of each values file counts it).
TARGET_NODE_TYPE = "c5n.2xlarge"


def eks(node_type: str, nodes: int, description: str) -> Profile:
    return Profile(
        file=node_type.replace(".", "-") + ".yaml",
        node_type=node_type,
        nodes=nodes,
        shape=sizing.node_shape(catalog.get(node_type)),
        daemonsets=sizing.EKS_DAEMONSETS,
        cluster_pods=sizing.EKS_CLUSTER_PODS,
        description=description,
        target_node_type=TARGET_NODE_TYPE,
    )


# A single-node kind or minikube cluster on a 4-core laptop: its control plane runs on the same node, so the
# static pods count like DaemonSets (requests as kubeadm sets them).
LOCAL_SHAPE = sizing.NodeShape(
    name="local", cpu_m=4000, memory_mi=8192, allocatable_cpu_m=4000, allocatable_memory_mi=8192, max_pods=110,
    labels={"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"},
)
LOCAL_BACKEND = PodRequest("backend", 500, 128)
LOCAL_NODE_PODS: tuple[PodRequest, ...] = (
    PodRequest("kindnet", 100, 50),
    PodRequest("kube-proxy", 0, 0),
    PodRequest("etcd", 100, 100),
    PodRequest("kube-apiserver", 250, 0),
    PodRequest("kube-controller-manager", 200, 0),
    PodRequest("kube-scheduler", 100, 0),
)

PROFILES: tuple[Profile, ...] = (
    eks("m5.large", 2, "the Locust-on-EKS starting point; memory sits idle, prefer c5.large"),
    eks("c5.large", 2, "cheapest per worker core; more nodes mean more DaemonSet overhead"),
    eks("c5.xlarge", 2, "the measured sweet spot for small tests: 6 workers on 2 nodes"),
    eks("c5.2xlarge", 2, "14 workers on 2 nodes"),
    eks("c5.4xlarge", 2, "30 workers on 2 nodes: ~15,000 RPS in the Locust-on-EKS measurements"),
    eks("c5n.xlarge", 2, "network-optimised: for large payloads where bandwidth caps RPS before CPU"),
    Profile(
        file="local.yaml",
        node_type=None,
        nodes=1,
        shape=LOCAL_SHAPE,
        daemonsets=LOCAL_NODE_PODS,
        cluster_pods=(PodRequest("coredns", 100, 70, replicas=2),),
        description="a single-node kind/minikube cluster with 4 CPUs (no instance-type selector)",
        shared_backend=LOCAL_BACKEND,
    ),
)


def by_file(name: str) -> Profile:
    for p in PROFILES:
        if p.file == name:
            return p
    raise KeyError(f"no profile writes values/{name}; profiles: {', '.join(p.file for p in PROFILES)}")

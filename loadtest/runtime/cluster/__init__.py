"""A local Kubernetes cluster that schedules like an EKS node group: the real control plane, simulated nodes.

kube-apiserver, kube-controller-manager and kube-scheduler (one binary built by scripts/install-cluster-tools),
Debian's etcd, and KWOK in place of the kubelets: it marks nodes Ready and pods Running without running containers.
Nodes are made from the instance catalog (capacity, allocatable, max pods, EKS labels) and kube-system gets the
DaemonSets and cluster pods the sizing assumes, so the scheduler sees what it would see on EKS.

    pki           the CA, the apiserver's and admin's certificates, the kubeconfig
    api           the apiserver's REST API (reads), kubectl (writes), polling
    controlplane  Cluster: start, stop, healthy; up() and down() (its processes: runtime.processes, with PID files)
    nodegroups    simulated EKS node groups and their kube-system add-ons
    network       the cluster's address ranges (inside 198.18.0.0/15)
    node          the real node: containerd, kubelet, kube-proxy, the CNI bridge, CoreDNS

    from loadtest.runtime import cluster
    c = cluster.up()                                        # ~/.cache/loadtest/cluster, reused while healthy
    cluster.use_node_group(c, cluster.profile_for("c5-xlarge.yaml"))
    cluster.down()
"""
from __future__ import annotations

from .api import ApiClient, pods, wait_for
from .controlplane import COMPONENTS, DEFAULT_STATE_DIR, Cluster, down, up
from .errors import ClusterError
from .network import NODE_IP, POD_CIDR, SERVICE_CIDR, SERVICE_IP
from .node import NAME as NODE_NAME
from .node import RealNode
from .nodegroups import (ADDON_LABEL, PAUSE_IMAGE, addon_objects, create_nodes, delete_addons,
                         delete_nodes, install_addons, node_objects, profile_for, simulated_nodes, use_node_group,
                         use_node_groups, wait_addons_ready, wait_nodes_ready)

__all__ = [
    "ADDON_LABEL", "COMPONENTS", "DEFAULT_STATE_DIR", "NODE_IP", "NODE_NAME", "PAUSE_IMAGE", "POD_CIDR", "SERVICE_CIDR",
    "SERVICE_IP", "ApiClient", "Cluster", "RealNode", "ClusterError", "addon_objects", "create_nodes", "delete_addons", "delete_nodes",
    "down", "install_addons", "node_objects", "pods", "profile_for", "simulated_nodes", "up", "use_node_group", "use_node_groups", "wait_addons_ready",
    "wait_for", "wait_nodes_ready",
]

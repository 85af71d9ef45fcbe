"""`loadtest cluster`: a local control plane with simulated EKS nodes (KWOK), see loadtest.runtime.cluster, and
optionally one real node that runs the chart's pods (like kind, with images built here).

    loadtest cluster up                      # prints the kubeconfig path
    loadtest cluster nodes c5-xlarge.yaml    # the node group values/c5-xlarge.yaml is sized for
    helm --kubeconfig ~/.cache/loadtest/cluster/kubeconfig install lt charts/loadtest -f values/c5-xlarge.yaml
    loadtest cluster down

    loadtest cluster up --real-node          # root; scripts/install-node-tools first (≈ 15 min cold)
    helm --kubeconfig ~/.cache/loadtest/cluster/kubeconfig install lt charts/loadtest -f values/local.yaml \
        -f examples/real-node/values.yaml
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..runtime import cluster

NOT_UP = "cluster is not up (loadtest cluster up)"


def register(sub) -> None:
    p = sub.add_parser("cluster", help="local control plane with simulated EKS nodes (KWOK)",
                       description=cluster.__doc__.split("\n\n")[0])
    state = argparse.ArgumentParser(add_help=False)
    state.add_argument("--state-dir", type=Path, default=cluster.DEFAULT_STATE_DIR,
                       help=f"default {cluster.DEFAULT_STATE_DIR}")
    actions = p.add_subparsers(dest="action", required=True, metavar="action")
    a = actions.add_parser("up", parents=[state], help="start the cluster (no-op if it is up), print the kubeconfig")
    a.add_argument("--timeout", type=float, default=None,
                   help="seconds to wait for the control plane (default 60; 180 with --real-node)")
    a.add_argument("--real-node", action="store_true",
                   help="also start a real node on this machine (containerd, kubelet, kube-proxy, CoreDNS; root): "
                        "the chart's pods run for real, from images built by scripts/install-node-tools")
    a.set_defaults(func=cmd_up)
    a = actions.add_parser("down", parents=[state], help="stop the cluster's processes")
    a.set_defaults(func=cmd_down)
    a = actions.add_parser("status", parents=[state], help="component PIDs, API address and nodes")
    a.set_defaults(func=cmd_status)
    a = actions.add_parser("nodes", parents=[state], help="replace the nodes with a node group and its add-ons")
    a.add_argument("profile", help="values file the group is sized for (c5-xlarge.yaml) or an instance type")
    a.add_argument("--count", type=int, help="nodes (default: as many as the profile assumes)")
    a.set_defaults(func=cmd_nodes)


def cmd_up(args) -> int:
    timeout = args.timeout or (180 if args.real_node else 60)
    c = cluster.up(args.state_dir, timeout, args.real_node)  # ClusterError: loadtest exits 1 with its message
    node = f", real node {cluster.NODE_NAME} at {cluster.NODE_IP}" if c.node.present else ""
    print(f"cluster up at {c.server}{node}\nexport KUBECONFIG={c.kubeconfig}")
    return 0


def cmd_down(args) -> int:
    cluster.down(args.state_dir)
    print("cluster stopped")
    return 0


def cmd_status(args) -> int:
    c = cluster.Cluster(args.state_dir)
    running = {**c.running(), **(c.node.processes.running() if c.node.present else {})}
    for component, pid in running.items():
        print(f"{component:<24} {f'pid {pid}' if pid else 'not running'}")
    if not c.healthy():
        raise cluster.ClusterError(NOT_UP)
    nodes = c.api_get("/api/v1/nodes")["items"]
    print(f"api {c.server}, kubeconfig {c.kubeconfig}, {len(nodes)} nodes")
    for n in nodes:
        labels, allocatable = n["metadata"]["labels"], n["status"]["allocatable"]
        print(f"  {n['metadata']['name']:<20} {labels.get('node.kubernetes.io/instance-type', '-'):<14} "
              f"{labels.get('topology.kubernetes.io/zone', '-'):<12} allocatable cpu {allocatable['cpu']}")
    return 0


def cmd_nodes(args) -> int:
    # Bad input exits 2 as loadtest.commands.main does for a UsageError, but returned rather than raised
    # (main turns a UsageError into SystemExit), so a caller of main() gets the code back.
    if args.count is not None and args.count < 1:
        return bad_input(f"--count {args.count}: a node group has at least 1 node")
    try:
        profile = cluster.profile_for(args.profile, args.count)
    except (KeyError, ValueError) as e:  # unknown values file or instance type; the message lists the known ones
        return bad_input(e.args[0])
    c = cluster.Cluster(args.state_dir)
    if not c.healthy():
        raise cluster.ClusterError(NOT_UP)
    names = cluster.use_node_group(c, profile, args.count)
    print(f"{len(names)} x {profile.shape.name} Ready ({', '.join(names)}) with "
          f"{', '.join(d.name for d in profile.daemonsets)} on every node and "
          f"{', '.join(f'{p.name} x{p.replicas}' for p in profile.cluster_pods)}")
    return 0


def bad_input(message: str) -> int:
    print(f"loadtest cluster nodes: {message}", file=sys.stderr)
    return 2

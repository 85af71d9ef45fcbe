"""The node groups a values file assumes, as the files that make them on EKS: an eksctl ClusterConfig, or Karpenter
NodePools and their EC2NodeClass.

A node type's values file assumes two node groups: the generator's (its instance type, the node count in its
header) and the targets' (profiles.TARGET_NODE_TYPE, as many nodes as the target plan needs). `node_groups` gives
both from a profile, with the counts of the same sizing code that writes the values file's header; the eksctl file
makes them as managed node groups of exactly those counts, the Karpenter file as NodePools that may launch only that
instance type and at most that CPU. `read_node_groups` reads a written ClusterConfig back, so the cluster layer can
make its simulated nodes from the file itself (loadtest.runtime.cluster.nodegroups).

What the plan counts and the files must keep true: the chart selects each group by `node.kubernetes.io/instance-type`
(the kubelet sets it from the instance type), its pods tolerate no taint (so the groups have none), and every node
runs the DaemonSets sizing.EKS_DAEMONSETS counts and no other; CoreDNS's replicas (sizing.EKS_CLUSTER_PODS) land
somewhere among them. eksctl would add metrics-server, which the plan does not count: the file lists its add-ons.
"""
from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

import jsonschema
import yaml

from ..errors import UsageError
from . import catalog, profiles, sizing

EKSCTL_API = "eksctl.io/v1alpha5"
NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.k8s.aws/v1"
# The Kubernetes minor version the local control plane runs (tools/k8s/go.mod), on which the cluster layer schedules
# the chart; EKS supports it.
KUBERNETES_VERSION = "1.33"
DEFAULT_REGION = "us-east-1"  # where the catalog's prices are from
DEFAULT_CLUSTER = "loadtest"
TARGET_GROUP = "targets"
NODE_CLASS = "loadtest"
# The EKS add-ons the plan counts: aws-node (vpc-cni) and kube-proxy on every node, CoreDNS among the pods.
ADDONS = ("vpc-cni", "kube-proxy", "coredns")
ADDON_DAEMONSETS = ("aws-node", "kube-proxy")  # the DaemonSets of those add-ons


REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]+$")  # us-east-1, ap-southeast-2, us-gov-west-1
CLUSTER_NAME = re.compile(r"^[a-zA-Z][-a-zA-Z0-9]{0,99}$")  # EKS's and eksctl's rule


def check_region(text: str) -> None:
    if not REGION.match(text):
        raise UsageError(f"{text!r} is not an AWS region (like {DEFAULT_REGION} or eu-west-1)")


def check_cluster_name(text: str) -> None:
    if not CLUSTER_NAME.match(text):
        raise UsageError(f"{text!r} is not an EKS cluster name: a letter, then letters, digits and '-', at most 100 "
                         "characters")


@dataclasses.dataclass(frozen=True)
class NodeGroup:
    name: str
    shape: sizing.NodeShape  # its labels: the instance type's and the group's own
    nodes: int
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, effect)

    @property
    def instance_type(self) -> str:
        return self.shape.name

    @property
    def labels(self) -> dict[str, str]:
        """The labels the files give the group's nodes (the kubelet adds the instance type's)."""
        return {profiles.NODE_GROUP_LABEL: self.name}


def _labelled(shape: sizing.NodeShape, name: str, extra: dict | None = None) -> sizing.NodeShape:
    return dataclasses.replace(shape, labels={**shape.labels, profiles.NODE_GROUP_LABEL: name, **(extra or {})})


def node_groups(profile: profiles.Profile, count: int | None = None) -> list[NodeGroup]:
    """The generator's node group (named after the values file: c5-xlarge), `count` nodes or the profile's, and the
    target node group, if the profile has one."""
    name = Path(profile.file).stem
    groups = [NodeGroup(name, _labelled(profile.shape, name), count or profile.nodes)]
    if profile.target_node_type:
        shape = sizing.node_shape(catalog.get(profile.target_node_type))
        groups.append(NodeGroup(TARGET_GROUP, _labelled(shape, TARGET_GROUP), profile.target_nodes))
    return groups


def _eks_groups(profile: profiles.Profile) -> list[NodeGroup]:
    if not profile.node_type or not profile.target_node_type:
        raise UsageError(f"values/{profile.file} is not sized for EKS node groups: give an EC2 node type")
    if profile.node_type == profile.target_node_type:
        raise UsageError(f"the generator's node type is the targets' ({profile.node_type}): the chart tells the two "
                         "node groups apart by instance type only, so choose another (--choose) for the generator")
    return node_groups(profile)


def hourly_usd(profile: profiles.Profile) -> float:
    """On-demand cost of both node groups and the EKS control plane for an hour."""
    nodes = sum(g.nodes * catalog.get(g.instance_type).price_usd_hour for g in _eks_groups(profile))
    return round(nodes + catalog.EKS_CONTROL_PLANE_USD_HOUR, 3)


def cost_line(profile: profiles.Profile) -> str:
    parts = [f"{g.nodes} x {g.instance_type} {g.nodes * catalog.get(g.instance_type).price_usd_hour:g}"
             for g in _eks_groups(profile)]
    return (f"{' + '.join(parts)} + EKS control plane {catalog.EKS_CONTROL_PLANE_USD_HOUR:g} = "
            f"{hourly_usd(profile):g} USD/h on demand in {catalog.PRICE_REGION}")


def _comments(lines: list[str], indent: str = "", width: int = 118) -> list[str]:
    """Comment lines, each wrapped at `width` (with its indent); a line that is already short is kept as it is."""
    out = []
    for line in lines:
        wrapped = textwrap.wrap(line, width - len(indent) - 2, subsequent_indent="  ") if line else [""]
        out += [f"{indent}# {part}".rstrip() for part in wrapped]
    return out


def _daemonset_lines(profile: profiles.Profile) -> list[str]:
    """The DaemonSets' budget the plan counted per node, and which of them the cluster's add-ons bring."""
    counted = ", ".join(f"{d.name} {d.cpu_m}m" for d in profile.daemonsets)
    total = sum(d.cpu_m * d.replicas for d in profile.daemonsets)
    spare = [d for d in profile.daemonsets if d.name not in ADDON_DAEMONSETS]
    lines = [f"DaemonSets the plan counts on every node: {counted} = {total}m. The add-ons vpc-cni and kube-proxy "
             f"bring {' and '.join(ADDON_DAEMONSETS)}"]
    if spare:
        lines[0] += (f"; {' and '.join(d.name for d in spare)} (Container Insights) are counted but not installed: "
                     f"their {sum(d.cpu_m * d.replicas for d in spare)}m per node stay spare until you add them "
                     "(no bigger ones)")
    lines[0] += ". Any other DaemonSet takes a worker's CPU: plan again with it counted (loadtest/capacity/sizing.py)."
    return lines


def _group_comment(profile: profiles.Profile, group: NodeGroup) -> list[str]:
    if group.name == TARGET_GROUP:
        plan = profile.target_plan
        return [f"The targets' node group: {group.nodes} x {group.instance_type} for the backend, both targets and the "
                "monitoring (<component>.nodeType):", *plan.explain("Requested there")]
    plan = profile.plan
    return [f"The generator's node group: {group.nodes} x {group.instance_type} for the Locust master and "
            f"{plan.replicas} workers (locust.nodeType):", *plan.explain()]


def cluster_config(profile: profiles.Profile, name: str = DEFAULT_CLUSTER, region: str = DEFAULT_REGION,
                   origin: str = "", values_file: str = "") -> str:
    """An eksctl ClusterConfig with the profile's two managed node groups, commented with the plan's arithmetic."""
    groups = _eks_groups(profile)
    values = values_file or "<the values file>"
    header = [
        origin or f"eksctl ClusterConfig for values/{profile.file}",
        f"The node groups {values} assumes, with the counts of its header (same sizing code).",
        f"Cost: {cost_line(profile)}.",
        "The chart selects each group by node.kubernetes.io/instance-type, which the kubelet sets from instanceType;",
        f"{profiles.NODE_GROUP_LABEL} names the group. No taints: the chart's pods tolerate none.",
        *_daemonset_lines(profile),
        "Add-ons: exactly " + ", ".join(ADDONS) + " (CoreDNS's 2 replicas are counted among the pods); eksctl's",
        "default metrics-server is not counted, so addonsConfig.disableDefaultAddons leaves it out.",
        "minSize = maxSize = desiredCapacity: the plan holds for these counts (`loadtest size` for others).",
        "",
        f"Create: eksctl create cluster -f <this file>; then helm install lt charts/loadtest -f {values}",
        "Delete: eksctl delete cluster -f <this file> --disable-nodegroup-eviction",
    ]
    top = {
        "apiVersion": EKSCTL_API,
        "kind": "ClusterConfig",
        "metadata": {"name": name, "region": region, "version": KUBERNETES_VERSION},
        "addonsConfig": {"disableDefaultAddons": True},
        "addons": [{"name": addon} for addon in ADDONS],
    }
    lines = [*_comments(header), yaml.safe_dump(top, sort_keys=False).rstrip(), "managedNodeGroups:"]
    for group in groups:
        item = {
            "name": group.name,
            "instanceType": group.instance_type,
            "amiFamily": "AmazonLinux2023",
            "desiredCapacity": group.nodes,
            "minSize": group.nodes,
            "maxSize": group.nodes,
            "labels": group.labels,
        }
        dumped = yaml.safe_dump([item], sort_keys=False).rstrip().split("\n")
        lines += ["", *_comments(_group_comment(profile, group), "  "), *(f"  {line}" for line in dumped)]
    return "\n".join(lines) + "\n"


def karpenter(profile: profiles.Profile, name: str = DEFAULT_CLUSTER, origin: str = "",
              values_file: str = "") -> str:
    """Karpenter NodePools for the profile's two node groups, each limited to its instance type and to the CPU of
    its planned nodes, and the EC2NodeClass they launch from."""
    groups = _eks_groups(profile)
    values = values_file or "<the values file>"
    header = [
        origin or f"Karpenter NodePools for values/{profile.file}",
        f"The node groups {values} assumes, as NodePools instead of managed node groups (the eksctl file).",
        "Karpenter packs pending pods onto nodes it picks; the plan's guarantee (every planned worker schedules,",
        "whatever node the cluster pods land on) is arithmetic on one instance type and a node count. So each pool",
        "allows one instance type, on demand, and at most its planned nodes' vCPUs (limits.cpu): Karpenter may launch",
        "fewer nodes when its packing needs fewer, never another size or more. It needs Karpenter installed, running",
        "on nodes of its own (with CoreDNS): KarpenterNodeRole-<cluster> and subnets and security groups tagged",
        "karpenter.sh/discovery: <cluster>, as in Karpenter's getting started. Nodes appear when the release's pods",
        "are pending; empty ones go after consolidateAfter; a new AMI does not replace nodes mid-test (Drifted: 0).",
        *_daemonset_lines(profile),
    ]
    docs = [{
        "apiVersion": NODECLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": NODE_CLASS},
        "spec": {
            "role": f"KarpenterNodeRole-{name}",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": name}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": name}}],
        },
    }]
    for group in groups:
        instance = catalog.get(group.instance_type)
        docs.append({
            "apiVersion": NODEPOOL_API,
            "kind": "NodePool",
            "metadata": {"name": group.name},
            "spec": {
                "template": {
                    "metadata": {"labels": group.labels},
                    "spec": {
                        "nodeClassRef": {"group": NODECLASS_API.split("/")[0], "kind": "EC2NodeClass",
                                         "name": NODE_CLASS},
                        "requirements": [
                            {"key": "node.kubernetes.io/instance-type", "operator": "In",
                             "values": [group.instance_type]},
                            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                        ],
                        "expireAfter": "Never",
                    },
                },
                "limits": {"cpu": str(group.nodes * instance.vcpu)},
                "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m",
                               "budgets": [{"nodes": "0", "reasons": ["Drifted"]}]},
            },
        })
    notes = [[], *([f"{g.nodes} x {g.instance_type}: limits.cpu = {g.nodes} x "
                    f"{catalog.get(g.instance_type).vcpu} vCPU"] for g in groups)]
    parts = ["\n".join([*_comments(note), yaml.safe_dump(doc, sort_keys=False).rstrip()])
             for note, doc in zip(notes, docs)]
    return "\n".join(_comments(header)) + "\n" + "\n---\n".join(parts) + "\n"


def read_node_groups(text: str) -> list[NodeGroup]:
    """The managed node groups of a written ClusterConfig: instance type, desired count, labels and taints, the
    shape (capacity, allocatable, max pods) from the catalog."""
    doc = yaml.safe_load(text)
    groups = []
    for g in doc.get("managedNodeGroups", []):
        shape = sizing.node_shape(catalog.get(g["instanceType"]))
        taints = tuple((t["key"], t.get("value", ""), t["effect"]) for t in g.get("taints", []))
        groups.append(NodeGroup(g["name"], _labelled(shape, g["name"], g.get("labels")), g["desiredCapacity"], taints))
    return groups


def cluster_config_errors(text: str, schema: dict) -> list[str]:
    """What in a ClusterConfig eksctl's schema refuses: one line per error, where and why; [] when valid."""
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
            for e in sorted(validator.iter_errors(yaml.safe_load(text)), key=lambda e: list(map(str, e.absolute_path)))]

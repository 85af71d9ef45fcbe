"""Simulated EKS node groups: nodes made from the instance catalog and the kube-system add-ons the sizing assumes.

Nodes get the capacity, allocatable, max pods and EKS labels of their instance type; kube-system gets the
profile's per-node DaemonSets and cluster pods (e.g. CoreDNS) with their requests, so the scheduler sees what it
would see on EKS. KWOK marks the nodes Ready and the pods Running without running containers.
"""
from __future__ import annotations

from pathlib import Path

from ...capacity import catalog, clusterfiles, profiles, sizing
from .api import pods, ready, wait_for
from .controlplane import Cluster

ADDON_LABEL = "loadtest.dev/addon"
REGION = "us-east-1"
# Never pulled: KWOK runs no containers, but pods need an image name.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def node_objects(shape: sizing.NodeShape, count: int, group: str,
                 taints: tuple[tuple[str, str, str], ...] = ()) -> list[dict]:
    """Nodes as an EKS node group of `shape` registers them, spread over three zones, with its taints
    ((key, value, effect))."""
    spec = {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]} if taints else {}
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"{group}-{i}",
                "labels": {
                    **shape.labels,
                    "kubernetes.io/hostname": f"{group}-{i}",
                    "topology.kubernetes.io/region": REGION,
                    "topology.kubernetes.io/zone": sizing.ZONES[i % len(sizing.ZONES)],
                    profiles.NODE_GROUP_LABEL: group,
                },
            },
            **({"spec": spec} if spec else {}),
            # The apiserver keeps a Node's status from the create request (most kinds drop it); KWOK adds Ready.
            "status": {
                "capacity": {"cpu": f"{shape.cpu_m}m", "memory": f"{shape.memory_mi}Mi", "pods": str(shape.max_pods)},
                "allocatable": {"cpu": f"{shape.allocatable_cpu_m}m", "memory": f"{shape.allocatable_memory_mi}Mi",
                                "pods": str(shape.max_pods)},
            },
        }
        for i in range(count)
    ]


def _resources(pod: sizing.PodRequest) -> dict:
    requests = {}
    if pod.cpu_m:
        requests["cpu"] = f"{pod.cpu_m}m"
    if pod.memory_mi:
        requests["memory"] = f"{pod.memory_mi}Mi"
    return {"requests": requests}


def _pod_template(pod: sizing.PodRequest, priority_class: str) -> dict:
    return {
        "metadata": {"labels": {"app.kubernetes.io/name": pod.name, ADDON_LABEL: "true"}},
        "spec": {
            "priorityClassName": priority_class,
            # Simulated nodes only: a real node beside them runs its own kube-system.
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": profiles.NODE_GROUP_LABEL, "operator": "Exists"}]}]}}},
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": pod.name, "image": PAUSE_IMAGE, "resources": _resources(pod)}],
        },
    }


def addon_objects(profile: profiles.Profile) -> list[dict]:
    """The profile's per-node DaemonSets and cluster pods (e.g. CoreDNS) for kube-system, with its requests."""
    def meta(name: str) -> dict:
        return {"name": name, "namespace": "kube-system", "labels": {ADDON_LABEL: "true"}}

    daemonsets = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(ds.name),
         "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": ds.name}},
                  "template": _pod_template(ds, "system-node-critical")}}
        for ds in profile.daemonsets
    ]
    deployments = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(pod.name),
         "spec": {"replicas": pod.replicas, "selector": {"matchLabels": {"app.kubernetes.io/name": pod.name}},
                  "template": _pod_template(pod, "system-cluster-critical")}}
        for pod in profile.cluster_pods
    ]
    return daemonsets + deployments


def simulated_nodes(cluster: Cluster) -> list[dict]:
    """Every node a node group made (KWOK's), not a real node beside them."""
    return cluster.api_get("/api/v1/nodes", labelSelector=profiles.NODE_GROUP_LABEL)["items"]


def delete_nodes(cluster: Cluster, timeout: float = 60) -> None:
    """Remove every simulated node, the pods bound to them (no kubelet is left to confirm their deletion) and
    their leases, so a new node of the same name gets a lease of its own."""
    names = {n["metadata"]["name"] for n in simulated_nodes(cluster)}
    if not names:
        return
    # Nodes first: while a node exists, its DaemonSets put a new pod on it for every one deleted.
    cluster.kubectl("delete", "node", "-l", profiles.NODE_GROUP_LABEL, "--wait=true")
    by_namespace: dict[str, list[str]] = {}
    for pod in cluster.api_get("/api/v1/pods")["items"]:
        if pod["spec"].get("nodeName") in names:
            by_namespace.setdefault(pod["metadata"]["namespace"], []).append(pod["metadata"]["name"])
    for namespace, pods_on_nodes in by_namespace.items():
        cluster.kubectl("delete", "pod", "-n", namespace, "--force", "--grace-period=0", "--ignore-not-found",
                        "--wait=false", *pods_on_nodes)

    # Not left to the garbage collector: a lease KWOK made before it knew its node's UID has no owner.
    cluster.kubectl("delete", "lease", "-n", "kube-node-lease", "--ignore-not-found", *sorted(names))

    def leases_left() -> list[str]:
        return sorted(names & {lease["metadata"]["name"] for lease in cluster.api_get(LEASES)["items"]})

    wait_for("the deleted nodes' leases to be gone", lambda: not leases_left(), timeout,
             lambda: f"left: {', '.join(leases_left())}")


def delete_addons(cluster: Cluster) -> None:
    """Remove the simulated add-ons; foreground, so their pods are gone before one of the same name appears."""
    cluster.kubectl("delete", "daemonset,deployment", "-n", "kube-system", "-l", ADDON_LABEL,
                    "--cascade=foreground", "--ignore-not-found", "--timeout=60s")


def install_addons(cluster: Cluster, profile: profiles.Profile) -> None:
    """Give kube-system the profile's simulated add-ons. Call it once the nodes are Ready (wait_nodes_ready)."""
    cluster.apply(addon_objects(profile))


def create_nodes(cluster: Cluster, shape: sizing.NodeShape, count: int, group: str,
                 taints: tuple[tuple[str, str, str], ...] = ()) -> list[str]:
    objects = node_objects(shape, count, group, taints)
    cluster.apply(objects)
    return [n["metadata"]["name"] for n in objects]


def wait_nodes_ready(cluster: Cluster, names: list[str], timeout: float = 60) -> None:
    """Wait until KWOK has made each node Ready and holds the lease it created for that very node.

    KWOK plays a pod's stages only on a node whose lease its cache shows as held: a pod bound while the lease is in
    flight is skipped for good, and a lease left by an earlier node of the same name is collected under it. So pods
    go onto the nodes only after this (seen as a DaemonSet pod Pending forever, one switch in about 25).
    """
    def not_ready() -> list[str]:
        owners = {lease["metadata"]["name"]: {o["uid"] for o in lease["metadata"].get("ownerReferences", [])}
                  for lease in cluster.api_get(LEASES)["items"] if lease["spec"].get("holderIdentity")}
        done = {n["metadata"]["name"] for n in simulated_nodes(cluster)
                if ready(n) and n["metadata"]["uid"] in owners.get(n["metadata"]["name"], set())}
        return sorted(set(names) - done)

    wait_for(f"{len(names)} nodes to be Ready with their leases", lambda: not not_ready(), timeout,
             lambda: f"not Ready or without a lease: {', '.join(not_ready())}; see {cluster.log('kwok')}")


def wait_addons_ready(cluster: Cluster, profile: profiles.Profile, nodes: list[str], timeout: float = 60) -> None:
    """Wait until every node runs each of the profile's DaemonSets and all its cluster pods are Running.

    Counts pods rather than trusting DaemonSet status, which reads "0 of 0 ready" until the controller sees new nodes.
    """
    def missing() -> list[str]:
        running: dict[str, list[str]] = {}
        others: dict[str, list[str]] = {}  # the add-ons' pods that are not Running, to say what became of them
        for p in pods(cluster, "kube-system", ADDON_LABEL):
            name, node = p["metadata"]["labels"]["app.kubernetes.io/name"], p["spec"].get("nodeName")
            deleting = bool(p["metadata"].get("deletionTimestamp"))
            if p["status"].get("phase") == "Running" and not deleting:
                running.setdefault(name, []).append(node)
            else:
                others.setdefault(name, []).append(f"{p['metadata']['name']} {p['status'].get('phase')}"
                                                   f"{' deleting' if deleting else ''} on {node or 'no node'}")
        out = []
        for ds in profile.daemonsets:
            if lacking := sorted(set(nodes) - set(running.get(ds.name, []))):
                out.append(f"{ds.name} not Running on {', '.join(lacking)}")
        for pod in profile.cluster_pods:
            if len(running.get(pod.name, [])) != pod.replicas:
                out.append(f"{pod.name} {len(running.get(pod.name, []))} of {pod.replicas} Running")
        if out and others:
            out.append(f"not Running: {', '.join(sum(others.values(), []))}")
        return out

    def describe() -> str:
        return f"{'; '.join(missing())}; see {cluster.log('kwok')}"

    wait_for("kube-system add-ons to be Running", lambda: not missing(), timeout, describe)


def use_node_groups(cluster: Cluster, groups: list[clusterfiles.NodeGroup], profile: profiles.Profile,
                    timeout: float = 60) -> dict[str, list[str]]:
    """Replace the cluster's nodes and add-ons with `groups` (loadtest.capacity.clusterfiles: from a profile, or read
    from a written ClusterConfig) and the add-ons `profile` counts; returns each group's node names."""
    delete_nodes(cluster)
    delete_addons(cluster)
    names = {g.name: create_nodes(cluster, g.shape, g.nodes, g.name, g.taints) for g in groups}
    every = sum(names.values(), [])
    wait_nodes_ready(cluster, every, timeout)
    install_addons(cluster, profile)
    wait_addons_ready(cluster, profile, every, timeout)
    return names


def use_node_group(cluster: Cluster, profile: profiles.Profile, count: int | None = None,
                   timeout: float = 60) -> list[str]:
    """Replace the cluster's nodes and add-ons with the node group `profile` is sized for, plus the node group its
    backend and targets run on; returns the generator node names."""
    groups = clusterfiles.node_groups(profile, count)
    return use_node_groups(cluster, groups, profile, timeout)[groups[0].name]


def profile_for(name: str, count: int | None = None) -> profiles.Profile:
    """A profile by values file (c5-xlarge.yaml, values/c5-xlarge.yaml) or an EKS one for an instance type.

    An unknown file raises KeyError, an unknown instance type catalog.UnknownInstanceType (a ValueError), each
    with the list of known ones."""
    if name.endswith(".yaml"):
        return profiles.by_file(Path(name).name)
    catalog.get(name)  # raises with the list of known types
    return profiles.eks(name, count or 2, f"{name} node group")

"""`loadtest tune --release`: a release as tune reads it (its values through helm, its pods and nodes through
kubectl, its last steady window through its Prometheus) and the change made with helm, watched until the next
steady window shows what it did."""
from __future__ import annotations

import json
import time

from .. import units
from ..capacity import catalog, sizing
from ..errors import UsageError
from ..judging import tuning
from .locustweb import LocustWeb
from .prom import Prometheus
from .release import Release, ReleaseError
from .sweeper import SweepFailed, measure

ROLLOUT_TIMEOUT = "10m"
WORKERS_TIMEOUT_S = 180


def pod_request(pod: dict, name: str | None = None) -> sizing.PodRequest:
    """A pod's requests as the scheduler counts them: its containers' sum, or its largest init container's."""
    def sums(containers: list[dict]) -> tuple[int, int]:
        requests = [c.get("resources", {}).get("requests", {}) for c in containers]
        return (sum(units.parse_cpu_m(r.get("cpu", 0)) for r in requests),
                sum(units.parse_memory_mi(r.get("memory", 0)) for r in requests))

    spec = pod["spec"]
    cpu, memory = sums(spec["containers"])
    for init in spec.get("initContainers", []):
        c, m = sums([init])
        cpu, memory = max(cpu, c), max(memory, m)
    return sizing.PodRequest(name or pod["metadata"]["name"], cpu, memory)


def _tolerated(taint: dict, tolerations: list[dict]) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True
    return any(t.get("operator") == "Exists" and not t.get("key")
               or t.get("key") == taint.get("key") and (t.get("operator") == "Exists"
                                                         or t.get("value") == taint.get("value"))
               for t in tolerations)


def _component(pod: dict, release: str) -> str | None:
    labels = pod["metadata"].get("labels", {})
    return labels.get("app.kubernetes.io/component") if labels.get("app.kubernetes.io/instance") == release else None


def node_group(release: Release, worker: dict) -> tuning.NodeGroup:
    """The nodes the worker Deployment's pods may run on (its nodeSelector and tolerations) and what else runs
    there: DaemonSet pods on every node; the cluster's add-ons (kube-system), which may land among the workers, and
    any other pod on those nodes, counted as the sizing counts CoreDNS; the release's master."""
    nodes = worker_nodes(release, worker["spec"]["template"]["spec"])
    names = {n["metadata"]["name"] for n in nodes}
    daemonsets, others, master, used = pods_beside(release, names)
    # The node whose DaemonSets take the most stands for all; the smallest node for the shape.
    ds = max(daemonsets.values(), key=lambda pods: sum(p.cpu_m for p in pods))
    shape, node_type = node_shape(nodes)
    free_now = tuple(units.parse_cpu_m(n["status"]["allocatable"]["cpu"]) - used[n["metadata"]["name"]]
                     for n in nodes)
    return tuning.NodeGroup(shape, len(nodes), tuple(ds), tuple(others), master, free_now,
                            node_type if node_type in catalog.INSTANCES else None)


def worker_nodes(release: Release, template: dict) -> list[dict]:
    """The schedulable nodes whose labels the workers' nodeSelector takes and whose taints they tolerate."""
    selector = ",".join(f"{k}={v}" for k, v in template.get("nodeSelector", {}).items())
    nodes = [n for n in json.loads(release.kubectl("get", "nodes", "-o", "json", *(["-l", selector] if selector
                                                                                   else [])))["items"]
             if not n["spec"].get("unschedulable")
             and all(_tolerated(t, template.get("tolerations", [])) for t in n["spec"].get("taints", []))]
    if not nodes:
        raise UsageError(f"no node takes release {release.name}'s workers (nodeSelector {selector or 'none'}): "
                         "the node group is missing or cordoned; see `kubectl get nodes --show-labels`")
    return nodes


def pods_beside(release: Release, names: set[str]) -> tuple[dict[str, list[sizing.PodRequest]],
                                                            list[sizing.PodRequest], sizing.PodRequest,
                                                            dict[str, int]]:
    """What runs beside the workers: each node's DaemonSet pods, the other pods on those nodes and kube-system's,
    the release's master, and the CPU each node has requested (the workers' own left out)."""
    # A finished pod holds no CPU, nor does one being deleted by the time a change schedules.
    pods = [p for p in json.loads(release.kubectl("get", "pods", "--all-namespaces", "-o", "json"))["items"]
            if p["status"].get("phase") not in ("Succeeded", "Failed") and not p["metadata"].get("deletionTimestamp")]
    daemonsets: dict[str, list[sizing.PodRequest]] = {name: [] for name in names}
    others, master, used = [], None, {name: 0 for name in names}
    for pod in pods:
        where, component = pod["spec"].get("nodeName"), _component(pod, release.name)
        owners = {o["kind"]: o["name"] for o in pod["metadata"].get("ownerReferences", [])}
        request = pod_request(pod, owners.get("DaemonSet") or owners.get("ReplicaSet") or None)
        if component == "locust-worker" and pod["metadata"]["namespace"] == release.namespace:
            continue
        if where in used:
            used[where] += request.cpu_m
        if component == "locust-master" and pod["metadata"]["namespace"] == release.namespace:
            master = request
        elif "DaemonSet" in owners:
            if where in daemonsets:
                daemonsets[where].append(request)
        elif where in names or pod["metadata"]["namespace"] == "kube-system":
            others.append(request)
    if master is None:
        raise ReleaseError(f"release {release.name} has no running master pod in namespace {release.namespace}")
    return daemonsets, others, master, used


def node_shape(nodes: list[dict]) -> tuple[sizing.NodeShape, str | None]:
    """The smallest node's shape, and the group's instance type when every node has the same."""
    smallest = min(nodes, key=lambda n: units.parse_cpu_m(n["status"]["allocatable"]["cpu"]))
    status = smallest["status"]
    types = {n["metadata"].get("labels", {}).get("node.kubernetes.io/instance-type") for n in nodes}
    node_type = types.pop() if len(types) == 1 else None
    return sizing.NodeShape(
        name=node_type or smallest["metadata"]["name"], cpu_m=units.parse_cpu_m(status["capacity"]["cpu"]),
        memory_mi=units.parse_memory_mi(status["capacity"]["memory"]),
        allocatable_cpu_m=units.parse_cpu_m(status["allocatable"]["cpu"]),
        allocatable_memory_mi=units.parse_memory_mi(status["allocatable"]["memory"]),
        max_pods=int(status["allocatable"].get("pods", 110))), node_type


def pending_workers(release: Release) -> int:
    pods = json.loads(release.kubectl("get", "pods", "-o", "json", "-l",
                                      f"app.kubernetes.io/instance={release.name},"
                                      "app.kubernetes.io/component=locust-worker"))["items"]
    return sum(1 for p in pods if p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName")
               and not p["metadata"].get("deletionTimestamp"))


def steady_seconds(prometheus: Prometheus, release: str, span: int, scrape_s: float, at: float) -> float:
    """How long, up to `span` s before `at`, every user of the release has run: the time since its last evaluation
    that was not steady (users spawning or stopping, or none), all of `span` when the window holds none, 0 when it is
    not steady now. An evaluation Prometheus missed (a scrape of the busy master lost, a rule group late) is a gap,
    not a ramp-up: counting the window's steady samples called a steady window of a node beside a CPU hog short (3
    of its 4, 2026-12-07)."""
    steady = f'loadtest:steady:bool{{release="{release}"}}'
    if not prometheus.scalar(f"max(last_over_time({steady}[{span}s]))", at):
        return 0.0
    # One subquery step an evaluation sees each of them; Prometheus stamps a filtered sample with its step's time
    # or its own (versions differ), either of them within the evaluation's interval.
    last_unsteady = prometheus.scalar(f"max(max_over_time(timestamp({steady} == 0)[{span}s:{scrape_s:g}s]))", at)
    return float(span) if last_unsteady is None else min(float(span), max(0.0, at - last_unsteady))


def snapshot(release: Release, prometheus: Prometheus) -> tuning.Snapshot:
    """The release now: its values, Pending workers, worker nodes, and the last window of steady samples (the
    release's rules window, monitoring.rules.windowSeconds)."""
    values = release.values()
    locust, span = values.get("locust", {}), tuning.window_s(values)
    worker = release.labelled("deployment", "locust-worker")
    window = rps = fail_ratio = p95 = no_window = None
    users = 0
    scrape = prometheus.scrape_interval_s()
    now = time.time()
    ran = steady_seconds(prometheus, release.name, span, scrape, now)
    try:
        if ran < span:
            raise SweepFailed(f"every user ran for {ran:.0f} s of the last {span} s; run tune again in "
                              f"{span - ran:.0f} s")
        f = measure(prometheus, release.name, now, span, scrape)
        window, rps, p95, users, fail_ratio = f.window, f.rps, f.p95_ms, round(f.users), f.failure_ratio
    except SweepFailed as e:
        no_window = str(e)  # no swarm in the window, or not for the whole window yet: nothing to judge
    return tuning.Snapshot(
        release=release.name, mode=locust.get("mode", "interactive"),
        worker_cpu_m=units.parse_cpu_m(locust.get("worker", {}).get("cpu", "1000m")),
        worker_memory_mi=units.parse_memory_mi(locust.get("worker", {}).get("memory", "512Mi")),
        replicas=int(worker["spec"]["replicas"]), pending=pending_workers(release), users=users, rps=rps,
        fail_ratio=fail_ratio, p95_ms=p95, window=window, group=node_group(release, worker),
        no_window=no_window, arrival_rate=float(locust.get("load", {}).get("arrivalRate") or 0) or None,
        window_s=span)


def check_release(release: Release) -> dict:
    """The release's values, refused with the fix when tune cannot read or change it."""
    values = release.values()
    mode = values.get("locust", {}).get("mode", "interactive")
    if mode == "run":
        raise UsageError(f"release {release.name} runs locust.mode run: its master and workers are Jobs, which "
                         "helm cannot upgrade; tune an interactive or autostart release, then run again")
    if not values.get("monitoring", {}).get("enabled"):
        raise UsageError(f"release {release.name} has monitoring.enabled false: tune reads the steady window from "
                         f"the release's Prometheus; `helm upgrade {release.name} charts/loadtest --reuse-values "
                         "--set monitoring.enabled=true`")
    return values


def revision(release: Release) -> int:
    return int(json.loads(release.helm("status", release.name, "-o", "json"))["version"])


def upgrade(release: Release, chart: str, changes: dict[str, str], progress=print) -> None:
    """helm upgrade --reuse-values with the changes, waiting for the rollout (a new worker is ready once the master
    accepted it, so the swarm goes on)."""
    command = tuning.upgrade_command(release.name, release.namespace, chart, changes)
    progress(f"running: {' '.join(command)} --wait --timeout {ROLLOUT_TIMEOUT}")
    release.helm(*command[1:], "--wait", "--timeout", ROLLOUT_TIMEOUT, timeout=900)


def rollback(release: Release, to: int, progress=print) -> None:
    progress(f"running: helm rollback {release.name} {to} -n {release.namespace} --wait")
    release.helm("rollback", release.name, str(to), "--wait", "--timeout", ROLLOUT_TIMEOUT, timeout=900)


def after_change(release: Release, prometheus: Prometheus, web_url: str, credentials: str | None,
                 progress=print) -> tuning.Snapshot:
    """The first steady window that holds only the changed release: every worker connected, then the rules' rate
    window (the release's rules window) and one tune window; then, while the swarm is not yet steady for a whole
    window (users respawned as the old workers left), one more window at most. Its snapshot, without a window when
    none came."""
    replicas = int(release.labelled("deployment", "locust-worker")["spec"]["replicas"])
    LocustWeb(web_url, credentials).wait_workers(replicas, WORKERS_TIMEOUT_S)
    scrape = prometheus.scrape_interval_s()
    span = tuning.window_s(release.values())
    wait_s = 2 * span + 2 * scrape
    progress(f"{replicas} worker(s) connected; watching the next steady window ({wait_s:.0f} s: the rules' "
             f"{span} s window forgets the old workers, then {span} s are judged)")
    deadline = time.monotonic() + wait_s
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(15.0, left))
        progress(f"  {wait_s - max(0.0, deadline - time.monotonic()):4.0f}/{wait_s:.0f} s")
    last_chance = time.monotonic() + span
    while steady_seconds(prometheus, release.name, span, scrape, time.time()) < span \
            and time.monotonic() < last_chance:
        progress("  every user has not yet run for a whole window since the change; watching on")
        time.sleep(scrape)
    return snapshot(release, prometheus)

"""What the cluster tests assert about scheduling: pods Running, or pending with the scheduler's reason.

A helper module, not a test file: pytest puts tests/cluster on sys.path (rootdir-relative "prepend" imports, no
__init__.py), so the conftest and the tests import it as `scheduling`.
"""
from __future__ import annotations

from loadtest.runtime.cluster import Cluster, pods, wait_for


class NotScheduled(AssertionError):
    """Pods that should be Running are not; the message names each one with the scheduler's reason."""


def unschedulable_reason(pod: dict) -> str | None:
    """The scheduler's message for a pod it could not place, None if it has not given up on it (yet)."""
    for c in pod["status"].get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
            return c.get("message", "Unschedulable")
    return None


def wait_scheduling_settled(cluster: Cluster, namespace: str, selector: str = "", timeout: float = 60) -> list[dict]:
    """Wait until the Deployments have all their pods and each is Running or unschedulable; return the pods."""
    def unsettled() -> list[str]:
        out = []
        deployments = cluster.api_get(f"/apis/apps/v1/namespaces/{namespace}/deployments", labelSelector=selector)
        for d in deployments["items"]:
            want, s = d["spec"]["replicas"], d["status"]
            if s.get("observedGeneration") != d["metadata"]["generation"] or \
                    s.get("updatedReplicas", 0) != want or s.get("replicas", 0) != want:
                out.append(f"deployment/{d['metadata']['name']} has {s.get('replicas', 0)} of {want} pods")
        out += [f"pod/{p['metadata']['name']} {p['status'].get('phase')}" for p in pods(cluster, namespace, selector)
                if p["status"].get("phase") != "Running" and not unschedulable_reason(p)]
        return out

    wait_for(f"pods in {namespace} to be Running or unschedulable", lambda: not unsettled(), timeout,
             lambda: "; ".join(unsettled()))
    return pods(cluster, namespace, selector)


def assert_all_running(cluster: Cluster, namespace: str, selector: str = "") -> list[dict]:
    """Every pod matching selector is Running; otherwise NotScheduled names each other pod with the reason."""
    found = pods(cluster, namespace, selector)
    if not found:
        raise NotScheduled(f"no pods match {selector!r} in namespace {namespace}")
    stuck = [p for p in found if p["status"].get("phase") != "Running"]
    if stuck:
        lines = [f"{len(stuck)} of {len(found)} pods in namespace {namespace} are not Running:"]
        for p in stuck:
            reason = unschedulable_reason(p) or "not yet scheduled or started"
            lines.append(f"  {p['metadata']['name']} ({p['status'].get('phase', 'Unknown')}): {reason}")
        raise NotScheduled("\n".join(lines))
    return found


def failed_scheduling_events(cluster: Cluster, namespace: str, pod: str) -> list[str]:
    events = cluster.api_get(f"/api/v1/namespaces/{namespace}/events",
                             fieldSelector=f"involvedObject.name={pod},reason=FailedScheduling")["items"]
    return [e.get("message", "") for e in events]

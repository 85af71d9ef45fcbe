"""A run changed while it runs, on the real node: a worker added by `helm upgrade` gets users without restarting the
run; a deleted worker pod is replaced and the run goes on with nothing lost; a deleted target pod, and the backend
scaled to 0, show as counted failures, then recovery; a worker killed outright is restarted, and what it took with it
is named; a worker cut off from its master for 10 s stops its users and comes back. The tests share one release
(interactive mode, HAProxy the target) and run in order.

Monitoring is off here: two workers and HAProxy's whole core fill this 2-CPU node, and the master's web API says
all these tests read."""
from __future__ import annotations

import datetime
import re
import subprocess
import time

import psutil
import pytest
from conftest import aggregated, container_processes, haproxy_served, install, master, wait_ready
from helpers import wait_for
from locust.runners import HEARTBEAT_INTERVAL

from loadtest import paths
from loadtest.runtime import http_client
from loadtest.runtime.cluster import pods
from loadtest.runtime.locustweb import LocustWeb

USERS = 20
WORKERS = "app.kubernetes.io/component=locust-worker"


@pytest.fixture(scope="module")
def release(cluster, module_namespace, helm) -> str:
    install(helm, module_namespace, "--set", "haproxy.enabled=true", "--set", "locust.target=haproxy",
            "--set", "monitoring.enabled=false", "--set", "locust.worker.cpu=300m")
    wait_ready(cluster, module_namespace)
    return module_namespace


def live_pods(cluster, namespace: str, selector: str) -> list[dict]:
    return [p for p in pods(cluster, namespace, selector) if not p["metadata"].get("deletionTimestamp")]


def wait_status(web, ok, what: str, timeout: float = 120, floor: int = 0) -> dict:
    """Poll the master until ok(status); on the way, the request count never falls below `floor` nor goes back
    (a reset would mean the run restarted)."""
    seen = {"requests": floor}

    def workers() -> list[tuple[str, int]]:
        """The workers' states and users (what a failure shows); the whole status is kept for ok()."""
        seen["status"], count = web.status(), aggregated(web)["num_requests"]
        assert count >= seen["requests"], f"the request count went back from {seen['requests']} to {count}: " \
                                          "the run restarted"
        seen["requests"] = count
        return [(seen["status"]["state"], len(seen["status"]["workers"])),
                *((w["state"], w["user_count"]) for w in seen["status"]["workers"])]

    wait_for(what, workers, timeout, every=0.25, until=lambda _: ok(seen["status"]))
    return seen["status"]


def spread(status: dict, workers: int) -> bool:
    """The run has its users spread over `workers` connected workers, each running some."""
    running = [w for w in status["workers"] if w["state"] == "running"]
    return (status["state"] == "running" and len(status["workers"]) == workers and len(running) == workers
            and all(w["user_count"] > 0 for w in running) and sum(w["user_count"] for w in running) == USERS)


def test_a_worker_added_by_helm_upgrade_gets_users_without_restarting_the_run(cluster, release, helm):
    web = master(cluster, release)
    web.wait_workers(1, 60)
    web.swarm(USERS, USERS)
    web.wait_users(USERS, 60)
    (master_pod,) = live_pods(cluster, release, "app.kubernetes.io/component=locust-master")
    before = aggregated(web)["num_requests"]

    helm("upgrade", "lt", str(paths.CHART), "-n", release, "--reuse-values", "--set", "locust.worker.replicas=2")
    wait_ready(cluster, release)
    wait_status(web, lambda s: spread(s, 2), "20 users over 2 workers", floor=before)
    (same,) = live_pods(cluster, release, "app.kubernetes.io/component=locust-master")
    assert same["metadata"]["uid"] == master_pod["metadata"]["uid"], "the upgrade replaced the master"


def test_a_deleted_worker_is_replaced_and_the_run_goes_on_with_nothing_lost(cluster, release):
    web = master(cluster, release)
    status = wait_status(web, lambda s: spread(s, 2), "20 users over 2 workers")
    first = {w["id"] for w in status["workers"]}
    victim = live_pods(cluster, release, WORKERS)[0]["metadata"]["name"]
    before = aggregated(web)["num_requests"]

    cluster.kubectl("delete", "pod", "-n", release, victim, "--wait=false")
    # The kubelet stops the worker (SIGTERM), the Deployment makes another, which connects and gets users.
    status = wait_status(web, lambda s: spread(s, 2) and {w["id"] for w in s["workers"]} != first,
                         "a new worker with users", floor=before)
    assert status["state"] == "running"

    total = stopped_count(web)
    served = haproxy_served(cluster, release)
    print(f"with a worker deleted mid-run: Locust counted {total} requests, HAProxy {served:.0f}")
    assert total > 1000
    # The deleted worker's last requests are counted too (its final report before it quit).
    assert abs(served - total) <= 0.005 * total


def test_a_deleted_target_shows_as_failures_then_recovers(cluster, release):
    web = master(cluster, release)
    web.wait_workers(2, 60)
    web.swarm(USERS, USERS)  # a new run: its statistics start from zero
    web.wait_users(USERS, 60)
    # The workers' first reports of the new run (every 3 s): their counts of requests and failures.
    wait_status(web, lambda s: aggregated(web)["num_requests"] > 0, "requests of the new run", timeout=30)
    assert aggregated(web)["num_failures"] == 0
    (target,) = live_pods(cluster, release, "app.kubernetes.io/component=haproxy")
    node = target["spec"]["nodeName"]

    # The replacement is held off the node until the failures show: started during the old pod's drain
    # (haproxy.drainSeconds: out of the Service, still serving) it takes the users over without one failure.
    cluster.kubectl("cordon", node)
    try:
        cluster.kubectl("delete", "pod", "-n", release, target["metadata"]["name"], "--wait=false")
        # After the drain HAProxy closes its connections: the users reconnect and are refused (no endpoint).
        wait_status(web, lambda s: aggregated(web)["num_failures"] > 0, "failures while the target is gone",
                    timeout=60)
    finally:
        cluster.kubectl("uncordon", node)
    wait_ready(cluster, release)

    end, served, stretch = recovered(web)
    print(f"target deleted mid-run: {end['num_failures']} failures counted of {end['num_requests']} requests, "
          f"then {served} requests in {stretch:.0f} s without one")
    web.stop()


def test_the_backend_scaled_to_0_shows_as_failures_then_recovers(cluster, release):
    """HAProxy, whose backend has no pod, answers 503; scaled back, it serves."""
    web, _, _ = new_run(cluster, release)
    before = aggregated(web)
    backend = ("deployment", "-n", release, "-l", "app.kubernetes.io/component=backend")
    cluster.kubectl("scale", *backend, "--replicas=0")
    try:
        wait_status(web, lambda s: aggregated(web)["num_failures"] > before["num_failures"],
                    "failures while the backend has no pod", timeout=60)
    finally:
        cluster.kubectl("scale", *backend, "--replicas=1")
    wait_ready(cluster, release)
    end, served, stretch = recovered(web)
    print(f"backend scaled to 0 mid-run: {end['num_failures'] - before['num_failures']} failures counted, then "
          f"{served} requests in {stretch:.0f} s without one")
    web.stop()


def recovered(web: LocustWeb) -> tuple[dict, int, float]:
    """Until a stretch of 10 s with requests served and no new failure, counted from the last failure seen: the
    master's Aggregated row then, the requests and the seconds of that stretch."""
    last_failure = {"counts": aggregated(web), "at": time.monotonic()}

    def since_the_last_failure() -> dict:
        end, start = aggregated(web), last_failure["counts"]
        if end["num_failures"] > start["num_failures"]:
            last_failure.update(counts=end, at=time.monotonic())
        return {"served": end["num_requests"] - last_failure["counts"]["num_requests"],
                "seconds": time.monotonic() - last_failure["at"], "end": end}

    seen = wait_for("recovery: 10 s of requests served without a failure", since_the_last_failure, 120,
                    every=1, until=lambda seen: seen["seconds"] >= 10 and seen["served"] > 100)
    return seen["end"], seen["served"], seen["seconds"]


def running(status: dict) -> dict:
    """The status without the workers marked missing: Locust lists a lost one for a minute."""
    return dict(status, workers=[w for w in status["workers"] if w["state"] != "missing"])


def new_run(cluster, release) -> tuple[LocustWeb, set[str], float]:
    """A run of USERS over 2 workers, once the one before stopped (until then its figures are the status's, and the
    new run's would replace them): the master, its workers' ids, and HAProxy's count before it (HAProxy's goes on
    across runs; Locust's starts again)."""
    web = master(cluster, release)
    wait_status(web, lambda s: s["state"] == "stopped", "the run before stopped", timeout=30)
    wait_status(web, lambda s: len(running(s)["workers"]) == 2, "2 workers connected", timeout=60)
    served_before = haproxy_served(cluster, release)
    web.swarm(USERS, USERS)
    web.wait_users(USERS, 60)  # the new run's users: its statistics started from zero
    status = wait_status(web, lambda s: spread(running(s), 2), "20 users over 2 workers")
    return web, {w["id"] for w in running(status)["workers"]}, served_before


def reported_twice(web: LocustWeb, workers: set[str]):
    """A condition: each of `workers` reported twice since the first look (its count in the master's metrics,
    locust_worker_requests_total, changed twice)."""
    changes, last = dict.fromkeys(workers, 0), {}

    def probe() -> bool:
        text = http_client.fetch(f"{web.url}/metrics", headers=web.headers, timeout=10).decode()
        for worker, count in re.findall(r'^locust_worker_requests_total\{worker="([^"]+)"\} (\S+)$', text, re.M):
            if worker in changes and last.get(worker, count) != count:
                changes[worker] += 1
            last[worker] = count
        return min(changes.values()) >= 2

    return probe


def stopped_count(web: LocustWeb) -> int:
    """Stop the run; Locust's count once it says stopped: every worker sent its last report before answering the
    stop (loadtest_metrics), so nothing is waited for on a clock."""
    web.stop()
    wait_status(web, lambda s: s["state"] == "stopped", "the run stopped", timeout=30)
    return aggregated(web)["num_requests"]


def master_log(cluster, release: str) -> str:
    (master_pod,) = live_pods(cluster, release, "app.kubernetes.io/component=locust-master")
    return cluster.kubectl("logs", "-n", release, master_pod["metadata"]["name"])


def worker_process(victim: dict) -> psutil.Process:
    [worker] = container_processes(victim["metadata"]["uid"], "--worker")
    return worker


def test_a_worker_killed_outright_is_lost_restarted_and_what_it_took_named(cluster, release):
    """SIGKILL, as the kernel's out-of-memory killer or a lost node would: no last report. The master logs the loss,
    the kubelet restarts the container, the new worker gets users, and HAProxy's count is Locust's plus about the
    requests the master names as unreported."""
    web, first, served_before = new_run(cluster, release)
    started = time.monotonic()
    worker = worker_process(live_pods(cluster, release, WORKERS)[0])
    # Killed once every worker has reported twice in this run (every 3 s): its rate is known. (A count of the run's
    # requests is no such condition: one worker's first report may pass it, and one killed before its own first
    # report is estimated from the others' rate, which this test does not hold to a heartbeat's worth.)
    wait_for("every worker's second report of the run", reported_twice(web, first), 60, every=0.5)
    before = aggregated(web)["num_requests"]
    worker.kill()
    wait_status(web, lambda s: spread(running(s), 2)
                and len({w["id"] for w in s["workers"] if w["state"] == "running"} - first) == 1,
                "the restarted worker with users", floor=before)
    [lost] = [line for line in master_log(cluster, release).splitlines() if "loadtest_faults: worker lost" in line]
    assert "the master saw it after" in lost
    unreported = int(re.search(r"about ([0-9,]+) requests it sent after its last report", lost)[1].replace(",", ""))

    ran_s = time.monotonic() - started
    total = stopped_count(web)
    served = haproxy_served(cluster, release) - served_before
    print(f"with a worker killed mid-run: Locust counted {total} requests in {ran_s:.0f} s, HAProxy {served:.0f}, the "
          f"master named {unreported} as unreported")
    assert total > 1000 and unreported > 0
    # The estimate is the worker's rate times the time from its last report to half a heartbeat after its last
    # heartbeat: it died up to a heartbeat (1 s) after that one. A worker throttled by its CPU limit sends its
    # heartbeats late now and then, so the estimate is held to a heartbeat's worth of one worker's mean rate.
    one_worker_rps = total / ran_s / 2
    assert abs(served - total - unreported) <= one_worker_rps * HEARTBEAT_INTERVAL, \
        (served - total, unreported, one_worker_rps)


CUT_S = 10
MASTER_PORT = 5557  # the workers' Service (lt-locust-workers)
# The master gives a cut-off worker's users away 4-5 s after its last heartbeat; the worker stops its own after 6 s
# without the master's, looking every 0.5 s: 1-2.5 s later (plugin/loadtest_faults.py's MASTER_LOST_S).
DOUBLE_LOAD_S = 3.0


def in_the_pods_network(worker: psutil.Process, *iptables: str) -> None:
    subprocess.run(["nsenter", "-t", str(worker.pid), "-n", "iptables", *iptables], check=True, timeout=30)


def last_logged_at(log: str, text: str) -> datetime.datetime:
    """When the last line of a Locust log with `text` was written (the node's clock, every pod's)."""
    [line] = [line for line in log.splitlines() if text in line][-1:]
    return datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f")


def test_a_worker_cut_from_its_master_for_10_s_stops_its_users_and_comes_back(cluster, release):
    """Its pod's network namespace drops the master's traffic for 10 s, as a partition would: the master marks the
    worker missing and gives its users to the other, the worker (which still reaches the target) stops its own
    within seconds, not at the end of the cut; then it comes back, gets users again, and its reports, held in its
    connection, arrive: Locust's count is HAProxy's, nothing unreported. The master is not restarted."""
    web, first, served_before = new_run(cluster, release)
    victim = live_pods(cluster, release, WORKERS)[0]
    worker = worker_process(victim)
    rules = (("OUTPUT", "--dport"), ("INPUT", "--sport"))
    for chain, port in rules:
        in_the_pods_network(worker, "-I", chain, "-p", "tcp", port, str(MASTER_PORT), "-j", "DROP")
    try:
        time.sleep(CUT_S)  # the fault's own length
    finally:
        for chain, port in rules:
            in_the_pods_network(worker, "-D", chain, "-p", "tcp", port, str(MASTER_PORT), "-j", "DROP")
    wait_for("the master to see the worker back",
             lambda: "loadtest_faults: worker back" in master_log(cluster, release), 30, every=1)
    status = wait_status(web, lambda s: spread(running(s), 2), "20 users over the 2 workers again")
    assert {w["id"] for w in running(status)["workers"]} == first
    log = master_log(cluster, release)
    worker_log = cluster.kubectl("logs", "-n", release, victim["metadata"]["name"])
    given_away = last_logged_at(log, "setting state to missing")  # the kill's is in the same log, before
    stopped = last_logged_at(worker_log, "no heartbeat from the master")
    assert datetime.timedelta(0) <= stopped - given_away <= datetime.timedelta(seconds=DOUBLE_LOAD_S), (
        given_away, stopped)

    total = stopped_count(web)
    served = haproxy_served(cluster, release) - served_before
    print(f"with a worker cut off for {CUT_S} s: the worker stopped its users "
          f"{(stopped - given_away).total_seconds():.1f} s after the master gave them away; Locust counted {total} "
          f"requests, HAProxy {served:.0f}")
    assert abs(served - total) <= 0.005 * total
    (master_pod,) = live_pods(cluster, release, "app.kubernetes.io/component=locust-master")
    assert all(c["restartCount"] == 0 for c in master_pod["status"]["containerStatuses"])

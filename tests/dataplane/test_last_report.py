"""A worker's last report when the master stops its run (loadtest_metrics): Locust's worker answers "stop" without
one, so its master said "stopped" with up to 3 s of requests missing until the next report. With the plugin, the
master's count once it says stopped is what the target served, less only the requests cut off in flight.

A real master and worker (the keepalive scenario, the plugin loaded) against the local stack's nginx, whose own
count (stub_status) is the reference. The stop comes while the target has served a few hundred requests more than
the master has heard of, so a worker that sent no last report fails the comparison, whatever the report's phase."""
from __future__ import annotations

import time

from loadtest_shared import settings

from loadtest.runtime.locust import MASTER, Locust
from loadtest.runtime.locustweb import LocustWeb
from loadtest.runtime.stack import Stack
from loadtest.workload import scenarios

USERS = 10
UNREPORTED = 300  # requests the target served that the master has not heard of, when the run is stopped
TIMEOUT_S = 60


def master_count(web: LocustWeb) -> int:
    return sum(entry["num_requests"] for entry in web.stats_entries())


def wait(what: str, condition, timeout_s: float = TIMEOUT_S):
    deadline = time.monotonic() + timeout_s
    while not (outcome := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:.0f} s"
        time.sleep(0.05)
    return outcome


def test_once_the_master_says_stopped_it_has_counted_every_request_the_target_served(tmp_path):
    with Stack(tmp_path) as stack:
        _, server = stack.target("backend", "none")
        locust = Locust(stack.procs, scenarios.get("keepalive_1kb").locustfile, env={settings.WAIT.env: "0.01"})
        locust.start_master("--host", server.url(tls=False), expect_workers=0)
        locust.start_workers(1)
        web = LocustWeb(locust.web_url, locust.web_credentials)
        stack.procs.wait_http(MASTER, locust.web_url)
        web.wait_workers(1, TIMEOUT_S)
        status_calls = 0

        def served() -> int:
            """What nginx served, less its own stub_status answers (each call is one)."""
            nonlocal status_calls
            status_calls += 1
            return server.requests_counted() - status_calls

        before = served()
        web.swarm(USERS, USERS)
        wait("a first report", lambda: master_count(web) > 0)
        gap = wait(f"{UNREPORTED} requests served and not yet reported",
                   lambda: (g := served() - before - master_count(web)) >= UNREPORTED and g)
        web.stop()
        wait("the run stopped", lambda: web.state()["state"] == "stopped")
        counted, target = master_count(web), served() - before
        print(f"{gap} unreported at the stop; then the master counted {counted}, nginx served {target}")
        # A user stopped while its request was in flight: nginx served it, the user never logged it.
        assert 0 <= target - counted <= USERS

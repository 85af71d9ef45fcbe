"""The targets' data path with real processes: the chart's configs (loadtest.runtime.stack) under the machine's nginx and
HAProxy, loaded by the project's scenarios through Locust, with what the servers counted checked against what
Locust reported.

Locust stops its users at the end of a run without waiting for the requests they have in flight, so a server can
count up to one request (and one connection) per user more than Locust reports; comparisons allow for that.

Each scenario runs once against each target of the module's stack (`counted_run`): the matrix and the tests of what
the servers counted read the same run.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from helpers import served_or_generator_bound, wait_for

from loadtest import paths
from loadtest.runtime.stack import Server, Stack
from loadtest.workload import scenarios, targets

RUN_S = 2
USERS = 8
ROUTES = 3
INSECURE = ssl.create_default_context()
INSECURE.check_hostname = False
INSECURE.verify_mode = ssl.CERT_NONE


def locustfile(scenario: str) -> Path:
    return scenarios.get(scenario).locustfile


def get(url: str, host: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, context=INSECURE, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


def stub_status(server: Server) -> tuple[int, int]:
    """(accepted connections, requests) of an nginx. The call itself is one of each."""
    numbers = get(server.status_url)[1].decode().splitlines()[2].split()
    return int(numbers[0]), int(numbers[2])


def haproxy_metrics(server: Server) -> dict[str, float]:
    """HAProxy's Prometheus metrics, keyed `name{labels}` as exposed."""
    metrics = {}
    for line in get(server.status_url)[1].decode().splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            metrics[key] = float(value)
    return metrics


def delta(before: dict[str, float], after: dict[str, float], key: str) -> float:
    return after[key] - before.get(key, 0.0)


def assert_clean_run(result, min_requests: int = 100) -> None:
    assert result.returncode == 0, result.log[-3000:]
    assert result.exceptions == [], result.exceptions
    assert result.count() >= min_requests, f"only {result.count()} requests:\n{result.log[-2000:]}"
    assert result.failed() == 0, result.error_rows


def assert_reported(reported: int, served: float) -> None:
    """Every request served was reported, but those in flight when the users stopped."""
    assert served - USERS <= reported <= served, f"Locust reported {reported}, the server served {served:.0f}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """One payload backend (HTTP and HTTPS) and, in front of it, the NGINX Ingress Controller's config and HAProxy
    (edge TLS), each with ROUTES routes."""
    with Stack(tmp_path_factory.mktemp("targets")) as running:
        backend = running.backend(tls=True)
        yield {
            "backend": backend,
            "nginx": running.nginx(backend, routes=ROUTES),
            "haproxy": running.haproxy(backend, tls_mode="edge", routes=ROUTES),
        }


def run_scenario(run_locust, scenario: str, server: Server, *args: str, routes: int = 1, **kwargs):
    url = server.url(tls=scenarios.get(scenario).tls == scenarios.TLS_REQUIRED)
    return run_locust(locustfile(scenario), "--host", url, "-u", str(USERS), "-r", str(USERS), "-t", f"{RUN_S}s",
                      *args, env={"LOADTEST_ROUTES": str(routes)}, **kwargs)


@pytest.fixture(scope="module")
def counted_run(stack, run_locust):
    """counted_run(scenario, target) -> (counters before, Locust's result, counters after): the scenario's run against
    the module's target (over its ROUTES routes, the backend's one), run on the first call only, with the target's
    counters read just before and just after it (stub_status for the nginx ones, the metrics for HAProxy). What the
    tests read of those is frontend- or server-wide, so it holds whichever route a request took."""
    runs = {}

    def counted(scenario: str, target: str) -> tuple:
        if (scenario, target) not in runs:
            server = stack[target]
            read = haproxy_metrics if target == "haproxy" else stub_status
            before = read(server)
            result = run_scenario(run_locust, scenario, server, routes=1 if target == "backend" else ROUTES)
            runs[scenario, target] = before, result, read(server)
        return runs[scenario, target]

    return counted


# --- every scenario against every target ---------------------------------------------------------------------------

@pytest.mark.parametrize("target", targets.TARGETS)
@pytest.mark.parametrize("scenario", scenarios.SCENARIOS)
def test_scenario_against_target(counted_run, scenario, target):
    _, result, _ = counted_run(scenario, target)
    assert_clean_run(result)
    payload = scenarios.get(scenario)
    assert result.mean_length(f"/{payload.payload}") == payload.payload_bytes


# --- what the servers saw: handshakes, connections, routes ---------------------------------------------------------

@pytest.mark.parametrize("target", ["backend", "nginx"])
def test_tls_handshake_is_one_new_connection_per_request_at_nginx(counted_run, target):
    (accepts_before, requests_before), result, (accepts, requests) = counted_run("tls_handshake", target)
    assert_clean_run(result)
    served, connections = requests - requests_before - 1, accepts - accepts_before - 1
    assert_reported(result.count(), served)
    # A request that never got its response may leave an accepted connection without a request.
    assert served <= connections <= served + USERS, (connections, served)


def test_tls_handshake_is_one_full_handshake_per_request_at_haproxy(counted_run):
    before, result, after = counted_run("tls_handshake", "haproxy")
    assert_clean_run(result)
    served = delta(before, after, 'haproxy_frontend_http_requests_total{proxy="https"}')
    assert_reported(result.count(), served)
    handshakes = delta(before, after, "haproxy_process_ssl_connections_total")
    assert served <= handshakes <= served + USERS
    assert delta(before, after, 'haproxy_frontend_connections_total{proxy="https"}') == handshakes
    # Full handshakes: no client offered a session to resume.
    assert delta(before, after, "haproxy_process_ssl_cache_lookups_total") == 0
    assert after["haproxy_process_frontend_ssl_reuse"] == 0


@pytest.mark.parametrize("scenario, one_connection_per_request", [("http_close", True), ("keepalive_1kb", False)])
def test_connections_per_request_at_haproxy(counted_run, scenario, one_connection_per_request):
    before, result, after = counted_run(scenario, "haproxy")
    assert_clean_run(result)
    served = delta(before, after, 'haproxy_frontend_http_requests_total{proxy="http"}')
    connections = delta(before, after, 'haproxy_frontend_connections_total{proxy="http"}')
    assert_reported(result.count(), served)
    if one_connection_per_request:
        assert served <= connections <= served + USERS
    else:
        assert connections <= USERS, f"{connections:.0f} connections for {served:.0f} keep-alive requests"


def test_users_spread_over_the_routes(counted_run):
    before, result, after = counted_run("http_close", "haproxy")
    assert_clean_run(result)
    per_route = [delta(before, after, f'haproxy_backend_http_requests_total{{proxy="be_http_r{i}"}}')
                 for i in range(ROUTES)]
    assert all(n > result.count() / ROUTES / 3 for n in per_route), per_route


def test_nginx_routes_are_its_ingress_hosts(stack):
    server = stack["nginx"]
    for route in range(1, ROUTES):
        assert get(f"{server.http_url}/1kb", host=f"r{route}.127.0.0.1") == (200, b"x" * 1024)
    # Like the controller's default server: a host no Ingress names gets 404.
    assert get(f"{server.http_url}/1kb", host="elsewhere.example")[0] == 404


# --- HAProxy: close mode, TLS modes, threads and pinning -------------------------------------------------------------

def test_haproxy_close_mode_closes_keep_alive_clients(tmp_path, run_locust):
    with Stack(tmp_path) as running:
        server = running.haproxy(running.backend(), values={"haproxy.keepAlive": False})
        before = haproxy_metrics(server)
        result = run_scenario(run_locust, "keepalive_1kb", server)
        after = haproxy_metrics(server)
    assert_clean_run(result)
    served = delta(before, after, 'haproxy_frontend_http_requests_total{proxy="http"}')
    connections = delta(before, after, 'haproxy_frontend_connections_total{proxy="http"}')
    assert_reported(result.count(), served)
    assert served <= connections <= served + USERS


def peer_common_name(url: str) -> str:
    host, port = url.removeprefix("https://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with INSECURE.wrap_socket(raw, server_hostname="r1.127.0.0.1") as tls:
            der = tls.getpeercert(binary_form=True)
    subject = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-subject"], input=der,
                             capture_output=True, check=True, timeout=30).stdout.decode()
    return re.search(r"CN\s*=\s*(\S+)", subject).group(1)


@pytest.mark.parametrize("mode, certificate_from", [("edge", "haproxy"), ("reencrypt", "haproxy"),
                                                    ("passthrough", "backend")])
def test_haproxy_tls_modes(tmp_path, run_locust, mode, certificate_from):
    with Stack(tmp_path) as running:
        backend = running.backend(tls=True)
        server = running.haproxy(backend, tls_mode=mode, routes=2)
        assert peer_common_name(server.https_url) == certificate_from
        before, backend_before = haproxy_metrics(server), stub_status(backend)
        result = run_scenario(run_locust, "tls_handshake", server, routes=2)
        after, backend_after = haproxy_metrics(server), stub_status(backend)
    assert_clean_run(result)
    if mode == "passthrough":
        # HAProxy saw TLS streams only; the backend did the handshakes, one connection per request.
        streams = sum(delta(before, after, f'haproxy_backend_sessions_total{{proxy="be_tcp_r{i}"}}')
                      for i in range(2))
        backend_requests = backend_after[1] - backend_before[1] - 1
        assert_reported(result.count(), backend_requests)
        assert backend_requests <= streams <= backend_requests + USERS
        assert delta(before, after, "haproxy_process_ssl_connections_total") == 0
    else:
        kind = "http" if mode == "edge" else "secure"
        forwarded = sum(delta(before, after, f'haproxy_backend_http_requests_total{{proxy="be_{kind}_r{i}"}}')
                        for i in range(2))
        assert_reported(result.count(), forwarded)
        assert all(delta(before, after, f'haproxy_backend_http_requests_total{{proxy="be_{kind}_r{i}"}}') > 0
                   for i in range(2)), "both routes, chosen by Host, got requests"


def test_haproxy_without_tls_has_no_https_port(tmp_path):
    with Stack(tmp_path) as running:
        server = running.haproxy(running.backend())
        assert server.https_url is None
        assert get(f"{server.http_url}/0kb") == (200, b"")


def thread_affinities(pid: int) -> list[set[int]]:
    return [os.sched_getaffinity(thread.id) for thread in psutil.Process(pid).threads()]


@pytest.mark.parametrize("threads, cpu_set, pinned", [(1, "1", [[1]]), (2, "0-1", [[0], [1]])])
def test_haproxy_threads_and_cpu_pinning(tmp_path, threads, cpu_set, pinned):
    with Stack(tmp_path) as running:
        server = running.haproxy(running.backend(), cpus=threads, values={"haproxy.cpuSet": cpu_set})
        affinities = thread_affinities(server.proc.pid)
    assert sorted(map(sorted, affinities)) == pinned, "one thread per CPU of the set"


def test_nginx_worker_processes(tmp_path):
    with Stack(tmp_path) as running:
        server = running.nginx(running.backend(), cpus=2)
        workers = psutil.Process(server.proc.pid).children()
    assert len(workers) == 2


# --- the step load shape ---------------------------------------------------------------------------------------------

def test_step_load_rises_in_steps_and_stops_by_itself(stack, run_locust):
    result = run_locust([locustfile("keepalive_1kb"), paths.PLUGIN / "loadtest_shapes.py"],
                        "--host", stack["backend"].http_url, timeout=60,
                        env={"LOADTEST_STEP_USERS": "2", "LOADTEST_STEP_TIME": "2s", "LOADTEST_STEPS": "3"})
    assert_clean_run(result)
    steps = [int(row["User Count"]) for row in result.history]
    assert {2, 4, 6} <= set(steps), steps
    assert steps == sorted(steps), "users only rise"


# --- faults: a target or a worker dies mid-run -----------------------------------------------------------------------

def test_target_killed_mid_run_workers_count_failures_and_carry_on(tmp_path, run_locust):
    with Stack(tmp_path) as running:
        server = running.haproxy(running.backend())

        def kill_haproxy_once_serving(_master):
            wait_for("HAProxy served 500 requests", lambda: haproxy_metrics(server)[
                'haproxy_frontend_http_requests_total{proxy="http"}'] > 500, 20, every=0.2)
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(timeout=10)

        # The master's clock starts once both workers are in; 500 keep-alive requests take a fraction of 5 s.
        result = run_locust(locustfile("keepalive_1kb"), "--host", server.http_url, "-u", str(USERS),
                            "-r", str(USERS), "-t", "5s", workers=2, while_running=kill_haproxy_once_serving,
                            timeout=60)
    assert result.returncode == 0 and result.exceptions == [], result.log[-3000:]
    assert result.count() - result.failed() >= 500, "requests served before the kill are kept"
    assert result.failed() > 100, "the users stopped sending after the target went away"
    assert set(result.errors("/1kb")) <= {
        "ConnectionRefusedError(111, 'Connection refused')",
        "ConnectionClosedError('connection closed before the response')",
        "ConnectionResetError(104, 'Connection reset by peer')",
    }


# --- the local mode --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, says", [
    (["--target", "nginx"], "target CPU"),
    (["--target", "haproxy", "--scenario", "tls_handshake", "--tls-mode", "passthrough"], "against haproxy TLS passthrough"),
])
def test_local_cli_runs_against_a_target(args, says):
    out = subprocess.run([sys.executable, "-m", "loadtest", "local", "--workers", "1", "--users", "5",
                          "--run-time", "3s", *args], capture_output=True, text=True, timeout=120)
    assert served_or_generator_bound(out.returncode, out.stdout), out.stdout + out.stderr
    assert says in out.stdout and "(0 failed" in out.stdout, out.stdout


def test_local_cli_refuses_a_tls_mode_the_scenario_cannot_use():
    out = subprocess.run([sys.executable, "-m", "loadtest", "local", "--target", "haproxy",
                          "--scenario", "http_close", "--tls-mode", "edge", "--run-time", "1s"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "http_close is plain HTTP" in out.stderr  # bad input

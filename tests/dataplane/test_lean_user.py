"""LeanHttpUser against real nginx: Locust's counts equal the server's, and every kind of failure is reported.

Locust stops its users at the end of a run without waiting, so up to one request per user can reach the server
without being reported; exact comparisons allow for that, the throughput ones allow 0.5 %.
"""
from __future__ import annotations

import ast
import socket
import socketserver
import threading
import time
from collections import Counter
from typing import NamedTuple

import pytest
from helpers import wait_for

from loadtest import paths

RUN_S = 4
TOLERANCE = 0.005


def assert_counts_match(reported: int, served: int) -> None:
    assert served > 1000, f"only {served} requests served: nothing to compare"
    assert abs(reported - served) <= TOLERANCE * served, f"Locust reported {reported}, nginx served {served}"


def assert_clean(result) -> None:
    assert result.returncode == 0, result.log[-3000:]
    assert result.exceptions == [], result.exceptions


# --- throughput: the keepalive_1kb scenario, standalone and distributed under a step shape ---

STEP_SHAPE = '''
from locust import LoadTestShape


class StepShape(LoadTestShape):
    """4 users, then 8, then stop."""
    steps = ((2.0, 4), (4.5, 8))

    def tick(self):
        run_time = self.get_run_time()
        for until, users in self.steps:
            if run_time < until:
                return users, 100
        return None
'''


def test_standalone_run_reports_what_the_server_served(nginx, run_locust):
    before = nginx.stub_status()
    result = run_locust(paths.LOCUSTFILES / "keepalive_1kb.py", "--host", nginx.url, "-u", "10", "-r", "10",
                        "-t", f"{RUN_S}s")
    after = nginx.stub_status()
    assert_clean(result)
    served = after.requests - before.requests - 1  # the second stub_status request counts itself
    assert_counts_match(result.count(), served)
    assert result.failed() == 0
    assert result.mean_length("/1kb") == 1024
    connections = after.accepts - before.accepts - 1
    assert served / connections > 100, f"{connections} connections for {served} requests: keep-alive not reused"


def test_distributed_run_under_a_step_shape_reports_what_the_server_served(nginx, run_locust, locustfile_dir):
    (locustfile_dir / "step_shape.py").write_text(STEP_SHAPE)
    before = nginx.stub_status()
    result = run_locust([locustfile_dir / "keepalive_1kb.py", locustfile_dir / "step_shape.py"],
                        "--host", nginx.url, workers=2)
    after = nginx.stub_status()
    assert_clean(result)
    assert_counts_match(result.count(), after.requests - before.requests - 1)
    assert result.failed() == 0
    assert {int(row["User Count"]) for row in result.history} >= {4, 8}, "the shape's steps did not both run"


def test_scenario_names_its_user_class_for_sizing():
    tree = ast.parse((paths.LOCUSTFILES / "keepalive_1kb.py").read_text())
    constants = {target.id: node.value.value for node in tree.body
                 if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                 for target in node.targets if isinstance(target, ast.Name)}
    bases = {getattr(base, "id", None) for node in tree.body if isinstance(node, ast.ClassDef) for base in node.bases}
    assert constants["USER_CLASS"] == "LeanHttpUser" and "LeanHttpUser" in bases


# --- failure modes and connection modes, all in one run ---

PROBES = '''
import os

from locust import constant, task

from leanhttp import LeanHttpUser

HTTP, HTTPS, CA_FILE = os.environ["PROBE_HTTP"], os.environ["PROBE_HTTPS"], os.environ["PROBE_CA_FILE"]


class Probe(LeanHttpUser):
    abstract = True
    fixed_count = 1
    wait_time = constant(0.01)

    @task
    def send(self):
        self.request()


class Status500(Probe):
    host, path = HTTP, "/500"


class ClosedWithoutResponse(Probe):
    host, path = HTTP, "/close"


class Refused(Probe):
    host, path = os.environ["PROBE_REFUSED"], "/refused"


class NeverAnswers(Probe):
    host, path, timeout = os.environ["PROBE_SILENT"], "/silent", 0.5


class PlainClose(Probe):
    host, path, keep_alive = HTTP, "/1kb?close", False


class HeadRequest(Probe):
    host, path, method = HTTP, "/1kb?head", "HEAD"


class PostWithHeader(Probe):
    host, path, method, headers, body = HTTP, "/echo", "POST", {"X-Probe": "yes"}, b"x" * 100


class TlsKeepAlive(Probe):
    host, path, verify = HTTPS, "/1kb?tls-keepalive", CA_FILE


class TlsPerRequest(Probe):
    host, path, verify, keep_alive = HTTPS, "/1kb?tls-close", CA_FILE, False


class TlsUntrusted(Probe):
    host, path, verify = HTTPS, "/1kb?tls-untrusted", True


class ServerClosesIdle(Probe):
    """Waits longer than the server keeps an idle connection (300 ms) and longer than leanhttp.IDLE_CHECK_S."""
    host, path, wait_time = HTTP, "/short-idle", constant(1.1)


class CraftedResponses(LeanHttpUser):  # not a Probe: Locust would run the inherited task too
    host, fixed_count, wait_time = os.environ["PROBE_CRAFTED"], 1, constant(0.01)

    @task
    def send(self):
        for path in os.environ["PROBE_CRAFTED_PATHS"].split():
            self.request(path)
'''
PROBE_USERS = 12  # one per class in PROBES


class CannedResponse(NamedTuple):
    writes: list[bytes]  # sent as separate TCP segments
    closes: bool  # the server closes the connection after it
    error: str | None  # the failure Locust must report, None for a success
    body_length: int


CRAFTED = {
    "/chunked": CannedResponse(
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400;ext=1\r\n", b"a" * 1024,
         b"\r\n3e8\r\n" + b"b" * 1000 + b"\r\n0\r\nX-Trailer: 1\r\n", b"\r\n"],
        closes=False, error=None, body_length=2024),
    "/slow-head": CannedResponse(
        [b"HTTP/1.1 200 OK\r", b"\nContent-Le", b"ngth: 2048\r\n\r", b"\n", b"c" * 2048],
        closes=False, error=None, body_length=2048),
    "/early-hints": CannedResponse(
        [b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"],
        closes=False, error=None, body_length=5),
    "/no-content": CannedResponse(
        [b"HTTP/1.1 204 No Content\r\nServer: crafted\r\n\r\n"],
        closes=False, error=None, body_length=0),
    "/until-close": CannedResponse(
        [b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"d" * 1500],
        closes=True, error=None, body_length=1500),
    "/http10": CannedResponse(
        [b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"],
        closes=True, error=None, body_length=10),
    "/redirect": CannedResponse(
        [b"HTTP/1.1 301 Moved\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n"],
        closes=False, error="HttpStatusError('HTTP 301')", body_length=0),
    "/garbage": CannedResponse(
        [b"SSH-2.0-OpenSSH_9.2\r\n\r\n"],
        closes=True, error="HttpProtocolError('malformed status line')", body_length=0),
    "/truncated": CannedResponse(
        [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"],
        closes=True, error="ConnectionClosedError('connection closed mid-response')", body_length=0),
}


class CraftedServer(socketserver.ThreadingTCPServer):
    """Answers each request path with the bytes CRAFTED gives it, to cover framing nginx does not produce."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), CraftedHandler)
        self.served: Counter[str] = Counter()
        self.lock = threading.Lock()


class CraftedHandler(socketserver.BaseRequestHandler):
    def handle(self):
        try:
            self.answer_requests()
        except ConnectionError:
            pass  # the client went away: Locust stops its users mid-request at the end of the run

    def answer_requests(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                data = self.request.recv(65536)
                if not data:
                    return
                buf += data
            head, _, buf = buf.partition(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode()
            with self.server.lock:
                self.server.served[path] += 1
            canned = CRAFTED[path]
            for i, part in enumerate(canned.writes):
                if i:
                    time.sleep(0.002)  # separate segments, so the client sees partial heads and bodies
                self.request.sendall(part)
            if canned.closes:
                return


@pytest.fixture(scope="module")
def crafted_server():
    server = CraftedServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def probes(nginx, tls_cert, crafted_server, locustfile_dir, run_locust):
    (locustfile_dir / "probes.py").write_text(PROBES)
    with socket.socket() as refused, socket.socket() as silent:
        refused.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)  # the kernel completes connections nobody accepts: requests are never answered
        log_before = len(nginx.access_log())
        env = {
            "PROBE_HTTP": nginx.url, "PROBE_HTTPS": nginx.tls_url, "PROBE_CA_FILE": str(tls_cert[0]),
            "PROBE_REFUSED": f"http://127.0.0.1:{refused.getsockname()[1]}",
            "PROBE_SILENT": f"http://127.0.0.1:{silent.getsockname()[1]}",
            "PROBE_CRAFTED": f"http://127.0.0.1:{crafted_server.server_address[1]}",
            "PROBE_CRAFTED_PATHS": " ".join(CRAFTED),
        }
        result = run_locust(locustfile_dir / "probes.py", "-u", str(PROBE_USERS), "-r", "100", "-t", f"{RUN_S}s",
                            env=env)
    assert_clean(result)
    return result, nginx.access_log()[log_before:]


def served(log: list[dict], uri: str) -> list[dict]:
    return [line for line in log if line["uri"] == uri]


def assert_every_request_counted(result, name: str, served_count: int) -> None:
    """Reported == served, but for the one request a user may have in flight when Locust stops it."""
    assert served_count - 1 <= result.count(name) <= served_count, (name, result.count(name), served_count)


def test_500_responses_are_failures_and_the_user_carries_on(probes):
    result, log = probes  # nginx closes the connection after a 500 (Connection: close): no failure of its own
    assert result.count("/500") > 10
    assert result.errors("/500") == {"HttpStatusError('HTTP 500')": result.count("/500")}
    assert_every_request_counted(result, "/500", len(served(log, "/500")))


def test_connection_closed_without_response_is_a_failure_then_reconnects(probes):
    result, log = probes
    assert result.count("/close") > 10
    assert result.errors("/close") == {"ConnectionClosedError('connection closed before the response')":
                                       result.count("/close")}
    assert_every_request_counted(result, "/close", len(served(log, "/close")))


def test_refused_connections_are_failures_and_the_user_keeps_trying(probes):
    result, _ = probes
    assert result.count("/refused") > 10
    assert result.errors("/refused") == {"ConnectionRefusedError(111, 'Connection refused')":
                                         result.count("/refused")}


def test_no_answer_is_a_timeout_failure_after_the_user_timeout(probes):
    result, _ = probes
    assert result.count("/silent") >= 3
    assert result.errors("/silent") == {"TimeoutError('no complete response within 0.5 s')": result.count("/silent")}
    assert 500 <= result.requests["/silent"]["min_response_time"] < 1000


def test_untrusted_certificate_is_a_tls_failure(probes):
    result, log = probes
    assert result.count("/1kb?tls-untrusted") > 10
    (error, occurrences), = result.errors("/1kb?tls-untrusted").items()
    assert error.startswith("SSLCertVerificationError(") and occurrences == result.count("/1kb?tls-untrusted")
    assert served(log, "/1kb?tls-untrusted") == []


def test_keep_alive_over_tls_reuses_the_connection(probes):
    result, log = probes
    lines = served(log, "/1kb?tls-keepalive")
    assert result.failed("/1kb?tls-keepalive") == 0 and result.count("/1kb?tls-keepalive") > 10
    assert_every_request_counted(result, "/1kb?tls-keepalive", len(lines))
    assert max(int(line["connection_requests"]) for line in lines) > 10


def test_head_response_has_no_body_whatever_its_content_length(probes):
    result, log = probes
    lines = served(log, "/1kb?head")
    assert result.failed("/1kb?head") == 0 and result.count("/1kb?head") > 10
    assert result.mean_length("/1kb?head") == 0
    assert max(int(line["connection_requests"]) for line in lines) > 10


def test_method_headers_and_body_are_sent_as_configured(probes):
    result, log = probes
    assert result.failed("/echo") == 0 and result.count("/echo") > 10
    assert result.mean_length("/echo") == len("POST yes 100\n")
    assert max(int(line["connection_requests"]) for line in served(log, "/echo")) > 10  # the body was framed right


@pytest.mark.parametrize("name", ["/1kb?close", "/1kb?tls-close"])
def test_close_mode_opens_a_connection_per_request(probes, name):
    result, log = probes
    lines = served(log, name)
    assert result.failed(name) == 0 and result.count(name) > 10
    assert result.mean_length(name) == 1024
    assert_every_request_counted(result, name, len(lines))
    assert {line["connection_requests"] for line in lines} == {"1"}


def test_tls_per_request_is_a_full_handshake_each_time(probes):
    _, log = probes
    assert {line["ssl_session_reused"] for line in served(log, "/1kb?tls-close")} == {"."}


def test_idle_connection_closed_by_the_server_is_replaced_not_failed(probes):
    result, log = probes
    lines = served(log, "/short-idle")
    assert result.count("/short-idle") >= 3 and result.failed("/short-idle") == 0
    assert_every_request_counted(result, "/short-idle", len(lines))
    assert {line["connection_requests"] for line in lines} == {"1"}


@pytest.mark.parametrize("path", list(CRAFTED))
def test_response_framing(probes, crafted_server, path):
    result, _ = probes
    canned = CRAFTED[path]
    assert result.count(path) >= 3
    assert_every_request_counted(result, path, crafted_server.served[path])
    if canned.error is None:
        assert result.failed(path) == 0, result.errors(path)
        assert result.mean_length(path) == canned.body_length
    else:
        assert result.errors(path) == {canned.error: result.count(path)}


# --- the target goes away mid-run ---

def test_target_killed_mid_run_failures_are_counted_and_the_run_ends_by_itself(start_nginx, run_locust):
    target = start_nginx()

    def kill_once_serving(_locust):
        wait_for("the target served 2,000 requests", lambda: len(target.access_log()) >= 2000, 20, every=0.1)
        target.kill()

    result = run_locust(paths.LOCUSTFILES / "keepalive_1kb.py", "--host", target.url, "-u", "4", "-r", "4",
                        "-t", f"{RUN_S}s", while_running=kill_once_serving, timeout=40)
    assert_clean(result)
    served_ok = sum(line["status"] == "200" for line in target.access_log())
    assert served_ok >= 2000, "the target was killed before it served"
    # nginx logs a request just after sending its response: the kill can fall between the two, for each user
    assert abs(result.count() - result.failed() - served_ok) <= 4
    assert result.failed() > 100, "the users stopped sending after the target went away"
    assert set(result.errors("/1kb")) <= {
        "ConnectionRefusedError(111, 'Connection refused')",
        "ConnectionClosedError('connection closed before the response')",
        "ConnectionResetError(104, 'Connection reset by peer')",
    }

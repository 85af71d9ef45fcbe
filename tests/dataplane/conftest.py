"""Data-plane fixtures: real nginx and real Locust processes on 127.0.0.1, bounded in time, always stopped.

- `nginx`: one nginx for the session, serving the test locations below over HTTP and HTTPS (self-signed certificate),
  with stub_status and an access log to count what the server saw.
- `start_nginx`: a private nginx for a test that breaks its target (kills it mid-run).
- `locustfile_dir`: the project's locustfiles copied flat, as the chart mounts them, for test scenarios beside them.
- `run_locust`: one bounded Locust run, standalone or master + workers, returning its final stats.
"""
from __future__ import annotations

import contextlib
import csv
import json
import shutil
import signal
import subprocess
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import wait_for
from s3server import moto_s3

from loadtest_shared import settings

from loadtest import paths
from loadtest.runtime import cpu
from loadtest.runtime.locust import MASTER, Locust
from loadtest.runtime.locustweb import LocustWeb
from loadtest.runtime.processes import STARTUP_TIMEOUT_S, STOP_TIMEOUT_S, Processes, free_port, stop
from loadtest.runtime.stack import Stack
from loadtest.workload import scenarios

# One process (master_process off), so that killing the target is one signal to one PID; it keeps the user that
# started it, so it reads the files under pytest's private temporary folders. /500 answers 500, /close closes the
# connection without a response (444), /short-idle closes idle keep-alive connections after 300 ms, /echo answers
# with the request's method, X-Probe header and Content-Length. The access log records, per request, what a test
# needs to count and to tell modes apart: server port, URI, status, the connection's request count, TLS session reuse.
NGINX_CONF = """
master_process off;
daemon off;
pid {run}/nginx.pid;
error_log {run}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    log_format counts '$server_port $request_uri $status $connection_requests $ssl_session_reused';
    keepalive_requests 1000;
    client_body_temp_path {run}/tmp; proxy_temp_path {run}/tmp; fastcgi_temp_path {run}/tmp;
    uwsgi_temp_path {run}/tmp; scgi_temp_path {run}/tmp;
    server {{
        listen 127.0.0.1:{port};
        {tls_listen}
        root {run}/html;
        location = /stub_status {{ stub_status; }}
        location = /healthz {{ return 200 "ok\\n"; }}
        location / {{ access_log {run}/access.log counts; }}
        location = /500 {{ access_log {run}/access.log counts; return 500; }}
        location = /close {{ access_log {run}/access.log counts; return 444; }}
        location = /short-idle {{ access_log {run}/access.log counts; alias {run}/html/1kb; keepalive_timeout 300ms; }}
        location = /echo {{
            access_log {run}/access.log counts;
            return 200 "$request_method $http_x_probe $content_length\n";
        }}
    }}
}}
"""
TLS_LISTEN = "listen 127.0.0.1:{tls_port} ssl; ssl_certificate {cert}; ssl_certificate_key {key};"
PAYLOAD_1KB = b"x" * 1023 + b"\n"


@dataclass
class StubStatus:
    accepts: int
    requests: int


class Nginx:
    """A running test nginx: its URLs, its counters, and a way to make it go away."""

    def __init__(self, run: Path, port: int, tls_port: int | None, proc: subprocess.Popen):
        self.run, self.proc = run, proc
        self.url = f"http://127.0.0.1:{port}"
        self.tls_url = f"https://127.0.0.1:{tls_port}" if tls_port else None

    def stub_status(self) -> StubStatus:
        """The server's counters. Each call is itself one request (and possibly one accepted connection)."""
        with urllib.request.urlopen(f"{self.url}/stub_status", timeout=5) as response:
            numbers = response.read().decode().splitlines()[2].split()
        return StubStatus(accepts=int(numbers[0]), requests=int(numbers[2]))

    def access_log(self) -> list[dict]:
        log = self.run / "access.log"
        lines = log.read_text().splitlines() if log.exists() else []
        keys = ("port", "uri", "status", "connection_requests", "ssl_session_reused")
        return [dict(zip(keys, line.split())) for line in lines]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT_S)


def _start_nginx(run: Path, tls: tuple[Path, Path] | None) -> Nginx:
    (run / "html").mkdir(parents=True)
    (run / "tmp").mkdir()
    (run / "html" / "1kb").write_bytes(PAYLOAD_1KB)
    port = free_port()
    tls_port = free_port() if tls else None
    tls_listen = TLS_LISTEN.format(tls_port=tls_port, cert=tls[0], key=tls[1]) if tls else ""
    conf = run / "nginx.conf"
    conf.write_text(NGINX_CONF.format(run=run, port=port, tls_listen=tls_listen))
    log = open(run / "nginx.out", "wb")
    proc = subprocess.Popen(["nginx", "-p", f"{run}/", "-e", "stderr", "-c", str(conf)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    server = Nginx(run, port, tls_port, proc)

    def healthy() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"nginx exited with {proc.returncode}: {(run / 'nginx.out').read_text()}", pytrace=False)
        urllib.request.urlopen(f"{server.url}/healthz", timeout=1).close()
        return True

    try:
        wait_for("nginx answers /healthz", healthy, STARTUP_TIMEOUT_S, every=0.05, ignoring=(OSError,))
    except BaseException:  # pytest's failure too: no nginx left behind
        stop(proc)
        raise
    return server


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (certificate = its own CA file, key)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=30)
    return cert, key


@pytest.fixture(scope="session")
def nginx(tmp_path_factory, tls_cert):
    server = _start_nginx(tmp_path_factory.mktemp("nginx"), tls_cert)
    yield server
    stop(server.proc)


@pytest.fixture
def start_nginx(tmp_path):
    """Start a private nginx (HTTP only) that the test may kill; stopped afterwards if it still runs."""
    started = []

    def start() -> Nginx:
        started.append(_start_nginx(tmp_path / f"nginx{len(started)}", None))
        return started[-1]

    yield start
    for server in started:
        stop(server.proc)


@pytest.fixture(scope="session")
def locustfile_dir(tmp_path_factory) -> Path:
    """The project's locustfiles and plugin in one folder, as the chart's ConfigMaps mount them in the pods: the
    modules flat, the package they share with the CLI a folder of its own."""
    folder = tmp_path_factory.mktemp("locustfiles")
    for source in [*paths.LOCUSTFILES.glob("*.py"), *paths.PLUGIN.glob("*.py")]:
        shutil.copy(source, folder / source.name)
    shutil.copytree(paths.SHARED, folder / paths.SHARED.name, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


# Locust rewrites its --csv files once a second while it runs, not at exit, so they can miss the last second. This
# listener, loaded beside the scenario, writes the final stats (what the summary prints) when Locust quits.
FINAL_STATS_LOCUSTFILE = """
import json
import os

from locust import events
from locust.runners import WorkerRunner
from locust.stats import StatsError

_environment = []


@events.init.add_listener
def _keep(environment, **_):
    _environment.append(environment)


@events.quit.add_listener
def _write_final_stats(**_):
    runner = _environment[0].runner
    if isinstance(runner, WorkerRunner):
        return
    entries = [*runner.stats.entries.values(), runner.stats.total]
    stats = {
        "requests": {e.name: {"count": e.num_requests, "failures": e.num_failures,
                              "content_length": e.total_content_length, "min_response_time": e.min_response_time}
                     for e in entries},
        "errors": [[e.name, StatsError.parse_error(e.error), e.occurrences] for e in runner.stats.errors.values()],
        "exceptions": [row["msg"] for row in runner.exceptions.values()],
    }
    with open(os.environ["LOADTEST_TEST_FINAL_STATS"], "w") as f:
        json.dump(stats, f)
"""


@dataclass
class LocustResult:
    returncode: int
    requests: dict[str, dict]  # final stats per request name; "Aggregated" is the total
    error_rows: list[list]  # [name, error message, occurrences]
    exceptions: list[str]  # unhandled exceptions in tasks
    history: list[dict]  # Aggregated rows of the --csv stats history, one a second
    log: str

    def count(self, name: str = "Aggregated") -> int:
        return self.requests[name]["count"] if name in self.requests else 0

    def failed(self, name: str = "Aggregated") -> int:
        return self.requests[name]["failures"] if name in self.requests else 0

    def mean_length(self, name: str) -> float:
        return self.requests[name]["content_length"] / self.requests[name]["count"]

    def errors(self, name: str) -> dict[str, int]:
        """Failure messages for one request name, with how often each occurred."""
        return {error: occurrences for row_name, error, occurrences in self.error_rows if row_name == name}


def _read_csv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="session")
def run_locust(tmp_path_factory):
    """A function that runs Locust headless to its end and returns its final stats; it stops every process it
    started (by PID) before returning, whatever happens.

    run_locust(locustfiles, *args, workers=0, timeout=60, env=None, while_running=None): `locustfiles` is one path or
    a list (Locust's -f takes several); args go to the standalone or master process; workers > 0 runs a master with
    that many worker processes; while_running(main_process) is called once they are started.
    """

    def run(locustfiles, *args, workers: int = 0, timeout: float = 60, env: dict | None = None,
            while_running=None) -> LocustResult:
        folder = tmp_path_factory.mktemp("locust")
        files = locustfiles if isinstance(locustfiles, list) else [locustfiles]
        (folder / "final_stats.py").write_text(FINAL_STATS_LOCUSTFILE)
        env = {"LOADTEST_TEST_FINAL_STATS": str(folder / "final_stats.json"), **(env or {})}
        common = ["--csv", str(folder / "run"), "--only-summary", "--exit-code-on-error", "0", *args]
        with Processes(folder) as procs:
            locust = Locust(procs, [*files, folder / "final_stats.py"], env=env, cwd=folder)
            if workers:
                main = locust.start_master(*common, web=False, expect_workers=workers,
                                           expect_workers_wait_s=STARTUP_TIMEOUT_S)
                locust.start_workers(workers)
            else:
                main = locust.start_standalone(*common)
            if while_running is not None:
                while_running(main)
            try:
                main.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pytest.fail(f"Locust did not finish within {timeout} s:\n{procs.logs_text()[-3000:]}")
            for worker in locust.workers:  # workers quit after the master
                worker.wait(timeout=STOP_TIMEOUT_S)
            log = procs.logs_text()
        final_stats = folder / "final_stats.json"
        if not final_stats.exists():
            pytest.fail(f"Locust exited with {main.returncode} without final stats:\n{log[-3000:]}")
        stats = json.loads(final_stats.read_text())
        return LocustResult(
            returncode=main.returncode, requests=stats["requests"], error_rows=stats["errors"],
            exceptions=stats["exceptions"],
            history=[row for row in _read_csv(folder / "run_stats_history.csv") if row["Name"] == "Aggregated"],
            log=log,
        )

    return run


class CpuQuotas(cpu.CpuQuotas):
    """The runtime's CPU quotas; the test is skipped where this machine cannot set them."""

    def __init__(self):
        try:
            super().__init__()
        except cpu.CpuQuotaError as e:
            pytest.skip(str(e))

    def limit(self, pids: list[int], cores: float) -> None:
        try:
            super().limit(pids, cores)
        except cpu.CpuQuotaError as e:
            pytest.skip(str(e))


@pytest.fixture(scope="session")
def make_cpu_quotas():
    """`with make_cpu_quotas() as quotas:` CPU quotas, removed on exit (the test is skipped where they cannot be
    set). Open it before the processes it limits, so they have stopped when their groups go."""
    return CpuQuotas


@contextlib.contextmanager
def idle_master(folder: Path, wait_s: str, timeout_s: float):
    """The local stack's backend (nginx) and an idle Locust master of the keepalive scenario, its users `wait_s`
    apart, its web UI behind a password, one worker connected: (backend, locust, web)."""
    with Stack(folder) as stack:
        _, server = stack.target("backend", "none")
        locust = Locust(stack.procs, scenarios.get("keepalive_1kb").locustfile, env={settings.WAIT.env: wait_s})
        locust.start_master("--host", server.url(tls=False), expect_workers=0)
        locust.start_workers(1)
        web = LocustWeb(locust.web_url, locust.web_credentials)
        stack.procs.wait_http(MASTER, locust.web_url)
        web.wait_workers(1, timeout_s)
        yield server, locust, web


# --- S3: moto's server, signatures checked (tests/s3server.py) ----------------------------------------------------

@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """(endpoint, credentials) of a moto S3 that checks signatures, with the bucket S3_BUCKET; stopped by PID after."""
    with moto_s3(tmp_path_factory.mktemp("moto")) as found:
        yield found

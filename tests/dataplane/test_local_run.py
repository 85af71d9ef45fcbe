"""The README's first command, end to end: the chart's nginx payload config + Locust master and workers."""
import subprocess
import sys
import urllib.error
import urllib.request
from base64 import b64encode

import pytest
from helpers import served_or_generator_bound, wait_for

from loadtest_shared import verdict

from loadtest.runtime import localrun
from loadtest.runtime.locust import Locust
from loadtest.runtime.processes import Processes
from loadtest.workload import scenarios


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    lines = []
    result = localrun.run("keepalive_1kb", users=20, spawn_rate=20, run_time_s=6, workers=2,
                          workdir=tmp_path_factory.mktemp("local"), progress=lines.append)
    return result, lines


def test_local_run_serves_requests_without_failures(short_run):
    result, _ = short_run
    assert result.requests > 1000, f"only {result.requests} requests in 6 s"
    assert result.failures == 0
    # Percentiles in whole milliseconds: on a fast machine p95 may well be 0 ms (57,000 RPS of 1 KB answers on
    # loopback), so their order is what holds, and the slowest request took some time.
    assert result.rps > 0 and 0 <= result.p50_ms <= result.p95_ms <= result.p99_ms and result.p99_ms > 0


def test_local_run_shows_progress_and_measures_both_sides(short_run):
    result, lines = short_run
    assert any("RPS" in line and "worker CPU" in line for line in lines), lines
    assert len(result.worker_cpu) == 2 and all(0 < c <= 1.5 for c in result.worker_cpu)
    assert result.target_cpu is not None and result.target_cpu > 0
    assert result.verdict.kind in (verdict.GENERATOR_BOUND, verdict.TARGET_BOUND, verdict.HEALTHY)


def test_local_cli_prints_the_result_and_the_verdict():
    out = subprocess.run([sys.executable, "-m", "loadtest", "local", "--workers", "1", "--users", "5",
                          "--run-time", "3s"], capture_output=True, text=True, timeout=120)
    assert served_or_generator_bound(out.returncode, out.stdout), out.stdout + out.stderr
    for part in ("RPS", "p50 / p95 / p99", "verdict"):
        assert part in out.stdout


def test_local_cli_names_an_unknown_scenario():
    out = subprocess.run([sys.executable, "-m", "loadtest", "local", "--scenario", "nope", "--run-time", "1s"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2  # bad input: argparse refuses it with the registry's scenarios
    assert "invalid choice: 'nope'" in out.stderr and all(name in out.stderr for name in scenarios.SCENARIOS)


def answers(url: str) -> bool:
    """The server answers (a 401 is an answer); refused connections raise OSError."""
    try:
        urllib.request.urlopen(url, timeout=1).close()
    except urllib.error.HTTPError:
        pass
    return True


@pytest.fixture
def locust_ui_with_auth(tmp_path):
    with Processes(tmp_path) as procs:
        locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile)
        locust.start_standalone("--host", "http://127.0.0.1:9", web=True, env={"LOADTEST_WEB_AUTH": "admin:s3cret"})
        url = f"{locust.web_url}/"
        wait_for("the web UI answers", lambda: answers(url), 20, every=0.2, ignoring=(OSError,))
        yield url


def test_web_ui_basic_auth_rejects_strangers_and_admits_the_secret_holder(locust_ui_with_auth):
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(locust_ui_with_auth, timeout=5)
    assert denied.value.code == 401
    req = urllib.request.Request(locust_ui_with_auth,
                                 headers={"Authorization": "Basic " + b64encode(b"admin:s3cret").decode()})
    with urllib.request.urlopen(req, timeout=5) as ok:
        assert ok.status == 200


def test_a_local_master_admits_nobody_without_its_run_password(tmp_path):
    """Even on 127.0.0.1 another user of the machine must not aim the workers: the launcher gives every web UI a
    password of its own, and /swarm (which takes a host) refuses a request without it."""
    with Processes(tmp_path) as procs:
        locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile)
        locust.start_master("--host", "http://127.0.0.1:9")
        procs.wait_http("locust-master", f"{locust.web_url}/")
        user, password = locust.web_credentials.split(":")
        assert user == "locust" and len(password) >= 24
        form = b"user_count=1&spawn_rate=1&host=http%3A%2F%2F198.18.0.1"
        for path, data in (("/swarm", form), ("/stats/requests", None), ("/", None)):
            with pytest.raises(urllib.error.HTTPError) as denied:
                urllib.request.urlopen(urllib.request.Request(locust.web_url + path, data=data), timeout=5)
            assert denied.value.code == 401, path
        wrong = {"Authorization": "Basic " + b64encode(b"locust:guess").decode()}
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(urllib.request.Request(locust.web_url + "/stats/requests", headers=wrong),
                                   timeout=5)
        assert denied.value.code == 401
        right = {"Authorization": "Basic " + b64encode(locust.web_credentials.encode()).decode()}
        with urllib.request.urlopen(urllib.request.Request(locust.web_url + "/stats/requests", headers=right),
                                    timeout=5) as ok:
            assert ok.status == 200

"""Your own test on the data plane: the example (its helper module, its extra package installed from a local wheel,
its key from the environment) runs with `loadtest local -f`, gets the verdict and a per-core figure; a file of the
user's that imports nothing of ours still gets the metrics plugin, the web UI's login and the workers' CPU-ceiling
reports; the documented API (LeanHttpUser, RouteSpread) works from a user's file."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from base64 import b64encode
from pathlib import Path

import pytest
from helpers import served_or_generator_bound, wait_for

from loadtest_shared import settings

from loadtest import paths
from loadtest.runtime.localrun import own_test_env
from loadtest.runtime.locust import MASTER, Locust
from loadtest.runtime.processes import STARTUP_TIMEOUT_S, Processes, free_port
from loadtest.workload import usertest

SHOP = paths.HOME / "examples" / "shop"
WHEELS = paths.CACHE / "wheels"  # scripts/setup downloads the example's wheels here


def loadtest(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "loadtest", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env}, stdin=subprocess.DEVNULL)


def offline_env(cache: Path) -> dict[str, str]:
    """The example's environment with `cache` as the cache and pip told to install only from the local wheels."""
    assert list(WHEELS.glob("*.whl")), f"no wheels in {WHEELS}: run scripts/setup"
    return {"XDG_CACHE_HOME": str(cache), "PATH": f"{paths.BIN}{os.pathsep}{os.environ['PATH']}",
            "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELS),
            "SHOP_SIGNING_KEY": "a-test-key-from-the-environment"}


@pytest.fixture
def offline(tmp_path) -> dict[str, str]:
    """A fresh cache: the package really gets installed here, from the wheel whose hash the requirements pin."""
    return offline_env(tmp_path / "cache")


@pytest.fixture(scope="module")
def offline_module_cache(tmp_path_factory) -> dict[str, str]:
    """One cache for the tests that do not check the install: pip installs the example's package once for them."""
    return offline_env(tmp_path_factory.mktemp("cache"))


def test_the_example_runs_locally_with_its_package_and_its_key_and_gets_a_verdict(offline, tmp_path):
    result = loadtest("local", "-f", str(SHOP / "locustfile.py"), "--requirements", str(SHOP / "requirements.txt"),
                      "--workers", "1", "--users", "40", "--run-time", "6s", env=offline)
    assert served_or_generator_bound(result.returncode, result.stdout), result.stdout + result.stderr
    installed = list((tmp_path / "cache" / "loadtest" / "packages").glob("*/jwt/__init__.py"))
    assert len(installed) == 1, "pyjwt was not installed from the local wheel"
    out = result.stdout
    assert "has User class(es) Shopper" in out
    assert "Result (shop against backend, 1 worker(s), 40 users, 6 s)" in out
    requests = int(re.search(r"requests\s+([\d,]+) \(0 failed", out).group(1).replace(",", ""))
    assert requests > 100, out
    assert re.search(r"verdict\s+(generator-bound|target-bound|healthy): ", out), out


def test_without_its_key_the_example_is_refused_before_anything_starts(offline_module_cache):
    result = loadtest("local", "-f", str(SHOP / "locustfile.py"), "--requirements", str(SHOP / "requirements.txt"),
                      env={**offline_module_cache, "SHOP_SIGNING_KEY": ""})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "SHOP_SIGNING_KEY or SHOP_SIGNING_KEY_FILE must give the signing key" in result.stderr
    assert "Traceback" not in result.stderr and "RPS" not in result.stdout


def test_a_file_without_a_user_class_is_refused_by_locusts_own_loader(tmp_path):
    mine = tmp_path / "helpers_only.py"
    mine.write_text("import json\n\n\nclass Client:\n    pass\n")
    result = loadtest("local", "-f", str(mine), env={})
    assert result.returncode == 2 and "no User class" in result.stderr, result.stderr


def test_in_the_open_model_a_taskset_with_its_own_wait_time_stops_the_run_naming_it(tmp_path):
    """Its requests would go out on its own clock, not at the rate: the worker refuses to start, and the run ends at
    once with the worker's words, not after sending nothing for its whole run time."""
    mine = tmp_path / "paced.py"
    mine.write_text("from locust import HttpUser, TaskSet, between, task\n\n\nclass Checkout(TaskSet):\n"
                    "    wait_time = between(1, 2)\n\n    @task\n    def page(self):\n"
                    "        self.client.get('/1kb')\n\n\nclass Shopper(HttpUser):\n    tasks = [Checkout]\n")
    result = loadtest("local", "-f", str(mine), "--workers", "1", "--arrival-rate", "50", "--run-time", "30s",
                      env={})
    assert result.returncode == 4, result.stdout + result.stderr
    assert "Locust worker 0 exited with 1 during the run" in result.stderr, result.stderr
    assert "TaskSet Checkout of Shopper has a wait_time of its own" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_calibrate_f_gives_the_examples_figure_per_core_and_plan_sizes_for_it(offline_module_cache, tmp_path):
    calibration = tmp_path / "calibration.json"
    result = loadtest("calibrate", "-f", str(SHOP / "locustfile.py"), "--requirements", str(SHOP / "requirements.txt"),
                      "--users", "300", "--run-time", "6s", "--output", str(calibration), env=offline_module_cache)
    assert result.returncode == 0, result.stdout + result.stderr
    shop = json.loads(calibration.read_text())["scenarios"]["shop"]
    assert shop["user_class"] == "Shopper" and shop["locustfile"] == str(SHOP / "locustfile.py")
    assert shop["rps_per_core"] > 100 and shop["worker_cpu"] > 0 and shop["response_bytes"] > 1024
    plan = loadtest("plan", "--scenario", "shop", "--target-rps", "10000", "--calibration", str(calibration),
                    env=offline_module_cache)
    assert plan.returncode == 0, plan.stderr
    assert f"{shop['rps_per_core']:,.0f} RPS per worker core" in plan.stdout


def fetch(url: str, credentials: str | None = None) -> str:
    headers = {"Authorization": "Basic " + b64encode(credentials.encode()).decode()} if credentials else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as response:
        return response.read().decode()


def test_a_file_that_imports_nothing_of_ours_gets_the_metrics_the_login_and_the_cpu_ceiling(tmp_path, nginx):
    mine = tmp_path / "plain.py"
    mine.write_text("from locust import FastHttpUser, constant, task\n\n\nclass Plain(FastHttpUser):\n"
                    "    wait_time = constant(0.01)\n\n    @task\n    def get(self):\n        self.client.get('/1kb')\n")
    metrics = free_port()
    with Processes(tmp_path / "logs") as procs:
        locust = Locust(procs, usertest.locustfiles(mine), env=own_test_env(mine))
        locust.start_master("--autostart", "-u", "5", "-r", "5", "-t", "30s", "--host", nginx.url,
                            env={settings.METRICS_PORT.env: str(metrics), "LOADTEST_WEB_AUTH": "admin:s3cret"})
        procs.wait_http(MASTER, f"http://127.0.0.1:{metrics}/metrics")
        locust.start_workers(1)
        with pytest.raises(urllib.error.HTTPError) as denied:
            fetch(f"{locust.web_url}/")
        assert denied.value.code == 401
        text = wait_for("the worker's requests and CPU limit on the master's metrics",
                        lambda: fetch(f"http://127.0.0.1:{metrics}/metrics"), STARTUP_TIMEOUT_S + 10,
                        until=lambda text: re.search(r'locust_requests_total\{method="GET",name="/1kb"\} [1-9]', text)
                        and "locust_worker_cpu_limit_cores{" in text, detail=lambda: procs.log_tail(MASTER))
    assert 'locust_workers{state="running"} 1.0' in text


def test_a_users_file_can_use_the_documented_api(tmp_path):
    mine = tmp_path / "lean.py"
    mine.write_text("from locust import constant, task\n\nfrom leanhttp import LeanHttpUser\n"
                    "from loadtest_lib import RouteSpread, setting\n\n\n"
                    "class Lean(RouteSpread, LeanHttpUser):\n    path = setting('path', '/1kb')\n"
                    "    wait_time = constant(0)\n\n    @task\n    def get(self):\n        self.request()\n")
    result = loadtest("local", "-f", str(mine), "--workers", "1", "--users", "5", "--run-time", "4s", env={})
    assert served_or_generator_bound(result.returncode, result.stdout), result.stdout + result.stderr
    assert "Result (lean against backend" in result.stdout

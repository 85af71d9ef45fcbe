"""The monitoring against real processes: Prometheus (Debian's package) scrapes a local data plane, the Locust master
through the loadtest_metrics plugin, nginx through nginx-prometheus-exporter, HAProxy through its built-in exporter,
and evaluates the chart's saturation rules on it; every dashboard query is sent to its query API.

Two bounded runs, the machine's load notwithstanding, because the bottleneck is imposed with CFS quotas (cgroups):
- starved: each worker limited to 0.1 CPU (the seed's thin workers) must give the generator-bound verdict;
- target-bound: nginx limited to 0.05 CPU, workers free: must not.
Quotas need root and a writable cgroup cpu controller (v1 or v2); without them these tests are skipped.
"""
from __future__ import annotations

import time
import urllib.error
import urllib.request
from base64 import b64encode
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import yaml
from helpers import wait_for

from loadtest_shared import settings, verdict

from loadtest.generate import dashboards
from loadtest.judging import rules
from loadtest.runtime import prom, stack, sweep_local
from loadtest.runtime.locust import MASTER, Locust
from loadtest.runtime.processes import Processes, free_port
from loadtest.runtime.tools import find as find_tool
from loadtest.workload import scenarios, targets


# The labels the chart's scrape configurations give every series, here as static labels.
RELEASE = "local"
STARTUP_TIMEOUT_S = 20
# A worker's CPU reaches the master with its stats reports, every 3 s: the verdict must appear well within this.
VERDICT_TIMEOUT_S = 90
LOCUST_RUN_TIME_S = VERDICT_TIMEOUT_S + 30


class Prometheus(prom.Prometheus):
    def verdicts(self, at: float | None = None) -> list[str]:
        return [s["metric"]["verdict"] for s in self.query(f'loadtest:verdict{{release="{RELEASE}"}}', at)]


@dataclass
class Run:
    """A data plane under load, scraped by Prometheus, at the moment its verdict appeared."""

    prometheus: Prometheus
    verdict_at: float


def haproxy_config(frontend: int, exporter: int, backend: int) -> str:
    return f"""\
global
    nbthread 1
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend metrics
    bind 127.0.0.1:{exporter}
    http-request use-service prometheus-exporter if {{ path /metrics }}
frontend fe
    bind 127.0.0.1:{frontend}
    default_backend nginx
backend nginx
    server nginx 127.0.0.1:{backend}
"""


def prometheus_config(ports: dict[str, int]) -> str:
    return yaml.safe_dump(sweep_local.prometheus_config(RELEASE, [
        sweep_local.ScrapeJob("locust", f"http://127.0.0.1:{ports['locust_metrics']}/metrics", "locust-master",
                              "generator"),
        sweep_local.ScrapeJob("nginx", f"http://127.0.0.1:{ports['nginx_exporter']}/metrics", "nginx", "target"),
        sweep_local.ScrapeJob("haproxy", f"http://127.0.0.1:{ports['haproxy_exporter']}/metrics", "haproxy", "target"),
    ]))


def start_data_plane(procs: Processes, quotas, workdir: Path, *, workers: int, users: int,
                     worker_cpu: float | None = None, nginx_cpu: float | None = None) -> Prometheus:
    ports = {name: free_port() for name in (
        "nginx", "nginx_exporter", "haproxy", "haproxy_exporter", "locust_metrics", "prometheus")}

    runtime = workdir / "nginx"
    (runtime / "html").mkdir(parents=True)
    files = stack.render(targets.get("backend").config_template, {"backend.bindAddress": "127.0.0.1:", "backend.port": ports["nginx"]})
    (runtime / "nginx.conf").write_text(files.pop("nginx.conf"))
    for name, body in files.items():
        (runtime / "html" / name).write_text(body)
    # One process (master_process off), which keeps the user that started it: an unprivileged worker cannot reach
    # pytest's private temporary folders and answered every request 403 (the verdict counted them as failures).
    nginx = procs.start("nginx", [find_tool("nginx"), "-p", f"{runtime}/", "-e", "stderr", "-c",
                                  str(runtime / "nginx.conf"), "-g", "daemon off; master_process off;"])
    procs.wait_http("nginx", f"http://127.0.0.1:{ports['nginx']}/healthz")
    if nginx_cpu:
        quotas.limit([nginx.pid, *(c.pid for c in psutil.Process(nginx.pid).children())], nginx_cpu)
    procs.start("nginx-exporter", [
        find_tool("nginx-prometheus-exporter"), f"--nginx.scrape-uri=http://127.0.0.1:{ports['nginx']}/stub_status",
        f"--web.listen-address=127.0.0.1:{ports['nginx_exporter']}"])
    procs.wait_http("nginx-exporter", f"http://127.0.0.1:{ports['nginx_exporter']}/metrics")

    (workdir / "haproxy.cfg").write_text(haproxy_config(ports["haproxy"], ports["haproxy_exporter"], ports["nginx"]))
    procs.start("haproxy", [find_tool("haproxy"), "-db", "-f", str(workdir / "haproxy.cfg")])
    procs.wait_http("haproxy", f"http://127.0.0.1:{ports['haproxy_exporter']}/metrics")

    (workdir / "prometheus.yml").write_text(prometheus_config(ports))
    procs.start("prometheus", [
        find_tool("prometheus"), f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'prometheus-data'}",
        f"--web.listen-address=127.0.0.1:{ports['prometheus']}"])
    procs.wait_http("prometheus", f"http://127.0.0.1:{ports['prometheus']}/-/ready")

    locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile)
    locust.start_master(
        "-u", str(users), "-r", str(users), "-t", f"{LOCUST_RUN_TIME_S}s",
        "--host", f"http://127.0.0.1:{ports['haproxy']}", web=False, expect_workers=workers,
        expect_workers_wait_s=STARTUP_TIMEOUT_S, env={settings.METRICS_PORT.env: str(ports["locust_metrics"])})
    procs.wait_http(MASTER, f"http://127.0.0.1:{ports['locust_metrics']}/metrics")
    for worker in locust.start_workers(workers):
        if worker_cpu:
            quotas.limit([worker.pid], worker_cpu)
    return Prometheus(f"http://127.0.0.1:{ports['prometheus']}")


def wait_for_verdict(prometheus: Prometheus, procs: Processes, workers: int, wanted: str | None = None) -> float:
    """Poll until every worker's CPU was measured, the master's and both targets' request rates are (nginx and
    HAProxy: two scrapes of each since the swarm's statistics were reset) and the release has a verdict (`wanted`,
    when given); the time."""
    def judged() -> dict:
        now = time.time()
        return {"at": now, "verdicts": prometheus.verdicts(now),
                "measured workers": prometheus.scalar("count(locust_worker_cpu_usage_cores > 0)", now),
                "targets served": prometheus.scalar("count(loadtest:target_requests:rate1m)", now),
                # The recorded rate, not the raw one: its group records the failures' rate in the same evaluation,
                # where a raw rate can be there a rule evaluation before the recorded ones are.
                "sent": prometheus.scalar("sum(loadtest:requests:rate1m) > 0", now)}

    return wait_for(f"a {wanted or 'verdict'} with {workers} measured worker(s) and both targets' rates", judged,
                    VERDICT_TIMEOUT_S, every=1, detail=lambda: procs.log_tail("locust-master"),
                    until=lambda seen: seen["measured workers"] == workers and seen["targets served"] == 2
                    and seen["sent"] and seen["verdicts"] and wanted in (None, *seen["verdicts"]))["at"]


@pytest.fixture(scope="module")
def starved_run(tmp_path_factory, make_cpu_quotas):
    """Two workers limited to 0.1 CPU each, 20 users without think time."""
    workdir = tmp_path_factory.mktemp("starved")
    with make_cpu_quotas() as quotas, Processes(workdir) as procs:
        prometheus = start_data_plane(procs, quotas, workdir, workers=2, users=20, worker_cpu=0.1)
        at = wait_for_verdict(prometheus, procs, 2, "generator-bound")
        yield Run(prometheus, at)


@pytest.fixture(scope="module")
def target_bound_run(tmp_path_factory, make_cpu_quotas):
    """nginx limited to 0.05 CPU behind HAProxy; one unlimited worker."""
    workdir = tmp_path_factory.mktemp("target-bound")
    with make_cpu_quotas() as quotas, Processes(workdir) as procs:
        prometheus = start_data_plane(procs, quotas, workdir, workers=1, users=20, nginx_cpu=0.05)
        at = wait_for_verdict(prometheus, procs, 1)
        # A few more evaluations, so a late generator-bound verdict would show.
        time.sleep(5)
        yield Run(prometheus, at), time.time()


def test_prometheus_scrapes_the_master_nginx_and_haproxy(starved_run):
    targets = starved_run.prometheus.get("/api/v1/targets")["activeTargets"]
    health = {t["labels"]["job"]: (t["health"], t["lastError"]) for t in targets}
    assert health == {job: ("up", "") for job in ("locust", "nginx", "haproxy")}


def test_the_plugin_reports_every_worker_its_limit_and_the_run(starved_run):
    query = starved_run.prometheus.query
    at = starved_run.verdict_at
    workers = query(f'locust_workers{{release="{RELEASE}", state="running"}}', at)
    assert [float(s["value"][1]) for s in workers] == [2]
    limits = query("locust_worker_cpu_limit_cores", at)
    assert sorted(float(s["value"][1]) for s in limits) == [0.1, 0.1]
    used = query("locust_worker_cpu_usage_cores", at)
    assert len(used) == 2 and all(0.05 < float(s["value"][1]) <= 0.12 for s in used), used
    assert query('sum(rate(locust_requests_total[1m])) > 0', at)
    assert query('sum(rate(locust_worker_requests_total[1m])) > 0', at)
    quantiles = {s["metric"]["quantile"] for s in query("locust_aggregated_response_time_seconds", at)}
    assert quantiles == {"0.5", "0.95", "0.99", "0.999"}, quantiles
    assert query('locust_users == 20', at)


def test_starved_workers_give_the_generator_bound_verdict(starved_run):
    at = starved_run.verdict_at
    assert starved_run.prometheus.verdicts(at) == ["generator-bound"]
    saturation = starved_run.prometheus.query("loadtest:worker_cpu_saturation:ratio", at)
    threshold = verdict.THRESHOLDS["loadtest:cpu_saturation:threshold"]
    # The verdict follows the busiest worker; a starved worker's own CPU reading may dip just below the line.
    assert saturation and max(float(s["value"][1]) for s in saturation) >= threshold, saturation
    # `loadtest local` judges with the same threshold: the same figures give it the same verdict.
    sample = verdict.Sample(worker_cpu=tuple(float(s["value"][1]) for s in saturation))
    assert verdict.judge(verdict.Window.of([sample])).kind == verdict.GENERATOR_BOUND


def test_every_rule_evaluates_without_error(starved_run):
    groups = starved_run.prometheus.get("/api/v1/rules")["groups"]
    evaluated = [r for g in groups for r in g["rules"]]
    assert len(evaluated) == len(rules.rules())
    assert [(r["name"], r["lastError"]) for r in evaluated if r["health"] != "ok"] == []


def test_the_target_is_served_and_measured(starved_run):
    at = starved_run.verdict_at
    served = starved_run.prometheus.query("loadtest:target_requests:rate1m", at)
    assert {s["metric"]["pod"] for s in served} == {"nginx", "haproxy"}
    assert all(float(s["value"][1]) > 0 for s in served)
    assert starved_run.prometheus.scalar("loadtest:request_failures:rate1m", at) == 0


def test_a_target_bottleneck_is_not_generator_bound(target_bound_run):
    run, end = target_bound_run
    prometheus = run.prometheus
    seen = {v for t in range(int(run.verdict_at), int(end) + 1) for v in prometheus.verdicts(t)}
    assert seen == {"healthy"}, seen
    saturation = prometheus.query("max(loadtest:worker_cpu_saturation:ratio)", end)
    assert float(saturation[0]["value"][1]) < verdict.THRESHOLDS["loadtest:cpu_saturation:threshold"]
    # Locally no cAdvisor measures the target's CPU, so the local verdict cannot say target-bound for nginx.



def fetch(url: str, credentials: str | None = None) -> str:
    headers = {"Authorization": "Basic " + b64encode(credentials.encode()).decode()} if credentials else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as response:
        return response.read().decode()


def test_web_ui_mode_serves_metrics_on_the_ui_behind_its_login_and_on_the_metrics_port(tmp_path):
    """As the chart runs it: a master with the web UI (basic auth on), one worker, LOADTEST_METRICS_PORT set."""
    metrics = free_port()
    with Processes(tmp_path) as procs:
        locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile)
        locust.start_master("--host", "http://127.0.0.1:9",
                            env={settings.METRICS_PORT.env: str(metrics), "LOADTEST_WEB_AUTH": "admin:s3cret"})
        web = locust.web_port
        procs.wait_http(MASTER, f"http://127.0.0.1:{metrics}/metrics")
        locust.start_workers(1)
        with pytest.raises(urllib.error.HTTPError) as denied:
            fetch(f"http://127.0.0.1:{web}/metrics")
        assert denied.value.code == 401
        wait_for("one ready worker on the master's metrics", lambda: 'locust_workers{state="ready"} 1.0' in fetch(
            f"http://127.0.0.1:{metrics}/metrics"), STARTUP_TIMEOUT_S, detail=lambda: procs.log_tail("locust-master"))
        on_ui = fetch(f"http://127.0.0.1:{web}/metrics", "admin:s3cret")
        for sample in ('locust_runner_state{state="ready"} 1.0', "locust_users 0.0",
                       'locust_workers{state="ready"} 1.0', "process_cpu_seconds_total"):
            assert sample in on_ui


def test_a_worker_marks_itself_ready_only_once_the_master_accepted_it(tmp_path):
    """The chart's worker readiness: no file while the master is not there yet, the file once it answered."""
    ready = tmp_path / "connected"
    with Processes(tmp_path) as procs:
        locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile,
                        env={settings.WORKER_READY_FILE.env: str(ready)})
        locust.start_workers(1)
        time.sleep(3)  # the worker has started and sent its first "client_ready" into the void
        assert not ready.exists()
        locust.start_master("--host", "http://127.0.0.1:9", web=False)
        # The worker retries every 5 s (Locust's CONNECT_TIMEOUT).
        wait_for("the worker's ready file", ready.exists, STARTUP_TIMEOUT_S, every=0.2,
                 detail=lambda: procs.log_tail("locust-worker-0"))


PANEL_QUERIES = [(b, p, e) for b, p, e in dashboards.all_panel_queries()
                 if not dashboards.needs_cluster(e) and not dashboards.needs_open_model(e)]
CLUSTER_QUERIES = [(b, p, e) for b, p, e in dashboards.all_panel_queries() if dashboards.needs_cluster(e)]
OPEN_MODEL_QUERIES = [(b, p, e) for b, p, e in dashboards.all_panel_queries() if dashboards.needs_open_model(e)]


@pytest.mark.parametrize("board, panel, expr", PANEL_QUERIES, ids=[f"{b}: {p}" for b, p, _ in PANEL_QUERIES])
def test_dashboard_query_returns_data(starved_run, board, panel, expr):
    """Every panel's query on the series the local data plane has returns data."""
    result = starved_run.prometheus.query(dashboards.resolve(expr, RELEASE, RELEASE), starved_run.verdict_at)
    assert result, f"{board} / {panel}: no data"


def test_cluster_panel_queries_are_valid_promql(starved_run):
    """The panels on series only a cluster has (cAdvisor, kube-state-metrics, the NGINX Ingress Controller) have no
    data here; Prometheus still parses and runs them. The node layer checks that they return data. So do the panels
    on the open model's series (locust.load.arrivalRate): these runs are closed-model ones."""
    for board, panel, expr in CLUSTER_QUERIES + OPEN_MODEL_QUERIES:
        starved_run.prometheus.query(dashboards.resolve(expr, RELEASE, RELEASE), starved_run.verdict_at)

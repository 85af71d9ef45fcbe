"""The verdict table (tests/verdict_table.py) on the Prometheus path, for real: each row's series served live by an
exporter and scraped by a real Prometheus evaluating the chart's rules as a release renders them (a short window),
then read back by `sweeper.measure`, the one reader of `loadtest run --release`, the sweep and `loadtest tune`. Each
row whose samples are all alike (a live series holds one value) must get the local path's kind and shares.

The exporter's counters advance by a fixed amount at every scrape, not with the clock, so a window's counts are
exact: 1,000 requests a scrape and the row's share of them failed, one fault of the row's kind, the open model's
slots and loop probes."""
from __future__ import annotations

import http.server
import threading
import urllib.request

import pytest
import yaml
from helpers import wait_for
from verdict_table import CASES

from loadtest_shared import verdict

from loadtest.runtime import prom, stack, sweeper, tools
from loadtest.runtime.processes import LOCAL_HOST, STARTUP_TIMEOUT_S, Processes, free_port

SCRAPE_S = 1
WINDOW_S = 8  # the release's monitoring.rules.windowSeconds: four scrapes at least (the chart refuses fewer)
UUID = "0123456789abcdef0123456789abcdef"
REQUESTS = 1000  # a scrape
HELD = 0.95  # the offered rate, as a share of what a scrape's requests send
LIVE = [c for c in CASES if len(set(c.samples)) == 1]


def series(case, scrapes: int) -> list[str]:
    """The row's series in the exposition format at its `scrapes`-th scrape: labelled as the chart's scrape configs
    label them (release, namespace, pod, loadtest_role)."""
    r, sample = case.name, case.samples[0]
    locust = f'release="{r}", namespace="{r}", pod="{r}-locust-master", loadtest_role="generator"'
    out = [f'locust_runner_state{{{locust}, state="running"}} 1', f"locust_users{{{locust}}} 10",
           f"locust_requests_total{{{locust}}} {REQUESTS * scrapes}",
           f"locust_request_failures_total{{{locust}}} {round(REQUESTS * (case.failure_ratio or 0)) * scrapes}",
           # Locust's histogram: 99 % answered in 4 ms, 1 % in 40 ms.
           f'locust_responses_total{{{locust}, response_time_ms="4"}} {990 * scrapes}',
           f'locust_responses_total{{{locust}, response_time_ms="40"}} {10 * scrapes}']
    for w, cpu in sample.workers().items():
        worker = f'{locust}, worker="{r}-worker-{w}_{UUID}"'
        out += [f"locust_worker_cpu_usage_cores{{{worker}}} {cpu}", f"locust_worker_cpu_limit_cores{{{worker}}} 1"]
        if sample.worker_throttling is not None:  # cAdvisor's counters of the worker's container
            container = f'namespace="{r}", pod="{r}-worker-{w}", container="worker"'
            out += [f"container_cpu_cfs_periods_total{{{container}}} {10 * scrapes}",
                    f"container_cpu_cfs_throttled_periods_total{{{container}}} "
                    f"{round(10 * sample.throttling()[w]) * scrapes}"]
    if sample.target_cpu is not None:  # HAProxy's busy time; else the target's CPU is not measured at all
        out.append(f'haproxy_process_idle_time_percent{{release="{r}", namespace="{r}-target", pod="haproxy-0", '
                   f'loadtest_role="target"}} {100 - 100 * sample.target_cpu:g}')
    if sample.host_cpu is not None:  # node-exporter on the machine both share
        out.append(f'node_cpu_seconds_total{{release="{r}", loadtest_role="host", cpu="0", mode="idle"}} '
                   f"{(1 - sample.host_cpu) * SCRAPE_S * scrapes:g}")
    for kind, faults in (("worker lost", case.losses), ("target silent", case.silences)):
        out.append(f'loadtest_faults_total{{{locust}, kind="{kind}"}} {scrapes if faults else 0}')
    if (a := case.arrival) is not None:  # the open model: every slot on time, the case's share of the rate sent
        # The rate a window sends is its requests over its edge scrapes' timestamps: offered a little under a
        # scrape's worth, so that a scrape a few tens of ms late (a busy host) does not read a held rate as short.
        out += [f"locust_arrival_rate_offered_rps{{{locust}}} {HELD * REQUESTS / SCRAPE_S / a.sent:g}",
                f'locust_worker_arrival_slots_total{{{locust}, worker="{r}-worker-0_{UUID}"}} '
                f"{round(REQUESTS / a.per_slot) * scrapes}",
                f'locust_worker_late_starts_total{{{locust}, worker="{r}-worker-0_{UUID}", cause="cpu"}} '
                f"{round(REQUESTS / a.per_slot * a.late_cpu) * scrapes}",
                f"locust_arrival_loop_probes_total{{{locust}}} {100 * scrapes}",
                # The service times' histogram: 98 % in 1 ms, 2 % in 3 ms (its p99: 3 ms).
                f'locust_service_times_total{{{locust}, service_time_ms="1"}} {980 * scrapes}',
                f'locust_service_times_total{{{locust}, service_time_ms="3"}} {20 * scrapes}',
                f"locust_arrival_loop_lagged_total{{{locust}}} {round(100 * a.loop_lagged) * scrapes}"]
    return out


# A release whose master is scraped from the start but counts its first requests only at its COUNTED_FROM-th scrape,
# as a master does until a worker's first report (up to 3 s into a run).
LATE = "late-counters"
COUNTED_FROM = 4


def late_series(scrapes: int) -> list[str]:
    locust = f'release="{LATE}", namespace="{LATE}", pod="{LATE}-locust-master", loadtest_role="generator"'
    out = [f'locust_runner_state{{{locust}, state="running"}} 1', f"locust_users{{{locust}}} 10"]
    if scrapes >= COUNTED_FROM:
        out += [f"locust_requests_total{{{locust}}} {REQUESTS * (scrapes - COUNTED_FROM + 1)}",
                f"locust_request_failures_total{{{locust}}} 0"]
    return out


class Exporter(http.server.ThreadingHTTPServer):
    """Serves every live row's series; each scrape advances the counters by one scrape's worth."""

    daemon_threads = True

    def __init__(self):
        self.scrapes = 0
        super().__init__((LOCAL_HOST, free_port()), Scrape)


class Scrape(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.server.scrapes += 1
        lines = [line for case in LIVE for line in series(case, self.server.scrapes)] + late_series(self.server.scrapes)
        body = "\n".join(lines).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def prometheus_health(client: prom.Prometheus, metrics_url: str) -> str:
    """What a wait for steady evaluations that timed out needs said: the scrapes that failed, the rule evaluations
    missed or slow (a busy host's), the steady series each row has."""
    own = [line for line in urllib.request.urlopen(metrics_url, timeout=5).read().decode().splitlines()
           if line.startswith(("prometheus_rule_group_iterations_missed_total", "prometheus_rule_group_last_duration"))]
    steady = {s["metric"]["release"]: s["value"][1]
              for s in client.query("count_over_time(loadtest:generator_saturated_steady:ratio[1m])")}
    failed = client.scalar("sum(count_over_time(up[1m]) - sum_over_time(up[1m]))")
    slowest = client.scalar("max(max_over_time(scrape_duration_seconds[1m]))")
    return "\n".join([f"scrapes failed in the last minute: {failed}, the slowest took {slowest} s",
                      f"steady evaluations a row, the last minute: {steady}", *own])


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """A real Prometheus scraping the exporter every second and evaluating the rules as a release with a window of
    WINDOW_S renders them; yields once every row holds a whole window of steady samples."""
    workdir = tmp_path_factory.mktemp("one-verdict-prometheus")
    rendered = stack.render("charts/monitoring/templates/prometheus-config.yaml", {
        "monitoring.enabled": True, "monitoring.rules.windowSeconds": WINDOW_S,
        "monitoring.prometheus.scrapeInterval": f"{SCRAPE_S}s"})
    (workdir / "loadtest.rules.yaml").write_text(rendered["loadtest.rules.yaml"])
    exporter = Exporter()
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    port = free_port()
    (workdir / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": f"{SCRAPE_S}s", "evaluation_interval": f"{SCRAPE_S}s"},
        "rule_files": [str(workdir / "loadtest.rules.yaml")],
        "scrape_configs": [{"job_name": "rows", "honor_labels": True,
                            "static_configs": [{"targets": [f"{LOCAL_HOST}:{exporter.server_address[1]}"]}]}]}))
    try:
        with Processes(workdir) as procs:
            procs.start("prometheus", [
                tools.find("prometheus"), f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address={LOCAL_HOST}:{port}"])
            procs.wait_http("prometheus", f"http://{LOCAL_HOST}:{port}/-/ready")
            client = prom.Prometheus(f"http://{LOCAL_HOST}:{port}")
            # The rules' ranges and two windows of steady evaluations behind the newest scrape, for every row: a
            # rate is judged short once a whole window of the schedule is behind its own window.
            span = 2 * WINDOW_S + 2
            whole = f"min(count_over_time(loadtest:generator_saturated_steady:ratio[{span}s]))"
            wait_for(f"{span} s of steady evaluations of every row", lambda: (
                len(client.query("loadtest:generator_saturated_steady:ratio")) == len(LIVE)
                and (client.scalar(whole) or 0) >= span), STARTUP_TIMEOUT_S + 4 * span, every=1,
                detail=lambda: prometheus_health(client, f"http://{LOCAL_HOST}:{port}/metrics"))
            yield client
    finally:
        exporter.shutdown()


@pytest.mark.parametrize("case", LIVE, ids=lambda c: c.name)
def test_the_prometheus_path_judges_each_row_as_the_local_run_does(prometheus, case):
    local = case.window()
    figures = sweeper.measure(prometheus, case.name, prometheus.scalar("max(timestamp(locust_requests_total))"),
                              WINDOW_S, SCRAPE_S)
    window = figures.window
    judged = verdict.judge(window)
    assert judged.kind == case.kind, (judged, window)
    assert (window.generator_share, window.target_share) == (local.generator_share, local.target_share), window
    assert window.target_measured == local.target_measured and window.failing == local.failing, window
    assert bool(window.losses) == bool(local.losses) and bool(window.silences) == bool(local.silences), window
    assert window.loop_lagged == pytest.approx(local.loop_lagged), window
    assert window.requests_per_slot == pytest.approx(local.requests_per_slot), window
    if case.arrival is not None:  # the service time's p99 is the window's too, from its histogram
        assert figures.arrival.service_time_ms[0.99] == 3, figures.arrival
    assert (window.achieved is None) == (local.achieved is None), window
    # The window's percentiles are Locust's own of its histogram (99 % at 4 ms, 1 % at 40 ms: its p99 is 40 ms), not
    # a mean of the rolling gauges (none here at all).
    assert (figures.p50_ms, figures.p95_ms, figures.p99_ms) == (4, 4, 40), figures


def test_every_row_the_rules_judge_live_gets_the_local_kind(prometheus):
    """The rules' own verdict, the dashboards' and the alerts', at the newest evaluation."""
    recorded = {s["metric"]["release"]: s["metric"]["verdict"] for s in prometheus.query("loadtest:verdict")
                if s["metric"]["release"] != LATE}
    assert recorded == {c.name: c.kind for c in LIVE}


def test_a_window_that_starts_before_the_master_counted_a_request_counts_from_none(prometheus):
    """A master scraped without request counters at the window's start had counted none: the window holds every
    request counted since (a run's first window, whose start comes before the first worker report)."""
    sel = f'release="{LATE}"'
    end = prometheus.scalar(f"max(timestamp(locust_users{{{sel}}}))")
    scrapes = sorted(float(t) for s in prometheus.query(f"locust_users{{{sel}}}[10m]", end) for t, _ in s["values"])
    counted = prometheus.scalar(f"sum(locust_requests_total{{{sel}}})", end)
    hold_s = int(end - scrapes[1]) - SCRAPE_S  # the start falls between the second scrape and the first counted one
    assert scrapes[1] < end - hold_s + SCRAPE_S / 2 < scrapes[COUNTED_FROM - 1], (scrapes[:COUNTED_FROM], hold_s)
    edges = sweeper.window_edges(prometheus, LATE, end, hold_s, SCRAPE_S)
    assert (edges.requests, edges.failures, edges.end) == (counted, 0, end)
    assert scrapes[1] <= edges.start < scrapes[COUNTED_FROM - 1]

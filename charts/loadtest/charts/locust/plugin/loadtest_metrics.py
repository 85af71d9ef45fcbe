"""Prometheus metrics of a Locust run, served by the master: the plugin every loadtest scenario loads.

Importing this module registers it (loadtest_lib imports it, so every scenario does). On the master (or a
standalone Locust) a prometheus_client collector reads the runner's state at scrape time and serves it at /metrics
on the web UI and, when LOADTEST_METRICS_PORT is set, on that port too (the only endpoint in headless mode; the
chart scrapes it, so web UI authentication never stands between Prometheus and the metrics). It binds where the
web UI would (--web-host).

Locust sends each worker's memory to the master with its heartbeats, and its CPU too, but measured every 10 s and 0
until 20 s after the worker started (psutil's first call). Each worker adds, to the stats report it sends every 3 s,
the CPU it used since its last report (from its first report on), its CPU limit (the CFS quota of its cgroup: what
Kubernetes sets from resources.limits) and how many CPU warnings it raised, so the master can say how close every
worker is to its ceiling from a run's first seconds. A worker told to stop by SIGTERM (its pod deleted) sends one
last report before it quits, so its last seconds of requests count, and so does a worker whose run the master stops:
once the master says "stopped", its counts are whole. With LOADTEST_WORKER_READY_FILE set, a worker
creates that file once the master has accepted it: the chart's readiness probe, so a rolling update removes an old
worker only after its replacement joined the run.

The master's web UI also serves the run's statistics as Locust's --json-file writes them, at /loadtest/stats.json,
for a run driven through the web UI (`loadtest run --release`), and the runner's state and user count as they are
now (the web UI's own figures are cached for seconds) at /loadtest/state.

Metrics (counters reset when Locust resets its statistics; Prometheus' rate() handles that):
  locust_runner_state{state}                      1 for the runner's current state, 0 for the others
  locust_users                                    running users
  locust_workers{state}                           connected workers per state (ready, running, missing, ...)
  locust_requests_total{method,name}              requests, failed ones included
  locust_request_failures_total{method,name}      failed requests
  locust_response_time_seconds{method,name,quantile}       p50/p95/p99/p99.9 over the last ~10 s, per request name
  locust_aggregated_response_time_seconds{quantile}        p50/p95/p99/p99.9 over the last ~10 s, all requests
  locust_responses_total{response_time_ms}        requests by response time as Locust rounds it (its statistics'
                                                  histogram): a window's percentiles from the counts at its edges
  locust_worker_cpu_usage_cores{worker}           CPU the worker process used over its last 3 s stats report
  locust_worker_cpu_limit_cores{worker}           the worker's CPU limit; +Inf without one
  locust_worker_memory_bytes{worker}              resident memory of the worker process
  locust_worker_users{worker}                     users running on the worker
  locust_worker_requests_total{worker}            requests the worker made
  locust_worker_cpu_warnings_total{worker}        Locust CPU warnings (a 10 s CPU check above 90 %) of the worker
  loadtest_faults_total{kind}                     the run's faults as its master saw them (loadtest_faults): kind
                                                  "worker lost", "worker quit" or "target silent"
In the open model (LOADTEST_ARRIVAL_RATE), also loadtest_arrival's: the offered rate, each worker's slots and late
starts, the workers' event-loop probes and those that woke late, and the service times (percentiles over the last
~10 s, and the histogram as locust_service_times_total{service_time_ms}).
`worker` is Locust's worker id, `<hostname>_<32 hex digits>`; in Kubernetes the hostname is the pod's name.
"""
from __future__ import annotations

import json
import logging
import math
import os
import resource
import time
from pathlib import Path

from locust import events
from locust.exception import RPCError
from locust.runners import (
    STATE_CLEANUP, STATE_INIT, STATE_MISSING, STATE_RUNNING, STATE_SPAWNING, STATE_STOPPED, STATE_STOPPING,
    MasterRunner, WorkerRunner,
)

import loadtest_arrival
import loadtest_faults
import loadtest_reports
from loadtest_shared.cgroup import ThrottleClock, cpu_limit_cores, memory_in_use
from loadtest_shared import settings

try:
    import prometheus_client
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
except ImportError:  # workers do not need it: only the master serves metrics
    prometheus_client = None

# The run's statistics in Locust's --json-file format, on the web UI (behind its login).
STATS_JSON_ROUTE = "/loadtest/stats.json"
# The runner's state and user count, uncached.
STATE_ROUTE = "/loadtest/state"
# Key of this plugin's part of a worker's stats report.
REPORT_KEY = loadtest_reports.METRICS
STATES = (STATE_INIT, STATE_SPAWNING, STATE_RUNNING, STATE_CLEANUP, STATE_STOPPING, STATE_STOPPED, STATE_MISSING)
QUANTILES = (0.5, 0.95, 0.99, 0.999)

logger = logging.getLogger(__name__)


# --- worker side ---------------------------------------------------------------------------------------------------

class CpuClock:
    """This process's CPU time (every thread, user and system) per second of wall time since the last reading: the
    cores it used."""

    def __init__(self):
        self.start()

    def start(self) -> None:
        self.last = self._now()

    @staticmethod
    def _now() -> tuple[float, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return time.monotonic(), usage.ru_utime + usage.ru_stime

    def cores(self) -> float | None:
        (wall_before, cpu_before), self.last = self.last, self._now()
        wall, cpu = self.last
        return (cpu - cpu_before) / (wall - wall_before) if wall > wall_before else None


class Sent:
    """A worker's own running total of its run's requests, never reset within it: the master holds the run's count to
    it (loadtest_faults) when a worker is lost, or statistics are reset. Locust's own count (its statistics' total),
    plus what that count held at each of its resets (every report strips it, and --reset-stats clears it): no listener
    of its own on the request event, which cost a request as much as Locust's statistics do (docs/own-test.md)."""

    def __init__(self):
        self.carried, self.stats = 0, None

    def follow(self, stats) -> None:
        """Count a run's requests from zero, in `stats` (a worker's, made anew at each test start)."""
        self.carried, total = 0, stats.total
        reset = total.reset

        def carry_then_reset():
            self.carried += total.num_requests
            reset()

        total.reset, self.stats = carry_then_reset, stats

    @property
    def requests(self) -> int:
        # read through stats.total, which logs the requests Locust keeps for its next reading (loadtest_locust)
        return self.carried + (self.stats.total.num_requests if self.stats is not None else 0)


SENT = Sent()


@events.test_start.add_listener
def _count_from_zero(environment, **_):
    # The environment's statistics, not its runner's: a worker that joins a running test gets the master's spawn
    # message (and fires test_start) while its runner is still being made.
    SENT.follow(environment.stats)


def _register_worker(environment) -> None:
    # Init fires once the worker is connected (Locust's WorkerRunner waits for the master's "ack" as it is made).
    # Ready before that, a rolling update would stop the old worker first, and the master stops the run when its last
    # worker quits.
    if ready_file := os.environ.get(settings.WORKER_READY_FILE.env):
        Path(ready_file).touch()
    warnings = 0
    clock, throttle = CpuClock(), ThrottleClock()

    @environment.events.cpu_warning.add_listener
    def count_cpu_warning(**_):
        nonlocal warnings
        warnings += 1

    @environment.events.test_start.add_listener
    def measure_the_run(**_):
        clock.start()  # the first report of a run measures the run, not the idle wait before it
        throttle.start()

    @environment.events.report_to_master.add_listener
    def add_worker_facts(client_id, data, **_):
        memory, memory_limit = memory_in_use()
        data[REPORT_KEY] = {"cpu_limit_cores": cpu_limit_cores(), "cpu_warnings": warnings,
                            "cpu_cores": clock.cores(), "cpu_throttled": throttle.share(),
                            "requests_sent": SENT.requests, "memory_bytes": memory, "memory_limit_bytes": memory_limit}

    def send_last_report(**_):
        runner = environment.runner
        data = {}
        environment.events.report_to_master.fire(client_id=runner.client_id, data=data)
        try:
            runner.send_message("stats", data)
        except RPCError as e:  # the master is gone: the report has nowhere to go
            logger.warning("loadtest_metrics: the last report did not reach the master: %s", e)

    # On SIGTERM (its pod deleted, evicted or rolled) a worker tells the master "quit" without a last stats report,
    # and the master drops what came after the last one (up to 3 s of requests). Added at init, after the runner's
    # own listener, so it fires first: quitting fires its listeners in reverse.
    environment.events.quitting.add_listener(send_last_report)
    # On the master's "stop" a worker answers "client_stopped" and sends no report: the master said "stopped" up to
    # 3 s of requests short, until the next report. test_stop fires on the worker before it answers, so once the
    # master says "stopped" its counts are whole. (In Locust it would be one line: _send_stats() in the worker's
    # "stop" case, as its "quit" case has.)
    environment.events.test_stop.add_listener(send_last_report)


# --- master side ---------------------------------------------------------------------------------------------------

class WorkerReports:
    """What the master learns from the workers' stats reports, per worker id."""

    def __init__(self):
        self.requests: dict[str, int] = {}
        self.cpu_limit_cores: dict[str, float] = {}
        self.cpu_warnings: dict[str, int] = {}
        self.cpu_cores: dict[str, float] = {}

    def add(self, client_id: str, data: dict) -> None:
        self.requests[client_id] = self.requests.get(client_id, 0) + data["stats_total"]["num_requests"]
        facts = data.get(REPORT_KEY)
        if facts:  # absent when the worker runs without this plugin
            limit = facts["cpu_limit_cores"]
            self.cpu_limit_cores[client_id] = math.inf if limit is None else limit
            self.cpu_warnings[client_id] = facts["cpu_warnings"]
            if facts.get("cpu_cores") is not None:  # absent from a worker of an older chart mid-upgrade
                self.cpu_cores[client_id] = facts["cpu_cores"]

    def keep_only(self, client_ids: set[str]) -> None:
        """Forget workers that left, so their series end."""
        for table in (self.requests, self.cpu_limit_cores, self.cpu_warnings, self.cpu_cores):
            for gone in set(table) - client_ids:
                del table[gone]
        if loadtest_arrival.totals is not None:
            loadtest_arrival.totals.forget(set(loadtest_arrival.totals.slots) - client_ids)


def _percentiles(entry, family, *labels):
    for quantile in QUANTILES:
        milliseconds = entry.get_current_response_time_percentile(quantile)
        if milliseconds is not None:  # None until Locust holds ~10 s of response times
            family.add_metric([*labels, f"{quantile:g}"], milliseconds / 1000)


class LocustCollector:
    """Reads the runner of a Locust environment at each scrape."""

    def __init__(self, environment, reports: WorkerReports):
        self.environment = environment
        self.reports = reports

    def collect(self):
        runner = self.environment.runner
        stats = self.environment.stats

        state = GaugeMetricFamily("locust_runner_state", "1 for the runner's current state", labels=["state"])
        for name in STATES:
            state.add_metric([name], float(runner.state == name))
        yield state
        yield GaugeMetricFamily("locust_users", "Running users", value=runner.user_count)

        requests = CounterMetricFamily("locust_requests", "Requests, failed ones included", labels=["method", "name"])
        failures = CounterMetricFamily("locust_request_failures", "Failed requests", labels=["method", "name"])
        response_time = GaugeMetricFamily(
            "locust_response_time_seconds", "Response time percentiles over the last ~10 s, per request name",
            labels=["method", "name", "quantile"])
        for entry in stats.entries.values():
            requests.add_metric([entry.method, entry.name], entry.num_requests)
            failures.add_metric([entry.method, entry.name], entry.num_failures)
            _percentiles(entry, response_time, entry.method, entry.name)
        yield from (requests, failures, response_time)
        aggregated = GaugeMetricFamily(
            "locust_aggregated_response_time_seconds", "Response time percentiles over the last ~10 s, all requests",
            labels=["quantile"])
        _percentiles(stats.total, aggregated)
        yield aggregated
        # Locust's own histogram of all requests (its rounded response times): the counts at a window's two edges
        # give the window's percentiles as Locust computes them (loadtest_shared.checks.percentile), where the rolling
        # gauges above cover only their last ~10 s.
        responses = CounterMetricFamily("locust_responses", "Requests by response time as Locust rounds it",
                                        labels=["response_time_ms"])
        for milliseconds, count in sorted(stats.total.response_times.items()):
            responses.add_metric([f"{milliseconds:g}"], count)
        yield responses

        if isinstance(runner, MasterRunner):
            yield from self._workers(runner)
            yield self._faults()
        if loadtest_arrival.totals is not None:
            yield from self._arrival(loadtest_arrival.totals)

    def _arrival(self, totals):
        yield GaugeMetricFamily("locust_arrival_rate_offered_rps", "The arrival rate asked for, all workers together",
                                value=totals.rate)
        slots = CounterMetricFamily("locust_worker_arrival_slots", "Send slots the worker's schedule handed out",
                                    labels=["worker"])
        late = CounterMetricFamily("locust_worker_late_starts",
                                   "Requests started late: no user free (users) or the worker woke late (cpu)",
                                   labels=["worker", "cause"])
        for worker, count in totals.slots.items():
            slots.add_metric([worker], count)
            for cause, n in totals.late[worker].items():
                late.add_metric([worker, cause], n)
        service = GaugeMetricFamily("locust_service_time_seconds",
                                    "Service time (from the actual send) percentiles over the last ~10 s",
                                    labels=["quantile"])
        for quantile in loadtest_arrival.QUANTILES:
            milliseconds = totals.service.get_current_response_time_percentile(quantile)
            if milliseconds is not None:
                service.add_metric([f"{quantile:g}"], milliseconds / 1000)
        # The service times' histogram (Locust's rounding), for a window's percentiles as the responses' have.
        service_times = CounterMetricFamily("locust_service_times", "Requests by service time as Locust rounds it",
                                            labels=["service_time_ms"])
        for milliseconds, count in sorted(totals.service.response_times.items()):
            service_times.add_metric([f"{milliseconds:g}"], count)
        yield service_times
        loop = totals.run_loop
        yield CounterMetricFamily("locust_arrival_loop_probes", "The workers' event-loop probes",
                                  value=loop["probes"])
        yield CounterMetricFamily("locust_arrival_loop_lagged", "Probes that woke late (the verdict's LATE_S)",
                                  value=loop["lagged"])
        yield from (slots, late, service)

    @staticmethod
    def _faults():
        faults = CounterMetricFamily("loadtest_faults", "The run's faults as its master saw them", labels=["kind"])
        events = loadtest_faults.log.events if loadtest_faults.log else []
        for kind in loadtest_faults.FAULTS:
            faults.add_metric([kind], sum(event.kind == kind for event in events))
        return faults

    def _workers(self, runner):
        nodes = list(runner.clients.values())
        self.reports.keep_only({node.id for node in nodes})
        workers = GaugeMetricFamily("locust_workers", "Connected workers per state", labels=["state"])
        for name in STATES:
            workers.add_metric([name], sum(node.state == name for node in nodes))
        yield workers

        def family(kind, name, documentation):
            return kind(name, documentation, labels=["worker"])

        cpu = family(GaugeMetricFamily, "locust_worker_cpu_usage_cores", "CPU used by the worker process")
        limit = family(GaugeMetricFamily, "locust_worker_cpu_limit_cores", "CPU limit of the worker; +Inf without one")
        memory = family(GaugeMetricFamily, "locust_worker_memory_bytes", "Resident memory of the worker process")
        users = family(GaugeMetricFamily, "locust_worker_users", "Users running on the worker")
        requests = family(CounterMetricFamily, "locust_worker_requests", "Requests made by the worker")
        warnings = family(CounterMetricFamily, "locust_worker_cpu_warnings",
                          "Locust CPU warnings of the worker (a 10 s CPU check above 90 %)")
        for node in nodes:
            cpu.add_metric([node.id], self.reports.cpu_cores.get(node.id, node.cpu_usage / 100))
            memory.add_metric([node.id], node.memory_usage)
            users.add_metric([node.id], node.user_count)
            requests.add_metric([node.id], self.reports.requests.get(node.id, 0))
            if node.id in self.reports.cpu_limit_cores:
                limit.add_metric([node.id], self.reports.cpu_limit_cores[node.id])
                warnings.add_metric([node.id], self.reports.cpu_warnings[node.id])
        yield from (cpu, limit, memory, users, requests, warnings)


def build_registry(environment, reports: WorkerReports):
    """A registry with the Locust collector and the serving process's own metrics (process_*)."""
    registry = prometheus_client.CollectorRegistry()
    registry.register(LocustCollector(environment, reports))
    prometheus_client.ProcessCollector(registry=registry)
    return registry


def _serve(environment, registry, web_ui) -> None:
    if web_ui is not None:
        from flask import Response

        @web_ui.app.route("/metrics")
        @web_ui.auth_required_if_enabled
        def metrics():
            return Response(prometheus_client.generate_latest(registry),
                            headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})

        @web_ui.app.route(STATE_ROUTE)
        @web_ui.auth_required_if_enabled
        def state():
            # The runner's state now: the web UI's /stats/requests is cached for seconds, too late to tell when every
            # user started running and when the run stopped, the edges of the steady window that is judged.
            runner = environment.runner
            return Response(json.dumps({"state": runner.state, "user_count": runner.user_count}),
                            headers={"Content-Type": "application/json"})

        @web_ui.app.route(STATS_JSON_ROUTE)
        @web_ui.auth_required_if_enabled
        def stats_json():
            # What --json-file writes at exit, for a run driven through the web UI (`loadtest run --release`);
            # serialized without Locust's serialize_stats(), which would reset the statistics.
            entries = [e.serialize() for e in environment.stats.entries.values() if e.num_requests or e.num_failures]
            return Response(json.dumps(entries), headers={"Content-Type": "application/json"})

    port = os.environ.get(settings.METRICS_PORT.env)
    if port:
        from gevent import pywsgi

        host = environment.parsed_options.web_host if environment.parsed_options else ""
        server = pywsgi.WSGIServer((host if host != "*" else "", int(port)),
                                   prometheus_client.make_wsgi_app(registry), log=None, error_log=logger)
        server.start()
        logger.info("loadtest_metrics: serving Prometheus metrics on port %s", port)
    elif web_ui is None:
        logger.warning("loadtest_metrics: headless and %s is not set: no metrics endpoint", settings.METRICS_PORT.env)


@events.init.add_listener
def _register(environment, web_ui=None, **_):
    runner = environment.runner
    if runner is None:
        return
    if isinstance(runner, WorkerRunner):
        _register_worker(environment)
        return
    if prometheus_client is None:
        raise SystemExit(
            "loadtest_metrics: the Locust master needs prometheus_client to serve its metrics: "
            "pip install prometheus-client (the chart's init container, or the image built from "
            "docker/locust/Dockerfile, provides it)")
    reports = WorkerReports()
    environment.events.worker_report.add_listener(reports.add)
    _serve(environment, build_registry(environment, reports), web_ui)

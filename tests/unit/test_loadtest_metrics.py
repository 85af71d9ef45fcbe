"""The Locust metrics plugin (plugin/loadtest_metrics.py) without running Locust: its cgroup CPU-limit reader on
fake /proc and cgroup trees, and its collector on a master runner's state."""
from __future__ import annotations

import math
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from locust import events
from locust.runners import STATE_MISSING, STATE_RUNNING, MasterRunner, WorkerNode, WorkerNodes
from locust.stats import RequestStats
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from loadtest.runtime import releaserun

import loadtest_arrival
import loadtest_metrics


def fake_proc(tmp_path: Path, cgroup: str, mounts: list[str]) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text("".join(f"{i} 1 0:{i} {line}\n" for i, line in enumerate(mounts, 30)))
    return proc


def test_cgroup_v2_limit_of_a_container(tmp_path):
    """In a pod the container's cgroup is the mount's root: /sys/fs/cgroup/cpu.max holds resources.limits.cpu."""
    mount = tmp_path / "sys-fs-cgroup"
    mount.mkdir()
    (mount / "cpu.max").write_text("50000 100000\n")
    proc = fake_proc(tmp_path, "0::/\n", [f"/ {mount} ro,nosuid - cgroup2 cgroup2 rw"])
    assert loadtest_metrics.cpu_limit_cores(proc) == 0.5


def test_cgroup_v2_without_a_limit(tmp_path):
    mount = tmp_path / "cg"
    mount.mkdir()
    (mount / "cpu.max").write_text("max 100000\n")
    proc = fake_proc(tmp_path, "0::/\n", [f"/ {mount} rw - cgroup2 cgroup2 rw"])
    assert loadtest_metrics.cpu_limit_cores(proc) is None


def test_cgroup_v1_takes_the_smallest_quota_of_the_group_and_its_parents(tmp_path):
    mount = tmp_path / "cpu,cpuacct"
    (mount / "outer" / "inner").mkdir(parents=True)
    for folder, quota in ((mount, -1), (mount / "outer", 20_000), (mount / "outer" / "inner", 150_000)):
        (folder / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        (folder / "cpu.cfs_period_us").write_text("100000\n")
    proc = fake_proc(tmp_path, "5:memory:/outer\n4:cpu,cpuacct:/outer/inner\n0::/\n",
                     [f"/ {mount} rw - cgroup cgroup rw,cpu,cpuacct", f"/ {tmp_path} rw - tmpfs tmpfs rw"])
    assert loadtest_metrics.cpu_limit_cores(proc) == 0.2


def test_a_worker_measures_its_own_throttling_as_cadvisor_does(tmp_path):
    """cpu.stat's nr_throttled of nr_periods since the last reading (cgroup v2 here; v1's cpu controller has the
    same counters): the signal the rules read from cAdvisor, for the judged master that has no cAdvisor."""
    mount = tmp_path / "cg"
    mount.mkdir()
    stat = mount / "cpu.stat"
    stat.write_text("usage_usec 100\nnr_periods 100\nnr_throttled 10\nthrottled_usec 5\n")
    proc = fake_proc(tmp_path, "0::/\n", [f"/ {mount} rw - cgroup2 cgroup2 rw"])
    clock = loadtest_metrics.ThrottleClock(proc)
    stat.write_text("usage_usec 900\nnr_periods 300\nnr_throttled 160\nthrottled_usec 50\n")
    assert clock.share() == 0.75
    assert clock.share() is None  # no period passed: no quota, or no time
    stat.unlink()
    assert clock.share() is None


def test_unreadable_cgroups_mean_no_limit(tmp_path):
    assert loadtest_metrics.cpu_limit_cores(tmp_path / "no-proc") is None


class MasterState(MasterRunner):
    """A master runner's state only: no sockets, no greenlets."""

    def __init__(self, state: str, clients: WorkerNodes):
        self.greenlet = None
        self.state, self.clients = state, clients


class FakeEnvironment:
    def __init__(self, runner, stats):
        self.runner, self.stats = runner, stats


@pytest.fixture
def master():
    """A master runner's state, as the collector reads it: two workers (one missing) and two request names."""
    runner = MasterState(STATE_RUNNING, WorkerNodes())
    for worker_id, state, cpu, memory, users in (("pod-a_" + "a" * 32, STATE_RUNNING, 50, 80e6, 7),
                                                 ("pod-b_" + "b" * 32, STATE_MISSING, 12, 60e6, 3)):
        node = WorkerNode(worker_id, state=state)
        node.cpu_usage, node.memory_usage, node.user_classes_count = cpu, memory, {"User": users}
        runner.clients[worker_id] = node
    stats = RequestStats(use_response_times_cache=True)
    for _ in range(5):
        stats.log_request("GET", "/1kb", 12, 1024)
    stats.log_request("POST", "/login", 30, 10)
    stats.log_error("POST", "/login", "HTTP 500")
    reports = loadtest_metrics.WorkerReports()
    reports.add("pod-a_" + "a" * 32, {"stats_total": {"num_requests": 4},
                                      loadtest_metrics.REPORT_KEY: {"cpu_limit_cores": 1.0, "cpu_warnings": 2,
                                                                    "cpu_cores": None}})
    reports.add("pod-a_" + "a" * 32, {"stats_total": {"num_requests": 2},
                                      loadtest_metrics.REPORT_KEY: {"cpu_limit_cores": 1.0, "cpu_warnings": 3,
                                                                    "cpu_cores": 0.97}})
    # A worker of an older chart (mid-upgrade) reports no CPU of its own: Locust's heartbeat figure stands.
    reports.add("pod-b_" + "b" * 32, {"stats_total": {"num_requests": 1},
                                      loadtest_metrics.REPORT_KEY: {"cpu_limit_cores": None, "cpu_warnings": 0}})
    reports.add("gone_" + "c" * 32, {"stats_total": {"num_requests": 9}})
    return FakeEnvironment(runner, stats), reports


def samples(environment, reports) -> dict[tuple, float]:
    text = generate_latest(loadtest_metrics.build_registry(environment, reports)).decode()
    return {(s.name, *sorted(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples
            if s.name.startswith("locust_")}


def test_a_workers_cpu_clock_says_the_cores_it_used_since_the_last_reading():
    clock = loadtest_metrics.CpuClock()
    wall, cpu = time.monotonic(), time.process_time()
    # A tenth of a second of CPU burnt, however long a machine crowded with the suite's other layers takes to give it.
    while time.process_time() - cpu < 0.1:
        pass
    busy = clock.cores()
    used = (time.process_time() - cpu) / (time.monotonic() - wall)  # the share of a core the loop got
    time.sleep(0.3)
    idle = clock.cores()
    assert busy == pytest.approx(used, rel=0.2) and idle < 0.05 and busy > 3 * idle, (busy, used, idle)


def test_collector_exports_the_run_the_requests_and_every_worker(master):
    got = samples(*master)
    a, b = "pod-a_" + "a" * 32, "pod-b_" + "b" * 32
    assert got[("locust_runner_state", ("state", "running"))] == 1
    assert got[("locust_runner_state", ("state", "stopped"))] == 0
    assert got[("locust_users",)] == 10
    assert got[("locust_workers", ("state", "running"))] == 1
    assert got[("locust_workers", ("state", "missing"))] == 1
    assert got[("locust_requests_total", ("method", "GET"), ("name", "/1kb"))] == 5
    assert got[("locust_requests_total", ("method", "POST"), ("name", "/login"))] == 1
    assert got[("locust_request_failures_total", ("method", "POST"), ("name", "/login"))] == 1
    assert got[("locust_worker_cpu_usage_cores", ("worker", a))] == 0.97  # its last report's, not Locust's 0.5
    assert got[("locust_worker_cpu_usage_cores", ("worker", b))] == 0.12
    assert got[("locust_worker_memory_bytes", ("worker", b))] == 60e6
    assert got[("locust_worker_users", ("worker", a))] == 7
    assert got[("locust_worker_requests_total", ("worker", a))] == 6
    assert got[("locust_worker_cpu_limit_cores", ("worker", a))] == 1
    assert math.isinf(got[("locust_worker_cpu_limit_cores", ("worker", b))])
    assert got[("locust_worker_cpu_warnings_total", ("worker", a))] == 3


def test_collector_forgets_workers_that_left(master):
    got = samples(*master)
    assert not [key for key in got if ("worker", "gone_" + "c" * 32) in key]


def test_a_release_run_reads_the_statistics_where_the_plugin_serves_them():
    assert releaserun.LOCUST_FILES["stats.json"] == loadtest_metrics.STATS_JSON_ROUTE


def test_in_the_open_model_the_collector_exports_the_offered_rate_slots_and_late_starts(master, monkeypatch):
    totals = loadtest_arrival.Totals(500)
    for worker in ("pod-a_" + "a" * 32, "gone_" + "c" * 32):
        counts = loadtest_arrival.Counts()
        counts.slots, counts.late = 300, {"users": 2, "cpu": 1}
        totals.add(worker, {loadtest_arrival.REPORT_KEY: counts.report()})
    monkeypatch.setattr(loadtest_arrival, "totals", totals)
    got = samples(*master)
    a = "pod-a_" + "a" * 32
    assert got[("locust_arrival_rate_offered_rps",)] == 500
    assert got[("locust_worker_arrival_slots_total", ("worker", a))] == 300
    assert got[("locust_worker_late_starts_total", ("cause", "cpu"), ("worker", a))] == 1
    assert got[("locust_worker_late_starts_total", ("cause", "users"), ("worker", a))] == 2
    assert not [key for key in got if ("worker", "gone_" + "c" * 32) in key]
    # The series of the worker that left end; the run's arrival.json still counts what it sent.
    assert totals.to_json()["slots"] == 600 and totals.to_json()["late_starts"] == {"users": 4, "cpu": 2}


def test_in_the_closed_model_there_is_no_open_model_series(master):
    assert not [key for key in samples(*master) if "arrival" in key[0] or "late_starts" in key[0]]


def test_the_master_counts_the_runs_faults_by_kind(master, monkeypatch):
    import loadtest_faults
    environment, reports = master
    text = generate_latest(loadtest_metrics.build_registry(environment, reports)).decode()
    assert 'loadtest_faults_total{kind="worker lost"} 0.0' in text  # before any run: every kind, at zero
    log = loadtest_faults.FaultLog(environment.runner)
    log.events += [loadtest_faults.Event(0.0, kind, "w", 5) for kind in (
        loadtest_faults.LOST, loadtest_faults.LOST, loadtest_faults.JOINED, loadtest_faults.SILENT)]
    monkeypatch.setattr(loadtest_faults, "log", log)
    text = generate_latest(loadtest_metrics.build_registry(environment, reports)).decode()
    counted = {s.labels["kind"]: s.value for family in text_string_to_metric_families(text)
               for s in family.samples if s.name == "loadtest_faults_total"}
    assert counted == {"worker lost": 2, "worker quit": 0, "target silent": 1}


def test_a_workers_sent_requests_survive_its_reports_and_resets_and_start_from_zero_with_a_run():
    """requests_sent is Locust's own count plus what it held at each reset: a report strips the worker's statistics
    (get_stripped_report), --reset-stats clears them, and neither loses a request; a new run counts from zero."""
    stats = RequestStats()
    sent = loadtest_metrics.Sent()
    sent.follow(stats)
    for _ in range(5):
        stats.log_request("GET", "/1kb", 2, 1024)
    stats.total.get_stripped_report()  # a report to the master
    stats.log_request("GET", "/1kb", 2, 1024)
    stats.reset_all()  # every user running: the statistics restart
    stats.log_request("GET", "/1kb", 2, 1024)
    assert sent.requests == 7 and stats.total.num_requests == 1
    stats.clear_all()  # a worker's next run: Locust makes its statistics anew, then fires test_start
    sent.follow(stats)
    stats.log_request("GET", "/1kb", 2, 1024)
    assert sent.requests == 1


def test_a_worker_joining_a_running_test_counts_before_its_runner_exists():
    """A worker started into a running test fires test_start from its runner's constructor (environment.runner is
    still None): the count follows the environment's statistics, and the worker does not fail there."""
    stats = RequestStats()
    loadtest_metrics._count_from_zero(environment=SimpleNamespace(stats=stats, runner=None))
    stats.log_request("GET", "/1kb", 2, 1024)
    assert loadtest_metrics.SENT.requests == 1


def test_no_listener_of_the_plugin_costs_every_request():
    """Counting a worker's requests reads Locust's own count: the request event has Locust's listener alone."""
    assert not [h for h in events.request._handlers if h.__module__.startswith("loadtest")]

"""`loadtest sweep` on the local stack: real HAProxy, nginx, Locust master and workers, and Prometheus with the
chart's rules, a few seconds per step.

- A capped target: HAProxy accepts at most CAP new connections a second (haproxy.sessionRateLimit) and every
  request opens one (http_close), so its capacity is known before the sweep starts. Users pace themselves (10 ms
  between requests), so the first step stays under the cap and the next one's RPS rises to it; then it must stop at
  CAP while p95 grows, and the sweep must find the knee there, stop, and report numbers that are Prometheus' for its
  windows.
- A starved generator: the one worker held to 0.1 CPU by a CFS quota. The sweep must stop at the first
  generator-bound step and never call its RPS the target's capacity.
"""
from __future__ import annotations

import csv
import json

import pytest
from locust.stats import calculate_response_time_percentile

from loadtest import commands
from loadtest.capacity import calibration
from loadtest.judging import sweepreport
from loadtest.runtime import sweep_local
from loadtest.runtime.sweeper import Sweeper
from loadtest.workload import sweep

CAP = 1500
# 70-90 RPS a user on these machines: a step under the cap, the cap from 32 users on, and 64 users the knee (the RPS
# held at the cap while p95 grows). Each step costs some 16 s of the dataplane layer; one under the cap is enough to
# show the RPS rising with the users.
USERS = [12, 32, 64]
# The shortest windows the sweep takes: Locust's 10 s of latency percentiles, and one period of both the workers'
# 3 s stats reports and Prometheus' 1 s scrapes (sweep.measured_window), so each window's count is still exact.
WARMUP_S, HOLD_S = sweep.MIN_WARMUP_S, 3


def local_sweep(out, spec: sweep.Spec, lines: list[str], **stack):
    return sweep_local.LocalDriver(out / "stack", spec=spec, progress=lines.append, **stack)


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    """The capped sweep, run once; yields (driver, sweep, report files, progress lines) while the stack still runs,
    so tests can ask its Prometheus about the same windows."""
    out = tmp_path_factory.mktemp("capped-sweep")
    spec = sweep.Spec("users", USERS, warmup_s=WARMUP_S, hold_s=HOLD_S, users_per_worker=50, spawn_rate=0)
    lines: list[str] = []
    with local_sweep(out, spec, lines, scenario="http_close", target="haproxy", tls_mode=None, workers=1,
                     wait_s=0.01, values={"haproxy.sessionRateLimit": str(CAP)}) as driver:
        result = Sweeper(driver, spec, progress=lines.append).run()
        yield driver, result, sweepreport.write(result, out), lines


def test_the_knee_is_found_at_the_cap(capped):
    _, result, _, lines = capped
    knee = result.knee
    rps = [r.step.rps for r in result.records]
    assert knee.found and knee.generator_bound_at is None, (rps, lines)
    # Under the cap the RPS rises with the users; from the cap on it stays there.
    under = [r.step.rps for r in result.records if r.step.index < knee.capacity_step.index]
    assert under and under[-1] < 0.9 * CAP, rps
    assert 0.95 * CAP <= knee.capacity_step.rps <= 1.05 * CAP, rps
    assert 0.95 * CAP <= knee.knee_step.rps <= 1.05 * CAP, rps
    assert knee.knee_step.p95_ms > 1.25 * knee.capacity_step.p95_ms
    # It stops at the knee: no step after it.
    assert result.records[-1].step == knee.knee_step
    assert all(r.verdict != "generator-bound" and r.failures == 0 for r in result.records)


def test_progress_says_step_rps_and_verdict(capped):
    lines = capped[3]
    assert any(line.startswith(f"step 1/{len(USERS)}: users {USERS[0]}") for line in lines)
    assert any("measuring" in line and "RPS" in line for line in lines)
    done = [line for line in lines if " done: " in line]
    assert len(done) == len(capped[1].records) and all("healthy" in line for line in done)
    assert lines[-1].startswith(f"stopping: knee at step {len(done)}")


def test_report_numbers_are_prometheus_numbers_for_the_same_windows(capped):
    driver, result, _, _ = capped
    prometheus = driver.prometheus
    for r in result.records:
        def at(expr, t):
            return prometheus.scalar(expr, t)

        requests = at('sum(locust_requests_total{release="local"})', r.end) - \
            at('sum(locust_requests_total{release="local"})', r.start)
        assert r.requests == round(requests)
        assert r.step.rps == pytest.approx(requests / (r.end - r.start), rel=1e-9)
        # The window's p95 is Locust's own (locust.stats) of its histogram's counts between the window's edges.
        def histogram(t):
            return {int(float(s["metric"]["response_time_ms"])): float(s["value"][1]) for s in prometheus.query(
                'sum by (response_time_ms) (locust_responses_total{release="local"})', t)}

        before, after = histogram(r.start), histogram(r.end)
        counts = {ms: round(n - before.get(ms, 0)) for ms, n in after.items() if n > before.get(ms, 0)}
        assert r.step.p95_ms == calculate_response_time_percentile(counts, sum(counts.values()), 0.95), counts
        # HAProxy's own count of the requests its client frontend took, over the same span: another source.
        served = at('sum(haproxy_frontend_http_requests_total{proxy="http"})', r.end) - \
            at('sum(haproxy_frontend_http_requests_total{proxy="http"})', r.start)
        assert served == pytest.approx(requests, rel=0.1), (r.step.index, served, requests)
        assert r.end - r.start == pytest.approx(HOLD_S, abs=0.1)


def test_report_files_agree_and_name_the_conditions(capped):
    _, result, files, _ = capped
    rows = list(csv.DictReader(files["csv"].open()))
    data = json.loads(files["json"].read_text())
    assert [float(row["rps"]) for row in rows] == [s["rps"] for s in data["steps"]] == \
        [round(r.step.rps, 1) for r in result.records]
    assert data["knee_step"] == len(rows) and data["capacity_step"] == len(rows) - 1
    conditions = data["conditions"]
    assert conditions["scenario"] == "http_close" and "haproxy" in conditions["target"]
    assert conditions["chart values set"] == f"haproxy.sessionRateLimit={CAP}"
    assert conditions["measured window per step"] == f"{HOLD_S} s" and "Locust 2." in conditions["versions"]
    table = files["markdown"].read_text()
    capacity = result.knee.capacity_step
    assert f"| 1 | 32 | {capacity.rps:,.0f} | - |" in table and "| capacity |" in table and "| knee |" in table
    assert files["html"].read_text().count("<svg") == 3


def test_a_workers_sweep_adds_workers_and_spreads_the_users(tmp_path):
    spec = sweep.Spec("workers", [1, 2], warmup_s=WARMUP_S, hold_s=HOLD_S, users_per_worker=4, spawn_rate=0)
    lines: list[str] = []
    with local_sweep(tmp_path, spec, lines, scenario="keepalive_1kb", target="haproxy", tls_mode=None, workers=1,
                     wait_s=0.01, values={}) as driver:
        result = Sweeper(driver, spec, progress=lines.append).run()
        seen = [driver.prometheus.scalar('max_over_time(locust_workers{state="running"}[5s])', r.end)
                for r in result.records]
    assert [(r.workers, r.users) for r in result.records] == [(1, 4), (2, 8)], lines
    assert seen == [1, 2]
    one, two = (r.step.rps for r in result.records)
    assert 1.6 * one < two < 2.4 * one  # paced users: twice the users, about twice the RPS
    assert any("2 worker(s)" in line for line in lines)


def test_a_sweep_calibrates_the_planner(capped, tmp_path, capsys):
    files = capped[2]
    out = tmp_path / "calibration.json"
    assert commands.main(["calibrate", "--from-sweep", str(files["json"].parent), "--output", str(out)]) == 0
    busiest = max(json.loads(files["json"].read_text())["steps"], key=lambda s: s["worker_cpu_max"])
    figure = json.loads(out.read_text())["scenarios"]["http_close"]
    assert figure["rps_per_core"] == round(busiest["rps"] / busiest["worker_cpu_cores"]) > busiest["rps"]
    assert figure["lower_bound"]  # the worker never came near a full core: the target's cap held it back
    loaded = calibration.load_calibration(out)
    assert loaded.rps_per_core["http_close"] == figure["rps_per_core"]
    assert f"http_close from sweep {files['json']}, step {busiest['step']}" in loaded.source
    assert "a lower bound" in capsys.readouterr().out


def test_the_sweep_stops_when_the_generator_saturates(tmp_path, make_cpu_quotas):
    spec = sweep.Spec("users", [10, 20, 40, 80], warmup_s=WARMUP_S, hold_s=HOLD_S, users_per_worker=50,
                      spawn_rate=0)
    lines: list[str] = []
    with make_cpu_quotas() as quotas, local_sweep(tmp_path, spec, lines, scenario="keepalive_1kb", target="backend",
                                                  tls_mode=None, workers=1, wait_s=0, values={}) as driver:
        quotas.limit([driver.stack.procs.procs["locust-worker-0"].pid], 0.1)
        result = Sweeper(driver, spec, progress=lines.append).run()
    # The worker's CPU comes with its reports from its first seconds: it may be saturated from the first step on.
    *before, last = result.records
    assert last.step.generator_saturated and last.verdict == "generator-bound", lines
    assert len(result.records) < len(spec.loads) and not any(r.step.generator_saturated for r in before)
    assert result.knee.generator_bound_at == last.step
    assert result.knee.capacity_step != last.step
    assert lines[-1].startswith(f"stopping: the generator saturated at step {len(result.records)}")
    files = sweepreport.write(result, tmp_path / "report")
    assert "generator-bound: not the target's capacity" in files["markdown"].read_text()
    assert f"The generator saturated at step {len(result.records)}" in files["markdown"].read_text()

"""The open-model sweep's pure parts (`loadtest sweep --sweep arrival-rate`): its knee (the first rate not held), the
pool a step runs, the options it refuses, the window arithmetic of its slots and late starts, and its sweepreport. The
sweep itself runs in tests/dataplane/test_sweep_open_model.py."""
from __future__ import annotations

import csv
import json

import pytest
from loadtest_shared import verdict
from test_bad_input import refusal

from loadtest.judging import sweepreport
from loadtest.judging.knee import Step, find_knee, knee_reason, rate_slipped
from loadtest.runtime.sweeper import arrival_window
from loadtest.workload import arrival, sweep


def open_steps(*rows, saturated_at=None, failing_at=None):
    """Steps of an arrival-rate sweep: (offered, achieved, p95) each."""
    return [Step(i, offered, achieved, p95, 0.05 if i == failing_at else 0.0, i == saturated_at, offered_rps=offered)
            for i, (offered, achieved, p95) in enumerate(rows)]


# --- the knee --------------------------------------------------------------------------------------------------------

def test_the_knee_is_the_first_rate_not_held():
    k = find_knee(open_steps((500, 500, 2), (1000, 999, 3), (2000, 1960, 40), (4000, 1990, 900)))
    assert k.found and k.knee_step.load == 2000 and k.capacity_step.load == 1000
    assert knee_reason(k.knee_step) == ("the rate was not held (1,960 of 2,000 requests/s offered, 98.0%, "
                                        "under 99%)")


def test_every_rate_held_is_no_knee_and_the_highest_is_the_capacity():
    """Latency growing fast while every rate is held is the open model's answer, not a knee by itself."""
    k = find_knee(open_steps((500, 500, 2), (1000, 995, 30), (2000, 1990, 300)))
    assert not k.found and k.capacity_step.load == 2000 and k.generator_bound_at is None


def test_with_a_latency_bound_the_knee_is_the_first_step_whose_p99_left_it():
    """--max-p99 200ms: the same held rates, and the step whose p99 (from the slot) passed 200 ms is the knee."""
    steps = [Step(i, offered, offered, p95, 0.0, False, offered_rps=offered, p99_ms=p99, p99_bound_ms=200.0)
             for i, (offered, p95, p99) in enumerate(((500, 2, 5), (1000, 30, 200), (2000, 300, 450)))]
    k = find_knee(steps)
    assert k.knee_step.load == 2000 and k.capacity_step.load == 1000  # 200 ms is within the bound
    assert knee_reason(k.knee_step) == "p99 450 ms, over the bound of 200 ms"


def test_held_means_within_one_percent_of_offered():
    assert verdict.ACHIEVED_SHARE == 0.99
    assert not rate_slipped(open_steps((1000, 990, 1))[0])
    assert rate_slipped(open_steps((1000, 989.9, 1))[0])
    assert not rate_slipped(Step(0, 10, 5.0, 1.0, 0.0, False))  # the closed model has no offered rate


def test_a_generator_that_started_late_stops_the_scan_before_any_knee():
    """Late starts for want of worker CPU make a step generator-bound: its slipped rate is the generator's."""
    k = find_knee(open_steps((500, 500, 2), (1000, 900, 3), saturated_at=1))
    assert not k.found and k.generator_bound_at.load == 1000 and k.capacity_step.load == 500


def test_failing_requests_are_the_knee_even_with_the_rate_held():
    k = find_knee(open_steps((500, 500, 2), (1000, 1000, 2), failing_at=1))
    assert k.knee_step.load == 1000 and knee_reason(k.knee_step) == "5.0% of the requests failed"


def test_a_rate_not_held_from_the_first_step_leaves_no_capacity():
    k = find_knee(open_steps((500, 300, 800)))
    assert k.knee_step.index == 0 and k.capacity_step is None


# --- the plan and its options ----------------------------------------------------------------------------------------

def test_a_step_runs_the_pool_its_rate_needs():
    spec = sweep.Spec("arrival-rate", [500, 1000], 10, 6, sweep.USERS_PER_WORKER, 0)
    assert spec.open_model and not sweep.Spec("users", [5], 10, 6, 50, 0).open_model
    assert spec.users(500, workers=2) == arrival.pool_size(500, 2) == 250
    assert spec.users(1, workers=4) == 4  # at least one user per worker


@pytest.mark.parametrize("argv, message", [
    (["--local", "--steps", "500,1000", "--users-per-worker", "20"],
     "--sweep arrival-rate with --users-per-worker: the open model's rate replaces a user count"),
    (["--local", "--steps", "500", "--wait", "0.1"], "--sweep arrival-rate with --wait"),
    (["--local", "--steps", "1000,500"], "--steps 1000,500: each step must be above the one before"),
    (["--local", "--steps", "500,500"], "each step must be above the one before"),
    (["--local", "--steps", "0,500"], "--steps: positive whole numbers"),
    (["--local", "--steps", "500,1e3"], "--steps '500,1e3': whole numbers"),
    (["--release", "lt", "--steps", "500", "--prometheus", "http://127.0.0.1:9", "--locust", "http://127.0.0.1:9"],
     "--sweep arrival-rate with --release: a release's rate is its chart value"),
])
def test_bad_arrival_rate_sweeps_exit_2_naming_the_option(argv, message, capsys, tmp_path, monkeypatch):
    err = refusal(["sweep", "--sweep", "arrival-rate", *argv], capsys, tmp_path, monkeypatch)
    assert message in err, err


def test_a_release_is_refused_with_the_run_that_does_it_by_hand(capsys, tmp_path, monkeypatch):
    err = refusal(["sweep", "--sweep", "arrival-rate", "--release", "shop", "--steps", "500,1000", "--prometheus",
                   "http://127.0.0.1:9", "--locust", "http://127.0.0.1:9"], capsys, tmp_path, monkeypatch)
    assert "for each rate N, loadtest run --release shop --arrival-rate N" in err
    assert "--local" in err


def test_think_time_is_refused_only_when_given():
    with pytest.raises(sweep.SweepError, match="with --wait"):
        sweep.check_open_model(users_per_worker=None, wait_s=0.5, release=None)
    sweep.check_open_model(users_per_worker=None, wait_s=0, release=None)  # nothing to refuse


# --- the window's open-model figures ---------------------------------------------------------------------------------

class FakePrometheus:
    """Counters and gauges of one release at two scrapes: the window's start (t=100) and end (t=106)."""

    # The service times' histogram at the two scrapes: 100 answered in 4 ms and 50 in 2 ms over the window, so its
    # p99 is 4 ms as Locust computes it.
    SERVICE = ({"2": 10, "4": 5}, {"2": 60, "4": 105})

    def __init__(self, offered, at_start, at_end):
        self.offered, self.at_start, self.at_end = offered, at_start, at_end

    def query(self, expr, at=None):
        assert "locust_service_times_total" in expr, expr
        return [{"metric": {"service_time_ms": ms}, "value": [at, str(n)]}
                for ms, n in self.SERVICE[at >= 106].items()]

    def scalar(self, expr, at=None):
        if "locust_arrival_rate_offered_rps" in expr:
            return self.offered
        values = self.at_end if at >= 106 else self.at_start
        for key, value in values.items():
            if key in expr:
                return value
        return None


def test_the_window_counts_slots_and_late_starts_between_its_edges():
    prometheus = FakePrometheus(
        2000, at_start={"slots": 50_000, 'cause="users"': 10, 'cause="cpu"': 5},
        at_end={"slots": 62_000, 'cause="users"': 130, 'cause="cpu"': 29})
    a = arrival_window(prometheus, 'release="local"', 100.5, 106)
    assert a.offered_rps == 2000 and a.slots == 12_000
    assert a.late_share("users") == pytest.approx(120 / 12_000) and a.late_share("cpu") == pytest.approx(24 / 12_000)
    assert a.service_time_ms[0.99] == pytest.approx(4.0)


def test_a_closed_model_window_has_no_open_model_figures():
    assert arrival_window(FakePrometheus(None, {}, {}), 'release="local"', 100.5, 106) is None


# --- the report ------------------------------------------------------------------------------------------------------

def open_sweep(rows=((200, 200.2, 1.0), (400, 400.1, 1.2), (800, 700.0, 450.0))):
    s = sweepreport.Sweep({"scenario": "keepalive_1kb", "target": "haproxy", "model": "open"}, "arrival rate")
    for step in open_steps(*rows):
        s.records.append(sweepreport.StepRecord(
            step, start=100.0 * step.index, end=100.0 * step.index + 6, p50_ms=step.p95_ms / 2,
            p99_ms=step.p95_ms * 2, requests=round(step.rps * 6), failures=0,
            users=arrival.pool_size(step.offered_rps, 1), workers=1, worker_cpu_max=0.2, worker_cpu_cores=0.2,
            target_cpus=1, target_cpu_cores=0.1, verdict="healthy", offered_rps=step.offered_rps,
            late_users_share=0.3 if step.rps < step.offered_rps else 0.0, late_cpu_share=0.001,
            service_p99_ms=step.p95_ms))
    return s


def test_the_report_carries_offered_achieved_and_late_starts(tmp_path):
    s = open_sweep()
    files = sweepreport.write(s, tmp_path)
    with files["csv"].open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [*sweepreport.COLUMNS, *sweepreport.ARRIVAL_COLUMNS]
    assert [(r["offered_rps"], r["achieved_share"]) for r in rows] == [
        ("200", "1.001"), ("400", "1.00025"), ("800", "0.875")]
    assert [r["late_start_share"] for r in rows] == ["0.001", "0.001", "0.301"]
    data = json.loads(files["json"].read_text())
    assert data["knee_step"] == 3 and data["capacity_step"] == 2 and data["sweep_of"] == "arrival rate"
    assert data["steps"][2]["late_users_share"] == 0.3 and data["steps"][2]["service_p99_ms"] == 450.0
    assert data["verdict"] == ("Knee at step 3: the rate was not held (700 of 800 requests/s offered, 87.5%, "
                               "under 99%). Capacity: 400 RPS at arrival rate 400 (p95 1.2 ms).")
    table = files["markdown"].read_text()
    assert "| CPUs | users | offered | RPS | TLS TPS | p95 (ms) | p99 (ms) | instance type |" in table
    assert "| 1 | 200 | 400 | 400 | - | 1.2 | 2.4 | c5n.large | 79 | capacity |" in table
    assert "| 1 | 400 | 800 | 700 | - | 450 | 900 | c5n.large | 79 | knee: rate not held (87.5%) |" in table
    page = files["html"].read_text()
    assert page.count("<svg") == 3 and "offered" in page and "service p99 (from the send)" in page
    assert "<th>late_cpu_share</th>" in page


def test_a_sweep_holding_every_rate_says_so():
    s = open_sweep(rows=((200, 200.2, 1.0), (400, 400.1, 1.2)))
    assert sweepreport.verdict_line(s) == ("No knee within the sweep: every offered rate was held, up to 400 of 400 "
                                      "requests/s (p95 1.2 ms, p99 2.4 ms from each request's slot); extend the "
                                      "sweep to find the limit.")


def test_a_closed_sweep_report_keeps_its_columns(tmp_path):
    s = sweepreport.Sweep({"scenario": "keepalive_1kb"}, "users")
    s.records.append(sweepreport.StepRecord(
        Step(0, 10, 1000.0, 5.0, 0.0, False), start=0.0, end=6.0, p50_ms=2.0, p99_ms=9.0, requests=6000, failures=0,
        users=10, workers=1, worker_cpu_max=0.5, worker_cpu_cores=0.5, target_cpus=1, target_cpu_cores=0.3,
        verdict="healthy"))
    with sweepreport.write(s, tmp_path)["csv"].open(newline="") as f:
        assert list(next(csv.DictReader(f))) == list(sweepreport.COLUMNS)
    assert "offered" not in sweepreport.sizing_table(s)

"""The master's record of its workers (plugin/loadtest_faults.py), fed as Locust feeds it: the runner's view of its
workers looked at in turn, heartbeats and reports; and the verdict of a window that lost a worker."""
from __future__ import annotations

from types import SimpleNamespace

import gevent
import pytest
from locust.env import Environment
from locust.event import Events
from locust.runners import STATE_INIT, STATE_MISSING, STATE_RUNNING, STATE_SPAWNING, WorkerNode, WorkerNodes

from loadtest_shared import verdict

from loadtest.runtime import sweeper

import loadtest_faults
import loadtest_metrics
T0 = 1_000_000.0


def worker(name: str, state: str = STATE_RUNNING, users: int = 5) -> SimpleNamespace:
    return SimpleNamespace(id=name, state=state, user_classes_count={"User": users} if users else {})


def report(log, name: str, sent: int, at: float, monkeypatch) -> None:
    monkeypatch.setattr(loadtest_faults.time, "time", lambda: at)
    log.report(name, {loadtest_metrics.REPORT_KEY: {"requests_sent": sent}})


@pytest.fixture
def master(monkeypatch):
    """A fault log over a runner whose two workers run 5 users each, steady since T0."""
    monkeypatch.setattr(loadtest_faults.time, "time", lambda: T0)
    runner = SimpleNamespace(state=STATE_RUNNING, clients={"a": worker("a"), "b": worker("b")})
    log = loadtest_faults.FaultLog(runner)
    log.steady()
    log.look(T0)
    return runner, log


def test_a_worker_killed_between_reports_is_lost_when_its_heartbeats_stop_and_its_unreported_requests_named(
        master, monkeypatch):
    runner, log = master
    report(log, "b", 3_000, T0 + 3, monkeypatch)
    report(log, "b", 6_000, T0 + 6, monkeypatch)  # 1,000 requests/s
    log.heartbeat("b", T0 + 8)  # killed after its last heartbeat, 2 s after its last report
    runner.clients["b"].state, runner.clients["b"].user_classes_count = STATE_MISSING, {}
    log.look(T0 + 12)
    [lost] = log.events
    assert (lost.kind, lost.worker, lost.users, lost.at, lost.detected_s) == ("worker lost", "b", 5, T0 + 8, 4.0)
    assert lost.unreported == 2_500  # 2.5 s at 1,000/s: the last report until the middle of the heartbeat gap
    assert lost.restored_s is None
    # Its Deployment starts another, which the master gives users: the loss is made good 10 s after the death.
    runner.clients["c"] = worker("c", STATE_SPAWNING, users=0)
    log.look(T0 + 15)
    assert lost.restored_s is None
    runner.clients["c"] = worker("c")
    log.look(T0 + 18)
    assert lost.restored_s == 10.0
    assert [e.kind for e in log.events] == ["worker lost", "worker joined"]
    assert log.losses(T0, T0 + 30) == [lost.describe(log.started)]
    assert "about 2,500 requests" in lost.describe(log.started) and "10 s with fewer workers" in lost.describe(
        log.started)
    figures = log.to_json()
    assert (figures["workers_lost"], figures["requests_sent"], figures["requests_unreported"],
            figures["seconds_with_fewer_workers"]) == (1, 6_000, 2_500, 10.0)


def test_a_worker_killed_after_a_report_that_came_after_its_last_heartbeat_lost_the_rest_of_that_second(
        master, monkeypatch):
    """Reports (every 3 s) and heartbeats (every 1 s) interleave: one that reported 0.6 s after its last heartbeat
    died in the 0.4 s before its next heartbeat was due, 0.2 s after that report on average (a node test's worker
    killed 0.3 s after its report had been estimated at 14 requests of 759)."""
    runner, log = master
    report(log, "b", 3_000, T0 + 3, monkeypatch)
    report(log, "b", 6_000, T0 + 6, monkeypatch)  # 1,000 requests/s
    log.heartbeat("b", T0 + 5.4)
    runner.clients["b"].state = STATE_MISSING
    log.look(T0 + 10)
    [lost] = log.events
    assert lost.unreported == 200


def test_a_worker_lost_before_its_first_report_is_estimated_at_the_others_rate(master, monkeypatch):
    runner, log = master
    report(log, "a", 2_000, T0 + 2, monkeypatch)  # 1,000 requests/s since the run started
    log.heartbeat("b", T0 + 2.5)
    runner.clients["b"].state = STATE_MISSING
    log.look(T0 + 7)
    [lost] = log.events
    assert lost.unreported == 3_000  # from the run's start to the middle of its last heartbeat's second


def test_a_stop_is_not_held_by_a_missing_worker():
    states = []
    runner = SimpleNamespace(state="stopping", clients={"a": worker("a", "ready"), "b": worker("b", STATE_MISSING)},
                             update_state=states.append)
    log = loadtest_faults.FaultLog(runner)
    runner.clients["c"] = worker("c", STATE_RUNNING)  # one still stopping its users
    log.finish_a_stop()
    runner.clients["c"].state = "ready"
    log.finish_a_stop()
    assert states == ["stopped"]


def test_a_worker_that_quits_is_a_loss_and_one_that_comes_back_from_missing_is_not_lost_twice(master):
    runner, log = master
    del runner.clients["a"]  # deleted or evicted: it said quit
    log.look(T0 + 5)
    runner.clients["b"].state = STATE_MISSING  # cut off from the master...
    log.look(T0 + 6)
    runner.clients["b"].state = STATE_RUNNING  # ...and back: Locust keeps it missing for a minute before dropping it
    log.look(T0 + 9)
    assert [(e.kind, e.worker) for e in log.events] == [("worker quit", "a"), ("worker lost", "b"),
                                                         ("worker back", "b")]
    assert log.events[1].unreported == 0  # cut off, not dead: its reports came when it did
    assert [e.restored_s for e in log.events[:2]] == [None, None]  # one worker of two, until the end
    runner.clients["c"] = worker("c")
    log.look(T0 + 10)
    assert [e.restored_s for e in log.events if e.kind in loadtest_faults.LOSSES] == [5.0, pytest.approx(
        10 - (6 - loadtest_faults.DETECTION_S))]


def test_a_worker_ready_without_users_while_every_user_runs_gets_users():
    """Locust rebalances for a worker that joins only if the run is not spawning just then: a replacement ready
    while the master still spawned for the loss it replaces would sit without users for the rest of the run."""
    starts = []
    runner = SimpleNamespace(state=STATE_SPAWNING, spawning_completed=False, clients=WorkerNodes(),
                             rebalancing_enabled=lambda: True, target_user_count=20, spawn_rate=20,
                             start=lambda users, rate: starts.append((users, rate)))
    runner.clients["a"] = WorkerNode("a", STATE_RUNNING)
    runner.clients["c"] = WorkerNode("c", STATE_INIT)  # joined while the master spawned: Locust let it be
    log = loadtest_faults.FaultLog(runner)
    log.give_ready_workers_users()
    runner.state, runner.spawning_completed = STATE_RUNNING, True
    runner.rebalancing_enabled = lambda: False  # without --enable-rebalancing a worker that joins waits, as asked
    log.give_ready_workers_users()
    gevent.sleep(0)
    assert starts == []
    runner.rebalancing_enabled = lambda: True
    log.give_ready_workers_users()
    gevent.sleep(0)
    assert starts == [(20, 20)]
    runner.clients["c"].state = STATE_RUNNING
    log.give_ready_workers_users()
    gevent.sleep(0)
    assert starts == [(20, 20)]


def test_workers_that_join_before_the_steady_window_are_not_events_and_nothing_is_looked_at_when_stopped():
    runner = SimpleNamespace(state=STATE_SPAWNING, clients={"a": worker("a", STATE_SPAWNING)})
    log = loadtest_faults.FaultLog(runner)
    log.look(T0)
    runner.clients["b"] = worker("b", STATE_SPAWNING)
    log.look(T0 + 1)
    runner.state = "stopped"
    runner.clients.clear()
    log.look(T0 + 2)
    assert log.events == [] and log.losses(None, None) == []


def test_a_window_that_lost_a_worker_is_not_judged_healthy():
    samples = [verdict.Sample(worker_cpu=(0.3, 0.3), target_cpu=0.2)] * 5
    assert verdict.judge(verdict.Window.of(samples)).kind == verdict.HEALTHY
    lost = "worker lost b (5 users) at 12 s into the run"
    judged = verdict.judge(verdict.Window.of(samples, losses=(lost,)))
    assert judged.kind == verdict.GENERATOR_BOUND and lost in judged.reason and "run again" in judged.reason


def test_only_a_runs_first_spawning_complete_resets_the_statistics():
    """A rebalance's spawning_complete (a worker lost or joined) would reset the steady window's counts so far."""
    environment = Environment(events=Events(), reset_stats=True)
    loadtest_faults.keep_counts_across_rebalances(environment.events)
    resets = []  # the runner's own listener, made after the plugin was imported
    environment.events.spawning_complete.add_listener(lambda **_: resets.append(environment.reset_stats))
    for _ in range(2):  # two runs (the web UI's), each with a rebalance
        environment.events.test_start.fire(environment=environment)
        environment.events.spawning_complete.fire(user_count=10)
        environment.events.spawning_complete.fire(user_count=10)
    assert resets == [True, False, True, False]

import loadtest_abort
from loadtest_shared import checks


def entry(requests: int, failures: int, start: float, end: float) -> dict:
    """A worker report's statistics of one request name, as Locust serializes them (a delta since its last)."""
    return {"name": "/1kb", "method": "GET", "num_requests": requests, "num_failures": failures,
            "start_time": start, "last_request_timestamp": end, "total_response_time": requests * 2.0,
            "max_response_time": 5, "min_response_time": 1, "total_content_length": 0, "response_times": {2: requests},
            "num_reqs_per_sec": {}, "num_fail_per_sec": {}, "num_none_requests": 0}


def test_an_abort_condition_is_judged_over_the_last_seconds_of_reports_not_the_whole_run(monkeypatch):
    runner = SimpleNamespace(state=STATE_RUNNING)
    abort = loadtest_abort.AbortOn(SimpleNamespace(runner=runner),
                                   checks.parse_all(["fail_ratio>5%", "p95>2s"]))
    for t in range(0, 60, 3):  # a healthy minute: 3,000 requests a report, none failed
        monkeypatch.setattr(loadtest_abort.time, "time", lambda t=t: T0 + t)
        abort.report("w", {"stats": [entry(3_000, 0, T0 + t - 3, T0 + t)]})
    assert abort.holding(T0 + 60) is None
    monkeypatch.setattr(loadtest_abort.time, "time", lambda: T0 + 63)
    abort.report("w", {"stats": [entry(3_000, 600, T0 + 60, T0 + 63)]})  # 20 % failed over the last 3 s
    held = abort.holding(T0 + 63)  # over the last 10 s: 600 of 9,000, 6.7 %; over the run 600 of 63,000, under 1 %
    assert held.check.text == "fail_ratio>5%" and held.measured == pytest.approx(600 / 9_000)
    stop = checks.abort_outcome(held.check, held.measured)
    assert not stop.passed and stop.describe() == "abort-on fail_ratio>5%: 6.67% FAILED"
    assert abort.holding(T0 + 80) is None  # no report for 10 s: nothing to judge, nothing stops the run


def test_a_window_whose_target_failed_is_target_bound_even_with_workers_looping_on_refusals():
    busy = [verdict.Sample(worker_cpu=(0.97,), target_cpu=0.0)] * 5  # requests refused at once: workers spin
    assert verdict.judge(verdict.Window.of(busy)).kind == verdict.GENERATOR_BOUND
    judged = verdict.judge(verdict.Window.of(busy, failure_ratio=0.4))
    assert judged.kind == verdict.TARGET_BOUND and "the target failed 40.00%" in judged.reason
    assert verdict.judge(verdict.Window.of(busy, failure_ratio=0.005)).kind == verdict.GENERATOR_BOUND


def test_a_target_that_answers_nothing_while_users_run_is_silent_until_it_answers_again(master, monkeypatch):
    runner, log = master
    for t in (3, 6):  # 1,000 requests/s each
        report(log, "a", t * 1_000, T0 + t, monkeypatch)
        report(log, "b", t * 1_000, T0 + t, monkeypatch)
    for t in (9, 12):  # paused after T0 + 6: no request answered, none failed
        report(log, "a", 6_000, T0 + t, monkeypatch)
        report(log, "b", 6_000, T0 + t, monkeypatch)
        log.look(T0 + t)
    [silent] = log.events  # seen once no request was answered for SILENT_S
    assert (silent.kind, silent.worker, silent.users, silent.at) == ("target silent", "", 10, T0 + 6)
    assert silent.detected_s == loadtest_faults.SILENT_S and silent.restored_s is None
    report(log, "b", 7_000, T0 + 15, monkeypatch)  # answering again: one worker is enough
    log.look(T0 + 15)
    assert silent.restored_s == 9.0 and log.silences(T0, T0 + 30) == [silent.describe(log.started)]
    assert "answering again 9 s later" in silent.describe(log.started) and log.losses(T0, T0 + 30) == []
    assert log.to_json()["seconds_target_silent"] == 9.0
    log.look(T0 + 30)  # quiet since, but answered after the silence: a new one needs a new spell
    assert len(log.events) == 2 and log.events[1].at == T0 + 15


def test_a_quiet_spell_that_the_workers_rates_make_likely_is_not_a_silence(master, monkeypatch):
    """A test that waits long between requests: 3 answered in 6 s, then none for 12 s."""
    runner, log = master
    report(log, "a", 3, T0 + 6, monkeypatch)
    report(log, "b", 3, T0 + 6, monkeypatch)
    log.look(T0 + 18)
    assert log.events == []


def test_a_silence_needs_every_running_worker_quiet(master, monkeypatch):
    runner, log = master
    report(log, "a", 6_000, T0 + 6, monkeypatch)
    report(log, "b", 6_000, T0 + 6, monkeypatch)
    report(log, "b", 9_000, T0 + 9, monkeypatch)
    log.look(T0 + 12.5)  # a quiet for 6.5 s, b answered 3.5 s ago
    assert log.events == []


def test_a_window_whose_target_went_silent_is_target_bound():
    idle = [verdict.Sample(worker_cpu=(0.3,), target_cpu=None)] * 5
    silent = "target silent from 12 s into the run: ..."
    judged = verdict.judge(verdict.Window.of(idle, silences=(silent,)))
    assert judged.kind == verdict.TARGET_BOUND and silent in judged.reason and "not its capacity" in judged.reason


def test_the_prometheus_path_weighs_the_faults_the_master_counts():
    """`run --release`, the sweep and tune read the master's loadtest_faults_total by these kinds."""
    assert sweeper.FAULT_LOSSES == loadtest_faults.LOSSES and sweeper.FAULT_SILENCES == (loadtest_faults.SILENT,)

"""The benchmarks' arithmetic and protocol, on a scale that takes seconds: their figures come from real processes and
add up. The figures themselves are the benchmarks' to print, not a test's to time."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest
from helpers import wait_for

from loadtest import paths
from loadtest.runtime import vegeta
from loadtest.runtime.processes import Processes, stop

sys.path.insert(0, str(paths.HOME / "benchmarks"))
import arrival  # noqa: E402  (benchmark scripts, found through the path above)
import generators  # noqa: E402
import host_idle  # noqa: E402
import master  # noqa: E402
import saturation_share  # noqa: E402
import steadiness  # noqa: E402
import swarm  # noqa: E402


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return master.record(tmp_path_factory.mktemp("record"), seconds=5)  # one report with requests in it


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    target = generators.Target(tmp_path_factory.mktemp("nginx") / "run")
    yield target
    stop(target.proc)


def test_side_by_side_each_generator_is_counted_at_its_own_target_with_its_own_cpu(nginx, tmp_path):
    """measure_together, which the one-generator measure runs too: requests counted at the targets, CPU per
    generator."""
    second = generators.Target(tmp_path / "nginx-2")
    try:
        idle_before = nginx.requests()
        pair = generators.measure_together(["wrk", "LeanHttpUser"], [second, nginx], 4, 1.0, tmp_path)
    finally:
        stop(second.proc)
    assert [m.generator for m in pair] == ["wrk", "LeanHttpUser"]
    for m in pair:
        assert m.rps > 100 and 0 < m.generator_cpu < 1.5 and m.target_cpu > 0, m
        assert m.rps_per_core == pytest.approx(m.rps / m.generator_cpu)
    assert nginx.requests() - idle_before > pair[1].rps * 0.5  # LeanHttpUser's requests reached its own nginx
    assert generators.own_loop_ratios([[replace(pair[0], generator="leanhttp-loop"), pair[1]]]) == [
        pytest.approx(pair[1].rps_per_core / pair[0].rps_per_core)]


def test_an_open_model_step_reads_the_rate_sent_and_its_late_starts(nginx, tmp_path):
    step = arrival.locust_step(nginx.url, 300, 4, tmp_path / "step")
    assert step.achieved == pytest.approx(300, rel=0.05) and 0 <= step.late_share < 0.5
    assert 0 <= step.p50_ms <= step.p99_ms
    held = arrival.Step(offered=1000, achieved=995, late_share=0.005, p50_ms=1, p99_ms=2)
    assert held.held and not arrival.Step(1000, 985, 0.005, 1, 2).held and not arrival.Step(1000, 1000, 0.02, 1, 2).held
    # A run whose host check found vegeta's p99 over the quiet bound is marked the host's, not the generator's.
    assert not arrival.Run(held, None, host_p99_ms=arrival.HOST_QUIET_P99_MS).noisy_host
    assert arrival.Run(held, None, host_p99_ms=arrival.HOST_QUIET_P99_MS + 0.1).noisy_host
    # So is one whose CPU slowed down for longer than a late start.
    slowed = steadiness.Steadiness(cpu=1, seconds=3, slow_share=0.01, longest_ms=arrival.verdict.LATE_MS)
    assert not arrival.Run(held, None, steadiness=(slowed,)).noisy_host
    assert arrival.Run(held, None, steadiness=(slowed, replace(slowed, longest_ms=slowed.longest_ms + 0.1))).noisy_host


def test_the_cpu_check_finds_stretches_of_slow_pieces():
    even = [(i * 1e-5, 1e-5) for i in range(1000)]  # 10 ms of pieces at one speed
    # 5 pieces five times slower from 10 ms on, then one more 3 ms after them: another stretch (over EPISODE_GAP_S)
    slow = [(0.010 + i * 5e-5, 5e-5) for i in range(5)] + [(0.01525 + 0.003, 5e-5)]
    found = steadiness.stretches(even + slow)
    assert found == [pytest.approx((0.010, 0.01025)), pytest.approx((0.01825, 0.0183))]
    figures = steadiness.summary(0, 1.0, even + slow)
    assert figures.slow_share == pytest.approx(0.0003 / 0.0183) and figures.longest_ms == pytest.approx(0.25)
    # The probe itself, on both CPUs at once: a figure for each, whatever the host.
    measured = steadiness.measure([0, 1], 0.2)
    assert [m.cpu for m in measured] == [0, 1] and all(0 <= m.slow_share <= 1 for m in measured)


def test_the_host_idle_cpus_poll_while_a_benchmark_runs_and_get_their_setting_back(tmp_path):
    """host_idle.polling on a file standing in for haltpoll's guest_halt_poll_ns: raised for the block, set back
    after it however it ends, SIGTERM included; a host polling longer, or without the parameter, is left as it is."""
    parameter = tmp_path / "guest_halt_poll_ns"
    parameter.write_text("0\n")
    with host_idle.polling(parameter, 200_000) as said:
        assert host_idle.current(parameter) == 200_000 and "poll 200 µs" in said and "0 ns back" in said
    assert host_idle.current(parameter) == 0
    with pytest.raises(RuntimeError), host_idle.polling(parameter, 200_000):
        raise RuntimeError("a benchmark failed")
    assert host_idle.current(parameter) == 0
    parameter.write_text("500000")
    with host_idle.polling(parameter, 200_000) as said:
        assert host_idle.current(parameter) == 500_000 and "poll 500 µs" in said
    with host_idle.polling(tmp_path / "absent", 200_000) as said:
        assert "no cpuidle-haltpoll" in said and not (tmp_path / "absent").exists()
    # A benchmark stopped with SIGTERM in the middle sets the host back too.
    parameter.write_text("0")
    script = ("import sys, time; sys.path.insert(0, sys.argv[1]); import host_idle\n"
              "with host_idle.polling(host_idle.Path(sys.argv[2]), 200_000):\n"
              "    print('polling', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(paths.HOME / "benchmarks"), str(parameter)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "polling\n" and host_idle.current(parameter) == 200_000
        proc.terminate()
        assert proc.wait(timeout=10) == 143
    finally:
        stop(proc)
    assert host_idle.current(parameter) == 0


def test_the_recording_holds_a_real_workers_messages_with_the_plugins_extras(recording):
    recorded = swarm.Recording(str(recording))
    report = recorded.messages["stats"].data
    assert recorded.requests_per_report > 0
    assert {"loadtest_metrics", "loadtest_arrival"} <= report.keys()  # the plugin's and the open model's extras
    assert recorded.open_model and recorded.messages["heartbeat"].data.keys() >= {"state", "current_cpu_usage"}


def test_a_real_master_counts_every_simulated_worker_and_every_report(tmp_path, recording):
    figures = master.measure(tmp_path, 30, recording, steady_s=4)
    assert (figures.missed, figures.dropped) == (0, 0)
    assert 0 < figures.cpu < 1 and figures.rss_mib > 20
    # The master's metrics name every simulated worker: its CPU, memory, users, requests... series per worker.
    text = (tmp_path / "locust-master.log").read_text()
    assert "30 workers connected" in text
    assert figures.series > 30 * 5
    assert figures.connect_s >= 0 and figures.dispatch_s >= 0 and figures.swarm_lag_s < swarm.HEARTBEAT_S


def test_a_worker_the_master_does_not_hear_from_is_counted_missed(tmp_path, recording):
    """The missed-heartbeat figure reads what the master logs: a swarm that stops sending leaves its workers
    missing after Locust's HEARTBEAT_LIVENESS seconds."""
    with Processes(tmp_path) as procs:
        real = master.Master(procs, 3)
        simulated = master.Swarm(procs, real.locust.master_port, 3, recording)
        simulated.expect("spawned", 30)
        stop(simulated.proc)
        wait_for("the master to set the 3 silent workers missing", real.missed, 15, until=lambda n: n == 3,
                 detail=lambda: procs.log_tail("locust-master"))


def test_the_saturation_share_benchmark_reads_both_shares_of_one_run(tmp_path, make_cpu_quotas):
    """Two workers held to a tenth of a core each: the worker-sample share is never above the any-worker one (a
    sample's share of its workers is at most 1 where any one is at the ceiling)."""
    with make_cpu_quotas():  # skips where this machine cannot set a quota
        pass
    run = saturation_share.measure(2, 0.1, users=10, wait_s=0.005, seconds=4, logs=tmp_path)
    assert run.rps > 0 and run.workers == 2, run
    assert 0 <= run.worker_share <= run.any_share <= 1 and run.mean_cpu > 0, run


def test_the_generators_benchmark_holds_leanhttpuser_to_its_own_connection_loop_run_by_run():
    def run(lean_rps: float, loop_rps: float) -> list:
        return [generators.Measurement("leanhttp-loop", loop_rps, 1.0, 0.5, 0.0),
                generators.Measurement("LeanHttpUser", lean_rps, 0.5, 0.5, 0.0)]  # half a core: twice the RPS a core

    assert generators.own_loop_ratios([run(300, 1000), run(400, 1000), run(100, 0)]) == [0.6, 0.8]
    assert generators.own_loop_ratios([[generators.Measurement("wrk", 10, 1.0, 0.5, 0.0)]]) == []


def test_the_arrival_benchmark_holds_the_open_model_to_the_closed_model_of_the_same_run():
    held = arrival.Step(offered=6000, achieved=6000, late_share=0.0, p50_ms=1, p99_ms=2)
    closed = generators.Measurement("LeanHttpUser", 5000, 0.5, 0.5, 0.0)  # half a core: 10,000 a core
    runs = [arrival.Run(held, None, closed), arrival.Run(None, None, closed), arrival.Run(held, None, None),
            arrival.Run(held, None, generators.Measurement("LeanHttpUser", 0, 0.0, 0.5, 0.0))]
    assert arrival.open_closed_ratios(runs) == [0.6]  # a run that held nothing or measured no closed rate has none
    # The ceiling step: what the open model sent asked more than it can, over the same closed rate a core.
    ceiling = replace(held, offered=12500, achieved=8000, late_share=1.0)
    runs = [arrival.Run(held, None, closed, ceiling=ceiling), arrival.Run(None, None, closed, ceiling=ceiling),
            arrival.Run(held, None, closed), arrival.Run(held, None, None, ceiling=ceiling)]
    assert arrival.ceiling_closed_ratios(runs) == [0.8, 0.8]  # a run that held nothing still has its ceiling
    # The closed model measured again after the climb: the ratios take the mean of both (the host's speed drifts).
    after = generators.Measurement("LeanHttpUser", 2500, 0.5, 0.5, 0.0)  # 5,000 a core: the mean is 7,500
    drifted = arrival.Run(held, None, closed, ceiling=ceiling, closed_after=after)
    assert drifted.closed_rps == 7500 and arrival.Run(held, None, closed_after=after).closed_rps == 5000
    assert arrival.open_closed_ratios([drifted]) == [0.8] and arrival.ceiling_closed_ratios([drifted]) == [8000 / 7500]
    assert arrival.Run(held, None).closed_rps == 0.0
    # vegeta's p99 at half the rate is compared only when vegeta sent that rate (unbounded, it once sent 474 of 16,000).
    paced = vegeta.Attack(offered_rps=3000, achieved_rps=2990, sent_rps=3000, requests=24000, success_ratio=1.0,
                          mean_ms=1, p50_ms=1, p90_ms=1, p99_ms=2, max_ms=3)
    assert arrival.Run(held, None, vegeta_half=paced).vegeta_comparable
    assert not arrival.Run(held, None, vegeta_half=replace(paced, achieved_rps=474)).vegeta_comparable


def test_the_arrival_benchmarks_climb_reaches_the_closed_models_rate_on_any_host():
    """Without --rates the open model climbs in shares of the closed model's rate of the same run: a fixed list of
    rates ran out below the ceiling of a faster host."""
    for closed_rps in (9_000, 61_911, 150_000):
        rates = arrival.climb(closed_rps)
        assert rates == sorted(set(rates))
        assert rates[0] == pytest.approx(arrival.CLIMB_FROM * closed_rps, abs=arrival.CLIMB_ROUND)
        assert rates[-1] == pytest.approx(closed_rps, abs=arrival.CLIMB_ROUND)
        steps = [b - a for a, b in zip(rates, rates[1:])]
        assert all(0 < step <= arrival.CLIMB_STEP * closed_rps + arrival.CLIMB_ROUND for step in steps), steps
    assert arrival.climb(100) == [arrival.CLIMB_ROUND]  # a rate never rounds to nothing
    for closed_rps in (9_000, 61_911, 150_000):  # the ceiling step asks more than the climb's top
        assert arrival.ceiling_ask(closed_rps) > arrival.climb(closed_rps)[-1]
        assert arrival.ceiling_ask(closed_rps) == pytest.approx(arrival.CEILING_ASK * closed_rps,
                                                                abs=arrival.CLIMB_ROUND)


def test_the_arrival_benchmarks_climb_ends_by_halving_its_last_gap():
    """After the first rate not held, the rate midway to the last held, REFINE times: the climb's figure to within
    CLIMB_STEP / 2**REFINE of the closed model's rate, not a whole step below the rate held."""
    assert arrival.midway(57_000, 61_000) == 59_000
    assert arrival.midway(57_000, 59_000) == 58_000 and arrival.midway(59_000, 61_000) == 60_000
    assert arrival.midway(1_000, 1_150) == 1_100  # rounded to REFINE_ROUND, and between the two
    assert arrival.midway(1_000, 1_100) is None and arrival.midway(1_000, 1_000) is None  # nothing between them
    for closed_rps in (9_000, 61_911, 76_778, 150_000):
        rates = arrival.climb(closed_rps)
        for held, missed in zip(rates, rates[1:]):  # wherever the climb ends, and whichever way each halving goes
            gaps = [(held, missed)]
            for _ in range(arrival.REFINE):
                gaps = [half for low, high in gaps if (mid := arrival.midway(low, high)) is not None
                        for half in ((low, mid), (mid, high))] or gaps
            # The climb's step, rounded to CLIMB_ROUND, halved; each half rounded to REFINE_ROUND.
            step = arrival.CLIMB_STEP * closed_rps + arrival.CLIMB_ROUND
            widest = step / 2 ** arrival.REFINE + arrival.REFINE_ROUND
            assert all(high - low <= widest for low, high in gaps), (closed_rps, gaps)

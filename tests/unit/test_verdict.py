from loadtest_shared import verdict

from loadtest.judging import rules
from loadtest_shared.verdict import Sample, Window


def judge(*samples: Sample) -> verdict.Verdict:
    return verdict.judge(Window.of(list(samples)))


def test_saturated_workers_make_the_result_generator_bound_even_when_the_target_is_busy():
    v = judge(*[Sample(worker_cpu=(0.97, 0.95), target_cpu=0.95)] * 5)
    assert v.kind == verdict.GENERATOR_BOUND
    assert "saturated in 100% of the steady window" in v.reason and "busiest worker 97%" in v.reason


def test_busy_target_with_idle_workers_is_target_bound():
    assert judge(Sample(worker_cpu=(0.5, 0.6), target_cpu=0.95)).kind == verdict.TARGET_BOUND


def test_nothing_saturated_is_healthy():
    assert judge(Sample(worker_cpu=(0.3,), target_cpu=0.4)).kind == verdict.HEALTHY


def test_an_unmeasured_target_is_said_to_be_unmeasured_never_to_have_had_headroom():
    """The chart's master sees only its workers; `--host` elsewhere, a target pod without a CPU limit: no figure."""
    v = judge(Sample(worker_cpu=(0.5,)))
    assert v.kind == verdict.NOT_GENERATOR_BOUND and "target's CPU was not measured" in v.reason
    assert "unmeasured" in v.reason and "healthy" not in v.reason


def test_an_unmeasured_target_still_loses_to_a_saturated_generator_and_to_its_own_failures():
    assert judge(Sample(worker_cpu=(0.97,))).kind == verdict.GENERATOR_BOUND
    failed = verdict.judge(Window.of([Sample(worker_cpu=(0.5,))], failure_ratio=0.2))
    assert failed.kind == verdict.TARGET_BOUND


def test_the_failure_boundary_is_more_than_one_percent_on_every_path():
    """`>`: a window with exactly 1 % failed is served, as the knee, the rules and the exit codes have it."""
    served = [Sample(worker_cpu=(0.5,), target_cpu=0.4)]
    assert verdict.judge(Window.of(served, failure_ratio=verdict.FAILURE_RATIO)).kind == verdict.HEALTHY
    assert verdict.judge(Window.of(served, failure_ratio=0.0101)).kind == verdict.TARGET_BOUND


def test_a_window_without_a_cpu_sample_is_not_judged_whatever_else_it_measured():
    """The open model's loop probes alone are no sample: the pod's unjudged guard and the local path agree."""
    window = Window.of([], late_starts=0.0, loop_lagged=0.0, max_lag_ms=3, achieved=1.0)
    assert not window.measured
    v = verdict.judge(window)
    assert v.kind == verdict.NOT_GENERATOR_BOUND and "no steady sample" in v.reason


def test_a_saturated_shared_machine_makes_the_result_generator_bound():
    v = judge(Sample(worker_cpu=(0.6, 0.55), target_cpu=0.3, host_cpu=0.98))
    assert v.kind == verdict.GENERATOR_BOUND and "machine 98% busy" in v.reason and "separate machines" in v.reason


def test_a_full_machine_does_not_hold_back_a_light_worker():
    """Someone else's job fills the machine; a worker with think time still gets the tenth of a core it asks for."""
    assert judge(Sample(worker_cpu=(0.08,), target_cpu=0.05, host_cpu=0.99)).kind == verdict.HEALTHY
    assert judge(Sample(worker_cpu=(verdict.CONTENDED,), target_cpu=0.05, host_cpu=0.99)).kind == \
        verdict.GENERATOR_BOUND


def test_a_busy_target_wins_over_a_busy_shared_machine():
    assert judge(Sample(worker_cpu=(0.5,), target_cpu=0.95, host_cpu=0.97)).kind == verdict.TARGET_BOUND


def test_throttled_workers_are_generator_bound_below_their_cpu_threshold():
    """A worker held back by its CPU limit may read under 90 % of it and still be the ceiling (seed: 100m workers)."""
    v = judge(Sample(worker_cpu=(0.6,), target_cpu=0.3, worker_throttling=(0.4,)))
    assert v.kind == verdict.GENERATOR_BOUND and "throttled in 40%" in v.reason and "whole core" in v.reason
    assert judge(Sample(worker_cpu=(0.6,), target_cpu=0.3, worker_throttling=(0.1,))).kind == verdict.HEALTHY


def test_a_worker_saturated_in_most_of_the_window_is_the_limit_whatever_its_mean():
    """The short run of issue #25: a worker at its core nearly all the time, its mean pulled under 90 % by a few
    cooler seconds, is still the generator's ceiling."""
    samples = [Sample(worker_cpu=(0.99,))] * 4 + [Sample(worker_cpu=(0.3,))] * 2
    window = Window.of(samples)
    assert window.busiest_worker < verdict.SATURATED_CPU  # the mean alone would call it healthy
    v = verdict.judge(window)
    assert v.kind == verdict.GENERATOR_BOUND and "saturated in 67% of the steady window" in v.reason


def test_a_short_spike_does_not_make_a_window_generator_bound():
    samples = [Sample(worker_cpu=(0.95,), target_cpu=0.4)] * 2 + [Sample(worker_cpu=(0.5,), target_cpu=0.4)] * 8
    assert judge(*samples).kind == verdict.HEALTHY


def test_half_the_window_saturated_is_enough():
    """At exactly the share the generator wins: an undecided window must not be read as the target's capacity."""
    assert verdict.SATURATED_SHARE == 0.5
    samples = [Sample(worker_cpu=(0.95,), target_cpu=0.95)] * 3 + [Sample(worker_cpu=(0.5,), target_cpu=0.95)] * 3
    assert judge(*samples).kind == verdict.GENERATOR_BOUND


def test_the_window_figures_are_each_workers_mean():
    window = Window.of([Sample(worker_cpu=(0.2, 0.9)), Sample(worker_cpu=(0.4, 0.7))])
    assert window.samples == 2 and round(window.busiest_worker, 3) == 0.8
    assert window.generator_share == 0.25  # one worker-sample of four at the ceiling


def test_the_generator_share_does_not_depend_on_how_the_load_is_split_into_workers():
    """Issue #55: ten workers each at the ceiling a tenth of the time read as the one worker with the same load (a
    tenth of its time), not as saturated throughout (any worker at the ceiling in every sample)."""
    ten = [Sample(worker_cpu=tuple(0.95 if w == s else 0.5 for w in range(10)), target_cpu=0.4) for s in range(10)]
    one = [Sample(worker_cpu=(0.95 if s == 0 else 0.5,), target_cpu=0.4) for s in range(10)]
    assert Window.of(ten).generator_share == Window.of(one).generator_share == 0.1
    assert judge(*ten).kind == judge(*one).kind == verdict.HEALTHY
    # Half the worker-seconds at the ceiling is the limit, however they are split.
    half = [Sample(worker_cpu=(0.95, 0.95, 0.5, 0.5), target_cpu=0.4)] * 4
    assert judge(*half).kind == verdict.GENERATOR_BOUND


def test_the_rules_file_holds_the_verdicts_thresholds():
    """Prometheus judges by the same numbers: `loadtest values` writes them into the rules file."""
    written = {rule["record"]: rule["expr"] for rule in rules.rules() if rule.get("record", "").endswith(":threshold")}
    assert written == {record: f"vector({value:g})" for record, value in verdict.THRESHOLDS.items()}

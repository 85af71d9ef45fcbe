from loadtest import verdict


def test_saturated_workers_make_the_result_generator_bound_even_when_the_target_is_busy():
    v = verdict.judge([0.97, 0.95], target_cpu=0.95)
    assert v.kind == verdict.GENERATOR_BOUND
    assert "2 of 2 workers" in v.reason


def test_busy_target_with_idle_workers_is_target_bound():
    assert verdict.judge([0.5, 0.6], target_cpu=1.9, target_cpus=2).kind == verdict.TARGET_BOUND


def test_nothing_saturated_is_healthy():
    assert verdict.judge([0.3], target_cpu=0.4).kind == verdict.HEALTHY


def test_unknown_target_cpu_never_claims_target_bound():
    assert verdict.judge([0.5], target_cpu=None).kind == verdict.HEALTHY


def test_a_saturated_shared_machine_makes_the_result_generator_bound():
    v = verdict.judge([0.6, 0.55], target_cpu=0.3, host_cpu=0.98)
    assert v.kind == verdict.GENERATOR_BOUND and "98% busy" in v.reason


def test_a_busy_target_wins_over_a_busy_shared_machine():
    assert verdict.judge([0.5], target_cpu=0.95, host_cpu=0.97).kind == verdict.TARGET_BOUND


def test_throttled_workers_are_generator_bound_below_their_cpu_threshold():
    """A worker held back by its CPU limit may read under 90 % of it and still be the ceiling (seed: 100m workers)."""
    v = verdict.judge([0.6], target_cpu=0.3, worker_throttling=0.4)
    assert v.kind == verdict.GENERATOR_BOUND and "throttled in 40%" in v.reason
    assert verdict.judge([0.6], target_cpu=0.3, worker_throttling=0.1).kind == verdict.HEALTHY

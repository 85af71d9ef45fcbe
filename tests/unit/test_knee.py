from loadtest.judging.knee import Step, find_knee


def steps(*rows, saturated_at=None, failing_at=None):
    return [Step(i, load, rps, p95, 0.05 if i == failing_at else 0.0, i == saturated_at)
            for i, (load, rps, p95) in enumerate(rows)]


def test_knee_is_where_rps_flattens_and_latency_climbs():
    k = find_knee(steps((10, 1000, 5), (20, 2000, 5), (40, 3900, 6), (80, 4000, 14), (160, 4050, 30)))
    assert k.found
    assert k.capacity_step.load == 40 and k.knee_step.load == 80


def test_rising_rps_has_no_knee_and_the_best_step_is_the_capacity():
    k = find_knee(steps((10, 1000, 5), (20, 2000, 5), (40, 4000, 6)))
    assert not k.found
    assert k.capacity_step.rps == 4000


def test_flat_rps_with_flat_latency_is_not_a_knee():
    """RPS that stops rising at the same latency means the offered load did not grow the work (e.g. think time)."""
    k = find_knee(steps((10, 1000, 5), (20, 1010, 5)))
    assert not k.found


def test_generator_saturation_stops_the_scan_and_never_counts_as_target_capacity():
    k = find_knee(steps((10, 1000, 5), (20, 2000, 5), (40, 2100, 40), saturated_at=2))
    assert not k.found
    assert k.generator_bound_at.load == 40
    assert k.capacity_step.load == 20


def test_generator_saturated_from_the_first_step_leaves_no_capacity():
    k = find_knee(steps((10, 1000, 5), saturated_at=0))
    assert k.capacity_step is None and k.generator_bound_at.index == 0


def test_failing_requests_are_the_knee_even_while_rps_rises():
    """Fast errors raise the RPS; a step failing more than the alerts' 1 % is past the target's capacity."""
    k = find_knee(steps((10, 1000, 5), (20, 2000, 5), (40, 5000, 4), failing_at=2))
    assert k.found and k.knee_step.load == 40 and k.capacity_step.load == 20


def test_failing_from_the_first_step_leaves_no_capacity():
    k = find_knee(steps((10, 1000, 5), (20, 2000, 5), failing_at=0))
    assert k.knee_step.index == 0 and k.capacity_step is None

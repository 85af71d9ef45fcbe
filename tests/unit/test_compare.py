import json

import pytest
from helpers import write_run

from loadtest_shared import checks, results, verdict

from loadtest import commands
from loadtest.errors import UsageError
from loadtest.judging import compare, sweepreport
from loadtest.judging.knee import Step

LIMITS = results.Limits(max_rps_drop=0.05, max_p95_rise=0.10)


def run(folder, rps=1000.0, p95=100.0, kind=verdict.HEALTHY, incomplete=None):
    return write_run(folder, rps, p95, kind, incomplete, failures=3)


def runs(tmp_path, base, cur, limits=LIMITS):
    return compare.compare(run(tmp_path / "a", **base), run(tmp_path / "b", **cur), limits)


def by_what(comparison):
    return {f.what: f for f in comparison.figures}


@pytest.mark.parametrize("rps, regressed", [(960.0, False), (940.0, True), (1200.0, False)])
def test_rps_drop_is_held_to_its_limit(tmp_path, rps, regressed):
    c = runs(tmp_path, {"rps": 1000.0}, {"rps": rps})
    figure = by_what(c)["all requests RPS"]
    assert (figure.baseline, figure.current) == (1000.0, rps)
    assert figure.change == pytest.approx(rps / 1000 - 1)
    assert figure.regressed is regressed and c.regressed is regressed
    assert c.exit_code == (1 if regressed else 0)


@pytest.mark.parametrize("p95, regressed", [(109.0, False), (111.0, True), (50.0, False)])
def test_p95_rise_is_held_to_its_limit(tmp_path, p95, regressed):
    c = runs(tmp_path, {"p95": 100.0}, {"p95": p95})
    assert by_what(c)["all requests p95 (ms)"].regressed is regressed
    assert c.exit_code == (1 if regressed else 0)


@pytest.mark.parametrize("p95, change, regressed", [(0.0, 0.0, False), (0.5, 0.0, False), (0.55, 0.1, False),
                                                     (1.0, 1.0, True), (73.0, 145.0, True)])
def test_a_baseline_p95_of_0_ms_is_one_under_half_a_millisecond_and_a_rise_from_it_is_judged(tmp_path, p95, change,
                                                                                             regressed):
    # Locust reads a p95 under 0.5 ms as 0: a rise from it is at least the rise from 0.5 ms, never "not computable".
    c = runs(tmp_path, {"p95": 0.0}, {"p95": p95})
    figure = by_what(c)["all requests p95 (ms)"]
    assert figure.baseline == 0.0 and figure.change == pytest.approx(change) and figure.regressed is regressed
    assert c.exit_code == (1 if regressed else 0)


def test_a_baseline_that_sent_no_request_is_refused_not_passed(tmp_path):
    with pytest.raises(UsageError, match="baseline run sent no request"):
        runs(tmp_path, {"rps": 0.0}, {})


def test_a_change_exactly_at_the_limit_is_no_regression(tmp_path):
    # Limits exact in binary: the comparison itself is `drop <= limit`, `rise <= limit`.
    c = runs(tmp_path, {"rps": 1000.0, "p95": 100.0}, {"rps": 750.0, "p95": 150.0}, results.Limits(0.25, 0.5))
    assert not c.regressed and c.exit_code == 0
    assert [f.limit for f in c.figures[:2]] == ["drop <= 25%", "rise <= 50%"]


def test_a_change_exactly_at_the_default_limits_is_no_regression(tmp_path):
    limits = results.Limits(compare.parse_share("5%", "--max-rps-drop"), compare.parse_share("10%", "--max-p95-rise"))
    c = runs(tmp_path, {"rps": 1000.0, "p95": 100.0}, {"rps": 950.0, "p95": 110.0}, limits)
    assert not c.regressed


def test_failure_ratio_is_shown_not_judged(tmp_path):
    figure = by_what(runs(tmp_path, {}, {}))["failure ratio"]
    assert figure.limit == "" and not figure.regressed and figure.baseline == pytest.approx(3 / 60000)


@pytest.mark.parametrize("side", ["base", "cur"])
def test_a_generator_bound_run_makes_the_comparison_invalid(tmp_path, side):
    sides = {"base": {"rps": 1000.0}, "cur": {"rps": 500.0}}  # a regression, were it readable
    sides[side]["kind"] = verdict.GENERATOR_BOUND
    c = runs(tmp_path, sides["base"], sides["cur"])
    assert c.regressed and c.exit_code == checks.INVALID == 3
    assert c.invalid.startswith(f"the {'baseline' if side == 'base' else 'current'} run was generator-bound")
    text = compare.markdown(c)
    assert text.startswith("# Load test comparison (runs): INVALID comparison")
    assert "Exit code 3." in text


def test_both_runs_generator_bound_are_named(tmp_path):
    bound = {"kind": verdict.GENERATOR_BOUND}
    assert runs(tmp_path, bound, dict(bound)).invalid.startswith("the baseline and the current runs were")


@pytest.mark.parametrize("side", ["base", "cur"])
def test_an_incomplete_run_is_refused(tmp_path, side):
    sides = {"base": {}, "cur": {}}
    sides[side]["incomplete"] = "interrupted"
    with pytest.raises(UsageError, match="run is incomplete \\(interrupted\\)"):
        runs(tmp_path, sides["base"], sides["cur"])


def test_markdown_says_regression_or_no_regression(tmp_path):
    bad = compare.markdown(runs(tmp_path / "1", {"rps": 1000.0}, {"rps": 900.0}))
    assert bad.startswith("# Load test comparison (runs): REGRESSION")
    assert "| all requests RPS | 1,000.0 | 900.0 | -10.0% | drop <= 5% | **regressed** |" in bad
    assert bad.endswith("Exit code 1.\n")
    good = compare.markdown(runs(tmp_path / "2", {}, {}))
    assert good.startswith("# Load test comparison (runs): no regression") and "**regressed**" not in good


def test_result_json_can_be_given_instead_of_its_folder(tmp_path):
    a, b = run(tmp_path / "a"), run(tmp_path / "b")
    assert compare.compare(a / "result.json", b, LIMITS).kind == "run"


def test_a_folder_without_results_is_refused_naming_both_files(tmp_path):
    with pytest.raises(UsageError) as e:
        compare.compare(tmp_path / "missing", run(tmp_path / "b"), LIMITS)
    assert "result.json" in str(e.value) and "sweep.json" in str(e.value)


def test_a_result_that_is_not_json_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "result.json").write_text("{")
    with pytest.raises(UsageError, match="not JSON"):
        compare.compare(tmp_path / "a", run(tmp_path / "b"), LIMITS)


def sweep(folder, steps, of="users"):
    s = sweepreport.Sweep({"scenario": "keepalive_1kb", "target": "haproxy"}, of)
    for i, (load, rps, p95, *saturated) in enumerate(steps):
        s.records.append(sweepreport.StepRecord(
            Step(i, load, rps, p95, 0.0, bool(saturated)), start=100.0 * i, end=100.0 * i + 10, p50_ms=p95 / 2,
            p99_ms=p95 * 2, requests=int(rps * 10), failures=0, users=10 * load, workers=2, worker_cpu_max=0.5,
            worker_cpu_cores=1.0, target_cpus=1, target_cpu_cores=0.9,
            verdict=verdict.GENERATOR_BOUND if saturated else verdict.HEALTHY))
    sweepreport.write(s, folder)
    return folder


BASE_SWEEP = [(1, 1000, 5), (2, 1900, 5), (4, 1950, 12)]  # knee at users 4, capacity 1,900 RPS at users 2


def sweeps(tmp_path, cur, base=BASE_SWEEP, **kw):
    return compare.compare(sweep(tmp_path / "a", base), sweep(tmp_path / "b", cur, **kw), LIMITS)


def test_the_same_sweep_is_no_regression(tmp_path):
    c = sweeps(tmp_path, BASE_SWEEP)
    assert c.kind == "sweep" and c.exit_code == 0 and c.invalid is None
    assert [f.what for f in c.figures] == ["capacity RPS", "capacity p95 (ms)", "knee (users)"]
    assert compare.markdown(c).startswith("# Load test comparison (sweeps): no regression")


def test_a_lower_capacity_rps_is_a_regression(tmp_path):
    c = sweeps(tmp_path, [(1, 1000, 5), (2, 1700, 5), (4, 1750, 12)])
    f = by_what(c)
    assert (f["capacity RPS"].baseline, f["capacity RPS"].current) == (1900, 1700)
    assert f["capacity RPS"].regressed and not f["knee (users)"].regressed
    assert c.exit_code == 1 and "REGRESSION" in compare.markdown(c)


def test_a_knee_at_a_lower_load_is_a_regression(tmp_path):
    c = sweeps(tmp_path, [(1, 1000, 5), (2, 1900, 5), (3, 1910, 12)])
    f = by_what(c)
    assert not f["capacity RPS"].regressed and not f["capacity p95 (ms)"].regressed
    knee = f["knee (users)"]
    assert (knee.baseline, knee.current, knee.regressed) == (4, 3, True)
    assert knee.change == pytest.approx(-0.25)
    assert c.exit_code == 1


def test_a_knee_at_a_higher_load_is_no_regression(tmp_path):
    c = sweeps(tmp_path, [(1, 1000, 5), (2, 1900, 5), (4, 2500, 5), (8, 2550, 15)])
    assert not by_what(c)["knee (users)"].regressed and c.exit_code == 0


def test_a_sweep_the_generator_stopped_before_a_knee_makes_the_comparison_invalid(tmp_path):
    c = sweeps(tmp_path, [(1, 1000, 5), (2, 1500, 5, "saturated")])
    assert c.figures == [] and c.exit_code == 3
    assert c.invalid.startswith("the current sweep stopped when the generator saturated, before a knee")
    text = compare.markdown(c)
    assert text.startswith("# Load test comparison (sweeps): INVALID comparison") and "| figure |" not in text


def test_a_current_sweep_failing_from_its_first_step_is_a_regression(tmp_path):
    failing = sweepreport.Sweep({"scenario": "keepalive_1kb", "target": "haproxy"}, "users")
    failing.records.append(sweepreport.StepRecord(
        Step(0, 1, 900.0, 5.0, 0.5, False), start=0.0, end=10.0, p50_ms=2.0, p99_ms=9.0, requests=9000,
        failures=4500, users=10, workers=2, worker_cpu_max=0.5, worker_cpu_cores=1.0, target_cpus=1,
        target_cpu_cores=0.9, verdict=verdict.HEALTHY))
    sweepreport.write(failing, tmp_path / "b")
    c = compare.compare(sweep(tmp_path / "a", BASE_SWEEP), tmp_path / "b", LIMITS)
    assert c.invalid is None and c.exit_code == 1
    capacity = by_what(c)["capacity RPS"]
    assert (capacity.baseline, capacity.current, capacity.regressed) == (1900, None, True)


def test_a_knee_where_the_baseline_had_none_is_a_regression(tmp_path):
    base = [(1, 1000, 5), (2, 2000, 5), (4, 4000, 5)]  # still rising: no knee
    c = sweeps(tmp_path, [(1, 1000, 5), (2, 1900, 5), (4, 1950, 12)], base=base)
    assert by_what(c)["knee (users)"].regressed and c.exit_code == 1


def test_an_incomplete_sweep_is_refused(tmp_path):
    a = sweep(tmp_path / "a", BASE_SWEEP)
    b = sweep(tmp_path / "b", BASE_SWEEP)
    data = json.loads((b / "sweep.json").read_text())
    (b / "sweep.json").write_text(json.dumps({**data, "complete": False, "incomplete": "interrupted"}))
    with pytest.raises(UsageError, match="current sweep is incomplete \\(interrupted\\)"):
        compare.compare(a, b, LIMITS)


def test_sweeps_of_different_kinds_are_refused(tmp_path):
    with pytest.raises(UsageError, match="same kind"):
        sweeps(tmp_path, BASE_SWEEP, of="workers")


def test_a_run_and_a_sweep_are_refused(tmp_path):
    with pytest.raises(UsageError, match="compare two runs or two sweeps"):
        compare.compare(run(tmp_path / "a"), sweep(tmp_path / "b", BASE_SWEEP), LIMITS)


@pytest.mark.parametrize("text, share", [("5%", 0.05), ("0.05", 0.05), ("0%", 0.0), ("12.5%", 0.125)])
def test_parse_share_reads_percentages_and_fractions(text, share):
    assert compare.parse_share(text, "--max-rps-drop") == pytest.approx(share)


@pytest.mark.parametrize("text, message", [("x", "is not a share like 5%"), ("%", "is not a share"),
                                           ("-5%", "is not a share from 0 up"), ("nan%", "is not a share from 0 up")])
def test_parse_share_refuses_what_is_no_share(text, message):
    with pytest.raises(UsageError, match=f"^--max-p95-rise '{text}' {message}"):
        compare.parse_share(text, "--max-p95-rise")


def test_cli_exits_1_on_a_regression_and_writes_the_markdown(tmp_path, capsys):
    a, b = run(tmp_path / "a"), run(tmp_path / "b", rps=800.0)
    md = tmp_path / "out" / "comparison.md"  # a folder not there yet is made
    assert commands.main(["compare", str(a), str(b), "--markdown", str(md)]) == 1
    assert md.read_text() == capsys.readouterr().out
    assert "REGRESSION" in md.read_text()


def test_cli_limits_are_options(tmp_path, capsys):
    a, b = run(tmp_path / "a"), run(tmp_path / "b", rps=800.0)
    assert commands.main(["compare", str(a), str(b), "--max-rps-drop", "25%"]) == 0
    assert "no regression" in capsys.readouterr().out


def test_cli_bad_input_exits_2(tmp_path, capsys):
    a = run(tmp_path / "a")
    with pytest.raises(SystemExit) as e:
        commands.main(["compare", str(a), str(tmp_path / "nothing")])
    assert e.value.code == 2 and "no result.json" in capsys.readouterr().err


def test_result_json_figures_are_what_compare_reads(tmp_path):
    data = json.loads((run(tmp_path / "a", rps=1234.5, p95=67.0) / "result.json").read_text())
    agg = data["figures"][checks.AGGREGATED]
    assert (agg["rps"], agg["percentiles_ms"]["0.95"]) == (1234.5, 67.0)

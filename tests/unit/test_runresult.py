import json

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from loadtest_shared import checks, results, verdict

from loadtest import paths
from loadtest.errors import UsageError
from loadtest.judging import runresult

CONDITIONS = {"scenario": "keepalive_1kb", "target": "haproxy", "workers": "4"}
FIGURES = checks.from_entries([
    {"name": "/1kb", "method": "GET", "num_requests": 1000, "num_failures": 5,
     "response_times": {"5": 900, "40": 90, "300": 10}, "start_time": 1000.0, "last_request_timestamp": 1010.0,
     "total_response_time": 11100, "max_response_time": 310},
])


def report(texts=("p95<100ms", "fail_ratio<1%"), kind=verdict.HEALTHY, incomplete=None):
    outcomes = checks.judge(checks.parse_all(list(texts)), FIGURES)
    return results.RunReport(dict(CONDITIONS), started=1000.0, ended=1060.5, figures=FIGURES, outcomes=outcomes,
                               verdict=verdict.Verdict(kind, f"{kind} because", kind) if kind else None,
                               incomplete=incomplete)


def suite_of(tmp_path, r):
    files = runresult.write(r, tmp_path / "run")
    (suite,) = JUnitXml.fromfile(str(files["junit"]))
    return suite


def result_types(case):
    return [type(result) for result in case.result]


def test_junit_has_a_case_per_check_and_the_validity_case(tmp_path):
    suite = suite_of(tmp_path, report(("p95<100ms", "fail_ratio<1%", "p99[/1kb]<100ms")))
    cases = {case.name: case for case in suite}
    assert list(cases) == ["p95<100ms", "fail_ratio<1%", "p99[/1kb]<100ms", results.VALIDITY_CASE]
    assert (suite.name, suite.tests, suite.failures, suite.errors, suite.skipped) == ("loadtest run", 4, 1, 0, 0)
    assert suite.time == pytest.approx(60.5)
    assert cases["p95<100ms"].is_passed and cases["fail_ratio<1%"].is_passed
    assert cases["p95<100ms"].classname == "loadtest.checks"
    (failure,) = cases["p99[/1kb]<100ms"].result
    assert isinstance(failure, Failure) and failure.message == "p99[/1kb]<100ms: 300 ms FAILED"
    assert cases[results.VALIDITY_CASE].is_passed and cases[results.VALIDITY_CASE].classname == "loadtest.verdict"


def test_junit_validity_case_fails_when_the_generator_was_the_limit(tmp_path):
    suite = suite_of(tmp_path, report(kind=verdict.GENERATOR_BOUND))
    valid = [case for case in suite if case.name == results.VALIDITY_CASE][0]
    (failure,) = valid.result
    assert isinstance(failure, Failure)
    assert failure.type == verdict.GENERATOR_BOUND and failure.message == "generator-bound because"
    assert (suite.tests, suite.failures) == (3, 1)


def test_junit_validity_case_is_skipped_without_a_verdict(tmp_path):
    suite = suite_of(tmp_path, report(kind=None))
    assert [result_types(case) for case in suite] == [[], [], [Skipped]]
    assert suite.skipped == 1


def test_junit_an_incomplete_run_adds_an_error_case(tmp_path):
    suite = suite_of(tmp_path, report(incomplete="interrupted after 20 s"))
    last = list(suite)[-1]
    assert last.name == "the run went to its end" and result_types(last) == [Error]
    assert last.result[0].message == "interrupted after 20 s"
    assert (suite.tests, suite.failures, suite.errors) == (4, 0, 1)


def test_junit_properties_carry_the_conditions(tmp_path):
    suite = suite_of(tmp_path, report())
    assert {p.name: p.value for p in suite.properties()} == CONDITIONS


@pytest.mark.parametrize("kwargs, code, word", [
    ({}, 0, "PASSED"),
    ({"texts": ["p95<10ms"]}, 1, "FAILED"),
    ({"kind": verdict.GENERATOR_BOUND}, 3, "INVALID"),
    ({"texts": ["p95<10ms"], "kind": verdict.GENERATOR_BOUND}, 3, "INVALID"),
    ({"incomplete": "interrupted"}, 130, "FAILED"),
    ({"incomplete": "the Locust master exited with 1"}, 4, "FAILED"),
])
def test_result_json_and_summary_carry_the_exit_code(tmp_path, kwargs, code, word):
    r = report(**kwargs)
    assert r.exit_code == code
    files = runresult.write(r, tmp_path / "run")
    data = json.loads(files["json"].read_text())
    meaning = f"incomplete: {kwargs['incomplete']}" if "incomplete" in kwargs else checks.EXIT_CODES[code].meaning
    assert (data["exit_code"], data["meaning"]) == (code, meaning)
    assert data["complete"] is ("incomplete" not in kwargs)
    summary = files["markdown"].read_text()
    assert f"**{word}** (exit code {code}: {meaning})" in summary
    assert (f"INCOMPLETE: {kwargs.get('incomplete')}" in summary) is ("incomplete" in kwargs)


def test_result_json_round_trips_the_report(tmp_path):
    r = report(("p95<100ms", "p95[/none]<1s"))
    data = json.loads(runresult.write(r, tmp_path / "run")["json"].read_text())
    assert data == json.loads(json.dumps(r.to_json()))
    assert data["conditions"] == CONDITIONS and (data["started"], data["ended"]) == (1000.0, 1060.5)
    assert data["verdict"] == {"kind": verdict.HEALTHY, "reason": "healthy because", "cause": "healthy"}
    assert data["checks"] == [{"check": "p95<100ms", "measured": 40.0, "passed": True},
                              {"check": "p95[/none]<1s", "measured": None, "passed": False}]
    agg = data["figures"][checks.AGGREGATED]
    assert (agg["requests"], agg["failures"], agg["fail_ratio"], agg["rps"]) == (1000, 5, 0.005, 100.0)
    assert agg["percentiles_ms"]["0.95"] == 40.0 and agg["percentiles_ms"]["0.99"] == 300.0


def test_summary_lists_checks_and_figures_aggregated_last(tmp_path):
    summary = results.summary(report(("p95<100ms", "p95[/none]<1s")))
    assert summary.startswith("# Load test run: keepalive_1kb against haproxy\n")
    assert "| `p95<100ms` | 40 ms | passed |" in summary
    assert "| `p95[/none]<1s` | - | **failed** |" in summary
    assert summary.index("| /1kb |") < summary.index("| Aggregated |")
    assert "| Aggregated | 1,000 | 5 (0.50%) | 100.0 | 5 | 40 | 300 |" in summary
    assert "- workers: 4" in summary


def test_write_leaves_only_its_three_files(tmp_path):
    runresult.write(report(), tmp_path / "run")
    runresult.write(report(), tmp_path / "run")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["checks.xml", "result.json", "summary.md"]


def test_new_folder_is_never_one_that_exists(tmp_path):
    first = runresult.new_folder(tmp_path, "haproxy", now=0)
    assert first == tmp_path / "19700101T000000Z-haproxy" and not first.exists()
    first.mkdir()
    second = runresult.new_folder(tmp_path, "haproxy", now=0)
    assert second == tmp_path / "19700101T000000Z-haproxy-2"
    second.mkdir()
    assert runresult.new_folder(tmp_path, "haproxy", now=0).name == "19700101T000000Z-haproxy-3"


def test_check_output_refuses_a_folder_holding_a_run_unless_forced(tmp_path):
    runresult.check_output(tmp_path / "new", force=False)
    runresult.check_output(tmp_path, force=False)  # an empty folder is fine
    runresult.write(report(), tmp_path)
    with pytest.raises(UsageError, match="--force"):
        runresult.check_output(tmp_path, force=False)
    runresult.check_output(tmp_path, force=True)


def test_an_incomplete_run_exits_4_and_says_why_not_that_a_check_failed():
    report = results.RunReport({}, 0.0, 1.0, incomplete="no steady window: users were still being spawned after 9 s")
    assert report.exit_code == checks.RUN_FAILED
    assert report.meaning == "incomplete: no steady window: users were still being spawned after 9 s"
    assert report.to_json()["meaning"] == report.meaning and "a check failed" not in results.summary(report)


def test_an_output_file_that_exists_is_rewritten_not_refused(tmp_path):
    """A second `loadtest calibrate` rewrites the calibration file the first one wrote (found by the journeys
    layer: it was refused as "a file, so nothing can be written under it")."""
    existing = tmp_path / "calibration.json"
    existing.write_text("{}")
    paths.check_output("--output", existing, folder=False)
    with pytest.raises(UsageError, match="is a file, so nothing can be written under it"):
        paths.check_output("--output", existing / "x.json", folder=False)


def written(tmp_path, r, name):
    runresult.write(r, tmp_path / name)
    return json.loads((tmp_path / name / results.RESULT).read_text())


def test_a_run_held_to_its_baseline_fails_on_a_regression_and_says_against_which(tmp_path):
    files = results
    base = written(tmp_path, report(("fail_ratio<1%",)), "base")
    slower = report(("fail_ratio<1%",))
    slower.figures = checks.from_entries([  # 800 requests in the same 10 s: 20 % fewer
        {"name": "/1kb", "method": "GET", "num_requests": 800, "num_failures": 4,
         "response_times": {"5": 720, "40": 72, "300": 8}, "start_time": 1000.0, "last_request_timestamp": 1010.0,
         "total_response_time": 8880, "max_response_time": 310}])
    slower.baseline = files.hold_to(("base", base), slower.to_json())
    assert slower.baseline.regressed and slower.exit_code == checks.CHECK_FAILED
    assert slower.meaning.startswith("REGRESSION against baseline base: all requests RPS -20.0%")
    suite = suite_of(tmp_path, slower)
    case = next(c for c in suite if c.name == "no regression against base")
    assert result_types(case) == [Failure]
    # The same run held to itself: no regression, and the check's own exit code.
    same = report(("fail_ratio<1%",))
    same.baseline = files.hold_to(("base", base), same.to_json())
    assert not same.baseline.regressed and same.exit_code == checks.PASSED


def test_no_baseline_pinned_and_a_generator_bound_baseline_judge_nothing(tmp_path):
    files = results
    assert files.hold_to(None, report().to_json()) is None
    assert files.read_baseline(str(tmp_path)) is None
    bound = written(tmp_path, report(("fail_ratio<1%",), kind=verdict.GENERATOR_BOUND), "bound")
    (tmp_path / files.BASELINE).write_text("bound\n")
    pinned = files.read_baseline(str(tmp_path))
    held = files.hold_to(pinned, report(("fail_ratio<1%",)).to_json())
    assert held.invalid and not held.regressed and "generator-bound" in held.describe()
    assert bound["exit_code"] == checks.INVALID


def test_a_pinned_baseline_that_cannot_be_read_is_said_not_passed_over(tmp_path):
    """A `baseline` naming a folder gone from the store: the run says it was not held to it (result.json, the JUnit
    case skipped, the summary), where it used to pass as if no baseline were pinned."""
    files = results
    (tmp_path / files.BASELINE).write_text("gone\n")
    pinned = files.read_baseline(str(tmp_path))
    assert pinned[0] == "gone" and "cannot be read" in pinned[1]
    run = report(("fail_ratio<1%",))
    run.baseline = files.hold_to(pinned, run.to_json())
    assert run.baseline.invalid and not run.baseline.regressed and run.exit_code == checks.PASSED
    assert "not comparable with baseline gone: its result.json cannot be read" in run.baseline.describe()
    suite = suite_of(tmp_path, run)
    case = next(c for c in suite if c.name == "no regression against gone")
    assert result_types(case) == [Skipped]


def test_the_pods_verdict_is_the_packages():
    assert verdict.Verdict is results.Verdict
    assert results.GENERATOR_BOUND == verdict.GENERATOR_BOUND

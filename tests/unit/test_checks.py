import json
import random
import re

import pytest
from locust.stats import RequestStats, calculate_response_time_percentile
from loadtest_shared import checks

from loadtest.commands.types import parse_checks

from loadtest.errors import UsageError

AGG = checks.AGGREGATED

VALID = [
    ("p95<200ms", ("p95", AGG, "<", 200.0)),
    ("p99[/checkout]<=1s", ("p99", "/checkout", "<=", 1000.0)),
    ("p99.9[GET /a b]>1.5s", ("p99.9", "GET /a b", ">", 1500.0)),
    ("p50<0.5s", ("p50", AGG, "<", 500.0)),
    ("avg<50ms", ("avg", AGG, "<", 50.0)),
    ("max[/x]<2s", ("max", "/x", "<", 2000.0)),
    ("fail_ratio<1%", ("fail_ratio", AGG, "<", 0.01)),
    ("fail_ratio<0.02", ("fail_ratio", AGG, "<", 0.02)),
    ("fail_ratio[/pay]<=100%", ("fail_ratio", "/pay", "<=", 1.0)),
    ("rps>=5000", ("rps", AGG, ">=", 5000.0)),
    ("rps[/a]>2.5", ("rps", "/a", ">", 2.5)),
    (" p95 < 200 ms ", ("p95", AGG, "<", 200.0)),
]

# (check, what the message must name); every one is refused by the schema's regex too.
SYNTAX_ERRORS = [
    ("p95<200", "unit"),
    ("avg<5m", "unit"),
    ("rps>=5s", "no unit"),
    ("fail_ratio<1ms", "percentage"),
    ("p42<1ms", "no metric"),
    ("x", "METRIC[NAME] OP NUMBER UNIT"),
    ("p95=<1s", "METRIC[NAME] OP NUMBER UNIT"),
    ("p95[]<1s", "METRIC[NAME] OP NUMBER UNIT"),
    ("p95<1.2.3ms", "not a number"),
]
# Refused by parse only: the regex cannot bound a number.
RANGE_ERRORS = [("fail_ratio<150%", "at most"), ("fail_ratio<1.5", "at most")]


@pytest.mark.parametrize("text, expected", VALID)
def test_valid_checks_parse_to_metric_name_op_and_limit(text, expected):
    (check,) = parse_checks([text])
    assert (check.metric, check.name, check.op) == expected[:3]
    assert check.limit == pytest.approx(expected[3])
    assert check.text == text.strip() == str(check)


@pytest.mark.parametrize("text, fix", SYNTAX_ERRORS + RANGE_ERRORS)
def test_invalid_checks_are_usage_errors_naming_the_option_and_the_fix(text, fix):
    with pytest.raises(UsageError) as e:
        parse_checks([text])
    assert "--check" in str(e.value) and fix in str(e.value) and repr(text.strip()) in str(e.value)


def test_usage_error_names_the_option_it_was_given():
    with pytest.raises(UsageError, match="^locust.run.checks: "):
        parse_checks(["x"], option="locust.run.checks")


@pytest.mark.parametrize("text", [text for text, _ in VALID])
def test_schema_pattern_accepts_every_valid_check(text):
    assert re.search(checks.PATTERN, text)


@pytest.mark.parametrize("text", [text for text, _ in SYNTAX_ERRORS])
def test_schema_pattern_refuses_what_parse_refuses(text):
    assert not re.search(checks.PATTERN, text)


def test_checks_in_one_item_are_split_on_commas_and_new_lines():
    parsed = parse_checks(["p95<1s, rps>=1\nfail_ratio<1%", "", "avg<5ms,"])
    assert [c.metric for c in parsed] == ["p95", "rps", "fail_ratio", "avg"]


def test_a_comma_inside_a_request_name_does_not_split_the_check():
    parsed = parse_checks(["p95[/a,b]<1s,rps>=1"])
    assert [(c.metric, c.name) for c in parsed] == [("p95", "/a,b"), ("rps", checks.AGGREGATED)]


def test_no_checks_parse_to_none():
    assert parse_checks([]) == [] and parse_checks([""]) == []


def test_separators_without_a_check_are_refused():
    """A list of only commas or new lines is a typo, not "no checks" (#40): the run would be judged on nothing."""
    with pytest.raises(UsageError, match="holds no check"):
        parse_checks([" , \n"])


def _random_histogram(seed):
    r = random.Random(seed)
    return {r.choice(range(1, 3000)): r.randint(1, 50) for _ in range(r.randint(1, 60))}


HISTOGRAMS = [
    {7: 1},
    {5: 80, 20: 10, 100: 10},
    {1: 50, 2: 50},
    {ms: 1 for ms in range(1, 101)},
    {ms: 10 for ms in range(1, 1001)},
    {3: 990, 250: 9, 4000: 1},
    *(_random_histogram(seed) for seed in range(5)),
]


@pytest.mark.parametrize("fraction", [0.5, 0.95, 0.99, 0.999])
@pytest.mark.parametrize("histogram", HISTOGRAMS)
def test_percentiles_agree_with_locusts_own(histogram, fraction):
    total = sum(histogram.values())
    assert checks.percentile(histogram, fraction) == calculate_response_time_percentile(
        histogram, total, fraction)


def test_percentile_of_no_requests_is_zero():
    assert checks.percentile({}, 0.95) == 0.0


def entry(name, method, requests, failures, times, start, end, max_ms):
    return {"name": name, "method": method, "num_requests": requests, "num_failures": failures,
            "response_times": {str(ms): n for ms, n in times.items()}, "start_time": start,
            "last_request_timestamp": end, "total_response_time": sum(ms * n for ms, n in times.items()),
            "max_response_time": max_ms}


ENTRIES = [
    entry("/a", "GET", 90, 1, {5: 80, 20: 10}, 100.0, 110.0, 21),
    entry("/a", "POST", 10, 0, {100: 10}, 102.0, 112.0, 104),
    entry("/b", "GET", 100, 5, {10: 100}, 100.5, 110.5, 12),
]


def test_figures_from_entries_per_name_merge_methods():
    figures = checks.from_entries(json.loads(json.dumps(ENTRIES)))
    assert set(figures) == {"/a", "/b", AGG}
    a = figures["/a"]
    assert (a.requests, a.failures, a.max_ms) == (100, 1, 104)
    assert a.rps == pytest.approx(100 / 12)  # first start to last request of either method
    assert a.avg_ms == pytest.approx(16.0)
    assert a.fail_ratio == pytest.approx(0.01)
    assert (a.percentiles_ms[0.5], a.percentiles_ms[0.95]) == (5, 100)
    assert figures["/b"].rps == pytest.approx(10.0) and figures["/b"].value("p95") == 10


def test_aggregated_figures_are_all_entries_together():
    agg = checks.from_entries(ENTRIES)[AGG]
    assert (agg.name, agg.requests, agg.failures, agg.max_ms) == (AGG, 200, 6, 104)
    assert agg.rps == pytest.approx(200 / 12)
    assert agg.avg_ms == pytest.approx(13.0)
    assert agg.value("fail_ratio") == pytest.approx(0.03)
    assert (agg.value("p50"), agg.value("p95")) == (10, 100)


def test_a_name_without_requests_has_zero_figures():
    figures = checks.from_entries([entry("/idle", "GET", 0, 0, {}, 100.0, None, None)])
    idle = figures["/idle"]
    assert (idle.requests, idle.rps, idle.avg_ms, idle.max_ms, idle.fail_ratio, idle.value("p99")) == (0, 0, 0, 0, 0, 0)


def _locust_stats():
    stats = RequestStats()
    r = random.Random(1)
    for _ in range(300):
        stats.log_request("GET", "/fast", r.randint(1, 40), 1024)
    for _ in range(100):
        ms = r.randint(80, 1500)  # beyond 100 ms Locust rounds the times it keeps
        stats.log_request("POST", "/slow", ms, 10)
        if ms > 1200:
            stats.log_error("POST", "/slow", "timeout")
    for _ in range(7):
        stats.log_request("GET", "/broken", 3, 0)
        stats.log_error("GET", "/broken", "500")
    return stats


def test_figures_from_entries_equal_locusts_own_statistics():
    stats = _locust_stats()
    figures = checks.from_entries(json.loads(json.dumps([e.serialize() for e in stats.entries.values()])))
    assert set(figures) == {"/fast", "/slow", "/broken", AGG}
    assert figures["/slow"].failures > 0 and figures["/broken"].fail_ratio == 1.0
    for (name, _), entry in stats.entries.items():
        f = figures[name]
        assert (f.requests, f.failures) == (entry.num_requests, entry.num_failures), name
        assert f.avg_ms == pytest.approx(entry.avg_response_time) and f.max_ms == entry.max_response_time, name
        for metric in ("p50", "p95", "p99"):
            assert f.value(metric) == entry.get_response_time_percentile(checks.PERCENTILES[metric]), (
                name, metric)


FIGURES = checks.from_entries(ENTRIES)


def judged(*texts, generator_bound=False):
    outcomes = checks.judge(parse_checks(list(texts)), FIGURES)
    return outcomes, checks.exit_code(outcomes, generator_bound, FIGURES[checks.AGGREGATED].requests)


def test_all_checks_passing_exit_0():
    outcomes, code = judged("p95<200ms", "p95[/b]<=10ms", "fail_ratio<5%", "rps>=16", "max<1s")
    assert code == checks.PASSED == 0
    assert all(o.passed for o in outcomes)
    assert outcomes[0].describe() == "p95<200ms: 100 ms passed"


def test_a_failed_check_exits_1_and_says_failed():
    outcomes, code = judged("p95<200ms", "p95[/a]<100ms", "fail_ratio<1%")
    assert code == checks.CHECK_FAILED == 1
    assert [o.passed for o in outcomes] == [True, False, False]
    assert outcomes[1].describe() == "p95[/a]<100ms: 100 ms FAILED"
    assert outcomes[2].describe() == "fail_ratio<1%: 3.00% FAILED"


@pytest.mark.parametrize("texts", [["p95<200ms"], ["p95<1ms"], []])
def test_generator_bound_wins_over_the_checks(texts):
    assert judged(*texts, generator_bound=True)[1] == checks.INVALID == 3


def test_a_check_on_a_missing_name_fails_and_says_why():
    (outcome,), code = judged("p95[/nowhere]<1s")
    assert code == 1
    assert outcome.measured is None and not outcome.passed
    assert outcome.describe() == "p95[/nowhere]<1s: FAILED, no request named '/nowhere' in this run"


def test_a_run_without_requests_failed_as_a_run_not_as_a_check_checks_or_none():
    empty = checks.from_entries([])
    (outcome,) = checks.judge(parse_checks(["fail_ratio<1%"]), empty)
    assert not outcome.passed and outcome.describe() == "fail_ratio<1%: FAILED, no request in this run"
    assert checks.exit_code([outcome], False, 0) == checks.exit_code([], False, 0) == checks.RUN_FAILED == 4


def test_exit_codes_have_meanings():
    assert set(checks.EXIT_CODES) == {0, 1, 2, 3, 4, 130}

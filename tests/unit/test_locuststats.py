import json

from loadtest.judging import locuststats


def entry(name, requests, failures, times, start, end):
    return {"name": name, "method": "GET", "num_requests": requests, "num_failures": failures,
            "response_times": {str(k): v for k, v in times.items()}, "start_time": start,
            "last_request_timestamp": end, "total_response_time": sum(k * v for k, v in times.items()),
            "max_response_time": max(times)}


def test_totals_merge_every_request_name(tmp_path):
    path = tmp_path / "stats.json"
    path.write_text(json.dumps([entry("/1kb", 90, 0, {5: 80, 20: 10}, 100.0, 110.0),
                                entry("/0kb", 10, 2, {100: 10}, 101.0, 109.0)]))
    s = locuststats.read(path)
    assert (s.requests, s.failures) == (100, 2)
    assert s.rps == 10.0
    assert (s.p50_ms, s.p95_ms, s.p99_ms) == (5, 100, 100)


def test_no_file_means_no_stats(tmp_path):
    assert locuststats.read(tmp_path / "missing.json") is None


def test_per_second_counts_every_request_name_by_the_second_it_was_made():
    entries = [{"num_reqs_per_sec": {"100": 5, "101": 7}, "num_fail_per_sec": {"101": 1}},
               {"num_reqs_per_sec": {101: 3}, "num_fail_per_sec": {}}]
    assert locuststats.per_second(entries) == {100: (5, 0), 101: (10, 1)}


def counted(per_second: dict) -> list[dict]:
    return [{"num_reqs_per_sec": {str(t): n for t, n in per_second.items()}, "num_fail_per_sec": {}}]


def test_no_live_rps_before_the_first_report_then_the_seconds_counted_in_full():
    rates = locuststats.PerSecond()
    assert rates.live_rps() is None
    # The first report: the swarm began late in second 100, 102 is still being counted.
    rates.count(counted({100: 40, 101: 1000, 102: 300}))
    assert rates.live_rps() == 1000


def test_a_second_keeps_its_count_when_locust_resets_its_statistics():
    rates = locuststats.PerSecond()
    rates.count(counted({100: 900, 101: 1000}))
    rates.count(counted({101: 20, 102: 950}))  # the reset once every user ran: 101's count starts again
    assert rates.counts[101] == (1000, 0)


def test_every_runs_progress_line_has_one_format():
    """The local run's line and a release's or a sweep's (issue #56: written twice, the workers' CPU in two forms)."""
    from loadtest.runtime import locustweb, sweeper

    status = {"user_count": 40, "fail_ratio": 0.0125, "current_response_time_percentiles":
              {"response_time_percentile_0.95": 12.0}, "workers": [{"cpu_usage": 97.0}, {"cpu_usage": 41.0}]}

    class Web:
        def status(self):
            return status

        def stats_entries(self):
            return []

    line = "users    40  RPS     1,234  failures  1.25%  p95    12 ms  worker CPU 97% 41%"
    assert locustweb.live_figures(status, 1234.0, [0.97, 0.41]) == line

    class Rates:
        def count(self, entries):
            pass

        def live_rps(self):
            return 1234.0

    assert sweeper.live_line(Web(), Rates()) == line
    assert locustweb.live_figures({}, None, []) == \
        "users     0  RPS         -  failures  0.00%  p95     0 ms  worker CPU -"

"""A local run's series.csv: each second's phase beside the requests Locust counted in it, written once the workers'
reports have counted it."""
import csv
import io

from loadtest_shared import results
from loadtest_shared.results import RAMP_UP, STEADY, STOP

from loadtest.runtime.localrun import REPORT_LAG_S, Series


def entries(counts: dict[int, tuple[int, int]]) -> list[dict]:
    """Locust's --json-file entries holding these (requests, failures) per second."""
    return [{"num_reqs_per_sec": {str(t): r for t, (r, _) in counts.items()},
             "num_fail_per_sec": {str(t): f for t, (_, f) in counts.items()}}]


STATUS = {"current_response_time_percentiles": {"response_time_percentile_0.5": 2, "response_time_percentile_0.95": 9}}


def test_a_line_is_written_once_its_second_is_counted_in_full(tmp_path):
    path = tmp_path / "series.csv"
    series = Series(path)
    series.add(100, STEADY, 50, STATUS, [0.97], 0.4, 0.8)
    series.rates.count(entries({100: (800, 8)}))
    series.flush(100 + REPORT_LAG_S - 1)
    assert len(path.read_text().splitlines()) == 1  # the header alone: workers may still report second 100
    series.rates.count(entries({100: (1000, 10)}))
    series.flush(100 + REPORT_LAG_S)
    (row,) = csv.DictReader(path.open())
    assert (row["phase"], row["users"], row["rps"], row["fail_ratio"], row["p95_ms"]) == (STEADY, "50", "1000",
                                                                                         "0.01", "9")
    series.close()


def test_a_second_the_sampling_skipped_gets_its_own_counts(tmp_path):
    """A tick lasts a little over a second: the run's last second of failures, skipped so before its stop, was missing
    from the series."""
    path = tmp_path / "series.csv"
    series = Series(path)
    series.add(100, STEADY, 50, STATUS, [0.97], 0.4, 0.8)
    series.add(102, STOP, 0, STATUS, [0.1], 0.0, 0.8)
    series.rates.count(entries({100: (1000, 0), 101: (400, 300), 102: (0, 0)}))
    series.close()
    rows = list(csv.DictReader(path.open()))
    assert [(r["time"], r["phase"], r["rps"], r["fail_ratio"]) for r in rows] == [
        ("100", STEADY, "1000", "0.0"), ("101", STOP, "400", "0.75"), ("102", STOP, "0", "0.0")]


def test_closing_writes_the_lines_still_pending(tmp_path):
    path = tmp_path / "series.csv"
    series = Series(path)
    series.add(100, STEADY, 50, STATUS, [0.97], None, 0.8)
    series.rates.count(entries({100: (1000, 0)}))
    series.close()
    (row,) = csv.DictReader(path.open())
    assert row["rps"] == "1000" and row["target_cpu_ratio"] == "" and row["p99_ms"] == ""


def test_a_local_run_and_a_release_write_one_format(tmp_path):
    """The same columns, whether the seconds were sampled here or the scrapes read from a release's Prometheus; the
    release's phase comes from the runner's states."""
    columns = {"running": {1.0: 0, 2.0: 1, 3.0: 1, 4.0: 0}, "spawning": {1.0: 1, 2.0: 0, 3.0: 0, 4.0: 0},
               "rps": {2.0: 900.0, 3.0: 1000.0}, "worker_throttling_max": {3.0: 0.5}}
    rows = list(csv.DictReader(io.StringIO(results.series_csv(columns, 1.0, 4.0, 1))))
    assert [r["phase"] for r in rows] == [RAMP_UP, STEADY, STEADY, STOP]
    assert (rows[2]["rps"], rows[2]["worker_throttling_max"], rows[2]["host_cpu"]) == ("1000", "0.5", "")
    Series(tmp_path / "local.csv").close()
    assert next(csv.reader((tmp_path / "local.csv").open())) == list(rows[0]) == list(results.SERIES_COLUMNS)


def test_a_scrape_gap_is_marked_and_its_carried_over_figures_left_out():
    """Prometheus restarted for 20 s: its queries carry the last users, percentiles and rates over the gap."""
    times = [float(t) for t in range(0, 60, 5)]
    scraped = {t: (t if not 10 < t < 35 else 10.0) for t in times}
    columns = {"running": {t: 1 for t in times}, "users": {t: 50 for t in times},
               "rps": {t: 1000.0 for t in times}, "scraped": scraped}
    rows = list(csv.DictReader(io.StringIO(results.series_csv(columns, 0.0, 55.0, 5))))
    # A scrape up to two intervals old is late, not missed.
    assert [(r["time"], r["scrape_gap_s"]) for r in rows if r["scrape_gap_s"]] == [("25.000", "15"), ("30.000", "20")]
    assert all(r["rps"] == r["users"] == "" and r["phase"] == STEADY for r in rows if r["scrape_gap_s"])
    assert all(r["rps"] == "1000" and r["users"] == "50" for r in rows if not r["scrape_gap_s"])


def test_the_steps_prometheus_lost_are_lines_marked_as_a_gap():
    """Killed outright, Prometheus loses the samples it had not written out: those steps have no value at all."""
    kept = [t + 0.5 for t in range(30, 60, 5)]
    columns = {"running": {t: 1 for t in kept}, "rps": {t: 1000.0 for t in kept}, "scraped": {t: t for t in kept}}
    rows = list(csv.DictReader(io.StringIO(results.series_csv(columns, 0.5, 55.5, 5))))
    assert [r["time"] for r in rows] == [f"{t + 0.5:.3f}" for t in range(0, 60, 5)]  # every step, one line each
    assert [r["scrape_gap_s"] for r in rows] == ["", "", "", "15", "20", "25"] + [""] * 6
    assert results.series_csv({"rps": {}}, 0.5, 55.5, 5) == ",".join(results.SERIES_COLUMNS) + "\n"


def test_the_versions_line_names_only_the_programs_the_run_started(monkeypatch):
    """A run that loads the backend needs no HAProxy: one missing must not fail the run after its swarm (#26)."""
    from loadtest.runtime import localrun, tools

    def missing(name):
        raise tools.ToolMissing(f"{name} not found: run scripts/setup")

    monkeypatch.setattr(tools, "find", missing)
    assert "HAProxy" not in localrun.versions("backend", None) and "nginx not installed" in localrun.versions(
        "backend", None)
    assert "HAProxy not installed" in localrun.versions("haproxy", None)
    assert localrun.versions("backend", "http://127.0.0.1:8080").startswith("Locust ")
    assert "nginx" not in localrun.versions("backend", "http://127.0.0.1:8080")

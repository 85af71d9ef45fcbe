"""A local run's series.csv: each second's phase beside the requests Locust counted in it, written once the workers'
reports have counted it."""
import csv
import io

from loadtest.judging import runresult
from loadtest.runtime.localrun import RAMP_UP, REPORT_LAG_S, STEADY, STOP, Series


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
    rows = list(csv.DictReader(io.StringIO(runresult.files.series_csv(columns))))
    assert [r["phase"] for r in rows] == [RAMP_UP, STEADY, STEADY, STOP]
    assert (rows[2]["rps"], rows[2]["worker_throttling_max"], rows[2]["host_cpu"]) == ("1000", "0.5", "")
    Series(tmp_path / "local.csv").close()
    assert next(csv.reader((tmp_path / "local.csv").open())) == list(rows[0]) == list(runresult.files.SERIES_COLUMNS)


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

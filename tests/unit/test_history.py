"""A store's history from run folders as `loadtest run` writes them (runresult.write): oldest first, the table, the
baseline a generator-bound or incomplete run cannot be, the comparison with it by compare's limits, and the page."""
from __future__ import annotations

import helpers
import pytest

from loadtest_shared import results, verdict

from loadtest.errors import UsageError
from loadtest.judging import history, runresult


def write_run(store, name: str, started: float, rps: float, p95: float, kind: str = verdict.HEALTHY,
              incomplete: str | None = None):
    helpers.write_run(store / name, rps, p95, kind, incomplete, started=started, seconds=10, target="backend")


@pytest.fixture
def store(tmp_path):
    write_run(tmp_path, "b-second", 2000.0, 950.0, 11.0)
    write_run(tmp_path, "a-first", 1000.0, 1000.0, 10.0)
    write_run(tmp_path, "c-bound", 3000.0, 500.0, 30.0, kind=verdict.GENERATOR_BOUND)
    write_run(tmp_path, "d-cut", 4000.0, 10.0, 1.0, incomplete="interrupted")
    write_run(tmp_path, "e-idle", 5000.0, 0.0, 0.0)
    (tmp_path / "not-a-run").mkdir()
    return tmp_path


def test_runs_are_read_oldest_first_and_other_folders_ignored(store):
    assert [r.folder for r in history.runs(store)] == ["a-first", "b-second", "c-bound", "d-cut", "e-idle"]


@pytest.mark.parametrize("name, why", [("c-bound", "generator-bound"), ("d-cut", "incomplete"),
                                       ("e-idle", "sent no request"), ("nope", "no run of that name")])
def test_a_run_that_cannot_be_a_baseline_is_refused_naming_why(store, name, why):
    with pytest.raises(UsageError, match=why):
        history.pin(store, name, history.runs(store))
    assert history.baseline(store) is None


def test_a_pinned_baseline_judges_later_runs_by_compares_limits(store):
    history.pin(store, "a-first", history.runs(store))
    assert history.baseline(store) == "a-first"
    assert not history.against_baseline(store, store / "b-second").regressed  # -5 % RPS, +10 % p95: at the limits
    write_run(store, "f-slow", 6000.0, 900.0, 10.0)
    assert history.against_baseline(store, store / "f-slow").regressed
    assert history.against_baseline(store, store / "a-first") is None


def test_the_table_and_the_page_show_every_run_and_the_baseline(store):
    history.pin(store, "a-first", history.runs(store))
    known = history.runs(store)
    lines = history.table(known, "a-first")
    assert len(lines) == 6 and "(baseline)" in lines[1] and "(incomplete)" in lines[4]
    assert lines[0].split()[:4] == ["run", "time", "scenario", "RPS"] and " keepalive_1kb " in lines[1]
    page = history.html_page(store, known, "a-first", {"b-second": "REGRESSED"})
    assert page.count("<svg") == 3 and "baseline</text>" in page
    assert "<th>vs baseline</th>" in page and "<td>REGRESSED</td>" in page
    assert 'href="./a-first/summary.md"' in page and "Baseline: run 1, a-first" in page


def test_a_run_folder_named_like_a_url_links_inside_the_store(store):
    write_run(store, "javascript:alert(1)", 7000.0, 1000.0, 10.0)
    page = history.html_page(store, history.runs(store), None)
    assert 'href="./javascript%3Aalert%281%29/summary.md"' in page and 'href="javascript' not in page


def test_a_claims_tar_unpacks_its_runs_and_names_each(tmp_path):
    import io
    import tarfile

    from loadtest.runtime import store as stores

    claim = tmp_path / "claim"
    for run in ("lt-locust-master-1", "lt-locust-master-2"):
        (claim / run).mkdir(parents=True)
        (claim / run / "result.json").write_text("{}")
    (claim / "baseline").write_text("lt-locust-master-1\n")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        tar.add(claim, arcname=".")  # as `tar -C /results -cf - .` in the reader pod writes it
    copy = tmp_path / "copy"
    copy.mkdir()
    assert stores.extract(archive.getvalue(), copy) == ["lt-locust-master-1", "lt-locust-master-2"]
    assert (copy / "lt-locust-master-2" / "result.json").is_file() and (copy / "baseline").is_file()


def test_a_run_cut_off_before_its_figures_shows_locusts_statistics_so_far(tmp_path):
    """A judged master killed mid-run leaves the result.json it wrote at its start (no figures) beside the statistics
    file Locust rewrote every second: the history shows those, marked incomplete."""
    folder = tmp_path / "killed"
    runresult.write(results.RunReport({"scenario": "keepalive_1kb", "target": "haproxy"}, 1000.0, 1000.0,
                                        incomplete="the master ended before the run did"), folder)
    header = "Type,Name,Request Count,Failure Count,Median Response Time,Requests/s,Failures/s,50%,95%,99%"
    (folder / history.LOCUST_STATS).write_text(f"{header}\nGET,/1kb,5000,50,2,980.5,9.8,2,7,12\n"
                                              f",Aggregated,5000,50,2,980.5,9.8,2,7,12\n")
    [run] = history.runs(tmp_path)
    assert not run.complete and (run.rps, run.p95_ms, run.fail_ratio) == (980.5, 7.0, 0.01)
    assert "(incomplete)" in history.table([run], None)[1]


def test_a_run_cut_off_before_its_first_request_shows_no_figures(tmp_path):
    folder = tmp_path / "early"
    runresult.write(results.RunReport({}, 1000.0, 1000.0, incomplete="interrupted"), folder)
    (folder / history.LOCUST_STATS).write_text("Type,Name,Request Count,Failure Count,Requests/s,95%\n"
                                              ",Aggregated,0,0,0,N/A\n")
    [run] = history.runs(tmp_path)
    assert run.rps is None and run.p95_ms is None

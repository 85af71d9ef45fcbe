"""Prometheus killed and started again mid-run, under the chart's judged master (`locust.mode: run`) whose series.csv
comes from it, as the in-chart Prometheus does when its container is OOM-killed and restarted (its data on the same
volume). What the user must see: the run goes on and its result is whole (the master judges from its workers'
reports, not from Prometheus), and its series.csv, read from the restarted Prometheus at the end, marks the seconds
that Prometheus missed instead of carrying its last figures over them."""
from __future__ import annotations

import csv
import time

import yaml

from loadtest_shared import checks, results

from loadtest.runtime import sweep_local
from loadtest.runtime.processes import STARTUP_TIMEOUT_S, free_port
from loadtest.runtime.tools import find as find_tool

RUN_TIME_S = 30
STEADY_REQUESTS = 200
DOWN_S = 8  # the fault's length: Prometheus down, then starting again
SCRAPE_RESUMED_S = 6  # Prometheus' service discovery sends its first targets up to 5 s after it starts


def test_a_prometheus_restarted_mid_run_leaves_the_run_whole_and_its_series_marks_the_gap(judged_run, tmp_path):
    metrics, port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(sweep_local.prometheus_config("lt", [sweep_local.ScrapeJob(
        "locust", f"http://127.0.0.1:{metrics}/metrics", "locust-master", "generator")])))
    argv = [find_tool("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}"]
    prometheus = judged_run.procs.start("prometheus", argv)
    judged_run.procs.wait_http("prometheus", f"http://127.0.0.1:{port}/-/ready")
    # A light load: the generator has headroom, so the run passes on its own and only the gap is in question.
    judged_run.start(users=4, run_time_s=RUN_TIME_S, LOADTEST_WAIT="0.05", LOADTEST_METRICS_PORT=str(metrics),
                     LOADTEST_RELEASE="lt", LOADTEST_PROMETHEUS_URL=f"http://127.0.0.1:{port}",
                     LOADTEST_SCRAPE_INTERVAL_S=f"{sweep_local.SCRAPE_S}")
    judged_run.wait_steady(STEADY_REQUESTS)
    prometheus.kill()  # SIGKILL, as the kernel's out-of-memory kill: no clean shutdown
    prometheus.wait()
    killed = time.time()
    time.sleep(DOWN_S)
    judged_run.procs.start("prometheus-restarted", argv)
    judged_run.procs.wait_http("prometheus-restarted", f"http://127.0.0.1:{port}/-/ready")
    ready = time.time()
    judged_run.master.wait(timeout=STARTUP_TIMEOUT_S + RUN_TIME_S + 60)
    served = judged_run.served()

    assert judged_run.master.returncode == checks.PASSED, judged_run.log()[-3000:]
    result = judged_run.result()
    assert result["complete"] and result["faults"]["events"] == [], result
    sent = result["faults"]["requests_sent"]
    assert 0 <= served - sent <= 4, (served, sent)  # at most the requests in flight at the stop
    with open(judged_run.store / "run-1" / results.SERIES_CSV) as f:
        rows = list(csv.DictReader(f))
    gap = [r for r in rows if r["scrape_gap_s"]]
    print(f"{len(gap)} lines of {len(rows)} marked, up to {max(float(r['scrape_gap_s']) for r in gap):.0f} s "
          f"since the last scrape; nginx {served:,}, workers {sent:,}")
    # Every step from two intervals (a late scrape) after the kill until the restarted Prometheus scraped again is
    # marked, nothing carried over into it: one stretch of lines. (Killed outright, Prometheus also lost the samples
    # it had not yet written out: here, with few series, some or all of them; those steps are marked too.) It
    # scrapes within SCRAPE_RESUMED_S of being ready (its service discovery's first update); then the figures are
    # there.
    late_s = (results.GAP_SCRAPES + 1) * sweep_local.SCRAPE_S
    down = [r for r in rows if killed + late_s < float(r["time"]) < ready]
    assert len(down) >= DOWN_S - late_s and all(r["scrape_gap_s"] for r in down), rows
    assert all(r["rps"] == r["users"] == "" for r in gap)
    # (A gap at the start is the master's own: up and scraped more than two intervals after the run began.)
    marked = [i for i, r in enumerate(rows) if r["scrape_gap_s"] and float(r["time"]) > killed]
    assert marked == list(range(marked[0], marked[-1] + 1)), marked
    assert float(rows[marked[-1]]["time"]) < ready + SCRAPE_RESUMED_S + late_s, (rows[marked[-1]], ready)
    after = rows[marked[-1] + 1:]
    assert any(float(r["rps"] or 0) > 10 for r in after), rows

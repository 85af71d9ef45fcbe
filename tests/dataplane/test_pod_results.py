"""The results folder a judged master writes in its pod (the chart's mode run, scheduled or not), on loopback: the
master and a worker with the environment the chart gives them, the store a plain folder as the PVC is. Its folder is
one `loadtest history` reads; a pinned baseline holds the next run; a master killed mid-run leaves in the bucket its
folder marked incomplete, with what Locust had written (in a plain folder: tests/faults/test_master_lost.py)."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys

import yaml
from helpers import wait_for
from s3server import S3_BUCKET

from loadtest_shared import checks, results, settings

from loadtest import paths
from loadtest.runtime import sweep_local
from loadtest.runtime.locust import RESET_STATS_ENV, Locust
from loadtest.runtime.processes import STARTUP_TIMEOUT_S, Processes, free_port
from loadtest.runtime.tools import find as find_tool
from loadtest.workload import scenarios

from loadtest_shared.s3 import S3Error, Store


def pod_run(store, run, url, users, wait_s, run_time_s=8, kill_when=None, env=None):
    """One judged run as the chart's master runs it, its folder <store>/<run>. Killed with SIGKILL once
    `kill_when()` holds when given (a crash); returns the master's exit code."""
    folder = store / run
    env = {**(env or {}), "LOADTEST_CHECKS": "fail_ratio<1%", RESET_STATS_ENV: "true",
           "LOADTEST_WAIT": f"{wait_s:g}", "LOADTEST_RESULTS_DIR": str(store), "LOADTEST_RUN_NAME": run}
    with Processes(store.parent / f"logs-{run}") as procs:
        locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile, env=env)
        master = locust.start_master(
            "-u", str(users), "-r", str(users), "-t", f"{run_time_s}s", "--host", url,
            "--csv", str(folder / "stats"), "--json-file", str(folder / "stats"), "--html", str(folder / "report.html"),
            web=False, expect_workers=1, expect_workers_wait_s=STARTUP_TIMEOUT_S)
        locust.start_workers(1)
        if kill_when:
            wait_for("the condition to kill the master at", kill_when, STARTUP_TIMEOUT_S + run_time_s,
                     until=lambda ok: ok or master.poll() is not None, detail=procs.logs_text)
            if master.poll() is None:
                os.kill(master.pid, signal.SIGKILL)
        master.wait(timeout=STARTUP_TIMEOUT_S + run_time_s + 60)
        return master.returncode, procs.logs_text()


def history(store, *args):
    return subprocess.run([sys.executable, "-m", "loadtest", "history", "--store", str(store), *args],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_the_masters_folder_is_a_run_history_reads_and_the_baseline_holds_the_next(tmp_path, nginx):
    store = tmp_path / "results"
    code, log = pod_run(store, "lt-locust-master-29000001", nginx.url, users=8, wait_s=0.01)
    assert code == checks.PASSED, log[-3000:]
    first = store / "lt-locust-master-29000001"
    for name in ("result.json", "checks.xml", "summary.md", "report.html", "stats.json", "stats_stats.csv"):
        assert (first / name).is_file(), name
    result = json.loads((first / "result.json").read_text())
    assert result["complete"] and result["exit_code"] == 0 and result["conditions"]["scenario"] == "keepalive_1kb"
    assert result["figures"]["Aggregated"]["requests"] > 100
    pinned = history(store, "--baseline", first.name)
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr

    # The backend slowed, as the issue has it, played by fewer users: a quarter of the rate.
    code, log = pod_run(store, "lt-locust-master-29000002", nginx.url, users=2, wait_s=0.01)
    assert code == checks.CHECK_FAILED, log[-3000:]
    assert "REGRESSION against baseline lt-locust-master-29000001" in log
    second = json.loads((store / "lt-locust-master-29000002" / "result.json").read_text())
    assert second["baseline"]["regressed"] and second["exit_code"] == 1
    assert "REGRESSION" in (store / "lt-locust-master-29000002" / "checks.xml").read_text()
    listed = history(store)
    assert listed.returncode == 0, listed.stderr
    assert "lt-locust-master-29000001" in listed.stdout and "lt-locust-master-29000002" in listed.stdout


def test_a_run_too_short_to_judge_its_workers_does_not_pass(tmp_path, nginx):
    """Every user ran for less than two worker reports: no steady sample of the workers' CPU, so nothing says whether
    the generator was the limit. The run is kept, marked incomplete with why, and exits 4 however its checks came
    out."""
    store = tmp_path / "results"
    code, log = pod_run(store, "short", nginx.url, users=2, wait_s=0.01, run_time_s=2)
    assert code == checks.RUN_FAILED, log[-3000:]
    result = json.loads((store / "short" / "result.json").read_text())
    assert not result["complete"] and "no steady sample of the workers' CPU" in result["incomplete"], result
    assert result["exit_code"] == checks.RUN_FAILED and result["figures"]["Aggregated"]["requests"] > 0


def test_with_a_bucket_the_master_uploads_its_folder_and_history_reads_the_bucket(tmp_path, nginx, s3):
    """The store a bucket (moto's S3, signatures checked): the master uploads its folder when it exits and reads
    the baseline pinned in the bucket; `loadtest history --store s3://...` copies the runs and pins there."""
    endpoint, credentials = s3
    aws = {"AWS_ACCESS_KEY_ID": credentials.access_key, "AWS_SECRET_ACCESS_KEY": credentials.secret_key}
    pod = {**aws, "LOADTEST_RESULTS_S3_URL": f"s3://{S3_BUCKET}/nightly", "LOADTEST_RESULTS_S3_ENDPOINT": endpoint}
    scratch = tmp_path / "scratch"
    code, log = pod_run(scratch, "lt-locust-master-29000101", nginx.url, users=8, wait_s=0.01, env=pod)
    assert code == checks.PASSED, log[-3000:]
    assert f"results uploaded to s3://{S3_BUCKET}/nightly/lt-locust-master-29000101" in log

    # The CLI as a user runs it, in a folder of their own (where the bucket's copy goes), this checkout's package.
    cli = {**os.environ, **aws, "AWS_ENDPOINT_URL_S3": endpoint, "PYTHONPATH": str(paths.HOME)}
    url = f"s3://{S3_BUCKET}/nightly"
    pinned = subprocess.run([sys.executable, "-m", "loadtest", "history", "--store", url, "--baseline",
                             "lt-locust-master-29000101"], capture_output=True, text=True, timeout=60, env=cli,
                            cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    code, log = pod_run(scratch, "lt-locust-master-29000102", nginx.url, users=2, wait_s=0.01, env=pod)
    assert code == checks.CHECK_FAILED, log[-3000:]
    assert "REGRESSION against baseline lt-locust-master-29000101" in log

    listed = subprocess.run([sys.executable, "-m", "loadtest", "history", "--store", url], capture_output=True,
                            text=True, timeout=60, env=cli, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    copy = tmp_path / f"history-{S3_BUCKET}"
    for run in ("lt-locust-master-29000101", "lt-locust-master-29000102"):
        assert run in listed.stdout and (copy / run / "report.html").is_file()
    assert "REGRESSED" in listed.stdout and (copy / "history.html").is_file()


def test_the_master_writes_the_runs_series_from_the_releases_prometheus(tmp_path, nginx):
    """What the chart's ConfigMap tells a judged master (the in-chart Prometheus, its scrape interval) and the
    release's name make its series.csv: the same columns `loadtest run --release` collects, from a real Prometheus
    that scrapes the master as the chart's does."""
    metrics, port = free_port(), free_port()
    with Processes(tmp_path / "prometheus") as procs:
        config = sweep_local.prometheus_config("lt", [sweep_local.ScrapeJob(
            "locust", f"http://127.0.0.1:{metrics}/metrics", "locust-master", "generator")])
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
        procs.start("prometheus", [find_tool("prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}",
                                   f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"])
        procs.wait_http("prometheus", f"http://127.0.0.1:{port}/-/ready")
        code, log = pod_run(tmp_path / "results", "lt-locust-master-29000301", nginx.url, users=8, wait_s=0.01,
                            run_time_s=10, env={settings.METRICS_PORT.env: str(metrics), "LOADTEST_RELEASE": "lt",
                                                "LOADTEST_PROMETHEUS_URL": f"http://127.0.0.1:{port}",
                                                "LOADTEST_SCRAPE_INTERVAL_S": f"{sweep_local.SCRAPE_S}"})
    assert code == checks.PASSED, log[-3000:]
    with open(tmp_path / "results" / "lt-locust-master-29000301" / results.SERIES_CSV) as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(results.SERIES_COLUMNS)  # a local run's columns
    # Figures, not their size: this module runs beside the first phase, whose load leaves 8 users some 100 RPS.
    assert max(float(r["rps"] or 0) for r in rows) > 0 and max(float(r["users"] or 0) for r in rows) == 8, rows
    assert "steady" in {r["phase"] for r in rows}, rows


def test_with_a_bucket_a_master_killed_mid_run_leaves_what_it_had_there(tmp_path, nginx, s3):
    """A master killed outright (out of memory, its node lost) runs no exit hook: what reaches the bucket is what
    it synced while the run went on, its result.json marked incomplete and Locust's CSV with the requests so far;
    no .complete marker, so `history` says the upload never finished."""
    endpoint, credentials = s3
    aws = {"AWS_ACCESS_KEY_ID": credentials.access_key, "AWS_SECRET_ACCESS_KEY": credentials.secret_key}
    pod = {**aws, "LOADTEST_RESULTS_S3_URL": f"s3://{S3_BUCKET}/crashes", "LOADTEST_RESULTS_S3_ENDPOINT": endpoint,
           "LOADTEST_RESULTS_S3_SYNC_S": "2"}
    bucket = Store(endpoint, S3_BUCKET, "crashes", credentials=credentials)

    def synced_requests() -> int:
        """The requests in the bucket's copy of Locust's CSV: the master synced it with the run going on."""
        try:
            rows = bucket.get(bucket.run_key("killed", "stats_stats.csv")).decode().splitlines()
        except S3Error as e:
            if e.status != 404:
                raise
            return 0  # not synced yet
        return int(rows[-1].split(",")[2]) if len(rows) >= 2 else 0

    # Killed once a sync carried requests (a condition, not a clock: a busy host starts the run late).
    code, _ = pod_run(tmp_path / "scratch", "killed", nginx.url, users=4, wait_s=0.01, run_time_s=60,
                      kill_when=lambda: synced_requests() > 0, env=pod)
    assert code == -signal.SIGKILL

    assert bucket.incomplete_runs() == ["killed"] and bucket.runs() == []
    result = json.loads(bucket.get(bucket.run_key("killed", "result.json")))
    assert not result["complete"] and "crashed" in result["incomplete"]
    assert synced_requests() > 0

    cli = {**os.environ, **aws, "AWS_ENDPOINT_URL_S3": endpoint, "PYTHONPATH": str(paths.HOME)}
    listed = subprocess.run([sys.executable, "-m", "loadtest", "history", "--store", f"s3://{S3_BUCKET}/crashes"],
                            capture_output=True, text=True, timeout=60, env=cli, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert "uploads that never finished (left out): killed" in listed.stdout, listed.stdout + listed.stderr

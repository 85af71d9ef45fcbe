"""`loadtest run` end to end on the local stack, and the master's own judgement (the chart's mode run) with real
Locust processes: checks that pass and fail on purpose, a starved generator giving the "invalid" code, a results
folder a pipeline keeps (its JUnit read by a JUnit reader), and an interrupted run that still leaves its folder."""
from __future__ import annotations

import concurrent.futures
import csv
import json
import os
import signal
import subprocess
import sys

import junitparser
import psutil
import pytest
from helpers import wait_for

from loadtest_shared import checks, verdict

from loadtest import paths
from loadtest.runtime.locust import MASTER, RESET_STATS_ENV, Locust
from loadtest.runtime.processes import STARTUP_TIMEOUT_S, Processes
from loadtest.workload import scenarios

LOCUST_FILES = {"report.html", "stats.json", "stats_stats.csv", "stats_stats_history.csv", "stats_failures.csv",
                "stats_exceptions.csv"}


def loadtest_run(out, *args, timeout=180):
    return subprocess.run([sys.executable, "-m", "loadtest", "run", "--local", "--output", str(out), *args],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def passed(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "passed"
    # Light load (5 users waiting 50 ms), so neither side saturates and the checks alone decide.
    result = loadtest_run(out, "--workers", "1", "--users", "5", "--wait", "0.05", "--run-time", "6s",
                          "--check", "p95<500ms", "--check", "fail_ratio<1%", "--check", "rps>=20",
                          "--check", "p99[/1kb]<=1s")
    return out, result


def test_a_run_that_meets_its_checks_exits_0_and_keeps_every_file(passed):
    out, result = passed
    assert result.returncode == checks.PASSED, result.stdout + result.stderr
    names = {p.name for p in out.iterdir()}
    assert {"result.json", "checks.xml", "summary.md", "series.csv", f"{MASTER}.log"} | LOCUST_FILES <= names
    data = json.loads((out / "result.json").read_text())
    assert data["complete"] and data["exit_code"] == 0 and data["verdict"]["kind"] == verdict.HEALTHY
    assert [c["passed"] for c in data["checks"]] == [True] * 4
    assert data["figures"]["Aggregated"]["requests"] > 100
    assert "Locust 2.47.0" in data["conditions"]["versions"]
    assert "PASSED" in (out / "summary.md").read_text()
    assert len((out / "series.csv").read_text().splitlines()) > 3  # a line per second of the run
    assert "check            rps>=20:" in result.stdout and "exit code        0" in result.stdout


def test_its_junit_reads_as_one_passing_case_per_check_and_one_for_the_generator(passed):
    out, _ = passed
    suite = next(iter(junitparser.JUnitXml.fromfile(str(out / "checks.xml"))))
    cases = list(suite)
    assert [c.name for c in cases[:4]] == ["p95<500ms", "fail_ratio<1%", "rps>=20", "p99[/1kb]<=1s"]
    assert len(cases) == 5 and all(c.is_passed for c in cases)
    assert (suite.tests, suite.failures, suite.errors) == (5, 0, 0)


def test_the_same_folder_is_refused_without_force(passed):
    out, _ = passed
    again = loadtest_run(out, "--run-time", "2s")
    assert again.returncode == 2 and "holds an earlier run" in again.stderr and "--force" in again.stderr


def test_a_check_that_fails_exits_1_and_fails_its_junit_case(tmp_path):
    out = tmp_path / "failed"
    result = loadtest_run(out, "--workers", "1", "--users", "5", "--wait", "0.05", "--run-time", "4s",
                          "--check", "fail_ratio<1%", "--check", "rps>=10000000")
    assert result.returncode == checks.CHECK_FAILED, result.stdout + result.stderr
    assert "rps>=10000000:" in result.stdout and "FAILED" in result.stdout
    suite = next(iter(junitparser.JUnitXml.fromfile(str(out / "checks.xml"))))
    assert [c.is_passed for c in suite] == [True, False, True]


def test_a_starved_generator_makes_the_run_invalid_exit_3(tmp_path, cpu_hog):
    """With a CPU hog beside it: on a busy machine too, a saturated generator is never called healthy."""
    out = tmp_path / "starved"
    # One worker, 100 users without a pause: the worker is the limit at a fraction of what nginx serves.
    result = loadtest_run(out, "--workers", "1", "--users", "100", "--run-time", "6s", "--check", "fail_ratio<1%")
    assert result.returncode == checks.INVALID, result.stdout + result.stderr
    assert "invalid measurement" in result.stderr
    data = json.loads((out / "result.json").read_text())
    assert data["verdict"]["kind"] == verdict.GENERATOR_BOUND and data["checks"][0]["passed"]
    assert "INVALID" in (out / "summary.md").read_text()
    print(f"\n{data['verdict']['reason']}\n{data['window']}")
    # What was judged: the steady window only, and most of it saturated.
    window = data["window"]
    assert window["samples"] >= 3 and window["start"] < window["end"] <= data["ended"], window
    assert data["cpu"]["generator_saturated_share"] >= verdict.SATURATED_SHARE, data["cpu"]
    assert "steady window" in (out / "summary.md").read_text()
    rows = list(csv.DictReader((out / "series.csv").open()))
    steady = [r for r in rows if r["phase"] == "steady"]
    # Every second after the first running tick up to the last steady one, once; a tick that took over a second
    # (a busy machine) lends its figures to the second it skipped, so a sample may stand for two lines.
    seconds = [int(r["time"]) for r in steady]
    assert seconds == list(range(int(window["start"] - 0.5) + 1, int(window["end"] - 0.5) + 1)), rows
    assert len(steady) >= window["samples"] and rows[0]["phase"] == "ramp-up", rows
    # Per second, real rates: every steady second counted requests.
    assert all(int(r["rps"]) > 0 for r in steady), rows


def test_a_target_elsewhere_is_judged_unmeasured_never_healthy(tmp_path, nginx):
    """Issue #55: `--host` aimed at a server the run does not watch (here the session's nginx, light load): its CPU
    is not measured, so the verdict says so rather than calling it healthy, and the run stands on its checks."""
    out = tmp_path / "elsewhere"
    result = loadtest_run(out, "--host", nginx.url, "--workers", "1", "--users", "2", "--wait", "0.05",
                          "--run-time", "5s", "--check", "rps>=5")
    data = json.loads((out / "result.json").read_text())
    assert data["verdict"]["kind"] == verdict.NOT_GENERATOR_BOUND, data["verdict"]
    assert "target's CPU was not measured" in data["verdict"]["reason"] and "unmeasured" in result.stdout
    assert result.returncode == checks.PASSED, result.stdout + result.stderr


def test_a_rate_not_offered_by_the_task_is_the_generators_never_the_targets(tmp_path, nginx):
    """Issue #55: the open model with a task that sends a request in every other slot only: half the rate goes out,
    every slot on time and the target idle. The verdict is the generator's and names the task, not the target."""
    mine = tmp_path / "every_other.py"
    mine.write_text("import itertools\n\nfrom locust import constant, task\n\nfrom leanhttp import LeanHttpUser\n\n"
                    "SLOTS = itertools.count()\n\n\nclass EveryOther(LeanHttpUser):\n    wait_time = constant(0)\n\n"
                    "    @task\n    def get(self):\n        if next(SLOTS) % 2 == 0:\n"
                    "            self.request('/1kb')\n")
    out = tmp_path / "every-other"
    result = loadtest_run(out, "-f", str(mine), "--host", nginx.url, "--workers", "1", "--arrival-rate", "100",
                          "--run-time", "6s")
    assert result.returncode == checks.INVALID, result.stdout + result.stderr
    data = json.loads((out / "result.json").read_text())
    assert data["verdict"]["kind"] == verdict.GENERATOR_BOUND, data["verdict"]
    assert "request(s) a slot" in data["verdict"]["reason"], data["verdict"]


def test_bad_checks_are_refused_before_anything_starts(tmp_path):
    result = loadtest_run(tmp_path / "bad", "--check", "p95<200")
    assert result.returncode == 2 and "--check: check 'p95<200': give p95 a unit" in result.stderr
    assert not (tmp_path / "bad").exists()


def counted(series) -> bool:
    """Whether the run's series shows a second with requests counted."""
    return series.exists() and any(float(row["rps"]) > 0 for row in csv.DictReader(series.open()))


def test_a_run_cancelled_by_sigterm_stops_its_processes_and_leaves_its_folder_marked_incomplete(tmp_path):
    """A CI job cancelled sends the CLI SIGTERM, not the terminal's Ctrl-C: it stops as Ctrl-C does (the layers with
    a sweep and a release send that), every process of the run stopped, what was measured kept."""
    out = tmp_path / "interrupted"
    proc = subprocess.Popen([sys.executable, "-m", "loadtest", "run", "--local", "--output", str(out), "--workers",
                             "1", "--users", "5", "--wait", "0.05", "--run-time", "60s", "--check", "rps>=1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        def requests_counted() -> bool:
            assert proc.poll() is None, proc.stderr.read()
            return counted(out / "series.csv")

        # Interrupted once the master has counted requests (the workers report every 3 s): those must be kept.
        wait_for("requests counted in series.csv", requests_counted, STARTUP_TIMEOUT_S * 2)
        run = psutil.Process(proc.pid).children(recursive=True)  # nginx and Locust, each in a session of its own
        assert run
        proc.send_signal(signal.SIGTERM)  # to the CLI alone
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "marked incomplete" in err
    assert not [p for p in run if p.is_running() and p.status() != psutil.STATUS_ZOMBIE], run
    data = json.loads((out / "result.json").read_text())
    assert not data["complete"] and data["incomplete"] == "interrupted" and data["exit_code"] == 130
    assert data["figures"]["Aggregated"]["requests"] > 0  # Locust wrote what it had measured when stopped
    suite = next(iter(junitparser.JUnitXml.fromfile(str(out / "checks.xml"))))
    assert "the run went to its end" in [c.name for c in suite]


def judged_master(tmp_path, url, checks_text, users, wait_s, worker_cores=None, quotas=None, run_time_s=8):
    """The chart's mode run on loopback: a headless master that ends the run itself, with LOADTEST_CHECKS, the
    LOCUST_RESET_STATS as the chart sets them, and one worker (in a CPU quota when `worker_cores`)."""
    env = {"LOADTEST_CHECKS": checks_text, RESET_STATS_ENV: "true",
           "LOADTEST_WAIT": f"{wait_s:g}", "LOADTEST_PATH": "/1kb"}
    with Processes(tmp_path) as procs:
        locust = Locust(procs, scenarios.get("keepalive_1kb").locustfile, env=env)
        master = locust.start_master("-u", str(users), "-r", str(users), "-t", f"{run_time_s}s", "--host", url, web=False,
                                     expect_workers=1, expect_workers_wait_s=STARTUP_TIMEOUT_S)
        (worker,) = locust.start_workers(1)
        if worker_cores:
            quotas.limit([worker.pid], worker_cores)
        master.wait(timeout=STARTUP_TIMEOUT_S + run_time_s + 60)
        return master.returncode, procs.logs_text()


def test_the_master_of_a_run_exits_with_its_checks_code(tmp_path, nginx):
    # The two runs side by side (light load, each its own master and worker): one run's time, not two.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        passing = pool.submit(judged_master, tmp_path / "pass", nginx.url, "fail_ratio<1%\nrps>=5", users=5,
                              wait_s=0.05)
        failing = pool.submit(judged_master, tmp_path / "fail", nginx.url, "rps>=10000000", users=5, wait_s=0.05)
        code, log = passing.result()
        failed_code, failed_log = failing.result()
    assert code == checks.PASSED, log[-3000:]
    assert "check rps>=5:" in log and "exit code 0" in log
    # Measured from the worker's reports (every 3 s), even in an 8 s run: Locust's own figure comes 20 s in.
    assert "verdict not generator-bound: the generator was not saturated" in log and "no steady sample" not in log
    code, log = failed_code, failed_log
    assert code == checks.CHECK_FAILED, log[-3000:]
    assert "rps>=10000000:" in log and "FAILED" in log


def test_the_master_of_a_run_refuses_a_bad_check_with_code_2(tmp_path, nginx):
    code, log = judged_master(tmp_path, nginx.url, "p95<200", users=1, wait_s=1)
    assert code == checks.BAD_INPUT and "give p95 a unit" in log


def test_the_master_of_a_run_calls_a_worker_at_its_cpu_limit_invalid(tmp_path, nginx, make_cpu_quotas):
    """The seed's starved worker: at a tenth of a core it is pinned at its limit, and the run is invalid however
    its checks came out."""
    with make_cpu_quotas() as quotas:
        # 12 s: a worker reports its CPU every 3 s, and the master judges it from 3 s into the run on.
        code, log = judged_master(tmp_path, nginx.url, "fail_ratio<1%", users=20, wait_s=0, worker_cores=0.1,
                                  quotas=quotas, run_time_s=12)
    assert code == checks.INVALID, log[-3000:]
    assert "verdict generator-bound: the generator was saturated" in log and "exit code 3" in log


def test_the_example_pipeline_runs_checks_keeps_and_compares(tmp_path):
    """examples/ci/pipeline.sh local, twice, as docs/ci.md types it: the first run, whose BASELINE is not there yet,
    compares nothing and becomes the baseline of the second."""
    results = tmp_path / "results"
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}", "RESULTS": str(results),
           "RUN_TIME": "5s", "CHECKS": "fail_ratio<1%,rps>=20", "MAX_P95_RISE": "1000%", "MAX_RPS_DROP": "50%"}
    script = [str(paths.HOME / "examples" / "ci" / "pipeline.sh"), "local"]
    first = subprocess.run(script, env={**env, "BASELINE": str(tmp_path / "baseline" / "run")}, capture_output=True,
                           text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no baseline at" in first.stderr
    (baseline,) = results.iterdir()
    assert (baseline / "checks.xml").exists() and not (results / "comparison.md").exists()
    # A run's folder is named after the second it starts in, and this one starts over RUN_TIME after the first.
    second = subprocess.run(script, env={**env, "BASELINE": str(baseline)}, capture_output=True, text=True,
                            timeout=180, stdin=subprocess.DEVNULL)
    assert second.returncode == 0, second.stdout + second.stderr
    assert (results / "comparison.md").read_text().startswith("# Load test comparison (runs): no regression")
    assert len([p for p in results.iterdir() if p.is_dir()]) == 2

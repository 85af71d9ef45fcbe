"""One interactive release on the real node, driven as a pipeline and as a person drive it.

`loadtest run --release`, as a pipeline runs it: the command opens its own port-forwards through the real kubelet,
runs, judges its checks, and leaves Locust's files and the release's Prometheus series in its folder; interrupted,
it stops the swarm and still leaves what it collected.

The chart's Locust web UI in a real browser, reached as a user reaches it: through the master's Service (`kubectl
port-forward`, what NOTES.txt prints). It refuses a visitor without the password of the Secret the chart made, and
with it a user starts a swarm on the chart's workers, sees requests counted and a live RPS in the charts, stops it
and opens the run's report (tests/browser.py, shared with the dataplane layer). These come first, on a master that has
run nothing yet (after a run, its page shows that run's figures, not the form), in one Chromium (a start took 1.1 s
on a busy 2-CPU host, 2026-12-06) that each test meets with no credentials sent, each with its own port-forward, gone
before the pipeline's tests assert that theirs are.

The release scrapes every 2 s, not the node layer's 5 s (examples/real-node/values.yaml): a verdict needs two scrapes
after the statistics' reset, and series.csv a rate two scrapes after a restarted Prometheus is back, so each run is
shorter by what the scrapes save. The rules' 20 s window holds ten scrapes (the chart asks for four), and the chart's
autoquit check is a judged run's (`mode: run`), not this interactive release's."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import psutil
import pytest
from browser import assert_refused_without_the_password, chromium, swarm_through_the_ui
from conftest import container_processes, install, master, port_forwards, wait_ready
from helpers import wait_for, wait_for_line
from interrupt import foreground_job, press_ctrl_c

from loadtest.runtime.cluster import pods
from loadtest.runtime.locustweb import LocustWeb
from loadtest.runtime.release import Release

RUN_FILES = {"result.json", "checks.xml", "summary.md", "report.html", "stats.json", "stats_stats.csv",
             "stats_failures.csv", "stats_exceptions.csv", "series.csv"}
SCRAPE_S = 2


@pytest.fixture(scope="module")
def release(cluster, module_namespace, helm) -> str:
    install(helm, module_namespace, "--set", "locust.worker.cpu=1000m",
            "--set", f"monitoring.prometheus.scrapeInterval={SCRAPE_S}s")
    wait_ready(cluster, module_namespace)
    return module_namespace


def loadtest_run(cluster, namespace: str, out, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("LOADTEST_LOCUST_AUTH", None)  # the credentials come from the release's Secret
    return subprocess.Popen([sys.executable, "-m", "loadtest", "run", "--release", "lt", "--namespace", namespace,
                             "--kubeconfig", str(cluster.kubeconfig), "--output", str(out), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=foreground_job)


@pytest.fixture
def web(cluster, release):
    chart_release = Release("lt", release, cluster.kubeconfig)
    with chart_release.port_forward("locust-master", "web") as url:
        web = LocustWeb(url, chart_release.web_credentials())
        web.wait_workers(1, 120)
        yield web


@pytest.fixture(scope="module")
def module_chromium(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium") / "profile") as driver:
        yield driver


@pytest.fixture
def browser(module_chromium):
    """The module's Chromium as a new visitor's: no credentials sent (a test before may have set them), and no network
    log left from before."""
    module_chromium.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})
    module_chromium.get_log("performance")
    return module_chromium


def test_the_charts_web_ui_refuses_a_visitor_without_the_password(web, browser, tmp_path):
    assert_refused_without_the_password(browser, web.url, tmp_path / "web-ui-refused.png")


def test_with_the_secrets_password_a_user_runs_a_swarm_on_the_charts_workers(web, browser, tmp_path):
    swarm_through_the_ui(browser, web, 5, "/1kb", tmp_path)


def test_a_judged_run_collects_locust_files_and_the_release_series(cluster, release, tmp_path):
    out = tmp_path / "run"
    # 12 s: five scrapes of 2 s after the statistics' reset (a second or two in), four at least.
    proc = loadtest_run(cluster, release, out, "--users", "10", "--run-time", "12s",
                        "--check", "fail_ratio<1%", "--check", "rps>=10")
    output, _ = proc.communicate(timeout=300)
    print(output)
    result = json.loads((out / "result.json").read_text())
    generator_bound = (result["verdict"] or {}).get("kind") == "generator-bound"
    assert proc.returncode == (3 if generator_bound else 0), output
    assert result["complete"] and result["verdict"], result
    assert {c["check"]: c["passed"] for c in result["checks"]} == {"fail_ratio<1%": True, "rps>=10": True}
    assert result["figures"]["Aggregated"]["requests"] > 100
    assert RUN_FILES <= {p.name for p in out.iterdir()}, sorted(p.name for p in out.iterdir())
    assert "<html" in (out / "report.html").read_text().lower()
    rows = list(csv.DictReader((out / "series.csv").open()))
    assert max(float(r["rps"] or 0) for r in rows) > 10, rows
    assert any(r["worker_cpu_max"] for r in rows)
    # The swarm was stopped, and the command's port-forwards are gone with it.
    assert master(cluster, release).status()["state"] == "stopped"
    assert port_forwards(cluster.kubeconfig) == []


def prometheus_process(cluster, namespace: str) -> psutil.Process | None:
    """The release's Prometheus server process on this machine (the real node), None while its container is down."""
    [pod] = pods(cluster, namespace, "app.kubernetes.io/component=prometheus")
    found = container_processes(pod["metadata"]["uid"], "--config.file")
    return found[0] if found else None


def test_a_judged_run_goes_on_through_prometheus_restarts_and_its_series_marks_the_gap(cluster, release, tmp_path):
    """Prometheus' process SIGKILLed twice once the swarm runs, as a crash-looping one: the kubelet starts its
    container again at once the first time, then after its 10 s back-off, on the same volume. The run completes with
    Locust's figures whole, and series.csv marks the steps Prometheus missed (scrape_gap_s) beside those it scraped
    after."""
    out = tmp_path / "run"
    # 44 s, killed as the swarm starts: the third start comes after the kubelet's 10 s back-off and its pod worker's
    # requeue (10-15 s, jittered), then the rate needs two scrapes of 2 s. At 40 s, 5 s scrapes and killed at the
    # first live line, a CI run's series had no rate for the last 30 s (2026-11-29): the run ended before the second
    # scrape. 50 s at 5 s scrapes held it; the two scrapes are 6 s shorter at 2 s.
    proc = loadtest_run(cluster, release, out, "--users", "10", "--run-time", "44s")
    wait_for_line(proc, "swarm started", 120)
    first = prometheus_process(cluster, release)
    first.kill()
    again = wait_for("Prometheus started again", lambda: prometheus_process(cluster, release), 30, every=0.5,
                     until=lambda p: p is not None and p.pid != first.pid)
    again.kill()
    output, _ = proc.communicate(timeout=300)
    print(output)
    [pod] = pods(cluster, release, "app.kubernetes.io/component=prometheus")
    assert pod["status"]["containerStatuses"][0]["restartCount"] >= 2, "Prometheus was not restarted twice"
    result = json.loads((out / "result.json").read_text())
    assert proc.returncode in (0, 3), output
    assert result["complete"] and result["figures"]["Aggregated"]["requests"] > 100, result
    rows = list(csv.DictReader((out / "series.csv").open()))
    print("\n".join(f"{r['time']} {r['phase']:8} rps {r['rps']:>9} gap {r['scrape_gap_s']}" for r in rows))
    gaps = [i for i, r in enumerate(rows) if r["scrape_gap_s"]]
    assert gaps, "the back-off's missed scrapes are not marked"
    assert all(not rows[i]["rps"] for i in gaps), "a gap's figures are Prometheus' carried-over ones"
    assert any(r["rps"] and float(r["rps"]) > 10 for r in rows[gaps[-1] + 1:]), "no figures after the restart"
    # The verdict is Prometheus': one that lost the window's start says so, not that it scrapes nothing.
    assert result["verdict"] or "it missed it (down or restarting) or lost it" in output, output
    print(f"Prometheus restarted twice mid-run: {len(gaps)} of {len(rows)} steps marked; verdict "
          f"{(result['verdict'] or {}).get('kind')}; {result['meaning']}")


def test_an_interrupted_run_stops_the_swarm_and_keeps_what_it_collected(cluster, release, tmp_path):
    out = tmp_path / "run"
    proc = loadtest_run(cluster, release, out, "--users", "10", "--run-time", "5m")
    wait_for_line(proc, "RPS", 120)  # the first live figures: the swarm runs
    press_ctrl_c(proc)  # the command and the port-forwards it started, as a terminal's Ctrl-C reaches them
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    result = json.loads((out / "result.json").read_text())
    assert not result["complete"] and result["incomplete"] == "interrupted"
    assert result["figures"]["Aggregated"]["requests"] > 0
    assert {"stats.json", "report.html", "stats_stats.csv"} <= {p.name for p in out.iterdir()}
    assert master(cluster, release).status()["state"] == "stopped"
    assert port_forwards(cluster.kubeconfig) == []


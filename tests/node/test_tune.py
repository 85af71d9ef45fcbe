"""The seed's experiment end to end with nothing typed by hand but `loadtest tune`: a release on the real node with a
thin worker (100m) offered several times what it can send; the rules' advice says give it a whole core; `loadtest
tune --apply --yes` reads the release, makes that change with helm, watches the next steady window and reports
before and after; the rate measured by the release's Prometheus is at least 3x what the thin worker sent and the
verdict is no longer generator-bound; `loadtest tune` again finds the generator no longer the limit and changes
nothing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

from conftest import Prometheus, install, wait_ready

from loadtest import tuning

# 200 users, each waiting 20 ms between requests: about 9,000 RPS offered, some 4x what a 100m worker sends and
# a third of what a whole core does, so the whole-core worker has headroom (the offered load, not its CPU, holds it).
LOAD = ("--set", "locust.mode=autostart", "--set", "locust.autostart.users=200",
        "--set", "locust.autostart.spawnRate=200", "--set", "locust.extraEnv[0].name=LOADTEST_WAIT",
        "--set-string", "locust.extraEnv[0].value=0.02", "--set", "locust.target=backend")
RELEASE = 'release="lt"'
TUNE_TIMEOUT_S = 600


def loadtest_tune(cluster, namespace: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("LOADTEST_LOCUST_AUTH", None)  # the credentials come from the release's Secret
    result = subprocess.run([sys.executable, "-m", "loadtest", "tune", "--release", "lt", "--namespace", namespace,
                             "--kubeconfig", str(cluster.kubeconfig), *args], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, env=env, timeout=TUNE_TIMEOUT_S)
    print(result.stdout, result.stderr)
    return result


def revision(helm, namespace: str) -> str:
    return helm("history", "lt", "-n", namespace, "--max", "1", "-o", "json")


def test_tune_gives_the_thin_worker_a_core_and_the_rate_follows(cluster, namespace, helm):
    install(helm, namespace, "--set", "locust.worker.cpu=100m", *LOAD)
    wait_ready(cluster, namespace)
    prometheus = Prometheus(cluster, namespace)
    # What a user watching Grafana sees first: the Overview's "Next step" (the rule tune agrees with).
    prometheus.wait(f'loadtest:advice{{{RELEASE}, advice="{tuning.WHOLE_CORE}"}}', lambda v: v == 1, timeout=300)
    time.sleep(tuning.WINDOW_S)  # tune judges a whole minute of every user running
    rate = f'sum(rate(locust_requests_total{{namespace="{namespace}"}}[1m]))'
    thin = prometheus.value(rate)

    applied = loadtest_tune(cluster, namespace, "--apply", "--yes")
    assert applied.returncode == 0, applied.stderr
    assert f"Diagnosis        {tuning.WHOLE_CORE}:" in applied.stdout
    assert "Change           locust.worker.cpu 100m -> 1000m, locust.worker.replicas 1 -> 1" in applied.stdout
    assert "helm upgrade lt" in applied.stdout and "--reuse-values" in applied.stdout
    table = applied.stdout.split("Before and after", 1)[1].splitlines()
    lines = {line.split()[0]: line.split()[1:] for line in table if line.startswith("  ") and line.split()}
    before_rps, after_rps = (float(x.replace(",", "")) for x in lines["RPS"])
    assert lines["verdict"][0] == "generator-bound" and lines["verdict"][1] != "generator-bound", lines
    assert after_rps >= 3 * before_rps, lines

    # The release's own Prometheus, apart from tune: the minute after is the whole-core worker's alone.
    whole = prometheus.value(rate)
    print(f"thin worker: {thin:,.0f} RPS; after tune: {whole:,.0f} RPS ({whole / thin:.1f}x); tune measured "
          f"{before_rps:,.0f} -> {after_rps:,.0f}")
    assert whole >= 3 * thin
    worker = cluster.kubectl("get", "deployment", "-n", namespace, "lt-locust-worker", "-o",
                             "jsonpath={.spec.template.spec.containers[0].resources.limits.cpu}")
    assert worker in ("1", "1000m")

    time.sleep(tuning.WINDOW_S)  # a whole window of the changed release
    history = revision(helm, namespace)
    again = loadtest_tune(cluster, namespace)
    assert again.returncode == 0, again.stderr
    assert any(f"Diagnosis        {d}:" in again.stdout for d in (tuning.SWEEP_TARGET, tuning.RAISE_USERS)), \
        again.stdout
    assert revision(helm, namespace) == history, "tune without --apply changed the release"

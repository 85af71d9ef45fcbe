"""The seed's experiment end to end on a real kubelet, beside a CPU hog, with nothing typed by hand but `loadtest
tune`: a release with a thin worker (100m) offered several times what it can send is throttled by CFS, the rules
call it generator-bound, LoadGeneratorSaturated fires and the advice says give it a whole core; `loadtest tune
--apply --yes` reads the release, makes that change with helm (the same master keeps the run), watches the next
steady window and reports before and after; the throttling ends, the rate measured by the release's Prometheus is at
least 3x what the thin worker sent and the verdict is no longer generator-bound (on a slow host, whose core sends
less than the offer, bound by the whole core's CPU instead); `loadtest tune` again finds the next step and changes
nothing.

What the physics guarantees on any 2-core machine, busy or not: the thin worker sends at most ~15 % of what a whole
core sends (its quota is a tenth of one), and the whole-core worker, whatever share of a core it gets beside the hog,
at least 3x the thin one. (One worker: a second at 1000m does not fit on this 2-CPU node beside the master, the
backend and the monitoring; adding a replica during a run is test_live_changes' rebalancing test.) The releases'
windows are the node layer's short ones (examples/real-node/values.yaml): every wait below is for a condition.
"""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import WINDOW, WINDOW_S, Prometheus, install, wait_ready

from loadtest.judging import tuning

# 400 users, each waiting 20 ms between requests: some 16,000 RPS offered once the responses' few ms are added. A
# 100m worker sends at most a tenth of what a whole core does (LeanHttpUser: some 3,300 of 34,000), so the offer is
# near 5x the thin worker's rate and under half a whole core's on a fast host: the whole-core worker has headroom
# even beside the hog (the offered load, not its CPU, holds it). At 200 users (9,000 offered) the after side was
# capped under 3x a 3,200 RPS thin worker; at 300, 2,900 -> 11,000 (3.8x).
LOAD = ("--set", "locust.mode=autostart", "--set", "locust.autostart.users=400",
        "--set", "locust.autostart.spawnRate=400", "--set", "locust.extraEnv[0].name=LOADTEST_WAIT",
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


def test_a_thin_worker_plateaus_throttled_and_tune_gives_it_a_core_beside_a_cpu_hog(cluster, namespace, helm,
                                                                                     cpu_hog):
    install(helm, namespace, "--set", "locust.worker.cpu=100m", *LOAD)
    wait_ready(cluster, namespace)
    prometheus = Prometheus(cluster, namespace)
    throttled = f"loadtest:worker_cpu_throttling:ratio{{{RELEASE}}}"
    prometheus.wait(throttled, lambda v: v is not None and v > 0.5, timeout=180)
    prometheus.wait(f'loadtest:verdict{{{RELEASE},verdict="generator-bound"}}', lambda v: v == 1, timeout=120)
    # What a user watching Grafana sees: the Overview's "Next step" (the rule tune agrees with), and the alert:
    # saturated in most of two windows' steady samples, for two windows. Once it fires, every user has run for
    # more than the window tune judges.
    prometheus.wait(f'loadtest:advice{{{RELEASE}, advice="{tuning.WHOLE_CORE}"}}', lambda v: v == 1, timeout=180)
    prometheus.wait(f'ALERTS{{alertname="LoadGeneratorSaturated",alertstate="firing",{RELEASE}}}',
                    lambda v: v == 1, timeout=240)
    rate = f'sum(rate(locust_requests_total{{namespace="{namespace}"}}{WINDOW}))'
    # cAdvisor's reading of the worker container's CPU, in cores, over two windows: its readings come at its
    # housekeeping interval (the node's 5 s, or more when the kubelet is busy), and an instant query of one window
    # could find few alone (the replaced thin pod's lower one loses to the whole-core pod's in max()).
    cores = (f'max(rate(container_cpu_usage_seconds_total{{namespace="{namespace}", container="worker"}}'
             f'[{2 * WINDOW_S}s]))')
    thin = prometheus.wait(rate, lambda v: v is not None and v > 0)
    thin_cores = prometheus.wait(cores, lambda v: v is not None and v > 0, timeout=60)

    applied = loadtest_tune(cluster, namespace, "--apply", "--yes")
    assert applied.returncode == 0, applied.stderr
    assert f"Diagnosis        {tuning.WHOLE_CORE}:" in applied.stdout
    assert "Change           locust.worker.cpu 100m -> 1000m, locust.worker.replicas 1 -> 1" in applied.stdout
    assert "helm upgrade lt" in applied.stdout and "--reuse-values" in applied.stdout
    table = applied.stdout.split("Before and after", 1)[1].splitlines()
    lines = {line.split()[0]: line.split()[1:] for line in table if line.startswith("  ") and line.split()}
    before_rps, after_rps = (float(x.replace(",", "")) for x in lines["RPS"])
    assert lines["verdict"][0] == "generator-bound", lines
    assert after_rps >= 3 * before_rps, lines
    # The offer fits in a whole core of a fast host; a slow one's core (11,700 RPS beside the hog on 2026-11-26)
    # sends less than it, and there the whole-core worker is the limit again, by its CPU, not by its quota.
    core_is_the_limit = lines["verdict"][1] == "generator-bound"

    # The release's own Prometheus, apart from tune, which waited two windows after the rollout: the rules'
    # window and this one hold the whole-core worker alone. A whole core for one single-threaded worker: CFS no
    # longer cuts it off.
    prometheus.wait(throttled, lambda v: v is not None and v < 0.2, timeout=120)
    whole = prometheus.wait(rate, lambda v: v is not None)
    whole_cores = prometheus.wait(cores, lambda v: v is not None and v > 0, timeout=60)
    per_core = whole / whole_cores
    print(f"worker at 100m: {thin:,.0f} RPS on {thin_cores:.2f} core(s); after tune, at 1000m: {whole:,.0f} RPS on "
          f"{whole_cores:.2f} core(s), {whole / thin:.1f}x; the thin worker sent {thin / per_core:.0%} of what a "
          f"whole core sends ({per_core:,.0f} RPS); tune measured {before_rps:,.0f} -> {after_rps:,.0f}")
    assert whole >= 3 * thin
    assert thin <= 0.15 * per_core
    assert not core_is_the_limit or whole_cores >= 0.75, "generator-bound after tune, with CPU to spare"
    worker = cluster.kubectl("get", "deployment", "-n", namespace, "lt-locust-worker", "-o",
                             "jsonpath={.spec.template.spec.containers[0].resources.limits.cpu}")
    assert worker in ("1", "1000m")

    # A whole window of the changed release: the rules' advice has left the thin worker behind.
    next_steps = (tuning.MORE_GENERATOR,) if core_is_the_limit else (tuning.SWEEP_TARGET, tuning.RAISE_USERS)
    prometheus.wait(f'loadtest:advice{{{RELEASE}, advice=~"{"|".join(next_steps)}"}}', lambda v: v == 1, timeout=120)
    history = revision(helm, namespace)
    again = loadtest_tune(cluster, namespace)
    assert again.returncode == 0, again.stderr
    assert any(f"Diagnosis        {d}:" in again.stdout for d in next_steps), again.stdout
    assert revision(helm, namespace) == history, "tune without --apply changed the release"

"""The used-by line for real: `helm install` of the local values on a real node, every container started by the
kubelet from the images built here, ready by its own probes; `helm test`; then worker CPU tuned with `helm upgrade`."""
from __future__ import annotations

import time

from conftest import Prometheus, install, wait_ready

from loadtest import paths

HAPROXY = ("--set", "haproxy.enabled=true", "--set", "locust.target=haproxy")


def test_install_starts_every_container_and_helm_test_passes(cluster, namespace, helm):
    install(helm, namespace, *HAPROXY)
    seconds = wait_ready(cluster, namespace)
    print(f"install -> all containers ready: {seconds:.0f} s")
    out = helm("test", "lt", "-n", namespace, "--timeout", "180s")
    # The test pods ran for real and passed: the master's web UI counted every worker and the target answered
    # (lt-test-locust), the backend served its 1 KB payload (lt-test-backend); each exits non-zero otherwise.
    assert out.count("Phase:          Succeeded") == 2, out


# The users' offered load in the experiment: 200 users without think time ask for far more than one core can send,
# so the worker sends what its CPU allows, and the test compares what each CPU gives rather than a ratio its own
# offered load would cap (a worker at 100m already sends some 1,500 RPS of keepalive_1kb here).
OFFERED = ("--set", "locust.autostart.users=200", "--set", "locust.autostart.spawnRate=200",
           "--set", "locust.extraEnv[0].name=LOADTEST_WAIT", "--set-string", "locust.extraEnv[0].value=0")


def test_thin_workers_plateau_throttled_and_a_whole_core_lifts_the_rate(cluster, namespace, helm, cpu_hog):
    """The seed's experiment in miniature, on a real kubelet, with a CPU hog beside the node: a worker at 100m is
    throttled by CFS, the rules call the run generator-bound and, every user running, LoadGeneratorSaturated fires;
    `helm upgrade --reuse-values` to 1000m ends the throttling and lifts the request rate several times over. What
    the physics guarantees on any 2-core machine, busy or not: the thin worker sends at most ~15 % of what a whole
    core sends (its quota is a tenth of one), and the whole-core worker, whatever share of a core it gets beside the
    hog, at least 3x the thin one. (One worker: a second at 1000m does not fit on this 2-CPU node beside the master,
    the backend and the monitoring; adding a replica during a run is test_live_changes' rebalancing test.)"""
    install(helm, namespace, "--set", "locust.worker.cpu=100m", "--set", "locust.mode=autostart", *OFFERED)
    wait_ready(cluster, namespace)
    prometheus = Prometheus(cluster, namespace)
    release = 'release="lt"'
    throttled = f'loadtest:worker_cpu_throttling:ratio{{{release}}}'
    prometheus.wait(throttled, lambda v: v is not None and v > 0.5, timeout=180)
    prometheus.wait(f'loadtest:verdict{{{release},verdict="generator-bound"}}', lambda v: v == 1, timeout=120)
    # The alert: saturated in most of 2 minutes' steady samples, for 2 minutes.
    prometheus.wait(f'ALERTS{{alertname="LoadGeneratorSaturated",alertstate="firing",{release}}}',
                    lambda v: v == 1, timeout=300)
    rate = f'sum(rate(locust_requests_total{{namespace="{namespace}"}}[1m]))'
    # cAdvisor's reading of the worker container's CPU, in cores (a replaced pod's lower one ages out).
    cores = f'max(rate(container_cpu_usage_seconds_total{{namespace="{namespace}", container="worker"}}[1m]))'
    thin = prometheus.wait(rate, lambda v: v is not None and v > 0)
    thin_cores = prometheus.value(cores)

    helm("upgrade", "lt", str(paths.CHART), "-n", namespace, "--reuse-values",
         "--set", "locust.worker.cpu=1000m")
    # The same master keeps the run: the new worker is ready once it joined, only then the old one leaves.
    wait_ready(cluster, namespace)
    # A whole core for one single-threaded worker: CFS no longer cuts it off.
    prometheus.wait(throttled, lambda v: v is not None and v < 0.2, timeout=180)
    prometheus.wait(rate, lambda v: v is not None and v >= 3 * thin, timeout=240)
    time.sleep(60)  # from here the rate's minute holds the whole-core worker alone
    whole, whole_cores = prometheus.value(rate), prometheus.value(cores)
    per_core = whole / whole_cores
    print(f"worker at 100m: {thin:.0f} RPS on {thin_cores:.2f} core(s); at 1000m: {whole:.0f} RPS on "
          f"{whole_cores:.2f} core(s), {whole / thin:.1f}x; the thin worker sent {thin / per_core:.0%} of what a "
          f"whole core sends ({per_core:.0f} RPS)")
    assert whole >= 3 * thin
    assert thin <= 0.15 * per_core

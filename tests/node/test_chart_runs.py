"""The used-by line for real: `helm install` of the local values on a real node, every container started by the
kubelet from the images built here, ready by its own probes; `helm test`; then worker CPU tuned with `helm upgrade`."""
from __future__ import annotations

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


# The users' offered load in the experiment: 200 users, each waiting 40 ms between requests, ask for at most
# 5,000 RPS. A worker at 100m serves about 1,000 of them (it is the limit); a worker with a whole core serves them
# all at about half its ceiling (cAdvisor: some 9,000 RPS of keepalive_1kb per core here), so neither side is then
# saturated and the verdict is the load asked for.
OFFERED = ("--set", "locust.autostart.users=200", "--set", "locust.autostart.spawnRate=200",
           "--set", "locust.extraEnv[0].name=LOADTEST_WAIT", "--set-string", "locust.extraEnv[0].value=0.04")


def test_thin_workers_plateau_throttled_and_a_whole_core_lifts_the_rate(cluster, namespace, helm):
    """The seed's experiment in miniature, on a real kubelet: a worker at 100m is throttled by CFS, the rules call
    the run generator-bound and, every user running, LoadGeneratorSaturated fires; `helm upgrade --reuse-values` to
    1000m lifts the request rate several times over, the throttling ends and the verdict turns healthy. (One worker:
    a second at 1000m does not fit on this 2-CPU node beside the master, the backend and the monitoring; adding a
    replica during a run is test_live_changes' rebalancing test.)"""
    install(helm, namespace, "--set", "locust.worker.cpu=100m", "--set", "locust.mode=autostart", *OFFERED)
    wait_ready(cluster, namespace)
    prometheus = Prometheus(cluster, namespace)
    release = 'release="lt"'
    throttled = f'loadtest:worker_cpu_throttling:ratio{{{release}}}'
    prometheus.wait(throttled, lambda v: v is not None and v > 0.5, timeout=180)
    prometheus.wait(f'loadtest:verdict{{{release},verdict="generator-bound"}}', lambda v: v == 1, timeout=120)
    # The alert holds for 2 min.
    prometheus.wait(f'ALERTS{{alertname="LoadGeneratorSaturated",alertstate="firing",{release}}}',
                    lambda v: v == 1, timeout=240)
    rate = f'sum(rate(locust_requests_total{{namespace="{namespace}"}}[1m]))'
    thin = prometheus.wait(rate, lambda v: v is not None and v > 0)

    helm("upgrade", "lt", str(paths.CHART), "-n", namespace, "--reuse-values",
         "--set", "locust.worker.cpu=1000m")
    # The same master keeps the run: the new worker is ready once it joined, only then the old one leaves.
    wait_ready(cluster, namespace)
    prometheus.wait(rate, lambda v: v is not None and v > 3 * thin, timeout=240)
    # A whole core for one single-threaded worker: CFS no longer cuts it off and its CPU stays below the saturation
    # threshold (the backend, the target here, has no exporter, so the generator alone decides): the RPS is the
    # users' offered load, nobody's ceiling.
    prometheus.wait(throttled, lambda v: v is not None and v < 0.2, timeout=180)
    prometheus.wait(f'loadtest:verdict{{{release},verdict="healthy"}}', lambda v: v == 1, timeout=180)
    assert prometheus.value(f'loadtest:verdict{{{release},verdict="generator-bound"}}') is None
    assert prometheus.value(f'ALERTS{{alertname="LoadGeneratorSaturated",alertstate="firing",{release}}}') is None
    whole = prometheus.value(rate)
    print(f"worker at 100m: {thin:.0f} RPS, at 1000m: {whole:.0f} RPS ({whole / thin:.1f}x)")

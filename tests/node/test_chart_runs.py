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


def test_thin_workers_plateau_throttled_and_a_whole_core_lifts_the_rate(cluster, namespace, helm):
    """The seed's experiment in miniature, on a real kubelet: a worker at 100m is throttled by CFS and the rules call
    the run generator-bound; `helm upgrade --reuse-values` to 1000m lifts the request rate many times over and the
    throttling ends. (One worker: a second at 1000m does not fit on this 2-CPU node. The LoadGeneratorSaturated
    alert needs 2 min of plateau and 2 min more pending, too long for this layer; its rules have promtool tests.)"""
    install(helm, namespace, "--set", "locust.worker.cpu=100m", "--set", "locust.mode=autostart",
            "--set", "locust.autostart.users=20", "--set", "locust.autostart.spawnRate=20")
    wait_ready(cluster, namespace)
    prometheus = Prometheus(cluster, namespace)
    release = 'release="lt"'
    throttled = f'loadtest:worker_cpu_throttling:ratio{{{release}}}'
    prometheus.wait(throttled, lambda v: v is not None and v > 0.5, timeout=180)
    prometheus.wait(f'loadtest:verdict{{{release},verdict="generator-bound"}}', lambda v: v == 1, timeout=120)
    rate = f'sum(rate(locust_requests_total{{namespace="{namespace}"}}[1m]))'
    thin = prometheus.wait(rate, lambda v: v is not None and v > 0)

    helm("upgrade", "lt", str(paths.CHART), "-n", namespace, "--reuse-values",
         "--set", "locust.worker.cpu=1000m")
    wait_ready(cluster, namespace)
    prometheus = Prometheus(cluster, namespace)  # a new master restarts the swarm; Prometheus stays
    # max: the replaced worker's series stays (stale) for a while beside the new one's.
    prometheus.wait(f'max(rate(container_cpu_usage_seconds_total{{namespace="{namespace}",container="worker"}}[1m]))',
                    lambda v: v is not None and v > 0.3, timeout=180)
    whole = prometheus.wait(rate, lambda v: v is not None and v > 4 * thin, timeout=180)
    print(f"worker at 100m: {thin:.0f} RPS, at 1000m: {whole:.0f} RPS ({whole / thin:.1f}x)")
    # A whole core for one single-threaded worker: CFS no longer cuts it off. (Whether the verdict then reads
    # healthy, target-bound or still generator-bound depends on who saturates first on this shared 2-CPU node.)
    prometheus.wait(throttled, lambda v: v is not None and v < 0.2, timeout=180)

"""Bad values fail `helm template` (so `helm install`/`upgrade` too) with a message naming the field;
edge values that are fine render."""
from __future__ import annotations

import pytest

# id: (helm arguments, chart whose schema reports it, field named in the message)
BAD = {
    "replicas-not-integer": (["--set", "locust.worker.replicas=six"], "locust", "worker.replicas"),
    "replicas-negative": (["--set", "locust.worker.replicas=-1"], "locust", "worker.replicas"),
    "locust-enabled-not-boolean": (["--set", "locust.enabled=yes"], "loadtest", "locust.enabled"),
    "backend-enabled-not-boolean": (["--set", "backend.enabled=yes"], "loadtest", "backend.enabled"),
    "worker-cpu-50m": (["--set-string", "locust.worker.cpu=50m"], "locust", "worker.cpu"),
    "worker-cpu-0.05": (["--set-string", "locust.worker.cpu=0.05"], "locust", "worker.cpu"),
    "worker-cpu-zero": (["--set", "locust.worker.cpu=0"], "locust", "worker.cpu"),
    "worker-cpu-words": (["--set", "locust.worker.cpu=one core"], "locust", "worker.cpu"),
    # Issue #26: accepted silently before.
    "worker-cpu-1000-cores": (["--set", "locust.worker.cpu=1000"], "locust", "worker.cpu"),
    "worker-cpu-2500m": (["--set-string", "locust.worker.cpu=2500m"], "locust", "worker.cpu"),
    "run-time-zero": (["--set", "locust.autostart.runTime=0s"], "locust", "autostart.runTime"),
    "scrape-interval-zero": (["--set", "monitoring.enabled=true", "--set", "monitoring.prometheus.scrapeInterval=0s"],
                             "monitoring", "prometheus.scrapeInterval"),
    "scrape-interval-past-the-rules-window": (["--set", "monitoring.enabled=true",
                                               "--set", "monitoring.prometheus.scrapeInterval=1m30s"],
                                              "monitoring", "prometheus.scrapeInterval"),
    "worker-memory-lots": (["--set", "locust.worker.memory=lots"], "locust", "worker.memory"),
    "node-type-unknown": (["--set", "locust.nodeType=c5.mega"], "locust", "nodeType"),
    "backend-node-type-unknown": (["--set", "backend.nodeType=t2.micro"], "backend", "nodeType"),
    "scenario-unknown": (["--set", "locust.scenario=keepalive_10mb"], "locust", "scenario"),
    "mode-unknown": (["--set", "locust.mode=headless"], "locust", "mode"),
    "locust-unknown-key": (["--set", "locust.workers=3"], "locust", "Additional property workers"),
    "worker-unknown-key": (["--set", "locust.worker.cpus=2"], "locust", "Additional property cpus"),
    "umbrella-unknown-key": (["--set", "locst.enabled=true"], "loadtest", "Additional property locst"),
    "web-port-70000": (["--set", "locust.master.service.webPort=70000"], "locust", "master.service.webPort"),
    "service-type-unknown": (["--set", "locust.master.service.type=Ingress"], "locust", "master.service.type"),
    "master-cpu-lots": (["--set", "locust.master.resources.limits.cpu=lots"], "locust", "master.resources.limits.cpu"),
    "tolerations-not-a-list": (["--set", "locust.worker.tolerations=none"], "locust", "worker.tolerations"),
    "image-tag-empty": (["--set", "locust.image.tag="], "locust", "image.tag"),
    "image-digest-bad": (["--set", "locust.image.digest=abc"], "locust", "image.digest"),
    "web-auth-enabled-not-boolean": (["--set", "locust.webAuth.enabled=yes"], "locust", "webAuth.enabled"),
    "web-auth-plain-password": (["--set", "locust.webAuth.password=hunter2"], "locust", "Additional property password"),
    "web-auth-secret-name-bad": (["--set", "locust.webAuth.existingSecret=My_Secret"], "locust", "webAuth.existingSecret"),
    "spawn-rate-zero": (["--set", "locust.autostart.spawnRate=0"], "locust", "autostart.spawnRate"),
    "users-zero": (["--set", "locust.autostart.users=0"], "locust", "autostart.users"),
    "run-time-words": (["--set", "locust.autostart.runTime=ten minutes"], "locust", "autostart.runTime"),
    "arrival-rate-negative": (["--set", "locust.load.arrivalRate=-1"], "locust", "load.arrivalRate"),
    "arrival-rate-negative-fraction": (["--set", "locust.load.arrivalRate=-0.5"], "locust", "load.arrivalRate"),
    "arrival-rate-words": (["--set", "locust.load.arrivalRate=fast"], "locust", "load.arrivalRate"),
    "host-not-a-url": (["--set", "locust.host=lt-backend:80"], "locust", "host"),
    "host-bad-scheme": (["--set", "locust.host=ftp://example.com"], "locust", "host"),
    "backend-replicas-negative": (["--set", "backend.replicas=-1"], "backend", "replicas"),
    "backend-port-70000": (["--set", "backend.port=70000"], "backend", "port"),
    "backend-port-zero": (["--set", "backend.port=0"], "backend", "port"),
    "backend-bind-address-no-colon": (["--set", "backend.bindAddress=127.0.0.1"], "backend", "bindAddress"),
    "backend-worker-processes-zero": (["--set", "backend.workerProcesses=0"], "backend", "workerProcesses"),
    "backend-worker-processes-auto": (["--set", "backend.workerProcesses=auto"], "backend", "workerProcesses"),
    "backend-keepalive-requests-negative": (["--set", "backend.keepaliveRequests=-5"], "backend", "keepaliveRequests"),
    "backend-keepalive-timeout-words": (["--set", "backend.keepaliveTimeout=forever"], "backend", "keepaliveTimeout"),
    "backend-memory-lots": (["--set", "backend.resources.requests.memory=lots"], "backend",
                            "resources.requests.memory"),
    # Who may start a load: a UI outside the cluster needs its password.
    "source-range-not-a-cidr": (["--set", "locust.master.service.type=LoadBalancer",
                                 "--set", "locust.master.service.loadBalancerSourceRanges={office}"],
                                "locust", "master.service.loadBalancerSourceRanges.0"),
    "service-annotation-not-a-string": (["--set", "locust.master.service.annotations.a=1"], "locust",
                                        "master.service.annotations.a"),
    "network-policy-not-boolean": (["--set", "networkPolicy.enabled=yes"], "loadtest", "networkPolicy.enabled"),
    "network-policy-peer-unknown-key": (["--set", "networkPolicy.metricsFrom[0].pods=all"], "loadtest",
                                        "Additional property pods"),
    # Issue #29: the schedule and the results store.
    "schedule-cron-four-fields": (["--set", "locust.schedule.cron=0 2 * *"], "locust", "schedule.cron"),
    "schedule-cron-six-fields": (["--set", "locust.schedule.cron=0 0 2 * * *"], "locust", "schedule.cron"),
    "schedule-cron-time-zone-inside": (["--set", "locust.schedule.cron=TZ=UTC 0 2 * * *"], "locust", "schedule.cron"),
    "schedule-cron-unknown-macro": (["--set", "locust.schedule.cron=@fortnightly"], "locust", "schedule.cron"),
    "schedule-time-zone-words": (["--set", "locust.schedule.timeZone=Paris time"], "locust", "schedule.timeZone"),
    "schedule-history-zero": (["--set", "locust.schedule.historyLimit=0"], "locust", "schedule.historyLimit"),
    "schedule-deadline-below-10s": (["--set", "locust.schedule.startingDeadlineSeconds=5"], "locust",
                                    "schedule.startingDeadlineSeconds"),
    "results-store-unknown": (["--set", "locust.results.store=disk"], "locust", "results.store"),
    "results-size-lots": (["--set", "locust.results.pvc.size=lots"], "locust", "results.pvc.size"),
    "results-claim-name-bad": (["--set", "locust.results.pvc.existingClaim=My_Claim"], "locust",
                               "results.pvc.existingClaim"),
    "results-endpoint-no-scheme": (["--set", "locust.results.s3.endpoint=minio:9000"], "locust", "results.s3.endpoint"),
    "results-endpoint-with-path": (["--set", "locust.results.s3.endpoint=https://s3.example.com/runs"], "locust",
                                   "results.s3.endpoint"),
    "results-bucket-upper-case": (["--set", "locust.results.s3.bucket=Load_Runs"], "locust", "results.s3.bucket"),
    "results-prefix-leading-slash": (["--set", "locust.results.s3.prefix=/runs"], "locust", "results.s3.prefix"),
    # Issue #37: one master's measured ceiling (benchmarks/master.py).
    "more-workers-than-one-master-takes": (["--set", "locust.worker.replicas=5001"], "locust", "worker.replicas"),
    "results-inline-credentials": (["--set", "locust.results.s3.accessKey=AKIA"], "locust",
                                   "Additional property accessKey"),
}

GOOD = {
    "worker-cpu-100m": ["--set-string", "locust.worker.cpu=100m"],
    "worker-cpu-0.1": ["--set-string", "locust.worker.cpu=0.1"],
    "worker-cpu-1500m": ["--set-string", "locust.worker.cpu=1500m"],
    "worker-cpu-integer": ["--set", "locust.worker.cpu=2"],
    "worker-cpu-2000m": ["--set-string", "locust.worker.cpu=2000m"],
    "run-time-with-a-zero-part": ["--set", "locust.mode=autostart", "--set", "locust.autostart.runTime=1h0m"],
    "scrape-interval-30s": ["--set", "monitoring.enabled=true", "--set", "monitoring.prometheus.scrapeInterval=30s"],
    "worker-memory-1Gi": ["--set", "locust.worker.memory=1Gi"],
    "no-workers": ["--set", "locust.worker.replicas=0"],
    "many-users": ["--set", "locust.mode=autostart", "--set", "locust.autostart.users=2000000",
                   "--set", "locust.autostart.runTime=1h30m"],
    "fractional-spawn-rate": ["--set", "locust.mode=autostart", "--set", "locust.autostart.spawnRate=0.5"],
    "fractional-arrival-rate": ["--set", "locust.mode=autostart", "--set", "locust.load.arrivalRate=0.5"],
    "https-host-with-port-and-path": ["--set", "locust.host=https://ingress.example.com:8443/app"],
    "external-target": ["--set", "backend.enabled=false", "--set", "locust.host=http://198.18.0.1"],
    "nothing-but-the-backend": ["--set", "locust.enabled=false"],
    "local-bind-address": ["--set", "backend.bindAddress=127.0.0.1:"],
    "tolerations": ["--set", "locust.worker.tolerations[0].key=dedicated",
                    "--set", "locust.worker.tolerations[0].operator=Exists"],
    "internal-load-balancer-with-auth": [
        "--set", "locust.master.service.type=LoadBalancer",
        "--set", "locust.master.service.loadBalancerSourceRanges={198.18.0.0/15}",
        "--set", r"locust.master.service.annotations.service\.beta\.kubernetes\.io/aws-load-balancer-scheme=internal"],
    "web-auth-off-behind-port-forward": ["--set", "locust.webAuth.enabled=false"],
    "no-network-policies": ["--set", "networkPolicy.enabled=false"],
    "schedule-hourly": ["--set", "locust.mode=run", "--set", "locust.autostart.runTime=5m",
                        "--set", "locust.schedule.cron=@hourly"],
    "schedule-working-hours-in-a-time-zone": ["--set", "locust.mode=run", "--set", "locust.autostart.runTime=5m",
                                              "--set", "locust.schedule.cron=*/15 9-17 * * MON-FRI",
                                              "--set", "locust.schedule.timeZone=America/Argentina/Buenos_Aires"],
    "results-in-a-bucket": ["--set", "locust.mode=run", "--set", "locust.autostart.runTime=5m",
                            "--set", "locust.results.store=s3",
                            "--set", "locust.results.s3.endpoint=https://s3.eu-west-1.amazonaws.com",
                            "--set", "locust.results.s3.bucket=load.runs-2025",
                            "--set", "locust.results.s3.prefix=team/nightly",
                            "--set", "locust.results.s3.existingSecret=runs-bucket"],
    # Issue #40: the edges of each class render.
    "ipv6-bind-address": ["--set-string", "backend.bindAddress=[::1]:"],
    "memory-fraction-of-a-unit": ["--set", "locust.worker.memory=1.5Gi"],
    "plain-scenario-on-an-http-host": ["--set", "locust.scenario=http_close", "--set", "locust.host=http://198.18.0.1"],
    "backend-two-workers-on-two-cores": ["--set", "backend.workerProcesses=2",
                                         "--set", "backend.resources.limits.cpu=2",
                                         "--set", "backend.resources.requests.cpu=2"],
    "haproxy-upstream-elsewhere-backend-without-pods": [
        "--set", "haproxy.enabled=true", "--set", "locust.target=haproxy", "--set", "backend.replicas=0",
        "--set", "haproxy.upstream.http=payload.example.com:8080"],
    "haproxy-pinned-on-its-node": ["--set", "haproxy.enabled=true", "--set", "haproxy.nodeType=c5.xlarge",
                                   "--set", "haproxy.threads=2", "--set-string", "haproxy.cpuSet=2 3"],
    "metrics-from-an-ip-block": ["--set-json", 'networkPolicy.metricsFrom=[{"ipBlock": {"cidr": "10.0.0.0/8", '
                                 '"except": ["10.1.0.0/16"]}}, '
                                 '{"namespaceSelector": {"matchLabels": {"team": "obs"}}}]'],
    "worker-node-selector-and-toleration": ["--set", "locust.worker.nodeSelector.role=load",
                                            "--set", "locust.worker.tolerations[0].key=dedicated",
                                            "--set", "locust.worker.tolerations[0].value=load-test"],
}


def test_at_least_15_bad_cases():
    assert len(BAD) >= 15


@pytest.mark.parametrize("case", BAD)
def test_bad_value_fails_naming_the_field(helm, case):
    args, chart, field = BAD[case]
    result = helm.template(*args)
    assert result.returncode != 0, f"{args} rendered:\n{result.stdout[:2000]}"
    assert f"\n{chart}:\n" in result.stderr, result.stderr
    assert field in result.stderr, result.stderr


@pytest.mark.parametrize("case", GOOD)
def test_good_value_renders(helm, case):
    result = helm.template(*GOOD[case])
    assert result.returncode == 0, result.stderr


def test_large_numbers_render_as_integers(helm):
    rendered = helm.render(None, *GOOD["many-users"], "--set", "backend.keepaliveRequests=1000000")
    (master,) = [d for d in rendered.of_kind("Deployment") if d["metadata"]["name"] == "lt-locust-master"]
    assert "--users=2000000" in master["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "keepalive_requests 1000000;" in rendered.get("ConfigMap", "lt-backend")["data"]["nginx.conf"]

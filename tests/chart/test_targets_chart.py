"""The targets in the chart: NGINX Ingress Controller and HAProxy subcharts, the backend's HTTPS listener, and how
Locust is pointed at them. Every variant renders valid objects; the configs they carry load in the machine's nginx
and HAProxy; the controller's ConfigMap and the nginx.conf the local mode runs in its place say the same."""
from __future__ import annotations

import base64
import re
import subprocess
from pathlib import Path

import pytest

RELEASE_NS = "loadtest"  # conftest.NAMESPACE
SECRET_NS = f"{RELEASE_NS}-lt-nginx-tls"  # the namespace the chart makes for the controller's TLS Secret
NGINX, HAPROXY, BACKEND = "lt-nginx-ingress", "lt-haproxy", "lt-backend"
MASTER, WORKER = "lt-locust-master", "lt-locust-worker"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
NGINX_ON = ("--set", "nginx.enabled=true")
HAPROXY_ON = ("--set", "haproxy.enabled=true")
BACKEND_TLS = ("--set", "backend.tls.enabled=true")

VARIANTS = {
    "backend-tls": (*BACKEND_TLS, "--set", "locust.scenario=tls_handshake"),
    "nginx": (*NGINX_ON, "--set", "locust.target=nginx"),
    "nginx-seed-tls": (*NGINX_ON, "--set", "locust.target=nginx", "--set", "locust.scenario=tls_handshake",
                       "--set", "nginx.tls.protocols=TLSv1.2", "--set", "nginx.tls.ciphers=ECDHE-RSA-AES256-GCM-SHA384",
                       "--set", "nginx.tls.dynamicReload=false", "--set", "nginx.workerProcesses=4"),
    "nginx-routes-own-secret": (*NGINX_ON, "--set", "nginx.routes=5", "--set", "nginx.tls.existingSecret=my-cert",
                                "--set", "nginx.tls.secretNamespace=nginx-tls", "--set", "nginx.hostname=apps.example.com",
                                "--set", "nginx.accessLog=true"),
    "haproxy-none": (*HAPROXY_ON, "--set", "locust.target=haproxy"),
    "haproxy-edge": (*HAPROXY_ON, "--set", "haproxy.tls.mode=edge", "--set", "locust.target=haproxy",
                     "--set", "locust.scenario=tls_handshake"),
    "haproxy-passthrough": (*HAPROXY_ON, *BACKEND_TLS, "--set", "haproxy.tls.mode=passthrough"),
    "haproxy-reencrypt": (*HAPROXY_ON, *BACKEND_TLS, "--set", "haproxy.tls.mode=reencrypt"),
    "haproxy-openshift": (*HAPROXY_ON, "--set", "haproxy.routes=100", "--set", "haproxy.threads=4",
                          "--set", "haproxy.cpuSet=0-3", "--set", "haproxy.keepAlive=false",
                          "--set", "locust.target=haproxy", "--set", "locust.routes=100"),
    "both-on-node-types": (*NGINX_ON, *HAPROXY_ON, "--set", "nginx.nodeType=c5.2xlarge",
                           "--set", "haproxy.nodeType=c5.2xlarge", "--set", "locust.nodeType=c5.xlarge"),
}


def assert_kubeconform_valid(kubeconform_bin: str, schema_location: str, rendered, tmp_path: Path) -> None:
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(rendered.text)
    result = subprocess.run([kubeconform_bin, "-strict", "-summary", "-kubernetes-version", "1.33.0",
                             "-schema-location", schema_location, str(manifest)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = re.search(r"(\d+) resources? found.*Valid: (\d+), Invalid: 0, Errors: 0, Skipped: 0", result.stdout)
    assert summary and int(summary.group(1)) == int(summary.group(2)) == len(rendered.docs), result.stdout


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_renders_valid_objects(helm, kubeconform, schema_location, variant, tmp_path):
    assert_kubeconform_valid(kubeconform, schema_location, helm.render(None, *VARIANTS[variant]), tmp_path)


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_lints_strict(helm, variant):
    result = helm.run("lint", "--strict", "charts/loadtest", *VARIANTS[variant])
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "[WARNING]" not in output and "[ERROR]" not in output, output


def assert_pss_restricted(where: str, spec: dict) -> None:
    """Pod Security Standard "restricted" (its checks, not the project's extra rules: a controller needs its token)."""
    pod = spec.get("securityContext", {})
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(host), f"{where}: {host}"
    for volume in spec.get("volumes", []):
        assert set(volume) - {"name"} <= {"configMap", "emptyDir", "secret", "projected"}, f"{where}: {volume}"
    for container in spec.get("initContainers", []) + spec["containers"]:
        name = f"{where} container {container['name']}"
        sc = container.get("securityContext", {})
        assert sc.get("runAsNonRoot", pod.get("runAsNonRoot")) is True, name
        assert sc.get("runAsUser", pod.get("runAsUser")) not in (0, None), name
        assert sc.get("allowPrivilegeEscalation") is False, name
        assert not sc.get("privileged"), name
        assert sc.get("capabilities", {}).get("drop") == ["ALL"], name
        assert not sc.get("capabilities", {}).get("add"), name
        assert (sc.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type") == "RuntimeDefault", name
        assert "hostPort" not in str(container.get("ports", [])), name
        # Beyond PSS: read-only root filesystem and resources on every container, as for the chart's other pods.
        assert sc.get("readOnlyRootFilesystem") is True, name
        for kind in ("requests", "limits"):
            assert set(container.get("resources", {}).get(kind, {})) >= {"cpu", "memory"}, f"{name}: {kind}"


@pytest.mark.parametrize("variant", VARIANTS)
def test_target_pods_meet_pss_restricted(helm, variant):
    for where, spec in helm.render(None, *VARIANTS[variant]).pod_specs():
        assert_pss_restricted(where, spec)
        if where not in (f"Deployment/{NGINX}",):
            assert spec.get("automountServiceAccountToken") is False, f"{where}: only the controller needs a token"


def containers(rendered, name: str) -> dict[str, dict]:
    spec = rendered.get("Deployment", name)["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec.get("initContainers", []) + spec["containers"]}


def test_cpus_follow_worker_processes_and_threads(helm):
    rendered = helm.render(None, *VARIANTS["nginx-seed-tls"])
    controller = containers(rendered, NGINX)["controller"]
    assert controller["resources"]["requests"] == controller["resources"]["limits"] == {"cpu": "4", "memory": "256Mi"}
    assert rendered.get("ConfigMap", NGINX)["data"]["worker-processes"] == "4"
    rendered = helm.render(None, *VARIANTS["haproxy-openshift"])
    haproxy = containers(rendered, HAPROXY)["haproxy"]
    assert haproxy["resources"]["requests"] == haproxy["resources"]["limits"] == {"cpu": "4", "memory": "512Mi"}
    cfg = rendered.get("ConfigMap", HAPROXY)["data"]["haproxy.cfg"]
    assert "    nbthread 4\n" in cfg and "    cpu-map auto:1/1-4 0-3\n" in cfg


def haproxy_cfg(helm, *args: str) -> str:
    return helm.render(None, *HAPROXY_ON, *args).get("ConfigMap", HAPROXY)["data"]["haproxy.cfg"]


def test_maxconn_is_twice_the_planned_connections(helm):
    cfg = haproxy_cfg(helm)
    assert cfg.count("maxconn 20000\n") == 2  # global and defaults (the frontends' limit)
    cfg = haproxy_cfg(helm, "--set", "haproxy.clientConnections=30000")
    assert "maxconn 60000\n" in cfg
    assert "maxconn 100000\n" in haproxy_cfg(helm, "--set", "haproxy.maxconn=100000")
    result = helm.template(*HAPROXY_ON, "--set", "haproxy.maxconn=15000")
    assert result.returncode != 0 and "below twice haproxy.clientConnections (20000)" in result.stderr


def test_haproxy_keep_alive_or_close(helm):
    cfg = haproxy_cfg(helm, "--set", "haproxy.keepAliveTimeout=30s")
    assert "timeout http-keep-alive 30s" in cfg and "httpclose" not in cfg
    cfg = haproxy_cfg(helm, "--set", "haproxy.keepAlive=false")
    assert "option httpclose" in cfg and "http-keep-alive" not in cfg


def test_a_stopping_haproxy_pod_leaves_the_service_before_it_closes(helm):
    """SIGUSR1 (the pod's stop): /healthz fails at once, the readiness probe takes the pod out within 2 s, and
    HAProxy serves the drain's seconds before its soft-stop; the kubelet waits the drain plus 30 s."""
    rendered = helm.render(None, *HAPROXY_ON)
    cfg = rendered.get("ConfigMap", HAPROXY)["data"]["haproxy.cfg"]
    assert "\n    grace 5s\n" in cfg and "\n    monitor fail if { stopping }\n" in cfg
    probe = containers(rendered, HAPROXY)["haproxy"]["readinessProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] == 2
    assert rendered.get("Deployment", HAPROXY)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 35
    rendered = helm.render(None, *HAPROXY_ON, "--set", "haproxy.drainSeconds=0")
    assert "grace" not in rendered.get("ConfigMap", HAPROXY)["data"]["haproxy.cfg"]
    assert rendered.get("Deployment", HAPROXY)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 30


@pytest.mark.parametrize("mode", ["none", "edge", "passthrough"])
def test_session_rate_limit_caps_every_client_frontend(helm, mode):
    assert "rate-limit" not in haproxy_cfg(helm, *BACKEND_TLS, "--set", f"haproxy.tls.mode={mode}")
    cfg = haproxy_cfg(helm, *BACKEND_TLS, "--set", f"haproxy.tls.mode={mode}", "--set", "haproxy.sessionRateLimit=1500")
    frontends = {block.split("\n", 1)[0]: block.split("\n\n")[0] for block in cfg.split("\nfrontend ")[1:]}
    assert {name for name, block in frontends.items() if "\n    rate-limit sessions 1500\n" in block} == \
        {"http"} | ({"https"} if mode != "none" else set())  # not the metrics frontend Prometheus scrapes


@pytest.mark.parametrize("mode, https_backends, upstream", [
    ("none", None, None), ("edge", "be_http", None), ("reencrypt", "be_secure", "lt-backend:443 ssl verify none"),
    ("passthrough", "be_tcp", "lt-backend:443"),
])
def test_haproxy_tls_modes(helm, mode, https_backends, upstream):
    rendered = helm.render(None, *HAPROXY_ON, *BACKEND_TLS, "--set", f"haproxy.tls.mode={mode}", "--set", "haproxy.routes=3")
    cfg = rendered.get("ConfigMap", HAPROXY)["data"]["haproxy.cfg"]
    service_ports = {p["name"]: p["port"] for p in rendered.get("Service", HAPROXY)["spec"]["ports"]}
    secrets = [s["metadata"]["name"] for s in rendered.of_kind("Secret")]
    if mode == "none":
        assert "frontend https" not in cfg and "https" not in service_ports
        return
    assert service_ports == {"http": 80, "https": 443, "metrics": 8404}
    for route in range(3):
        assert f"backend {https_backends}_r{route}\n" in cfg
    if upstream:
        assert f"server payload {upstream}" in cfg
    terminates = mode in ("edge", "reencrypt")
    assert (" ssl crt tls.pem " in cfg) is terminates
    assert ("lt-haproxy-tls" in secrets) is terminates
    if mode == "passthrough":
        assert "use_backend be_tcp_%[req.ssl_sni,lower,map(routes.map,r0)]" in cfg and "mode tcp" in cfg


def test_haproxy_routes_and_metrics_port(helm):
    rendered = helm.render(None, *HAPROXY_ON, "--set", "haproxy.routes=100")
    data = rendered.get("ConfigMap", HAPROXY)["data"]
    routes = dict(line.split() for line in data["routes.map"].splitlines())
    assert len(routes) == 100
    assert routes[HAPROXY] == "r0" and routes[f"r99.{HAPROXY}"] == "r99"
    assert data["haproxy.cfg"].count("\nbackend be_http_r") == 100
    assert "http-request use-service prometheus-exporter if { path /metrics }" in data["haproxy.cfg"]
    (haproxy,) = containers(rendered, HAPROXY).values()
    assert {p["name"]: p["containerPort"] for p in haproxy["ports"]} == {"http": 8080, "metrics": 8404}
    assert haproxy["command"] == ["haproxy", "-db", "-f", "haproxy.cfg"]
    assert haproxy["workingDir"] == "/usr/local/etc/haproxy"


# ConfigMap key of the controller -> the directive the controller writes for it, as in the equivalent nginx.conf.
CONFIGMAP_DIRECTIVES = {
    "worker-processes": "worker_processes  {}",
    "worker-connections": "worker_connections  {}",
    "worker-rlimit-nofile": "worker_rlimit_nofile {}",
    "keepalive-timeout": "keepalive_timeout {}",
    "keepalive-requests": "keepalive_requests {}",
    "keepalive": "keepalive {}",
    "ssl-protocols": "ssl_protocols {}",
    "ssl-ciphers": 'ssl_ciphers "{}"',
}


@pytest.mark.parametrize("variant", ["nginx", "nginx-seed-tls", "nginx-routes-own-secret"])
def test_controller_configmap_and_equivalent_nginx_conf_agree(helm, variant):
    rendered = helm.render(None, *VARIANTS[variant])
    settings = rendered.get("ConfigMap", NGINX)["data"]
    conf = rendered.get("ConfigMap", f"{NGINX}-equivalent")["data"]["nginx.conf"]
    for key, value in settings.items():
        if key in CONFIGMAP_DIRECTIVES:
            assert CONFIGMAP_DIRECTIVES[key].format(value) + ";" in conf, key
    assert ("access_log off;" in conf) is (settings["access-log-off"] == "true")
    assert ("ssl_prefer_server_ciphers on;" in conf) is (settings.get("ssl-prefer-server-ciphers") == "true")
    assert settings["ssl-redirect"] == "false" and "return 301" not in conf


def test_equivalent_follows_the_controller_flags_and_ingress(helm):
    rendered = helm.render(None, *VARIANTS["nginx-routes-own-secret"])
    (controller,) = [c for c in containers(rendered, NGINX).values() if c["name"] == "controller"]
    args = dict(a.lstrip("-").split("=", 1) for a in controller["args"])
    conf = rendered.get("ConfigMap", f"{NGINX}-equivalent")["data"]["nginx.conf"]
    assert f"listen {args['default-http-listener-port']} default_server;" in conf
    assert f"listen {args['default-https-listener-port']} ssl default_server;" in conf
    assert f"listen {args['nginx-status-port']};" in conf
    assert "ssl_certificate $secret_dir_path/default;" in conf and args["ssl-dynamic-reload"] == "true"
    ingress = rendered.get("Ingress", NGINX)
    hosts = [rule["host"] for rule in ingress["spec"]["rules"]]
    assert hosts == ["apps.example.com", *(f"r{i}.apps.example.com" for i in range(1, 5))]
    assert re.findall(r"server_name (\S+);", conf) == ["_", *hosts]
    annotations = ingress["metadata"]["annotations"]
    assert conf.count(f"listen {annotations['nginx.org/listen-ports']};") == len(hosts)
    assert conf.count(f"listen {annotations['nginx.org/listen-ports-ssl']} ssl;") == len(hosts)
    # No secretName: the hosts get the controller's wildcard Secret, which it writes to secrets/wildcard.
    assert ingress["spec"]["tls"] == [{"hosts": hosts}]
    assert args["wildcard-tls-secret"] == args["default-server-tls-secret"] == "nginx-tls/my-cert"
    assert conf.count("ssl_certificate $secret_dir_path/wildcard;") == len(hosts)
    assert [s["metadata"]["name"] for s in rendered.of_kind("Secret")] == ["lt-locust-web-auth"]  # no TLS one
    static = helm.render(None, *VARIANTS["nginx-seed-tls"]).get("ConfigMap", f"{NGINX}-equivalent")["data"]["nginx.conf"]
    assert "$secret_dir_path" not in static and "ssl_certificate secrets/default;" in static


def test_controller_runs_without_custom_resources_in_one_namespace(helm):
    rendered = helm.render(None, *NGINX_ON)
    args = containers(rendered, NGINX)["controller"]["args"]
    for flag in ("-enable-custom-resources=false", "-watch-namespace=$(POD_NAMESPACE)", "-enable-leader-election=false",
                 "-enable-telemetry-reporting=false", "-enable-snippets=false", "-enable-prometheus-metrics=true",
                 f"-ingress-class={RELEASE_NS}-lt-nginx", f"-nginx-configmaps=$(POD_NAMESPACE)/{NGINX}",
                 f"-watch-secret-namespace={SECRET_NS}", f"-default-server-tls-secret={SECRET_NS}/{NGINX}-tls",
                 f"-wildcard-tls-secret={SECRET_NS}/{NGINX}-tls"):
        assert flag in args
    assert not [d for d in rendered.docs if d["kind"] == "CustomResourceDefinition"]
    ingress_class = rendered.get("IngressClass", f"{RELEASE_NS}-lt-nginx")
    assert ingress_class["spec"]["controller"] == "nginx.org/ingress-controller"
    assert rendered.get("Ingress", NGINX)["spec"]["ingressClassName"] == f"{RELEASE_NS}-lt-nginx"
    ports = {p["name"]: p["port"] for p in rendered.get("Service", NGINX)["spec"]["ports"]}
    assert ports == {"http": 80, "https": 443, "metrics": 9113}


def test_controller_rbac_is_least_privilege(helm):
    rendered = helm.render(None, *NGINX_ON)
    role = rendered.get("Role", NGINX)
    assert "namespace" not in role["metadata"]  # the release's
    granted = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    assert granted == {  # no Secret: the Locust and Grafana passwords are in this namespace
        *(("", r, v) for r in ("configmaps", "pods", "services") for v in ("get", "list", "watch")),
        ("", "pods", "update"),
        *(("", "events", v) for v in ("create", "patch", "list")),
        *(("discovery.k8s.io", "endpointslices", v) for v in ("get", "list", "watch")),
        *(("networking.k8s.io", "ingresses", v) for v in ("get", "list", "watch")),
    }
    # Its TLS Secret, by name and in its own namespace, is the one Secret it reads.
    tls_role = rendered.get("Role", f"{NGINX}-tls")
    assert tls_role["metadata"]["namespace"] == SECRET_NS
    assert tls_role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [f"{NGINX}-tls"],
                                  "verbs": ["get"]}]
    tls_binding = rendered.get("RoleBinding", f"{NGINX}-tls")
    assert tls_binding["metadata"]["namespace"] == SECRET_NS and tls_binding["roleRef"]["name"] == f"{NGINX}-tls"
    (cluster_role,) = rendered.of_kind("ClusterRole")
    assert cluster_role["rules"] == [{"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses"],
                                      "resourceNames": [f"{RELEASE_NS}-lt-nginx"], "verbs": ["get"]}]
    for binding in rendered.of_kind("RoleBinding") + rendered.of_kind("ClusterRoleBinding"):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NGINX, "namespace": RELEASE_NS}]
    assert rendered.get("Deployment", NGINX)["spec"]["template"]["spec"]["serviceAccountName"] == NGINX


def test_targets_stay_off_the_generator_nodes(helm):
    rendered = helm.render(None, *VARIANTS["both-on-node-types"])
    for name in (NGINX, HAPROXY):
        spec = rendered.get("Deployment", name)["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {INSTANCE_TYPE: "c5.2xlarge"}
        (term,) = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        worker_labels = rendered.get("Deployment", WORKER)["spec"]["template"]["metadata"]["labels"]
        assert term["labelSelector"]["matchLabels"].items() <= worker_labels.items()
    for name in (MASTER, WORKER):
        assert rendered.get("Deployment", name)["spec"]["template"]["spec"]["nodeSelector"] == {INSTANCE_TYPE: "c5.xlarge"}


def certificate_text(secret: dict) -> str:
    pem = base64.b64decode(secret["data"]["tls.crt"])
    return subprocess.run(["openssl", "x509", "-noout", "-text"], input=pem, capture_output=True, check=True,
                          timeout=30).stdout.decode()


@pytest.mark.parametrize("variant, secret, names", [
    ("nginx-seed-tls", f"{NGINX}-tls", [NGINX]),
    ("haproxy-edge", f"{HAPROXY}-tls", [HAPROXY]),
    ("backend-tls", f"{BACKEND}-tls", [BACKEND, f"{BACKEND}.{RELEASE_NS}.svc"]),
])
def test_generated_certificate_is_rsa_2048(helm, variant, secret, names):
    secret = helm.render(None, *VARIANTS[variant]).get("Secret", secret)
    assert secret["type"] == "kubernetes.io/tls"
    text = certificate_text(secret)
    assert "Public-Key: (2048 bit)" in text and "rsaEncryption" in text
    for name in names:
        assert f"DNS:{name}" in text


def test_backend_https_listener(helm):
    rendered = helm.render(None, *BACKEND_TLS, "--set", "backend.tls.ciphers=ECDHE-RSA-AES256-GCM-SHA384")
    conf = rendered.get("ConfigMap", BACKEND)["data"]["nginx.conf"]
    assert "listen 8443 ssl;" in conf and "ssl_certificate tls.crt;" in conf
    assert "ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384;" in conf
    assert {p["name"]: p["port"] for p in rendered.get("Service", BACKEND)["spec"]["ports"]} == {"http": 80, "https": 443}
    spec = rendered.get("Deployment", BACKEND)["spec"]["template"]["spec"]
    (config,) = [v for v in spec["volumes"] if v["name"] == "config"]
    sources = config["projected"]["sources"]
    assert sources[1]["secret"] == {"name": f"{BACKEND}-tls", "items": [{"key": "tls.crt", "path": "tls.crt"},
                                                                           {"key": "tls.key", "path": "tls.key"}]}


def locust_args(rendered, name: str = MASTER) -> list[str]:
    (container,) = rendered.get("Deployment", name)["spec"]["template"]["spec"]["containers"]
    return container["args"]


def locust_env(rendered, name: str) -> dict[str, str]:
    (container,) = rendered.get("Deployment", name)["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value") for e in container["env"]}


@pytest.mark.parametrize("args, host", [
    ((), "http://lt-backend:80"),
    (VARIANTS["backend-tls"], "https://lt-backend:443"),
    (VARIANTS["nginx"], "http://lt-nginx-ingress:80"),
    (VARIANTS["nginx-seed-tls"], "https://lt-nginx-ingress:443"),
    (VARIANTS["haproxy-none"], "http://lt-haproxy:80"),
    ((*HAPROXY_ON, "--set", "haproxy.tls.mode=edge", "--set", "locust.target=haproxy", "--set", "locust.https=true"),
     "https://lt-haproxy:443"),
    ((*NGINX_ON, "--set", "locust.target=nginx", "--set", "locust.host=https://nlb.example.com"),
     "https://nlb.example.com"),
    (("--set", "locust.target=url", "--set", "locust.host=http://198.18.0.1:8080"), "http://198.18.0.1:8080"),
])
def test_locust_loads_the_chosen_target(helm, args, host):
    assert f"--host={host}" in locust_args(helm.render(None, *args))


def test_locust_spreads_over_the_routes(helm):
    rendered = helm.render(None, *VARIANTS["haproxy-openshift"])
    for name in (MASTER, WORKER):
        assert locust_env(rendered, name)["LOADTEST_ROUTES"] == "100"
    # Route i of the target is r<i>.<the host Locust reaches>: what loadtest_lib.RouteSpread sends.
    routes = rendered.get("ConfigMap", HAPROXY)["data"]["routes.map"]
    assert f"r7.{HAPROXY} r7" in routes.splitlines()


def test_step_load(helm):
    rendered = helm.render(None, "--set", "locust.stepLoad.enabled=true", "--set", "locust.stepLoad.users=500",
                           "--set", "locust.stepLoad.stepTime=2m", "--set", "locust.stepLoad.steps=8",
                           "--set", "locust.mode=autostart")
    files = "--locustfile=/home/locust/locustfiles/keepalive_1kb.py,/home/locust/locustfiles/loadtest_shapes.py"
    for name in (MASTER, WORKER):
        assert locust_args(rendered, name)[0] == files
        env = locust_env(rendered, name)
        assert (env["LOADTEST_STEP_USERS"], env["LOADTEST_STEP_TIME"], env["LOADTEST_STEPS"]) == ("500", "2m", "8")
    master = locust_args(rendered)
    assert "--autostart" in master and not [a for a in master if a.startswith(("--users", "--run-time"))]


# id: (helm arguments, chart whose schema reports it, text of the message)
BAD = {
    "scenario-unknown": (["--set", "locust.scenario=tls_resume"], "locust", "scenario"),
    "target-unknown": (["--set", "locust.target=traefik"], "locust", "target"),
    "haproxy-tls-mode-unknown": ([*HAPROXY_ON, "--set", "haproxy.tls.mode=offload"], "haproxy", "tls.mode"),
    "haproxy-threads-zero": ([*HAPROXY_ON, "--set", "haproxy.threads=0"], "haproxy", "threads"),
    "haproxy-cpuset-words": ([*HAPROXY_ON, "--set", "haproxy.cpuSet=first"], "haproxy", "cpuSet"),
    "haproxy-cpuset-commas": ([*HAPROXY_ON, "--set-string", "haproxy.cpuSet=0\\,2"], "haproxy", "cpuSet"),
    "haproxy-session-rate-negative": ([*HAPROXY_ON, "--set", "haproxy.sessionRateLimit=-1"], "haproxy",
                                      "sessionRateLimit"),
    "haproxy-routes-zero": ([*HAPROXY_ON, "--set", "haproxy.routes=0"], "haproxy", "routes"),
    "haproxy-upstream-no-port": ([*HAPROXY_ON, "--set", "haproxy.upstream.http=payload"], "haproxy", "upstream.http"),
    "nginx-worker-processes-auto": ([*NGINX_ON, "--set", "nginx.workerProcesses=auto"], "nginx", "workerProcesses"),
    "nginx-port-privileged": ([*NGINX_ON, "--set", "nginx.ports.http=80"], "nginx", "ports.http"),
    "nginx-protocols-tls1": ([*NGINX_ON, "--set", "nginx.tls.protocols=TLSv1"], "nginx", "tls.protocols"),
    "nginx-hostname-upper": ([*NGINX_ON, "--set", "nginx.hostname=Apps.Example"], "nginx", "hostname"),
    "nginx-keepalive-negative": ([*NGINX_ON, "--set", "nginx.keepalive.upstreamConnections=-1"], "nginx",
                                 "keepalive.upstreamConnections"),
    "nginx-secret-namespace-not-a-label": ([*NGINX_ON, "--set", "nginx.tls.secretNamespace=TLS.keys"], "nginx",
                                           "tls.secretNamespace"),
    "backend-tls-ciphers-spaces": (["--set", "backend.tls.ciphers=A B"], "backend", "tls.ciphers"),
    "step-time-words": (["--set", "locust.stepLoad.stepTime=a minute"], "locust", "stepLoad.stepTime"),
    "routes-zero": (["--set", "locust.routes=0"], "locust", "routes"),
}


# Values each schema accepts alone that cannot work together: refused naming the value set and the fix.
CONFLICTS = {
    "target-nginx-not-installed": (["--set", "locust.target=nginx"],
                                   "locust.target nginx with nginx.enabled false: the users would load a target that "
                                   "is not installed; set nginx.enabled=true"),
    "target-haproxy-not-installed": (["--set", "locust.target=haproxy"],
                                     "locust.target haproxy with haproxy.enabled false"),
    "target-url-without-host": (["--set", "locust.target=url"], "locust.target url needs locust.host"),
    "tls-scenario-backend-without-tls": (["--set", "locust.scenario=tls_handshake"],
                                         "locust.scenario tls_handshake loads the backend over HTTPS, and "
                                         "backend.tls.enabled is false; set backend.tls.enabled=true"),
    "tls-scenario-haproxy-without-tls": ([*HAPROXY_ON, "--set", "locust.target=haproxy",
                                          "--set", "locust.scenario=tls_handshake"],
                                         "locust.scenario tls_handshake loads HAProxy over HTTPS, and "
                                         "haproxy.tls.mode is none; set haproxy.tls.mode=edge"),
    "https-haproxy-without-tls": ([*HAPROXY_ON, "--set", "locust.target=haproxy", "--set", "locust.https=true"],
                                  "locust.https true loads HAProxy over HTTPS, and haproxy.tls.mode is none"),
    "passthrough-without-backend-tls": ([*HAPROXY_ON, "--set", "haproxy.tls.mode=passthrough"],
                                        "haproxy.tls.mode passthrough forwards TLS to the backend's HTTPS listener, "
                                        "and backend.tls.enabled is false; set backend.tls.enabled=true"),
    "reencrypt-without-backend-tls": ([*HAPROXY_ON, "--set", "haproxy.tls.mode=reencrypt"],
                                      "haproxy.tls.mode reencrypt forwards TLS"),
    # Issue #40: accepted silently before.
    "plain-scenario-over-https": (["--set", "locust.scenario=http_close", "--set", "locust.https=true"],
                                  "locust.scenario http_close opens a new plain HTTP connection per request, and "
                                  "locust.https true asks for HTTPS; load an http:// target (locust.https=false), or "
                                  "a scenario made for HTTPS, e.g. locust.scenario=tls_handshake"),
    "plain-scenario-https-host": (["--set", "locust.scenario=http_close", "--set", "locust.host=https://shop.example"],
                                  "locust.host https://shop.example asks for HTTPS"),
    "loaded-backend-without-pods": (["--set", "backend.replicas=0"],
                                    "locust.target backend with backend.replicas 0: no pod would answer the load; "
                                    "set backend.replicas=1 or more"),
    "loaded-nginx-without-pods": ([*NGINX_ON, "--set", "locust.target=nginx", "--set", "nginx.replicas=0"],
                                  "locust.target nginx with nginx.replicas 0"),
    "loaded-haproxy-without-pods": ([*HAPROXY_ON, "--set", "locust.target=haproxy", "--set", "haproxy.replicas=0"],
                                    "locust.target haproxy with haproxy.replicas 0"),
    "loaded-nginx-backend-without-pods": ([*NGINX_ON, "--set", "locust.target=nginx", "--set", "backend.replicas=0"],
                                          "backend.replicas 0: locust.target nginx forwards every request to the "
                                          "backend, which would have no pod; set backend.replicas=1 or more"),
    "loaded-haproxy-backend-without-pods": ([*HAPROXY_ON, "--set", "locust.target=haproxy",
                                             "--set", "backend.replicas=0"],
                                            "backend.replicas 0: locust.target haproxy"),
    "nginx-without-backend": ([*NGINX_ON, "--set", "locust.target=nginx", "--set", "backend.enabled=false"],
                              "nginx.enabled without the backend: the NGINX Ingress Controller routes every request "
                              "to the backend's Service, which would not exist; set backend.enabled=true"),
    "backend-workers-above-its-cpu": (["--set", "backend.workerProcesses=4"],
                                      "backend.workerProcesses 4 is above backend.resources.limits.cpu 1: each nginx "
                                      "worker process wants a core of its own, and 4 would share 1; set "
                                      "backend.workerProcesses=1, or raise resources.limits.cpu (and requests.cpu) "
                                      "to 4"),
    "nginx-cpus-above-its-node": ([*NGINX_ON, "--set", "nginx.nodeType=c5.large", "--set", "nginx.workerProcesses=3"],
                                  "nginx.workerProcesses 3 gives the nginx pod 3 CPUs (request = limit), and a "
                                  "c5.large node has 2: no node could run it; set nginx.workerProcesses=2 or less"),
    "haproxy-cpus-above-its-node": ([*HAPROXY_ON, "--set", "haproxy.nodeType=c5.large", "--set", "haproxy.threads=4"],
                                    "haproxy.threads 4 gives the haproxy pod 4 CPUs"),
    "haproxy-cpuset-reversed": ([*HAPROXY_ON, "--set", "haproxy.threads=2", "--set", "haproxy.cpuSet=3-2"],
                                'haproxy.cpuSet "3-2": the range 3-2 runs backwards; write it 2-3'),
    "haproxy-cpuset-more-cpus-than-threads": ([*HAPROXY_ON, "--set", "haproxy.cpuSet=0-99999"],
                                              'haproxy.cpuSet "0-99999" lists more CPUs than haproxy.threads (1): '
                                              "cpu-map pins each thread to one CPU; list 1 CPU(s)"),
    "haproxy-cpuset-fewer-cpus-than-threads": ([*HAPROXY_ON, "--set", "haproxy.threads=3",
                                                "--set", "haproxy.cpuSet=0-1"],
                                               'haproxy.cpuSet "0-1" lists 2 CPU(s) for haproxy.threads 3'),
    "haproxy-cpuset-a-cpu-twice": ([*HAPROXY_ON, "--set", "haproxy.threads=2", "--set-string", "haproxy.cpuSet=1 1"],
                                   'haproxy.cpuSet "1 1" lists CPU 1 twice'),
    "haproxy-cpuset-beyond-its-node": ([*HAPROXY_ON, "--set", "haproxy.nodeType=c5.large", "--set", "haproxy.threads=2",
                                        "--set", "haproxy.cpuSet=2-3"],
                                       'haproxy.cpuSet "2-3" names CPU 2, and a c5.large node has 2 (0 to 1)'),
}


@pytest.mark.parametrize("case", CONFLICTS)
def test_values_that_cannot_work_together_are_refused_naming_what_was_set(helm, case):
    helm.assert_refused(*CONFLICTS[case])


@pytest.mark.parametrize("case", BAD)
def test_bad_target_value_fails_naming_the_field(helm, case):
    args, chart, field = BAD[case]
    result = helm.template(*args)
    assert result.returncode != 0, f"{args} rendered"
    assert f"\n{chart}:\n" in result.stderr, result.stderr
    assert field in result.stderr, result.stderr


def write_files(data: dict[str, str], folder: Path, pem: bytes, *names: str) -> None:
    for name, content in data.items():
        (folder / name).write_text(content)
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(pem)


@pytest.fixture(scope="module")
def pem(tmp_path_factory) -> bytes:
    folder = tmp_path_factory.mktemp("cert")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(folder / "key"),
                    "-out", str(folder / "cert"), "-days", "2", "-subj", "/CN=test"],
                   check=True, capture_output=True, timeout=60)
    return (folder / "cert").read_bytes() + (folder / "key").read_bytes()


@pytest.mark.parametrize("variant", ["haproxy-none", "haproxy-edge", "haproxy-passthrough", "haproxy-reencrypt",
                                     "haproxy-openshift"])
def test_haproxy_cfg_loads_in_the_machines_haproxy(helm, variant, pem, tmp_path):
    """`haproxy -c` (Debian's 2.6) on the file the pod runs (3.2), in its folder as the pod's workingDir."""
    data = helm.render(None, *VARIANTS[variant], "--set", "haproxy.upstream.http=127.0.0.1:1",
                       "--set", "haproxy.upstream.https=127.0.0.1:2", "--set", "haproxy.clientConnections=1000"
                       ).get("ConfigMap", HAPROXY)["data"]
    write_files(data, tmp_path, pem, "tls.pem")
    result = subprocess.run(["haproxy", "-c", "-f", "haproxy.cfg"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and "WARNING" not in result.stdout + result.stderr, result.stdout + result.stderr


@pytest.mark.parametrize("variant", ["nginx", "nginx-seed-tls", "nginx-routes-own-secret"])
def test_equivalent_nginx_conf_loads_in_the_machines_nginx(helm, nginx, variant, pem, tmp_path):
    conf = helm.render(None, *VARIANTS[variant], "--set", "nginx.upstream=127.0.0.1:1",
                       "--set", "nginx.workerConnections=1024").get("ConfigMap", f"{NGINX}-equivalent")["data"]
    certificates = {p.replace("$secret_dir_path", "secrets") for p in re.findall(r"ssl_certificate (\S+);", conf["nginx.conf"])}
    write_files(conf, tmp_path, pem, *certificates)
    result = subprocess.run([nginx, "-t", "-p", f"{tmp_path}/", "-e", "stderr", "-c", str(tmp_path / "nginx.conf")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and "test is successful" in result.stderr, result.stderr


def test_backend_with_tls_loads_in_the_machines_nginx(helm, nginx, pem, tmp_path):
    data = helm.render(None, *BACKEND_TLS, "--set", "backend.bindAddress=127.0.0.1:").get("ConfigMap", BACKEND)["data"]
    (tmp_path / "html").mkdir()
    (tmp_path / "nginx.conf").write_text(data["nginx.conf"])
    write_files({}, tmp_path, pem, "tls.crt", "tls.key")
    result = subprocess.run([nginx, "-t", "-p", f"{tmp_path}/", "-e", "stderr", "-c", str(tmp_path / "nginx.conf")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and "test is successful" in result.stderr, result.stderr

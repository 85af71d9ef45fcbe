"""What the umbrella chart renders: valid Kubernetes objects, restricted pods, the sizing, the wiring."""
from __future__ import annotations

import base64
import re
import subprocess

import pytest

from loadtest_shared import settings

from loadtest import paths, units
from loadtest.capacity import profiles


LOCUSTFILES = paths.CHART / "charts" / "locust" / "locustfiles"
WORKER, MASTER, BACKEND = "lt-locust-worker", "lt-locust-master", "lt-backend"
# The one pod with its ServiceAccount's token mounted: the NGINX Ingress Controller reads Ingresses and Services from
# the API (charts/nginx/templates/rbac.yaml; test_targets_chart checks what it may read).
TOKEN_HOLDERS = {"Deployment/lt-nginx-ingress"}
INSTANCE_TYPE = "node.kubernetes.io/instance-type"

# Feature combinations rendered on top of the defaults, each checked like a values file.
VARIANTS = {
    "autostart": ("--set", "locust.mode=autostart", "--set", "locust.autostart.runTime=10m"),
    "web-auth": ("--set", "locust.webAuth.enabled=true",),
    "web-auth-existing-secret": ("--set", "locust.webAuth.enabled=true", "--set", "locust.webAuth.existingSecret=ui"),
    "node-types": ("--set", "locust.nodeType=c5.xlarge", "--set", "backend.nodeType=c5.large"),
    "external-target": ("--set", "backend.enabled=false", "--set", "locust.host=https://ingress.example.com"),
    "backend-only": ("--set", "locust.enabled=false",),
    "no-service-accounts": ("--set", "locust.serviceAccount.create=false", "--set", "backend.serviceAccount.create=false"),
}


def container_args(deployment: dict) -> list[str]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container["args"]


def kubeconform_check(kubeconform, schema_location, rendered, tmp_path):
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(rendered.text)
    result = subprocess.run(
        [kubeconform, "-strict", "-summary", "-kubernetes-version", "1.33.0", "-schema-location", schema_location,
         str(manifest)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = re.search(r"(\d+) resources? found.*Valid: (\d+), Invalid: 0, Errors: 0, Skipped: 0", result.stdout)
    assert summary, result.stdout
    assert int(summary.group(1)) == int(summary.group(2)) == len(rendered.docs) > 0, result.stdout


def test_kubeconform_values_file(helm, kubeconform, schema_location, rendered, tmp_path):
    kubeconform_check(kubeconform, schema_location, rendered, tmp_path)


@pytest.mark.parametrize("variant", VARIANTS)
def test_kubeconform_variant(helm, kubeconform, schema_location, variant, tmp_path):
    kubeconform_check(kubeconform, schema_location, helm.render(None, *VARIANTS[variant]), tmp_path)


def test_kubeconform_rejects_an_invalid_object(kubeconform, schema_location, tmp_path):
    """The offline schemas are really applied (strict: unknown fields fail)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 80, bogus: 1}]}\n")
    result = subprocess.run([kubeconform, "-strict", "-summary", "-kubernetes-version", "1.33.0",
                             "-schema-location", schema_location, str(bad)], capture_output=True, text=True)
    assert result.returncode == 1 and "bogus" in result.stdout, result.stdout + result.stderr


def assert_restricted(where: str, spec: dict):
    """Pod Security Standard "restricted", plus a read-only root filesystem and resources on every container, and no
    API token unless the pod is one of TOKEN_HOLDERS."""
    pod = spec.get("securityContext", {})
    assert spec.get("automountServiceAccountToken") is (where in TOKEN_HOLDERS), where
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(host), f"{where}: {host}"
    for volume in spec.get("volumes", []):
        # The restricted profile's volume types (a claim: the results of mode run, Prometheus' samples).
        assert set(volume) - {"name"} <= {"configMap", "emptyDir", "secret", "projected", "persistentVolumeClaim"}, \
            f"{where}: {volume}"
    assert pod.get("runAsUser", 1) != 0, where
    for container in spec.get("initContainers", []) + spec["containers"]:
        name = f"{where} container {container['name']}"
        sc = container.get("securityContext", {})
        assert sc.get("runAsNonRoot", pod.get("runAsNonRoot")) is True, name
        assert sc.get("runAsUser", pod.get("runAsUser")) not in (0, None), f"{name}: numeric non-root runAsUser"
        assert sc.get("allowPrivilegeEscalation") is False, name
        assert not sc.get("privileged"), name
        assert sc.get("capabilities", {}).get("drop") == ["ALL"], name
        assert not sc.get("capabilities", {}).get("add"), name
        assert (sc.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type") == "RuntimeDefault", name
        assert sc.get("readOnlyRootFilesystem") is True, name
        for kind in ("requests", "limits"):
            assert set(container.get("resources", {}).get(kind, {})) >= {"cpu", "memory"}, f"{name}: {kind}"


def test_pods_are_restricted(rendered):
    specs = rendered.pod_specs()
    names = {where for where, _ in specs}
    assert {"Deployment/lt-locust-master", "Deployment/lt-locust-worker", "Deployment/lt-backend"} <= names
    assert len(specs) >= 5  # and the 2 test pods; monitoring adds its own where a values file turns it on
    for where, spec in specs:
        assert_restricted(where, spec)


@pytest.mark.parametrize("variant", VARIANTS)
def test_pods_are_restricted_variant(helm, variant):
    for where, spec in helm.render(None, *VARIANTS[variant]).pod_specs():
        assert_restricted(where, spec)


def test_workers_fill_the_values_file(rendered, case_values, locust_defaults):
    locust = {**locust_defaults, **case_values.get("locust", {})}
    worker = {**locust_defaults["worker"], **locust.get("worker", {})}
    deployment = rendered.get("Deployment", WORKER)
    assert deployment["spec"]["replicas"] == worker["replicas"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    resources = container["resources"]
    assert resources["requests"] == resources["limits"], "Guaranteed QoS: request = limit"
    assert resources["requests"]["cpu"] == str(worker["cpu"])
    assert resources["requests"]["memory"] == str(worker["memory"])


def test_node_selector_iff_node_type(rendered, case_values, locust_defaults):
    node_type = case_values.get("locust", {}).get("nodeType", locust_defaults["nodeType"])
    for name in (MASTER, WORKER):
        selector = rendered.get("Deployment", name)["spec"]["template"]["spec"].get("nodeSelector", {})
        if node_type:
            assert selector.get(INSTANCE_TYPE) == node_type, name
        else:
            assert INSTANCE_TYPE not in selector, name


def test_node_types_and_extra_selectors(helm):
    rendered = helm.render(None, *VARIANTS["node-types"], "--set", "locust.worker.nodeSelector.pool=load")
    worker = rendered.get("Deployment", WORKER)["spec"]["template"]["spec"]["nodeSelector"]
    assert worker == {INSTANCE_TYPE: "c5.xlarge", "pool": "load"}
    master = rendered.get("Deployment", MASTER)["spec"]["template"]["spec"]["nodeSelector"]
    assert master == {INSTANCE_TYPE: "c5.xlarge"}
    backend = rendered.get("Deployment", BACKEND)["spec"]["template"]["spec"]["nodeSelector"]
    assert backend == {INSTANCE_TYPE: "c5.large"}


def pod_requests(spec: dict) -> tuple[int, int]:
    """(CPU m, memory MiB) of a pod as the scheduler counts it: its containers' sum, or its largest init container's."""
    def of(container: dict) -> tuple[int, int]:
        requests = container["resources"]["requests"]
        return units.parse_cpu_m(requests["cpu"]), units.parse_memory_mi(requests["memory"])

    containers = [of(c) for c in spec["containers"]]
    inits = [of(c) for c in spec.get("initContainers", [])]
    return tuple(max([sum(r[i] for r in containers), *(r[i] for r in inits)]) for i in (0, 1))


@pytest.mark.parametrize("profile", [p for p in profiles.PROFILES if p.target_node_type], ids=lambda p: p.file)
def test_the_header_counts_what_the_chart_renders_on_the_target_node_group(helm, profile):
    """The values file's header sums the target node group's requests from the charts' values
    (loadtest.capacity.chartpods): they must be what the templates make of them, pod by pod, and every pod but
    Locust's must go to that group."""
    rendered = helm.render(paths.VALUES / profile.file)
    placed = {}
    for d in rendered.docs:
        if d["kind"] not in ("Deployment", "StatefulSet"):
            continue
        template = d["spec"]["template"]
        component = template["metadata"]["labels"]["app.kubernetes.io/component"]
        node_type = template["spec"].get("nodeSelector", {}).get(INSTANCE_TYPE)
        if component.startswith("locust-"):
            assert node_type == profile.node_type, component
            continue
        assert node_type == profile.target_node_type, f"{component} is not on the target node group"
        placed[component] = (d["spec"].get("replicas", 1), *pod_requests(template["spec"]))
    assert placed == {p.name: (p.replicas, p.cpu_m, p.memory_mi) for p in profile.target_plan.pods}


def test_workers_spread_over_nodes(helm):
    deployment = helm.render().get("Deployment", WORKER)
    (constraint,) = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert constraint["topologyKey"] == "kubernetes.io/hostname"
    assert constraint["maxSkew"] == 1 and constraint["whenUnsatisfiable"] == "ScheduleAnyway"
    assert constraint["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]


def test_selector_labels_are_stable(helm):
    """Selectors hold only name/instance/component: a chart or app version bump must not change them."""
    for deployment in helm.render().of_kind("Deployment"):
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert set(selector) == {"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"}
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/part-of"] == "loadtest"
        assert {"app.kubernetes.io/version", "helm.sh/chart", "app.kubernetes.io/managed-by"} <= set(labels)
        assert selector.items() <= labels.items()


def test_interactive_master(helm):
    rendered = helm.render()
    args = container_args(rendered.get("Deployment", MASTER))
    assert args[:3] == ["--locustfile=/home/locust/locustfiles/keepalive_1kb.py", "--master", "--host=http://lt-backend:80"]
    assert "--enable-rebalancing" in args
    assert not [a for a in args if a.startswith(("--autostart", "--users", "--expect-workers"))]
    assert rendered.get("Deployment", MASTER)["spec"]["strategy"] == {"type": "Recreate"}
    # The default target is the in-chart backend Service.
    assert rendered.get("Service", BACKEND)["spec"]["ports"][0]["port"] == 80


def test_autostart_master(helm):
    rendered = helm.render(None, *VARIANTS["autostart"], "--set", "locust.worker.replicas=7")
    args = container_args(rendered.get("Deployment", MASTER))
    assert args[3:] == ["--enable-rebalancing", "--autostart", "--users=100", "--spawn-rate=10", "--run-time=10m",
                        "--expect-workers=7"]


def test_rebalancing_off(helm):
    assert "--enable-rebalancing" not in container_args(
        helm.render(None, "--set", "locust.enableRebalancing=false").get("Deployment", MASTER))


def test_external_target(helm):
    rendered = helm.render(None, *VARIANTS["external-target"])
    assert "--host=https://ingress.example.com" in container_args(rendered.get("Deployment", MASTER))
    assert not [d for d in rendered.docs if "backend" in d["metadata"]["name"]]


def test_workers_join_the_master(helm):
    rendered = helm.render()
    args = container_args(rendered.get("Deployment", WORKER))
    assert args == ["--locustfile=/home/locust/locustfiles/keepalive_1kb.py", "--worker",
                    "--master-host=lt-locust-workers", "--master-port=5557"]
    # The workers' port has a ClusterIP Service of its own; the web UI's Service never carries it.
    workers = rendered.get("Service", "lt-locust-workers")["spec"]
    assert workers["type"] == "ClusterIP" and [(p["name"], p["port"]) for p in workers["ports"]] == [("workers", 5557)]
    ui = rendered.get("Service", MASTER)["spec"]
    assert [(p["name"], p["port"]) for p in ui["ports"]] == [("web", 8089)]
    assert workers["selector"] == ui["selector"]


def test_a_worker_is_ready_once_the_master_accepted_it(helm):
    """The probe reads the file the plugin creates on the master's "ack", where the worker's env tells it to."""
    worker = helm.render().get("Deployment", WORKER)["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert worker["readinessProbe"]["exec"]["command"] == ["cat", env[settings.WORKER_READY_FILE.env]]
    assert env[settings.WORKER_READY_FILE.env].startswith("/tmp/")  # the writable emptyDir
    assert "/tmp" in [m["mountPath"] for m in worker["volumeMounts"]]


def test_a_new_master_brings_new_workers_and_only_then(helm):
    """Workers stay bound to the master pod they met; an upgrade that replaces it replaces them too."""
    def checksum(*sets):
        worker = helm.render(None, *sets).get("Deployment", WORKER)
        return worker["spec"]["template"]["metadata"]["annotations"]["checksum/master"]

    autostart = checksum(*VARIANTS["autostart"])
    assert checksum(*VARIANTS["autostart"], "--set", "locust.autostart.users=500") != autostart
    # Worker CPU, or the replicas in interactive mode, leave the master's pod as it is: the workers keep it.
    assert checksum(*VARIANTS["autostart"], "--set", "locust.worker.cpu=500m") == autostart
    assert checksum("--set", "locust.worker.replicas=2") == checksum("--set", "locust.worker.replicas=3")


def test_locustfiles_configmap_holds_exactly_the_scenarios_and_the_plugin(helm):
    """The scenarios and the pods' modules in one ConfigMap, the package they share with the CLI in its own, mounted
    as that package's folder on the pods' Python path."""
    rendered = helm.render()
    configmap = rendered.get("ConfigMap", "lt-locustfiles")
    files = {p.name: p.read_text() for folder in (LOCUSTFILES, paths.PLUGIN) for p in folder.glob("*.py")}
    assert {"keepalive_1kb.py", "loadtest_plugin.py", "leanhttp.py"} <= set(files)
    assert configmap["data"] == files
    shared = {p.name: p.read_text() for p in paths.SHARED.glob("*.py")}
    assert {"__init__.py", "verdict.py", "checks.py"} <= set(shared)
    assert rendered.get("ConfigMap", "lt-locust-shared")["data"] == shared
    for name in (MASTER, WORKER):
        spec = rendered.get("Deployment", name)["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        expected = {"locustfiles": "/home/locust/locustfiles", "tmp": "/tmp",
                    "shared": f"/home/locust/shared/{paths.SHARED.name}"}
        if name == MASTER:  # prometheus_client for the metrics plugin, pip-installed by an init container
            expected["packages"] = "/home/locust/packages"
            expected["web-auth"] = "/etc/loadtest/web-auth"
        assert mounts == expected
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["HOME"] == "/tmp"
        assert env["PYTHONPATH"].split(":")[:2] == ["/home/locust/locustfiles", "/home/locust/shared"]


def web_auth_file(spec: dict) -> str:
    """The Secret a pod reads the web UI's credentials from: LOADTEST_WEB_AUTH_FILE on a read-only mount of it."""
    (container,) = spec["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["LOADTEST_WEB_AUTH_FILE"] == {"name": "LOADTEST_WEB_AUTH_FILE",
                                             "value": "/etc/loadtest/web-auth/credentials"}
    assert "LOADTEST_WEB_AUTH" not in env and not [e for e in container["env"] if "valueFrom" in e]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/etc/loadtest/web-auth"]
    assert mount["readOnly"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["items"] == [{"key": "credentials", "path": "credentials"}]
    return volume["secret"]["secretName"]


def test_web_auth_is_on_by_default_with_a_generated_secret(helm):
    rendered = helm.render()
    secret = rendered.get("Secret", "lt-locust-web-auth")
    credentials = base64.b64decode(secret["data"]["credentials"]).decode()
    user, password = credentials.split(":")
    assert user == "locust" and re.fullmatch(r"[A-Za-z0-9]{24}", password)
    # Only the Secret holds it (base64): no plain password anywhere in the rendered objects.
    assert password not in rendered.text
    assert web_auth_file(rendered.get("Deployment", MASTER)["spec"]["template"]["spec"]) == "lt-locust-web-auth"


def test_web_auth_existing_secret(helm):
    rendered = helm.render(None, *VARIANTS["web-auth-existing-secret"])
    assert rendered.of_kind("Secret") == []
    assert web_auth_file(rendered.get("Deployment", MASTER)["spec"]["template"]["spec"]) == "ui"


def test_web_auth_is_an_explicit_opt_out(helm):
    rendered = helm.render(None, "--set", "locust.webAuth.enabled=false")
    assert rendered.of_kind("Secret") == []
    for name, spec in rendered.pod_specs():
        for container in spec["containers"]:
            assert not [e for e in container.get("env", []) if e["name"].startswith("LOADTEST_WEB_AUTH")], name


def test_service_accounts(helm):
    rendered = helm.render()
    accounts = {d["metadata"]["name"]: d for d in rendered.of_kind("ServiceAccount")}
    assert set(accounts) == {"lt-locust", "lt-backend"}
    assert all(a["automountServiceAccountToken"] is False for a in accounts.values())
    assert rendered.get("Deployment", WORKER)["spec"]["template"]["spec"]["serviceAccountName"] == "lt-locust"
    rendered = helm.render(None, *VARIANTS["no-service-accounts"])
    assert rendered.of_kind("ServiceAccount") == []
    assert rendered.get("Deployment", WORKER)["spec"]["template"]["spec"]["serviceAccountName"] == "default"


def test_image_digest(helm):
    digest = "sha256:" + "a" * 64
    rendered = helm.render(None, "--set", f"locust.image.digest={digest}")
    (container,) = rendered.get("Deployment", WORKER)["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"locustio/locust:2.47.0@{digest}"


def test_backend_payload_and_config(helm):
    rendered = helm.render()
    data = rendered.get("ConfigMap", BACKEND)["data"]
    assert len(data["1kb"].encode()) == 1024
    assert data["0kb"] == ""
    conf = data["nginx.conf"]
    assert "listen 8080;" in conf and "worker_processes 1;" in conf and "keepalive_requests 10000;" in conf
    for location in ("= /1kb", "= /0kb", "= /healthz", "= /stub_status"):
        assert f"location {location} {{" in conf
    # Prefix-relative paths only, no include: the same file runs under a local nginx.
    assert "include" not in conf and "root html;" in conf and "error_log stderr" in conf
    for directive in re.findall(r"^\s*(\w+_temp_path|pid|root)\s+(\S+);", conf, re.M):
        assert not directive[1].startswith("/"), directive
    deployment = rendered.get("Deployment", BACKEND)
    assert deployment["spec"]["replicas"] == 3
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["nginx", "-p", "/tmp/nginx/", "-e", "stderr", "-c", "/etc/loadtest/nginx.conf",
                                    "-g", "daemon off;"]
    assert container["resources"]["limits"]["cpu"] == "1", "one worker process per CPU"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"config": "/etc/loadtest", "prefix": "/tmp/nginx", "payload": "/tmp/nginx/html"}


def test_backend_local_listen_address(helm):
    conf = helm.render(None, "--set", "backend.bindAddress=127.0.0.1:", "--set", "backend.port=18080").get(
        "ConfigMap", BACKEND)["data"]["nginx.conf"]
    assert "listen 127.0.0.1:18080;" in conf


def test_backend_config_loads_in_local_nginx(helm, nginx, tmp_path):
    """`nginx -t` on the rendered config, laid out the way the local mode runs it (-p <dir>/ -e stderr)."""
    data = helm.render(None, "--set", "backend.bindAddress=127.0.0.1:").get("ConfigMap", BACKEND)["data"]
    (tmp_path / "html").mkdir()
    for name, content in data.items():
        (tmp_path / ("html" if name != "nginx.conf" else "") / name).write_text(content)
    result = subprocess.run([nginx, "-t", "-p", f"{tmp_path}/", "-e", "stderr", "-c", str(tmp_path / "nginx.conf")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_notes(helm, tmp_path):
    text = helm.notes(tmp_path, "--set", "locust.nodeType=c5.xlarge")
    assert "kubectl -n loadtest port-forward svc/lt-locust-master 8089:8089" in text
    assert "http://localhost:8089" in text
    assert "get pods -l app.kubernetes.io/instance=lt,app.kubernetes.io/component=locust-worker" in text
    assert "helm upgrade lt charts/loadtest -n loadtest --reuse-values --set locust.worker.replicas=" in text
    assert "helm test lt -n loadtest" in text
    assert "c5.xlarge" in text and "Target:  http://lt-backend:80" in text
    assert "kubectl -n loadtest get secret lt-locust-web-auth -o jsonpath='{.data.credentials}'" in text
    assert "WARNING" not in text  # a ClusterIP UI


def test_notes_without_web_auth_say_so(helm, tmp_path):
    text = helm.notes(tmp_path, "--set", "locust.webAuth.enabled=false")
    assert "get secret" not in text and "asks for no password (locust.webAuth.enabled=false)" in text


@pytest.mark.parametrize("service, ranges, says", [
    ("NodePort", (), "reachable from outside the cluster (NodePort, from anywhere: set "
                     "locust.master.service.loadBalancerSourceRanges)"),
    ("LoadBalancer", ("--set", "locust.master.service.loadBalancerSourceRanges={203.0.113.0/24}"),
     "reachable from outside the cluster (LoadBalancer, from 203.0.113.0/24)"),
])
def test_notes_warn_in_one_line_when_the_ui_leaves_the_cluster(helm, tmp_path, service, ranges, says):
    text = helm.notes(tmp_path, "--set", f"locust.master.service.type={service}", *ranges)
    (warning,) = [line for line in text.splitlines() if line.startswith("WARNING")]
    assert says in warning and "aim the workers at any host" in warning


def test_notes_with_monitoring_show_grafana_and_the_sweep(helm, tmp_path):
    assert "grafana" not in helm.notes(tmp_path / "off")
    text = helm.notes(tmp_path / "on", "--set", "monitoring.enabled=true")
    assert "kubectl -n loadtest port-forward svc/lt-grafana 3000:3000" in text
    assert "get secret lt-grafana-admin -o jsonpath='{.data.admin-password}'" in text
    assert "kubectl -n loadtest port-forward svc/lt-prometheus 9090:9090 &" in text
    assert ("export LOADTEST_LOCUST_AUTH=\"$(kubectl -n loadtest get secret lt-locust-web-auth "
            "-o jsonpath='{.data.credentials}' | base64 -d)\"") in text
    assert ("loadtest sweep --release lt --namespace loadtest --prometheus http://127.0.0.1:9090 "
            "--locust http://127.0.0.1:8089 --sweep users --steps") in text


def test_notes_web_auth_and_autostart(helm, tmp_path):
    text = helm.notes(tmp_path, *VARIANTS["web-auth"], *VARIANTS["autostart"])
    assert "kubectl -n loadtest get secret lt-locust-web-auth -o jsonpath='{.data.credentials}' | base64 -d" in text
    assert "100 users, 10 spawned per second, for 10m" in text


def test_notes_backend_only(helm, tmp_path):
    text = helm.notes(tmp_path, *VARIANTS["backend-only"])
    assert "port-forward" not in text and "helm test lt -n loadtest" in text


def test_test_hooks(helm):
    rendered = helm.render(None, *VARIANTS["web-auth"])
    pods = {p["metadata"]["name"]: p for p in rendered.of_kind("Pod")}
    assert set(pods) == {"lt-test-locust", "lt-test-backend"}
    for pod in pods.values():
        assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
        assert pod["spec"]["restartPolicy"] == "Never"
    env = {e["name"]: e for e in pods["lt-test-locust"]["spec"]["containers"][0]["env"]}
    assert env["MASTER_URL"]["value"] == "http://lt-locust-master:8089"
    assert env["EXPECTED_WORKERS"]["value"] == "2"
    assert web_auth_file(pods["lt-test-locust"]["spec"]) == "lt-locust-web-auth"
    assert [p["metadata"]["name"] for p in helm.render(None, *VARIANTS["backend-only"]).of_kind("Pod")] == [
        "lt-test-backend"]

"""The monitoring chart in both modes, offline: its rules under promtool, its objects under kubeconform (the
prometheus-operator CRDs' schemas included), its Prometheus configuration under promtool, least-privilege RBAC,
restricted pods, the Grafana password, and the Locust master's metrics plugin wiring."""
from __future__ import annotations

import base64
import re
import subprocess

import pytest
import schemas
import yaml
from test_render import assert_restricted  # the chart layer's Pod Security Standard "restricted" check

from loadtest import paths
from loadtest.generate import dashboards
from loadtest.judging import rules
from loadtest.runtime import tools

RELEASE = "lt"
MONITORING = ("--set", "monitoring.enabled=true")
OPERATOR = (*MONITORING, "--set", "monitoring.mode=operator", "--set", "monitoring.operator.release=kps")
INGRESS_TARGET = ("--set", "monitoring.targets.pods[0].namespace=ingress",
                  "--set", r"monitoring.targets.pods[0].selector.app\.kubernetes\.io/name=ingress-nginx",
                  "--set", "monitoring.targets.pods[0].port=metrics")
MODES = {"inChart": MONITORING, "operator": OPERATOR}
PROMTOOL_TESTS = sorted((paths.HOME / "tests" / "promtool").glob("*.yaml"))
MASTER = f"{RELEASE}-locust-master"
PLUGIN_REQUIREMENTS = paths.CHART / "charts" / "locust" / "plugin-requirements.txt"


@pytest.fixture(scope="module")
def promtool() -> str:
    """promtool of Debian's prometheus package (scripts/setup installs it)."""
    return tools.find("promtool")


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_rules_pass_promtool_check(promtool):
    result = run(promtool, "check", "rules", str(paths.RULES_FILE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules.rules())} rules found" in result.stdout


@pytest.mark.parametrize("tests", PROMTOOL_TESTS, ids=lambda p: p.name)
def test_rules_pass_their_promtool_unit_tests(promtool, tests):
    result = run(promtool, "test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def crd_schema_location() -> str:
    try:
        return schemas.crd_schema_location()
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)


def validate(kubeconform_path, locations, text, tmp_path) -> subprocess.CompletedProcess:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(text)
    argv = [kubeconform_path, "-strict", "-summary", "-kubernetes-version", "1.33.0"]
    for location in locations:
        argv += ["-schema-location", location]
    return run(*argv, str(manifest))


@pytest.mark.parametrize("mode", MODES)
def test_both_modes_validate_offline(helm, kubeconform, schema_location, crd_schema_location, mode, tmp_path):
    rendered = helm.render(None, *MODES[mode], *INGRESS_TARGET)
    result = validate(kubeconform, [schema_location, crd_schema_location], rendered.text, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = re.search(r"(\d+) resources? found.*Valid: (\d+), Invalid: 0, Errors: 0, Skipped: 0", result.stdout)
    assert summary and int(summary.group(1)) == int(summary.group(2)) == len(rendered.docs), result.stdout


def test_crd_schemas_reject_a_misspelt_field(kubeconform, schema_location, crd_schema_location, tmp_path):
    bad = ("apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: x}\n"
           "spec: {selector: {}, podMetricsEndpoints: [{port: metrics, intervall: 5s}]}\n")
    result = validate(kubeconform, [schema_location, crd_schema_location], bad, tmp_path)
    assert result.returncode == 1 and "intervall" in result.stdout, result.stdout + result.stderr


def test_monitoring_is_off_unless_enabled(helm):
    rendered = helm.render()
    assert not [d for d in rendered.docs if d["metadata"]["labels"].get("app.kubernetes.io/name") == "monitoring"]


def components(rendered) -> set[str]:
    return {d["metadata"]["labels"]["app.kubernetes.io/component"] for d in rendered.of_kind("Deployment")}


def test_in_chart_mode_runs_prometheus_grafana_and_kube_state_metrics(helm):
    rendered = helm.render(None, *MONITORING)
    assert {"prometheus", "grafana", "kube-state-metrics"} <= components(rendered)
    assert not [d for d in rendered.docs if d["apiVersion"].startswith("monitoring.coreos.com")]
    for where, spec in rendered.pod_specs():
        assert_restricted(where, spec)


def test_operator_mode_adds_only_objects_for_kube_prometheus_stack(helm):
    rendered = helm.render(None, *OPERATOR, *INGRESS_TARGET)
    assert not {"prometheus", "grafana", "kube-state-metrics"} & components(rendered)
    assert not rendered.of_kind("ClusterRole") and not rendered.of_kind("Role")
    monitors = {d["metadata"]["name"]: d for d in rendered.of_kind("PodMonitor")}
    assert set(monitors) == {f"{RELEASE}-{job}" for job in
                             ("locust-master", "backend", "nginx-ingress", "haproxy", "target-0")}
    for monitor in [*monitors.values(), *rendered.of_kind("PrometheusRule")]:
        assert monitor["metadata"]["labels"]["release"] == "kps"
    ingress = monitors[f"{RELEASE}-target-0"]["spec"]
    assert ingress["namespaceSelector"] == {"matchNames": ["ingress"]}
    assert ingress["selector"] == {"matchLabels": {"app.kubernetes.io/name": "ingress-nginx"}}
    (endpoint,) = ingress["podMetricsEndpoints"]
    target_deployment = {"sourceLabels": ["__meta_kubernetes_pod_label_loadtest_io_target_deployment"],
                         "targetLabel": "target_deployment"}
    assert {r["targetLabel"]: r.get("replacement") for r in endpoint["relabelings"]} == \
        {"release": RELEASE, "loadtest_role": "target", "target_deployment": None}
    master = monitors[f"{RELEASE}-locust-master"]["spec"]["podMetricsEndpoints"][0]["relabelings"]
    assert {r["targetLabel"]: r.get("replacement") for r in master} == \
        {"release": RELEASE, "loadtest_role": "generator", "target_deployment": None}
    assert target_deployment in master


def test_the_rules_file_is_what_both_modes_load(helm):
    source = yaml.safe_load(paths.RULES_FILE.read_text())
    (rule,) = helm.render(None, *OPERATOR).of_kind("PrometheusRule")
    assert rule["spec"] == source
    config = helm.render(None, *MONITORING).get("ConfigMap", f"{RELEASE}-prometheus")["data"]
    assert yaml.safe_load(config["loadtest.rules.yaml"]) == source


# Every look-back of the rules file: the ranges of its expressions and its alerts' `for:`.
RANGE = re.compile(r"\[([0-9]+[smh])\]")
FOR = re.compile(r"^\s+for: (\S+)$", re.M)


def rendered_rules(helm, *args: str) -> dict[str, str]:
    """The rules each mode loads, as text: the in-chart Prometheus' file and the PrometheusRule's spec."""
    config = helm.render(None, *MONITORING, *args).get("ConfigMap", f"{RELEASE}-prometheus")["data"]
    (rule,) = helm.render(None, *OPERATOR, *args).of_kind("PrometheusRule")
    return {"inChart": config["loadtest.rules.yaml"], "operator": yaml.safe_dump(rule["spec"])}


def test_every_look_back_of_the_rules_file_is_one_or_two_windows():
    """The templates scale `[1m]`, `[2m]`, `for: 1m` and `for: 2m` to monitoring.rules.windowSeconds: another
    duration in the file would keep its minutes in a release with a short window."""
    text = paths.RULES_FILE.read_text()
    assert set(RANGE.findall(text)) == {"1m", "2m"}
    assert set(FOR.findall(text)) == {"1m", "2m"}


def test_a_short_window_renders_every_range_and_for_short_in_both_modes(helm, promtool, tmp_path):
    """monitoring.rules.windowSeconds=30: each minute of the file becomes 30 s, each two minutes 60 s (whole minutes
    render as minutes), in the in-chart Prometheus' rules and in the PrometheusRule alike; nothing else changes."""
    short = ("--set", "monitoring.rules.windowSeconds=30", "--set", "monitoring.prometheus.scrapeInterval=5s")
    source = paths.RULES_FILE.read_text()
    for mode, text in rendered_rules(helm, *short).items():
        loaded = yaml.safe_load(text)
        assert set(RANGE.findall(text)) == {"30s", "1m"}, mode
        assert set(FOR.findall(text)) == {"30s", "1m"}, mode
        alerts = {r["alert"]: r for group in loaded["groups"] for r in group["rules"] if "alert" in r}
        assert alerts["LoadGeneratorSaturated"]["for"] == "1m", mode
        assert "[1m])" in alerts["LoadGeneratorSaturated"]["expr"], mode
        assert alerts["WorkersMissing"]["for"] == "30s", mode
        throttling = next(r["expr"] for g in loaded["groups"] for r in g["rules"]
                          if r.get("record") == "loadtest:worker_cpu_throttling:ratio")
        assert "[30s]" in throttling and "[1m]" not in throttling, mode
        # The same rules with the file's durations back: only the look-backs differ.
        back = RANGE.sub(lambda m: {"30s": "[1m]", "1m": "[2m]"}[m.group(1)], text)
        back = FOR.sub(lambda m: m.group(0).replace(m.group(1), {"30s": "1m", "1m": "2m"}[m.group(1)]), back)
        assert yaml.safe_load(back) == yaml.safe_load(source), mode
        (tmp_path / f"{mode}.rules.yaml").write_text(text)
        checked = run(promtool, "check", "rules", str(tmp_path / f"{mode}.rules.yaml"))
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_default_window_and_a_long_one_render_as_minutes(helm):
    assert {mode: yaml.safe_load(text) for mode, text in rendered_rules(helm).items()} == {
        mode: yaml.safe_load(paths.RULES_FILE.read_text()) for mode in MODES}
    for mode, text in rendered_rules(helm, "--set", "monitoring.rules.windowSeconds=120").items():
        assert set(RANGE.findall(text)) == {"2m", "4m"} and set(FOR.findall(text)) == {"2m", "4m"}, mode


@pytest.mark.parametrize("window, scrape, floor, fix", [("30", "15s", 60, "at most 7s"),
                                                        ("45", "30s", 60, "at most 11s"),
                                                        ("16", "5s", 20, "at most 4s")])
def test_a_window_of_too_few_scrapes_is_refused_with_the_fix(helm, window, scrape, floor, fix):
    stderr = helm.refusal(*MONITORING, "--set", f"monitoring.rules.windowSeconds={window}",
                          "--set", f"monitoring.prometheus.scrapeInterval={scrape}")
    assert (f"monitoring.rules.windowSeconds {window} holds fewer than four scrapes of "
            f"monitoring.prometheus.scrapeInterval {scrape}") in stderr, stderr
    assert f"set monitoring.rules.windowSeconds={floor} or more" in stderr and fix in stderr, stderr


def test_the_floor_is_four_scrapes_or_the_minute_the_file_is_written_for(helm):
    """Four scrapes render (20 s at 5 s); the default minute renders at the 30 s maximum scrape interval, as it did
    before the window was a value."""
    helm.render(None, *MONITORING, "--set", "monitoring.rules.windowSeconds=20",
                "--set", "monitoring.prometheus.scrapeInterval=5s")
    helm.render(None, *MONITORING, "--set", "monitoring.prometheus.scrapeInterval=30s")


@pytest.mark.parametrize("mode", MODES)
def test_dashboards_ship_as_generated(helm, mode):
    rendered = helm.render(None, *MODES[mode])
    shipped = {}
    for configmap in rendered.of_kind("ConfigMap"):
        name = configmap["metadata"]["name"]
        if name.startswith(f"{RELEASE}-dashboard-"):
            shipped.update(configmap["data"])
            sidecar = configmap["metadata"]["labels"].get("grafana_dashboard")
            assert sidecar == ("1" if mode == "operator" else None), name
    assert shipped == {p.name: p.read_text() for p in dashboards.FOLDER.glob("*.json")}


def test_prometheus_config_passes_promtool(helm, promtool, tmp_path):
    data = helm.render(None, *MONITORING, *INGRESS_TARGET).get("ConfigMap", f"{RELEASE}-prometheus")["data"]
    config = yaml.safe_load(data["prometheus.yml"])
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert set(jobs) == {"locust-master", "backend", "nginx-ingress", "haproxy", "target-0", "kube-state-metrics",
                         "cadvisor"}
    ingress = jobs["target-0"]["kubernetes_sd_configs"]
    assert ingress == [{"role": "pod", "namespaces": {"names": ["ingress"]},
                        "selectors": [{"role": "pod", "label": "app.kubernetes.io/name=ingress-nginx"}]}]
    assert jobs["cadvisor"]["kubernetes_sd_configs"] == [{"role": "node"}]
    # Made checkable here: Debian's promtool is built without Kubernetes service discovery, so the (checked above)
    # discovery blocks become static targets; the rules sit beside the config, the token and CA where promtool reads.
    (tmp_path / "loadtest.rules.yaml").write_text(data["loadtest.rules.yaml"])
    (tmp_path / "token").write_text("token")
    (tmp_path / "ca.crt").write_text("")
    config["rule_files"] = [str(tmp_path / "loadtest.rules.yaml")]
    for job in config["scrape_configs"]:
        if job.pop("kubernetes_sd_configs", None):
            job["static_configs"] = [{"targets": ["127.0.0.1:9"]}]
        if "authorization" in job:
            job["authorization"]["credentials_file"] = str(tmp_path / "token")
            job["tls_config"]["ca_file"] = str(tmp_path / "ca.crt")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    result = run(promtool, "check", "config", str(tmp_path / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_rbac_is_least_privilege(helm):
    rendered = helm.render(None, *MONITORING, *INGRESS_TARGET)
    cluster_rules = {d["metadata"]["name"]: d["rules"] for d in rendered.of_kind("ClusterRole")}
    assert cluster_rules == {
        f"loadtest-{RELEASE}-prometheus": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
            {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]}],
        f"loadtest-{RELEASE}-kube-state-metrics": [
            {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "watch"]},
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list", "watch"]}],
    }
    roles = {d["metadata"]["namespace"]: d["rules"] for d in rendered.of_kind("Role")}
    assert roles == {ns: [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]
                     for ns in ("loadtest", "ingress")}
    for account in rendered.of_kind("ServiceAccount"):
        assert account["automountServiceAccountToken"] is False
    # Only the two API clients get a token, through a projected volume.
    with_token = {name for name, spec in rendered.pod_specs()
                  if any("serviceAccountToken" in str(v.get("projected", "")) for v in spec.get("volumes", []))}
    assert with_token == {f"Deployment/{RELEASE}-prometheus", f"Deployment/{RELEASE}-kube-state-metrics"}


def test_grafana_password_is_generated_never_a_default(helm):
    rendered = helm.render(None, *MONITORING)
    secret = rendered.get("Secret", f"{RELEASE}-grafana-admin")["data"]
    assert base64.b64decode(secret["admin-user"]).decode() == "admin"
    password = base64.b64decode(secret["admin-password"]).decode()
    assert re.fullmatch(r"[A-Za-z0-9]{24}", password) and password not in rendered.text
    assert grafana_admin_secret(rendered) == f"{RELEASE}-grafana-admin"


def grafana_admin_secret(rendered) -> str:
    """The Secret Grafana reads its admin's name and password from: files of a read-only mount, never env."""
    spec = rendered.get("Deployment", f"{RELEASE}-grafana")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["GF_SECURITY_ADMIN_PASSWORD__FILE"]["value"] == "/etc/grafana/admin/admin-password"
    assert env["GF_SECURITY_ADMIN_USER__FILE"]["value"] == "/etc/grafana/admin/admin-user"
    assert not [e for e in container["env"] if "valueFrom" in e or e["name"] == "GF_SECURITY_ADMIN_PASSWORD"]
    assert env["GF_AUTH_ANONYMOUS_ENABLED"]["value"] == "false"
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/etc/grafana/admin"]
    assert mount["readOnly"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    return volume["secret"]["secretName"]


def test_grafana_existing_secret(helm):
    rendered = helm.render(None, *MONITORING, "--set", "monitoring.grafana.existingSecret=grafana-login")
    assert not [s for s in rendered.of_kind("Secret") if "grafana" in s["metadata"]["name"]]
    assert grafana_admin_secret(rendered) == "grafana-login"


def test_monitoring_pods_stay_off_the_generator_nodes(helm):
    rendered = helm.render(None, *MONITORING, "--set", "monitoring.nodeType=m5.large",
                           "--set", "locust.nodeType=c5.xlarge")
    for component in ("prometheus", "grafana", "kube-state-metrics"):
        spec = rendered.get("Deployment", f"{RELEASE}-{component}")["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "m5.large"}, component


def master_pod(rendered) -> dict:
    return rendered.get("Deployment", MASTER)["spec"]["template"]["spec"]


def test_master_installs_the_pinned_plugin_dependency_and_serves_metrics(helm):
    spec = master_pod(helm.render())
    (container,) = spec["containers"]
    assert {"name": "metrics", "containerPort": 9646, "protocol": "TCP"} in container["ports"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["LOADTEST_METRICS_PORT"] == "9646"
    assert env["PYTHONPATH"] == "/home/locust/locustfiles:/home/locust/shared:/home/locust/packages"
    (init,) = spec["initContainers"]
    assert init["image"] == container["image"]
    script = " ".join(init["command"] + init.get("args", []))
    assert "--require-hashes" in script and "--target /home/locust/packages" in script
    requirements = {e["name"]: e.get("value") for e in init["env"]}["REQUIREMENTS"]
    assert requirements == PLUGIN_REQUIREMENTS.read_text().strip()
    assert re.search(r"^prometheus-client==0\.26\.0 \\\n\s+--hash=sha256:[0-9a-f]{64}$", requirements, re.M)
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["packages"]["readOnly"] is True


def test_an_image_with_the_packages_baked_in_replaces_the_init_containers_of_master_and_workers(helm):
    image = "registry.example.com/loadtest-locust:2.47.0"
    rendered = helm.render(None, "--set", f"locust.packages.image={image}")
    for pod in (master_pod(rendered), rendered.get("Deployment", f"{RELEASE}-locust-worker")["spec"]["template"]["spec"]):
        assert "initContainers" not in pod
        (container,) = pod["containers"]
        assert container["image"] == image
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["PYTHONPATH"] == "/home/locust/locustfiles:/home/locust/shared"
        assert "packages" not in {v["name"] for v in pod["volumes"]}


def test_dockerfile_installs_the_same_pinned_requirements():
    dockerfile = (paths.HOME / "docker" / "locust" / "Dockerfile").read_text()
    assert f"COPY {PLUGIN_REQUIREMENTS.relative_to(paths.HOME)} " in dockerfile
    assert "--require-hashes" in dockerfile
    locust_tag = yaml.safe_load((paths.CHART / "charts" / "locust" / "values.yaml").read_text())["image"]["tag"]
    assert re.search(rf"^FROM docker\.io/locustio/locust:{re.escape(locust_tag)}$", dockerfile, re.M)


def test_values_schema_rejects_an_unknown_mode(helm):
    result = helm.template(*MONITORING, "--set", "monitoring.mode=sidecar")
    assert result.returncode != 0 and "mode" in result.stderr


def test_prometheus_can_keep_its_samples_on_a_claim_that_outlives_the_release(helm):
    default = helm.render(None, *MONITORING)
    assert default.of_kind("PersistentVolumeClaim") == []
    rendered = helm.render(None, *MONITORING, "--set", "monitoring.prometheus.persistence.enabled=true",
                           "--set", "monitoring.prometheus.storageSize=20Gi")
    claim = rendered.get("PersistentVolumeClaim", f"{RELEASE}-prometheus")
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert claim["spec"]["resources"]["requests"]["storage"] == "20Gi" and "storageClassName" not in claim["spec"]
    spec = rendered.get("Deployment", f"{RELEASE}-prometheus")["spec"]
    assert spec["strategy"]["type"] == "Recreate"  # one writer of the TSDB at a time
    (data,) = [v for v in spec["template"]["spec"]["volumes"] if v["name"] == "data"]
    assert data == {"name": "data", "persistentVolumeClaim": {"claimName": f"{RELEASE}-prometheus"}}

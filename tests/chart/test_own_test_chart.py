"""Your own test in the chart (locust.test, locust.packages, extraEnv, envFrom, secretMounts): what reaches the
master and the workers, and every bad input refused before anything is deployed, naming the value and the fix."""
from __future__ import annotations

import re

import pytest
from requirement_cases import REQUIREMENTS

from loadtest import paths
from loadtest.workload import usertest

RELEASE = "lt"
SHOP = paths.HOME / "examples" / "shop"
OWN_TEST = ("--set-file", f"locust.test.files.locustfile={SHOP / 'locustfile.py'}",
            "--set-file", f"locust.test.files.shop_client={SHOP / 'shop_client.py'}")
REQUIREMENTS_FILE = ("--set-file", f"locust.packages.requirements={SHOP / 'requirements.txt'}")
SECRETS = ("--set", "locust.extraEnv[0].name=SHOP_SIGNING_KEY",
           "--set", "locust.extraEnv[0].valueFrom.secretKeyRef.name=shop",
           "--set", "locust.extraEnv[0].valueFrom.secretKeyRef.key=signing-key",
           "--set", "locust.envFrom[0].configMapRef.name=shop-settings",
           "--set", "locust.secretMounts[0].secretName=shop-ca", "--set", "locust.secretMounts[0].mountPath=/etc/shop")


def pods(rendered) -> dict[str, dict]:
    return {kind: rendered.get("Deployment", f"{RELEASE}-locust-{kind}")["spec"]["template"]["spec"]
            for kind in ("master", "worker")}


def test_the_users_files_reach_master_and_workers_with_the_plugin_beside_them(helm):
    rendered = helm.render(None, *OWN_TEST)
    configmap = rendered.get("ConfigMap", f"{RELEASE}-locust-test")
    assert configmap["data"] == {"locustfile.py": (SHOP / "locustfile.py").read_text(),
                                 "shop_client.py": (SHOP / "shop_client.py").read_text()}
    for kind, spec in pods(rendered).items():
        (container,) = spec["containers"]
        assert container["args"][0] == ("--locustfile=/home/locust/test/locustfile.py,"
                                        f"/home/locust/locustfiles/{usertest.PLUGIN}"), kind
        mounts = {m["name"]: (m["mountPath"], m.get("readOnly")) for m in container["volumeMounts"]}
        assert mounts["test"] == ("/home/locust/test", True) and mounts["locustfiles"][1] is True
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["test"]["configMap"]["name"] == f"{RELEASE}-locust-test"
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["PYTHONPATH"].split(":")[:2] == ["/home/locust/test", "/home/locust/locustfiles"], kind
    # a change to the user's files rolls the pods
    changed = helm.render(None, *OWN_TEST, "--set", "locust.test.files.extra=x = 1")
    for kind in ("master", "worker"):
        annotations = [r.get("Deployment", f"{RELEASE}-locust-{kind}")["spec"]["template"]["metadata"]["annotations"]
                       for r in (rendered, changed)]
        assert annotations[0]["checksum/test"] != annotations[1]["checksum/test"]


def test_an_existing_configmap_and_a_library_replace_the_files(helm):
    rendered = helm.render(None, "--set", "locust.test.existingConfigMap=my-test", "--set", "locust.test.main=shop",
                           "--set", "locust.test.libraryConfigMap=shop-lib")
    assert [c for c in rendered.of_kind("ConfigMap") if c["metadata"]["name"].endswith("-locust-test")] == []
    for spec in pods(rendered).values():
        (container,) = spec["containers"]
        assert container["args"][0].startswith("--locustfile=/home/locust/test/shop.py,")
        volumes = {v["name"]: v.get("configMap", {}).get("name") for v in spec["volumes"]}
        assert volumes["test"] == "my-test" and volumes["library"] == "shop-lib"
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["PYTHONPATH"].startswith("/home/locust/test:/home/locust/library:/home/locust/locustfiles")


def test_the_built_in_scenario_stays_the_default_and_the_step_load_goes_with_either(helm):
    for spec in pods(helm.render()).values():
        assert spec["containers"][0]["args"][0] == "--locustfile=/home/locust/locustfiles/keepalive_1kb.py"
    stepped = helm.render(None, *OWN_TEST, "--set", "locust.stepLoad.enabled=true")
    for spec in pods(stepped).values():
        assert spec["containers"][0]["args"][0].endswith(f"{usertest.PLUGIN},/home/locust/locustfiles/loadtest_shapes.py")


def test_packages_are_installed_hash_checked_in_master_and_workers(helm):
    rendered = helm.render(None, *OWN_TEST, *REQUIREMENTS_FILE)
    plugin = (paths.CHART / "charts" / "locust" / "plugin-requirements.txt").read_text().strip()
    mine = (SHOP / "requirements.txt").read_text().strip()
    for kind, spec in pods(rendered).items():
        (init,) = spec["initContainers"]
        requirements = {e["name"]: e.get("value") for e in init["env"]}["REQUIREMENTS"]
        assert requirements == (f"{plugin}\n{mine}" if kind == "master" else mine), kind
        assert "--require-hashes" in init["command"][-1] and "--only-binary=:all:" in init["command"][-1]
        (container,) = spec["containers"]
        assert init["image"] == container["image"]
        assert {e["name"]: e.get("value") for e in container["env"]}["PYTHONPATH"].endswith(":/home/locust/packages")
    # without packages of the user's, a worker has no init container at all
    assert "initContainers" not in pods(helm.render(None, *OWN_TEST))["worker"]


def test_env_and_secrets_reach_both_pod_kinds_and_no_secret_is_in_the_rendered_manifests(helm):
    rendered = helm.render(None, *OWN_TEST, *SECRETS)
    for kind, spec in pods(rendered).items():
        (container,) = spec["containers"]
        (key,) = [e for e in container["env"] if e["name"] == "SHOP_SIGNING_KEY"]
        assert key == {"name": "SHOP_SIGNING_KEY", "valueFrom": {"secretKeyRef": {"name": "shop", "key": "signing-key"}}}
        assert container["envFrom"] == [{"configMapRef": {"name": "shop-settings"}}]
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        assert mounts["secret-0"] == {"name": "secret-0", "mountPath": "/etc/shop", "readOnly": True}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["secret-0"]["secret"] == {"secretName": "shop-ca", "defaultMode": 0o440}


# id: (helm arguments, what the refusal must say)
REFUSED = {
    "missing-file": (["--set-file", "locust.test.files.locustfile=/nonexistent/locustfile.py"],
                     "open /nonexistent/locustfile.py: no such file"),
    "main-not-among-files": (["--set-file", f"locust.test.files.shop={SHOP / 'locustfile.py'}"],
                             'locust.test.main "locustfile": locust.test.files has no such module (it has shop)'),
    "no-user-class": (["--set-file", f"locust.test.files.locustfile={SHOP / 'shop_client.py'}"],
                      "locust.test.files.locustfile names no User class"),
    "files-and-configmap": ([*OWN_TEST, "--set", "locust.test.existingConfigMap=mine"],
                            "drop locust.test.existingConfigMap to use the files"),
    "shadows-a-module": (["--set-file", f"locust.test.files.leanhttp={SHOP / 'locustfile.py'}",
                          "--set", "locust.test.main=leanhttp"], "would shadow the project's module leanhttp.py"),
    "module-name": (["--set", "locust.test.files.my-test=x"], "Additional property my-test is not allowed"),
    "package-without-hash": (["--set", "locust.packages.requirements=pyjwt==2.10.1"],
                             '"pyjwt==2.10.1": every requirement needs an exact pin and its hash'),
    "packages-and-image": ([*REQUIREMENTS_FILE, "--set", "locust.packages.image=registry.example.com/locust:1"],
                           "drop locust.packages.requirements (bake them into the image)"),
    "env-the-chart-sets": (["--set", "locust.extraEnv[0].name=LOADTEST_WEB_AUTH_FILE",
                            "--set", "locust.extraEnv[0].value=/dev/null"],
                           "locust.extraEnv[0].name LOADTEST_WEB_AUTH_FILE: the chart sets it"),
    "secret-over-the-test": (["--set", "locust.secretMounts[0].secretName=s",
                              "--set", "locust.secretMounts[0].mountPath=/home/locust/test"],
                             "locust.secretMounts[0].mountPath /home/locust/test: the pod uses"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_bad_test_values_are_refused_naming_the_value_and_the_fix(helm, case):
    helm.assert_refused(*REFUSED[case])


def test_a_configmap_over_the_kubernetes_limit_is_refused(helm, tmp_path):
    big = tmp_path / "locustfile.py"
    big.write_text("from locust import HttpUser\n" + "#" * usertest.CONFIGMAP_LIMIT_BYTES + "\n")
    stderr = helm.refusal("--set-file", f"locust.test.files.locustfile={big}")
    assert re.search(r"locust.test.files: \d+ bytes, over the 1 MiB a Kubernetes ConfigMap holds", stderr)


@pytest.mark.parametrize("text", REQUIREMENTS)
def test_the_chart_and_the_cli_agree_on_which_requirements_are_pinned(helm, text, tmp_path):
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    result = helm.template("--set-file", f"locust.packages.requirements={path}")
    assert (result.returncode == 0) is REQUIREMENTS[text], result.stderr

"""A user's own test installs on the real API server under Pod Security "restricted": its files, env and Secrets
reach the master and every worker as the chart rendered them, and the pods schedule beside the built-in objects.

KWOK pods run no containers, so that the example runs in pods is not shown here: no real node runs in this layer."""
from __future__ import annotations

from scheduling import assert_all_running

from loadtest import paths
from loadtest.capacity import profiles
from loadtest.workload import usertest

RELEASE = "lt"
PROFILE = profiles.by_file("c5-xlarge.yaml")
SHOP = paths.HOME / "examples" / "shop"


def test_the_users_test_with_its_packages_env_and_secrets_admits_restricted(cluster, node_group, namespace, helm):
    node_group(PROFILE)
    cluster.apply([
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop", "namespace": namespace},
         "stringData": {"signing-key": "not-a-real-key"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-settings", "namespace": namespace},
         "data": {"LOADTEST_CATALOG_PATH": "/16kb"}},
    ])
    helm("install", RELEASE, str(paths.CHART), "-n", namespace, "-f", str(paths.VALUES / PROFILE.file),
         "--set-file", f"locust.test.files.locustfile={SHOP / 'locustfile.py'}",
         "--set-file", f"locust.test.files.shop_client={SHOP / 'shop_client.py'}",
         "--set-file", f"locust.packages.requirements={SHOP / 'requirements.txt'}",
         "--set", "locust.extraEnv[0].name=SHOP_SIGNING_KEY",
         "--set", "locust.extraEnv[0].valueFrom.secretKeyRef.name=shop",
         "--set", "locust.extraEnv[0].valueFrom.secretKeyRef.key=signing-key",
         "--set", "locust.envFrom[0].configMapRef.name=shop-settings",
         "--set", "locust.secretMounts[0].secretName=shop", "--set", "locust.secretMounts[0].mountPath=/etc/shop",
         "--wait", "--timeout", "120s")
    pods = assert_all_running(cluster, namespace, "app.kubernetes.io/component in (locust-master,locust-worker)")
    kinds = [p["metadata"]["labels"]["app.kubernetes.io/component"] for p in pods]
    assert sorted(set(kinds)) == ["locust-master", "locust-worker"]
    assert kinds.count("locust-worker") == PROFILE.plan.replicas
    stored = cluster.api_get(f"/api/v1/namespaces/{namespace}/configmaps/{RELEASE}-locust-test")["data"]
    assert stored == {"locustfile.py": (SHOP / "locustfile.py").read_text(),
                      "shop_client.py": (SHOP / "shop_client.py").read_text()}
    for pod in pods:
        spec = pod["spec"]
        (container,) = spec["containers"]
        assert container["args"][0] == (f"--locustfile=/home/locust/test/locustfile.py,"
                                        f"/home/locust/locustfiles/{usertest.PLUGIN}")
        env = {e["name"]: e for e in container["env"]}
        assert env["SHOP_SIGNING_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "shop", "key": "signing-key"}
        assert container["envFrom"] == [{"configMapRef": {"name": "shop-settings"}}]
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["test"]["configMap"]["name"] == f"{RELEASE}-locust-test"
        assert volumes["secret-0"]["secret"]["secretName"] == "shop"
        (init,) = spec["initContainers"]  # the packages, in the master and in every worker
        assert "pyjwt==2.10.1" in {e["name"]: e.get("value") for e in init["env"]}["REQUIREMENTS"]
        assert all(c["securityContext"]["runAsNonRoot"] for c in (container, init))

"""Marks every test with the layer its folder names, so `pytest -m unit` (or chart, cluster, dataplane, node) runs one
layer; and the fixtures the two layers with a cluster share (each gives its own `cluster`)."""
import contextlib
import hashlib
import pathlib
import re
import subprocess
import sys

import pytest

from loadtest import paths
from loadtest.runtime import tools
from loadtest.runtime.cluster import pods, wait_for

# The pods' modules, imported by name as the pods import them (the chart's ConfigMap folder is on their PYTHONPATH).
sys.path.insert(0, str(paths.PLUGIN))

LAYERS = ("unit", "chart", "cluster", "dataplane", "node", "faults", "journeys")


def pytest_collection_modifyitems(items):
    for item in items:
        layer = pathlib.Path(str(item.fspath)).relative_to(pathlib.Path(__file__).parent).parts[0]
        if layer in LAYERS:
            item.add_marker(getattr(pytest.mark, layer))


@pytest.fixture(scope="session")
def wait_for_namespace_deletion() -> bool:
    """Whether a test waits until its namespace's pods are gone (a layer whose node is full until then says so)."""
    return False


@contextlib.contextmanager
def fresh_namespace(cluster, title: str, wait_for_deletion: bool):
    """A fresh namespace named after `title`, enforcing the restricted Pod Security Standard, as in production."""
    with fresh_namespaces(cluster, [title], wait_for_deletion) as (name,):
        yield name


@contextlib.contextmanager
def fresh_namespaces(cluster, titles: list[str], wait_for_deletion: bool):
    """Fresh namespaces named after `titles` (as fresh_namespace's), deleted together."""
    names = []
    for title in titles:
        slug = re.sub(r"[^a-z0-9-]+", "-", title.lower()).strip("-")
        # Namespace names stop at 63 characters; the hash keeps truncated parametrized names apart.
        name = f"{slug[:54].rstrip('-')}-{hashlib.sha1(slug.encode()).hexdigest()[:8]}"
        cluster.kubectl("create", "namespace", name)
        cluster.kubectl("label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted")
        names.append(name)
    yield tuple(names)
    for name in names:
        cluster.kubectl("delete", "namespace", name, "--wait=false", timeout=180)
    if wait_for_deletion:
        for name in names:
            # Its pods' graceful stops (up to their 30 s, 7-13 s a namespace on the real node) are not what a test
            # measures: cut to a second. The namespace is terminating first, so no controller replaces them.
            cluster.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=1", "--wait=false", timeout=60)
        # What holds a node's CPU is the namespaces' pods (a terminating namespace takes no new one): their end is
        # the condition, not the namespace controller's last sweep some seconds later.
        for name in names:
            wait_for(f"the pods of namespace {name} to be gone", lambda: not pods(cluster, name), 180,
                     lambda: ", ".join(p["metadata"]["name"] for p in pods(cluster, name)))


@pytest.fixture
def namespace(cluster, request, wait_for_namespace_deletion) -> str:
    with fresh_namespace(cluster, request.node.name, wait_for_namespace_deletion) as name:
        yield name


@pytest.fixture(scope="module")
def module_namespace_pair(cluster, request, wait_for_namespace_deletion) -> tuple[str, str]:
    """Two fresh namespaces for the tests of a module that share two releases (one run from both)."""
    with fresh_namespaces(cluster, [f"{request.module.__name__}-{n}" for n in (1, 2)],
                          wait_for_namespace_deletion) as names:
        yield names


@pytest.fixture(scope="module")
def module_namespace(cluster, request, wait_for_namespace_deletion) -> str:
    """One fresh namespace for the tests of a module that share one release."""
    with fresh_namespace(cluster, request.module.__name__, wait_for_namespace_deletion) as name:
        yield name


@pytest.fixture(scope="module")
def helm(cluster):
    """helm(*args): run helm against the cluster; a failure fails the test with helm's output. (Per module: each
    layer has its own `cluster`, and a session-wide helm would keep the first layer's.)"""
    binary = tools.find("helm")

    def run(*args: str, timeout: float = 300) -> str:
        # helm checks an install's or upgrade's objects against the API server's OpenAPI document, which it fetches
        # and parses each time: 2 CPU-seconds an install and 4 an upgrade here, and the API server's serving of it
        # besides, most of the cluster layer's CPU. The chart layer checks every values file's and variant's objects
        # offline (kubeconform -strict, tests/chart/test_render.py), and the journeys install as a user types it.
        checked_offline = ("--disable-openapi-validation",) if args and args[0] in ("install", "upgrade") else ()
        result = subprocess.run([binary, "--kubeconfig", str(cluster.kubeconfig), *args, *checked_offline],
                                capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            pytest.fail(f"helm {' '.join(args)} failed:\n{result.stdout}{result.stderr}", pytrace=False)
        return result.stdout

    return run


# A CPU hog spins at most this long, whatever happens to the test beside it.
HOG_LIMIT_S = 900


@pytest.fixture
def cpu_hog():
    """One process at 100 % of a core for the test's length (HOG_LIMIT_S at most): a judgement asserted beside it
    holds on a busy machine too, as CI's and a user's often are."""
    proc = subprocess.Popen(
        ["python3", "-c", f"import time\nend = time.monotonic() + {HOG_LIMIT_S}\nwhile time.monotonic() < end: pass"],
        stdin=subprocess.DEVNULL)
    yield proc
    proc.kill()
    proc.wait()

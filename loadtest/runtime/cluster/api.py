"""Reaching a running cluster: GETs against the apiserver's REST API, kubectl for everything else, and polling.

The REST client is for reads in polling loops (cheaper than a kubectl process each time); writes go through
`kubectl apply`, which knows every kind's merge rules.
"""
from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.parse
from pathlib import Path
from typing import Callable

from .. import http_client, tools
from . import pki as pki_files
from .errors import ClusterError


class ApiClient:
    """A cluster's apiserver at `server`, as cluster admin (client certificates in `pki`, the same in `kubeconfig`)."""

    def __init__(self, server: str, pki: Path, kubeconfig: Path):
        self.server, self.pki, self.kubeconfig = server, pki, kubeconfig
        self._ssl: ssl.SSLContext | None = None

    @property
    def tls(self) -> ssl.SSLContext:
        # Importing Locust swaps the ssl module for gevent's (monkey.patch_all): a context made before that cannot
        # wrap the sockets made after it ("super(type, obj): obj must be an instance..."), so it is made anew.
        if not isinstance(self._ssl, ssl.SSLContext):
            self._ssl = pki_files.admin_context(self.pki)
        return self._ssl

    def api_get(self, path: str, **query: str) -> dict:
        """GET from the apiserver as cluster admin; cheaper than a kubectl process when polling."""
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        return json.loads(http_client.fetch(url, context=self.tls, timeout=30))

    def exists(self, path: str) -> bool:
        try:
            self.api_get(path)
            return True
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise

    def ready(self) -> bool:
        return get_ok(f"{self.server}/readyz", self.tls)

    def kubectl_argv(self, *args: str) -> list[str]:
        return [tools.find("kubectl"), "--kubeconfig", str(self.kubeconfig), *args]

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 120) -> str:
        """Run kubectl against this cluster; a failure raises ClusterError with kubectl's message."""
        return tools.run("kubectl", "--kubeconfig", str(self.kubeconfig), *args, input=input, timeout=timeout,
                         error=ClusterError)

    def apply(self, objects: list[dict]) -> None:
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def get_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    """Whether `url` answers 200 now (a health or readiness probe)."""
    return http_client.status(url, timeout=2, context=context) == 200  # not refused, reset, half an answer or HTTP 500


def ready(obj: dict) -> bool:
    """Whether a node or a pod has the condition Ready=True."""
    return any(c["type"] == "Ready" and c["status"] == "True" for c in obj["status"].get("conditions", []))


def pods(client, namespace: str, selector: str = "") -> list[dict]:
    """The pods in `namespace` matching the label selector; `client` is a Cluster or an ApiClient."""
    return client.api_get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)["items"]


def wait_for(what: str, done: Callable[[], bool], timeout: float, describe: Callable[[], str]) -> None:
    """Poll done() until it is true; after `timeout` raise ClusterError with describe() saying what is missing."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}: {describe()}")
        time.sleep(0.2)

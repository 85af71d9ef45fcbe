"""An installed release of the chart, reached as its user reaches it: helm for its values, kubectl for the web UI's
Secret and for port-forwards the caller opens and this module closes (a port-forward is a kubectl process, ended by
its PID however the run ends)."""
from __future__ import annotations

import base64
import contextlib
import json
import os
import selectors
import subprocess
import time
from pathlib import Path

from ..errors import RunFailed
from . import tools
from .locustweb import CREDENTIALS_ENV

PORT_FORWARD_TIMEOUT_S = 30


class ReleaseError(RunFailed):
    pass


class Release:
    def __init__(self, name: str, namespace: str, kubeconfig: Path | None = None):
        self.name, self.namespace, self.kubeconfig = name, namespace, kubeconfig

    def _run(self, tool: str, *args: str, timeout: float) -> str:
        where = ("-n", self.namespace, *(("--kubeconfig", str(self.kubeconfig)) if self.kubeconfig else ()))
        return tools.run(tool, *args, *where, timeout=timeout, error=ReleaseError, shown=2)

    def helm(self, *args: str, timeout: float = 900) -> str:
        return self._run("helm", *args, timeout=timeout)

    def kubectl(self, *args: str, timeout: float = 60) -> str:
        return self._run("kubectl", *args, timeout=timeout)

    def values(self) -> dict:
        """The release's values, defaults included (helm get values --all)."""
        try:
            return json.loads(self.helm("get", "values", self.name, "--all", "-o", "json") or "{}")
        except ReleaseError as e:
            if "not found" in str(e):
                raise ReleaseError(f"no release {self.name!r} in namespace {self.namespace}: install it first, "
                                   "or see `helm list -A`") from None
            raise

    def labelled(self, kind: str, component: str, where=lambda obj: True) -> dict:
        """The release's one object of a kind and component (by its app.kubernetes.io labels, whatever its name)
        for which where(object) holds."""
        found = [obj for obj in json.loads(self.kubectl("get", kind, "-o", "json", "-l",
                                                        f"app.kubernetes.io/instance={self.name},"
                                                        f"app.kubernetes.io/component={component}"))["items"]
                 if where(obj)]
        if len(found) != 1:
            raise ReleaseError(f"release {self.name} has {len(found)} {component} {kind}(s) in namespace "
                               f"{self.namespace}, not one")
        return found[0]

    def web_credentials(self) -> str | None:
        """The web UI's "user:password": from the environment if set, else from the Secret the master mounts (None
        when the master has web authentication off)."""
        if os.environ.get(CREDENTIALS_ENV):
            return os.environ[CREDENTIALS_ENV]
        volumes = self.labelled("deployment", "locust-master")["spec"]["template"]["spec"].get("volumes", [])
        secrets = [v["secret"]["secretName"] for v in volumes if v["name"] == "web-auth"]
        if not secrets:
            return None
        secret = secrets[0]
        try:
            encoded = self.kubectl("get", "secret", secret, "-o", "jsonpath={.data.credentials}")
        except ReleaseError as e:
            raise ReleaseError(f"cannot read the web UI's credentials from Secret {secret} ({e}); export "
                               f"{CREDENTIALS_ENV}=user:password instead") from None
        return base64.b64decode(encoded).decode()

    @contextlib.contextmanager
    def port_forward(self, component: str, port_name: str):
        """`kubectl port-forward` to the component's Service port `port_name` on a free 127.0.0.1 port; yields the
        local http:// URL and stops kubectl on exit."""
        service = self.labelled("service", component,
                                lambda svc: any(p["name"] == port_name for p in svc["spec"]["ports"]))
        (port,) = [p["port"] for p in service["spec"]["ports"] if p["name"] == port_name]
        cmd = [tools.find("kubectl"), "port-forward", "-n", self.namespace, "--address", "127.0.0.1",
               f"service/{service['metadata']['name']}", f":{port}"]
        if self.kubeconfig:
            cmd += ["--kubeconfig", str(self.kubeconfig)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            yield f"http://127.0.0.1:{_forwarded_port(proc, service['metadata']['name'])}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _forwarded_port(proc: subprocess.Popen, service: str) -> int:
    """The local port from kubectl's "Forwarding from 127.0.0.1:PORT -> ..." line."""
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + PORT_FORWARD_TIMEOUT_S
    while (left := deadline - time.monotonic()) > 0 and selector.select(left):
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("Forwarding from 127.0.0.1:"):
            return int(line.split(":", 1)[1].split()[0])
    proc.kill()
    _, err = proc.communicate()
    raise ReleaseError(f"kubectl port-forward to service/{service} did not start within "
                       f"{PORT_FORWARD_TIMEOUT_S} s: {err.strip() or 'no output'}")

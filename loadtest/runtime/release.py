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
import threading
import time
from pathlib import Path

from ..errors import RunFailed, UsageError
from . import tools
from .locustweb import CREDENTIALS_ENV

PORT_FORWARD_TIMEOUT_S = 30
UPGRADE_TIMEOUT = "10m"
CONTEXT_FLAG = {"kubectl": "--context", "helm": "--kube-context"}


class ReleaseError(RunFailed):
    pass


class ReleaseMissing(ReleaseError, UsageError):
    """A release, or a kube context, that is not there: bad input (exit 2), nothing ran."""


def contexts(kubeconfig: Path | None = None) -> dict[str, str | None]:
    """The kube contexts of the kubeconfig (kubectl's own when None), each with its namespace (None: none set)."""
    config = json.loads(tools.run("kubectl", "config", "view", "-o", "json",
                                  *(("--kubeconfig", str(kubeconfig)) if kubeconfig else ()), error=ReleaseError))
    return {c["name"]: (c.get("context") or {}).get("namespace") for c in config.get("contexts") or []}


def resolve(regions, namespace: str | None, kubeconfig: Path | None = None) -> list["Release"]:
    """The releases the user named (loadtest.workload.regions.Region), each with its namespace: its own, else
    `namespace`, else its context's, else "default". A context the kubeconfig does not have is refused."""
    known = contexts(kubeconfig) if any(r.context for r in regions) else {}
    config = kubeconfig or "kubectl's kubeconfig"
    found = []
    for r in regions:
        if r.context and r.context not in known:
            raise ReleaseMissing(f"--release {r.name}@{r.context}: no kube context {r.context!r} in "
                                 f"{config}; one of {', '.join(sorted(known)) or 'none'} "
                                 "(kubectl config get-contexts)")
        found.append(Release(r.name, r.namespace or namespace or (known.get(r.context) if r.context else None)
                             or "default", kubeconfig, r.context))
    return found


class Release:
    def __init__(self, name: str, namespace: str, kubeconfig: Path | None = None, context: str | None = None):
        self.name, self.namespace, self.kubeconfig, self.context = name, namespace, kubeconfig, context

    def where(self, tool: str) -> tuple[str, ...]:
        """The flags that point `tool` at the release's cluster and namespace (helm names the context its own way)."""
        return ("-n", self.namespace, *(("--kubeconfig", str(self.kubeconfig)) if self.kubeconfig else ()),
                *((CONTEXT_FLAG[tool], self.context) if self.context else ()))

    def _run(self, tool: str, *args: str, timeout: float) -> str:
        return tools.run(tool, *args, *self.where(tool), timeout=timeout, error=ReleaseError, shown=2)

    def helm(self, *args: str, timeout: float = 900) -> str:
        return self._run("helm", *args, timeout=timeout)

    def kubectl(self, *args: str, timeout: float = 60) -> str:
        return self._run("kubectl", *args, timeout=timeout)

    def upgrade(self, chart: Path, settings: dict[str, object]) -> None:
        """helm upgrade --reuse-values with `settings`, waiting until every changed Deployment is rolled out."""
        sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
        self.helm("upgrade", self.name, str(chart), "--reuse-values", *sets, "--wait", "--timeout", UPGRADE_TIMEOUT)

    def __str__(self) -> str:
        return f"release {self.name} (namespace {self.namespace}{f', context {self.context}' if self.context else ''})"

    def values(self, defaults: bool = True) -> dict:
        """The release's values, the chart's defaults included (helm get values --all), or only those its installs and
        upgrades set (defaults=False: what `--set KEY=null` removed is gone from them, where helm's --all can still
        show it until the next upgrade: helm/helm#30765)."""
        try:
            return json.loads(self.helm("get", "values", self.name, *(("--all",) if defaults else ()), "-o", "json")
                              or "null") or {}
        except ReleaseError as e:
            if "not found" in str(e):
                raise ReleaseMissing(f"no release {self.name!r} in namespace {self.namespace}"
                                     f"{f' of context {self.context}' if self.context else ''}: install it first, "
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
        cmd = [tools.find("kubectl"), "port-forward", "--address", "127.0.0.1",
               f"service/{service['metadata']['name']}", f":{port}", *self.where("kubectl")]
        # A session of its own: a terminal's Ctrl-C goes to the whole foreground group, and a port-forward it ended
        # would leave the command unable to stop the swarm or collect what was measured.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            port = _forwarded_port(proc, service["metadata"]["name"])
            # kubectl writes a line for every connection it forwards: a pipe nobody reads fills (64 KiB, some 2,200
            # connections) and stops kubectl, the forward with it.
            for stream in (proc.stdout, proc.stderr):
                threading.Thread(target=_drain, args=(stream,), daemon=True).start()
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def value_at(values: dict, key: str):
    """A release's value by its dotted key (locust.autostart.users); None where it is not set."""
    for part in key.split("."):
        values = values.get(part) if isinstance(values, dict) else None
    return values


def _drain(stream) -> None:
    for _ in stream:
        pass


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

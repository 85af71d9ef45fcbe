"""The local stack: the chart's payload backend and its targets (NGINX Ingress Controller and HAProxy configs), run
by the machine's nginx and haproxy on 127.0.0.1.

Every config comes from `helm template` of charts/loadtest, with local addresses, ports and upstreams set through
the same values a user sets (`backend.bindAddress`, `haproxy.upstream.http`, ...), so what runs here is what the
chart deploys. The NGINX Ingress Controller cannot run outside a cluster: for it the chart renders the nginx.conf
the controller generates from the chart's ConfigMap and Ingress (charts/nginx/templates/equivalent-configmap.yaml),
and that runs here. Each server gets its own self-signed RSA 2048 certificate (the kind the chart generates),
written wherever its rendered config names a certificate file, as Kubernetes mounts the chart's Secret there.
"""
from __future__ import annotations

import re
import resource
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import paths
from ..errors import RunFailed
from ..workload import targets
from . import http_client, tools
from .processes import LOCAL_HOST, Processes, free_port

RELEASE, NAMESPACE = "local", "default"
# Certificate and key paths in nginx (ssl_certificate, ssl_certificate_key) and HAProxy (bind ... crt) configs.
CERTIFICATE_PATH = re.compile(r"(?:\bssl_certificate(?:_key)?|\bcrt)\s+([^;\s]+)")
# nginx -ssl-dynamic-reload: certificate paths start with a variable the config maps to the secrets folder.
SECRET_DIR_MAP = re.compile(r'map \$nginx_version \$secret_dir_path \{\s*default "([^"]+)";')


class TargetError(RunFailed):
    pass


def open_files_limit() -> int:
    """The hard limit on open files here: a local server's connection settings must fit in it (HAProxy refuses to
    start when its maxconn does not; the chart's defaults assume a pod's much higher limit)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def render(template: str, values: dict[str, object]) -> dict[str, str]:
    """The data of one ConfigMap template of the umbrella chart, rendered with `--set` values."""
    args = ["template", RELEASE, str(paths.CHART), "-n", NAMESPACE, "--show-only", template]
    for key, value in values.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        args += ["--set", f"{key}={text.replace(',', chr(92) + ',')}"]  # --set splits on unescaped commas
    return yaml.safe_load(tools.run("helm", *args, error=TargetError))["data"]


def certificate(common_name: str) -> bytes:
    """A self-signed RSA 2048 certificate for 127.0.0.1 and localhost, with its key: one PEM, as HAProxy reads it
    and as the NGINX Ingress Controller writes a Secret to disk (nginx takes the same file for both)."""
    with tempfile.TemporaryDirectory() as folder:
        cert, key = Path(folder) / "cert.pem", Path(folder) / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
             "-days", "2", "-subj", f"/CN={common_name}", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
            check=True, capture_output=True, timeout=60)
        return cert.read_bytes() + key.read_bytes()


def install_certificates(config: str, folder: Path, pem: bytes) -> None:
    """Write `pem` to every certificate or key file `config` names (paths relative to its folder)."""
    secret_dir = SECRET_DIR_MAP.search(config)
    for name in set(CERTIFICATE_PATH.findall(config)):
        if secret_dir:
            name = name.replace("$secret_dir_path", secret_dir.group(1))
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.parent.chmod(0o755)
        path.write_bytes(pem)
        # nginx loads a certificate named through a variable in its workers, which run unprivileged.
        path.chmod(0o644)


@dataclass
class Server:
    """A running server: what it is, where to reach it, and its process (whose CPU a run measures)."""

    name: str
    proc: subprocess.Popen
    http_url: str
    https_url: str | None
    status_url: str  # nginx stub_status, or HAProxy's Prometheus metrics
    cpus: int

    @property
    def address(self) -> str:
        return self.http_url.removeprefix("http://")

    def url(self, tls: bool) -> str:
        if tls and self.https_url is None:
            raise TargetError(f"{self.name} has no HTTPS listener")
        return self.https_url if tls else self.http_url

    def requests_counted(self) -> int | None:
        """nginx's own count of the requests it has read (stub_status; this call is one of them), or None where the
        server keeps none here (HAProxy's is per frontend) or did not answer (stopped, say)."""
        if not self.status_url.endswith("/stub_status"):
            return None
        try:
            return int(http_client.fetch(self.status_url, timeout=5).decode().splitlines()[2].split()[2])
        except (OSError, ValueError, IndexError):
            return None


class Stack:
    """The payload backend and the targets in front of it, each from the chart's rendered config, in a private
    runtime folder; every process stops, and the folder goes, when the context exits.

    The runtime folder is world-readable under the system temp dir: nginx started as root runs its workers as an
    unprivileged user, which must read the payload (and certificates loaded per handshake).
    """

    def __init__(self, logs: Path, overrides: dict[str, object] | None = None):
        self.logs = logs
        self.procs = Processes(logs)
        self.values: dict[str, object] = {}  # every --set so far: a target's render sees the backend's values
        self.overrides = overrides or {}  # the user's --set values: they win over the local defaults
        self.runtime: Path | None = None

    def __enter__(self) -> Stack:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.runtime = Path(tempfile.mkdtemp(prefix="loadtest-targets-"))
        self.runtime.chmod(0o755)
        return self

    def __exit__(self, *exc):
        try:
            self.procs.stop_all()
        finally:
            shutil.rmtree(self.runtime, ignore_errors=True)

    def _render(self, name: str, values: dict[str, object]) -> tuple[Path, dict[str, str]]:
        """The rendered files of server `name`, and an empty world-readable folder for them."""
        self.values.update(values)
        files = render(targets.get(name).config_template, {**self.values, **self.overrides})
        folder = self.runtime / name
        folder.mkdir()
        folder.chmod(0o755)
        return folder, files

    def backend(self, tls: bool = False, cpus: int = 1) -> Server:
        """The payload nginx (/1kb, /0kb, /healthz, /stub_status), with an HTTPS listener when `tls`."""
        port, tls_port = free_port(), free_port()
        folder, files = self._render("backend", {
            "backend.bindAddress": f"{LOCAL_HOST}:", "backend.port": port, "backend.workerProcesses": cpus,
            # A worker process per core of the CPU limit, as the chart wants it (nothing here limits the CPU).
            "backend.resources.requests.cpu": cpus, "backend.resources.limits.cpu": cpus,
            "backend.tls.enabled": tls, "backend.tls.port": tls_port,
        })
        conf = folder / "nginx.conf"
        conf.write_text(files.pop("nginx.conf"))
        html = folder / "html"  # the payload's root, as the pod mounts it
        html.mkdir()
        html.chmod(0o755)
        for name, content in files.items():
            (html / name).write_text(content)
        install_certificates(conf.read_text(), folder, certificate("backend"))
        proc = self.procs.start("backend", [tools.find("nginx"), "-p", f"{folder}/", "-e", "stderr", "-c", str(conf),
                                            "-g", "daemon off;"])
        server = Server("backend", proc, f"http://{LOCAL_HOST}:{port}",
                        f"https://{LOCAL_HOST}:{tls_port}" if tls else None,
                        f"http://{LOCAL_HOST}:{port}/stub_status", cpus)
        self.procs.wait_http("backend", f"{server.http_url}/healthz")
        return server

    def nginx(self, backend: Server, cpus: int = 1, routes: int = 1) -> Server:
        """The NGINX Ingress Controller's equivalent nginx.conf, proxying to `backend`, edge TLS on its HTTPS port."""
        port, tls_port, status_port = free_port(), free_port(), free_port()
        folder, files = self._render("nginx", {
            "nginx.enabled": True, "nginx.bindAddress": f"{LOCAL_HOST}:", "nginx.hostname": LOCAL_HOST,
            "nginx.ports.http": port, "nginx.ports.https": tls_port, "nginx.ports.status": status_port,
            "nginx.upstream": backend.address, "nginx.workerProcesses": cpus, "nginx.routes": routes,
            # worker_rlimit_nofile is twice this.
            "nginx.workerConnections": min(16384, open_files_limit() // 2),
        })
        (folder / "nginx.conf").write_text(files["nginx.conf"])
        install_certificates(files["nginx.conf"], folder, certificate("nginx"))
        # The config says `daemon off;` itself, as the controller's does.
        proc = self.procs.start("nginx", [tools.find("nginx"), "-p", f"{folder}/", "-e", "stderr",
                                          "-c", str(folder / "nginx.conf")])
        server = Server("nginx", proc, f"http://{LOCAL_HOST}:{port}", f"https://{LOCAL_HOST}:{tls_port}",
                        f"http://{LOCAL_HOST}:{status_port}/stub_status", cpus)
        self.procs.wait_http("nginx", server.status_url)
        return server

    def haproxy(self, backend: Server, tls_mode: str = "none", cpus: int = 1, routes: int = 1,
                values: dict | None = None) -> Server:
        """The chart's haproxy.cfg, forwarding to `backend` (its HTTPS listener in passthrough and reencrypt)."""
        if tls_mode in ("passthrough", "reencrypt") and backend.https_url is None:
            raise TargetError(f"HAProxy's {tls_mode} mode needs the backend's HTTPS listener")
        port, tls_port, metrics_port = free_port(), free_port(), free_port()
        folder, files = self._render("haproxy", {
            "haproxy.enabled": True, "haproxy.bindAddress": f"{LOCAL_HOST}:", "haproxy.hostname": LOCAL_HOST,
            "haproxy.ports.http": port, "haproxy.ports.https": tls_port, "haproxy.ports.metrics": metrics_port,
            "haproxy.upstream.http": backend.address,
            "haproxy.upstream.https": (backend.https_url or "").removeprefix("https://"),
            "haproxy.tls.mode": tls_mode, "haproxy.threads": cpus, "haproxy.routes": routes,
            # maxconn is twice this, and HAProxy reserves two open files per connection.
            "haproxy.clientConnections": min(10000, open_files_limit() // 5), **(values or {}),
        })
        for name, content in files.items():  # haproxy.cfg and routes.map
            (folder / name).write_text(content)
        install_certificates(files["haproxy.cfg"], folder, certificate("haproxy"))
        # As in the pod: run in the config's folder, where its relative paths resolve.
        proc = self.procs.start("haproxy", [tools.find("haproxy"), "-db", "-f", "haproxy.cfg"], cwd=folder)
        server = Server("haproxy", proc, f"http://{LOCAL_HOST}:{port}",
                        f"https://{LOCAL_HOST}:{tls_port}" if tls_mode != "none" else None,
                        f"http://{LOCAL_HOST}:{metrics_port}/metrics", cpus)
        self.procs.wait_http("haproxy", f"http://{LOCAL_HOST}:{metrics_port}/healthz")
        return server

    def target(self, name: str, tls_mode: str = "none", cpus: int = 1) -> tuple[Server, Server]:
        """The backend and, in front of it, the target `name` ("backend": the backend itself): (backend, target)."""
        if tls_mode not in targets.get(name).tls_modes:
            raise TargetError(f"target {name} takes --tls-mode {' / '.join(targets.get(name).tls_modes)}, "
                              f"not {tls_mode!r}")
        if name == "backend":
            backend = self.backend(tls=tls_mode == "edge", cpus=cpus)
            return backend, backend
        backend = self.backend(tls=tls_mode in ("passthrough", "reencrypt"))
        if name == "nginx":
            return backend, self.nginx(backend, cpus=cpus)
        return backend, self.haproxy(backend, tls_mode=tls_mode, cpus=cpus)

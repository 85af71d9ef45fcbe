"""A local Kubernetes cluster that schedules like an EKS node group: the real control plane, simulated nodes.

kube-apiserver, kube-controller-manager and kube-scheduler (one binary built by scripts/install-cluster-tools),
Debian's etcd, and KWOK in place of the kubelets: it marks nodes Ready and pods Running without running containers.
Nodes are made from the instance catalog (capacity, allocatable, max pods, EKS labels) and kube-system gets the
DaemonSets and cluster pods the sizing assumes, so the scheduler sees what it would see on EKS.

Everything listens on 127.0.0.1 on free ports. Certificates, etcd data, logs, PID files and the kubeconfig live in
~/.cache/loadtest/cluster unless another directory is given; processes are stopped by the PIDs recorded there.

    loadtest cluster up                      # prints the kubeconfig path
    loadtest cluster nodes c5-xlarge.yaml    # the node group values/c5-xlarge.yaml is sized for
    helm --kubeconfig ~/.cache/loadtest/cluster/kubeconfig install lt charts/loadtest -f values/c5-xlarge.yaml
    loadtest cluster down
"""
from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from . import catalog, paths, profiles, sizing

DEFAULT_STATE_DIR = paths.CACHE / "cluster"
KWOK_STAGES = paths.CACHE / "kwok" / "stages.yaml"
# In start order.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
SERVICE_CIDR = "10.96.0.0/16"
# KWOK hands out pod IPs from one range; its default /24 runs out at 254 pods.
POD_CIDR = "10.0.0.0/16"
# Controllers and the scheduler at client-go's default 5 QPS take ~50 s for 1,000 pods instead of ~11 s.
CLIENT_QPS, CLIENT_BURST = 200, 400
# Never pulled: KWOK runs no containers, but pods need an image name.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

NODE_GROUP_LABEL = "loadtest.dev/node-group"
ADDON_LABEL = "loadtest.dev/addon"
REGION = "us-east-1"


class ClusterError(RuntimeError):
    """The local cluster could not start, stop or reach a state in time. The message says which component and why."""


class NotScheduled(AssertionError):
    """Pods that should be Running are not; the message names each one with the scheduler's reason."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text[-lines:])


class Cluster:
    """A cluster's state directory: certificates, kubeconfig, ports, PIDs and logs, and clients to reach it."""

    def __init__(self, state_dir: Path | str | None = None):
        self.state_dir = Path(state_dir or DEFAULT_STATE_DIR).resolve()
        self.pki = self.state_dir / "pki"
        self.kubeconfig = self.state_dir / "kubeconfig"
        self.logs = self.state_dir / "logs"
        self.pids = self.state_dir / "pids"
        self.ports_file = self.state_dir / "ports.json"
        self._ssl: ssl.SSLContext | None = None
        self._children: dict[str, subprocess.Popen] = {}

    # --- processes -------------------------------------------------------------------------------------------

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def pid(self, component: str) -> int | None:
        """PID of the component if it is running and really ours (its command line names this state dir)."""
        if proc := self._children.get(component):
            # Started by this process: poll() also reaps it. (Its /proc cmdline is briefly empty right after exec.)
            return proc.pid if proc.poll() is None else None
        try:
            pid = int((self.pids / f"{component}.pid").read_text())
        except (FileNotFoundError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return None
        # A recycled PID belongs to some other program; a zombie is already dead (its parent has yet to reap it).
        return pid if str(self.state_dir) in cmdline and state != "Z" else None

    def running(self) -> dict[str, int | None]:
        return {c: self.pid(c) for c in COMPONENTS}

    def _spawn(self, component: str, argv: list[str]) -> None:
        with open(self.log(component), "ab") as log:
            # Own session: a Ctrl-C in the terminal that ran `cluster up` must not take the cluster down.
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=self.state_dir, start_new_session=True)
        self._children[component] = proc
        (self.pids / f"{component}.pid").write_text(f"{proc.pid}\n")

    def _stop(self, components: tuple[str, ...], timeout: float) -> None:
        pids = {c: p for c in components if (p := self.pid(c))}
        for pid in pids.values():
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while any(self.pid(c) for c in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        for component in pids:
            if pid := self.pid(component):
                os.kill(pid, signal.SIGKILL)
        while any(self.pid(c) for c in pids):
            time.sleep(0.05)
        for component in components:
            if component in self._children:
                self._children.pop(component).wait(timeout=timeout)
            (self.pids / f"{component}.pid").unlink(missing_ok=True)

    def _wait(self, what: str, component: str, ready, timeout: float) -> None:
        """Poll ready() until it is true; fail early if the component died, late with its log tail."""
        deadline = time.monotonic() + timeout
        while not ready():
            if not self.pid(component):
                raise ClusterError(f"{component} exited while waiting for {what}; "
                                   f"end of {self.log(component)}:\n{_tail(self.log(component))}")
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                   f"end of {self.log(component)}:\n{_tail(self.log(component))}")
            time.sleep(0.1)

    # --- clients ---------------------------------------------------------------------------------------------

    @property
    def ports(self) -> dict[str, int]:
        return json.loads(self.ports_file.read_text())

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
            self._ssl.load_cert_chain(self.pki / "admin.crt", self.pki / "admin.key")
        return self._ssl

    def api_get(self, path: str, **query: str) -> dict:
        """GET from the apiserver as cluster admin; cheaper than a kubectl process when polling."""
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        with urllib.request.urlopen(url, context=self._context(), timeout=30) as response:
            return json.load(response)

    def kubectl_argv(self, *args: str) -> list[str]:
        return [str(paths.BIN / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args]

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 120) -> str:
        """Run kubectl against this cluster; a failure raises ClusterError with kubectl's message."""
        result = subprocess.run(self.kubectl_argv(*args), input=input, capture_output=True, text=True,
                                timeout=timeout)
        if result.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed:\n{result.stderr.strip()}")
        return result.stdout

    def apply(self, objects: list[dict]) -> None:
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))

    # --- lifecycle -------------------------------------------------------------------------------------------

    def healthy(self) -> bool:
        if not self.ports_file.exists() or not all(self.running().values()):
            return False
        try:
            return _get_ok(f"{self.server}/readyz", self._context())
        except OSError:  # certificates missing or unreadable
            return False

    def start(self, timeout: float = 60) -> None:
        """Start a fresh cluster (previous state is wiped) and wait until every component is serving."""
        for tool in ("kube-apiserver", "kwok"):
            if not (paths.BIN / tool).exists():
                raise ClusterError(f"{paths.BIN / tool} is missing: run scripts/install-cluster-tools")
        if not KWOK_STAGES.exists():
            raise ClusterError(f"{KWOK_STAGES} is missing: run scripts/install-cluster-tools")
        etcd = shutil.which("etcd")
        if not etcd:
            raise ClusterError("etcd is not installed (apt-get install etcd-server; scripts/setup does it)")

        self._stop(COMPONENTS, timeout=10)
        if self.state_dir.exists():
            # Wiping is only safe for a directory this module made: guard against a mistyped --state-dir.
            if any(self.state_dir.iterdir()) and not self.ports_file.exists():
                raise ClusterError(f"{self.state_dir} is not empty and holds no local cluster: choose another dir")
            shutil.rmtree(self.state_dir)
        for d in (self.pki, self.logs, self.pids):
            d.mkdir(parents=True)
        ports = {name: _free_port() for name in
                 ("etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler", "kwok")}
        self.ports_file.write_text(json.dumps(ports))
        _make_certificates(self.pki)
        self._write_kubeconfig()
        deadline = time.monotonic() + timeout

        def left() -> float:
            return max(deadline - time.monotonic(), 1)

        etcd_url = f"http://127.0.0.1:{ports['etcd']}"
        peer_url = f"http://127.0.0.1:{ports['etcd_peer']}"
        self._spawn("etcd", [
            etcd, "--name", "loadtest", "--data-dir", str(self.state_dir / "etcd"),
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"loadtest={peer_url}", "--log-level", "warn", "--logger", "zap",
        ])
        self._wait("etcd to be healthy", "etcd", lambda: _get_ok(f"{etcd_url}/health"), left())

        pki = self.pki
        self._spawn("kube-apiserver", [
            str(paths.BIN / "kube-apiserver"),
            "--etcd-servers", etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(ports["apiserver"]),
            # The default reconciler publishes the advertise address in the kubernetes Endpoints and refuses loopback.
            "--endpoint-reconciler-type", "none",
            "--service-cluster-ip-range", SERVICE_CIDR,
            "--client-ca-file", str(pki / "ca.crt"),
            "--tls-cert-file", str(pki / "apiserver.crt"), "--tls-private-key-file", str(pki / "apiserver.key"),
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", str(pki / "service-account.pub"),
            "--service-account-signing-key-file", str(pki / "service-account.key"),
            "--authorization-mode", "RBAC",
            "--profiling=false",
        ])
        self._wait("kube-apiserver to be ready", "kube-apiserver",
                   lambda: _get_ok(f"{self.server}/readyz", self._context()), left())

        # No --authentication-kubeconfig: their /healthz is open anyway, and delegated authentication would look
        # for a front-proxy CA this cluster does not have, logging an error per second.
        common = [
            "--kubeconfig", str(self.kubeconfig), "--bind-address", "127.0.0.1", "--leader-elect=false",
            "--kube-api-qps", str(CLIENT_QPS), "--kube-api-burst", str(CLIENT_BURST), "--profiling=false",
        ]
        self._spawn("kube-controller-manager", [
            str(paths.BIN / "kube-controller-manager"), *common,
            "--secure-port", str(ports["controller_manager"]), "--cert-dir", str(pki / "controller-manager"),
            "--service-account-private-key-file", str(pki / "service-account.key"),
            "--root-ca-file", str(pki / "ca.crt"),
            "--use-service-account-credentials=false",
        ])
        self._spawn("kube-scheduler", [
            str(paths.BIN / "kube-scheduler"), *common,
            "--secure-port", str(ports["scheduler"]), "--cert-dir", str(pki / "scheduler"),
        ])
        self._spawn("kwok", [
            str(paths.BIN / "kwok"), "--kubeconfig", str(self.kubeconfig), "--config", str(KWOK_STAGES),
            "--manage-all-nodes=true", "--cidr", POD_CIDR, "--node-ip", "127.0.0.1",
            # Nodes renew leases like a kubelet does, or the node lifecycle controller marks them NotReady.
            "--node-lease-duration-seconds", "40",
            "--server-address", f"127.0.0.1:{ports['kwok']}",
        ])
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # self-signed serving certs; only /healthz is read
        for component, port in (("kube-controller-manager", "controller_manager"), ("kube-scheduler", "scheduler")):
            self._wait(f"{component} to be healthy", component,
                       lambda: _get_ok(f"https://127.0.0.1:{ports[port]}/healthz", insecure), left())
        self._wait("kwok to be healthy", "kwok", lambda: _get_ok(f"http://127.0.0.1:{ports['kwok']}/healthz"), left())
        # Pods are only admitted once their namespace's ServiceAccount exists: wait for the one in default.
        self._wait("the default ServiceAccount", "kube-controller-manager",
                   lambda: _exists(self, "/api/v1/namespaces/default/serviceaccounts/default"), left())

    def stop(self, timeout: float = 15) -> None:
        # Clients first, etcd last, so nothing logs errors about a vanished server on the way down.
        self._stop(COMPONENTS[1:], timeout)
        self._stop(("etcd",), timeout)

    def _write_kubeconfig(self) -> None:
        def b64(name: str) -> str:
            return base64.b64encode((self.pki / name).read_bytes()).decode()

        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "loadtest-local",
            "clusters": [{"name": "loadtest-local",
                          "cluster": {"server": self.server, "certificate-authority-data": b64("ca.crt")}}],
            "users": [{"name": "admin",
                       "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}],
            "contexts": [{"name": "loadtest-local", "context": {"cluster": "loadtest-local", "user": "admin"}}],
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2))
        self.kubeconfig.chmod(0o600)


def helm_binary() -> str:
    """scripts/setup installs helm into the cache bin dir; on a developer machine it may come from `go install`."""
    for candidate in (paths.BIN / "helm", Path.home() / "go" / "bin" / "helm"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("helm")
    if not found:
        raise ClusterError("helm not found: run scripts/setup")
    return found


def _get_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as response:
            return response.status == 200
    except (OSError, http.client.HTTPException):  # refused, reset, not ready yet (HTTP 500) or half an answer
        return False


def _exists(cluster: Cluster, path: str) -> bool:
    try:
        cluster.api_get(path)
        return True
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return False
        raise


def _make_certificates(pki: Path) -> None:
    """A CA, the apiserver's serving cert for 127.0.0.1, an admin client cert (system:masters), a token signing key."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=pki, check=True, capture_output=True)

    def config(name: str, subject: dict[str, str], extensions: str) -> str:
        path = pki / f"{name}.cnf"
        dn = "\n".join(f"{k} = {v}" for k, v in subject.items())
        path.write_text(f"[req]\nprompt = no\ndistinguished_name = dn\n[dn]\n{dn}\n[ext]\n{extensions}\n")
        return str(path)

    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650", "-extensions", "ext",
            "-config", config("ca", {"CN": "loadtest-local-ca"},
                              "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign"))
    leaf = "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature, keyEncipherment\n"
    openssl("req", "-x509", *key, "-CA", "ca.crt", "-CAkey", "ca.key", "-keyout", "apiserver.key",
            "-out", "apiserver.crt", "-days", "3650", "-extensions", "ext",
            "-config", config("apiserver", {"CN": "kube-apiserver"},
                              leaf + "extendedKeyUsage = serverAuth\nsubjectAltName = IP:127.0.0.1, DNS:localhost, "
                              "DNS:kubernetes, DNS:kubernetes.default.svc, IP:10.96.0.1"))
    openssl("req", "-x509", *key, "-CA", "ca.crt", "-CAkey", "ca.key", "-keyout", "admin.key",
            "-out", "admin.crt", "-days", "3650", "-extensions", "ext",
            "-config", config("admin", {"O": "system:masters", "CN": "admin"}, leaf + "extendedKeyUsage = clientAuth"))
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "service-account.key")
    openssl("pkey", "-in", "service-account.key", "-pubout", "-out", "service-account.pub")


# --- module-level lifecycle ----------------------------------------------------------------------------------


def up(state_dir: Path | str | None = None, timeout: float = 60) -> Cluster:
    """The cluster in state_dir, started if it is not already up and healthy."""
    cluster = Cluster(state_dir)
    if not cluster.healthy():
        cluster.start(timeout)
    return cluster


def down(state_dir: Path | str | None = None) -> None:
    """Stop the cluster's processes; logs stay in the state dir until the next `up`."""
    Cluster(state_dir).stop()


# --- node groups -----------------------------------------------------------------------------------------------


def node_objects(shape: sizing.NodeShape, count: int, group: str) -> list[dict]:
    """Nodes as an EKS node group of `shape` registers them, spread over three zones."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"{group}-{i}",
                "labels": {
                    **shape.labels,
                    "kubernetes.io/hostname": f"{group}-{i}",
                    "topology.kubernetes.io/region": REGION,
                    "topology.kubernetes.io/zone": sizing.ZONES[i % len(sizing.ZONES)],
                    NODE_GROUP_LABEL: group,
                },
            },
            # The apiserver keeps a Node's status from the create request (most kinds drop it); KWOK adds Ready.
            "status": {
                "capacity": {"cpu": f"{shape.cpu_m}m", "memory": f"{shape.memory_mi}Mi", "pods": str(shape.max_pods)},
                "allocatable": {"cpu": f"{shape.allocatable_cpu_m}m", "memory": f"{shape.allocatable_memory_mi}Mi",
                                "pods": str(shape.max_pods)},
            },
        }
        for i in range(count)
    ]


def _resources(pod: sizing.PodRequest) -> dict:
    requests = {}
    if pod.cpu_m:
        requests["cpu"] = f"{pod.cpu_m}m"
    if pod.memory_mi:
        requests["memory"] = f"{pod.memory_mi}Mi"
    return {"requests": requests}


def _pod_template(pod: sizing.PodRequest, priority_class: str) -> dict:
    return {
        "metadata": {"labels": {"app.kubernetes.io/name": pod.name, ADDON_LABEL: "true"}},
        "spec": {
            "priorityClassName": priority_class,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": pod.name, "image": PAUSE_IMAGE, "resources": _resources(pod)}],
        },
    }


def addon_objects(profile: profiles.Profile) -> list[dict]:
    """The profile's per-node DaemonSets and cluster pods (e.g. CoreDNS) for kube-system, with its requests."""
    def meta(name: str) -> dict:
        return {"name": name, "namespace": "kube-system", "labels": {ADDON_LABEL: "true"}}

    daemonsets = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(ds.name),
         "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": ds.name}},
                  "template": _pod_template(ds, "system-node-critical")}}
        for ds in profile.daemonsets
    ]
    deployments = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(pod.name),
         "spec": {"replicas": pod.replicas, "selector": {"matchLabels": {"app.kubernetes.io/name": pod.name}},
                  "template": _pod_template(pod, "system-cluster-critical")}}
        for pod in profile.cluster_pods
    ]
    return daemonsets + deployments


def delete_nodes(cluster: Cluster) -> None:
    """Remove every simulated node, and the pods bound to them (no kubelet is left to confirm their deletion)."""
    nodes = cluster.api_get("/api/v1/nodes", labelSelector=NODE_GROUP_LABEL)["items"]
    names = {n["metadata"]["name"] for n in nodes}
    if not names:
        return
    # Nodes first: while a node exists, its DaemonSets put a new pod on it for every one deleted.
    cluster.kubectl("delete", "node", "-l", NODE_GROUP_LABEL, "--wait=true")
    by_namespace: dict[str, list[str]] = {}
    for pod in cluster.api_get("/api/v1/pods")["items"]:
        if pod["spec"].get("nodeName") in names:
            by_namespace.setdefault(pod["metadata"]["namespace"], []).append(pod["metadata"]["name"])
    for namespace, pods_on_nodes in by_namespace.items():
        cluster.kubectl("delete", "pod", "-n", namespace, "--force", "--grace-period=0", "--ignore-not-found",
                        "--wait=false", *pods_on_nodes)


def install_addons(cluster: Cluster, profile: profiles.Profile) -> None:
    """Make kube-system's simulated add-ons exactly the profile's (another profile may have put others there)."""
    # Foreground: the old pods are gone before a new DaemonSet or ReplicaSet of the same name appears.
    cluster.kubectl("delete", "daemonset,deployment", "-n", "kube-system", "-l", ADDON_LABEL,
                    "--cascade=foreground", "--ignore-not-found", "--timeout=60s")
    cluster.apply(addon_objects(profile))


def create_nodes(cluster: Cluster, shape: sizing.NodeShape, count: int, group: str) -> list[str]:
    objects = node_objects(shape, count, group)
    cluster.apply(objects)
    return [n["metadata"]["name"] for n in objects]


def _wait_for(what: str, done, timeout: float, describe) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}: {describe()}")
        time.sleep(0.2)


def wait_nodes_ready(cluster: Cluster, names: list[str], timeout: float = 60) -> None:
    def not_ready() -> list[str]:
        nodes = cluster.api_get("/api/v1/nodes", labelSelector=NODE_GROUP_LABEL)["items"]
        ready = {n["metadata"]["name"] for n in nodes
                 if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))}
        return sorted(set(names) - ready)

    _wait_for(f"{len(names)} nodes to be Ready", lambda: not not_ready(), timeout,
              lambda: f"not Ready: {', '.join(not_ready())}; see {cluster.log('kwok')}")


def wait_addons_ready(cluster: Cluster, profile: profiles.Profile, nodes: list[str], timeout: float = 60) -> None:
    """Wait until every node runs each of the profile's DaemonSets and all its cluster pods are Running.

    Counts pods rather than trusting DaemonSet status, which reads "0 of 0 ready" until the controller sees new nodes.
    """
    def missing() -> list[str]:
        running: dict[str, list[str]] = {}
        for p in pods(cluster, "kube-system", ADDON_LABEL):
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"):
                running.setdefault(p["metadata"]["labels"]["app.kubernetes.io/name"], []).append(p["spec"]["nodeName"])
        out = []
        for ds in profile.daemonsets:
            if lacking := sorted(set(nodes) - set(running.get(ds.name, []))):
                out.append(f"{ds.name} not Running on {', '.join(lacking)}")
        for pod in profile.cluster_pods:
            if len(running.get(pod.name, [])) != pod.replicas:
                out.append(f"{pod.name} {len(running.get(pod.name, []))} of {pod.replicas} Running")
        return out

    _wait_for("kube-system add-ons to be Running", lambda: not missing(), timeout, lambda: "; ".join(missing()))


def use_node_group(cluster: Cluster, profile: profiles.Profile, count: int | None = None,
                   timeout: float = 60) -> list[str]:
    """Replace the cluster's nodes and add-ons with the node group `profile` is sized for, plus the node group its
    backend and targets run on; returns the generator node names."""
    delete_nodes(cluster)
    install_addons(cluster, profile)
    names = create_nodes(cluster, profile.shape, count or profile.nodes, Path(profile.file).stem)
    others = []
    if profile.target_node_type:
        target_shape = sizing.node_shape(catalog.get(profile.target_node_type))
        others = create_nodes(cluster, target_shape, profile.target_nodes, "targets")
    wait_nodes_ready(cluster, names + others, timeout)
    wait_addons_ready(cluster, profile, names + others, timeout)
    return names


def profile_for(name: str, count: int | None = None) -> profiles.Profile:
    """A profile by values file (c5-xlarge.yaml, values/c5-xlarge.yaml) or an EKS one for an instance type."""
    if name.endswith(".yaml"):
        return profiles.by_file(Path(name).name)
    catalog.get(name)  # raises with the list of known types
    return profiles.eks(name, count or 2, f"{name} node group")


# --- scheduling checks -----------------------------------------------------------------------------------------


def pods(cluster: Cluster, namespace: str, selector: str = "") -> list[dict]:
    return cluster.api_get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)["items"]


def unschedulable_reason(pod: dict) -> str | None:
    """The scheduler's message for a pod it could not place, None if it has not given up on it (yet)."""
    for c in pod["status"].get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
            return c.get("message", "Unschedulable")
    return None


def wait_scheduling_settled(cluster: Cluster, namespace: str, selector: str = "", timeout: float = 60) -> list[dict]:
    """Wait until the Deployments have all their pods and each is Running or unschedulable; return the pods."""
    def unsettled() -> list[str]:
        out = []
        deployments = cluster.api_get(f"/apis/apps/v1/namespaces/{namespace}/deployments", labelSelector=selector)
        for d in deployments["items"]:
            want, s = d["spec"]["replicas"], d["status"]
            if s.get("observedGeneration") != d["metadata"]["generation"] or \
                    s.get("updatedReplicas", 0) != want or s.get("replicas", 0) != want:
                out.append(f"deployment/{d['metadata']['name']} has {s.get('replicas', 0)} of {want} pods")
        out += [f"pod/{p['metadata']['name']} {p['status'].get('phase')}" for p in pods(cluster, namespace, selector)
                if p["status"].get("phase") != "Running" and not unschedulable_reason(p)]
        return out

    _wait_for(f"pods in {namespace} to be Running or unschedulable", lambda: not unsettled(), timeout,
              lambda: "; ".join(unsettled()))
    return pods(cluster, namespace, selector)


def assert_all_running(cluster: Cluster, namespace: str, selector: str = "") -> list[dict]:
    """Every pod matching selector is Running; otherwise NotScheduled names each other pod with the reason."""
    found = pods(cluster, namespace, selector)
    if not found:
        raise NotScheduled(f"no pods match {selector!r} in namespace {namespace}")
    stuck = [p for p in found if p["status"].get("phase") != "Running"]
    if stuck:
        lines = [f"{len(stuck)} of {len(found)} pods in namespace {namespace} are not Running:"]
        for p in stuck:
            reason = unschedulable_reason(p) or "not yet scheduled or started"
            lines.append(f"  {p['metadata']['name']} ({p['status'].get('phase', 'Unknown')}): {reason}")
        raise NotScheduled("\n".join(lines))
    return found


def failed_scheduling_events(cluster: Cluster, namespace: str, pod: str) -> list[str]:
    events = cluster.api_get(f"/api/v1/namespaces/{namespace}/events",
                             fieldSelector=f"involvedObject.name={pod},reason=FailedScheduling")["items"]
    return [e.get("message", "") for e in events]


# --- CLI -------------------------------------------------------------------------------------------------------


def register(subparsers) -> None:
    p = subparsers.add_parser("cluster", help="local control plane with simulated EKS nodes (KWOK)",
                              description=__doc__.split("\n\n")[0])
    state = argparse.ArgumentParser(add_help=False)
    state.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR, help=f"default {DEFAULT_STATE_DIR}")
    actions = p.add_subparsers(dest="action", required=True, metavar="action")
    a = actions.add_parser("up", parents=[state], help="start the cluster (no-op if it is up), print the kubeconfig")
    a.add_argument("--timeout", type=float, default=60, help="seconds to wait for the control plane (default 60)")
    a.set_defaults(func=_cmd_up)
    a = actions.add_parser("down", parents=[state], help="stop the cluster's processes")
    a.set_defaults(func=_cmd_down)
    a = actions.add_parser("status", parents=[state], help="component PIDs, API address and nodes")
    a.set_defaults(func=_cmd_status)
    a = actions.add_parser("nodes", parents=[state], help="replace the nodes with a node group and its add-ons")
    a.add_argument("profile", help="values file the group is sized for (c5-xlarge.yaml) or an instance type")
    a.add_argument("--count", type=int, help="nodes (default: as many as the profile assumes)")
    a.set_defaults(func=_cmd_nodes)


def _cmd_up(args) -> int:
    try:
        cluster = up(args.state_dir, args.timeout)
    except ClusterError as e:
        print(f"loadtest cluster up: {e}", file=sys.stderr)
        return 1
    print(f"cluster up at {cluster.server}\nexport KUBECONFIG={cluster.kubeconfig}")
    return 0


def _cmd_down(args) -> int:
    down(args.state_dir)
    print("cluster stopped")
    return 0


def _cmd_status(args) -> int:
    cluster = Cluster(args.state_dir)
    for component, pid in cluster.running().items():
        print(f"{component:<24} {f'pid {pid}' if pid else 'not running'}")
    if not cluster.healthy():
        print("cluster is not up (loadtest cluster up)", file=sys.stderr)
        return 1
    nodes = cluster.api_get("/api/v1/nodes")["items"]
    print(f"api {cluster.server}, kubeconfig {cluster.kubeconfig}, {len(nodes)} nodes")
    for n in nodes:
        labels, allocatable = n["metadata"]["labels"], n["status"]["allocatable"]
        print(f"  {n['metadata']['name']:<20} {labels.get('node.kubernetes.io/instance-type', '-'):<14} "
              f"{labels.get('topology.kubernetes.io/zone', '-'):<12} allocatable cpu {allocatable['cpu']}")
    return 0


def _cmd_nodes(args) -> int:
    cluster = Cluster(args.state_dir)
    if not cluster.healthy():
        print("cluster is not up (loadtest cluster up)", file=sys.stderr)
        return 1
    try:
        profile = profile_for(args.profile, args.count)
        names = use_node_group(cluster, profile, args.count)
    except (KeyError, ValueError) as e:
        print(f"loadtest cluster nodes: {e.args[0]}", file=sys.stderr)
        return 2
    except ClusterError as e:
        print(f"loadtest cluster nodes: {e}", file=sys.stderr)
        return 1
    print(f"{len(names)} x {profile.shape.name} Ready ({', '.join(names)}) with "
          f"{', '.join(d.name for d in profile.daemonsets)} on every node and "
          f"{', '.join(f'{p.name} x{p.replicas}' for p in profile.cluster_pods)}")
    return 0

"""The control plane on this machine: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK.

Everything listens on 127.0.0.1 on free ports. Certificates, etcd data, logs, PID files and the kubeconfig live in
the state directory (~/.cache/loadtest/cluster unless another is given); `up` reuses a healthy cluster there,
`down` stops it by the PIDs recorded there.
"""
from __future__ import annotations

import json
import shutil
import ssl
import time
from pathlib import Path

from ... import paths
from ...capacity import profiles
from .. import tools
from ..processes import LOCAL_HOST, Processes, free_port
from . import pki as pki_files
from .api import ApiClient, get_ok
from .errors import ClusterError
from .network import KWOK_POD_CIDR, NODE_IP, SERVICE_CIDR, SERVICE_IP
from .node import COMPONENTS as NODE_COMPONENTS
from .node import RealNode, network_up, preflight, stop_node

DEFAULT_STATE_DIR = paths.CACHE / "cluster"
KWOK_STAGES = paths.CACHE / "kwok" / "stages.yaml"
# In start order.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
# Seconds kube-apiserver gets to stop before SIGKILL: alone it stops in about 1 s; with a real node, its graceful
# stop waits up to 20 s to take its address out of the `kubernetes` Endpoints, which the next start (on a wiped state
# dir) writes anew, so that wait buys nothing.
APISERVER_STOP_S = 3
PORTS = ("etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler", "kwok")
# The label of every simulated node (loadtest.runtime.cluster.nodegroups), as of every node the files of
# loadtest.capacity.clusterfiles make on EKS; KWOK manages only nodes that have it.
# Controllers and the scheduler at client-go's default 5 QPS take ~50 s for 1,000 pods instead of ~11 s.
CLIENT_QPS, CLIENT_BURST = 200, 400


class Cluster:
    """A cluster's state directory: certificates, kubeconfig, ports, PIDs and logs, and clients to reach it."""

    def __init__(self, state_dir: Path | str | None = None):
        self.state_dir = Path(state_dir or DEFAULT_STATE_DIR).resolve()
        self.pki = self.state_dir / "pki"
        self.kubeconfig = self.state_dir / "kubeconfig"
        self.ports_file = self.state_dir / "ports.json"
        self.processes = Processes(self.state_dir / "logs", self.state_dir / "pids", self.state_dir, ClusterError)
        self.node = RealNode(self)  # present once a real node was started here
        self._api: ApiClient | None = None

    # --- processes -------------------------------------------------------------------------------------------

    def log(self, component: str) -> Path:
        return self.processes.log(component)

    def running(self) -> dict[str, int | None]:
        """Each component's PID, None for one that is not running."""
        return self.processes.running(COMPONENTS)

    # --- clients ---------------------------------------------------------------------------------------------

    @property
    def ports(self) -> dict[str, int]:
        return json.loads(self.ports_file.read_text())["ports"]

    @property
    def address(self) -> str:
        """Where the apiserver listens: loopback, or the real node's address when it has one."""
        return json.loads(self.ports_file.read_text())["address"]

    @property
    def server(self) -> str:
        return f"https://{self.address}:{self.ports['apiserver']}"

    @property
    def api(self) -> ApiClient:
        """The client for the running apiserver (made anew by start(): new port, new certificates)."""
        if self._api is None:
            self._api = ApiClient(self.server, self.pki, self.kubeconfig)
        return self._api

    def api_get(self, path: str, **query: str) -> dict:
        return self.api.api_get(path, **query)

    def kubectl_argv(self, *args: str) -> list[str]:
        return self.api.kubectl_argv(*args)

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 120) -> str:
        return self.api.kubectl(*args, input=input, timeout=timeout)

    def apply(self, objects: list[dict]) -> None:
        self.api.apply(objects)

    # --- lifecycle -------------------------------------------------------------------------------------------

    def healthy(self, real_node: bool = False) -> bool:
        """Every component is up (the real node's too, if it has one or `real_node` asks for it)."""
        if not self.ports_file.exists() or not all(self.running().values()):
            return False
        if (real_node or self.node.present) and not all(self.node.processes.running(NODE_COMPONENTS).values()):
            return False
        try:
            return self.api.ready()
        except OSError:  # certificates missing or unreadable
            return False

    def start(self, timeout: float = 60, real_node: bool = False) -> None:
        """Start a fresh cluster (previous state is wiped) and wait until every component is serving; with
        `real_node`, a real node joins it (loadtest.runtime.cluster.node) and the apiserver listens on its address."""
        for tool in ("kube-apiserver", "kwok"):
            if not (paths.BIN / tool).exists():
                raise ClusterError(f"{paths.BIN / tool} is missing: run scripts/install-cluster-tools")
        if not KWOK_STAGES.exists():
            raise ClusterError(f"{KWOK_STAGES} is missing: run scripts/install-cluster-tools")
        try:
            etcd = tools.find("etcd")
        except tools.ToolMissing:
            raise ClusterError("etcd is not installed (apt-get install etcd-server; scripts/setup does it)") from None

        if real_node:
            preflight()
        stop_node(self.node)
        processes = self.processes
        processes.stop(COMPONENTS, timeout=10)
        if self.state_dir.exists():
            # Wiping is only safe for a directory this module made: guard against a mistyped --state-dir.
            if any(self.state_dir.iterdir()) and not self.ports_file.exists():
                raise ClusterError(f"{self.state_dir} is not empty and holds no local cluster: choose another dir")
            shutil.rmtree(self.state_dir)
        for d in (self.pki, processes.logs, processes.pids):
            d.mkdir(parents=True)
        address = LOCAL_HOST
        if real_node:
            network_up(self.node.dir)
            address = NODE_IP
        ports = {name: free_port() for name in PORTS}
        self.ports_file.write_text(json.dumps({"address": address, "ports": ports}))
        pki_files.make_certificates(self.pki, SERVICE_IP, address)
        pki_files.write_kubeconfig(self.kubeconfig, self.server, self.pki)
        self._api = None  # a client made before this start knows the old port and trusts the old CA
        deadline = time.monotonic() + timeout

        def left() -> float:
            return max(deadline - time.monotonic(), 1)

        etcd_url = f"http://{LOCAL_HOST}:{ports['etcd']}"
        peer_url = f"http://{LOCAL_HOST}:{ports['etcd_peer']}"
        processes.start("etcd", [
            etcd, "--name", "loadtest", "--data-dir", str(self.state_dir / "etcd"),
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"loadtest={peer_url}", "--log-level", "warn", "--logger", "zap",
        ])
        processes.wait("etcd to be healthy", "etcd", lambda: get_ok(f"{etcd_url}/health"), left())

        pki = self.pki
        processes.start("kube-apiserver", [
            str(paths.BIN / "kube-apiserver"),
            "--etcd-servers", etcd_url,
            "--bind-address", address, "--advertise-address", address, "--secure-port", str(ports["apiserver"]),
            # The default reconciler publishes the advertise address in the kubernetes Endpoints and refuses loopback.
            *(["--endpoint-reconciler-type", "none"] if address == LOCAL_HOST else []),
            "--service-cluster-ip-range", SERVICE_CIDR,
            "--client-ca-file", str(pki / "ca.crt"),
            "--tls-cert-file", str(pki / "apiserver.crt"), "--tls-private-key-file", str(pki / "apiserver.key"),
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", str(pki / "service-account.pub"),
            "--service-account-signing-key-file", str(pki / "service-account.key"),
            # Node: a kubelet reads only what its own pods need.
            "--authorization-mode", "Node,RBAC",
            # How logs, exec and port-forward reach a real node's kubelet.
            "--kubelet-client-certificate", str(pki / "admin.crt"), "--kubelet-client-key", str(pki / "admin.key"),
            "--kubelet-preferred-address-types", "InternalIP",
            "--profiling=false",
        ])
        processes.wait("kube-apiserver to be ready", "kube-apiserver", self.api.ready, left())

        # No --authentication-kubeconfig: their /healthz is open anyway, and delegated authentication would look
        # for a front-proxy CA this cluster does not have, logging an error per second.
        common = [
            "--kubeconfig", str(self.kubeconfig), "--bind-address", LOCAL_HOST, "--leader-elect=false",
            "--kube-api-qps", str(CLIENT_QPS), "--kube-api-burst", str(CLIENT_BURST), "--profiling=false",
        ]
        processes.start("kube-controller-manager", [
            str(paths.BIN / "kube-controller-manager"), *common,
            "--secure-port", str(ports["controller_manager"]), "--cert-dir", str(pki / "controller-manager"),
            "--service-account-private-key-file", str(pki / "service-account.key"),
            "--root-ca-file", str(pki / "ca.crt"),
            "--use-service-account-credentials=false",
        ])
        processes.start("kube-scheduler", [
            str(paths.BIN / "kube-scheduler"), *common,
            "--secure-port", str(ports["scheduler"]), "--cert-dir", str(pki / "scheduler"),
        ])
        processes.start("kwok", [
            str(paths.BIN / "kwok"), "--kubeconfig", str(self.kubeconfig), "--config", str(KWOK_STAGES),
            # Only the simulated nodes: a real node's kubelet reports its own status.
            "--manage-nodes-with-label-selector", profiles.NODE_GROUP_LABEL, "--cidr", KWOK_POD_CIDR,
            "--node-ip", LOCAL_HOST,
            # Nodes renew leases like a kubelet does, or the node lifecycle controller marks them NotReady.
            "--node-lease-duration-seconds", "40",
            "--server-address", f"{LOCAL_HOST}:{ports['kwok']}",
        ])
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # self-signed serving certs; only /healthz is read
        for component, port in (("kube-controller-manager", "controller_manager"), ("kube-scheduler", "scheduler")):
            processes.wait(f"{component} to be healthy", component,
                           lambda: get_ok(f"https://{LOCAL_HOST}:{ports[port]}/healthz", insecure), left())
        processes.wait("kwok to be healthy", "kwok", lambda: get_ok(f"http://{LOCAL_HOST}:{ports['kwok']}/healthz"),
                       left())
        # Pods are only admitted once their namespace's ServiceAccount exists: wait for the one in default.
        processes.wait("the default ServiceAccount", "kube-controller-manager",
                       lambda: self.api.exists("/api/v1/namespaces/default/serviceaccounts/default"), left())
        if real_node:
            self.node.start(left())

    def stop(self, timeout: float = 15) -> None:
        # The scheduler first, so no pod the controllers make again lands on the real node while it drains; then
        # the node; then the other clients; etcd last, so nothing logs errors about a vanished server.
        self.processes.stop(("kube-scheduler",), timeout)
        stop_node(self.node)
        self.processes.stop(("kube-controller-manager", "kwok"), timeout)
        self.processes.stop(("kube-apiserver",), APISERVER_STOP_S)
        self.processes.stop(("etcd",), timeout)


def up(state_dir: Path | str | None = None, timeout: float = 60, real_node: bool = False) -> Cluster:
    """The cluster in state_dir, started if it is not already up and healthy (with a real node, if asked)."""
    cluster = Cluster(state_dir)
    if not cluster.healthy(real_node):
        cluster.start(timeout, real_node)
    return cluster


def down(state_dir: Path | str | None = None) -> None:
    """Stop the cluster's processes; logs stay in the state dir until the next `up`."""
    Cluster(state_dir).stop()

"""The real node: containerd and runc, a kubelet, kube-proxy and the CNI bridge on this machine, joined to the
local control plane, with CoreDNS as the cluster DNS. Its pods run for real, from images built here.

One real node per machine: it owns the bridge `loadtest0` (the pods' gateway, NODE_IP), containerd's socket under
/run/loadtest-node and an iptables chain that fences the pods in (nothing they send leaves the machine). containerd
keeps its images under ~/.cache/loadtest/containerd across clusters; everything else lives in the cluster's state
directory and goes with it. It needs root: it changes this machine's network, mounts and cgroups.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from ... import paths
from ...generate.images import COREDNS, IMAGES, PAUSE
from .. import images as builder
from .. import tools
from ..processes import LOCAL_HOST, Processes, free_port
from . import pki as pki_files
from .api import get_ok, pods, ready, wait_for
from .errors import ClusterError
from .network import DNS_IP, NODE_IP, NODE_POD_CIDR, POD_CIDR

NAME = "loadtest-node"
BRIDGE = "loadtest0"
COMPONENTS = ("containerd", "kubelet", "kube-proxy")
RUN_DIR = Path("/run/loadtest-node")
SOCKET = RUN_DIR / "containerd.sock"
CONTAINERD_ROOT = paths.CACHE / "containerd"
CNI_BIN = Path("/usr/lib/cni")
NETNS_DIRS = ("/var/run/netns/", "/run/netns/")  # where containerd's CRI keeps the pods' named network namespaces
FENCE = "LOADTEST-FENCE"
# The routing table of what arrives from the bridge: the bridge's subnet, and "unreachable" for everything else.
POD_ROUTES = "1980"
NAMESPACE = "k8s.io"  # containerd's namespace for the CRI's containers and images
# Sysctls the node needs: routing between the bridge's pods through Service addresses, iptables on bridged traffic
# (a reply from a pod to a pod on the same bridge must pass kube-proxy's NAT to be un-DNATed), and an "unreachable"
# answer to every packet of a pod that kube-proxy did not translate (see network_up). The kernel rate-limits those
# answers per pod, twice over (the route's error, then ICMP): after two quick refusals a pod's connects hung for
# 5 s and more with no answer at all (a worker retrying a master that is not ready drains them for its pod).
SYSCTLS = {"net/ipv4/ip_forward": "1", "net/bridge/bridge-nf-call-iptables": "1",
           "net/ipv4/route/error_cost": "0", "net/ipv4/icmp_ratelimit": "0"}
HOUSEKEEPING_INTERVAL = "5s"  # cAdvisor's refresh of container stats: see _start_kubelet
COREDNS_PORT = 1053  # above 1024: the unprivileged CoreDNS needs no capability


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    # ip, iptables and umount live in /usr/sbin, which PATH may lack.
    result = subprocess.run([tools.find(argv[0]), *argv[1:]], capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise ClusterError(f"{' '.join(argv)} failed: {(result.stderr or result.stdout).strip()}")
    return result


def ctr(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return _run("ctr", "--address", str(SOCKET), "--namespace", NAMESPACE, *args, check=check)


def preflight() -> None:
    """Refuse early, naming what is missing, before anything on this machine changes."""
    if os.geteuid() != 0:
        raise ClusterError("the real node needs root: containerd, the kubelet and the CNI bridge change this "
                           "machine's network, mounts and cgroups (run as root, or use the KWOK-only cluster)")
    missing = [tool for tool in ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip")
               if not _which(tool)]
    missing += [f"{CNI_BIN}/{p}" for p in ("bridge", "host-local", "loopback", "portmap") if not (CNI_BIN / p).exists()]
    missing += [str(paths.BIN / b) for b in ("kubelet", "kube-proxy") if not (paths.BIN / b).exists()]
    if missing:
        raise ClusterError(f"the real node needs {', '.join(missing)}: run scripts/install-node-tools")


def _which(tool: str) -> bool:
    try:
        tools.find(tool)
        return True
    except tools.ToolMissing:
        return False


# --- this machine's network ------------------------------------------------------------------------------------------

def network_up(node_dir: Path) -> None:
    """The bridge with the node's address (the apiserver binds to it), the sysctls, and the fence. `node_dir`
    exists from here on: it says that network_down has something to undo."""
    node_dir.mkdir(parents=True, exist_ok=True)
    if _run("ip", "link", "show", BRIDGE, check=False).returncode != 0:
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
    if NODE_IP not in _run("ip", "-4", "addr", "show", "dev", BRIDGE).stdout:
        _run("ip", "addr", "add", f"{NODE_IP}/{NODE_POD_CIDR.split('/')[1]}", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")
    saved = node_dir / "sysctls.json"
    # The values before the first node up, restored by network_down; a key new since an earlier up, its value now.
    before = json.loads(saved.read_text()) if saved.exists() else {}
    saved.write_text(json.dumps({k: before.get(k) or Path("/proc/sys", k).read_text().strip() for k in SYSCTLS}))
    for key, value in SYSCTLS.items():
        Path("/proc/sys", key).write_text(value)
    # In mangle FORWARD, ahead of kube-proxy's filter rules: pod traffic stays on the bridge, nothing is routed
    # between the bridge and this machine's other interfaces (the pods' replies to this machine are not forwarded).
    if _run("iptables", "-t", "mangle", "-L", FENCE, "-n", check=False).returncode != 0:
        _run("iptables", "-t", "mangle", "-N", FENCE)
    _run("iptables", "-t", "mangle", "-F", FENCE)
    _run("iptables", "-t", "mangle", "-A", FENCE, "-i", BRIDGE, "-o", BRIDGE, "-j", "RETURN")
    _run("iptables", "-t", "mangle", "-A", FENCE, "-i", BRIDGE, "-j", "DROP")
    _run("iptables", "-t", "mangle", "-A", FENCE, "-o", BRIDGE, "-j", "DROP")
    if _run("iptables", "-t", "mangle", "-C", "FORWARD", "-j", FENCE, check=False).returncode != 0:
        _run("iptables", "-t", "mangle", "-I", "FORWARD", "1", "-j", FENCE)
    # A pod's packet that kube-proxy did not translate (its Service has no ready endpoint yet, or is not synced yet)
    # is refused at once, as a cluster's kube-proxy refuses it: the fence above would drop it in silence, and the
    # client's connect would hang until its SYN retries give up (about 2 min, a Locust worker's first connect to a
    # master not ready yet). Addresses of this machine (the API server's) are looked up before this table.
    _run("ip", "route", "replace", NODE_POD_CIDR, "dev", BRIDGE, "table", POD_ROUTES)
    _run("ip", "route", "replace", "unreachable", "default", "table", POD_ROUTES)
    if f"lookup {POD_ROUTES}" not in _run("ip", "rule", "show").stdout:
        _run("ip", "rule", "add", "iif", BRIDGE, "lookup", POD_ROUTES, "priority", POD_ROUTES)


def network_down(node_dir: Path) -> None:
    """Undo network_up, and the kubelet's and kube-proxy's iptables chains; the sysctls get their values from
    before."""
    for binary in ("iptables", "ip6tables"):
        _remove_kube_chains(binary)
    if _run("iptables", "-t", "mangle", "-C", "FORWARD", "-j", FENCE, check=False).returncode == 0:
        _run("iptables", "-t", "mangle", "-D", "FORWARD", "-j", FENCE)
    if _run("iptables", "-t", "mangle", "-L", FENCE, "-n", check=False).returncode == 0:
        _run("iptables", "-t", "mangle", "-F", FENCE)
        _run("iptables", "-t", "mangle", "-X", FENCE)
    while f"lookup {POD_ROUTES}" in _run("ip", "rule", "show").stdout:
        _run("ip", "rule", "del", "lookup", POD_ROUTES)
    _run("ip", "route", "flush", "table", POD_ROUTES, check=False)
    _run("ip", "link", "del", BRIDGE, check=False)
    saved = node_dir / "sysctls.json"
    if saved.exists():
        for key, value in json.loads(saved.read_text()).items():
            Path("/proc/sys", key).write_text(value)
        saved.unlink()


def _remove_kube_chains(binary: str) -> None:
    """The KUBE-* chains in every table, and the rules of the built-in chains that jump to them."""
    for table in ("filter", "nat", "mangle", "raw"):
        rules = _run(binary, "-t", table, "-S", check=False).stdout.splitlines()
        for rule in rules:
            words = rule.split()
            if words[:1] == ["-A"] and not words[1].startswith("KUBE-") and "-j" in words \
                    and words[words.index("-j") + 1].startswith("KUBE-"):
                # The rule as -S prints it (comments quoted) is what -D takes, split as a shell would.
                _run(binary, "-t", table, "-D", *shlex.split(rule)[1:], check=False)
        chains = [r.split()[1] for r in rules if r.startswith("-N KUBE-")]
        for chain in chains:
            _run(binary, "-t", table, "-F", chain, check=False)
        for chain in chains:
            _run(binary, "-t", table, "-X", chain, check=False)


# --- the node ---------------------------------------------------------------------------------------------------------

class RealNode:
    """The real node of `cluster` (a controlplane.Cluster; Cluster.start(real_node=True) starts both)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.dir = cluster.state_dir / "node"
        self.processes = Processes(cluster.state_dir / "logs", cluster.state_dir / "pids", cluster.state_dir,
                                   ClusterError)
        self._serving: dict[str, Callable[[], bool]] = {}  # component: whether it serves again after a restart

    @property
    def present(self) -> bool:
        return self.dir.exists()

    def log(self, component: str) -> Path:
        return self.processes.log(component)

    def start(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout

        def left() -> float:
            return max(deadline - time.monotonic(), 1)

        self.dir.mkdir(parents=True, exist_ok=True)
        self._certificates()
        self._start_containerd(left())
        self.import_images()
        self._start_kubelet(left())
        self._start_kube_proxy(left())
        self.cluster.apply(coredns_objects())
        wait_for("CoreDNS to be ready", self._coredns_ready, left(),
                 lambda: f"see kubectl -n kube-system describe pods -l k8s-app=kube-dns; {self.log('kubelet')}")

    # --- pieces ------------------------------------------------------------------------------------------------

    def _certificates(self) -> None:
        pki = self.cluster.pki
        pki_files.issue(pki, "kubelet", {"O": "system:nodes", "CN": f"system:node:{NAME}"},
                        "extendedKeyUsage = clientAuth")
        pki_files.issue(pki, "kubelet-serving", {"CN": NAME},
                        f"extendedKeyUsage = serverAuth\nsubjectAltName = IP:{NODE_IP}, DNS:{NAME}")
        pki_files.issue(pki, "kube-proxy", {"CN": "system:kube-proxy"}, "extendedKeyUsage = clientAuth")
        for user in ("kubelet", "kube-proxy"):
            pki_files.write_kubeconfig(self.dir / f"{user}.kubeconfig", self.cluster.server, pki, user)

    def _start_containerd(self, timeout: float) -> None:
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        CONTAINERD_ROOT.mkdir(parents=True, exist_ok=True)
        net_d = self.dir / "cni" / "net.d"
        net_d.mkdir(parents=True, exist_ok=True)
        (net_d / "10-loadtest.conflist").write_text(json.dumps(cni_config(self.dir / "cni" / "ipam"), indent=2))
        config = self.dir / "containerd.toml"
        config.write_text(containerd_config(net_d))
        self.processes.start("containerd", [tools.find("containerd"), "--config", str(config)])
        self._serving["containerd"] = lambda: ctr("version", check=False).returncode == 0
        self.processes.wait("containerd to serve", "containerd", self._serving["containerd"], timeout)

    def import_images(self) -> None:
        """Import every built image containerd does not hold at the same digest (loadtest images build)."""
        held = {}
        for line in ctr("images", "ls").stdout.splitlines()[1:]:
            ref, _, digest, *_ = line.split()
            held[ref] = digest
        for image in IMAGES.values():
            archive = builder.archive_path(image)
            if not archive.exists():
                raise ClusterError(f"{image.reference} is not built: run scripts/install-node-tools "
                                   f"(loadtest images build)")
            if held.get(image.reference) != builder.manifest_digest(archive):
                ctr("images", "import", "--no-unpack=false", str(archive))

    def _start_kubelet(self, timeout: float) -> None:
        root = self.dir / "kubelet"
        for d in (root, self.dir / "pod-logs"):
            d.mkdir(parents=True, exist_ok=True)
        (self.dir / "resolv.conf").write_text("# no upstream: names outside the cluster do not resolve\n")
        config = self.dir / "kubelet.yaml"
        healthz = free_port()
        config.write_text(json.dumps(kubelet_config(self.cluster.pki, self.dir, free_port(), healthz), indent=2))
        self.processes.start("kubelet", [
            str(paths.BIN / "kubelet"), "--config", str(config), "--kubeconfig", str(self.dir / "kubelet.kubeconfig"),
            "--root-dir", str(root), "--hostname-override", NAME, "--node-ip", NODE_IP,
            # cAdvisor's own flag: it asks containerd which container a cgroup is, or its series carry no
            # container, pod or image labels (the dashboards' per-container CPU and throttling).
            "--containerd", str(SOCKET),
            # cAdvisor reads a container's CPU counters this often (a kubelet's default: 10 s). At the example
            # values' 5 s scrape every scrape sees a fresh reading, so a 20 s rules window judges throttling from
            # four of them (examples/real-node/values.yaml).
            "--housekeeping-interval", HOUSEKEEPING_INTERVAL,
        ])
        self.processes.wait(f"node {NAME} to be Ready", "kubelet", self._node_ready, timeout)
        self._serving["kubelet"] = lambda: get_ok(f"http://{LOCAL_HOST}:{healthz}/healthz")

    def _start_kube_proxy(self, timeout: float) -> None:
        healthz = free_port()
        config = self.dir / "kube-proxy.yaml"
        config.write_text(json.dumps(kube_proxy_config(self.dir / "kube-proxy.kubeconfig", healthz, free_port()),
                                     indent=2))
        self.processes.start("kube-proxy", [str(paths.BIN / "kube-proxy"), "--config", str(config)])
        self.processes.wait("kube-proxy to sync its rules", "kube-proxy",
                            lambda: get_ok(f"http://{LOCAL_HOST}:{healthz}/healthz"), timeout)

    def restart(self, component: str, timeout: float = 60) -> None:
        """containerd or the kubelet stopped and started again, as a node's upgrade or a crash of either does; the
        pods' containers run on (their shims outlive containerd, the kubelet finds its pods again)."""
        if component not in self._serving:
            raise ClusterError(f"only {' and '.join(self._serving)} restart here, not {component}")
        self.processes.restart(component, timeout=10)
        self.processes.wait(f"{component} to serve again", component, self._serving[component], timeout)

    def _node_ready(self) -> bool:
        try:
            return ready(self.cluster.api_get(f"/api/v1/nodes/{NAME}"))
        except OSError:
            return False

    def _coredns_ready(self) -> bool:
        return any(map(ready, pods(self.cluster, "kube-system", "k8s-app=kube-dns")))

    # --- stopping ----------------------------------------------------------------------------------------------

    def stop(self, timeout: float = 60) -> None:
        """Stop every pod's containers (through the kubelet while it runs, so the CNI releases their addresses),
        then the node's processes, leftover shims by PID, the kubelet's mounts, and the network namespaces of the
        pods the kubelet did not stop itself."""
        if self.processes.pid("kubelet") and self.processes.pid("containerd"):
            self._drain(timeout / 2)
        self.processes.stop(("kube-proxy", "kubelet"), timeout=10)
        netns: set[Path] = set()
        if self.processes.pid("containerd"):
            # Read before the containers go: the pods a controller made again during the drain have namespaces too.
            netns = self._pod_netns()
            self._kill_tasks()
        self.processes.stop(("containerd",), timeout=10)
        self._stop_shims()
        self._unmount()
        for namespace in sorted(netns):
            if namespace.exists():  # its pod stopped by ctr, not the kubelet: no CNI DEL removed it
                _run("ip", "netns", "delete", namespace.name, check=False)

    def _pod_netns(self) -> set[Path]:
        """The network namespaces containerd made for this node's pods, as their sandboxes' specs name them (a
        pod's containers join its sandbox's by /proc, which goes with the process)."""
        found = set()
        for container in ctr("containers", "ls", "-q", check=False).stdout.split():
            try:
                spec = json.loads(ctr("containers", "info", container, check=False).stdout)["Spec"]
            except (ValueError, KeyError, TypeError):
                continue  # gone since it was listed
            for namespace in (spec.get("linux") or {}).get("namespaces") or []:
                path = namespace.get("path") or ""
                if namespace.get("type") == "network" and path.startswith(NETNS_DIRS):
                    found.add(Path(path))
        return found

    def _drain(self, timeout: float) -> None:
        try:
            self.cluster.kubectl("delete", "pods", "--all-namespaces", "--all", "--field-selector",
                                 f"spec.nodeName={NAME}", "--grace-period=1", "--wait=false")
        except ClusterError:
            return  # the apiserver is already gone: the tasks are killed below
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not [line for line in ctr("tasks", "ls", check=False).stdout.splitlines()[1:] if "RUNNING" in line]:
                return
            time.sleep(0.5)

    def _kill_tasks(self) -> None:
        for line in ctr("tasks", "ls", check=False).stdout.splitlines()[1:]:
            task = line.split()[0]
            ctr("tasks", "kill", "--signal", "SIGKILL", task, check=False)
        time.sleep(0.5)
        for line in ctr("tasks", "ls", check=False).stdout.splitlines()[1:]:
            ctr("tasks", "delete", "--force", line.split()[0], check=False)
        for line in ctr("containers", "ls", "-q", check=False).stdout.split():
            ctr("containers", "delete", line, check=False)

    def _stop_shims(self) -> None:
        """Shims of this node's containerd (their command line names its socket) outlive it: stop them by PID."""
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmdline and cmdline[0].endswith(b"containerd-shim-runc-v2") and str(SOCKET).encode() in cmdline:
                try:
                    os.kill(int(proc.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _unmount(self) -> None:
        """The kubelet's volume mounts (tmpfs for Secrets, bind mounts) and containerd's root file systems left under
        this node's folders."""
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        ours = [m for m in mounts if m.startswith((str(self.dir) + "/", str(RUN_DIR) + "/"))]
        for mount in sorted(ours, key=len, reverse=True):
            _run("umount", "--lazy", mount.replace("\\040", " "), check=False)


def stop_node(node: RealNode) -> None:
    """Stop the node and undo its network, if it was ever started."""
    if node.present:
        node.stop()
        network_down(node.dir)


# --- configuration -----------------------------------------------------------------------------------------------

def cni_config(ipam_dir: Path) -> dict:
    return {
        "cniVersion": "1.0.0", "name": "loadtest",
        "plugins": [
            {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
             "ipam": {"type": "host-local", "dataDir": str(ipam_dir),
                      "ranges": [[{"subnet": NODE_POD_CIDR, "gateway": NODE_IP}]],
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def containerd_config(net_d: Path) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{CONTAINERD_ROOT}"
state = "{RUN_DIR / 'containerd'}"
[grpc]
  address = "{SOCKET}"
[ttrpc]
  address = "{SOCKET}.ttrpc"
[{cri}]
  sandbox_image = "{PAUSE}"
  # The kubelet asks for negative OOM scores (-998 for the sandboxes), which need CAP_SYS_RESOURCE: a VM or a
  # container may run root without it. Scores then stay at containerd's own or above.
  restrict_oom_score_adj = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{net_d}"
"""


def kubelet_config(pki: Path, node_dir: Path, port: int, healthz_port: int) -> dict:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": NODE_IP, "port": port, "readOnlyPort": 0,
        "healthzBindAddress": LOCAL_HOST, "healthzPort": healthz_port,
        "tlsCertFile": str(pki / "kubelet-serving.crt"), "tlsPrivateKeyFile": str(pki / "kubelet-serving.key"),
        # The apiserver (port-forward, logs) with its client certificate; Prometheus with its ServiceAccount token.
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(pki / "ca.crt")}},
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{SOCKET}",
        "cgroupDriver": "cgroupfs", "failCgroupV1": False, "failSwapOn": False,
        "clusterDNS": [DNS_IP], "clusterDomain": "cluster.local", "resolvConf": str(node_dir / "resolv.conf"),
        "podLogsDir": str(node_dir / "pod-logs"),
        # Nothing here can be pulled again: never collect the built images, evict only when really short.
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "serializeImagePulls": False, "maxPods": 110,
    }


def kube_proxy_config(kubeconfig: Path, healthz_port: int, metrics_port: int) -> dict:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "mode": "iptables", "clusterCIDR": POD_CIDR, "hostnameOverride": NAME, "bindAddress": NODE_IP,
        "healthzBindAddress": f"{LOCAL_HOST}:{healthz_port}", "metricsBindAddress": f"{LOCAL_HOST}:{metrics_port}",
        # NodePorts on the node's address only, not on every interface of this machine.
        "nodePortAddresses": [f"{NODE_IP}/32"],
        # Leave this machine's conntrack sysctls as they are.
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }


COREFILE = f""".:{COREDNS_PORT} {{
    errors
    health {{
        lameduck 5s
    }}
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }}
    prometheus :9153
    cache 30 {{
        disable success cluster.local
        disable denial cluster.local
    }}
    loop
    reload
    loadbalance
}}
"""


def coredns_objects() -> list[dict]:
    """CoreDNS as kubeadm deploys it (no upstream `forward`: names outside the cluster do not resolve). Cluster
    names are not cached: a Service made again under its old name resolves to its new address at once (HAProxy
    resolves its servers once, at start)."""
    meta = {"name": "coredns", "namespace": "kube-system"}
    labels = {"k8s-app": "kube-dns"}
    probe = {"initialDelaySeconds": 1, "periodSeconds": 2, "timeoutSeconds": 5}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:coredns"},
         "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
                    "verbs": ["list", "watch"]},
                   {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "system:coredns"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
         "subjects": [{"kind": "ServiceAccount", **meta}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"Corefile": COREFILE}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {**meta, "labels": labels},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {
                      "serviceAccountName": "coredns", "dnsPolicy": "Default",
                      "priorityClassName": "system-cluster-critical",
                      "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                          "seccompProfile": {"type": "RuntimeDefault"}},
                      "containers": [{
                          "name": "coredns", "image": COREDNS, "imagePullPolicy": "Never",
                          "args": ["-conf", "/etc/coredns/Corefile"],
                          "ports": [{"name": "dns", "containerPort": COREDNS_PORT, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": COREDNS_PORT, "protocol": "TCP"},
                                    {"name": "metrics", "containerPort": 9153, "protocol": "TCP"}],
                          "resources": {"requests": {"cpu": "50m", "memory": "70Mi"}, "limits": {"memory": "170Mi"}},
                          "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, **probe},
                          "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}, **probe},
                          "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                              "capabilities": {"drop": ["ALL"]}},
                          "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns", "readOnly": True}],
                      }],
                      "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                  }}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kube-dns", "namespace": "kube-system",
                                                              "labels": labels},
         "spec": {"clusterIP": DNS_IP, "selector": labels,
                  "ports": [{"name": "dns", "port": 53, "targetPort": COREDNS_PORT, "protocol": "UDP"},
                            {"name": "dns-tcp", "port": 53, "targetPort": COREDNS_PORT, "protocol": "TCP"},
                            {"name": "metrics", "port": 9153, "protocol": "TCP"}]}},
    ]

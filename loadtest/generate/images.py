"""The container images the local node runs, built here (never pulled) under the exact references the chart uses.

The one list of images. Each keeps the official image's contract that the chart and the node rely on (entrypoint,
user, working directory, environment, ports, the paths a program reads and writes); what is inside comes from
Debian packages, PyPI wheels pinned like the venv's, and Go modules pinned in tools/. `loadtest images build`
builds them (loadtest.runtime.images), and the node test layer checks every built image against its contract.

The software inside may be another version than the official tag: Debian bookworm's nginx 1.22 and HAProxy 2.6
stand in for the chart's nginx 1.27 and HAProxy 3.2 (the same configs run on both in the data-plane layer).
Grafana and the NGINX Ingress Controller have no image here: their Go modules are refused by the module proxy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from .. import paths

# The node's own images: the sandbox every pod runs in, and the cluster DNS (the versions kubeadm 1.33 deploys).
PAUSE = "registry.k8s.io/pause:3.10"
COREDNS = "registry.k8s.io/coredns/coredns:v1.12.0"


@dataclass(frozen=True)
class Contract:
    """What the official image promises: its OCI config fields and the paths a pod may rely on."""
    user: str
    workdir: str
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    ports: tuple[str, ...] = ()
    stop_signal: str = ""
    # Paths that exist in the image (executables, configs, directories the program writes to).
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Image:
    name: str
    reference: str
    contract: Contract
    # Built on another image of this list (its layers first, then this one's).
    base: str = ""
    # Debian packages of a minbase root file system (empty: no Debian root, only the files below).
    debian: tuple[str, ...] = ()
    # Programs copied in: path in the image -> a path under ~/.cache/loadtest (what the install scripts build), or
    # the name of a program on this machine.
    binaries: dict[str, str] = field(default_factory=dict)
    # What pip installs into /opt/venv, each a file relative to loadtest's home: `FILE` installs its pinned
    # requirements, `FILE#PACKAGE` one package at the versions FILE pins (a constraint).
    requirements: tuple[str, ...] = ()
    # Shell run in the root file system (chroot) after the packages: users, links, the official image's files.
    setup: str = ""


def chart_reference(subchart: str, key: str = "image") -> str:
    """`repository:tag` of an image value of a subchart's values.yaml, normalised as the CRI resolves it."""
    image = yaml.safe_load((paths.CHART / "charts" / subchart / "values.yaml").read_text())
    for part in key.split("."):
        image = image[part]
    return normalise(f"{image['repository']}:{image['tag']}")


def normalise(reference: str) -> str:
    """A reference as containerd stores it: docker.io/library/ for a bare name, docker.io/ for a user's."""
    name = reference.split("/", 1)
    if len(name) == 1:
        return f"docker.io/library/{reference}"
    if "." not in name[0] and ":" not in name[0] and name[0] != "localhost":
        return f"docker.io/{reference}"
    return reference


# The users of the distroless and busybox bases, for the images without a Debian root.
NONROOT_SETUP = r"""
mkdir -p /etc /tmp
chmod 1777 /tmp
printf '%s\n' root:x:0:0:root:/root:/sbin/nologin nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin \
    nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin > /etc/passwd
printf '%s\n' root:x:0: nobody:x:65534: nonroot:x:65532: > /etc/group
"""

# The official Prometheus image: busybox, the example config that scrapes Prometheus itself, /prometheus its data.
PROMETHEUS_SETUP = NONROOT_SETUP + r"""
for tool in sh ls cat wget; do ln -s busybox /bin/$tool; done
mkdir -p /etc/prometheus /prometheus
printf '%s\n' 'global:' '  scrape_interval: 15s' '  evaluation_interval: 15s' 'scrape_configs:' \
    '  - job_name: prometheus' '    static_configs:' '      - targets: ["localhost:9090"]' \
    > /etc/prometheus/prometheus.yml
chown -R 65534:65534 /etc/prometheus /prometheus
chmod g+w /prometheus
"""


def _images() -> dict[str, Image]:
    locust_env = (("PATH", "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
                  ("LANG", "C.UTF-8"), ("PYTHONUNBUFFERED", "1"))
    images = (
        Image("pause", PAUSE, Contract(user="65535:65535", workdir="/", entrypoint=("/pause",), paths=("/pause",)),
              binaries={"/pause": "node-bin/pause"}),
        Image("coredns", COREDNS, Contract(user="nonroot:nonroot", workdir="/", entrypoint=("/coredns",),
                                           ports=("53/tcp", "53/udp"), paths=("/coredns",)),
              binaries={"/coredns": "node-bin/coredns"}, setup=NONROOT_SETUP),
        Image("kube-state-metrics", chart_reference("monitoring", "kubeStateMetrics.image"),
              Contract(user="nobody", workdir="/",
                       entrypoint=("/kube-state-metrics", "--port=8080", "--telemetry-port=8081"),
                       ports=("8080/tcp", "8081/tcp"), paths=("/kube-state-metrics",)),
              binaries={"/kube-state-metrics": "bin/kube-state-metrics"}, setup=NONROOT_SETUP),
        Image("prometheus", chart_reference("monitoring", "prometheus.image"),
              Contract(user="nobody", workdir="/prometheus", entrypoint=("/bin/prometheus",),
                       cmd=("--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"),
                       ports=("9090/tcp",), paths=("/bin/prometheus", "/bin/promtool", "/bin/sh",
                                                   "/etc/prometheus/prometheus.yml", "/prometheus")),
              binaries={"/bin/prometheus": "node-bin/prometheus", "/bin/promtool": "node-bin/promtool",
                        "/bin/busybox": "busybox"},
              setup=PROMETHEUS_SETUP),
        Image("nginx-unprivileged", chart_reference("backend"),
              Contract(user="101", workdir="/", entrypoint=("/docker-entrypoint.sh",),
                       cmd=("nginx", "-g", "daemon off;"), ports=("8080/tcp",), stop_signal="SIGQUIT",
                       # wget: the chart's helm test pod fetches the payload with it (busybox's, on Alpine).
                       paths=("/usr/sbin/nginx", "/etc/nginx/nginx.conf", "/etc/nginx/conf.d/default.conf",
                              "/usr/share/nginx/html/index.html", "/docker-entrypoint.sh", "/usr/bin/wget")),
              debian=("nginx", "wget"), setup=NGINX_SETUP),
        Image("haproxy", chart_reference("haproxy"),
              Contract(user="haproxy", workdir="/var/lib/haproxy", entrypoint=("docker-entrypoint.sh",),
                       cmd=("haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"), stop_signal="SIGUSR1",
                       paths=("/usr/local/sbin/haproxy", "/usr/local/bin/docker-entrypoint.sh",
                              "/usr/local/etc/haproxy", "/var/lib/haproxy")),
              debian=("haproxy",), setup=HAPROXY_SETUP),
        Image("locust", chart_reference("locust"),
              Contract(user="locust", workdir="/home/locust", entrypoint=("locust",), env=locust_env,
                       ports=("8089/tcp", "5557/tcp"), paths=("/opt/venv/bin/locust", "/home/locust")),
              debian=("python3", "python3-venv"), requirements=("requirements.txt#locust",), setup=LOCUST_SETUP),
        # With the metrics plugin's dependency baked in (docker/locust/Dockerfile): pods on the local node have no way
        # to PyPI, so the chart's default init container cannot install it there.
        Image("locust-packages", "localhost/loadtest/locust-packages:" + chart_reference("locust").rsplit(":", 1)[1],
              Contract(user="locust", workdir="/home/locust", entrypoint=("locust",), env=locust_env,
                       ports=("8089/tcp", "5557/tcp"), paths=("/opt/venv/bin/locust",)),
              base="locust", requirements=("charts/loadtest/charts/locust/plugin-requirements.txt",)),
    )
    return {i.name: i for i in images}


# The unprivileged nginx image: user nginx (101), everything it writes under /tmp, logs to the container's output,
# listening on 8080, and an entrypoint that runs /docker-entrypoint.d/*.sh before `exec "$@"`.
NGINX_SETUP = r"""
groupadd --system --gid 101 nginx
useradd --system --uid 101 --gid 101 --home-dir /nonexistent --no-create-home --shell /bin/false nginx
rm -rf /etc/nginx/sites-enabled /etc/nginx/sites-available /var/www
mkdir -p /etc/nginx/conf.d /usr/share/nginx/html /docker-entrypoint.d /var/log/nginx /var/cache/nginx
cat > /etc/nginx/nginx.conf <<'EOF'
worker_processes  auto;
error_log  /var/log/nginx/error.log notice;
pid        /tmp/nginx.pid;
events {
    worker_connections  1024;
}
http {
    proxy_temp_path /tmp/proxy_temp;
    client_body_temp_path /tmp/client_temp;
    fastcgi_temp_path /tmp/fastcgi_temp;
    uwsgi_temp_path /tmp/uwsgi_temp;
    scgi_temp_path /tmp/scgi_temp;
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;
    access_log  /var/log/nginx/access.log;
    sendfile        on;
    keepalive_timeout  65;
    include /etc/nginx/conf.d/*.conf;
}
EOF
cat > /etc/nginx/conf.d/default.conf <<'EOF'
server {
    listen       8080;
    server_name  localhost;
    location / {
        root   /usr/share/nginx/html;
        index  index.html;
    }
}
EOF
echo '<h1>nginx</h1>' > /usr/share/nginx/html/index.html
cat > /docker-entrypoint.sh <<'EOF'
#!/bin/sh
# Runs the scripts in /docker-entrypoint.d/ when the command is nginx, then the command.
set -e
if [ "$1" = nginx ] || [ "$1" = nginx-debug ]; then
    for f in /docker-entrypoint.d/*.sh; do
        [ -x "$f" ] && "$f"
    done
fi
exec "$@"
EOF
chmod 0755 /docker-entrypoint.sh
ln -sf /dev/stdout /var/log/nginx/access.log
ln -sf /dev/stderr /var/log/nginx/error.log
chown -R 101:0 /var/cache/nginx /etc/nginx
chmod -R g+w /var/cache/nginx /etc/nginx
"""

# The official haproxy image: the program in /usr/local/sbin, its config folder /usr/local/etc/haproxy, user and
# group haproxy (99), /var/lib/haproxy its home and working directory; the entrypoint runs haproxy in the
# foreground with the master-worker (-W -db) flags when the command is haproxy or starts with an option.
HAPROXY_SETUP = r"""
usermod --uid 99 haproxy
groupmod --gid 99 haproxy
mkdir -p /usr/local/etc/haproxy /var/lib/haproxy /usr/local/bin /usr/local/sbin
chown 99:99 /var/lib/haproxy
ln -sf /usr/sbin/haproxy /usr/local/sbin/haproxy
cat > /usr/local/bin/docker-entrypoint.sh <<'EOF'
#!/bin/sh
set -e
if [ "${1#-}" != "$1" ]; then
    set -- haproxy "$@"
fi
if [ "$1" = haproxy ]; then
    shift
    set -- haproxy -W -db "$@"
fi
exec "$@"
EOF
chmod 0755 /usr/local/bin/docker-entrypoint.sh
"""

# The official Locust image: a venv in /opt/venv on PATH, user locust (1000) whose home is the working directory.
LOCUST_SETUP = r"""
useradd --uid 1000 --create-home locust
chown -R locust /opt/venv
"""

IMAGES = _images()

"""Published capacity figures of the targets, used to suggest how many target CPUs a required RPS needs.

NGINX Ingress Controller on EKS (NGINX's sizing guide): CPUs set with worker_processes, a c5n instance per size,
180 s runs with wrk; RPS over keep-alive with a 1 KB file, TLS TPS with a full handshake per 0 KB request.
HAProxy (OpenShift router tuning guide): one router with 4 vCPU, 100 routes, 1 kB pages, transactions per second.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NginxSize:
    cpus: int
    rps: int
    tls_tps: int
    instance: str
    monthly_usd: int


NGINX_INGRESS = (
    NginxSize(1, 45_000, 6_700, "c5n.large", 100),
    NginxSize(2, 80_000, 12_600, "c5n.large", 100),
    NginxSize(4, 135_000, 23_000, "c5n.xlarge", 200),
    NginxSize(8, 175_000, 40_000, "c5n.2xlarge", 400),
    NginxSize(16, 237_000, 68_500, "c5n.4xlarge", 795),
    NginxSize(32, 290_000, 88_800, "c5n.9xlarge", 1_790),
    NginxSize(36, 300_000, 92_800, "c5n.9xlarge", 1_790),
)

# HAProxy router, 4 vCPU: (keep-alive, TLS mode) -> (transactions/s with default threads, with 4 threads)
HAPROXY_4VCPU = {
    ("keepalive", "none"): (23_681, 24_327),
    ("keepalive", "edge"): (14_981, 22_768),
    ("keepalive", "passthrough"): (34_358, 34_331),
    ("keepalive", "reencrypt"): (13_288, 24_605),
    ("close", "none"): (3_245, 4_527),
    ("close", "edge"): (1_910, 3_043),
    ("close", "passthrough"): (3_408, 3_922),
    ("close", "reencrypt"): (1_333, 2_239),
}


def nginx_cpus_for(rps: float, metric: str = "rps") -> NginxSize | None:
    """The smallest published NGINX Ingress size that handles `rps` (metric "rps" or "tls_tps"); None if none."""
    for size in NGINX_INGRESS:
        if getattr(size, metric) >= rps:
            return size
    return None

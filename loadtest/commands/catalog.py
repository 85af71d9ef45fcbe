"""`loadtest catalog`: the node types the sizing knows."""
from __future__ import annotations

from ..capacity import catalog


def run(args) -> int:
    print(f"{'type':<14}{'vCPU':>5}{'GiB':>7}{'alloc CPU':>11}{'pods':>6}{'USD/h':>8}{'USD/mo':>9}{'Gbps':>7}")
    for i in catalog.INSTANCES.values():
        print(
            f"{i.name:<14}{i.vcpu:>5}{i.memory_gib:>7g}{i.allocatable_cpu_m:>10}m{i.max_pods:>6}"
            f"{i.price_usd_hour:>8.3f}{i.monthly_usd:>9.0f}{i.network_gbps_baseline:>7g}"
        )
    return 0


def register(sub) -> None:
    p = sub.add_parser("catalog", help="list the node types the sizing knows", description=__doc__)
    p.set_defaults(func=run)

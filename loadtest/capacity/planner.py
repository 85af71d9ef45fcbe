"""From a required RPS to node groups: nodes, workers, master, expected RPS and cost per node type, cheapest first.

A worker is one whole vCPU, so the generator's capacity is workers x (RPS one worker core delivers for the
scenario). That per-core figure comes from `loadtest calibrate` when a calibration file exists, otherwise from a
clearly labelled default; in the open model (an arrival rate) a worker holds only a share of it on schedule. A node
type can also be capped by its network: a sustained test gets the instance's baseline bandwidth, not its "up to"
burst figure.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from ..workload import arrival
from ..workload.scenarios import Scenario
from . import catalog, published, sizing
from .calibration import Calibration, load_calibration

MAX_NODES = 100


class PlanError(UsageError):
    pass


@dataclass(frozen=True)
class Option:
    node_type: str
    nodes: int
    plan: sizing.WorkerPlan
    expected_rps: float
    bandwidth_limited: bool

    @property
    def instance(self) -> catalog.InstanceType:
        return catalog.get(self.node_type)

    @property
    def monthly_usd(self) -> float:
        return self.nodes * self.instance.monthly_usd

    @property
    def usd_per_1k_rps(self) -> float:
        return self.monthly_usd / (self.expected_rps / 1000)


def bandwidth_rps(instance: catalog.InstanceType, scenario: Scenario) -> float:
    return instance.network_gbps_baseline * 1e9 / 8 / scenario.wire_bytes


def cheapest_fit(node_type: str, needed_rps: float, per_core: float, scenario: Scenario,
                 max_nodes: int) -> Option | str:
    """The fewest nodes of one type that reach needed_rps, or why none do."""
    instance = catalog.get(node_type)
    shape = sizing.node_shape(instance)
    per_node_cap = bandwidth_rps(instance, scenario)
    for nodes in range(1, max_nodes + 1):
        try:
            p = sizing.plan_workers(shape, nodes)
        except sizing.SizingError as e:
            return f"{node_type}: {e}"
        generator_rps, network_rps = p.replicas * per_core, nodes * per_node_cap
        if min(generator_rps, network_rps) >= needed_rps:
            return Option(node_type, nodes, p, min(generator_rps, network_rps), network_rps < generator_rps)
    return f"{node_type}: {max_nodes} nodes reach less than {needed_rps:,.0f} RPS"


def per_core(calibration: Calibration, scenario: str, open_model: bool = False) -> float:
    """The RPS one worker core delivers for the scenario; in the open model (an arrival rate) the share of it that a
    worker holds on schedule."""
    return calibration.rps_per_core[scenario] * (arrival.CLOSED_SHARE if open_model else 1)


def plan(target_rps: float, scenario: str, node_types: list[str], headroom: float = 0.3,
         calibration: Calibration | None = None, max_nodes: int = MAX_NODES, open_model: bool = False) -> list[Option]:
    """Options that reach target_rps x (1 + headroom), cheapest first; open_model: target_rps is an arrival rate."""
    if target_rps <= 0:
        raise PlanError(f"target RPS must be positive, got {target_rps:g}")
    if not 0 <= headroom < 5:
        raise PlanError(f"headroom is a fraction (0.3 = 30 %), got {headroom:g}")
    calibration = calibration or load_calibration()
    chosen = calibration.scenario(scenario)
    for name in node_types:
        catalog.get(name)  # unknown types are bad input, not "no fit"
    needed = target_rps * (1 + headroom)
    fits = [cheapest_fit(n, needed, per_core(calibration, scenario, open_model), chosen, max_nodes)
            for n in node_types]
    options = [f for f in fits if isinstance(f, Option)]
    if not options:
        raise PlanError(f"no listed node type reaches {target_rps:,.0f} RPS (+{headroom:.0%} headroom) within "
                        f"{max_nodes} nodes: " + "; ".join(fits))
    return sorted(options, key=lambda o: (o.monthly_usd, -o.expected_rps))


def target_suggestion(target_rps: float, scenario: Scenario) -> str:
    metric = scenario.target_metric
    size = published.nginx_cpus_for(target_rps, metric)
    what = "RPS (keep-alive, 1 KB)" if metric == "rps" else "TLS handshakes/s"
    if size is None:
        top = published.NGINX_INGRESS[-1]
        return (f"NGINX Ingress: above the published table ({getattr(top, metric):,} {what} at {top.cpus} CPUs): "
                "split across several controllers")
    return (f"NGINX Ingress: {size.cpus} CPU(s) (worker_processes {size.cpus}) handle {getattr(size, metric):,} "
            f"{what} in NGINX's measurements ({size.instance}, about {size.monthly_usd} USD/month)")

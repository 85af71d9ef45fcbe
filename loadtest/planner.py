"""From a required RPS to node groups: nodes, workers, master, expected RPS and cost per node type, cheapest first.

A worker is one whole vCPU, so the generator's capacity is workers x (RPS one worker core delivers for the
scenario). That per-core figure comes from `loadtest calibrate` when a calibration file exists, otherwise from a
clearly labelled default. A node type can also be capped by its network: a sustained test gets the instance's
baseline bandwidth, not its "up to" burst figure.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from . import catalog, paths, reference, sizing

DEFAULT_CALIBRATION = paths.CACHE / "calibration.json"
MAX_NODES = 100


@dataclass(frozen=True)
class Scenario:
    name: str
    default_rps_per_core: float  # used without a calibration file
    wire_bytes: int  # bytes on the wire per request, both directions, headers and TLS included
    target_metric: str  # which published target figure applies: "rps" or "tls_tps"


# Defaults: LeanHttpUser (the class these scenarios use) measured per core on the project's 2-core machine against
# a local target (benchmarks/targets.py, 2026-11-22). Calibrate on your nodes before trusting a plan to the last
# worker: `loadtest calibrate` there, or on a machine with the same CPU.
SCENARIOS = {
    s.name: s
    for s in (
        Scenario("keepalive_1kb", 16_000, 1_024 + 450, "rps"),
        Scenario("http_close", 6_000, 1_024 + 450 + 400, "rps"),  # + TCP handshake and teardown segments
        Scenario("tls_handshake", 800, 5_000, "tls_tps"),  # certificate chain and key exchange per request
    )
}


def user_class(scenario: str) -> str:
    """The Locust user class a scenario's locustfile declares in USER_CLASS."""
    m = re.search(r'^USER_CLASS = "(\w+)"', (paths.LOCUSTFILES / f"{scenario}.py").read_text(), re.M)
    return m.group(1) if m else "unknown"


class PlanError(ValueError):
    pass


@dataclass(frozen=True)
class Calibration:
    rps_per_core: dict[str, float]
    source: str  # where the figures come from, printed with every plan


def load_calibration(path: Path | None = None) -> Calibration:
    path = path or DEFAULT_CALIBRATION
    if not path.exists():
        return Calibration({n: s.default_rps_per_core for n, s in SCENARIOS.items()},
                           "defaults (no calibration file: run `loadtest calibrate` for figures from your machine)")
    data = json.loads(path.read_text())
    figures = {n: s.default_rps_per_core for n, s in SCENARIOS.items()}
    # A figure measured with another user class than the scenario uses now would mis-size the workers.
    figures.update({name: m["rps_per_core"] for name, m in data["scenarios"].items()
                    if name in SCENARIOS and m.get("user_class", user_class(name)) == user_class(name)})
    source = f"calibration {path} ({data['date']}, Locust {data['locust_version']}, {data['cpu_model']})"
    swept = [f"{name} from {m['source']}" for name, m in data["scenarios"].items() if m.get("source")]
    return Calibration(figures, "; ".join([source, *swept]))


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


def plan(target_rps: float, scenario: str, node_types: list[str], headroom: float = 0.3,
         calibration: Calibration | None = None, max_nodes: int = MAX_NODES) -> list[Option]:
    """Options that reach target_rps x (1 + headroom), cheapest first."""
    if target_rps <= 0:
        raise PlanError(f"target RPS must be positive, got {target_rps:g}")
    if not 0 <= headroom < 5:
        raise PlanError(f"headroom is a fraction (0.3 = 30 %), got {headroom:g}")
    if scenario not in SCENARIOS:
        raise PlanError(f"unknown scenario {scenario!r}; scenarios: {', '.join(SCENARIOS)}")
    for name in node_types:
        catalog.get(name)  # unknown types are bad input, not "no fit"
    calibration = calibration or load_calibration()
    needed = target_rps * (1 + headroom)
    fits = [cheapest_fit(n, needed, calibration.rps_per_core[scenario], SCENARIOS[scenario], max_nodes)
            for n in node_types]
    options = [f for f in fits if isinstance(f, Option)]
    if not options:
        raise PlanError(f"no listed node type reaches {target_rps:,.0f} RPS (+{headroom:.0%} headroom) within "
                        f"{max_nodes} nodes: " + "; ".join(fits))
    return sorted(options, key=lambda o: (o.monthly_usd, -o.expected_rps))


def target_suggestion(target_rps: float, scenario: str) -> str:
    metric = SCENARIOS[scenario].target_metric
    size = reference.nginx_cpus_for(target_rps, metric)
    what = "RPS (keep-alive, 1 KB)" if metric == "rps" else "TLS handshakes/s"
    if size is None:
        top = reference.NGINX_INGRESS[-1]
        return (f"NGINX Ingress: above the published table ({getattr(top, metric):,} {what} at {top.cpus} CPUs): "
                "split across several controllers")
    return (f"NGINX Ingress: {size.cpus} CPU(s) (worker_processes {size.cpus}) handle {getattr(size, metric):,} "
            f"{what} in NGINX's measurements ({size.instance}, about {size.monthly_usd} USD/month)")

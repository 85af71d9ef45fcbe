"""Which side of a load test was the bottleneck, from CPU figures.

The lesson behind it: RPS plateaued because the Locust workers sat at 100 % of their CPU while the nodes were far
from full, so the number measured was the generator's ceiling, not the target's. A result is only the target's
capacity when the target, not the generator, is saturated.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import rules

# A worker at this share of its core (or of its CPU limit) is saturated; Locust itself warns at 90 %. The value is the
# saturation rules' (the monitoring chart's), so this verdict, the dashboards' and the alerts' agree.
SATURATED_CPU = rules.threshold("loadtest:cpu_saturation:threshold")
# A worker throttled in this share of its CFS periods is held back by its CPU limit.
THROTTLED = rules.threshold("loadtest:cpu_throttling:threshold")

GENERATOR_BOUND = "generator-bound"
TARGET_BOUND = "target-bound"
HEALTHY = "healthy"


@dataclass(frozen=True)
class Verdict:
    kind: str
    reason: str


def judge(worker_cpu: list[float], target_cpu: float | None, target_cpus: float = 1.0,
          host_cpu: float | None = None, worker_throttling: float | None = None) -> Verdict:
    """worker_cpu: mean CPU of each worker as a fraction of its core or limit; target_cpu: the target's mean CPU
    in cores, out of `target_cpus` (None when not measured); host_cpu: share of the machine's cores in use when
    generator and target share one machine (the local stack); worker_throttling: the most throttled worker's share
    of throttled CFS periods (cAdvisor, in a cluster)."""
    if worker_throttling is not None and worker_throttling >= THROTTLED:
        return Verdict(GENERATOR_BOUND, f"workers throttled in {worker_throttling:.0%} of CFS periods: their CPU "
                                        "limit holds them back; give each worker a whole core")
    if worker_cpu:
        busiest = max(worker_cpu)
        if busiest >= SATURATED_CPU:
            hot = sum(c >= SATURATED_CPU for c in worker_cpu)
            return Verdict(
                GENERATOR_BOUND,
                f"{hot} of {len(worker_cpu)} workers at >= {SATURATED_CPU:.0%} CPU (busiest {busiest:.0%}): "
                "the RPS is the generator's ceiling; add workers or cores before reading the target's capacity",
            )
    if target_cpu is not None and target_cpu / target_cpus >= SATURATED_CPU:
        return Verdict(
            TARGET_BOUND,
            f"target at {target_cpu / target_cpus:.0%} of {target_cpus:g} CPU(s) while workers have headroom: "
            "this RPS is the target's capacity at this CPU count",
        )
    if host_cpu is not None and host_cpu >= SATURATED_CPU:
        return Verdict(
            GENERATOR_BOUND,
            f"the machine's cores are {host_cpu:.0%} busy and the workers share them with the target: the workers "
            "cannot get more CPU; run generator and target on separate machines or nodes to measure the target",
        )
    return Verdict(HEALTHY, "neither the workers nor the target are saturated: raise users to find the limit")


# What each verdict means for the reader, where the saturation rules gave it (a sweep reads loadtest:verdict).
MEANING = {
    GENERATOR_BOUND: "the RPS is the generator's ceiling, not the target's capacity; add workers or cores first",
    TARGET_BOUND: "the target is at its CPU ceiling while the workers have headroom: this RPS is its capacity at "
                  "this CPU count",
    HEALTHY: "neither the workers nor the target are saturated: raise the load to find the limit",
}


def recorded(counts: dict[str, float], busiest_worker: float, target_cpu_ratio: float | None,
             host_cpu: float | None) -> Verdict:
    """The verdict the saturation rules recorded most often over a window (counts: loadtest:verdict evaluations per
    verdict), explained with the window's figures. A tie goes to generator-bound: it hides the target."""
    order = (GENERATOR_BOUND, TARGET_BOUND, HEALTHY)
    kind = max(order, key=lambda k: (counts.get(k, 0), -order.index(k)))
    total = sum(counts.values())
    figures = [f"busiest worker {busiest_worker:.0%}"]
    if target_cpu_ratio is not None:
        figures.append(f"target {target_cpu_ratio:.0%} of its CPUs")
    if host_cpu is not None:
        figures.append(f"machine {host_cpu:.0%} busy")
    return Verdict(kind, f"{MEANING[kind]} (rules: {counts.get(kind, 0) / total:.0%} of the window; "
                         f"{', '.join(figures)})")

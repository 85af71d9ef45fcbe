"""What the release's pods outside Locust request (the backend, the targets, the monitoring), read from the charts'
values.yaml: the one place those numbers live. The node-type values files count them on the target node group
(`profiles.Profile.target_plan`), and the cluster layer gives that group the node count they need.

Each figure is what the component's template makes of its values (a target's CPUs are its worker count, request =
limit); tests/chart compares them with the pods `helm template` renders for every values file, so a template that
sizes a pod differently fails there instead of leaving a header wrong.
"""
from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

import yaml

from .. import paths, units
from .sizing import PodRequest
from ..workload import targets

# The monitoring's pods (mode inChart), by their key under `monitoring` and their component label.
MONITORING = (("prometheus", "prometheus"), ("grafana", "grafana"), ("kubeStateMetrics", "kube-state-metrics"))


@cache
def _defaults(chart: Path) -> dict:
    """Each subchart's values.yaml under its name, with what the umbrella's values.yaml sets for it on top."""
    umbrella = yaml.safe_load((chart / "values.yaml").read_text()) or {}
    return {
        sub.name: merged(yaml.safe_load((sub / "values.yaml").read_text()) or {}, umbrella.get(sub.name) or {})
        for sub in subcharts(chart)
    }


def subcharts(chart: Path = paths.CHART) -> list[Path]:
    """The installable subcharts (not the helper library), in name order."""
    return [
        sub for sub in sorted((chart / "charts").iterdir())
        if (sub / "values.yaml").exists() and yaml.safe_load((sub / "Chart.yaml").read_text()).get("type") != "library"
    ]


def components(chart: Path = paths.CHART) -> list[str]:
    """Subcharts other than Locust that place pods by `nodeType` (backend, targets, monitoring), in name order."""
    return [name for name, values in _defaults(chart).items() if name != "locust" and "nodeType" in values]


def merged(base: dict, overrides: dict) -> dict:
    """`overrides` on top of `base`, maps merged key by key as Helm merges values files."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def values(overrides: dict, chart: Path = paths.CHART) -> dict:
    """The chart's values with a values file's `overrides` on top."""
    return merged(_defaults(chart), overrides)


def _from_resources(name: str, resources: dict, replicas: int) -> PodRequest:
    requests = resources.get("requests") or {}
    return PodRequest(name, units.parse_cpu_m(requests.get("cpu", 0)),
                      units.parse_memory_mi(requests["memory"]) if "memory" in requests else 0, int(replicas))


def pods(chart_values: dict) -> tuple[PodRequest, ...]:
    """The pods of the enabled backend, targets and monitoring that `chart_values` (see `values`) give, one
    PodRequest per Deployment with its replicas, named by their component label."""
    on = {name for name, v in chart_values.items() if name != "locust" and (v or {}).get("enabled")}
    out = []
    for target in targets.TARGETS.values():
        if target.name not in on:
            continue
        v = chart_values[target.name]
        if "resources" in v:  # the backend: its resources as written
            out.append(_from_resources(target.component, v["resources"], v["replicas"]))
        else:  # nginx, haproxy: as many whole CPUs as workers or threads, request = limit (their init containers
            # ask less than one CPU, so they do not raise the pod's request)
            cpus = int(chart_values[target.name][target.cpu_value.split(".", 1)[1]])
            out.append(PodRequest(target.component, cpus * 1000, units.parse_memory_mi(v["memory"]),
                                  int(v["replicas"])))
    monitoring = chart_values.get("monitoring") or {}
    if "monitoring" in on and monitoring.get("mode") == "inChart":
        for key, component in MONITORING:
            part = monitoring[key]
            if part.get("enabled", True):
                out.append(_from_resources(component, part["resources"], 1))
    return tuple(out)

"""The targets under test: what Locust can load in the chart and on the local stack, and how each is reached.

The one list of targets. `loadtest values` writes the chart schema's `locust.target` enum and the chart's helper
that names each target's Service from it, the CLI takes its choices from it, the local stack renders each one's
config template, the sweep its CPU value, and the tests their matrices; unit tests check that the saturation rules
and the dashboards read each target's request series. To add one, see CONTRIBUTING.md, "Add a target".
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from .scenarios import TLS_FORBIDDEN, TLS_REQUIRED, Scenario

# What a TLS mode means for Locust → target → backend: plain HTTP; TLS terminated at the target (edge); forwarded
# untouched to the backend (passthrough); or terminated and opened again to the backend (reencrypt).
TLS_MODES = ("none", "edge", "passthrough", "reencrypt")
# locust.target may also be an outside URL (locust.host), which is no in-chart target.
URL = "url"


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    component: str  # the chart's component name: its objects are <release>-<component>
    tls_modes: tuple[str, ...]
    config_template: str  # the chart template whose ConfigMap the local stack runs
    cpu_value: str  # the chart value that sets its CPUs (request = limit): a target-cpus sweep's step
    requests_metric: str  # the Prometheus series of the requests it served (loadtest:target_requests:rate1m)


TARGETS = {
    t.name: t
    for t in (
        Target("backend", "the chart's nginx payload", "backend", ("none", "edge"),
               "charts/backend/templates/configmap.yaml", "backend.workerProcesses", "nginx_http_requests_total"),
        Target("nginx", "the NGINX Ingress Controller's nginx.conf", "nginx-ingress", ("none", "edge"),
               "charts/nginx/templates/equivalent-configmap.yaml", "nginx.workerProcesses",
               "nginx_ingress_nginx_http_requests_total"),
        Target("haproxy", "the chart's HAProxy", "haproxy", TLS_MODES,
               "charts/haproxy/templates/configmap.yaml", "haproxy.threads", "haproxy_frontend_http_requests_total"),
    )
}


def get(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise UsageError(f"unknown target {name!r}; targets: {', '.join(TARGETS)}") from None


def check_tls_mode(scenario: Scenario, target: Target, tls_mode: str) -> None:
    """Refuse a scenario, target and TLS mode that cannot go together, naming the option to change."""
    if tls_mode not in target.tls_modes:
        raise UsageError(f"target {target.name} takes --tls-mode {' / '.join(target.tls_modes)}, not {tls_mode!r}")
    check_scenario_tls(scenario, tls_mode != "none", "--tls-mode edge (or passthrough / reencrypt with haproxy)",
                       "--tls-mode none")


def check_scenario_tls(scenario: Scenario, tls: bool, with_tls: str, without_tls: str) -> None:
    """Refuse a scenario its TLS or plain HTTP contradicts; `with_tls` and `without_tls` say how to give either."""
    if scenario.tls == TLS_REQUIRED and not tls:
        raise UsageError(f"{scenario.name} needs TLS: {with_tls}")
    if scenario.tls == TLS_FORBIDDEN and tls:
        raise UsageError(f"{scenario.name} is plain HTTP: {without_tls}")

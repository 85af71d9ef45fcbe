"""The Grafana dashboards, as code (grafana-foundation-sdk, Grafana 11.6 schema): `loadtest dashboards` writes them
as JSON into the monitoring chart's dashboards/ folder (the repository's dashboards/ links to it), which the chart
provisions into its Grafana or ships as ConfigMaps for the Grafana sidecar of kube-prometheus-stack.

- Load test overview: is the run healthy, and which side limits it (the verdict of the saturation rules)?
- Load generator health: is each worker below its CPU ceiling, throttled, pulling its share?
- Targets: what each nginx / NGINX Ingress Controller / HAProxy pod serves, and how close its CPU is to its limit.
- Cluster capacity: how full the nodes are (CPU requested and used), and whether pods wait for room.

Every `loadtest:` series and threshold a panel shows comes from the saturation rules file (loadtest.judging.rules);
asking for a recording rule that file lacks fails the generation.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.builders.common import GraphThresholdsStyleConfig, ReduceDataOptions, VizLegendOptions
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import (BigValueColorMode, BigValueGraphMode, BigValueTextMode,
                                                  GraphThresholdsStyleMode, LegendDisplayMode, LegendPlacement)
from grafana_foundation_sdk.models.dashboard import (DashboardCursorSync, DashboardLinkType, DataSourceRef,
                                                     DynamicConfigValue, Threshold, ThresholdsMode, VariableRefresh,
                                                     VariableSort)

from loadtest_shared import verdict

from .. import paths
from ..judging import rules, tuning
from . import committed

FOLDER = paths.DASHBOARDS
TAG = "loadtest"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
# Series of the chart's Locust master, and of what the release scrapes.
LOCUST = 'namespace="$namespace", release="$release"'
RELEASE = 'release="$release"'
TARGETS = 'release="$release", loadtest_role="target"'
CONTAINERS = 'container!="", container!="POD"'
# Series that only a cluster gives (cAdvisor, kube-state-metrics, an ingress-nginx controller): the local data plane
# has none, so panels built on them are only checked for valid PromQL there.
CLUSTER_ONLY = ("container_", "kube_", "nginx_ingress_controller_",
                "loadtest:worker_cpu_throttling:", "loadtest:target_cpu_throttling:")
# Series only the open model gives (locust.load.arrivalRate): a closed-model run has none, so panels built on them are
# only checked for valid PromQL there.
OPEN_MODEL_ONLY = ("locust_arrival_rate_", "locust_service_time_", "locust_worker_arrival_",
                   "locust_worker_late_starts_", "loadtest:arrival_rate:", "loadtest:late_starts")


def rule(name: str) -> str:
    """A recording rule of the saturation rules file, by name."""
    if name not in rules.recorded():
        raise KeyError(f"{paths.RULES_FILE} records no {name}")
    return name


SATURATED, THROTTLED, LATE = verdict.SATURATED_CPU, verdict.THROTTLED, verdict.LATE_STARTS
FAILING = verdict.FAILURE_RATIO


def query(expr: str, legend: str = "") -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(" ".join(expr.split())).legend_format(legend or "__auto")


def red_above(value: float) -> dashboard.ThresholdsConfig:
    return dashboard.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
        [Threshold(value=None, color="green"), Threshold(value=value, color="red")])


def graph(title: str, description: str, queries: list[prometheus.Dataquery], unit: str, *, width: int = 12,
          red_from: float | None = None, max_value: float | None = None) -> timeseries.Panel:
    panel = (timeseries.Panel().title(title).description(description).datasource(DATASOURCE).unit(unit)
             .span(width).height(8).min(0).fill_opacity(10).line_width(1)
             .legend(VizLegendOptions().display_mode(LegendDisplayMode.LIST).placement(LegendPlacement.BOTTOM)
                     .show_legend(True)))
    if red_from is not None:
        panel = panel.thresholds(red_above(red_from)).thresholds_style(
            GraphThresholdsStyleConfig().mode(GraphThresholdsStyleMode.DASHED))
    if max_value is not None:
        panel = panel.max(max_value)
    for q in queries:
        panel = panel.with_target(q)
    return panel


def single(title: str, description: str, q: prometheus.Dataquery, unit: str, *, width: int = 4,
           red_from: float | None = None) -> stat.Panel:
    panel = (stat.Panel().title(title).description(description).datasource(DATASOURCE).unit(unit).span(width)
             .height(4).with_target(q.instant()).graph_mode(BigValueGraphMode.NONE)
             .reduce_options(ReduceDataOptions().calcs(["lastNotNull"])))
    if red_from is None:
        return panel.color_mode(BigValueColorMode.NONE)
    return panel.color_mode(BigValueColorMode.VALUE).thresholds(red_above(red_from))


def label_panel(title: str, description: str, record: str, label: str, width: int, no_value: str) -> stat.Panel:
    """A rule's series shown by its label (the verdict, the advice): one word, not a number."""
    return (stat.Panel().title(title).description(description).datasource(DATASOURCE).span(width).height(4)
            .with_target(query(f'{rule(record)}{{{RELEASE}}}', f"{{{{{label}}}}}").instant())
            .reduce_options(ReduceDataOptions().calcs(["lastNotNull"]))
            .text_mode(BigValueTextMode.NAME).graph_mode(BigValueGraphMode.NONE).no_value(no_value))


def verdict_panel() -> stat.Panel:
    colors = {verdict.GENERATOR_BOUND: "red", verdict.TARGET_BOUND: "green", verdict.HEALTHY: "blue",
              verdict.NOT_GENERATOR_BOUND: "yellow"}
    panel = label_panel(
        "Verdict",
        "Which side limits the run now, from the saturation rules (the same the alerts use), in the verdict's "
        "order of causes. generator-bound: workers were lost, or a worker is at "
        f"{SATURATED:.0%} of its CPU ceiling (its limit, at most one core) or throttled in {THROTTLED:.0%} of its "
        "CPU periods: the RPS is Locust's ceiling, not the target's capacity; add workers or nodes, not users "
        "(open model: also a lagging event loop, or a rate not offered with the target unsaturated). "
        f"target-bound: the target went silent or failed more than {FAILING:.0%} of the requests, or is at its CPU "
        "ceiling with the workers below theirs: this RPS is the target's capacity. healthy: neither; raise users. "
        "not generator-bound: the workers have headroom but the target's CPU is not measured (a target outside the "
        "release, or a pod without a CPU limit): its headroom is unmeasured.",
        "loadtest:verdict", "verdict", 8, "no test running").color_mode(BigValueColorMode.BACKGROUND)
    for name, color in colors.items():
        panel = panel.override_by_name(name, [DynamicConfigValue(id_val="color",
                                                                 value={"mode": "fixed", "fixedColor": color})])
    return panel


def advice_panel() -> stat.Panel:
    return label_panel(
        "Next step",
        "What to change next, from the last minute's steady samples: `loadtest tune`'s diagnosis (the rule "
        "loadtest:advice), the first that holds: "
        + " ".join(f"{name}: {tuning.MEANINGS[name]}." for name in tuning.DIAGNOSES)
        + " `loadtest tune --release <name>` prints the numbers and the helm upgrade; --apply runs it.",
        "loadtest:advice", "advice", 16, "no test running for a minute").color_mode(BigValueColorMode.NONE)


def base(uid: str, title: str, description: str) -> dashboard.Dashboard:
    namespace = (dashboard.QueryVariable("namespace").label("Namespace").datasource(DATASOURCE)
                 .query("label_values(locust_users, namespace)").refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
                 .sort(VariableSort.ALPHABETICAL_ASC))
    release = (dashboard.QueryVariable("release").label("Release").datasource(DATASOURCE)
               .query('label_values(locust_users{namespace="$namespace"}, release)')
               .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).sort(VariableSort.ALPHABETICAL_ASC))
    return (dashboard.Dashboard(title).uid(uid).description(description).tags([TAG]).refresh("10s")
            .time("now-30m", "now").timezone("browser").tooltip(DashboardCursorSync.CROSSHAIR)
            .with_variable(dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus"))
            .with_variable(namespace).with_variable(release)
            .link(dashboard.DashboardLink("Load test dashboards").type(DashboardLinkType.DASHBOARDS).tags([TAG])
                  .as_dropdown(True).include_vars(True).keep_time(True)))


def worker_saturation(legend: str, aggregate: str = "") -> prometheus.Dataquery:
    series = f'{rule("loadtest:worker_cpu_saturation:ratio")}{{{LOCUST}}}'
    return query(f"{aggregate}({series})" if aggregate else series, legend)


def node_cpu_requested() -> prometheus.Dataquery:
    """CPU requested by the pods that hold a node's CPU (Pending or Running), over its allocatable CPU."""
    return query(
        'sum by (node) (kube_pod_container_resource_requests{resource="cpu"} * on (namespace, pod) group_left () '
        'group by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"} == 1)) '
        '/ sum by (node) (kube_node_status_allocatable{resource="cpu"})', "{{node}} requested")


def overview() -> dashboard.Dashboard:
    rps = f"sum(rate(locust_requests_total{{{LOCUST}}}[$__rate_interval]))"
    return (base("loadtest-overview", "Load test overview",
                 "Is the run healthy, and is its RPS the target's capacity or the load generator's ceiling?")
            .with_panel(verdict_panel())
            .with_panel(advice_panel())
            .with_panel(single("RPS", "Requests per second, all workers.", query(rps), "reqps", width=5))
            .with_panel(single("Failures", "Share of requests that failed.",
                               query(f"sum(rate(locust_request_failures_total{{{LOCUST}}}[$__rate_interval])) / {rps}"),
                               "percentunit", width=5, red_from=FAILING))
            .with_panel(single("Users", "Running users.", query(f"sum(locust_users{{{LOCUST}}})"), "none", width=4))
            .with_panel(single("Workers missing", "Workers that stopped sending heartbeats.",
                               query(f'sum(locust_workers{{{LOCUST}, state="missing"}})'), "none", width=5,
                               red_from=1))
            .with_panel(single("Faults this run",
                               "What the master saw go wrong in this run (docs/faults.md): workers lost (no "
                               "heartbeat: killed, out of memory, cut off), workers that quit (deleted, evicted), and "
                               "the target silent (no request answered while users ran). A window with any of them "
                               "is not the target's capacity; result.json's faults say when and what each cost.",
                               query(f"sum by (kind) (loadtest_faults_total{{{LOCUST}}})", "{{kind}}"), "none",
                               width=5, red_from=1))
            .with_panel(graph("Requests per second", "All requests, and per request name.", [
                query(rps, "all"),
                query(f"sum by (method, name) (rate(locust_requests_total{{{LOCUST}}}[$__rate_interval]))",
                      "{{method}} {{name}}")], "reqps"))
            .with_panel(graph("Failures per second", "Failed requests, per request name.", [
                query(f"sum by (method, name) (rate(locust_request_failures_total{{{LOCUST}}}[$__rate_interval]))",
                      "{{method}} {{name}}")], "reqps"))
            .with_panel(graph("Response time", "p50, p95 and p99 of all requests over the last ~10 s (Locust's).", [
                query(f"locust_aggregated_response_time_seconds{{{LOCUST}}}", "p{{quantile}}")], "s"))
            .with_panel(graph("Users and workers", "Running users, and connected workers per state.", [
                query(f"sum(locust_users{{{LOCUST}}})", "users"),
                query(f'sum by (state) (locust_workers{{{LOCUST}, state=~"ready|spawning|running|missing"}})',
                      "workers {{state}}")], "none"))
            .with_panel(graph(
                "Busiest worker CPU, share of its ceiling",
                f"The busiest worker's CPU over what it may use (its limit, at most one core). At the dashed line "
                f"({SATURATED:.0%}) the workers, not the target, set the RPS.",
                [worker_saturation("busiest worker", "max")], "percentunit", red_from=SATURATED, max_value=1.2))
            .with_panel(graph(
                "Node CPU requested",
                "CPU requested over allocatable, per node. Saturated workers on nodes with room to spare: add "
                "workers, the nodes take them.", [node_cpu_requested()], "percentunit", max_value=1))
            # The open model (locust.load.arrivalRate); empty in the closed model.
            .with_panel(graph(
                "Offered vs achieved rate",
                "Open model only (locust.load.arrivalRate): the requests per second asked of the release, and those "
                "sent. Achieved below offered: the workers cannot keep the schedule (see Late starts).", [
                    query(f"max(locust_arrival_rate_offered_rps{{{LOCUST}}})", "offered"),
                    query(rps, "achieved")], "reqps", width=8))
            .with_panel(graph(
                "Response time (from intended send) vs service time",
                "Open model only: p99 of the response time measured from each request's intended send time (what a "
                "user waiting on the schedule sees, queueing included), and p99 of the service time measured from "
                "the actual send. A gap between them is time spent waiting to be sent.", [
                    query(f'locust_aggregated_response_time_seconds{{{LOCUST}, quantile="0.99"}}',
                          "p99 response time (from intended send)"),
                    query(f'locust_service_time_seconds{{{LOCUST}, quantile="0.99"}}', "p99 service time")],
                "s", width=8))
            .with_panel(graph(
                "Late starts",
                f"Open model only: share of the send slots started more than {verdict.LATE_MS} ms late, over the last "
                f"minute. cpu: a user was free but its worker woke late, the worker's CPU is at its ceiling; at the "
                f"dashed line ({LATE:.0%}) the generator, not the target, is the limit: add workers. users: no user "
                f"was free, the pool is too small for the target's latency.", [
                    query(f'{rule("loadtest:late_starts:share1m")}{{{RELEASE}}}', "cpu"),
                    query(f'{rule("loadtest:late_starts_users:share1m")}{{{RELEASE}}}', "users")],
                "percentunit", width=8, red_from=LATE))
            .build())


def generator() -> dashboard.Dashboard:
    per_worker = "{{worker}}"
    return (base("loadtest-generator", "Load generator health",
                 "Is every Locust worker below its CPU ceiling and pulling its share of the load?")
            .with_panel(graph(
                "Worker CPU, share of its ceiling",
                f"Each worker's CPU over what it may use: its CPU limit, at most one core (a worker is one thread). "
                f"At the dashed line ({SATURATED:.0%}) the worker caps the RPS. Each worker reports it every 3 s.",
                [worker_saturation(per_worker)], "percentunit", red_from=SATURATED, max_value=1.2))
            .with_panel(graph(
                "Worker CPU and limit",
                "CPU cores each worker uses, and the workers' CPU limits (none drawn for workers without one).", [
                    query(f"locust_worker_cpu_usage_cores{{{LOCUST}}}", per_worker),
                    query(f"max(locust_worker_cpu_limit_cores{{{LOCUST}}} < Inf)", "limit")], "none"))
            .with_panel(graph(
                "CPU throttling",
                f"Share of CFS periods in which the kernel throttled each worker container (cAdvisor). Above the "
                f"dashed line ({THROTTLED:.0%}) its CPU limit holds it back.",
                [query(f'{rule("loadtest:worker_cpu_throttling:ratio")}{{{RELEASE}}}', "{{pod}}")],
                "percentunit", red_from=THROTTLED, max_value=1))
            .with_panel(graph("Requests per second per worker",
                              "Each worker's share of the load; a worker far below the others is starved.",
                              [query(f"rate(locust_worker_requests_total{{{LOCUST}}}[$__rate_interval])", per_worker)],
                              "reqps"))
            .with_panel(graph("Worker memory", "Resident memory of each worker process.",
                              [query(f"locust_worker_memory_bytes{{{LOCUST}}}", per_worker)], "bytes"))
            .with_panel(graph("Users per worker", "Users running on each worker.",
                              [query(f"locust_worker_users{{{LOCUST}}}", per_worker)], "none"))
            .with_panel(graph(
                "CPU warnings",
                "Locust's CPU warnings per worker in the dashboard's time range (each is a 10 s CPU check above 90 %).",
                [query(f"increase(locust_worker_cpu_warnings_total{{{LOCUST}}}[$__range])", per_worker)], "none"))
            .with_panel(graph(
                "Master CPU",
                "CPU cores used by the Locust master, which aggregates every worker's statistics.",
                [query(f'rate(process_cpu_seconds_total{{{LOCUST}, loadtest_role="generator"}}[$__rate_interval])',
                       "master")], "none"))
            .build())


def targets() -> dashboard.Dashboard:
    per_pod = "{{namespace}}/{{pod}}"
    return (base("loadtest-targets", "Targets",
                 "What each target pod (nginx, NGINX Ingress Controller, HAProxy) serves, and how close its CPU is to "
                 "its limit.")
            .with_panel(graph("Requests per second per target pod", "Requests each target pod served.",
                              [query(f'{rule("loadtest:target_requests:rate1m")}{{{RELEASE}}}', per_pod)], "reqps"))
            .with_panel(graph(
                "Target CPU, share of its ceiling",
                f"Each target pod's CPU over its CPU limit (cAdvisor), or HAProxy's busy time without a limit. At the "
                f"dashed line ({SATURATED:.0%}) the target sets the RPS.",
                [query(f'{rule("loadtest:target_cpu_saturation:ratio")}{{{RELEASE}}}', per_pod)],
                "percentunit", red_from=SATURATED, max_value=1.2))
            .with_panel(graph(
                "Target CPU",
                "CPU cores each target pod uses (cAdvisor).",
                [query(f"sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{{{CONTAINERS}}}"
                       f"[$__rate_interval])) * on (namespace, pod) group_left () "
                       f"group by (namespace, pod) (up{{{TARGETS}}})", per_pod)], "none"))
            .with_panel(graph(
                "Target CPU throttling",
                f"Share of CFS periods in which the kernel throttled each target pod (cAdvisor); dashed line at "
                f"{THROTTLED:.0%}.",
                [query(f'{rule("loadtest:target_cpu_throttling:ratio")}{{{RELEASE}}}', per_pod)],
                "percentunit", red_from=THROTTLED, max_value=1))
            .with_panel(graph("Connections", "Open client connections per target pod.", [
                query(f"sum by (namespace, pod) (nginx_connections_active{{{TARGETS}}} "
                      f"or nginx_ingress_nginx_connections_active{{{TARGETS}}})", per_pod),
                query(f'sum by (namespace, pod) (nginx_ingress_controller_nginx_process_connections'
                      f'{{{TARGETS}, state="active"}})', per_pod),
                query(f"sum by (namespace, pod) (haproxy_frontend_current_sessions{{{TARGETS}}})", per_pod)],
                "none", width=24))
            .build())


def capacity() -> dashboard.Dashboard:
    return (base("loadtest-capacity", "Cluster capacity",
                 "How full the nodes are, and whether pods wait for room (kube-state-metrics, cAdvisor).")
            .with_panel(graph("Node CPU requested",
                              "CPU requested by Pending and Running pods over allocatable CPU, per node.",
                              [node_cpu_requested()], "percentunit", max_value=1))
            .with_panel(graph(
                "Node CPU used",
                "CPU the node's pods use (cAdvisor) over allocatable CPU, per node. Requested far above used: the "
                "requests, not the work, fill the nodes.",
                [query(f"sum by (node) (rate(container_cpu_usage_seconds_total{{{CONTAINERS}}}[$__rate_interval]) "
                       f"* on (namespace, pod) group_left (node) group by (namespace, pod, node) (kube_pod_info)) "
                       f'/ sum by (node) (kube_node_status_allocatable{{resource="cpu"}})', "{{node}} used")],
                "percentunit", max_value=1))
            .with_panel(graph("Pending pods", "Pods waiting for a node, per namespace (e.g. no CPU left).",
                              [query('sum by (namespace) (kube_pod_status_phase{phase="Pending"}) > 0',
                                     "{{namespace}}")], "none"))
            .with_panel(graph("Worker replicas", "Locust worker pods wanted and available.", [
                query('kube_deployment_spec_replicas{namespace="$namespace", deployment="$release-locust-worker"}',
                      "wanted"),
                query('kube_deployment_status_replicas_available{namespace="$namespace", '
                      'deployment="$release-locust-worker"}', "available")], "none"))
            .with_panel(graph("CPU requests and limits", "CPU requested and limited per pod of the namespace.", [
                query('sum by (pod) (kube_pod_container_resource_requests{namespace="$namespace", resource="cpu"})',
                      "{{pod}} request"),
                query('sum by (pod) (kube_pod_container_resource_limits{namespace="$namespace", resource="cpu"})',
                      "{{pod}} limit")], "none"))
            .with_panel(graph("Pods per phase", "Pods of the namespace per phase.", [
                query('sum by (phase) (kube_pod_status_phase{namespace="$namespace"})', "{{phase}}")], "none"))
            .build())


DASHBOARDS = {"loadtest-overview": overview, "loadtest-generator": generator, "loadtest-targets": targets,
              "loadtest-capacity": capacity}


def numbered(board) -> object:
    """The dashboard with panel ids and query refIds set (Grafana keys panel state and query results by them)."""
    for number, panel in enumerate(board.panels, 1):
        panel.id_val = number
        for index, target in enumerate(panel.targets or []):
            target.ref_id = chr(ord("A") + index)
    return board


def render() -> dict[Path, str]:
    """Each dashboard's file and JSON text."""
    return {FOLDER / f"{uid}.json": json.dumps(numbered(build()), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"
            for uid, build in DASHBOARDS.items()}


def stale_files() -> list[Path]:
    return committed.stale(render())


def write() -> list[Path]:
    """Write the dashboards that changed; the files written."""
    return committed.write(render())


def panel_queries(board: dict) -> list[tuple[str, str]]:
    """(panel title, PromQL expression) of every query of a dashboard's JSON."""
    return [(panel["title"], target["expr"]) for panel in board["panels"] for target in panel.get("targets", [])]


def all_panel_queries() -> list[tuple[str, str, str]]:
    """(dashboard title, panel title, PromQL expression) of every query of the written dashboards."""
    boards = [json.loads(p.read_text()) for p in sorted(FOLDER.glob("*.json"))]
    return [(board["title"], title, expr) for board in boards for title, expr in panel_queries(board)]


def resolve(expr: str, namespace: str, release: str, interval: str = "1m") -> str:
    """A panel's expression with Grafana's variables set as the dashboard would set them for a release."""
    for variable, value in {"$namespace": namespace, "$release": release, "$__rate_interval": interval,
                            "$__range": interval}.items():
        expr = expr.replace(variable, value)
    return expr


def needs_cluster(expr: str) -> bool:
    """Whether an expression reads series only a cluster has (see CLUSTER_ONLY)."""
    return any(re.search(rf"\b{re.escape(prefix)}", expr) for prefix in CLUSTER_ONLY)


def needs_open_model(expr: str) -> bool:
    """Whether an expression reads series only the open model has (see OPEN_MODEL_ONLY)."""
    return any(re.search(rf"\b{re.escape(prefix)}", expr) for prefix in OPEN_MODEL_ONLY)

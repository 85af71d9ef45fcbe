"""The open model on the real node: `locust.load.arrivalRate` makes the chart's master split the rate over its worker,
the pool it sizes holds it, and the release's Prometheus shows what the rules and the dashboards read: the offered
rate, the achieved one, no late starts, both latencies, and data in every open-model panel."""
from __future__ import annotations

from conftest import WINDOW, Prometheus, install, wait_ready

from loadtest_shared import checks, verdict

from loadtest.generate import dashboards
from loadtest.workload import arrival

RATE = 1000
RELEASE = 'release="lt"'


def test_the_chart_holds_its_arrival_rate_and_the_rules_see_it(cluster, namespace, helm):
    install(helm, namespace, "--set", "locust.mode=autostart", "--set", f"locust.load.arrivalRate={RATE}",
            "--set", "locust.autostart.spawnRate=1000", "--set", "locust.worker.cpu=1000m",
            "--set", "locust.target=backend")
    wait_ready(cluster, namespace)
    master_args = cluster.kubectl("get", "deploy", "-n", namespace, "lt-locust-master",
                                  "-o", "jsonpath={.spec.template.spec.containers[0].args}")
    assert f'"--users={arrival.pool_size(RATE, 1)}"' in master_args, master_args
    prometheus = Prometheus(cluster, namespace)
    assert prometheus.wait(f"loadtest:arrival_rate:offered{{{RELEASE}}}", lambda v: v == RATE) == RATE
    achieved = f'sum(rate(locust_requests_total{{namespace="{namespace}"}}{WINDOW}))'
    # A whole window of the schedule in the rate's range (the rules' window): within 1 % of the offered rate.
    rps = prometheus.wait(achieved, lambda v: v is not None and checks.held(RATE, v), timeout=240)
    # The rules' own reading of it (an evaluation, up to a scrape later): a rate is short for the verdict only where
    # it was short at every evaluation of the window, so none is from here on while it holds.
    prometheus.wait(f"loadtest:requests:rate1m{{{RELEASE}}} / on (release) loadtest:arrival_rate:offered{{{RELEASE}}}",
                    lambda v: v is not None and v >= verdict.ACHIEVED_SHARE, timeout=120)
    late = prometheus.wait(f"loadtest:late_starts:share1m{{{RELEASE}}}", lambda v: v is not None)
    waiting = prometheus.value(f"loadtest:late_starts_users:share1m{{{RELEASE}}}")
    response = prometheus.wait(
        f'locust_aggregated_response_time_seconds{{namespace="{namespace}",quantile="0.99"}}', lambda v: v is not None)
    service = prometheus.wait(
        f'locust_service_time_seconds{{namespace="{namespace}",quantile="0.99"}}', lambda v: v is not None)
    generator_bound = prometheus.value(f'loadtest:verdict{{{RELEASE},verdict="generator-bound"}}')
    print(f"offered {RATE}/s, achieved {rps:.1f}/s; late starts cpu {late:.2%}, users {waiting or 0:.2%}; "
          f"p99 response {response * 1000:.1f} ms, service {service * 1000:.1f} ms; generator-bound {generator_bound}")
    assert late < verdict.LATE_STARTS and (waiting or 0) < verdict.LATE_STARTS
    assert generator_bound != 1
    open_panels = [(b, p, e) for b, p, e in dashboards.all_panel_queries() if dashboards.needs_open_model(e)]
    assert len(open_panels) == 4, open_panels  # the offered rate, the service time, late starts by cause (two)
    for board, panel, expr in open_panels:
        prometheus.wait_for_data(dashboards.resolve(expr, namespace, "lt"), f"{board} / {panel}")

"""`loadtest tune`'s decision: recorded snapshots of a release (its values, pods, nodes and steady window) and the
diagnosis and values change each must give, with the numbers from the sizing, the catalog and the rules."""
from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest
import yaml

from loadtest_shared import checks, verdict

from loadtest import paths
from loadtest.capacity import catalog, profiles, sizing
from loadtest.judging import rules, tuning

C5_XLARGE = catalog.get("c5.xlarge")


def eks_group(node_type: str = "c5.xlarge", nodes: int = 2) -> tuning.NodeGroup:
    """An EKS node group as tune reads it from the cluster: the add-ons' DaemonSets, CoreDNS, a 200m master."""
    return tuning.NodeGroup(sizing.node_shape(catalog.get(node_type)), nodes, sizing.EKS_DAEMONSETS,
                            sizing.EKS_CLUSTER_PODS, sizing.MASTER_SMALL, node_type=node_type)


def window(busiest: float, target: float | None = 0.3, throttling: float | None = 0.0, samples: int = 4,
           generator_share: float | None = None, target_share: float | None = None) -> verdict.Window:
    """A steady window whose saturated shares follow from its figures, as the rules record them."""
    sample = verdict.Sample((busiest,), target, None, None if throttling is None else (throttling,))
    return verdict.Window(samples, sample.saturated_workers if generator_share is None else generator_share,
                          float(sample.target_saturated) if target_share is None else target_share, busiest,
                          target, None, throttling)


# The seed's first run: 5 workers at 100m, throttled at their quota, on 2 c5.xlarge nodes that are 40 % requested.
THIN = tuning.Snapshot("lt", "interactive", 100, 512, 5, 0, 500, 230.0, 0.0, 40.0,
                       window(busiest=0.99, throttling=0.85), eks_group())
SNAPSHOTS = {
    "thin workers": (THIN, tuning.WHOLE_CORE,
                     {"locust.worker.cpu": "1000m", "locust.worker.replicas": "6"}, 0),
    "whole workers, room on the nodes": (
        replace(THIN, worker_cpu_m=1000, replicas=4, window=window(busiest=0.97)), tuning.MORE_GENERATOR,
        {"locust.worker.replicas": "6"}, 0),
    # 6 workers fill 2 c5.xlarge; 8 would sit at ~73 % of a core: 3 nodes hold 9.
    "full nodes": (replace(THIN, worker_cpu_m=1000, replicas=6, window=window(busiest=0.97)),
                   tuning.MORE_GENERATOR, {}, 1),
    "target-bound": (replace(THIN, worker_cpu_m=1000, replicas=6, window=window(busiest=0.4, target=0.95)),
                     tuning.SWEEP_TARGET, {}, 0),
    # Interactive mode: the users are the web UI's, no values change.
    "healthy, interactive": (replace(THIN, worker_cpu_m=1000, replicas=6, window=window(busiest=0.3, target=0.45)),
                             tuning.RAISE_USERS, {}, 0),
    # 0.9 / 0.45 = 2x the users.
    "healthy, autostart": (replace(THIN, mode="autostart", worker_cpu_m=1000, replicas=6,
                                   window=window(busiest=0.3, target=0.45)),
                           tuning.RAISE_USERS, {"locust.autostart.users": "1000"}, 0),
    # The open model: its load is the rate (the chart refuses a user count beside it), 0.9 / 0.45 = 2x.
    "healthy, autostart, open model": (replace(THIN, mode="autostart", worker_cpu_m=1000, replicas=6, users=1000,
                                               arrival_rate=2000.0, window=window(busiest=0.3, target=0.45)),
                                       tuning.RAISE_USERS, {"locust.load.arrivalRate": "4000"}, 0),
    "healthy, interactive, open model": (replace(THIN, worker_cpu_m=1000, replicas=6, users=1000, arrival_rate=2000.0,
                                                 window=window(busiest=0.3, target=0.45)), tuning.RAISE_USERS, {}, 0),
    # The target's CPU unmeasured (a target outside the release, a pod without a CPU limit): the workers' headroom
    # alone does not say more users would be served; measure the target first.
    "target unmeasured": (replace(THIN, mode="autostart", worker_cpu_m=1000, replicas=6,
                                  window=window(busiest=0.2, target=None)), tuning.MEASURE_TARGET, {}, 0),
    # The open model's rate not sent, neither side saturated: no load or size change helps; look at the schedule.
    "rate not offered": (replace(THIN, mode="autostart", worker_cpu_m=1000, replicas=6, users=1000, arrival_rate=2000.0,
                                 window=replace(window(busiest=0.3, target=0.2), late_starts=0.0, late_users=0.0,
                                                achieved=0.5, requests_per_slot=1.0)), tuning.CHECK_SCHEDULE, {}, 0),
    # A worker lost mid-window: the window ran with less load; whatever the CPU read, nothing to size from it.
    "worker lost": (replace(THIN, worker_cpu_m=1000, replicas=6,
                            window=replace(window(busiest=0.97), losses=("worker lost at 12 s: lt-worker-1",))),
                    tuning.WORKERS_LOST, {}, 0),
    # A target refusing while whole workers spin at their core: the failures are the target's, not more workers.
    "target refusing": (replace(THIN, worker_cpu_m=1000, replicas=6, fail_ratio=0.6,
                                window=replace(window(busiest=0.98, target=0.1), failure_ratio=0.6)),
                        tuning.TARGET_NOT_SERVING, {}, 0),
    # Users running, but no sample of the workers' CPU in the window: nothing judged, nothing advised.
    "no CPU sample": (replace(THIN, window=window(busiest=0.0, target=None, samples=0, generator_share=0.0,
                                                  target_share=0.0)), tuning.IDLE, {}, 0),
    # 8 asked on 2 c5.xlarge that hold 6: ask for 6, or add a node.
    "pending workers": (replace(THIN, worker_cpu_m=1000, replicas=8, pending=2), tuning.WORKERS_PENDING,
                        {"locust.worker.replicas": "6"}, 1),
    "no swarm": (replace(THIN, users=0, window=None, rps=None), tuning.IDLE, {}, 0),
    # A 2-vCPU node without the add-ons' DaemonSets, like this machine's real node: one whole worker fits.
    "thin worker on a small node": (
        replace(THIN, replicas=1, group=tuning.NodeGroup(
            sizing.NodeShape("node", 2000, 8000, 2000, 8000, 110), 1, (),
            (sizing.PodRequest("coredns", 50, 70), sizing.PodRequest("backend", 100, 64),
             sizing.PodRequest("prometheus", 100, 256)), sizing.PodRequest("locust-master", 100, 256))),
        tuning.WHOLE_CORE, {"locust.worker.cpu": "1000m", "locust.worker.replicas": "1"}, 0),
}


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_each_snapshot_gets_its_diagnosis_and_change(name):
    snapshot, diagnosis, changes, nodes = SNAPSHOTS[name]
    advice = tuning.advise(snapshot)
    print(f"{name}: {advice.diagnosis}: {advice.summary}")
    assert (advice.diagnosis, advice.changes, advice.nodes_to_add) == (diagnosis, changes, nodes)
    assert set(advice.current) == set(advice.changes)
    assert advice.changes or advice.next_step or advice.nodes_to_add, "advice with nothing to do"


def test_a_node_to_add_is_priced_from_the_catalog():
    advice = tuning.advise(SNAPSHOTS["full nodes"][0])
    assert advice.usd_per_hour == C5_XLARGE.price_usd_hour
    assert f"{C5_XLARGE.price_usd_hour:.3f} USD/h" in advice.summary


@pytest.mark.parametrize("node_type", ["c5.large", "c5.xlarge", "c5.4xlarge", "m5.large"])
def test_the_workers_a_group_holds_are_loadtest_sizes(node_type):
    profile = next(p for p in profiles.PROFILES if p.node_type == node_type)
    group = eks_group(node_type, profile.nodes)
    assert group.holds(1000, 512) == profile.plan.replicas == sizing.plan_workers(profile.shape, profile.nodes).replicas


def test_the_thin_workers_advice_shows_its_figures():
    advice = tuning.advise(THIN)
    text = "\n".join((advice.summary, *advice.figures))
    assert "throttled in 85% of their CFS periods" in text
    assert "they hold 6 worker(s) at 1000m" in text
    assert "230 RPS" in text


def test_raising_users_is_bounded_and_says_the_rps_it_expects():
    cool = replace(THIN, mode="autostart", worker_cpu_m=1000, replicas=6, users=100, rps=1000.0,
                   window=window(busiest=0.01, target=0.02))
    advice = tuning.advise(cool)
    assert advice.changes == {"locust.autostart.users": str(100 * tuning.MAX_USERS_FACTOR)}
    assert "about 4,000 RPS at 10.0 RPS a user" in advice.summary


def test_a_core_that_fits_no_node_asks_for_nodes_not_a_pending_worker():
    crowded = replace(THIN, group=replace(THIN.group, nodes=1, cluster_pods=(sizing.PodRequest("other", 3200, 100),)))
    advice = tuning.advise(crowded)
    assert advice.diagnosis == tuning.WHOLE_CORE and not advice.changes
    assert advice.nodes_to_add >= 1


def test_a_regression_is_an_rps_drop_beyond_compares_limit_or_new_failures():
    before = replace(THIN, worker_cpu_m=1000, replicas=6, rps=1000.0, fail_ratio=0.0)
    assert tuning.Outcome(before, replace(before, rps=960.0)).worse == []
    assert "RPS fell 10%" in tuning.Outcome(before, replace(before, rps=900.0)).worse[0]
    assert "failures rose" in tuning.Outcome(before, replace(before, fail_ratio=0.05)).worse[0]
    assert len(tuning.Outcome(before, before).table()) == 8


def test_the_upgrade_keeps_every_other_value():
    assert tuning.upgrade_command("lt", "lt", "charts/loadtest", {"locust.worker.cpu": "1000m"}) == [
        "helm", "upgrade", "lt", "charts/loadtest", "-n", "lt", "--reuse-values", "--set", "locust.worker.cpu=1000m"]


def test_every_cause_of_the_verdict_has_its_advice_in_the_judges_order():
    """tune dispatches on the judge's cause and the rules' advice is written from the same table: one entry a cause,
    in CAUSES' order, and every diagnosis explained on the dashboard and in docs/cluster.md's table."""
    assert list(tuning.ADVICE) == [c.name for c in verdict.CAUSES]
    assert set(tuning.MEANINGS) == set(tuning.DIAGNOSES)
    table = (paths.HOME / "docs" / "cluster.md").read_text()
    assert all(f"| `{d}` |" in table for d in (*tuning.DIAGNOSES, tuning.IDLE))


def test_the_rules_advice_names_tunes_diagnoses_over_tunes_window():
    """The dashboards' advice (loadtest:advice) and tune's are one diagnosis: the same names, the same window
    (tests/promtool holds the situations each name comes from)."""
    advice = [r for r in rules.rules() if r.get("record") == "loadtest:advice"]
    assert [r["labels"]["advice"] for r in advice] == list(tuning.DIAGNOSES)
    shares = [r["expr"] for r in rules.rules()
              if r.get("record") in ("loadtest:generator_limit_steady:share1m", "loadtest:workers_starved:bool",
                                     "loadtest:workers_pending:count")]
    assert len(shares) == 3 and all(f"[{tuning.DEFAULT_WINDOW_S // 60}m]" in expr for expr in shares)


def test_with_more_pods_than_the_sizing_places_every_way_they_count_where_they_run():
    """Beyond MAX_PLACED_PODS other pods (a cluster with many add-ons), every placement is too many to try: the pods
    stay where they run, each node's CPU left now holds what it holds, and an added node is an empty one."""
    many = tuple(sizing.PodRequest(f"addon-{i}", 100, 64) for i in range(tuning.MAX_PLACED_PODS + 1))
    group = replace(eks_group(), cluster_pods=many, free_now_m=(3495 - 900, 3495 - 200))
    assert group.holds(1000, 512) == 2 + 3
    assert group.holds(1000, 512, nodes=3) == 2 + 3 + 3
    assert group.nodes_for(7, 1000, 512) == 3


def test_tune_judges_the_releases_rules_window_and_a_minute_without_one():
    """The window is the release's monitoring.rules.windowSeconds (helm get values --all holds the chart's default,
    60); a release of a chart without the value judges the minute its rules were written for."""
    defaults = yaml.safe_load((paths.CHART / "charts" / "monitoring" / "values.yaml").read_text())
    assert tuning.window_s({"monitoring": defaults}) == tuning.DEFAULT_WINDOW_S == 60
    assert tuning.window_s({"monitoring": {"enabled": True, "rules": {"windowSeconds": 30}}}) == 30
    assert tuning.window_s({"monitoring": {"enabled": True}}) == 60
    assert tuning.window_s({}) == 60
    idle = tuning.advise(replace(THIN, window=None, users=0, window_s=30))
    assert idle.diagnosis == tuning.IDLE and "no steady window of 30 s" in idle.summary
    assert "every user has run for 30 s" in idle.next_step


def test_snapshot_judges_no_window_until_every_user_ran_for_the_releases_window(monkeypatch):
    """tune's snapshot asks the release's Prometheus how long every user has run within the release's window, and
    names it when the swarm has not run that long (tests/chart/test_tune_window.py holds the queries to Prometheus'
    answers)."""
    from loadtest.runtime import tune

    class Release:
        name = "lt"

        def values(self):
            return {"locust": {"mode": "autostart", "worker": {"cpu": "100m"}},
                    "monitoring": {"enabled": True, "rules": {"windowSeconds": 30}}}

        def labelled(self, kind, component):
            return {"spec": {"replicas": 1}}

    now = 1_800_000_000.0

    class Prometheus:
        queries: list[str] = []

        def scrape_interval_s(self):
            return 5.0

        def scalar(self, expr, at=None):
            assert at == now
            self.queries.append(expr)
            return 1.0 if "last_over_time" in expr else now - 20  # steady now, since 20 s

    monkeypatch.setattr(tune.time, "time", lambda: now)
    monkeypatch.setattr(tune, "node_group", lambda release, worker: None)
    monkeypatch.setattr(tune, "pending_workers", lambda release: 0)
    prometheus = Prometheus()
    s = tune.snapshot(Release(), prometheus)
    assert s.window_s == 30 and s.window is None
    assert prometheus.queries == ['max(last_over_time(loadtest:steady:bool{release="lt"}[30s]))',
                                  'max(max_over_time(timestamp(loadtest:steady:bool{release="lt"} == 0)[30s:5s]))']
    assert s.no_window == "every user ran for 20 s of the last 30 s; run tune again in 10 s"


def test_an_applied_change_whose_window_never_came_is_unmeasured_exit_4(monkeypatch, capsys):
    """`tune --apply` upgrades, then finds no steady window after the change: the after side is said to be
    unmeasured and nothing is judged (exit 4), never a table of dashes with exit 0. The release, its helm and its
    Prometheus are the node layer's (tests/node/test_tune.py); here only what tune makes of a missing window."""
    from loadtest import commands
    from loadtest.commands import tune as tune_command
    from loadtest.runtime import tune

    after = replace(THIN, worker_cpu_m=1000, rps=None, p95_ms=None, window=None,
                    no_window="every user ran for 15 s of the last 20 s; run tune again in 5 s")
    upgraded = []

    class Release:
        def __init__(self, name, namespace, kubeconfig=None):
            self.name = name

        def port_forward(self, component, port):
            return contextlib.nullcontext(f"http://127.0.0.1:1/{component}")

        def web_credentials(self):
            return None

    monkeypatch.setattr(tune_command, "Release", Release)
    monkeypatch.setattr(tune_command, "Prometheus", lambda url: url)
    monkeypatch.setattr(tune, "check_release", lambda release: {})
    monkeypatch.setattr(tune, "snapshot", lambda release, prometheus: THIN)
    monkeypatch.setattr(tune, "revision", lambda release: 3)
    monkeypatch.setattr(tune, "upgrade", lambda release, chart, changes: upgraded.append(changes))
    monkeypatch.setattr(tune, "after_change", lambda release, prometheus, web, credentials: after)
    code = commands.main(["tune", "--release", "lt", "--namespace", "lt", "--apply", "--yes"])
    out = capsys.readouterr().out
    assert upgraded == [{"locust.worker.cpu": "1000m", "locust.worker.replicas": "6"}]
    assert code == checks.RUN_FAILED, out
    assert "After            unmeasured: every user ran for 15 s of the last 20 s" in out
    assert "(the change stays applied)" in out and "Now " not in out

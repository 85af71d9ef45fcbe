"""The dashboards as code: the committed JSON is what loadtest/generate/dashboards.py generates, and the panels read the
saturation rules' series and thresholds rather than copies of them."""
from __future__ import annotations

import json
import re

import pytest

from loadtest_shared import verdict

from loadtest import commands
from loadtest.generate import dashboards
from loadtest.judging import rules

BOARDS = {path.stem: json.loads(path.read_text()) for path in sorted(dashboards.FOLDER.glob("*.json"))}


def test_committed_dashboards_match_the_generator():
    assert dashboards.stale_files() == [], "run `loadtest dashboards` and commit the result"
    assert set(BOARDS) == set(dashboards.DASHBOARDS)


def test_check_command_reports_up_to_date(capsys):
    assert commands.main(["dashboards", "--check"]) == 0
    assert "match" in capsys.readouterr().out


@pytest.mark.parametrize("uid", sorted(dashboards.DASHBOARDS))
def test_dashboard_has_datasource_namespace_and_release_variables(uid):
    board = BOARDS[uid]
    assert board["uid"] == uid and dashboards.TAG in board["tags"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert list(variables) == ["datasource", "namespace", "release"]
    assert variables["datasource"]["query"] == "prometheus"
    for panel in board["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["description"], panel["title"]
        assert panel["fieldConfig"]["defaults"].get("unit") or panel["type"] == "stat", panel["title"]
        assert [t["refId"] for t in panel["targets"]] == [chr(ord("A") + i) for i in range(len(panel["targets"]))]


def test_panels_read_only_recorded_loadtest_series():
    used = {name for board in BOARDS.values() for _, expr in dashboards.panel_queries(board)
            for name in re.findall(r"loadtest:[a-z_0-9]+:[a-z_0-9]+|loadtest:verdict\b", expr)}
    assert used and used <= set(rules.recorded()), used - set(rules.recorded())


def test_locust_series_are_filtered_by_namespace_and_release():
    for board in BOARDS.values():
        for title, expr in dashboards.panel_queries(board):
            for selector in re.findall(r"locust_\w+\{([^}]*)\}", expr):
                assert 'namespace="$namespace"' in selector and 'release="$release"' in selector, (title, expr)


def test_verdict_panel_shows_the_verdict_rule():
    (verdict,) = [p for p in BOARDS["loadtest-overview"]["panels"] if p["title"] == "Verdict"]
    assert verdict["targets"][0]["expr"] == 'loadtest:verdict{release="$release"}'
    colored = {o["matcher"]["options"] for o in verdict["fieldConfig"]["overrides"]}
    recorded = {r["labels"]["verdict"] for r in rules.rules() if r.get("record") == "loadtest:verdict"}
    assert colored == recorded == {"generator-bound", "target-bound", "healthy", "not generator-bound"}


def test_saturation_lines_are_the_rules_thresholds():
    saturated = verdict.THRESHOLDS["loadtest:cpu_saturation:threshold"]
    lines = [step["value"] for board in BOARDS.values() for panel in board["panels"]
             if "share of its ceiling" in panel["title"]
             for step in panel["fieldConfig"]["defaults"]["thresholds"]["steps"] if step["value"] is not None]
    assert lines and set(lines) == {saturated}


def test_cluster_only_expressions_are_recognised():
    assert dashboards.needs_cluster('sum(kube_pod_status_phase{phase="Pending"})')
    assert dashboards.needs_cluster('loadtest:worker_cpu_throttling:ratio{release="$release"}')
    assert not dashboards.needs_cluster('rate(locust_requests_total{release="$release"}[1m])')


def test_open_model_expressions_are_recognised():
    assert dashboards.needs_open_model('max(locust_arrival_rate_offered_rps{release="$release"})')
    assert dashboards.needs_open_model('locust_service_time_seconds{release="$release", quantile="0.99"}')
    assert dashboards.needs_open_model('loadtest:late_starts_users:share1m{release="$release"}')
    assert not dashboards.needs_open_model('locust_aggregated_response_time_seconds{release="$release"}')
    assert not dashboards.needs_open_model('rate(locust_requests_total{release="$release"}[1m])')


def test_open_model_panels_show_offered_latency_and_late_starts():
    """The open model's panels (locust.load.arrivalRate) read its series, and the late starts' line is the rules'."""
    panels = {p["title"]: p for p in BOARDS["loadtest-overview"]["panels"]}
    queries = {title: [t["expr"] for t in panels[title]["targets"]] for title in (
        "Offered vs achieved rate", "Response time (from intended send) vs service time", "Late starts")}
    assert "locust_arrival_rate_offered_rps" in queries["Offered vs achieved rate"][0]
    assert "rate(locust_requests_total" in queries["Offered vs achieved rate"][1]
    assert 'quantile="0.99"' in queries["Response time (from intended send) vs service time"][0]
    assert "locust_service_time_seconds" in queries["Response time (from intended send) vs service time"][1]
    assert [q.split("{")[0] for q in queries["Late starts"]] == ["loadtest:late_starts:share1m",
                                                                 "loadtest:late_starts_users:share1m"]
    steps = panels["Late starts"]["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert [s["value"] for s in steps if s["value"] is not None] == [verdict.LATE_STARTS]

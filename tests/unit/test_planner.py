import json
import math
import re

import pytest

from loadtest import commands, paths
from loadtest.capacity import calibration, planner
from loadtest.workload import arrival, scenarios

FLAT = calibration.Calibration({name: 5_000 for name in scenarios.SCENARIOS}, "test figures")


def test_c5_beats_m5_per_dollar_for_the_cpu_bound_generator():
    options = planner.plan(10_000, "keepalive_1kb", ["m5.large", "c5.large"], calibration=FLAT)
    assert [o.node_type for o in options] == ["c5.large", "m5.large"]
    assert options[0].usd_per_1k_rps < options[1].usd_per_1k_rps


def test_two_c5_xlarge_carry_six_workers_worth_of_rps():
    (option,) = planner.plan(6 * 5_000, "keepalive_1kb", ["c5.xlarge"], headroom=0, calibration=FLAT)
    assert (option.nodes, option.plan.replicas, option.expected_rps) == (2, 6, 30_000)


def test_headroom_adds_workers():
    (lean,) = planner.plan(30_000, "keepalive_1kb", ["c5.xlarge"], headroom=0, calibration=FLAT)
    (spare,) = planner.plan(30_000, "keepalive_1kb", ["c5.xlarge"], headroom=0.5, calibration=FLAT)
    assert spare.plan.replicas > lean.plan.replicas


def test_baseline_bandwidth_caps_large_transfers():
    fast = calibration.Calibration({"tls_handshake": 1_000_000}, "test")
    (option,) = planner.plan(100_000, "tls_handshake", ["c5.large"], headroom=0, calibration=fast)
    assert option.bandwidth_limited
    assert option.expected_rps == pytest.approx(option.nodes * planner.bandwidth_rps(
        option.instance, scenarios.SCENARIOS["tls_handshake"]))


def test_impossible_target_is_refused_naming_the_cap():
    with pytest.raises(planner.PlanError, match=r"within 10 nodes.*c5.large: 10 nodes reach less"):
        planner.plan(10_000_000, "keepalive_1kb", ["c5.large"], calibration=FLAT, max_nodes=10)


def test_unknown_node_type_is_bad_input():
    with pytest.raises(ValueError, match="unknown node type 'c5.mega'"):
        planner.plan(1_000, "keepalive_1kb", ["c5.mega"], calibration=FLAT)


def test_unknown_scenario_is_bad_input():
    with pytest.raises(calibration.CalibrationError, match="--scenario nope: unknown.*loadtest calibrate -f"):
        planner.plan(1_000, "nope", ["c5.large"], calibration=FLAT)


def test_a_calibrated_test_of_the_users_is_planned_with_its_own_figure_and_response_size(tmp_path):
    path = tmp_path / "calibration.json"
    shop = calibration.figure("shop", 3_000, 1.0, 0, False, user_class="Shopper", locustfile="/t/shop/locustfile.py",
                              response_bytes=9_000)
    calibration.merge(path, "shop", shop, {"locust_version": "2.47.0", "cpu_model": "test CPU", "cores": 2})
    loaded = calibration.load_calibration(path)
    assert loaded.rps_per_core["shop"] == 3_000
    assert loaded.rps_per_core["keepalive_1kb"] == scenarios.get("keepalive_1kb").default_rps_per_core
    own = loaded.scenario("shop")
    assert own.wire_bytes == 9_000 + calibration.HEADER_BYTES and own.target_metric == "rps"
    (option, *_) = planner.plan(30_000, "shop", ["c5.xlarge"], headroom=0, calibration=loaded)
    assert option.expected_rps == option.plan.replicas * 3_000 >= 30_000
    (lean, *_) = planner.plan(30_000, "keepalive_1kb", ["c5.xlarge"], headroom=0, calibration=loaded)
    assert lean.plan.replicas * 3 <= option.plan.replicas  # the heavier user class needs several times the workers


def test_calibration_file_overrides_defaults_and_names_its_source(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"date": "2026-11-22", "locust_version": "2.47.0", "cpu_model": "Test CPU",
                                "scenarios": {"keepalive_1kb": {"rps_per_core": 7_777}}}))
    cal = calibration.load_calibration(path)
    assert cal.rps_per_core["keepalive_1kb"] == 7_777
    assert "Test CPU" in cal.source


def test_no_calibration_file_says_it_uses_defaults(tmp_path, monkeypatch):
    monkeypatch.setattr(calibration, "DEFAULT_FILE", tmp_path / "none.json")
    assert "defaults" in calibration.load_calibration().source


def test_a_calibration_file_named_but_missing_is_refused_not_replaced_by_defaults(tmp_path):
    with pytest.raises(calibration.CalibrationError, match="no such file"):
        calibration.load_calibration(tmp_path / "none.json")


def test_target_side_suggests_nginx_cpus_from_the_published_table():
    assert "4 CPU(s)" in planner.target_suggestion(100_000, scenarios.get("keepalive_1kb"))
    assert "16 CPU(s)" in planner.target_suggestion(60_000, scenarios.get("tls_handshake"))
    assert "above the published table" in planner.target_suggestion(400_000, scenarios.get("keepalive_1kb"))


def test_plan_cli_writes_values_for_the_cheapest_option(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(calibration, "DEFAULT_FILE", tmp_path / "none.json")  # the defaults, whatever this machine has
    out = tmp_path / "not-yet" / "planned.yaml"  # its folder is made, as a user typing a new path expects
    assert commands.main(["plan", "--target-rps", "20000", "--node-types", "m5.large,c5.xlarge",
                          "--write-values", str(out)]) == 0
    text = capsys.readouterr().out
    assert "USD/1k RPS" in text and "Target side" in text
    header, cheapest, dearer = text.splitlines()[2:5]
    assert header.startswith("node type") and {cheapest.split()[0], dearer.split()[0]} == {"m5.large", "c5.xlarge"}
    assert f"nodeType: \"{cheapest.split()[0]}\"" in out.read_text()


def test_plan_cli_refuses_a_negative_target(capsys):
    with pytest.raises(SystemExit) as exc:
        commands.main(["plan", "--target-rps", "-5"])
    assert exc.value.code == 2
    assert "argument --target-rps: -5: give at least 1" in capsys.readouterr().err


def test_calibration_of_another_user_class_is_not_used(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"date": "2026-11-22", "locust_version": "2.47.0", "cpu_model": "Test CPU",
                                "scenarios": {"keepalive_1kb": {"rps_per_core": 1, "user_class": "FastHttpUser"}}}))
    assert calibration.load_calibration(path).rps_per_core["keepalive_1kb"] == \
        scenarios.SCENARIOS["keepalive_1kb"].default_rps_per_core


def test_every_planned_scenario_has_a_locustfile_with_its_user_class():
    assert {s.user_class for s in scenarios.SCENARIOS.values()} == {"LeanHttpUser"}


def test_the_open_model_plans_workers_for_the_share_of_a_core_that_holds_a_rate_on_schedule(capsys, monkeypatch,
                                                                                             tmp_path):
    (closed,) = planner.plan(60_000, "keepalive_1kb", ["c5.xlarge"], headroom=0, calibration=FLAT)
    (open_model,) = planner.plan(60_000, "keepalive_1kb", ["c5.xlarge"], headroom=0, calibration=FLAT,
                                 open_model=True)
    assert closed.plan.replicas == 12
    assert open_model.plan.replicas >= math.ceil(60_000 / (5_000 * arrival.CLOSED_SHARE)) > closed.plan.replicas
    assert open_model.expected_rps == pytest.approx(open_model.plan.replicas * 5_000 * arrival.CLOSED_SHARE)
    monkeypatch.setattr(calibration, "DEFAULT_FILE", tmp_path / "none.json")
    assert commands.main(["plan", "--target-rps", "20000", "--node-types", "c5.xlarge", "--open-model"]) == 0
    assert "locust.load.arrivalRate=20000" in capsys.readouterr().out


@pytest.mark.parametrize("doc", ["sizing.md", "open-model.md"])
def test_the_docs_quote_the_open_models_share_the_planner_uses(doc):
    """One source: the share is arrival.CLOSED_SHARE, and the docs that explain the plan quote that figure where they
    name it (the last percentage before the name)."""
    text = (paths.HOME / "docs" / doc).read_text()
    assert "arrival.CLOSED_SHARE" in text, f"docs/{doc} no longer names arrival.CLOSED_SHARE"
    quoted = re.findall(r"(\d+) %", text[:text.index("arrival.CLOSED_SHARE")])
    assert quoted and int(quoted[-1]) == round(arrival.CLOSED_SHARE * 100), (
        f"docs/{doc} should quote arrival.CLOSED_SHARE as {arrival.CLOSED_SHARE * 100:.0f} %, not {quoted[-1:]}")

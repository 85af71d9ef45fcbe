"""The scenario and target registries against the files they do not generate: each entry must have what the rest of
the project expects of it (its locustfile, its payload, its chart, its Prometheus series). `loadtest values --check`
covers what they do generate (schema enums, charts/common/templates/_registry.tpl)."""
from __future__ import annotations

import re

import pytest
import yaml

from loadtest import paths
from loadtest.judging import rules
from loadtest.workload import scenarios, targets

LOCUST_VALUES = (paths.CHART / "charts" / "locust" / "values.yaml").read_text()


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS.values(), ids=lambda s: s.name)
def test_scenario_has_its_locustfile_asking_for_its_payload(scenario):
    text = scenario.locustfile.read_text()
    assert re.search(rf'setting\("path", "/{scenario.payload}"\)', text), \
        f"{scenario.locustfile.name}: its default path must be /{scenario.payload}, the registry's payload"
    assert scenario.user_class == "LeanHttpUser"


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS.values(), ids=lambda s: s.name)
def test_scenario_locustfile_checks_the_tls_the_registry_says(scenario):
    text = scenario.locustfile.read_text()
    needs = {scenarios.TLS_REQUIRED: 'startswith("https://")', scenarios.TLS_FORBIDDEN: 'startswith("http://")'}
    if scenario.tls in needs:
        assert needs[scenario.tls] in text, f"{scenario.locustfile.name} must refuse a host of the wrong scheme"
    else:
        assert "startswith(" not in text


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS.values(), ids=lambda s: s.name)
def test_scenario_is_documented_in_the_locust_values(scenario):
    assert f"# {scenario.name}: " in LOCUST_VALUES, "describe it above `scenario:` in charts/locust/values.yaml"


def test_scenario_payloads_have_one_size_each():
    sizes = {}
    for s in scenarios.SCENARIOS.values():
        assert sizes.setdefault(s.payload, s.payload_bytes) == s.payload_bytes, s.payload
    assert scenarios.DEFAULT in scenarios.SCENARIOS


@pytest.mark.parametrize("target", targets.TARGETS.values(), ids=lambda t: t.name)
def test_target_chart_renders_its_config_and_owns_its_cpu_value(target):
    chart = paths.CHART / target.config_template.split("/templates/")[0]
    assert (paths.CHART / target.config_template).is_file()
    section, _, key = target.cpu_value.partition(".")
    assert chart.name == section and key in yaml.safe_load((chart / "values.yaml").read_text())
    assert f'"component" "{target.component}"' in (chart / "templates" / "deployment.yaml").read_text()
    assert set(target.tls_modes) <= set(targets.TLS_MODES) and "none" in target.tls_modes


@pytest.mark.parametrize("target", targets.TARGETS.values(), ids=lambda t: t.name)
def test_target_requests_are_read_by_the_saturation_rules(target):
    (served,) = [r["expr"] for r in rules.rules() if r.get("record") == "loadtest:target_requests:rate1m"]
    assert f"{target.requests_metric}{{" in served


def test_tls_mode_rules_refuse_what_cannot_work():
    plain, tls = scenarios.get("http_close"), scenarios.get("tls_handshake")
    with pytest.raises(ValueError, match="plain HTTP"):
        targets.check_tls_mode(plain, targets.get("haproxy"), "edge")
    with pytest.raises(ValueError, match="needs TLS"):
        targets.check_tls_mode(tls, targets.get("nginx"), "none")
    with pytest.raises(ValueError, match="takes --tls-mode none / edge"):
        targets.check_tls_mode(tls, targets.get("backend"), "passthrough")
    targets.check_tls_mode(tls, targets.get("haproxy"), "reencrypt")

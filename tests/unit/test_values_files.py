import pytest
import yaml

from loadtest import paths, profiles


@pytest.mark.parametrize("profile", profiles.PROFILES, ids=lambda p: p.file)
def test_values_file_carries_the_planned_workers_and_node_type(profile):
    values = yaml.safe_load((paths.VALUES / profile.file).read_text())
    assert values["locust"]["worker"]["replicas"] == profile.plan.replicas
    assert values["locust"]["worker"]["cpu"] == "1000m"
    assert values["locust"]["nodeType"] == (profile.node_type or "")


@pytest.mark.parametrize("profile", profiles.PROFILES, ids=lambda p: p.file)
def test_values_file_header_explains_the_arithmetic(profile):
    header = (paths.VALUES / profile.file).read_text().split("\nlocust:")[0]
    assert f"Nodes assumed: {profile.nodes}" in header
    assert "allocatable" in header and f"{profile.plan.replicas} workers" in header


def test_every_values_file_comes_from_a_profile():
    shipped = {p.name for p in paths.VALUES.glob("*.yaml")}
    assert shipped == {p.file for p in profiles.PROFILES}

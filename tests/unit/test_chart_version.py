"""The chart's version policy (loadtest.generate.chartversion): SemVer, a new version for every change to the chart, its
CHANGELOG entry, appVersion = Locust's pin; and the versions the docs install are the chart's."""
import re
import shutil

import pytest
import yaml

from loadtest import paths
from loadtest.errors import UsageError
from loadtest.generate import chartversion


@pytest.fixture
def chart(tmp_path):
    """A copy of the chart and of its version record, to change."""
    copy = tmp_path / "loadtest"
    shutil.copytree(paths.CHART, copy, ignore=shutil.ignore_patterns("__pycache__"))
    lock = tmp_path / "versions.lock"
    shutil.copy(chartversion.LOCK, lock)
    return copy, lock


def set_version(chart, version):
    chart_yaml = chart / "Chart.yaml"
    chart_yaml.write_text(re.sub(r"^version: .*$", f"version: {version}", chart_yaml.read_text(), flags=re.M))


def test_the_checkout_keeps_the_policy():
    assert chartversion.problems() == []
    assert list(chartversion.recorded())[-1] == paths.chart_version()


def test_a_change_under_a_recorded_version_is_refused_until_the_version_is_bumped_and_its_change_logged(chart):
    chart, lock = chart
    version = paths.chart_version(chart)
    template = chart / "charts" / "locust" / "templates" / "master.yaml"
    template.write_text(template.read_text() + "\n# a change\n")
    (problem,) = chartversion.problems(chart, lock)
    assert f"changed since version {version} was recorded" in problem and "bump `version`" in problem
    with pytest.raises(UsageError, match="bump `version` in charts/loadtest/Chart.yaml"):
        chartversion.record(chart, lock)

    major, minor, patch = chartversion.semver(version)
    bumped = f"{major}.{minor}.{patch + 1}"
    set_version(chart, bumped)
    assert any(f"has no `## {bumped}` entry" in p for p in chartversion.problems(chart, lock))
    changelog = chart / "CHANGELOG.md"
    changelog.write_text(changelog.read_text().replace("\n## ", f"\n## {bumped}\n\n- a change\n\n## ", 1))
    assert chartversion.problems(chart, lock) == [f"chart version {bumped} is not recorded: run `loadtest docs` "
                                                  f"(after its CHANGELOG entry)"]
    lock.write_text(chartversion.record(chart, lock))
    assert chartversion.problems(chart, lock) == []
    assert list(chartversion.recorded(lock))[-2:] == [version, bumped]


def test_the_changelog_and_the_version_line_do_not_count_as_a_change(chart):
    chart, lock = chart
    (chart / "CHANGELOG.md").write_text((chart / "CHANGELOG.md").read_text() + "\nA typo fixed.\n")
    (chart / "charts" / "locust" / "locustfiles" / "__pycache__").mkdir(exist_ok=True)
    (chart / "charts" / "locust" / "locustfiles" / "__pycache__" / "x.pyc").write_bytes(b"built")
    assert chartversion.problems(chart, lock) == []


def test_a_version_not_above_the_last_or_not_semver_is_refused(chart):
    chart, lock = chart
    set_version(chart, "0.0.9")
    (chart / "templates" / "NOTES.txt").write_text("changed")
    with pytest.raises(UsageError, match="not above the last recorded one"):
        chartversion.record(chart, lock)
    set_version(chart, "1.0")
    assert "is not SemVer" in chartversion.problems(chart, lock)[0]


def test_app_version_is_the_locust_pin_and_the_repository_chart_holds_this_version():
    meta = yaml.safe_load((paths.CHART / "Chart.yaml").read_text())
    pin = re.search(r"^locust==(\S+)$", (paths.HOME / "requirements.txt").read_text(), re.M).group(1)
    assert meta["appVersion"] == pin
    for key in ("home", "sources", "maintainers", "icon", "kubeVersion"):
        assert meta.get(key), f"Chart.yaml has no {key}"
    assert meta["annotations"]["artifacthub.io/license"] == "MIT" and (paths.HOME / "LICENSE").read_text().startswith(
        "MIT License")
    (loadtest,) = yaml.safe_load((paths.HOME / "Chart.yaml").read_text())["dependencies"]
    assert loadtest["version"] == meta["version"]


def test_the_docs_install_the_charts_version():
    docs = [paths.HOME / "README.md", *sorted((paths.HOME / "docs").glob("*.md")), paths.CHART / "README.md"]
    pattern = re.compile(r"charts/loadtest --version ([0-9]\S*)")
    versions = {(doc.name, v) for doc in docs for v in pattern.findall(doc.read_text())}
    assert versions and {v for _, v in versions} == {paths.chart_version()}, versions

"""The settings the CLI, the chart and the pods share are declared once (loadtest_shared.settings): no environment
name is spelled anywhere else, and each pair a run cannot take is refused by the CLI in one rule's words."""
from __future__ import annotations

import ast
import re

import pytest
from loadtest_shared import settings
from test_bad_input import refusal

from loadtest import paths

# The CLI's own variables, which no pod reads.
CLI_ONLY = {"LOADTEST_HOME", "LOADTEST_LOCUST_AUTH"}
# How each setting of a refused pair is given on `loadtest run --local` (None: the CLI has no option for it).
CLI_GIVEN = {settings.ARRIVAL_RATE: ["--arrival-rate", "100"], settings.USERS: ["--users", "5"],
             settings.WAIT: ["--wait", "0.1"], settings.STEP_LOAD: None}


def env_literals(path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.fullmatch(r"LOADTEST_[A-Z0-9_]+", node.value)}


def test_no_module_spells_a_settings_environment_name_of_its_own():
    declared = {s.env for s in settings.SETTINGS if s.env}
    modules = [*paths.PACKAGE.rglob("*.py"), *paths.PLUGIN.glob("*.py"), *paths.SHARED.glob("*.py")]
    spelled = {f"{p.relative_to(paths.HOME)}: {name}" for p in modules if p.name != "settings.py"
               for name in env_literals(p) - CLI_ONLY}
    assert not spelled, sorted(spelled)
    assert len(declared) == len([s for s in settings.SETTINGS if s.env]), "two settings with one variable"


def test_the_scenarios_read_only_declared_settings():
    """loadtest_lib.setting(name) reads a declared setting by its name: a scenario's setting is declared too."""
    used = {m for p in [*paths.LOCUSTFILES.glob("*.py"), *paths.PLUGIN.glob("*.py")]
            for m in re.findall(r'\bsetting\("([a-z_]+)"', p.read_text())}
    assert {"wait", "routes", "path", "steps"} <= used
    assert used <= {s.name for s in settings.SETTINGS}, used - {s.name for s in settings.SETTINGS}


def test_the_chart_spells_no_environment_name_the_settings_declare():
    """Its templates take the names from the generated _settings.tpl (comments and the helm test's own script
    aside)."""
    declared = {s.env for s in settings.SETTINGS if s.env}
    found = []
    for path in paths.CHART.rglob("templates/*"):
        if path.is_dir() or path.name == "_settings.tpl":
            continue
        code = re.sub(r"\{\{-? */\*.*?\*/ *-?\}\}", "", path.read_text(), flags=re.S)
        found += [f"{path.relative_to(paths.CHART)}: {name}" for name in set(re.findall(r"LOADTEST_[A-Z0-9_]+", code))
                  if name in declared]
    assert not found, found


@pytest.mark.parametrize("rule", [r for r in settings.EXCLUSIVE if CLI_GIVEN[r.first] and CLI_GIVEN[r.second]],
                         ids=lambda r: f"{r.first.name}-{r.second.name}")
def test_the_cli_refuses_each_pair_in_the_rules_words(rule, capsys, tmp_path, monkeypatch):
    err = refusal(["run", "--local", *CLI_GIVEN[rule.first], *CLI_GIVEN[rule.second]], capsys, tmp_path, monkeypatch)
    assert rule.cli_message() in " ".join(err.split()), err


def test_every_refused_pair_is_given_somewhere():
    for rule in settings.EXCLUSIVE:
        assert rule.first in CLI_GIVEN and rule.second in CLI_GIVEN, f"add {rule.first.name}, {rule.second.name}"
        cli = CLI_GIVEN[rule.first] and CLI_GIVEN[rule.second]
        chart = rule.first.value and rule.second.value
        assert cli or chart, f"{rule.first.name} with {rule.second.name}: neither the CLI nor the chart can refuse it"


def test_a_tests_own_setting_is_read_from_loadtest_and_its_name():
    """examples/shop reads setting("catalog_path"): a user's test names its own settings, LOADTEST_<NAME>."""
    assert settings.env_name("catalog_path") == "LOADTEST_CATALOG_PATH"
    assert settings.env_name("s3_url") == settings.S3_URL.env == "LOADTEST_RESULTS_S3_URL"
    assert all(settings.env_name(s.name) == s.env for s in settings.SETTINGS if s.env)

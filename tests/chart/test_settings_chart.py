"""The chart refuses each pair of settings a run cannot take (loadtest_shared.settings.EXCLUSIVE) in the rule's
words, the values named as the chart knows them and shown as given; the CLI's side is tests/unit/test_settings.py."""
from __future__ import annotations

import pytest
from loadtest_shared import settings

# How each setting of a refused pair is given to the chart, and how the refusal shows it.
CHART_GIVEN = {settings.ARRIVAL_RATE: "2000", settings.USERS: "7", settings.STEP_LOAD: "true"}


@pytest.mark.parametrize("rule", [r for r in settings.EXCLUSIVE if r.first.value and r.second.value],
                         ids=lambda r: f"{r.first.name}-{r.second.name}")
@pytest.mark.parametrize("mode", ["interactive", "autostart"])
def test_the_chart_refuses_each_pair_in_the_rules_words(helm, rule, mode):
    stderr = helm.refusal("--set", f"locust.mode={mode}", "--set", f"{rule.first.value}={CHART_GIVEN[rule.first]}",
                          "--set", f"{rule.second.value}={CHART_GIVEN[rule.second]}")
    words = rule.chart_message().replace("%v", "{}").format(CHART_GIVEN[rule.first], CHART_GIVEN[rule.second])
    assert words in " ".join(stderr.split()), stderr

"""A store of real runs on the local stack and its history: a light run pinned as the baseline, a later run that
sends a quarter of the load fails against it (exit 1, its comparison kept in its folder), `loadtest history` lists
both and writes the page, and the page opens in headless Chromium with its trend plots, the baseline marked and each
run's link to its own Locust report working."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from browser import chromium, page_text
from selenium.webdriver.common.by import By
from loadtest_shared import checks


# Light load, so neither side saturates: a baseline must be the target's figure, never the generator's.
LIGHT = ("--workers", "1", "--wait", "0.01", "--run-time", "6s")


def loadtest(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "loadtest", *args], capture_output=True, text=True, timeout=180,
                            stdin=subprocess.DEVNULL)
    print(result.stdout, result.stderr)
    return result


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    runs = tmp_path_factory.mktemp("store")
    baseline = loadtest("run", "--local", "--output", str(runs / "1-baseline"), "--users", "8", *LIGHT)
    assert baseline.returncode == checks.PASSED, baseline.stderr
    pinned = loadtest("history", "--store", str(runs), "--baseline", "1-baseline")
    assert pinned.returncode == 0 and "baseline: 1-baseline" in pinned.stdout, pinned.stderr
    slower = loadtest("run", "--local", "--output", str(runs / "2-slower"), "--users", "2", *LIGHT)
    return runs, slower


def test_a_run_below_the_baseline_fails_with_its_comparison_kept(store):
    runs, slower = store
    assert slower.returncode == checks.CHECK_FAILED, slower.stdout + slower.stderr
    assert "baseline         REGRESSION against baseline 1-baseline: all requests RPS" in slower.stdout
    kept = (runs / "2-slower" / "baseline.md").read_text()
    assert "REGRESSION" in kept and "all requests RPS" in kept and "**regressed**" in kept
    # The folder says what the process said, as a judged master's does: exit code 1, the regression in the JUnit.
    result = json.loads((runs / "2-slower" / "result.json").read_text())
    assert result["exit_code"] == checks.CHECK_FAILED and result["baseline"]["regressed"], result["baseline"]
    assert 'type="regression"' in (runs / "2-slower" / "checks.xml").read_text()


def test_history_lists_the_runs_and_the_page_opens_with_its_trends(store, tmp_path):
    runs, _ = store
    listed = loadtest("history", "--store", str(runs))
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if line.startswith(("1-baseline", "2-slower"))]
    assert len(rows) == 2 and "(baseline)" in rows[0] and rows[1].endswith("REGRESSED"), listed.stdout
    with chromium(tmp_path / "chromium-profile") as browser:
        browser.get((runs / "history.html").as_uri())
        text = page_text(browser)
        assert "2 run(s). Baseline: run 1, 1-baseline" in text, text[:2000]
        assert "REGRESSED" in text
        plots = browser.find_elements(By.CSS_SELECTOR, "svg")
        assert len(plots) == 3 and all(p.size["width"] > 100 for p in plots)
        assert len(browser.find_elements(By.CSS_SELECTOR, "svg polyline")) == 3
        assert "baseline" in plots[0].text
        browser.save_screenshot(str(runs / "history.png"))
        links = browser.find_elements(By.LINK_TEXT, "Locust report")
        assert len(links) == 2
        links[1].click()
        assert "Locust" in browser.title or "Locust" in page_text(browser)[:2000]

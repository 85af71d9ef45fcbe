"""The Locust web UI and the HTML reports in a real browser (Debian's headless Chromium, driven by Selenium): what a
user sees, not what the JSON says. The UI refuses a visitor without the run's password and lets one with it start a
swarm, watch its requests counted and stop it; a run's and a sweep's reports open with their plots. Screenshots go
beside each test's files, for a person to look at; the assertions are on the pages' content (tests/browser.py)."""
from __future__ import annotations

import pytest
from browser import UI_TIMEOUT_S, assert_refused_without_the_password, chromium, page_text, swarm_through_the_ui
from conftest import idle_master
from selenium.webdriver.common.by import By

from loadtest.judging import sweepreport
from loadtest.judging.knee import Step


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path / "chromium-profile") as driver:
        yield driver


@pytest.fixture
def local_ui(tmp_path):
    """The local stack's backend and an idle Locust master with its web UI behind a password, one worker."""
    with idle_master(tmp_path, "0.05", UI_TIMEOUT_S) as (_, locust, web):
        yield locust, web


def test_the_web_ui_refuses_a_visitor_without_the_password(local_ui, browser, tmp_path):
    _, web = local_ui
    assert_refused_without_the_password(browser, web.url, tmp_path / "web-ui-refused.png")


def test_with_the_password_a_user_starts_a_swarm_sees_requests_and_stops_it(local_ui, browser, tmp_path):
    _, web = local_ui
    swarm_through_the_ui(browser, web, 5, "/1kb", tmp_path)


def test_a_sweep_report_opens_with_its_plots(browser, tmp_path):
    """loadtest's own report page, written by sweepreport.write from a sweep's records, in the browser."""
    records = [sweepreport.StepRecord(step=Step(i, load, rps, p95, 0.0, False), start=1000.0 + 60 * i,
                                      end=1060.0 + 60 * i, p50_ms=p95 / 2, p99_ms=p95 * 1.5, requests=int(rps * 60),
                                      failures=0, users=load, worker_cpu_max=0.5, worker_cpu_cores=0.5,
                                      target_cpu_cores=0.9, target_cpus=1, workers=1, verdict="healthy")
               for i, (load, rps, p95) in enumerate([(100, 9000.0, 5.0), (200, 15000.0, 8.0), (400, 15500.0, 30.0)])]
    sweep = sweepreport.Sweep(conditions={"scenario": "keepalive_1kb"}, sweep_of="users", records=records)
    sweepreport.write(sweep, tmp_path / "sweep")
    browser.get((tmp_path / "sweep" / "report.html").as_uri())
    text = page_text(browser)
    assert "15,500" in text or "15500" in text, text[:2000]
    plots = browser.find_elements(By.CSS_SELECTOR, "svg")
    assert plots and all(p.size["width"] > 100 for p in plots), [p.size for p in plots]
    assert browser.find_elements(By.CSS_SELECTOR, "svg polyline, svg path, svg circle")
    browser.save_screenshot(str(tmp_path / "sweep" / "report.png"))

"""The Locust web UI and the HTML reports in a real browser (Debian's headless Chromium, driven by Selenium): what a
user sees, not what the JSON says. The UI refuses a visitor without the run's password and lets one with it start a
swarm, watch its requests counted and stop it; a run's and a sweep's reports open with their plots. Screenshots go
beside each test's files, for a person to look at; the assertions are on the pages' content."""
from __future__ import annotations

import json
import re
import shutil
import time
import urllib.request

import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from loadtest import report, scenarios
from loadtest.knee import Step
from loadtest.runtime.locust import MASTER, Locust
from loadtest.runtime.locustweb import LocustWeb
from loadtest.runtime.stack import Stack

UI_TIMEOUT_S = 60


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium (scripts/setup installs chromium and chromium-driver), closed after the test."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.fail("chromium or chromedriver not found: run scripts/setup", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # the network log
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(shutil.which("chromedriver")))
    driver.set_page_load_timeout(UI_TIMEOUT_S)
    yield driver
    driver.quit()


def wait_for(driver, what: str, condition, timeout: float = UI_TIMEOUT_S):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.5).until(lambda d: condition(d))
    except TimeoutException:
        pytest.fail(f"the page never showed {what} in {timeout:.0f} s; its text:\n{page_text(driver)[:2000]}",
                    pytrace=False)


def page_text(driver) -> str:
    return driver.find_element(By.TAG_NAME, "body").text


@pytest.fixture
def local_ui(tmp_path):
    """The local stack's backend and an idle Locust master with its web UI behind a password, one worker."""
    with Stack(tmp_path) as stack:
        _, server = stack.target("backend", "none")
        locust = Locust(stack.procs, scenarios.get("keepalive_1kb").locustfile, env={"LOADTEST_WAIT": "0.05"})
        locust.start_master("--host", server.url(tls=False), expect_workers=0)
        locust.start_workers(1)
        web = LocustWeb(locust.web_url, locust.web_credentials)
        stack.procs.wait_http(MASTER, locust.web_url)
        web.wait_workers(1, UI_TIMEOUT_S)
        yield locust, web


def test_the_web_ui_refuses_a_visitor_without_the_password(local_ui, browser, tmp_path):
    locust, _ = local_ui
    browser.get(locust.web_url)
    time.sleep(2)  # what a page would render, had it been served
    assert not browser.find_elements(By.NAME, "userCount") and "Start" not in browser.page_source
    # What the browser was answered (it shows a refused basic-auth prompt as an empty page), from its network log.
    answers = [m["params"]["response"] for m in (json.loads(e["message"])["message"]
                                                for e in browser.get_log("performance"))
               if m["method"] == "Network.responseReceived"]
    ours = [(a["url"].rstrip("/"), a["status"]) for a in answers if a["url"].startswith(locust.web_url)]
    assert ours == [(locust.web_url, 401)], ours
    browser.save_screenshot(str(tmp_path / "web-ui-refused.png"))


def test_with_the_password_a_user_starts_a_swarm_sees_requests_and_stops_it(local_ui, browser, tmp_path):
    locust, web = local_ui
    # The browser sends the run's credentials as a user's browser does once they typed them into its prompt.
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": web.headers})
    browser.get(locust.web_url)
    wait_for(browser, "the swarm form", lambda d: d.find_elements(By.NAME, "userCount"))
    for name in ("userCount", "spawnRate"):  # typed over the form's defaults, as a user does
        field = browser.find_element(By.NAME, name)
        field.send_keys(Keys.CONTROL + "a")
        field.send_keys(Keys.DELETE)
        field.send_keys("5")
    browser.find_element(By.XPATH, "//button[@type='submit' and normalize-space()='Start']").click()
    # The statistics table counts the scenario's requests as the worker reports them.
    wait_for(browser, "a /1kb row with requests", lambda d: "/1kb" in page_text(d) and web.status()["user_count"] == 5
             and web.status()["total_rps"] > 0)
    wait_for(browser, "the running state", lambda d: "RUNNING" in page_text(d).upper())
    browser.find_element(By.XPATH, "//button[normalize-space()='Charts']").click()
    wait_for(browser, "the charts", lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, svg"))
    # The header's live RPS, what the charts draw, once Locust's rolling window holds requests.
    wait_for(browser, "a live RPS above 0", lambda d: int(re.search(r"RPS\n([\d,]+)", page_text(d)).group(1)
                                                             .replace(",", "")) > 0)
    browser.save_screenshot(str(tmp_path / "web-ui-running.png"))
    browser.find_element(By.XPATH, "//button[normalize-space()='Stop']").click()
    wait_for(browser, "the stopped state", lambda d: web.state()["state"] == "stopped"
             and "STOPPED" in page_text(d).upper())
    assert web.status()["stats"][-1]["num_requests"] > 0
    browser.save_screenshot(str(tmp_path / "web-ui-stopped.png"))
    # The run's report, as the UI's download link gives it (what `loadtest run` keeps as report.html).
    request = urllib.request.Request(f"{locust.web_url}/stats/report?download=1", headers=web.headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        (tmp_path / "report.html").write_bytes(response.read())
    browser.get((tmp_path / "report.html").as_uri())
    wait_for(browser, "the report's request statistics", lambda d: "/1kb" in page_text(d))
    wait_for(browser, "the report's charts", lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, svg"))
    browser.save_screenshot(str(tmp_path / "report.png"))


def test_a_sweep_report_opens_with_its_plots(browser, tmp_path):
    """loadtest's own report page, written by report.write from a sweep's records, in the browser."""
    records = [report.StepRecord(step=Step(i, load, rps, p95, 0.0, False), start=1000.0 + 60 * i, end=1060.0 + 60 * i,
                                 p50_ms=p95 / 2, p99_ms=p95 * 1.5, requests=int(rps * 60), failures=0, users=load,
                                 worker_cpu_max=0.5, worker_cpu_cores=0.5, target_cpu_cores=0.9, target_cpus=1,
                                 workers=1, verdict="healthy")
               for i, (load, rps, p95) in enumerate([(100, 9000.0, 5.0), (200, 15000.0, 8.0), (400, 15500.0, 30.0)])]
    sweep = report.Sweep(conditions={"scenario": "keepalive_1kb"}, sweep_of="users", records=records)
    report.write(sweep, tmp_path / "sweep")
    browser.get((tmp_path / "sweep" / "report.html").as_uri())
    text = page_text(browser)
    assert "15,500" in text or "15500" in text, text[:2000]
    plots = browser.find_elements(By.CSS_SELECTOR, "svg")
    assert plots and all(p.size["width"] > 100 for p in plots), [p.size for p in plots]
    assert browser.find_elements(By.CSS_SELECTOR, "svg polyline, svg path, svg circle")
    browser.save_screenshot(str(tmp_path / "sweep" / "report.png"))

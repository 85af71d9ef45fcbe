"""The Locust web UI in a real browser (Debian's headless Chromium, driven by Selenium), as a user meets it: shared by
the dataplane layer (a local master) and the node layer (the chart's master, through its Service). Assertions are on
the pages' content; screenshots go beside each test's files for a person to look at."""
from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
import urllib.request
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from loadtest.runtime.locustweb import LocustWeb

UI_TIMEOUT_S = 60


@contextlib.contextmanager
def chromium(profile: Path):
    """Headless Chromium (scripts/setup installs chromium and chromium-driver) with its network log, closed after."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.fail("chromium or chromedriver not found: run scripts/setup", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # the network log
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(shutil.which("chromedriver")))
    driver.set_page_load_timeout(UI_TIMEOUT_S)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, what: str, condition, timeout: float = UI_TIMEOUT_S, detail=None):
    """Wait for the page's `condition`; a timeout fails naming `what`, the page's text, and detail() when given (what
    the server said meanwhile)."""
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.5).until(lambda d: condition(d))
    except TimeoutException:
        more = f"\n{detail()}" if detail else ""
        pytest.fail(f"the page never showed {what} in {timeout:.0f} s{more}; its text:\n{page_text(driver)[:2000]}",
                    pytrace=False)


def page_text(driver) -> str:
    return driver.find_element(By.TAG_NAME, "body").text


def assert_refused_without_the_password(browser, url: str, screenshot: Path) -> None:
    """A visitor with no credentials sees no UI: the browser was answered 401 (it shows a refused basic-auth prompt
    as an empty page), read from its network log."""
    browser.get(url)
    time.sleep(2)  # what a page would render, had it been served
    assert not browser.find_elements(By.NAME, "userCount") and "Start" not in browser.page_source
    answers = [m["params"]["response"] for m in (json.loads(e["message"])["message"]
                                                for e in browser.get_log("performance"))
               if m["method"] == "Network.responseReceived"]
    ours = [(a["url"].rstrip("/"), a["status"]) for a in answers if a["url"].startswith(url)]
    assert ours == [(url, 401)], ours
    browser.save_screenshot(str(screenshot))


def swarm_through_the_ui(browser, web: LocustWeb, users: int, request_name: str, folder: Path) -> None:
    """With the password, a user starts a swarm of `users` from the form, sees `request_name` counted in the table
    and a live RPS in the charts, stops it, and opens the run's HTML report."""
    # The browser sends the credentials as a user's browser does once they typed them into its prompt.
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": web.headers})
    browser.get(web.url)
    wait_for(browser, "the swarm form", lambda d: d.find_elements(By.NAME, "userCount"))
    for name in ("userCount", "spawnRate"):  # typed over the form's defaults, as a user does
        field = browser.find_element(By.NAME, name)
        field.send_keys(Keys.CONTROL + "a")
        field.send_keys(Keys.DELETE)
        field.send_keys(str(users))
    browser.find_element(By.XPATH, "//button[@type='submit' and normalize-space()='Start']").click()
    wait_for(browser, f"a {request_name} row with requests", lambda d: request_name in page_text(d)
             and web.status()["user_count"] == users and web.status()["total_rps"] > 0)
    wait_for(browser, "the running state", lambda d: "RUNNING" in page_text(d).upper())
    browser.find_element(By.XPATH, "//button[normalize-space()='Charts']").click()
    wait_for(browser, "the charts", lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, svg"))
    # The header's live RPS, what the charts draw, once Locust's rolling window holds requests.
    wait_for(browser, "a live RPS above 0", lambda d: int(re.search(r"RPS\n([\d,]+)", page_text(d)).group(1)
                                                             .replace(",", "")) > 0)
    browser.save_screenshot(str(folder / "web-ui-running.png"))
    browser.find_element(By.XPATH, "//button[normalize-space()='Stop']").click()
    wait_for(browser, "the master stopped", lambda d: web.state()["state"] == "stopped",
             detail=lambda: f"the master's state: {web.state()}")
    # Locust's page (2.47) polls the stats only while the swarm spawns or runs: a poll that read the master
    # "stopping" (its users still stopping, which on a busy machine can outlast a poll's 2 s) leaves the page on
    # STOPPING for good, as a user sees it until they reload (the master long stopped, 2026-12-07). So a page showing
    # STOPPING is reloaded, as they would; one still showing RUNNING must catch up by itself.
    if "STOPPING" in page_text(browser).upper():
        browser.refresh()
    wait_for(browser, "the stopped state", lambda d: "STOPPED" in page_text(d).upper(),
             detail=lambda: f"the master's state: {web.state()}")
    assert web.status()["stats"][-1]["num_requests"] > 0
    browser.save_screenshot(str(folder / "web-ui-stopped.png"))
    # The run's report, as the UI's download link gives it (what `loadtest run` keeps as report.html).
    request = urllib.request.Request(f"{web.url}/stats/report?download=1", headers=web.headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        (folder / "report.html").write_bytes(response.read())
    browser.get((folder / "report.html").as_uri())
    wait_for(browser, "the report's request statistics", lambda d: request_name in page_text(d))
    wait_for(browser, "the report's charts", lambda d: d.find_elements(By.CSS_SELECTOR, "canvas, svg"))
    browser.save_screenshot(str(folder / "report.png"))

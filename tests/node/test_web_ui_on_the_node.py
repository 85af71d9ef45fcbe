"""The chart's Locust web UI in a real browser, reached as a user reaches it: through the master's Service
(`kubectl port-forward`, what NOTES.txt prints) on the real node. It refuses a visitor without the password of the
Secret the chart made, and with it a user starts a swarm on the chart's workers, sees requests counted and a live
RPS in the charts, stops it and opens the run's report (tests/browser.py, shared with the dataplane layer)."""
from __future__ import annotations

import pytest
from browser import assert_refused_without_the_password, chromium, swarm_through_the_ui
from conftest import install, wait_ready

from loadtest.runtime.locustweb import LocustWeb
from loadtest.runtime.release import Release


@pytest.fixture(scope="module")
def web(cluster, module_namespace, helm):
    install(helm, module_namespace)
    wait_ready(cluster, module_namespace)
    release = Release("lt", module_namespace, cluster.kubeconfig)
    with release.port_forward("locust-master", "web") as url:
        web = LocustWeb(url, release.web_credentials())
        web.wait_workers(1, 120)
        yield web


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path / "chromium-profile") as driver:
        yield driver


def test_the_charts_web_ui_refuses_a_visitor_without_the_password(web, browser, tmp_path):
    assert_refused_without_the_password(browser, web.url, tmp_path / "web-ui-refused.png")


def test_with_the_secrets_password_a_user_runs_a_swarm_on_the_charts_workers(web, browser, tmp_path):
    swarm_through_the_ui(browser, web, 5, "/1kb", tmp_path)

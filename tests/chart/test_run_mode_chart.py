"""locust.mode=run: master and workers as Jobs for one judged run, the checks reaching the master, and the values
that cannot make a run refused."""
from __future__ import annotations

import pytest

RUN = ("--set", "locust.mode=run", "--set", "locust.autostart.runTime=2m", "--set", "locust.worker.replicas=3",
       "--set-json", 'locust.checks=["p95<200ms", "p99[GET /x]<=1s", "fail_ratio<1%", "rps>=100"]')


def container(rendered, kind, name):
    return rendered.get(kind, name)["spec"]["template"]["spec"]["containers"][0]


def test_master_is_a_job_that_runs_once_and_judges_the_checks(helm):
    rendered = helm.render(None, *RUN)
    job = rendered.get("Job", "lt-locust-master")
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    master = container(rendered, "Job", "lt-locust-master")
    for arg in ("--autostart", "--autoquit=60", "--users=100", "--run-time=2m", "--expect-workers=3"):
        assert arg in master["args"]
    env = {e["name"]: e.get("value") for e in master["env"]}
    assert env["LOADTEST_CHECKS"].splitlines() == ["p95<200ms", "p99[GET /x]<=1s", "fail_ratio<1%", "rps>=100"]
    # The thresholds are the verdict module's own (plugin/loadtest_shared/verdict.py), in the pod as on a laptop.
    assert not any(name.startswith(("LOADTEST_CPU_", "LOADTEST_SATURATED", "LOADTEST_LATE")) for name in env), env
    assert not rendered.of_kind("Deployment") or all(
        d["metadata"]["name"] not in ("lt-locust-master", "lt-locust-worker") for d in rendered.of_kind("Deployment"))


def test_abort_conditions_reach_the_master_and_none_sets_nothing(helm):
    master = container(helm.render(None, *RUN, "--set-json", 'locust.abortOn=["fail_ratio>5%", "p95[GET /x]>2s"]'),
                       "Job", "lt-locust-master")
    env = {e["name"]: e.get("value") for e in master["env"]}
    assert env["LOADTEST_ABORT_ON"].splitlines() == ["fail_ratio>5%", "p95[GET /x]>2s"]
    assert "LOADTEST_ABORT_ON" not in {e["name"] for e in container(helm.render(None, *RUN), "Job",
                                                                     "lt-locust-master")["env"]}


def test_the_master_stays_autoquit_seconds_after_the_run(helm):
    """A minute by default, for Prometheus' last scrape of the final counters and the web UI's report; a value of
    the locust chart (the real node's example sets 15 s, three of its 5 s scrapes)."""
    master = container(helm.render(None, *RUN, "--set", "locust.autostart.autoquitSeconds=15"), "Job",
                       "lt-locust-master")
    assert "--autoquit=15" in master["args"] and "--autoquit=60" not in master["args"]


MONITORING = ("--set", "monitoring.enabled=true")


@pytest.mark.parametrize("autoquit, scrape, fix", [("15", "15s", "set locust.autostart.autoquitSeconds=16 or more, "
                                                                 "or a shorter monitoring.prometheus.scrapeInterval "
                                                                 "(at most 14s)"),
                                                   ("5", "30s", "set locust.autostart.autoquitSeconds=31 or more, "
                                                                "or a shorter monitoring.prometheus.scrapeInterval "
                                                                "(at most 4s)"),
                                                   ("1", "5s", "set locust.autostart.autoquitSeconds=6 or more")],
                         ids=["at-the-scrape", "below-the-scrape", "below-any-scrape"])
def test_an_autoquit_within_a_scrape_is_refused_with_the_fix(helm, autoquit, scrape, fix):
    """With the in-chart Prometheus, the master must stay past one scrape interval, or the run's final counters may
    never be scraped (series.csv and the rules would miss them)."""
    stderr = helm.refusal(*RUN, *MONITORING, "--set", f"locust.autostart.autoquitSeconds={autoquit}",
                          "--set", f"monitoring.prometheus.scrapeInterval={scrape}")
    says = (f"locust.autostart.autoquitSeconds {autoquit} is not above monitoring.prometheus.scrapeInterval {scrape}: "
            "the master could quit before the in-chart Prometheus scrapes the run's final counters")
    assert says in stderr, stderr
    assert fix in stderr, stderr


def test_an_autoquit_past_a_scrape_or_without_the_in_chart_prometheus_renders(helm):
    helm.render(None, *RUN, *MONITORING, "--set", "locust.autostart.autoquitSeconds=16",
                "--set", "monitoring.prometheus.scrapeInterval=15s")
    for args in (MONITORING + ("--set", "monitoring.mode=operator"), ()):
        helm.render(None, *RUN, *args, "--set", "locust.autostart.autoquitSeconds=0")
    # Only a judged run quits: autostart keeps its master up whatever the value.
    helm.render(None, "--set", "locust.mode=autostart", *MONITORING, "--set", "locust.autostart.autoquitSeconds=1")


def test_workers_are_a_job_that_ends_with_the_run(helm):
    rendered = helm.render(None, *RUN)
    spec = rendered.get("Job", "lt-locust-worker")["spec"]
    assert (spec["completions"], spec["parallelism"]) == (3, 3)
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert "--worker" in container(rendered, "Job", "lt-locust-worker")["args"]


def test_a_run_judges_its_steady_window_on_master_and_workers_alike(helm):
    """Locust resets its statistics once every user runs only where master and workers both ask for it."""
    rendered = helm.render(None, *RUN)
    for job in ("lt-locust-master", "lt-locust-worker"):
        env = {e["name"]: e.get("value") for e in container(rendered, "Job", job)["env"]}
        assert env["LOCUST_RESET_STATS"] == "true", job
    stepped = helm.render(None, *RUN, "--set", "locust.stepLoad.enabled=true")
    assert "LOCUST_RESET_STATS" not in {e["name"] for e in container(stepped, "Job", "lt-locust-master")["env"]}


def test_a_run_has_no_locust_helm_test_and_the_other_modes_keep_theirs(helm):
    names = [p["metadata"]["name"] for p in helm.render(None, *RUN).of_kind("Pod")]
    assert "lt-test-locust" not in names and "lt-test-backend" in names
    assert "lt-test-locust" in [p["metadata"]["name"] for p in helm.render().of_kind("Pod")]


def test_interactive_and_autostart_stay_deployments_without_the_judge(helm):
    for mode in ("interactive", "autostart"):
        rendered = helm.render(None, "--set", f"locust.mode={mode}")
        names = {e["name"] for e in container(rendered, "Deployment", "lt-locust-master")["env"]}
        assert "LOADTEST_CHECKS" not in names and "LOCUST_RESET_STATS" not in names
        assert not rendered.of_kind("Job")


def test_notes_say_where_the_verdict_and_exit_code_are(helm, tmp_path):
    text = helm.notes(tmp_path, *RUN)
    assert "kubectl -n loadtest wait --for=condition=complete job/lt-locust-master" in text
    assert "kubectl -n loadtest logs job/lt-locust-master" in text
    assert "3 invalid" in text and "helm uninstall lt" in text


@pytest.mark.parametrize("args, says", [
    (("--set", "locust.mode=run"), "set it, e.g. --set locust.autostart.runTime=5m"),
    (("--set-json", 'locust.checks=["p95<200ms"]'), "set locust.mode=run, or drop the checks"),
    ((*RUN[:6], "--set-json", 'locust.checks=["p95<200"]'), 'locust.checks[0] "p95<200" is not METRIC[NAME] OP'),
    ((*RUN[:6], "--set-json", 'locust.checks=["rps>=5s"]'), "rps without unit"),
    ((*RUN[:6], "--set-json", 'locust.checks=[""]'), "checks.0"),
    ((*RUN[:6], "--set-json", 'locust.checks=["fail_ratio<200%"]'), '"fail_ratio<200%": a fail ratio is at most 100%'),
    ((*RUN[:6], "--set-json", 'locust.checks=["fail_ratio[/x]<=1.5"]'), "a fail ratio is at most 100% (or 1)"),
    (("--set-json", 'locust.abortOn=["fail_ratio>5%"]'), "set locust.mode=run, or drop locust.abortOn"),
    ((*RUN[:6], "--set-json", 'locust.abortOn=["fail_ratio above 5%"]'),
     'locust.abortOn[0] "fail_ratio above 5%" is not METRIC[NAME] OP'),
    ((*RUN[:6], "--set-json", 'locust.abortOn=["fail_ratio>500%"]'), "a fail ratio is at most 100%"),
    ((*RUN[:6], "--set", "locust.extraEnv[0].name=LOADTEST_CHECKS", "--set", "locust.extraEnv[0].value=x"),
     "LOADTEST_CHECKS"),
])
def test_values_that_cannot_make_a_run_are_refused(helm, args, says):
    helm.assert_refused(args, says)

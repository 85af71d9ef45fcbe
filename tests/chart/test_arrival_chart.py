"""locust.load.arrivalRate (issue #28): the open model's rate reaching master and workers, the master's users sized
as the pool that holds it, a user count and the step load refused beside it, and the closed model left as it was."""
from __future__ import annotations

import pytest

from loadtest.workload import arrival

MASTER, WORKER = "lt-locust-master", "lt-locust-worker"
AUTOSTART = ("--set", "locust.mode=autostart")
RUN = ("--set", "locust.mode=run", "--set", "locust.autostart.runTime=2m")


def container(rendered, kind, name):
    return rendered.get(kind, name)["spec"]["template"]["spec"]["containers"][0]


def env(rendered, kind, name) -> dict:
    return {e["name"]: e.get("value") for e in container(rendered, kind, name)["env"]}


def users(rendered, kind="Deployment") -> list[str]:
    return [a for a in container(rendered, kind, MASTER)["args"] if a.startswith("--users=")]


@pytest.mark.parametrize("rate", ["2000", "0.5"])
def test_master_and_workers_get_the_rate_as_given(helm, rate):
    rendered = helm.render(None, *AUTOSTART, "--set", f"locust.load.arrivalRate={rate}")
    for name in (MASTER, WORKER):
        assert env(rendered, "Deployment", name)["LOADTEST_ARRIVAL_RATE"] == rate, name


def test_a_rate_from_a_values_file_renders_as_a_plain_number(helm, tmp_path):
    values = tmp_path / "arrival.yaml"
    values.write_text("locust:\n  mode: autostart\n  load:\n    arrivalRate: 1500000\n")
    rendered = helm.render(values)
    assert env(rendered, "Deployment", WORKER)["LOADTEST_ARRIVAL_RATE"] == "1500000"
    assert users(rendered) == ["--users=750000"]


@pytest.mark.parametrize("rate, replicas, pool", [
    ("2000", 2, 1000),   # ceil(2000 x 0.5): the users that hold 2,000 requests/s at 0.5 s a response
    ("1", 3, 3),         # at least one user per worker
    ("2001", 2, 1001),   # rounded up
    ("0.5", 1, 1),
])
def test_the_master_runs_the_pool_the_rate_needs(helm, rate, replicas, pool):
    rendered = helm.render(None, *AUTOSTART, "--set", f"locust.load.arrivalRate={rate}",
                           "--set", f"locust.worker.replicas={replicas}")
    assert users(rendered) == [f"--users={pool}"]


@pytest.mark.parametrize("mode", [AUTOSTART, RUN, ()], ids=["autostart", "run", "interactive"])
def test_a_user_count_beside_a_rate_is_refused_naming_the_fix(helm, mode):
    """A rate and a user count are two loads: the chart used one silently; now it says which to drop."""
    stderr = helm.refusal(*mode, "--set", "locust.load.arrivalRate=2000", "--set", "locust.autostart.users=7")
    assert "locust.load.arrivalRate 2000 with locust.autostart.users 7" in stderr, stderr
    assert "--set locust.autostart.users=null, or locust.load.arrivalRate=0" in stderr, stderr
    # The fix it names works (as a `helm upgrade --reuse-values` of a closed-model release would give it).
    rendered = helm.render(None, *AUTOSTART, "--set", "locust.autostart.users=7", "--set", "locust.load.arrivalRate=2000",
                           "--set", "locust.autostart.users=null")
    assert users(rendered) == ["--users=1000"]


def test_a_judged_run_runs_the_pool_too(helm):
    rendered = helm.render(None, *RUN, "--set", "locust.load.arrivalRate=2000", "--set", "locust.worker.replicas=2")
    assert users(rendered, "Job") == ["--users=1000"]
    assert env(rendered, "Job", WORKER)["LOADTEST_ARRIVAL_RATE"] == "2000"


@pytest.mark.parametrize("mode", [AUTOSTART, RUN, ()], ids=["autostart", "run", "interactive"])
def test_the_closed_model_is_unchanged(helm, mode):
    rendered = helm.render(None, *mode)
    kind = "Job" if mode == RUN else "Deployment"
    for name in (MASTER, WORKER):
        assert "LOADTEST_ARRIVAL_RATE" not in env(rendered, kind, name), name
    assert users(rendered, kind) == ([] if not mode else ["--users=100"])
    zero = helm.render(None, *mode, "--set", "locust.load.arrivalRate=0")
    for name in (MASTER, WORKER):
        assert rendered.get(kind, name) == zero.get(kind, name), name


def test_step_load_with_a_rate_is_refused_naming_the_fix(helm):
    stderr = helm.refusal("--set", "locust.load.arrivalRate=2000", "--set", "locust.stepLoad.enabled=true")
    assert "locust.load.arrivalRate 2000 with locust.stepLoad.enabled true" in stderr, stderr
    assert "set locust.stepLoad.enabled=false, or locust.load.arrivalRate=0" in stderr, stderr


def test_extra_env_cannot_set_the_rate(helm):
    helm.assert_refused(("--set", "locust.extraEnv[0].name=LOADTEST_ARRIVAL_RATE",
                         "--set-string", "locust.extraEnv[0].value=5"),
                        "locust.extraEnv[0].name LOADTEST_ARRIVAL_RATE: the chart sets it")


def test_notes_say_the_offered_rate_and_where_latency_starts(helm, tmp_path):
    text = helm.notes(tmp_path / "open", *AUTOSTART, "--set", "locust.load.arrivalRate=2000")
    (line,) = [line for line in text.splitlines() if line.startswith("Load:")]
    assert "2000 requests/s offered" in line and "measured from each request's intended send time" in line
    assert "1000 users, 10 spawned per second" in text
    assert "Load:" not in helm.notes(tmp_path / "closed", *AUTOSTART)


def test_the_pool_is_the_one_the_cli_sizes(helm):
    for rate, replicas in ((2000, 2), (1, 3), (333, 1)):
        rendered = helm.render(None, *AUTOSTART, "--set", f"locust.load.arrivalRate={rate}",
                               "--set", f"locust.worker.replicas={replicas}")
        assert users(rendered) == [f"--users={arrival.pool_size(rate, replicas)}"]


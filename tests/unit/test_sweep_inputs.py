"""The sweep's input checks and window arithmetic; the sweep itself runs in tests/dataplane/test_sweep.py."""
import json

import pytest
from helpers import cli

from loadtest import commands
from loadtest.capacity import calibration
from loadtest.commands.sweep import say_where_the_report_is
from loadtest.judging import sweepreport
from loadtest.runtime import prom, sweep_local
from loadtest.runtime.locustweb import LocustWeb
from loadtest.workload import sweep


def run(capsys, *argv):
    code, printed = cli(capsys, "sweep", *argv)
    return code, printed.err


@pytest.mark.parametrize("argv, message", [
    (["--steps", "10,20"], "say where to sweep: --local"),
    (["--local", "--release", "lt", "--steps", "10"], "say where to sweep"),
    (["--local", "--steps", "10,ten"], "--steps '10,ten': whole numbers"),
    (["--local", "--steps", "20,10"], "each step must be above the one before"),
    (["--local", "--steps", "0,10"], "--steps: positive whole numbers"),
    (["--local", "--steps", "10", "--warmup", "5s"], "--warmup 5s: at least 6s, two of the workers' 3 s reports"),
    (["--local", "--steps", "10", "--hold", "a while"], "argument --hold: 'a while' is not like"),
    (["--local", "--steps", "1,2", "--sweep", "target-cpus"], "target-cpus needs a cluster"),
    (["--local", "--steps", "10", "--set", "haproxy.ports.http=80"], "sets addresses, ports and upstreams itself"),
    (["--local", "--steps", "10", "--set", "haproxy.threads"], "KEY=VALUE"),
    (["--local", "--steps", "10", "--scenario", "http_close", "--tls-mode", "edge"], "http_close is plain HTTP"),
    (["--release", "lt", "--steps", "10"], "--release needs --prometheus URL and --locust URL"),
])
def test_bad_input_exits_2_naming_the_option(capsys, argv, message):
    code, err = run(capsys, *argv)
    assert code == 2 and message in err, err


@pytest.mark.parametrize("hold, scrape, ok", [(6, 1, True), (180, 15, True), (30, 15, True), (20, 1, False),
                                              (40, 15, False), (10, 5, False), (3, 0.5, True)])
def test_the_window_holds_whole_worker_reports_and_scrapes(hold, scrape, ok):
    if ok:
        assert sweep.measured_window(hold, scrape) == hold
    else:
        with pytest.raises(sweep.SweepError, match=r"use a multiple of .* e\.g\. --hold"):
            sweep.measured_window(hold, scrape)


def reports_seen(stamps: list[float], reports: list[float]) -> set[float]:
    """The scrapes that first showed a report: the first scrape at or after each report's time."""
    return {next(stamp for stamp in stamps if stamp >= report) for report in reports if report <= stamps[-1]}


def test_the_window_ends_a_scrape_away_from_the_reports():
    stamps = [float(t) for t in range(11)]
    # Reports seen at 2, 5 and 8: the scrapes beside them (1, 2, 4, 5, 7, 8) are unsafe edges; 9 and 6 are not.
    assert sweep.window_end(stamps, [{2.0, 5.0, 8.0}], 3, 1) == 9.0
    # With reports seen at 3, 6 and 9 (unsafe: 2, 3, 5, 6, 8, 9), the latest window with both edges safe is (4, 7].
    assert sweep.window_end(stamps, [{3.0, 6.0, 9.0}], 3, 1) == 7.0
    # No scrape with a window and a scrape before it: none.
    assert sweep.window_end([0.0, 1.0, 2.0, 3.0], [set()], 3, 1) is None
    # No safe edge for both workers: the latest of the fewest edges beside a report.
    assert sweep.window_end(stamps, [{2.0, 5.0, 8.0}, {3.0, 6.0, 9.0}], 3, 1) == 9.0


@pytest.mark.parametrize("scrape, measuring, placed", [(1, 6 + 1 + 3 + 1, True), (0.5, 6 + 0.5 + 3 + 0.5, True),
                                                       (1.5, 6 + 1.5, False), (15, 6 + 15, False)])
def test_a_step_measures_longer_only_where_its_window_can_be_placed(scrape, measuring, placed):
    """Scrapes half a report period apart or more leave no edge a scrape away from every report: the step
    then measures its hold and a scrape, and its window ends at the last scrape, as before."""
    assert sweep.places_edges(scrape) is placed and sweep.measuring_s(6, scrape) == measuring
    stamps = [scrape * i for i in range(40)]
    assert (sweep.window_end(stamps, [set()], 6, scrape) is None) is not placed


@pytest.mark.parametrize("phase", [i / 20 for i in range(20)])
@pytest.mark.parametrize("hold", [3, 6])
def test_a_window_holds_one_report_a_period_whatever_their_phase_and_jitter(phase, hold):
    """A worker reports every 3 s, each report up to 0.4 s late (a busy host), at any phase against 1 s scrapes
    (stamped at whole seconds plus 0.52): the window chosen holds exactly one report per 3 s of hold, where a window
    ending at the last scrape held none or two when a report landed near its edges."""
    stamps = [t + 0.52 for t in range(20)]
    late = [0.4 * ((7 * k) % 5) / 4 for k in range(8)]  # a spread of lateness, 0 to 0.4 s
    reports = [phase + 3 * k + late[k] for k in range(7)]
    end = sweep.window_end(stamps, [reports_seen(stamps, reports)], hold, 1)
    assert sum(end - hold < report <= end for report in reports) == hold // 3, (end, reports)


def test_users_of_a_step():
    users = sweep.Spec("users", [5, 10], 10, 6, 50, 0)
    workers = sweep.Spec("workers", [1, 2], 10, 6, 50, 0)
    assert users.users(10, workers=3) == 10
    assert workers.users(2, workers=2) == 100


def test_set_values_parse():
    assert sweep_local.parse_set(["haproxy.sessionRateLimit=2000", "haproxy.keepAlive=false"]) == {
        "haproxy.sessionRateLimit": "2000", "haproxy.keepAlive": "false"}


@pytest.mark.parametrize("text, seconds", [("15s", 15), ("1m30s", 90), ("500ms", 0.5), ("1h", 3600)])
def test_prometheus_durations(text, seconds):
    assert prom.duration_s(text) == seconds


def test_the_run_s_last_scrape_is_awaited_not_a_clock(monkeypatch):
    """`loadtest run --release` collects the series once every target was scraped since the run's end (the oldest
    target's last scrape, min(timestamp(up))), not two intervals later; within the bound, else it goes on."""
    clock = iter(range(1000))
    monkeypatch.setattr(prom.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(prom.time, "sleep", lambda s: None)
    prometheus = prom.Prometheus("http://127.0.0.1:9")
    seen = iter([None, 99.0, 100.0])
    monkeypatch.setattr(prometheus, "scalar", lambda expr, at=None: next(seen) if expr == "min(timestamp(up))" else 0)
    assert prometheus.wait_stamped_since(100.0, timeout_s=10)
    monkeypatch.setattr(prometheus, "scalar", lambda expr, at=None: 99.0)
    assert not prometheus.wait_stamped_since(100.0, timeout_s=10)


def test_locust_credentials_become_basic_auth_and_never_ride_in_the_url():
    web = LocustWeb("http://127.0.0.1:8089/", "admin:s@cret")
    assert web.url == "http://127.0.0.1:8089"
    assert web.headers == {"Authorization": "Basic YWRtaW46c0BjcmV0"}  # admin:s@cret
    with pytest.raises(ValueError, match="not like http://"):
        LocustWeb("127.0.0.1:8089")
    with pytest.raises(ValueError, match="leave the credentials out of the URL .* LOADTEST_LOCUST_AUTH") as refused:
        LocustWeb("http://admin:s%40cret@127.0.0.1:8089/")
    assert "s%40cret" not in str(refused.value) and "admin" not in str(refused.value)


def test_calibration_from_a_sweep_takes_the_busiest_step(tmp_path):
    step = {"requests": 100_000, "failures": 0}
    (tmp_path / "sweep.json").write_text(json.dumps({
        "conditions": {"scenario": "keepalive_1kb", "node types": "locust: c5.xlarge, haproxy: c5n.2xlarge",
                       "date": "2026-11-22 08:00 UTC"},
        "steps": [{**step, "step": 1, "rps": 30_000, "worker_cpu_max": 0.5, "worker_cpu_cores": 3.0},
                  {**step, "step": 2, "rps": 100_000, "worker_cpu_max": 0.97, "worker_cpu_cores": 5.5}]}))
    scenario, figure = calibration.from_sweep(tmp_path)
    assert scenario == "keepalive_1kb"
    assert figure["rps_per_core"] == 18_182 and not figure["lower_bound"]
    assert figure["source"] == f"sweep {tmp_path / 'sweep.json'}, step 2 (locust: c5.xlarge, haproxy: c5n.2xlarge, " \
                               "2026-11-22 08:00 UTC)"


def test_calibration_from_something_else_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        commands.main(["calibrate", "--from-sweep", str(tmp_path), "--output", str(tmp_path / "c.json")])
    assert exc.value.code == 2 and "not a sweep report" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()


class NoWorkers:
    """An installed release as helm reads it back, its workers scaled to 0."""

    name, namespace = "lt", "lt"

    def __init__(self, *args):
        pass

    def values(self):
        return {"locust": {"mode": "interactive", "target": "haproxy", "worker": {"replicas": 0, "cpu": "1000m"}},
                "haproxy": {}, "monitoring": {"enabled": True}}


def test_a_release_without_a_worker_is_refused_naming_the_value_before_any_load(tmp_path):
    """Issue #56: a judged run or a sweep of a release with locust.worker.replicas 0 waited for workers that never
    come; now both refuse it as bad input, naming the value and the upgrade that sets it."""
    import pytest

    from loadtest.errors import UsageError
    from loadtest.runtime import releaserun, sweep_cluster
    from loadtest.workload import sweep

    with pytest.raises(UsageError, match="locust.worker.replicas 0: no worker would send the load"):
        releaserun.run(NoWorkers(), 10, 10, 60, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    spec = sweep.Spec("users", [10, 20], warmup_s=sweep.MIN_WARMUP_S, hold_s=30, users_per_worker=10, spawn_rate=0)
    with pytest.raises(UsageError, match="--set locust.worker.replicas=N"):
        sweep_cluster.ClusterDriver(NoWorkers(), tmp_path, None, None, spec=spec)


class Installed:
    """An installed release as helm reads it back: interactive, closed model, `workers` workers."""

    namespace = "lt"

    def __init__(self, name: str, workers: int):
        self.name, self.workers = name, workers

    def values(self):
        return {"locust": {"mode": "interactive", "target": "haproxy", "worker": {"replicas": self.workers}},
                "haproxy": {}, "monitoring": {"enabled": True}}


def test_a_regions_sweep_splits_each_steps_users_and_the_spawn_rate_as_the_workers_and_refuses_a_step_too_small(
        tmp_path):
    from loadtest.errors import UsageError
    from loadtest.runtime import regionsweep, releaserun
    from loadtest.runtime.prom import Prometheus
    from loadtest.workload import regions, sweep

    opened = {name: releaserun.Opened(Installed(name, workers), Installed(name, workers).values()["locust"], None,
                                      Prometheus("http://127.0.0.1:9"), workers)
              for name, workers in (("us", 3), ("eu", 1))}
    weights = regions.weights(None, {name: o.workers for name, o in opened.items()})
    spec = sweep.Spec("users", [8, 40], warmup_s=sweep.MIN_WARMUP_S, hold_s=30, users_per_worker=50, spawn_rate=20)
    sweepers = regionsweep.sweepers_for(opened, spec, weights, tmp_path, tmp_path / "out", lambda line: None)
    assert {name: s.spec.spawn_rate for name, s in sweepers.items()} == {"us": 15, "eu": 5}
    assert {name: s.report_dir.name for name, s in sweepers.items()} == {"us": "us", "eu": "eu"}
    assert [regionsweep.parts_of(load, weights) for load in spec.loads] == [{"us": 6, "eu": 2}, {"us": 30, "eu": 10}]
    with pytest.raises(UsageError, match=r"--steps 1: region eu would get no user of the split \(us 1, eu 0\)"):
        regionsweep.parts_of(1, weights)
    # A release in the open model has no users to sweep: refused, naming its region and the way back.
    opened["eu"].locust["load"] = {"arrivalRate": 100}
    with pytest.raises(UsageError, match=r"region eu: .* runs the open model \(locust.load.arrivalRate 100\)"):
        regionsweep.sweepers_for(opened, spec, weights, tmp_path, tmp_path / "out", lambda line: None)


@pytest.mark.parametrize("incomplete, said", [
    ("interrupted during step 3 of 4", "ended early; the steps measured so far are in {out}, marked incomplete"),
    (None, "stopped after its last step; its report is in {out}, complete"),
])
def test_after_ctrl_c_the_command_says_whether_the_report_it_left_is_whole(tmp_path, capsys, incomplete, said):
    # A Ctrl-C while the swarm stops after the last step leaves a whole report: it must not be called incomplete.
    out = tmp_path / "report"
    sweepreport.write(sweepreport.Sweep({"scenario": "keepalive_1kb"}, "users", incomplete=incomplete), out)
    say_where_the_report_is(out)
    assert capsys.readouterr().err.strip() == f"loadtest sweep: {said.format(out=out)}"

"""`loadtest run --release`: one bounded run on an installed release (locust.mode interactive).

The command opens its own port-forwards to the release's master and Prometheus, starts the swarm through the web
UI, prints live figures, stops the swarm after the run time, and collects into the run's folder, however the run
ends: Locust's HTML report, CSVs and statistics (stats.json) from the web UI, and the run's series from the
release's Prometheus (series.csv). Only the steady window is judged (every user running, until the stop): the
command resets Locust's statistics when it begins (a worker's report still in flight then, at most 3 s of
requests, still counts), so the checks read its figures, and the verdict is loadtest.judging.verdict's over the rules'
steady samples in it.
"""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

from loadtest_shared import checks, results, settings, verdict

from .. import paths
from ..workload import arrival
from ..workload.sweep import USERS_PER_WORKER
from ..errors import RunFailed, UsageError
from ..judging import locuststats
from ..judging.locuststats import PerSecond
from . import http_client
from .locustweb import LocustWeb, LocustWebError, Silence
from .prom import Prometheus, PrometheusError
from .release import Release
from .sweeper import live_line, measure

WORKERS_TIMEOUT_S = 120
PROGRESS_EVERY_S = 5
STOP_TIMEOUT_S = 30
SELF_STOP_MARGIN_S = 60  # after the run time, the master stops the swarm by itself (the command stops it first)
RESET_MARGIN_S = 1  # between the statistics' reset and the first scrape the verdict's window counts from
# Locust's own files, from the master's web UI, under the names `locust --csv stats --html report.html` gives them;
# stats.json (what --json-file writes) is served by the chart's plugin, plugin/loadtest_metrics.py.
LOCUST_FILES = {"report.html": "/stats/report?download=1", "stats_stats.csv": "/stats/requests/csv",
                "stats_failures.csv": "/stats/failures/csv", "stats_exceptions.csv": "/exceptions/csv",
                "stats.json": "/loadtest/stats.json"}


def run(release: Release, users: int, spawn_rate: float, run_time_s: int, out: Path,
        progress=print) -> results.RunReport:
    """One bounded run on the release's workers, driven through its master's web UI: the swarm, its steady window
    (every user running, from Locust's reset of its statistics), Locust's files and the release's series collected
    into `out`, and the verdict the release's Prometheus gives."""
    with contextlib.ExitStack() as stack:
        opened = open_release(release, stack, progress)
        users = users_for(opened, users)
        report = results.RunReport(opened.conditions(users, spawn_rate, run_time_s), 0, 0)
        out.mkdir(parents=True, exist_ok=True)  # only now: a run refused before it started leaves no folder
        started, steady_from = time.time(), None
        try:
            opened.swarm(users, spawn_rate, run_time_s, progress)
            steady_from = watch(opened.web, users, started + run_time_s, run_time_s, progress)
        finally:
            ended = time.time()
            stop(opened.web, progress)
            report.notes += opened.collect(started, ended, out)
        judge(report, opened.prometheus, release.name, started, steady_from, ended,
              locuststats.figures(out / "stats.json"))
    return report


class MasterLost(LocustWebError):
    """A release's master lost mid-run: it stopped answering (its pod gone, its port-forward or its cluster's API
    lost), or answered as a new master (restarted)."""

    def __init__(self, message: str, since: float):
        super().__init__(message)
        self.since = since  # unix time it was first seen lost


@dataclass
class Opened:
    """A release ready to run: its master's web UI and its Prometheus (None without monitoring) through
    port-forwards, its workers connected and its swarm idle."""

    release: Release
    locust: dict  # the release's locust values
    web: LocustWeb
    prometheus: Prometheus | None
    workers: int

    @property
    def rate(self) -> float:
        return rate_of(self.locust)

    def conditions(self, users: int, spawn_rate: float, run_time_s: int) -> dict[str, str]:
        locust = self.locust
        return {
            "release": f"{self.release.name} (namespace {self.release.namespace}"
                       f"{f', context {self.release.context}' if self.release.context else ''})",
            "scenario": locust.get("scenario", "?"), "target": locust.get("target", "?"),
            "workers": f"{self.workers} at {locust.get('worker', {}).get('cpu')} each",
            "users": f"{users} (the open model's pool for {self.rate:g} requests/s)" if self.rate else str(users),
            "spawn rate": f"{spawn_rate or users:g}/s", "run time": f"{run_time_s} s",
            "versions": f"chart {paths.chart_version(paths.CHART)}, Locust image {locust.get('image', {}).get('tag')}",
        }

    def swarm(self, users: int, spawn_rate: float, run_time_s: int, progress) -> None:
        """Start the swarm (spawn_rate 0: every user at once) and say so. The master is told to stop it by itself
        SELF_STOP_MARGIN_S after the run time: should this command die or lose the master (its port-forward
        gone), no load goes on past the run's end and the margin."""
        self.web.swarm(users, spawn_rate or users, run_time_s + SELF_STOP_MARGIN_S)
        progress(f"swarm started: {users} users at {spawn_rate or users:g}/s on {self.workers} worker(s), "
                 f"{run_time_s} s")

    def collect(self, started: float, ended: float, out: Path) -> list[str]:
        """Locust's files and the release's series into `out`; what could not be collected, and why."""
        missing = _collect_locust_files(self.web, out)
        if self.prometheus:
            missing += _collect_series(self.prometheus, self.release.name, started, ended, out)
        return missing


def open_release(release: Release, stack: contextlib.ExitStack, progress=print) -> Opened:
    """The release opened for a run (its port-forwards closed with `stack`), once it is one this command can drive:
    interactive, with its workers connected and no swarm of someone else's going on."""
    values = release.values()
    locust = values.get("locust", {})
    workers = workers_of(release, locust)
    monitored = bool(values.get("monitoring", {}).get("enabled"))
    progress(f"port-forwarding to {release}'s Locust master" + (" and Prometheus" if monitored else ""))
    web = LocustWeb(stack.enter_context(release.port_forward("locust-master", "web")), release.web_credentials())
    prometheus = Prometheus(stack.enter_context(release.port_forward("prometheus", "http"))) if monitored else None
    web.wait_workers(workers, WORKERS_TIMEOUT_S)
    if (state := web.status()["state"]) in ("spawning", "running"):
        raise RunFailed(f"{release}'s master is {state}: someone else's run is going on; stop it in the web UI "
                        "first")
    return Opened(release, locust, web, prometheus, workers)


def rate_of(locust: dict) -> float:
    """A release's open-model rate, locust.load.arrivalRate (0: the closed model)."""
    return float((locust.get("load") or {}).get("arrivalRate") or 0)


def users_for(opened: Opened, users: int) -> int:
    """The users a run on the release starts: in the open model the pool its rate needs, sized as the chart sizes
    it (a --users is refused, as `loadtest run --local` refuses it beside --arrival-rate); else --users, or the
    sweeps' 50 a worker."""
    if opened.rate:
        if users:
            raise UsageError(settings.exclusive(settings.ARRIVAL_RATE, settings.USERS).message(
                f"release {opened.release.name}'s locust.load.arrivalRate {opened.rate:g}", "--users", "drop --users",
                f"helm upgrade {opened.release.name} charts/loadtest --reuse-values --set "
                f"{settings.ARRIVAL_RATE.value}={settings.ARRIVAL_RATE.off}"))
        return arrival.pool_size(opened.rate, opened.workers)
    return users or USERS_PER_WORKER * opened.workers


def workers_of(release: Release, locust: dict) -> int:
    """The release's workers, once it is one this command can drive: interactive, with a worker at least."""
    mode = locust.get("mode", "interactive")
    if mode != "interactive":
        raise UsageError(f"release {release.name} runs locust.mode {mode}: its master starts its own swarm; "
                         f"`helm upgrade {release.name} charts/loadtest --reuse-values --set "
                         "locust.mode=interactive` lets `loadtest run --release` drive it")
    workers = int(locust.get("worker", {}).get("replicas", 1))
    if workers < 1:
        raise UsageError(f"release {release.name} has locust.worker.replicas 0: no worker would send the load; "
                         f"`helm upgrade {release.name} charts/loadtest --reuse-values --set "
                         "locust.worker.replicas=N` (`loadtest size` says how many the nodes hold)")
    return workers


def watch(web: LocustWeb, users: int, deadline: float, run_time_s: int, progress, stopped=lambda: False,
           seen=lambda entries: None, patience_s: float = 0) -> float | None:
    """Watch a started swarm until `deadline` (or until `stopped()`), progress every few seconds; reset Locust's
    statistics once every user runs, and say when (None when they never all ran). `seen` gets the statistics each
    progress line reads. A master that does not answer for `patience_s` (or at the end), or answers as a new one,
    raises MasterLost."""
    started, steady_from = deadline - run_time_s, None
    last, rates, silence, began = 0.0, PerSecond(), Silence(patience_s), False
    while (left := deadline - time.time()) > 0 and not stopped():
        time.sleep(min(1.0, left))
        try:
            state = web.state()
        except LocustWebError as e:
            if silence.missed():
                raise MasterLost(str(e), silence.since) from None
            continue
        if began and state["state"] == "ready":
            # A master that is ready again has never run this swarm: it restarted (its container or pod replaced)
            # and its run, statistics included, is gone.
            raise MasterLost("its master restarted: it is ready for a new run, this one's statistics gone",
                             silence.since or time.time())
        silence.heard()
        began = began or state["state"] in ("spawning", "running")
        if steady_from is None and state["state"] == "running" and state["user_count"] == users:
            # Locust's statistics from here on are the steady window's: what the checks judge.
            web.reset_stats()
            steady_from = time.time()
        if time.time() - last >= PROGRESS_EVERY_S:
            last = time.time()
            progress(f"  {time.time() - started:4.0f}/{run_time_s} s  {live_line(web, rates, seen)}")
    if silence.since is not None:  # silent at the end: the run cannot wait to learn whether it was slow or gone
        raise MasterLost(f"its master did not answer at the run's end, for {time.time() - silence.since:.0f} s",
                         silence.since)
    return steady_from


def judge(report: results.RunReport, prometheus: Prometheus | None, release: str, started: float,
           steady_from: float | None, ended: float, figures: dict[str, checks.Figures]) -> None:
    """The report's steady window, and the verdict and CPU figures the release's Prometheus gives over it (or why
    there are none, in its notes). `figures` are Locust's over the steady window: the open model's rate held is
    theirs, as the judged master's and a local run's is."""
    if steady_from is not None:
        report.window = {"start": steady_from, "end": ended, "seconds": round(ended - steady_from, 1),
                         "ramp_up_s": round(steady_from - started, 1)}
        report.judged = (f"steady window {ended - steady_from:.0f} s (every user running, until the stop); "
                         f"ramp-up {steady_from - started:.0f} s and the stop reported, not judged")
    if not prometheus:
        report.notes.append("no verdict and no series: the release has monitoring.enabled false")
    elif steady_from is None:
        report.notes.append("no verdict: the swarm never ran all its users")
    else:
        total = figures.get(checks.AGGREGATED)
        report.verdict, report.cpu, note = _verdict(prometheus, release, steady_from, ended,
                                                    total.rps if total else None)
        report.offered_rps = report.cpu.pop("offered_rps", None)
        report.notes += [note] if note else []


def stop(web: LocustWeb, progress) -> None:
    try:
        web.stop()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        # Stopped means every worker answered the stop, after its last report (loadtest_metrics sends one): the
        # counts are whole.
        while web.state()["state"] != "stopped" and time.monotonic() < deadline:
            time.sleep(0.5)
        progress("swarm stopped")
    except LocustWebError as e:
        progress(f"could not stop the swarm ({e}): stop it in the web UI")


def _collect_locust_files(web: LocustWeb, out: Path) -> list[str]:
    missing = []
    for name, path in LOCUST_FILES.items():
        try:
            (out / name).write_bytes(http_client.fetch(f"{web.url}{path}", headers=web.headers, timeout=30))
        except OSError as e:
            missing.append(f"{name} not collected ({path}: {e})")
    return missing


def _collect_series(prometheus: Prometheus, release: str, start: float, end: float, out: Path) -> list[str]:
    """series.csv: every column of the results' SERIES (the judged master's too) at each scrape from start to end."""
    try:
        step = prometheus.scrape_interval_s()
        # Every target scraped once more since the end, so the run's last samples are in the query API: a scrape
        # comes within an interval (two, with a late one, as this waited on a clock before).
        prometheus.wait_stamped_since(end, 2 * step)
        columns = {name: prometheus.query_range(expr, start, end, step)
                   for name, expr in results.series_queries(release, step).items()}
    except PrometheusError as e:
        return [f"series.csv not collected: {e}"]
    (out / results.SERIES_CSV).write_text(results.series_csv(columns, start, end, step))
    return []


def _verdict(prometheus: Prometheus, release: str, steady_from: float, end: float,
             steady_rps: float | None) -> tuple[verdict.Verdict | None, dict, str | None]:
    """The rules' verdict over the whole scrapes between every user running and the end, with its CPU figures; or
    None and why. The last scrape can be up to a scrape before `end`, and the window's first scrape must come after
    the statistics' reset at `steady_from` (a second's margin), so that its request counters are the reset ones.

    In the open model the rate held is `steady_rps` (Locust's, over the steady window) over the offered rate: the
    master's counters at two scrapes hold whole 3 s batches of the workers' reports, so a window of a few scrapes
    read 60 % or 120 % of a rate Locust's own statistics saw held (a one-minute window, up to 13 % off). Without
    Locust's statistics (not collected) the rate held is unmeasured, and the rate check fails for want of them."""
    try:
        step = prometheus.scrape_interval_s()
        hold_s = int((end - steady_from - step - RESET_MARGIN_S) // step * step)
        if hold_s < step:
            needed = 2 * step + RESET_MARGIN_S
            return None, {}, (f"no verdict: every user ran for {end - steady_from:.0f} s, and a verdict needs "
                              f"{needed:g} s (two scrapes of {step:g} s after the statistics' reset); give "
                              f"--run-time {math.ceil(needed - (end - steady_from))} s more")
        f = measure(prometheus, release, end, hold_s, step)
    except RunFailed as e:  # PrometheusError too
        return None, {}, f"no verdict: {e}"
    window = f.window
    if f.arrival:
        window = replace(window, achieved=None if steady_rps is None else steady_rps / f.arrival.offered_rps)
    cpu = {"worker_cpu": f.worker_cpu, "worker_cpu_cores": f.worker_cpu_cores,
           "target_cpu_ratio": f.target_cpu_ratio, "window": [f.start, f.end],
           "steady_samples": window.samples, "generator_saturated_share": window.generator_share,
           "target_saturated_share": window.target_share,
           "offered_rps": f.arrival.offered_rps if f.arrival else None}
    return verdict.judge(window), cpu, None

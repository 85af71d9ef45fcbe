"""The master's judgement of a run it ends itself (the chart's `locust.mode: run`): the checks in LOADTEST_CHECKS
(loadtest_shared.checks' syntax), and the verdict (loadtest_shared.verdict, the one every path judges by), set as
Locust's exit code.

Importing this module registers it (loadtest_lib imports it, so every scenario and loadtest_plugin do). It does
nothing unless LOADTEST_CHECKS is set (empty: no checks, the generator is still judged). Only the steady window is
judged, as everywhere in loadtest: the chart sets LOCUST_RESET_STATS, so Locust's statistics (the checks' figures)
start once every user runs, and a worker's CPU is sampled only while every user runs. The samples are the workers'
reports (every 3 s, each with the CPU the worker used since its previous one and its limit, which loadtest_metrics
adds), one sample per round of reports, so that a sample says whether any worker was saturated then, as a local
run's sample a second does. In the open model (loadtest_arrival) the late starts, the event loop's lag and the rate
sent join them; the run is held to its offered rate beside its checks (checks.rate_check): one that sent
less never passes. The master does not see the target's CPU: where nothing says the generator was the limit, its
verdict is "not generator-bound" (the release's Prometheus judges both sides).
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import time

import gevent
from locust import events
from locust.runners import STATE_RUNNING, WORKER_REPORT_INTERVAL, MasterRunner

import loadtest_abort
import loadtest_arrival
import loadtest_faults
from loadtest_metrics import REPORT_KEY  # its part of a worker's report carries the CPU limit
from loadtest_shared import checks, prometheus, results, s3, settings, verdict

# The store the chart mounts (a PVC, or a folder the master uploads to S3) and the run's name (its Job's), which make
# the run's folder: <store>/<run>, where Locust writes its CSV, JSON and HTML report too.
# With a bucket as the store, <store> is a scratch folder; the run's folder is uploaded when the master exits, after
# Locust wrote its last files, and the baseline is read from the bucket.
# While the run goes on, its folder's changed files go to the bucket this often (seconds), so a master killed
# outright (out of memory, its node lost) leaves there what it had, as a PVC would.
S3_SYNC_S = 30.0
# The release's Prometheus and its scrape interval: the master writes the run's series.csv from it, as `loadtest run
# --release` does, and the release's name selects the series.
CRASHED = "the master ended before the run did (it crashed, or was stopped)"

logger = logging.getLogger(__name__)


class WorkerCpu:
    """The steady window's samples: each worker's CPU as a share of its ceiling, from its reports while the swarm
    runs, one sample per round of reports (a report interval), counted from the first moment every user ran. A report
    says what the worker used since its previous one, so each worker's first report while every user runs is left
    out: it may cover the spawning before. Reports while a rebalance spawns users (a worker lost or joined) are left
    out too; the window goes on after it."""

    def __init__(self, runner: MasterRunner):
        self.runner = runner
        self.rounds: dict[int, dict[str, tuple[float, float | None]]] = {}
        self.running_since: float | None = None
        self.reported: set[str] = set()  # the workers whose first report of the steady window came

    def add(self, client_id: str, data: dict, now: float | None = None) -> None:
        """A worker's report (Locust's worker_report event), received at `now` (monotonic; by default, now)."""
        if self.runner.state != STATE_RUNNING:
            return
        now = time.monotonic() if now is None else now
        if self.running_since is None:
            self.running_since = now
        facts = data.get(REPORT_KEY) or {}
        if facts.get("cpu_cores") is None:
            return
        if client_id not in self.reported:
            self.reported.add(client_id)
            return
        limit = facts.get("cpu_limit_cores") or 1.0
        round_ = int((now - self.running_since) // WORKER_REPORT_INTERVAL)
        self.rounds.setdefault(round_, {})[client_id] = (facts["cpu_cores"] / min(limit, 1.0),
                                                         facts.get("cpu_throttled"))

    def samples(self) -> list[verdict.Sample]:
        """One sample per round: each worker's CPU share, and its share of throttled CFS periods where counted."""
        samples = []
        for _, workers in sorted(self.rounds.items()):
            throttled = {w: t for w, (_, t) in workers.items() if t is not None}
            samples.append(verdict.Sample(worker_cpu={w: cpu for w, (cpu, _) in workers.items()},
                                                   worker_throttling=throttled or None))
        return samples


def steady_window(cpu: WorkerCpu, arrival, figures: dict, losses: tuple[str, ...] = (),
                  silences: tuple[str, ...] = ()) -> verdict.Window:
    """The steady window the verdict judges: the workers' samples, the workers lost in it, the target's silences,
    its failed share and, in
    the open model, its late starts, its event loop's lag and the share of the offered rate sent. The target's CPU is
    not the master's to see: its samples carry none, and the verdict says the target is unmeasured."""
    total = figures.get(checks.AGGREGATED)
    failure_ratio = total.fail_ratio if total and total.requests else None
    if not arrival:
        return verdict.Window.of(cpu.samples(), losses=losses, silences=silences,
                                          failure_ratio=failure_ratio)
    totals = arrival.to_json()
    return verdict.Window.of(
        cpu.samples(), late_starts=totals["late_share"]["cpu"], late_users=totals["late_share"]["users"],
        loop_lagged=arrival.loop_lagged(), max_lag_ms=totals["loop"]["max_lag_ms"],
        achieved=figures[checks.AGGREGATED].rps / arrival.rate if arrival.rate else None,
        requests_per_slot=figures[checks.AGGREGATED].requests / totals["slots"] if totals["slots"] else None,
        losses=losses, silences=silences, failure_ratio=failure_ratio)


def results_folder() -> str | None:
    """<store>/<run> when the chart gives both, created at once: Locust opens its CSV files there at start."""
    store, run = os.environ.get(settings.RESULTS_DIR.env), os.environ.get(settings.RUN_NAME.env)
    if not (store and run):
        return None
    folder = os.path.join(store, run)
    os.makedirs(folder, exist_ok=True)
    return folder


def bucket():
    """The S3 store the chart names, or None."""
    url = os.environ.get(settings.S3_URL.env)
    return s3.from_url(url, settings.S3_ENDPOINT.read(), settings.S3_REGION.read()) if url else None


def baseline_of(store) -> tuple[str, dict | str] | None:
    """The pinned baseline in the bucket, or on the mounted store: its name and result.json, or why that could not
    be read (the run then says it was not held to it, rather than passing as if none were pinned)."""
    if store is None:
        return results.read_baseline(os.environ[settings.RESULTS_DIR.env])
    prefix = f"{store.prefix}/" if store.prefix else ""
    try:
        name = store.get(f"{prefix}{results.BASELINE}").decode().strip()
    except s3.S3Error as e:
        if e.code == "NoSuchKey":
            return None
        return "(unknown)", f"the pinned baseline could not be read from {store.url}: {e}"
    if not name:
        return None
    try:
        return name, json.loads(store.get(store.run_key(name, results.RESULT)))
    except (s3.S3Error, ValueError) as e:
        return name, f"its {results.RESULT} could not be read from {store.url}: {e}"


def upload_at_exit(store, folder: str) -> None:
    """Upload the run's folder once Locust has written its last file (after its quitting and quit events); a
    failed upload fails the run: its results are nowhere else."""
    def upload():
        try:
            keys = store.upload_folder(folder, os.path.basename(folder))
            logger.info("results uploaded to %s/%s (%d objects)", store.url, os.path.basename(folder), len(keys))
        except (s3.S3Error, OSError, ValueError) as e:
            logger.error("results NOT uploaded to %s: %s", store.url, e)
            logging.shutdown()
            os._exit(checks.RUN_FAILED)

    atexit.register(upload)


def sync_while_running(store, folder: str, every_s: float) -> None:
    """Send the folder's changed files to the bucket now and every `every_s` until the master exits; a failed
    sync is logged and tried again (the upload at exit is the one that must succeed)."""
    def sync():
        sent: dict[str, tuple[int, int]] = {}
        while True:
            try:
                store.sync_folder(folder, os.path.basename(folder), sent)
            except (s3.S3Error, OSError, ValueError) as e:
                logger.warning("results not synced to %s yet: %s", store.url, e)
            gevent.sleep(every_s)

    gevent.spawn(sync)


def write_series(folder: str, start: float, end: float) -> None:
    """series.csv of the run from the release's Prometheus, when the chart names it; a failure is logged, the run
    judged all the same."""
    url = os.environ.get(settings.PROMETHEUS_URL.env)
    if not url:
        return
    step = float(os.environ.get(settings.SCRAPE_INTERVAL_S.env, "15"))
    try:
        client = prometheus.Prometheus(url, timeout_s=30)
        columns = {name: client.query_range(expr, start, end, step)
                   for name, expr in results.series_queries(os.environ.get(settings.RELEASE.env, ""), step).items()}
        results.replace_file(os.path.join(folder, results.SERIES_CSV), results.series_csv(columns, start, end, step))
    except (prometheus.PrometheusError, OSError) as e:
        logger.warning("series.csv not written: %s: %s", url, e)


def conditions(environment) -> dict[str, str]:
    """What ran, as far as the master knows it."""
    options = environment.parsed_options
    facts = {"scenario": os.path.splitext(os.path.basename(options.locustfile.split(",")[0]))[0],
             "target": options.host or "", "workers": str(len(environment.runner.clients)),
             "users": str(options.num_users), "run time": f"{options.run_time} s",
             "where": f"Kubernetes, master pod {socket.gethostname()}"}
    if loadtest_arrival.totals:
        facts["model"] = f"open: {loadtest_arrival.totals.rate:g} requests/s, latency from each request's slot"
    return facts


def from_environment() -> tuple[list, str | None, object, float]:
    """The checks, the run's folder, its bucket and the seconds between the bucket's syncs, from the environment the
    chart gives; a bad one ends the master with exit 2, naming it."""
    try:
        asked = checks.parse_all([os.environ[settings.CHECKS.env]])
    except checks.CheckError as e:
        logger.error("%s: %s", settings.CHECKS.env, e)
        raise SystemExit(checks.BAD_INPUT) from None
    folder = results_folder()
    try:
        store = bucket() if folder else None
    except (ValueError, s3.S3Error) as e:
        logger.error("%s: %s", settings.S3_URL.env, e)
        raise SystemExit(checks.BAD_INPUT) from None
    try:
        sync_s = float(os.environ.get(settings.S3_SYNC_S.env, S3_SYNC_S))
    except ValueError:
        sync_s = 0.0
    if not 0 < sync_s < float("inf"):
        logger.error("%s=%r: seconds between uploads, above 0, e.g. 30", settings.S3_SYNC_S.env, settings.S3_SYNC_S.read())
        raise SystemExit(checks.BAD_INPUT)
    return asked, folder, store, sync_s


class JudgedRun:
    """One run the master ends itself: its folder, marked incomplete until its end; its steady window's bounds; its
    workers' samples; and, when the master quits, its judgement as the exit code."""

    def __init__(self, environment, asked: list, folder: str | None, store):
        self.environment, self.checks, self.folder, self.store = environment, asked, folder, store
        self.cpu = WorkerCpu(environment.runner)
        self.started, self.steady = time.time(), [None, None]

    def keep(self, sync_s: float) -> None:
        """Until the run ends, its folder says it did not: a master that crashes leaves it marked incomplete, beside
        the CSV files Locust has been writing; a bucket gets the folder as it grows, and whole at exit."""
        if not self.folder:
            return
        if self.store is not None:
            upload_at_exit(self.store, self.folder)
        results.write(results.RunReport(conditions(self.environment), self.started, self.started, incomplete=CRASHED),
                      self.folder)
        if self.store is not None:
            sync_while_running(self.store, self.folder, sync_s)

    def steady_from(self, **_) -> None:
        # The first spawning_complete: a rebalance's later ones (a worker lost or joined) do not restart the window.
        self.steady[0] = self.steady[0] or time.time()

    def steady_until(self, **_) -> None:
        self.steady[1] = self.steady[1] or time.time()

    def judge(self, environment, **_) -> None:
        """The checks and the verdict, the run's folder written, and the exit code set."""
        stats = environment.runner.stats
        # serialize(), not serialize_stats(): that one resets the entries Locust still writes to its files.
        figures = checks.from_entries([e.serialize() for e in stats.entries.values()])
        arrival = loadtest_arrival.totals
        # The open model's run is held to its offered rate beside its own checks: one that sent less never passes.
        outcomes = checks.judge(self.checks + ([checks.rate_check(arrival.rate)] if arrival else []), figures)
        stop = loadtest_abort.active.outcome() if loadtest_abort.active else None
        outcomes += [stop] if stop else []
        for outcome in outcomes:
            logger.info("check %s", outcome.describe())
        faults = loadtest_faults.log
        faults.look()
        window = steady_window(self.cpu, arrival, figures, faults.losses(*self.steady), faults.silences(*self.steady))
        judged = verdict.judge(window)
        logger.info("verdict %s: %s", judged.kind, judged.reason)
        code = checks.exit_code(outcomes, judged.kind == verdict.GENERATOR_BOUND, figures[checks.AGGREGATED].requests)
        # A run too short for one steady sample of its workers' CPU was not judged: it does not pass on its checks.
        # One stopped early by its abort condition was: that condition held.
        unjudged = None if window.measured or stop else (
            f"no steady sample of the workers' CPU: every user ran for less than two worker reports (up to "
            f"{2 * WORKER_REPORT_INTERVAL:.0f} s), so whether the generator was the limit is not known; give the "
            "run a longer run time")
        if unjudged:
            logger.error("%s", unjudged)
            code = checks.RUN_FAILED
        if self.folder:
            code = self.write(figures, outcomes, window, judged, unjudged, faults.to_json())
        logger.info("exit code %d: %s", code, checks.EXIT_CODES[code].meaning)
        environment.process_exit_code = code

    def write(self, figures: dict, outcomes: list, window: verdict.Window,
              judged: verdict.Verdict, incomplete: str | None, faults: dict) -> int:
        """The run's folder (series.csv, result.json and the rest), held to the pinned baseline; its exit code."""
        write_series(self.folder, self.started, time.time())
        start, end = self.steady[0], self.steady[1] or time.time()
        report = results.RunReport(
            conditions(self.environment), self.started, time.time(), figures, outcomes, verdict=judged,
            cpu={"busiest_worker": window.busiest_worker if window.samples else None,
                 "generator_saturated_share": window.generator_share, "steady_samples": window.samples},
            window={"start": start, "end": end, "seconds": round(end - start, 1) if start else 0.0},
            judged="every user running, before the stop (Locust reset its statistics when the last user started)",
            incomplete=incomplete, faults=faults,
            offered_rps=loadtest_arrival.totals.rate if loadtest_arrival.totals else None)
        report.baseline = results.hold_to(baseline_of(self.store), report.to_json())
        if report.baseline:
            (logger.error if report.baseline.invalid else logger.info)("%s", report.baseline.describe())
        results.write(report, self.folder)
        logger.info("results in %s", self.folder)
        return report.exit_code


@events.init.add_listener
def _register(environment, **_):
    if settings.CHECKS.env not in os.environ or not isinstance(environment.runner, MasterRunner):
        return
    asked, folder, store, sync_s = from_environment()
    run = JudgedRun(environment, asked, folder, store)
    environment.events.worker_report.add_listener(run.cpu.add)
    environment.events.spawning_complete.add_listener(run.steady_from)
    environment.events.test_stop.add_listener(run.steady_until)
    environment.events.quitting.add_listener(run.judge)
    run.keep(sync_s)

"""What happened to the generator while a run went on, as its master saw it: workers lost (no heartbeat for
up to DETECTION_S: killed, partitioned, out of memory), workers that quit (deleted, evicted, rolled: their last
report arrives first), workers that joined or came back; how long the run went with fewer workers than it had; the
target gone silent (every worker running users, none with a request answered, for SILENT_S: hung, paused or cut
off); and the requests each worker sent by its own count, so a result can be held to the target's count of them.

Each worker counts every request it sends (never reset within a run) and puts the running total in each of its
reports (loadtest_metrics' part of it); the master keeps each worker's last total. A worker lost between two reports
takes the requests it sent since its last one with it (up to a report interval's): they are estimated from its rate
and named, not hidden.

A worker that hears nothing from its master for MASTER_LOST_S stops its users: the master has given them to the other
workers by then (a worker cut off would double their load on the target, which it still reaches), or is gone (its
load would be orphaned for a minute). A worker heard again gets users again: the master rebalances.

A rebalance (a worker lost or joined, Locust's --enable-rebalancing) ends with Locust's spawning_complete, which
resets the statistics under --reset-stats: the steady window's counts until then would be dropped, on the master and
on every worker. Here only a run's first spawning_complete resets them.

Importing this module registers it (loadtest_lib imports it). The local run (`loadtest run --local`) reads the log
from the file in LOADTEST_FAULTS_FILE, written when the master quits; the chart's judged master from `log`.
"""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass

import gevent
from locust import events
from locust.runners import (HEARTBEAT_INTERVAL, HEARTBEAT_LIVENESS, STATE_INIT, STATE_MISSING, STATE_RUNNING,
                            STATE_SPAWNING, STATE_STOPPED, STATE_STOPPING, WORKER_REPORT_INTERVAL, MasterRunner,
                            WorkerRunner)

import loadtest_reports
from loadtest_shared import settings

LOST, QUIT, JOINED, BACK = "worker lost", "worker quit", "worker joined", "worker back"
SILENT = "target silent"
FAULTS = (LOST, QUIT, SILENT)  # what the master's metrics count (loadtest_faults_total)
# Events that leave the run with fewer workers than it had: the steady window they fall in is not judged healthy.
LOSSES = (LOST, QUIT)
WATCH_S = 0.5  # how often the master reads its view of its workers, and a worker looks when it last heard the master
# A worker is marked missing when HEARTBEAT_LIVENESS heartbeats in a row did not come: it died up to this long before.
DETECTION_S = (HEARTBEAT_LIVENESS + 1) * HEARTBEAT_INTERVAL
# A worker that hears nothing from its master for this long stops its users. By then the master has marked it
# missing and given its users to the other workers (cut off from the master, it would double their load), or the
# master is gone (its load would be orphaned: Locust's worker goes on for MASTER_HEARTBEAT_TIMEOUT, 60 s, then quits).
# When the master hears it again it gives it users again. The master answers each heartbeat at once but counts the
# missed ones once a second: it marks a worker missing 4-5 s after its last heartbeat, a little later when busy. The
# worker waits a second more than that, looking every WATCH_S, so it stops 1-2.5 s after its users were moved (at
# 5 s, checked once a second, it stopped 2 ms before the master moved them, now and then).
MASTER_LOST_S = DETECTION_S + 2 * HEARTBEAT_INTERVAL
# A worker lost with at least this share of its memory limit in use at its last report was, most likely, killed by
# the kernel for its memory (OOMKilled): its reports come every 3 s, a leak fills the rest in less.
OUT_OF_MEMORY_SHARE = 0.8
# The target is silent once no worker running users had a request answered (success or failure) for two report
# intervals, where their rates before would have given at least SILENT_EXPECTED: by chance (a test that waits long
# between requests) that happens less than once in 20,000 such spells (Poisson). A request waiting on a hung target
# fails only at its timeout (LeanHttpUser's 60 s, as Locust's and k6's), so without this the window looks served.
SILENT_S = 2 * WORKER_REPORT_INTERVAL
SILENT_EXPECTED = 10

logger = logging.getLogger(__name__)


@dataclass
class Event:
    at: float  # unix time: a lost worker's last heartbeat (it died after it), else when the master saw it
    kind: str  # one of LOST, QUIT, JOINED, BACK, SILENT
    worker: str  # "" for the target
    users: int  # the users it ran just before (a loss; the run's, a silence), or 0
    # A lost worker: from its last heartbeat until the master marked it missing. A silence: from the last report
    # with a request answered until the master saw it.
    detected_s: float = 0.0
    unreported: int = 0  # a lost worker: requests it sent after its last report (estimated from its rate)
    # A loss: until as many workers ran users again; a silence: until a request was answered (None: not before the end)
    restored_s: float | None = None
    cause: str = ""  # what most likely ended it, where its reports say (out of memory), and what to change

    def describe(self, since: float, cost: bool = True) -> str:
        """In words; `cost`: with how long the run went with fewer workers (known once it ended)."""
        t = f"{self.at - since:.0f} s into the run"
        if self.kind == SILENT:
            lasted = ("until the end" if self.restored_s is None else f"answering again {self.restored_s:.0f} s later")
            return (f"target silent from {t}: no worker had a request answered (not even a failure) while its "
                    f"{self.users} users ran: it hung, was paused or was cut off; the master saw it after "
                    f"{self.detected_s:.0f} s" + (f"; {lasted}" if cost else ""))
        if self.kind not in LOSSES:
            return f"{self.kind} {self.worker} at {t}"
        made_good = ("not replaced before the end" if self.restored_s is None
                     else f"{self.restored_s:.0f} s with fewer workers")
        what = "it quit after sending its last report"
        if self.kind == LOST:
            what = f"its heartbeat stopped; the master saw it after {self.detected_s:.0f} s" + (
                f"; about {self.unreported:,} requests it sent after its last report are not in the statistics"
                if self.unreported else "") + (f"; {self.cause}" if self.cause else "")
        return f"{self.kind} {self.worker} ({self.users} users) at {t}: {what}" + (f"; {made_good}" if cost else "")


class FaultLog:
    """The master's record of its workers over one run (from its test_start)."""

    def __init__(self, runner: MasterRunner):
        self.runner = runner
        self.new_run()

    def new_run(self, **_) -> None:
        self.started = time.time()
        self.steady_at: float | None = None
        self.events: list[Event] = []
        self.states: dict[str, str] = {}  # worker id: its state when last looked at
        self.users: dict[str, int] = {}  # worker id: the users it last ran
        self.heard: dict[str, float] = {}  # worker id: its last heartbeat (unix time)
        self.sent: dict[str, int] = {}  # worker id: the requests it had sent by its last report, by its count
        self.carried: dict[str, int] = {}  # worker id: its counts of earlier runs of its own (stopped and respawned)
        self.reported: dict[str, tuple[float, float]] = {}  # worker id: (time of its last report, its rate then)
        # worker id: (time of its last report with a request answered, its rate then)
        self.answered: dict[str, tuple[float, float]] = {}
        self.silence: Event | None = None  # the target silent now
        self.memory: dict[str, tuple[int, int]] = {}  # worker id: (bytes in use, its limit) at its last report
        self.open: list[Event] = []  # losses not yet made good
        self.wanted: int | None = None  # the workers running users when every user first ran
        self.stopped_early: dict | None = None  # an SLO stop (loadtest_abort): the condition, its figure, when
        self.looked = False  # whether the workers were looked at in this run: the ones there at first did not join

    def steady(self, **_) -> None:
        self.steady_at = self.steady_at or time.time()

    def heartbeat(self, client_id: str, timestamp: float, **_) -> None:
        self.heard[client_id] = timestamp

    def report(self, client_id: str, data: dict, **_) -> None:
        facts = data.get(loadtest_reports.METRICS) or {}
        if facts.get("memory_bytes") is not None and facts.get("memory_limit_bytes"):
            self.memory[client_id] = (facts["memory_bytes"], facts["memory_limit_bytes"])
        sent = facts.get("requests_sent")
        if sent is None:
            return
        now = time.time()
        # Its rate since its previous report, or since the run started for its first.
        before, (then, _) = self.sent.get(client_id, 0), self.reported.get(client_id, (self.started, 0.0))
        if sent < before:  # it stopped (its master lost) and started again: a new count
            self.carried[client_id] = self.carried.get(client_id, 0) + before
            before = 0
        rate = (sent - before) / (now - then) if now > then else 0.0
        self.sent[client_id], self.reported[client_id] = sent, (now, rate)
        if sent > before:
            self.answered[client_id] = (now, rate)

    def look(self, now: float | None = None) -> None:
        """Compare the master's workers with the previous look: record losses, joins and returns; close the losses
        made good (as many workers running users as when every user first ran)."""
        if self.runner.state not in (STATE_SPAWNING, STATE_RUNNING):
            return
        now = time.time() if now is None else now
        clients = {c.id: c for c in self.runner.clients.values()}
        for worker, client in clients.items():
            before = self.states.get(worker)
            if client.state == STATE_MISSING and before not in (None, STATE_MISSING):
                heard = self.heard.get(worker, now - DETECTION_S)
                # One lost before its first report sent for as long as the run, at the other workers' mean rate.
                reported, rate = self.reported.get(worker, (self.started, self.mean_rate()))
                # It died after its last heartbeat and its last report, before its next heartbeat: half-way.
                died = (max(heard, reported) + heard + HEARTBEAT_INTERVAL) / 2
                self._lose(Event(heard, LOST, worker, self.users.get(worker, 0), detected_s=round(now - heard, 1),
                                 unreported=round(rate * max(0.0, died - reported)), cause=self.out_of_memory(worker)))
            elif before == STATE_MISSING and client.state != STATE_MISSING:
                self._record(Event(now, BACK, worker, 0))
                for lost in self.events:  # cut off, not dead: its reports came with it, nothing is unreported
                    if lost.kind == LOST and lost.worker == worker:
                        lost.unreported = 0
            elif before is None and self.looked and self.steady_at is not None:
                self._record(Event(now, JOINED, worker, 0))
            if client.state != STATE_MISSING:
                self.users[worker] = sum(client.user_classes_count.values())
        for worker in set(self.states) - set(clients):
            if self.states[worker] != STATE_MISSING:  # a missing worker is dropped a minute later: lost already
                self._lose(Event(now, QUIT, worker, self.users.get(worker, 0)))
        self.states, self.looked = {worker: client.state for worker, client in clients.items()}, True
        running = sum(1 for c in clients.values() if c.state == STATE_RUNNING and c.user_classes_count)
        self.look_at_the_target(now, [w for w, c in clients.items() if c.state == STATE_RUNNING and self.users.get(w)])
        if self.wanted is None and self.steady_at is not None:
            self.wanted = running
        if self.wanted is not None and running >= self.wanted:
            for loss in self.open:
                loss.restored_s = round(now - loss.at, 1)
            self.open.clear()

    def look_at_the_target(self, now: float, running: list[str]) -> None:
        """Open a silence when none of the workers running users had a request answered for SILENT_S (and their
        rates say they would have); close it at the first answer."""
        answered = [self.answered[w] for w in running if w in self.answered]
        if self.silence is not None:
            last = max((at for at, _ in answered), default=0.0)
            if last > self.silence.at:
                self.silence.restored_s = round(last - self.silence.at, 1)
                self.silence = None
            return
        if self.steady_at is None or not running or len(answered) < len(running):
            return
        last = max(at for at, _ in answered)
        if now - last >= SILENT_S and SILENT_S * sum(rate for _, rate in answered) >= SILENT_EXPECTED:
            self.silence = Event(last, SILENT, "", sum(self.users[w] for w in running), detected_s=round(now - last, 1))
            self._record(self.silence, logging.WARNING)

    def mean_rate(self) -> float:
        """The workers' mean rate at their last reports (requests per second), 0 before any report."""
        rates = [rate for _, rate in self.reported.values()]
        return sum(rates) / len(rates) if rates else 0.0

    def out_of_memory(self, worker: str) -> str:
        """Why a lost worker most likely died, when its last report had its memory nearly full; else ""."""
        used, limit = self.memory.get(worker, (0, 0))
        if not limit or used < OUT_OF_MEMORY_SHARE * limit:
            return ""
        return (f"out of memory, most likely (OOMKilled): its last report had {used / 2**20:.0f} MiB of its "
                f"{limit / 2**20:.0f} MiB limit in use; raise the workers' memory (the chart's locust.worker.memory) "
                "or find what the test keeps")

    def _record(self, event: Event, level: int = logging.INFO) -> None:
        self.events.append(event)
        logger.log(level, "%s", event.describe(self.started, cost=False))

    def _lose(self, event: Event) -> None:
        self._record(event, logging.WARNING)
        self.open.append(event)

    def finish_a_stop(self) -> None:
        """Locust's master is stopped once every worker said it stopped; a missing one never will, and the master
        would stay "stopping" for the minute Locust keeps a missing worker: the workers that are there decide."""
        clients = list(self.runner.clients.values())
        if (self.runner.state == STATE_STOPPING and any(c.state == STATE_MISSING for c in clients)
                and all(c.state in (STATE_INIT, STATE_MISSING) for c in clients)):
            self.runner.update_state(STATE_STOPPED)

    def give_ready_workers_users(self) -> None:
        """Locust rebalances for a worker that joins or is heard again only if the run is not spawning just then (a
        rebalance of its own, for a worker lost a second before, say): one that came then would sit without users
        for the rest of the run, the run a worker short. A worker ready while every user runs gets users."""
        runner = self.runner
        if (runner.rebalancing_enabled() and runner.state == STATE_RUNNING and runner.spawning_completed
                and runner.clients.ready):
            logger.info("worker %s ready without users while the run runs: rebalancing",
                        ", ".join(c.id for c in runner.clients.ready))
            gevent.spawn(runner.start, runner.target_user_count, runner.spawn_rate)

    def watch(self) -> None:
        while True:
            self.look()
            self.finish_a_stop()
            self.give_ready_workers_users()
            gevent.sleep(WATCH_S)

    def losses(self, start: float | None, end: float | None) -> list[str]:
        """The losses between `start` and `end` (unix times), in words: what makes a window not healthy."""
        return self._described(LOSSES, start, end, DETECTION_S)

    def silences(self, start: float | None, end: float | None) -> list[str]:
        """The target's silences between `start` and `end`, in words: the window did not measure its capacity."""
        return self._described((SILENT,), start, end, SILENT_S)

    def _described(self, kinds: tuple[str, ...], start: float | None, end: float | None, seen_s: float) -> list[str]:
        if start is None:
            return []
        end = end or time.time()
        return [e.describe(self.started) for e in self.events if e.kind in kinds and start <= e.at <= end + seen_s]

    def _lasted(self, kinds: tuple[str, ...]) -> float:
        """Seconds the events of `kinds` lasted, until now for one not over."""
        return round(sum((e.restored_s if e.restored_s is not None else max(0.0, time.time() - e.at))
                         for e in self.events if e.kind in kinds), 1)

    def to_json(self) -> dict:
        """result.json's "faults": the events, and the requests the workers sent by their own count."""
        return {"events": [{**asdict(e), "description": e.describe(self.started)} for e in self.events],
                "workers_lost": sum(e.kind == LOST for e in self.events),
                "workers_quit": sum(e.kind == QUIT for e in self.events),
                "seconds_with_fewer_workers": self._lasted(LOSSES),
                "requests_sent": sum(self.sent.values()) + sum(self.carried.values()),
                "requests_unreported": sum(e.unreported for e in self.events),
                "seconds_target_silent": self._lasted((SILENT,)),
                "report_interval_s": WORKER_REPORT_INTERVAL, "stopped_early": self.stopped_early}


log: FaultLog | None = None  # the master's, once Locust's init ran
# Set on the master's options once every user of the run ran. Locust sends the master's options with each spawn
# message, so a worker given users later (a replacement, one back from a cut) knows that it joins a steady run, whose
# counts it keeps: its own first spawning_complete is not the run's.
STEADY_OPTION = "loadtest_steady_run"


def keep_counts_across_rebalances(events) -> None:
    """Locust's --reset-stats only at a run's first spawning_complete (see the module's text), and not at all on a
    worker that joins a steady run. Registered on Locust's events when this module is imported, before the runner's
    own listener (made with the runner) and before a worker's init, which can fire after its first users were
    spawned: each spawning_complete sets whether the runner's listener, which fires next, resets."""
    run = {"environment": None, "wanted": None, "first": False}

    @events.test_start.add_listener
    def new_run(environment, **_):
        if run["wanted"] is None:
            run["wanted"] = environment.reset_stats  # Locust's setting, before it is changed here
        options = environment.parsed_options
        joined_steady = isinstance(environment.runner, WorkerRunner) and getattr(options, STEADY_OPTION, False)
        run.update(environment=environment, first=not joined_steady)
        if isinstance(environment.runner, MasterRunner) and options is not None:
            setattr(options, STEADY_OPTION, False)

    @events.spawning_complete.add_listener
    def before_the_reset(**_):
        environment = run["environment"]
        if environment is None:
            return
        environment.reset_stats, run["first"] = bool(run["wanted"] and run["first"]), False
        if isinstance(environment.runner, MasterRunner) and environment.parsed_options is not None:
            setattr(environment.parsed_options, STEADY_OPTION, True)


keep_counts_across_rebalances(events)


def _stop_users_without_the_master(runner) -> None:
    """A worker's watch: its users stop once its master was not heard for MASTER_LOST_S (see there)."""
    def watch():
        while True:
            gevent.sleep(WATCH_S)
            heard = runner.last_heartbeat_timestamp
            if heard and runner.worker_state in (STATE_SPAWNING, STATE_RUNNING) and time.time() - heard > MASTER_LOST_S:
                logger.error("no heartbeat from the master for %.0f s: this worker stops its users (its master has "
                             "given them to other workers, or is gone); it starts again when the master sends users",
                             time.time() - heard)
                runner.stop()
                runner.worker_state = STATE_INIT  # as after the master's own stop: ready for its next users

    gevent.spawn(watch)


@events.init.add_listener
def _register(environment, **_):
    global log
    if environment.runner is None:
        return
    if not isinstance(environment.runner, MasterRunner):
        if isinstance(environment.runner, WorkerRunner):
            _stop_users_without_the_master(environment.runner)
        return
    runner = environment.runner
    log = FaultLog(runner)
    environment.events.test_start.add_listener(log.new_run)
    environment.events.spawning_complete.add_listener(log.steady)
    environment.events.heartbeat_sent.add_listener(log.heartbeat)
    environment.events.worker_report.add_listener(log.report)
    gevent.spawn(log.watch)
    if path := os.environ.get(settings.FAULTS_FILE.env):
        @environment.events.quitting.add_listener
        def write(**_):
            log.look()
            with open(path, "w") as f:
                json.dump({**log.to_json(), "steady_losses": log.losses(log.steady_at, time.time()),
                           "steady_silences": log.silences(log.steady_at, time.time())}, f, indent=1)

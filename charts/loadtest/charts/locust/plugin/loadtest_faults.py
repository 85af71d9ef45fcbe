"""What happened to the generator while a run went on, as its master saw it: workers lost (no heartbeat for
HEARTBEAT_LIVENESS s: killed, partitioned, out of memory), workers that quit (deleted, evicted, rolled: their last
report arrives first), workers that joined or came back; how long the run went with fewer workers than it had; and
the requests each worker sent by its own count, so a result can be held to the target's count of them.

Each worker counts every request it sends (never reset within a run) and puts the running total in each of its
reports (loadtest_metrics' part of it); the master keeps each worker's last total. A worker lost between two reports
takes the requests it sent since its last one with it (up to a report interval's): they are estimated from its rate
and named, not hidden.

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
from locust.runners import (HEARTBEAT_INTERVAL, HEARTBEAT_LIVENESS, STATE_MISSING, STATE_RUNNING, STATE_SPAWNING,
                            WORKER_REPORT_INTERVAL, MasterRunner)

import loadtest_metrics

FILE_ENV = "LOADTEST_FAULTS_FILE"
LOST, QUIT, JOINED, BACK = "worker lost", "worker quit", "worker joined", "worker back"
# Events that leave the run with fewer workers than it had: the steady window they fall in is not judged healthy.
LOSSES = (LOST, QUIT)
WATCH_S = 0.5  # how often the master's view of its workers is read (Locust marks a worker missing once a second)
# A worker is marked missing when HEARTBEAT_LIVENESS heartbeats in a row did not come: it died up to this long before.
DETECTION_S = (HEARTBEAT_LIVENESS + 1) * HEARTBEAT_INTERVAL

logger = logging.getLogger(__name__)


@dataclass
class Event:
    at: float  # unix time: a lost worker's last heartbeat (it died after it), else when the master saw it
    kind: str  # one of LOST, QUIT, JOINED, BACK
    worker: str
    users: int  # the users it ran just before (a loss), or 0
    detected_s: float = 0.0  # a lost worker: from its last heartbeat until the master marked it missing
    unreported: int = 0  # a lost worker: requests it sent after its last report (estimated from its rate)
    restored_s: float | None = None  # a loss: until as many workers ran users again (None: not before the end)

    def describe(self, since: float) -> str:
        t = f"{self.at - since:.0f} s into the run"
        if self.kind not in LOSSES:
            return f"{self.kind} {self.worker} at {t}"
        cost = ("not replaced before the end" if self.restored_s is None
                else f"{self.restored_s:.0f} s with fewer workers")
        what = (f"its heartbeat stopped; the master saw it after {self.detected_s:.0f} s; about {self.unreported:,} "
                "requests it sent after its last report are not in the statistics" if self.kind == LOST
                else "it quit after sending its last report")
        return f"{self.kind} {self.worker} ({self.users} users) at {t}: {what}; {cost}"


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
        self.reported: dict[str, tuple[float, float]] = {}  # worker id: (time of its last report, its rate then)
        self.open: list[Event] = []  # losses not yet made good
        self.wanted: int | None = None  # the workers running users when every user first ran
        self.stopped_early: dict | None = None  # an SLO stop (loadtest_abort): the condition, its figure, when
        self.looked = False  # whether the workers were looked at in this run: the ones there at first did not join

    def steady(self, **_) -> None:
        self.steady_at = self.steady_at or time.time()

    def heartbeat(self, client_id: str, timestamp: float, **_) -> None:
        self.heard[client_id] = timestamp

    def report(self, client_id: str, data: dict, **_) -> None:
        sent = (data.get(loadtest_metrics.REPORT_KEY) or {}).get("requests_sent")
        if sent is None:
            return
        now = time.time()
        before, (then, _) = self.sent.get(client_id), self.reported.get(client_id, (None, 0.0))
        rate = (sent - before) / (now - then) if before is not None and now > then else 0.0
        self.sent[client_id], self.reported[client_id] = sent, (now, rate)

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
                reported, rate = self.reported.get(worker, (heard, 0.0))
                self._lose(Event(heard, LOST, worker, self.users.get(worker, 0), detected_s=round(now - heard, 1),
                                 unreported=round(rate * max(0.0, heard + HEARTBEAT_INTERVAL / 2 - reported))))
            elif before == STATE_MISSING and client.state != STATE_MISSING:
                self.events.append(Event(now, BACK, worker, 0))
            elif before is None and self.looked and self.steady_at is not None:
                self.events.append(Event(now, JOINED, worker, 0))
            if client.state != STATE_MISSING:
                self.users[worker] = sum(client.user_classes_count.values())
        for worker in set(self.states) - set(clients):
            if self.states[worker] != STATE_MISSING:  # a missing worker is dropped a minute later: lost already
                self._lose(Event(now, QUIT, worker, self.users.get(worker, 0)))
        self.states, self.looked = {worker: client.state for worker, client in clients.items()}, True
        running = sum(1 for c in clients.values() if c.state == STATE_RUNNING and c.user_classes_count)
        if self.wanted is None and self.steady_at is not None:
            self.wanted = running
        if self.wanted is not None and running >= self.wanted:
            for loss in self.open:
                loss.restored_s = round(now - loss.at, 1)
            self.open.clear()

    def _lose(self, event: Event) -> None:
        self.events.append(event)
        self.open.append(event)
        logger.warning("%s", event.describe(self.started))

    def watch(self) -> None:
        while True:
            self.look()
            gevent.sleep(WATCH_S)

    def losses(self, start: float | None, end: float | None) -> list[str]:
        """The losses between `start` and `end` (unix times), in words: what makes a window not healthy."""
        if start is None:
            return []
        end = end or time.time()
        return [e.describe(self.started) for e in self.events
                if e.kind in LOSSES and start <= e.at <= end + DETECTION_S]

    def to_json(self) -> dict:
        """result.json's "faults": the events, and the requests the workers sent by their own count."""
        return {"events": [{**asdict(e), "description": e.describe(self.started)} for e in self.events],
                "workers_lost": sum(e.kind == LOST for e in self.events),
                "workers_quit": sum(e.kind == QUIT for e in self.events),
                "seconds_with_fewer_workers": round(sum(
                    (e.restored_s if e.restored_s is not None else max(0.0, time.time() - e.at))
                    for e in self.events if e.kind in LOSSES), 1),
                "requests_sent": sum(self.sent.values()),
                "requests_unreported": sum(e.unreported for e in self.events),
                "report_interval_s": WORKER_REPORT_INTERVAL, "stopped_early": self.stopped_early}


log: FaultLog | None = None  # the master's, once Locust's init ran
# The master to a worker that joins a run whose users all ran already: its own first spawning_complete is not the
# run's, so it keeps its counts (they are the steady window's).
JOINED_STEADY = "loadtest_joined_steady"


def _keep_counts_across_rebalances(environment) -> None:
    """Locust's --reset-stats only at a run's first spawning_complete (see the module's text), and not at all on a
    worker that joined a steady run. Registered at init, after the runner's own listener, so the first reset happens
    before it is switched off."""
    wanted, joined_steady = environment.reset_stats, False

    def new_run(**_):
        environment.reset_stats = wanted and not joined_steady

    def steady(**_):
        environment.reset_stats = False

    def joined(*_, **__):  # Locust calls it with (environment, message)
        nonlocal joined_steady
        joined_steady, environment.reset_stats = True, False

    def stopped(**_):
        nonlocal joined_steady
        joined_steady = False

    environment.events.test_start.add_listener(new_run)
    environment.events.spawning_complete.add_listener(steady)
    environment.events.test_stop.add_listener(stopped)
    if environment.runner is not None and not isinstance(environment.runner, MasterRunner):
        environment.runner.register_message(JOINED_STEADY, joined)


@events.init.add_listener
def _register(environment, **_):
    global log
    if environment.runner is None:
        return
    _keep_counts_across_rebalances(environment)
    if not isinstance(environment.runner, MasterRunner):
        return
    log = FaultLog(environment.runner)
    environment.events.test_start.add_listener(log.new_run)
    environment.events.spawning_complete.add_listener(log.steady)
    environment.events.heartbeat_sent.add_listener(log.heartbeat)
    environment.events.worker_report.add_listener(log.report)
    gevent.spawn(log.watch)

    @environment.events.worker_connect.add_listener
    def tell_a_late_worker(client_id, **_):
        # Fired before the master rebalances onto it: the message reaches the worker ahead of its spawn.
        if log.steady_at is not None and environment.runner.state in (STATE_SPAWNING, STATE_RUNNING):
            environment.runner.send_message(JOINED_STEADY, client_id=client_id)
    if path := os.environ.get(FILE_ENV):
        @environment.events.quitting.add_listener
        def write(**_):
            log.look()
            with open(path, "w") as f:
                json.dump({**log.to_json(), "steady_losses": log.losses(log.steady_at, time.time())}, f, indent=1)

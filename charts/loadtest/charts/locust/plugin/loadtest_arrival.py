"""The open model: requests sent at a fixed arrival rate whatever the target does, their latency measured from the
time each was due. Importing this module registers it (loadtest_lib imports it, so every scenario and a locustfile of
your own loaded with loadtest_plugin get it); it does nothing unless LOADTEST_ARRIVAL_RATE is set.

Why: with a closed model (N users, each waiting for its answer) a stalled target stalls the users too; the requests
that would have waited are never sent, so the percentiles leave them out (coordinated omission). Here the master
splits LOADTEST_ARRIVAL_RATE (requests per second, for the whole run) over the connected workers and sends each its
share again whenever one joins or leaves. Each worker hands out send slots, 1/share apart, as they fall due: to the
user that came free last (see Dispatcher), which runs one task and asks for the next. A slot that comes while every
user is still busy goes to the next user free, late.

Two times per request, both kept:
  response time  from the slot (the intended send) to the answer: what Locust's statistics, its report, the checks
                 (p99<200ms) and the dashboards' latency show in this mode;
  service time   from the actual send to the answer: locust_service_time_seconds and the run's arrival.json.

A request started more than LATE_S after its slot is a late start, counted per worker and cause:
  users  no user was free when the slot came due: the pool (Locust's user count) is too small for the target's
         latency;
  cpu    a user was free when it came due but the worker handed it late: the worker's CPU is at its ceiling, or the
         worker stalled (a slot its users take on their way back after a stall counts here: it came due while they
         were parked).

The users' process also probes its own event loop: a greenlet that sleeps LOOP_PROBE_S and counts the wake-ups more
than LATE_S late. A loop lagging in most of its probes cannot keep the schedule whatever its CPU figure says (a
worker starved of CPU by its limit or its neighbours); a few lagging probes are a stall of the loop, and its late
starts are named so, not blamed on CPU (the verdict, verdict.generator_limit).

Every User class loaded gets the schedule in place of its wait_time (and before its first task). A TaskSet with a
wait_time of its own would send on its own clock, not the rate's: the process refuses to start, naming it.

Metrics (on the master, through loadtest_metrics):
  locust_arrival_rate_offered_rps               the rate asked for, all workers together
  locust_worker_arrival_slots_total{worker}     slots the worker's schedule handed out
  locust_worker_late_starts_total{worker,cause} late starts, cause "users" or "cpu"
  locust_service_time_seconds{quantile}         service-time p50/p95/p99/p99.9 over the last ~10 s
With LOADTEST_ARRIVAL_FILE set the master writes the run's totals there as JSON when it quits, the loop's probes
with them.
"""
from __future__ import annotations

import gc
import json
import logging
import math
import os
import time

import gevent
from gevent import GreenletExit, get_hub, getcurrent
from gevent.event import Event
from locust import TaskSet, events
from locust.exception import StopUser
from locust.runners import STATE_MISSING, LocalRunner, MasterRunner, WorkerRunner
from locust.stats import RequestStats, StatsEntry

import leanhttp
import loadtest_locust
import loadtest_reports
from loadtest_shared import settings, verdict

SHARE_MESSAGE = "loadtest_arrival_share"
# A worker says so once it can take its share: Locust's worker reads the master's messages from before its plugins'
# init, and a share sent then would be dropped as a message of unknown type, leaving the worker idle all run.
READY_MESSAGE = "loadtest_arrival_ready"
REPORT_KEY = loadtest_reports.ARRIVAL
LATE_S = verdict.LATE_S  # a request started later than this after its slot is a late start
QUANTILES = (0.5, 0.95, 0.99, 0.999)
CAUSES = ("users", "cpu")
# How often the users' process probes its event loop (a lag above LATE_S is a lagging probe).
LOOP_PROBE_S = 0.05
# How often the master checks which workers are connected, and a worker without its share yet checks again.
POLL_S = 0.25
# A worker waits for the whole pool to run (the master's "spawning complete") at most this long before it sends: a
# worker that joins a running test may not hear it.
POOL_WAIT_S = 5.0
# A user that holds no connection yet is woken for a slot only while the hub has at most this many events waiting
# (answers in, not yet read), one such user a hand-out; else the hand-out looks again after BUSY_RETRY_S
# (Dispatcher._hand).
PENDING_BUSY, BUSY_RETRY_S = 1, 0.002
# A slot is due this long before its time: a user that comes free takes it, and the hub's hand-out hands it with the
# ones due. A user that took a slot itself leaves the hand-out's timer armed for that slot, so the timer woke for the
# next one a few µs before it fell due, and came back only to arm again: half the timer's wake-ups at 40,000-56,000/s
# on one core, each a turn of the loop. Handed with the ones due, 19.5 µs of CPU a request became 16.3-17.8 at
# 50,000/s (2026-12-07, one core, interleaved runs). A request sent before its slot is measured from its send.
DUE_AHEAD_S = 50e-6

logger = logging.getLogger(__name__)


def configured_rate() -> float | None:
    """LOADTEST_ARRIVAL_RATE as a positive number of requests per second; None when unset."""
    text = os.environ.get(settings.ARRIVAL_RATE.env, "").strip()
    if not text:
        return None
    try:
        rate = float(text)
    except ValueError:
        rate = math.nan
    if not (rate > 0 and math.isfinite(rate)):
        raise SystemExit(f"{settings.ARRIVAL_RATE.env}={text!r}: a positive number of requests per second, e.g. 2000")
    return rate


class Schedule:
    """Send slots at a steady rate, on the clock given to take(). A new rate keeps the slot already due, so a
    worker's share changing mid-run neither bursts nor pauses."""

    def __init__(self):
        self.interval: float | None = None
        self.next_at: float | None = None

    def set_rate(self, rate: float) -> None:
        self.interval = 1 / rate if rate > 0 else None

    def restart(self, now: float) -> None:
        """Start afresh at `now` unless a slot is still ahead: at a rebalance mid-run (its spawning_complete) the
        slots already handed out must not be handed out again."""
        if self.next_at is not None and self.next_at < now:
            self.next_at = None

    def take(self, now: float) -> float | None:
        """The next slot (the first is now), or None while there is no rate."""
        if self.interval is None:
            return None
        slot = now if self.next_at is None else self.next_at
        self.next_at = slot + self.interval
        return slot


def service_entry() -> StatsEntry:
    return StatsEntry(RequestStats(), "service time", "", use_response_times_cache=True)


class Counts:
    """One process's slots and late starts since its last report, and its service times: kept as they come and
    folded into Locust's entry FOLD_AT at a time (a StatsEntry.log per request cost 1.4 us of some 60)."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        """Count afresh."""
        self.slots = 0
        self.late = dict.fromkeys(CAUSES, 0)
        self.service_ms: list[float] = []  # kept, not folded yet
        self.service = service_entry()
        self.loop = {"probes": 0, "lagged": 0, "max_lag_ms": 0.0}

    def keep_service(self, ms: float) -> None:
        """A request's service time. Folded as they come, FOLD_AT at a time: a second's folded at its report (64,000
        on one core) took some 8 ms of the users' core at once, and each time the slots fell 7-9 ms behind (a
        worker's report, every 3 s, three times that). Locust's p99 from the slot at 51,000-54,000/s on one core
        (0.7 of the closed model) was 5-7 ms, and is 3 ms (three interleaved pairs, 2026-12-07)."""
        kept = self.service_ms
        kept.append(ms)
        if len(kept) >= loadtest_locust.FOLD_AT:
            self._fold()

    def _fold(self) -> None:
        """The service times kept, into Locust's entry as StatsEntry.log would have added them, counted now."""
        if self.service_ms:
            now = time.time()
            loadtest_locust.Logged(int(now), self.service_ms, (), now).into(self.service)
            self.service_ms = []

    def report(self) -> dict:
        """What the worker sends to the master with its stats, then counted afresh (deltas, like Locust's own)."""
        self._fold()
        report = {"slots": self.slots, "late": self.late, "service": self.service.serialize(),
                  "loop": self.loop}
        self.clear()
        return report


def probe_loop(counts: Counts, stopping: Event) -> None:
    """Forever: sleep LOOP_PROBE_S and count how late the loop woke (see the module's doc), except while the run's
    users are being stopped."""
    clock = time.perf_counter
    while True:
        due = clock() + LOOP_PROBE_S
        gevent.sleep(LOOP_PROBE_S)
        lag = clock() - due
        if stopping.is_set():
            continue
        loop = counts.loop
        loop["probes"] += 1
        loop["lagged"] += lag > LATE_S
        loop["max_lag_ms"] = max(loop["max_lag_ms"], round(lag * 1000, 1))


class Totals:
    """The master's sum of its workers' reports: per connected worker (the metrics' series, forgotten when a worker
    leaves, so its series end) and for the whole run (arrival.json, which keeps a departed worker's counts)."""

    def __init__(self, rate: float):
        self.rate = rate
        self.reset()

    def add(self, client_id: str, data: dict) -> None:
        report = data.get(REPORT_KEY)
        if report is None:
            return
        self.slots[client_id] = self.slots.get(client_id, 0) + report["slots"]
        self.run_slots += report["slots"]
        late = self.late.setdefault(client_id, dict.fromkeys(CAUSES, 0))
        for cause in CAUSES:
            late[cause] += report["late"][cause]
            self.run_late[cause] += report["late"][cause]
        self.service.extend(StatsEntry.unserialize(report["service"], self.service.stats))
        loop = report.get("loop") or {}
        self.run_loop["probes"] += loop.get("probes", 0)
        self.run_loop["lagged"] += loop.get("lagged", 0)
        self.run_loop["max_lag_ms"] = max(self.run_loop["max_lag_ms"], loop.get("max_lag_ms", 0.0))

    def reset(self) -> None:
        self.slots: dict[str, int] = {}
        self.late: dict[str, dict[str, int]] = {}
        self.run_slots = 0
        self.run_late = dict.fromkeys(CAUSES, 0)
        self.run_loop = {"probes": 0, "lagged": 0, "max_lag_ms": 0.0}
        self.service = service_entry()

    def forget(self, client_ids) -> None:
        """End the series of workers that left; the run's sums keep what they sent."""
        for gone in client_ids:
            self.slots.pop(gone, None)
            self.late.pop(gone, None)

    def loop_lagged(self) -> float | None:
        """The share of the workers' loop probes that woke more than LATE_S late; None before any probe."""
        probes = self.run_loop["probes"]
        return self.run_loop["lagged"] / probes if probes else None

    def to_json(self) -> dict:
        slots, late = self.run_slots, self.run_late
        return {
            "offered_rps": self.rate, "slots": slots, "late_starts": late,
            "late_share": verdict.late_shares(late, slots),
            "service_time_ms": {f"{q:g}": self.service.get_response_time_percentile(q) if self.service.num_requests
                                else None for q in QUANTILES},
            "loop": {**self.run_loop, "lagged_share": self.loop_lagged()},
        }


# --- the process that runs the users (a worker, or a standalone Locust) ----------------------------------------------

def own_wait_times(tasks) -> list[str]:
    """The TaskSets among `tasks`, and theirs, that define a wait_time of their own (a TaskSet's default defers to
    its user's, which the schedule replaces)."""
    found = []
    for task in tasks:
        if isinstance(task, type) and issubclass(task, TaskSet):
            if any("wait_time" in vars(c) for c in task.__mro__ if c not in TaskSet.__mro__):
                found.append(task.__name__)
            found += own_wait_times(task.tasks)
    return found


_clock = time.perf_counter


class Dispatcher:
    """Hands the schedule's slots to the users as they fall due.

    A slot is due DUE_AHEAD_S before its time (see there). A user that finishes its task takes a slot already due
    itself (no switch: the path under load). Otherwise it parks, and the hub's timer hands the next slot, once due,
    to the user parked last. Last in, first out: the few users the rate needs keep taking the slots with their warm
    connections, and the rest of the pool stays parked with no connection and no timer until the target slows.
    (Handing slots round the whole pool, each user sleeping until its own, kept every user's connection, timer and
    garbage busy: 6,000/s held per core, with half-second stalls at the pool's start.) The timer's callback runs in
    the hub and switches to each user itself, which runs until it waits on its request: no pacer greenlet to wake
    and put back to sleep for every slot.

    A user never handed a slot (cold: it holds no connection) is woken only while the hub has no answers waiting
    to be read (at most PENDING_BUSY events pending), and one a hand-out. Answers waiting mean the worker's CPU is
    behind, near its ceiling or catching up after a stall: the slots already due wait for the warm users, who take
    them one after the other on their way back. Woken instead, thousands of cold users each opened a connection and
    the worker fell behind for good: asked 24,000-40,000/s of one core, it sent 18,000-22,000/s from then on, where
    a pool of 50 users behind their slots sent 42,000/s (one core, 2026-11-30). A worker with nothing waiting and no
    warm user free waits on its target: its cold users take the slots as they come due, and the pool absorbs it.

    Slots wait while the pool is being spawned (sent then, they would all start late): from a test's start (hold)
    until its pool runs (pool_runs, at spawning_complete), or POOL_WAIT_S after the start, for a worker that joins a
    running test and may not hear it. From test_stopping to the next test_start (`stopping`), a woken user stops
    (StopUser, as Locust's own wait does) without sending or counting.
    """

    def __init__(self, schedule: Schedule, counts: Counts, stopping: Event):
        self.schedule, self.counts, self.stopping = schedule, counts, stopping
        self.idle: dict = {}  # the parked users' greenlets, in the order they parked
        self.loop = get_hub().loop
        self.timer = None  # the hub's timer for the next hand-out, while one is armed
        self.pool_timer = None  # a test's POOL_WAIT_S, until its pool runs
        self.starting = None  # the hub's callback that starts the slots once the pool runs, until it ran
        self.handing = False  # in the timer's callback: a user that parks meanwhile is seen by the callback itself
        self.sending = True  # not between a test's start and its pool running: slots are handed
        self.on_first_slot = None  # called as a test's first slot is handed
        # Since when no user has been parked (None while one is): a slot due before it found a user free, so a late
        # start of it is the loop's, not the pool's (a worker stalled by its host wakes with more slots overdue than
        # users parked; those its users take on their way back came due while they were free).
        self.exhausted_since = None
        self.warm: set = set()  # this test's users handed a slot: they hold a connection

    def hold(self) -> None:
        """A test starts: no slots until its pool runs, or POOL_WAIT_S from now. The last test's pool, frozen when it
        ran (_start_sending) and stopped since, goes back within the collector's reach: a user and its task set are a
        cycle, which a frozen user's never leaves (each test's pool stayed in memory to the process's end)."""
        gc.unfreeze()
        self.stopping.clear()
        self.warm.clear()
        self.sending = False
        self.exhausted_since = None
        self._disarm()
        self.pool_timer = self.loop.timer(POOL_WAIT_S)
        self.pool_timer.start(self.pool_runs)

    def pool_runs(self) -> None:
        """The test's pool runs: slots once the users just spawned have started and parked (their starts wait in the
        hub's queue of callbacks, ahead of this one). A first slot among those starts completed 0.1-0.2 s late, and
        Locust's window, which begins at a request's first answer, read 1 % over the rate."""
        self._disarm()
        self.starting = self.loop.run_callback(self._start_sending)

    def _start_sending(self) -> None:
        self.starting = None
        self.sending = True
        # The pool's thousands of users, started and parked, live until the run ends: out of the collector's scans, a
        # full collection no longer stalls the loop past LATE_S. (Frozen before they first ran, what they made then
        # was scanned by a full collection 0.1-0.2 s into the slots: 25 ms, 1-2 % of an 8 s step's slots late at
        # 55,000/s on one core, 2026-12-07.)
        gc.freeze()
        self._arm()

    def wait_for_slot(self, user=None) -> float:
        """A user's wait_time: returns (0 s) once the user holds its slot, counted. The path under load (a slot
        already due, taken by the user that came free) is written out: it runs once a request."""
        now = _clock()
        schedule = self.schedule
        slot = schedule.next_at
        if slot is not None and slot <= now + DUE_AHEAD_S and self.sending and schedule.interval is not None:
            schedule.next_at = slot + schedule.interval  # Schedule.take, written in
            lateness = now - slot
            late = None
            if lateness > LATE_S:  # it waited for a user to come free, if none was when it came due
                exhausted = self.exhausted_since
                late = "users" if exhausted is not None and exhausted <= slot else "cpu"
        else:
            slot = self._park()
            lateness = _clock() - slot
            late = "cpu" if lateness > LATE_S else None  # a user was idle: the loop handed it late
        if self.stopping.is_set():
            raise StopUser()
        counts = self.counts
        if late:
            counts.late[late] += 1
        counts.slots += 1
        # How late the task starts after its slot (ms), for its requests' latency from the slot: an attribute of the
        # user's greenlet (a gevent.local, per greenlet too, took twice as long to set and to read).
        getcurrent().loadtest_lateness_ms = lateness * 1000 if lateness > 0 else 0.0
        return 0

    def _park(self) -> float:
        me = getcurrent()
        self.idle[me] = None
        self.exhausted_since = None
        self._arm()
        try:
            return get_hub().switch()  # until the timer's callback switches back here with a slot
        finally:
            self.idle.pop(me, None)

    def _arm(self, at_least: float = 0.0) -> None:
        """The timer for the next slot (`at_least` from now), unless one is armed, no user is parked or the pool is
        not running yet. With no share of the rate yet, it looks again every POLL_S."""
        if self.timer is not None or self.handing or not self.idle or not self.sending:
            return
        schedule = self.schedule
        if schedule.interval is None:
            delay = POLL_S
        else:
            delay = 0.0 if schedule.next_at is None else max(0.0, schedule.next_at - DUE_AHEAD_S - time.perf_counter())
            delay = max(delay, at_least)
        self.timer = self.loop.timer(delay)
        # From now, not from the loop's time at the start of its turn: armed late in a busy turn, the timer came due
        # that much early (by up to 46 µs after 300 µs of work).
        self.timer.start(self._hand, update=True)

    def _disarm(self) -> None:
        for timer in (self.timer, self.pool_timer):
            if timer is not None:
                timer.close()
        if self.starting is not None:
            self.starting.stop()
        self.timer = self.pool_timer = self.starting = None

    def _hand(self) -> None:
        """The timer's callback, in the hub: each slot due to the user parked last, a cold one only while nothing
        waits in the hub (see the class), then the timer again."""
        self.timer = None
        schedule, idle = self.schedule, self.idle
        again = 0.0
        if schedule.interval is not None:
            self.handing = True
            try:
                now = time.perf_counter()
                if schedule.next_at is None and self.on_first_slot is not None:
                    self.on_first_slot()
                warm, cold = self.warm, 1
                while idle and (schedule.next_at is None or schedule.next_at <= now + DUE_AHEAD_S):
                    if next(reversed(idle)) not in warm:
                        if self.loop.pendingcnt > PENDING_BUSY:
                            again = BUSY_RETRY_S
                            break
                        if not cold:
                            break  # the next cold user at the loop's next turn, if nothing waits then
                        cold = 0
                    user, _ = idle.popitem()
                    warm.add(user)
                    user.switch(schedule.take(now))  # back here once the user waits on its request, or parks
                if not idle and self.exhausted_since is None:
                    self.exhausted_since = time.perf_counter()
            finally:
                self.handing = False
        self._arm(again)


def _install_schedule(environment, dispatcher: Dispatcher) -> None:
    """The dispatcher's wait in every User class, before its first task too; the slot's lateness in every request's
    response time."""
    _wait_for_slots(environment, dispatcher)
    _latency_from_slots(environment, dispatcher)


def _wait_for_slots(environment, dispatcher: Dispatcher) -> None:
    """Every User class waits for its slot, before its first task too, instead of its wait_time."""
    wait_for_slot, warm = dispatcher.wait_for_slot, dispatcher.warm
    for user_class in environment.user_classes:
        if own := own_wait_times(user_class.tasks):
            raise SystemExit(f"{settings.ARRIVAL_RATE.env}: TaskSet {', '.join(own)} of {user_class.__name__} has "
                             "a wait_time of its own, which would send on its own clock, not at the rate; remove it "
                             "(the open model's schedule replaces every wait_time)")
        user_class.wait_time = wait_for_slot
        first = user_class.on_start

        def on_start(self, first=first):
            first(self)
            try:
                wait_for_slot(self)  # the first task waits for its slot too
                warm.add(getcurrent())  # it took one already due, if not handed one
            except StopUser:
                # Stopped before its first slot, as most of a pool is at every stop: Locust logs a StopUser out of
                # on_start as an error with its traceback (7,300 of them at 15,000/s; the stop took 2.4 s, now 0.5 s).
                # GreenletExit ends the user as Locust's own kill does, through its on_stop.
                raise GreenletExit() from None

        user_class.on_start = on_start


def _latency_from_slots(environment, dispatcher: Dispatcher) -> None:
    """Every request's response time from its slot (the intended send), for every listener of the request event."""
    # Every request event of a user's task carries its service time; the slot's lateness makes it the response time
    # from the intended send, for Locust's statistics and every other listener alike.
    # An answer read while Locust stops the pool is late because of that, past the run's window: not reported, as
    # Locust reports no request of a user it stops (without this, 8 s runs at 12,000/s measured 2.4 % below the rate
    # held, the window stretched by the stop's 0.2 s).
    hook = environment.events.request
    fire = hook.fire
    keep_service, stopping = dispatcher.counts.keep_service, dispatcher.stopping

    def response_time_of(service: float) -> float | None:
        """The response time from the slot of a request that took `service` ms from its send, its service time kept;
        None while Locust stops the users. Every request's, once: fire_from_slot's, and LeanHttpUser's, which logs it
        straight into the statistics (leanhttp.RESPONSE_TIME_OF)."""
        if stopping.is_set():
            return None
        lateness = getattr(getcurrent(), "loadtest_lateness_ms", None)
        if lateness is None:
            return service
        keep_service(service)
        return service + lateness

    def fire_from_slot(*, reverse=False, **kwargs):
        if stopping.is_set():
            return None
        if kwargs.get("response_time") is not None:
            kwargs["response_time"] = response_time_of(kwargs["response_time"])
        return fire(reverse=reverse, **kwargs)

    setattr(fire_from_slot, leanhttp.RESPONSE_TIME_OF, response_time_of)
    hook.fire = fire_from_slot


def _register_users_side(environment, rate: float | None, counts: Counts) -> Dispatcher:
    schedule = Schedule()
    if rate is not None:  # a standalone Locust sends the whole rate itself
        schedule.set_rate(rate)
    # Set from the moment Locust starts stopping the users to the next start: Locust stops thousands of them, a slot
    # that falls due meanwhile wakes late because of it, and neither that slot nor the loop's lag is the run's.
    stopping = Event()
    environment.events.test_stopping.add_listener(lambda **_: stopping.set())
    dispatcher = Dispatcher(schedule, counts, stopping)
    _install_schedule(environment, dispatcher)
    environment.events.test_start.add_listener(lambda **_: dispatcher.hold())
    gevent.spawn(probe_loop, counts, stopping)

    @environment.events.spawning_complete.add_listener
    def start(**_):
        schedule.restart(time.perf_counter())
        dispatcher.pool_runs()

    return dispatcher


# --- registration -----------------------------------------------------------------------------------------------------

def share_workers(runner, rate: float, sent: dict[str, float], ready: set[str]) -> dict[str, float]:
    """One pass of the master's loop: each connected worker's share of the rate, sent when the count changed since
    `sent` (what each was sent), and to a worker that says it is `ready` for it (it may have missed one sent
    before); what each connected worker was sent now."""
    workers = [node.id for node in runner.clients.values() if node.state != STATE_MISSING]
    share = rate / len(workers) if workers else 0.0
    for client_id in workers:
        if sent.get(client_id) != share or client_id in ready:
            runner.send_message(SHARE_MESSAGE, share, client_id=client_id)
            sent[client_id] = share
            ready.discard(client_id)
    # A set to look up: with thousands of workers, the list's membership test made this pass the master's busiest
    # work (43 % of its CPU at 5,000 workers, benchmarks/master.py).
    connected = set(workers)
    return {client_id: share for client_id, share in sent.items() if client_id in connected}


def _share_workers(runner, rate: float, ready: set[str]) -> None:
    sent: dict[str, float] = {}
    while True:
        sent = share_workers(runner, rate, sent, ready)
        gevent.sleep(POLL_S)


def _register_master(environment, totals: Totals) -> None:
    runner = environment.runner
    environment.events.worker_report.add_listener(totals.add)
    ready: set[str] = set()
    runner.register_message(READY_MESSAGE, lambda environment, msg, **_: ready.add(msg.node_id))
    gevent.spawn(_share_workers, runner, totals.rate, ready)

    @environment.events.spawning_complete.add_listener
    def reset_with_the_stats(**_):
        if environment.reset_stats:  # Locust resets its statistics at this moment: the steady window begins
            totals.reset()


def _write_totals(totals: Totals) -> None:
    path = os.environ.get(settings.ARRIVAL_FILE.env)
    if path:
        with open(path, "w") as f:
            json.dump(totals.to_json(), f, indent=1)


# The master's (or standalone process's) totals, for loadtest_metrics' collector; None in the closed model.
totals: Totals | None = None


@events.init.add_listener
def _register(environment, **_):
    global totals
    rate = configured_rate()
    runner = environment.runner
    if rate is None or runner is None:
        return
    if isinstance(runner, WorkerRunner):
        counts = Counts()
        schedule = _register_users_side(environment, None, counts).schedule
        runner.register_message(SHARE_MESSAGE, lambda environment, msg, **_: schedule.set_rate(msg.data))
        runner.send_message(READY_MESSAGE)

        @environment.events.report_to_master.add_listener
        def add_counts(client_id, data, **_):
            data[REPORT_KEY] = counts.report()

        @environment.events.spawning_complete.add_listener
        def reset_with_the_stats(**_):
            if environment.reset_stats:
                counts.clear()
        return
    totals = Totals(rate)
    environment.events.quitting.add_listener(lambda **_: _write_totals(totals))
    if isinstance(runner, MasterRunner):
        _register_master(environment, totals)
    elif isinstance(runner, LocalRunner):
        counts = Counts()
        dispatcher = _register_users_side(environment, rate, counts)

        def add_own_counts():
            while True:
                gevent.sleep(1)
                totals.add("local", {REPORT_KEY: counts.report()})

        gevent.spawn(add_own_counts)

        def reset_with_the_first_slot():
            # Locust resets its statistics at spawning_complete, before the pool's newest users first ran and
            # parked (0.05-0.1 s for 4,000-6,000 users): the window starts with the first slot instead, or the
            # rate achieved reads that much short.
            if environment.reset_stats:
                runner.stats.reset_all()
                counts.clear()
                totals.reset()

        dispatcher.on_first_slot = reset_with_the_first_slot

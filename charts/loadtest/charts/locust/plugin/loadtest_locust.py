"""Changes to Locust, applied when the plugin loads (before a worker connects to its master). Each is written as it
could be offered to Locust, and tests/unit/test_locust_patches.py holds each to the code of Locust's it replaces: a
Locust that changes underneath fails that test, not a run. docs/own-test.md has what those of the per-request path
save per request.

- The worker's connect to its master. Locust's client socket has no connect timeout, so a connect whose SYN went to
  a master pod just deleted (its Service still routed to it for a moment: a helm upgrade that replaces the master)
  waited for the kernel's SYN retries, one to two minutes, before ZeroMQ tried again; the worker logged "Failed to
  connect to master" all along and the new master waited for it (a rollout of 78 s where 10 s is usual, on the
  project's real node, 2026-11-29). The socket now gives a connect up after CONNECT_TIMEOUT_MS and tries again, as
  ZeroMQ does after a refused one, and the Service routes the new connection afresh.

- The wait between tasks. A user whose wait_time is 0 ends every task in gevent.sleep(0): a trip through the event
  loop (two greenlet switches and a callback) that only matters for a task that never yielded, which would otherwise
  hold the loop. A task that sent a request has yielded already, waiting for its answer; its trip is skipped. The
  open model's users wait the same way (a user that parked for its slot has yielded too).
- The user's task loop. DefaultTaskSet.run (TaskSet.run for a User's own tasks) went through six methods and a
  property per task: choosing the task (random.choice, even of a single one), queueing and unqueueing it, telling a
  function from a TaskSet class (hasattr, which fails for a function: an exception raised and caught), and the wait
  (Locust's state checked and set, the wait time asked through TaskSet.wait_time). It is the same loop with
  DefaultTaskSet's own steps written in: the same order, states, exceptions and hooks (on_start, _sleep, a queued
  task first, a TaskSet class run nested, user_error).
- The statistics entry. RequestStats.log_request logged each request twice (its name's entry and the total), and
  each StatsEntry.log read the clock and went through two more method calls and min()/max(): 1.1 us a request. A
  request is now kept as it came, with one clock reading, and logged with those before it when the statistics are
  next read (RequestStats.total and .entries, which every reader goes through, log what was kept first) or when
  FOLD_AT are kept: each second's run of them at once, with C loops over its columns, every field as the calls one
  by one would have left it. StatsEntry.log, for a caller of its own, logs its one request the same way.
- The event's listeners. EventHook.fire copied its list of listeners on every firing, so that a listener may add or
  remove one while it fires; the list is now replaced, never changed, when a listener is added or removed, and a
  firing walks the list it started with: the same for listeners, without a copy a request.
"""
from __future__ import annotations

import functools
import itertools
import logging
import operator
import time
import traceback
from collections import Counter, OrderedDict

import gevent
from gevent import GreenletExit, get_hub
from locust import log as locust_log
from locust import stats as locust_stats
from locust.event import EventHook
from locust.exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopTest, StopUser
from locust.rpc import zmqrpc
from locust.stats import RequestStats, StatsEntry
from locust.user.task import (LOCUST_STATE_RUNNING, LOCUST_STATE_STOPPING, LOCUST_STATE_WAITING, DefaultTaskSet,
                               TaskSet)
from locust.user.task import logger as locust_task_logger


# The event loop of the users' thread. Its iteration count goes up once a turn (each poll for events): a greenlet that
# sees it changed since it last looked has yielded to the loop in between.
LOOP = get_hub().loop


def _sleep_unless_yielded(taskset, seconds: float, sleep=gevent.sleep) -> None:
    """TaskSet._sleep: Locust's wait between tasks, without the zero-second sleep for a task that yielded to the
    event loop since the last one (a task that never yields still gets it, and cannot hold the loop)."""
    turn = LOOP.iteration
    if seconds == 0 and taskset.__dict__.get("_loop_seen") != turn:
        taskset._loop_seen = turn
        return
    sleep(seconds)
    taskset._loop_seen = LOOP.iteration


def _run_users_tasks(self: DefaultTaskSet) -> None:
    """DefaultTaskSet.run: TaskSet.run with get_next_task, schedule_task, execute_next_task, execute_task, wait and
    wait_time as DefaultTaskSet has them written in (a User's tasks cannot override them: DefaultTaskSet is Locust's
    own). A single task is chosen without random.choice, which would return it anyway."""
    try:
        self.on_start()
    except InterruptTaskSet as e:
        if e.reschedule:
            raise RescheduleTaskImmediately(e.reschedule).with_traceback(e.__traceback__)
        else:
            raise RescheduleTask(e.reschedule).with_traceback(e.__traceback__)

    user, queue = self._user, self._task_queue
    while True:
        try:
            if queue:
                task = queue.popleft()
            else:
                tasks = user.tasks
                task = tasks[0] if len(tasks) == 1 else self.get_next_task()  # no tasks: its error
            try:
                if user._state == LOCUST_STATE_STOPPING:
                    raise StopUser()
                if isinstance(task, type) and issubclass(task, TaskSet):
                    task(user).run()  # a nested TaskSet
                else:
                    task(user)
            except RescheduleTaskImmediately:
                continue
            except RescheduleTask:
                pass
            # the wait
            if user._state == LOCUST_STATE_STOPPING:
                raise StopUser()
            user._state = LOCUST_STATE_WAITING
            wait_time = user.wait_time
            self._sleep(wait_time() if wait_time else self.wait_time())
            if user._state == LOCUST_STATE_STOPPING:
                raise StopUser()
            user._state = LOCUST_STATE_RUNNING
        except InterruptTaskSet as e:
            try:
                self.on_stop()
            except (StopUser, StopTest, GreenletExit):
                raise
            except Exception:
                logging.error("Uncaught exception in on_stop: \n%s", traceback.format_exc())
            if e.reschedule:
                raise RescheduleTaskImmediately(e.reschedule) from e
            else:
                raise RescheduleTask(e.reschedule) from e
        except (StopUser, StopTest, GreenletExit):
            try:
                self.on_stop()
            except Exception:
                logging.error("Uncaught exception in on_stop: \n%s", traceback.format_exc())
            raise
        except Exception as e:
            user.environment.events.user_error.fire(user_instance=self, exception=e, tb=e.__traceback__)
            if user.environment.catch_exceptions:
                locust_task_logger.error("%s\n%s", e, traceback.format_exc())
                self.wait()
            else:
                raise


# Requests logged but not yet in their entries, at most this many (about a tenth of a second of one worker core's).
FOLD_AT = 4096
_FIELDS = 5  # a kept request's fields: name, method, response time, content length, clock reading
_LOCUSTS_BUCKET = locust_stats.bucket_response_time  # for a response time under 100 ms: round()


def bucket_counts(response_times, highest: float | None = None) -> Counter:
    """How many of `response_times` (ms, none None; `highest` their max, if known) fall in each of Locust's
    response-time buckets: those under 100 ms rounded in C while the bucketing is Locust's own
    (locust.stats.bucket_response_time, which a user may replace), the rest through it."""
    bucket = locust_stats.bucket_response_time
    if bucket is not _LOCUSTS_BUCKET:
        return Counter(map(bucket, response_times))
    if (max(response_times, default=0) if highest is None else highest) < 100:
        return Counter(map(round, response_times))
    counts = Counter(map(round, filter(100.0.__gt__, response_times)))
    counts.update(map(bucket, filter(100.0.__le__, response_times)))
    return counts


def _log_request(self: RequestStats, method: str, name: str, response_time: float | None,
                 content_length: int) -> None:
    """RequestStats.log_request: the request is kept as it came (with its clock reading) and logged into the total
    and its name's entry, with the requests before it, at the next reading of either (see _Folded). Its fields go
    into one flat list: a tuple kept per request would be a container the garbage collector counts, and thousands
    of them in waiting made it run seven times as often (a full collection every 2 s, 35 ms each)."""
    pending = self._pending
    pending += (name, method, response_time, content_length, time.time())
    if len(pending) >= FOLD_AT * _FIELDS:
        _fold(self)


def _log(self: StatsEntry, response_time: float | None, content_length: int) -> None:
    """StatsEntry.log: one request, logged as a kept one is."""
    now = time.time()
    Logged(int(now), [response_time], [content_length], now).into(self)


def _fold(self: RequestStats) -> None:
    """Log the requests kept by _log_request into the total and their entries, in the order they came: every field
    as StatsEntry.log, called for each in turn, would have left it. Each run of requests within one second is logged
    at once, with C loops over its columns (a sum in the same order, a Counter of its buckets) instead of two
    entries' updates each."""
    pending = self._pending
    if not pending:
        return
    names, methods, response_times, lengths, clock = (pending[i::_FIELDS] for i in range(_FIELDS))
    pending.clear()
    total, entries = self.__dict__["_total"], self.__dict__["_entries"]
    seconds = list(map(int, clock))
    if seconds.count(seconds[0]) == len(seconds):  # the usual: all in one second
        runs = [(seconds[0], len(seconds))]
    else:
        runs = [(second, len(list(run))) for second, run in itertools.groupby(seconds)]
    start = 0
    for second, count in runs:
        end = start + count
        logged = Logged(second, response_times[start:end], lengths[start:end], clock[end - 1])
        logged.into(total)
        run_names, run_methods = names[start:end], methods[start:end]
        if run_names.count(run_names[0]) == count and run_methods.count(run_methods[0]) == count:
            # one name: its entry gets what the total got
            logged.into(_entry(entries, (run_names[0], run_methods[0]), clock[start]))
        else:
            by_key: dict = {}
            for index, key in enumerate(zip(run_names, run_methods), start):
                by_key.setdefault(key, []).append(index)
            for key, indexes in by_key.items():
                Logged(second, [response_times[i] for i in indexes], [lengths[i] for i in indexes],
                       clock[indexes[-1]]).into(_entry(entries, key, clock[indexes[0]]))
        start = end


def _entry(entries, key: tuple[str, str], first_clock: float) -> StatsEntry:
    """The name's entry; a new one as StatsEntry.reset would have made it when its first request came."""
    entry = entries.get(key)  # get(), not [], which makes a missing one
    if entry is None:
        entry = entries[key]
        entry.start_time = first_clock
        if entry.use_response_times_cache:
            entry.response_times_cache = OrderedDict()
            entry._cache_response_times(int(first_clock))
    return entry


class Logged:
    """Requests of one second, as StatsEntry.log adds them to an entry (the open model's service times too,
    loadtest_arrival.Counts)."""

    def __init__(self, second: int, response_times, lengths, last_time: float):
        self.second, self.count, self.last_time = second, len(response_times), last_time
        self.nones = response_times.count(None)
        self.timed = [t for t in response_times if t is not None] if self.nones else response_times
        if self.timed:
            self.lowest, self.highest = min(self.timed), max(self.timed)
            self.buckets = bucket_counts(self.timed, self.highest)
        # Ints add up the same in any order; floats do not, and are added one by one, in order.
        self.lengths, self.length = lengths, sum(lengths)

    def into(self, entry: StatsEntry) -> None:
        last = entry.last_request_timestamp
        if entry.use_response_times_cache and last and self.second > last:  # a later second than int(last)
            entry._cache_response_times(self.second - 1)
        entry.num_requests += self.count
        entry.num_reqs_per_sec[self.second] += self.count
        entry.last_request_timestamp = self.last_time
        entry.num_none_requests += self.nones
        timed = self.timed
        if timed:
            entry.total_response_time = functools.reduce(operator.add, timed, entry.total_response_time)
            if entry.min_response_time is None or self.lowest < entry.min_response_time:
                entry.min_response_time = self.lowest
            if self.highest > entry.max_response_time:
                entry.max_response_time = self.highest
            counts = entry.response_times
            for bucket, count in self.buckets.items():
                counts[bucket] += count
        if type(self.length) is int and type(entry.total_content_length) is int:
            entry.total_content_length += self.length
        else:
            entry.total_content_length = functools.reduce(operator.add, self.lengths, entry.total_content_length)


class _Folded:
    """RequestStats.total and .entries, which Locust's own code and every reader of the statistics go through: the
    requests kept since the last reading are logged into them first (_fold), so a reader sees each as if it had been
    logged when it came, and a new total or entries (RequestStats.__init__, clear_all) starts after them."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, stats, owner=None):
        if stats is None:
            return self
        if stats.__dict__.get("_pending"):
            _fold(stats)
        return stats.__dict__[self.name]

    def __set__(self, stats, value) -> None:
        if stats.__dict__.setdefault("_pending", []):
            _fold(stats)
        stats.__dict__[self.name] = value


def _add_listener(self: EventHook, handler):
    """EventHook.add_listener: a new list, so that a firing under way keeps walking the one it started with."""
    self._handlers = [*self._handlers, handler]
    return handler


def _remove_listener(self: EventHook, handler) -> None:
    """EventHook.remove_listener: a new list, as _add_listener."""
    handlers = list(self._handlers)
    handlers.remove(handler)
    self._handlers = handlers


# What a listener may raise to stop a user, a test or a task: it goes to the user's loop, as in Locust's own fire.
_PASSED_ON = (StopUser, StopTest, RescheduleTask, RescheduleTaskImmediately, InterruptTaskSet)


def _fire(self: EventHook, *, reverse: bool = False, **kwargs) -> None:
    """EventHook.fire, walking the list of listeners as it was when the firing started."""
    for handler in self._handlers[::-1] if reverse else self._handlers:
        try:
            handler(**kwargs)
        except _PASSED_ON:
            raise
        except Exception:
            logging.error("Uncaught exception in event handler: \n%s", traceback.format_exc())
            locust_log.unhandled_greenlet_exception = True


TaskSet._sleep = _sleep_unless_yielded
DefaultTaskSet.run = _run_users_tasks
StatsEntry.log = _log
RequestStats.log_request = _log_request
RequestStats.total = _Folded("_total")
RequestStats.entries = _Folded("_entries")
EventHook.add_listener = _add_listener
EventHook.remove_listener = _remove_listener
EventHook.fire = _fire


# --- the worker's connect to its master -----------------------------------------------------------------------------

CONNECT_TIMEOUT_MS = 1000  # a master that answers at all accepts a connect within milliseconds


def _client_init(self: zmqrpc.Client, host: str, port: int, identity: str) -> None:
    """Locust's zmqrpc.Client.__init__, with a connect timeout set before the connect."""
    zmqrpc.BaseSocket.__init__(self, zmqrpc.zmq.DEALER, self.ipv4_only(host, port))
    self.socket.setsockopt(zmqrpc.zmq.CONNECT_TIMEOUT, CONNECT_TIMEOUT_MS)
    self.socket.setsockopt(zmqrpc.zmq.IDENTITY, identity.encode())
    self.socket.connect("tcp://%s:%i" % (host, port))


zmqrpc.Client.__init__ = _client_init

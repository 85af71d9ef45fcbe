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
  open model replaces the same method with its own (loadtest_arrival), which skips it for a user that parked for
  its slot.
- The user's task loop. DefaultTaskSet.run (TaskSet.run for a User's own tasks) went through six methods and a
  property per task: choosing the task (random.choice, even of a single one), queueing and unqueueing it, telling a
  function from a TaskSet class (hasattr, which fails for a function: an exception raised and caught), and the wait
  (Locust's state checked and set, the wait time asked through TaskSet.wait_time). It is the same loop with
  DefaultTaskSet's own steps written in: the same order, states, exceptions and hooks (on_start, _sleep, a queued
  task first, a TaskSet class run nested, user_error).
- The statistics entry. RequestStats.log_request logs each request twice (its name's entry and the total), and each
  StatsEntry.log read the clock and went through two more method calls and min()/max(): one clock reading and one
  response-time bucket a request now, both entries' fields set in one function.
- The event's listeners. EventHook.fire copied its list of listeners on every firing, so that a listener may add or
  remove one while it fires; the list is now replaced, never changed, when a listener is added or removed, and a
  firing walks the list it started with: the same for listeners, without a copy a request.
"""
from __future__ import annotations

import logging
import time
import traceback

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


class LoopTurns:
    """The event loop's turns, counted by a check watcher (it runs once a loop iteration, after the poll): a greenlet
    that sees the count change since it last looked has yielded to the loop in between."""

    def __init__(self):
        self.turns = 0
        self.watcher = get_hub().loop.check()
        self.watcher.ref = False  # it does not keep the loop running
        self.watcher.start(self._turn)

    def _turn(self) -> None:
        self.turns += 1


LOOP = LoopTurns()


def _sleep_unless_yielded(taskset, seconds: float, sleep=gevent.sleep) -> None:
    """TaskSet._sleep: Locust's wait between tasks, without the zero-second sleep for a task that yielded to the
    event loop since the last one (a task that never yields still gets it, and cannot hold the loop)."""
    turns = LOOP.turns
    if seconds == 0 and taskset.__dict__.get("_loop_seen") != turns:
        taskset._loop_seen = turns
        return
    sleep(seconds)
    taskset._loop_seen = LOOP.turns


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


def log_in_entries(entries, response_time: float | None, content_length: int, current_time: float) -> None:
    """What StatsEntry.log, _log_time_of_request and _log_response_time did, in each of `entries`, for a request
    logged at current_time. The response-time bucket is still looked up in Locust's module, where a test may replace
    it, once for all the entries."""
    second = int(current_time)
    bucket = None if response_time is None else locust_stats.bucket_response_time(response_time)
    for entry in entries:
        last = entry.last_request_timestamp
        if entry.use_response_times_cache and last and second > last:  # a later second than int(last), for t >= 0
            entry._cache_response_times(second - 1)
        entry.num_requests += 1
        entry.num_reqs_per_sec[second] += 1
        entry.last_request_timestamp = current_time
        if bucket is None:
            entry.num_none_requests += 1
        else:
            entry.total_response_time += response_time
            lowest = entry.min_response_time
            if lowest is None or response_time < lowest:
                entry.min_response_time = response_time
            if response_time > entry.max_response_time:
                entry.max_response_time = response_time
            entry.response_times[bucket] += 1
        entry.total_content_length += content_length


def _log(self: StatsEntry, response_time: float | None, content_length: int) -> None:
    """StatsEntry.log."""
    log_in_entries((self,), response_time, content_length, time.time())


def _log_request(self: RequestStats, method: str, name: str, response_time: float | None,
                 content_length: int) -> None:
    """RequestStats.log_request: the total and the name's entry, with one reading of the clock."""
    log_in_entries((self.total, self.entries[(name, method)]), response_time, content_length, time.time())


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

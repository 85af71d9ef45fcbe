"""loadtest_locust's changes to Locust's per-request path: each holds to the code of Locust's it replaces (a Locust
that changes underneath fails here, not in a run), and does what it says on a real event loop."""
from __future__ import annotations

import gc
import hashlib
import importlib
import inspect
import random
import re
import time
import types
from pathlib import Path

import gevent
import pytest
from locust import event as locust_event
from locust import log as locust_log
from locust import stats as locust_stats
from locust.env import Environment
from locust.exception import InterruptTaskSet, RescheduleTask, RescheduleTaskImmediately, StopUser
from locust.rpc import zmqrpc
from locust.user.task import DefaultTaskSet, TaskSet
from locust.user.users import User

import loadtest_locust


def test_locusts_wait_between_tasks_is_still_the_zero_second_sleep_the_patch_replaces():
    source = inspect.getsource(TaskSet)  # the file's, whatever the class holds now
    assert "    def _sleep(self, seconds):\n        gevent.sleep(seconds)\n" in source
    wait = source[source.index("    def wait(self):"):source.index("    def _sleep(self, seconds):")]
    assert "self._sleep(self.wait_time())" in wait and wait.count("_sleep(") == 1


class Task:
    """What _sleep sees of a TaskSet: its instance dictionary."""


def test_a_task_that_yielded_skips_the_zero_second_sleep_and_one_that_did_not_still_takes_it():
    others_ran = []
    task = Task()

    def other():
        while True:
            others_ran.append(1)
            gevent.sleep(0)

    neighbour = gevent.spawn(other)
    try:
        gevent.sleep(0.01)  # the neighbour runs, and the loop turns
        loadtest_locust._sleep_unless_yielded(task, 0)  # first look: it yielded just now
        before = len(others_ran)
        loadtest_locust._sleep_unless_yielded(task, 0)  # no yield since: it sleeps, and the neighbour runs
        assert len(others_ran) > before
        gevent.sleep(0.01)  # a task that waited for its answer
        before = len(others_ran)
        loadtest_locust._sleep_unless_yielded(task, 0)  # skipped: nobody else ran during it
        assert len(others_ran) == before
    finally:
        neighbour.kill()


def test_a_wait_of_more_than_zero_always_sleeps():
    task, slept = Task(), []
    loadtest_locust._sleep_unless_yielded(task, 0.25, sleep=slept.append)
    loadtest_locust._sleep_unless_yielded(task, 0.25, sleep=slept.append)
    assert slept == [0.25, 0.25]


def as_shipped(module) -> types.ModuleType:
    """A Locust module as its file has it, run anew: its classes without the plugin's changes, to compare with."""
    fresh = types.ModuleType(f"{module.__name__}_as_shipped")
    fresh.__package__ = module.__package__
    exec(compile(Path(module.__file__).read_text(), module.__file__, "exec"), fresh.__dict__)
    return fresh


def method_source(module, cls: str, name: str) -> str:
    """One method's text in the module's file, however the class is patched now (a class's source is read from its
    file)."""
    source = inspect.getsource(getattr(module, cls))
    start = source.index(f"    def {name}(")
    end = re.compile(r"^    \S", re.M).search(source, start + 1)  # the class's next member, or its end
    return source[start:end.start() if end else None].rstrip()


# The Locust code each change replaces, by its text's SHA-256 (Locust 2.47): a change there fails here, so that the
# patch is checked against the new code before it replaces it.
REPLACED = {
    ("stats", "StatsEntry", "log"): "ea2319962e04484adb3dab6c48438338a5565fefd505e653a6278f001f936270",
    ("stats", "StatsEntry", "_log_time_of_request"): "bfee6e4489bd46acb8e736ea8f1df450c4555063236d1a35ef171046e18aa39d",
    ("stats", "StatsEntry", "_log_response_time"): "7d6b84c0847bf03785e553d0d3ec5bc0bcd1727427287b45bcaafbd932ccb563",
    ("stats", "RequestStats", "log_request"): "2adabf3329151759c9ca61209a4d262bd22218e5b2868a91839b8a601a0e19df",
    # where total and entries are set, which the kept requests are logged into first
    ("stats", "RequestStats", "__init__"): "6ab277649874bdc85dd4091126f4358bb63a6ee3062d6c6332702489faf886d2",
    ("stats", "RequestStats", "clear_all"): "e805fdf597b08555971a95d5da808a25c41240208e80abe4d215df8c803e61bc",
    ("stats", "StatsEntry", "reset"): "dd684b597c26bee78c5ccc0bbe4541c92ac2a3375bb178fec33e37d3051be9dc",  # a new entry's fields, as the fold sets them for its first request
    ("event", "EventHook", "add_listener"): "b5e7dfb4e12073437800d340b99beb38e293ea244a659e15236373d659cfcbf7",
    ("event", "EventHook", "remove_listener"): "520c79ca41880989affc4b504cf5dae79df15fe688a3e3c44a024ad42ef5875e",
    ("event", "EventHook", "fire"): "7755c634626221279413835c17a2481e2c1f4349a5ba4bda80a4722d7874524d",
    ("task", "TaskSet", "run"): "f1ffd4b179e638013fa06096219fc654f44d262f646179faef20e60b51d88b0e",
    ("task", "TaskSet", "schedule_task"): "77740a9f77804141473fd432939462f3287416e322ff2f5f30e6d94decb7fb4e",
    ("task", "TaskSet", "execute_next_task"): "e036634d11c06fc377072160b0e27154dbe0e711f86ecf1a13377bb598191a75",
    ("task", "TaskSet", "wait"): "ca03d862fe5b4f50f292681280282bb6dbc2305dff7944de3d9a0cd306aafd21",
    ("task", "TaskSet", "wait_time"): "81dc84a22ba4e685e57d718333d39a8dff1d608ba6a63c87c1f5c62ee6ca0fcf",
    ("task", "DefaultTaskSet", "get_next_task"): "a101f0972d3a81f9b032209827768f181deebc439fb7ca2762f8fbb7a59a3c0b",
    ("task", "DefaultTaskSet", "execute_task"): "4bddbb546cde84825d4051d3010c689566e3935a0395f40756eba308948403cf",
}
locust_task = importlib.import_module("locust.user.task")  # locust.user's own "task" is the decorator
MODULES = {"stats": locust_stats, "event": locust_event, "task": locust_task}


@pytest.mark.parametrize("module, cls, name", sorted(REPLACED))
def test_the_locust_code_a_change_replaces_is_still_the_same(module, cls, name):
    text = method_source(MODULES[module], cls, name)
    assert hashlib.sha256(text.encode()).hexdigest() == REPLACED[module, cls, name], (
        f"Locust's {cls}.{name} changed: check plugin/loadtest_locust.py's change against it, then its hash "
        f"here\n{text}")


def test_the_statistics_are_logged_as_locusts_own_code_logs_them(monkeypatch):
    """The same requests, at the same clock readings, into Locust's own RequestStats and into the patched one: every
    field of the total and of each name's entry the same, the per-second counts and the response-time cache too."""
    shipped = as_shipped(locust_stats)
    now = [999.0]
    monkeypatch.setattr(time, "time", lambda: now[0])
    requests = [(1000.2, "GET", "/a", 0.35, 1024), (1000.7, "GET", "/b", 147.2, 0), (1001.1, "POST", "/a", None, 10),
                (1003.9, "GET", "/a", 3432.0, 5), (1004.0, "GET", "/a", 58760.4, 1), (1004.5, "GET", "/b", 0.01, 2)]
    logged = []
    for stats_class in (shipped.RequestStats, locust_stats.RequestStats):
        now[0] = 999.0
        stats = stats_class(use_response_times_cache=True)
        for now[0], *request in requests:
            stats.log_request(*request)
        logged.append({key: fields(entry) for key, entry in [("total", stats.total), *stats.entries.items()]})
    assert logged[0] == logged[1]
    assert len(logged[1]["total"]["response_times_cache"]) > 1, "no second boundary crossed"


def statistics_as_read(stats) -> dict:
    """Everything a reader sees of a RequestStats: each entry's fields (the total's too) and the errors."""
    return {"entries": {key: fields(entry) for key, entry in [("total", stats.total), *stats.entries.items()]},
            "errors": {key: error.serialize() for key, error in stats.errors.items()}}


@pytest.mark.parametrize("seed", range(40))
def test_requests_kept_and_logged_at_the_next_reading_read_as_locusts_own_logged_one_by_one(monkeypatch, seed):
    """Random runs of requests (several names and methods, response times of every bucket and None, seconds that
    go by, a clock that steps back), read, reset, cleared and failed at random moments, with a fold every few
    requests too: after every step a reader of the patched statistics sees what one of Locust's own sees."""
    rng = random.Random(seed)
    monkeypatch.setattr(loadtest_locust, "FOLD_AT", rng.choice([3, 50, 4096]))
    shipped = as_shipped(locust_stats)
    now = [1000.0 + rng.random()]
    monkeypatch.setattr(time, "time", lambda: now[0])
    cache = rng.random() < 0.5
    both = [shipped.RequestStats(use_response_times_cache=cache), locust_stats.RequestStats(cache)]
    keys = [("/a", "GET"), ("/b", "GET"), ("/a", "POST")][:rng.choice([1, 3])]
    for _ in range(300):
        step = rng.random()
        if step < 0.8:
            name, method = rng.choice(keys)
            response_time = rng.choice([None, rng.uniform(0, 99.4), rng.uniform(0, 12000), rng.randrange(200)])
            length = rng.randrange(2048) if rng.random() < 0.9 else rng.uniform(0, 10)  # a float now and then
            for stats in both:
                stats.log_request(method, name, response_time, length)
        elif step < 0.9:
            now[0] += rng.choice([0.001, 0.3, 1.0, 2.5, -1.2])  # seconds go by, or the clock steps back
        elif step < 0.95:
            assert statistics_as_read(both[1]) == statistics_as_read(both[0])
        elif step < 0.97:
            name, method = rng.choice(keys)
            for stats in both:
                stats.log_error(method, name, "connection refused")
        elif step < 0.99:
            for stats in both:
                stats.reset_all()
        else:
            for stats in both:
                stats.clear_all()
    assert statistics_as_read(both[1]) == statistics_as_read(both[0])


def test_kept_requests_use_a_bucketing_of_locusts_replaced_at_runtime(monkeypatch):
    """Locust's documented way to bucket response times differently (locust.stats.bucket_response_time replaced)
    still decides the buckets of requests logged in one go."""
    monkeypatch.setattr(locust_stats, "bucket_response_time", lambda response_time: int(response_time) // 10 * 10)
    stats = locust_stats.RequestStats()
    for response_time in (1.2, 7.9, 12.5, 19.0, 55.0):
        stats.log_request("GET", "/", response_time, 0)
    assert dict(stats.total.response_times) == {0: 2, 10: 2, 50: 1}
    assert dict(stats.entries["/", "GET"].response_times) == {0: 2, 10: 2, 50: 1}


def test_kept_requests_are_no_containers_the_garbage_collector_counts():
    """Each kept request in a tracked container (a tuple of its fields) made the collector run seven times as
    often under load, with a full collection every 2 s: keeping a thousand adds none."""
    stats = locust_stats.RequestStats()
    stats.log_request("GET", "/", 1.0, 1)  # the entries exist
    _ = stats.total
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        before = gc.get_count()[0]
        for _ in range(1000):
            stats.log_request("GET", "/", 1.5, 1024)
        grown = gc.get_count()[0] - before
    finally:
        if was_enabled:
            gc.enable()
    assert grown < 10, f"{grown} tracked objects for 1,000 kept requests"
    assert stats.total.num_requests == 1001


def fields(entry) -> dict:
    """A statistics entry's own figures (not the RequestStats it belongs to)."""
    return {name: value for name, value in vars(entry).items() if name != "stats"}


def test_a_single_entry_logs_as_locusts_own_log(monkeypatch):
    shipped = as_shipped(locust_stats)
    monkeypatch.setattr(time, "time", lambda: 1000.5)
    entries = [cls(locust_stats.RequestStats(), "/", "GET", use_response_times_cache=False)
               for cls in (shipped.StatsEntry, locust_stats.StatsEntry)]
    for entry in entries:
        for response_time in (12.0, None, 0.2, 999.4):
            entry.log(response_time, 100)
    assert fields(entries[0]) == fields(entries[1])
    assert entries[1].num_requests == 4 and entries[1].num_none_requests == 1


def fire_with_listeners(hook_class) -> list[str]:
    """A firing whose first listener adds one and removes another, then a second firing; what was called, in order,
    and what a listener's error and a StopUser did."""
    hook, called = hook_class(), []

    def adds_and_removes(**_):
        called.append("first")
        hook.add_listener(added)
        hook.remove_listener(removed)

    def removed(**_):
        called.append("removed")

    def added(**_):
        called.append("added")

    def fails(**_):
        called.append("fails")
        raise ValueError("a listener's own error")

    for listener in (adds_and_removes, removed, fails):
        hook.add_listener(listener)
    hook.fire(value=1)
    hook.fire(reverse=True, value=2)
    hook.remove_listener(fails)
    hook.add_listener(lambda **_: (_ for _ in ()).throw(StopUser()))
    try:
        hook.fire(value=3)
    except StopUser:
        called.append("StopUser raised")
    return called


def test_an_event_fires_to_its_listeners_as_locusts_own_fire_does(caplog):
    shipped = as_shipped(locust_event)
    locust_log.unhandled_greenlet_exception = False
    expected = fire_with_listeners(shipped.EventHook)
    assert locust_log.unhandled_greenlet_exception
    locust_log.unhandled_greenlet_exception = False
    assert fire_with_listeners(locust_event.EventHook) == expected
    assert locust_log.unhandled_greenlet_exception
    assert expected[:3] == ["first", "removed", "fails"], "the first firing walks the listeners it started with"
    assert "a listener's own error" in caplog.text
    locust_log.unhandled_greenlet_exception = False


def users_tasks_traced(catch_exceptions: bool = True, single_task: bool = False, no_wait_time: bool = False,
                       ends_by: str = "stop") -> list:
    """A user's own tasks (DefaultTaskSet) run until they end, with every kind of task outcome: what ran, in which
    state, what each wait was, what reached user_error and on_stop, and how the run ended."""
    random.seed(7)
    trace: list = []
    environment = Environment(catch_exceptions=catch_exceptions)
    environment.events.user_error.add_listener(
        lambda user_instance, exception, tb: trace.append(("user_error", type(exception).__name__)))
    steps = iter(range(1000))

    def queued(user):
        trace.append(("queued", user._state))

    def step(user):
        n = next(steps)
        trace.append(("task", n, user._state))
        if n == 2:
            raise RescheduleTask()
        if n == 4:
            raise RescheduleTaskImmediately()
        if n == 6:
            raise ValueError("a task's own error")
        if n == 8:
            user._taskset_instance.schedule_task(queued, first=True)
        if n == 14:
            if ends_by == "interrupt":
                raise InterruptTaskSet(reschedule=True)  # at the top level: on_stop, then out of the loop
            user._state = "stopping"  # as Locust's stop does while a task runs

    class Nested(TaskSet):
        @locust_task.task
        def inner(self):
            trace.append(("nested", self.user._state))
            self.interrupt(reschedule=False)

    class Scripted(User):
        tasks = [step] if single_task else {step: 3, Nested: 1}
        wait_time = None if no_wait_time else (lambda user: 0.25 * (len(trace) % 3))

    user = Scripted(environment)
    taskset = user._taskset_instance = DefaultTaskSet(user)
    taskset._sleep = lambda seconds: trace.append(("sleep", seconds, user._state))
    taskset.on_stop = lambda: trace.append(("on_stop", user._state))
    try:
        taskset.run()
    except Exception as e:  # noqa: BLE001  (how the run ended is part of the trace)
        trace.append(("raised", type(e).__name__))
    return trace


@pytest.mark.parametrize("case", [{}, {"ends_by": "interrupt"}, {"single_task": True}, {"catch_exceptions": False},
                                  {"no_wait_time": True}])
def test_a_users_tasks_run_as_locusts_own_loop_runs_them(monkeypatch, case):
    """Every outcome of a task (rescheduled, at once or after the wait, an error, a queued task, a nested TaskSet,
    an interrupt, a stop, no wait_time) the same with the plugin's loop as with Locust's (DefaultTaskSet without a
    run of its own)."""
    assert DefaultTaskSet.run is loadtest_locust._run_users_tasks
    patched = users_tasks_traced(**case)
    monkeypatch.delattr(DefaultTaskSet, "run")
    assert DefaultTaskSet.run is TaskSet.run
    assert users_tasks_traced(**case) == patched
    assert patched[-1][0] == "raised", patched[-3:]
    if not case:
        kinds = {entry[0] for entry in patched}
        assert {"nested", "queued", "user_error", "on_stop", "sleep"} <= kinds, kinds


def test_the_changes_are_in_place():
    assert locust_stats.StatsEntry.log is loadtest_locust._log
    assert locust_stats.RequestStats.log_request is loadtest_locust._log_request
    assert isinstance(vars(locust_stats.RequestStats)["total"], loadtest_locust._Folded)
    assert locust_event.EventHook.fire is loadtest_locust._fire


def test_locusts_client_socket_is_still_the_one_the_patch_sets_a_connect_timeout_on():
    source = inspect.getsource(zmqrpc.Client)  # the file's, whatever the class holds now
    assert ('    def __init__(self, host, port, identity):\n'
            '        BaseSocket.__init__(self, zmq.DEALER, self.ipv4_only(host, port))\n'
            '        self.socket.setsockopt(zmq.IDENTITY, identity.encode())\n'
            '        self.socket.connect("tcp://%s:%i" % (host, port))\n') in source


def test_a_workers_socket_gives_up_a_connect_that_hangs_and_keeps_its_identity():
    client = zmqrpc.Client("127.0.0.1", 9, "worker-1")  # the discard port: nothing listens, nothing is sent
    try:
        assert client.socket.getsockopt(zmqrpc.zmq.CONNECT_TIMEOUT) == loadtest_locust.CONNECT_TIMEOUT_MS
        assert client.socket.getsockopt(zmqrpc.zmq.IDENTITY) == b"worker-1"
        assert client.socket.getsockopt(zmqrpc.zmq.TCP_KEEPALIVE) == 1  # Locust's own options kept
        assert client.socket.getsockopt(zmqrpc.zmq.LAST_ENDPOINT) == b"tcp://127.0.0.1:9"
    finally:
        client.close(linger=0)

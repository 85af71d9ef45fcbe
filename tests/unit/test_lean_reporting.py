"""How LeanHttpUser reports a request (plugin/leanhttp.py): straight into the statistics while Locust's own listener
is the request event's only one (in the open model too, with its latency from the slot), through the event
otherwise; the statistics the same either way, and a listener of the user's own gets every request from the moment
it is added."""
from __future__ import annotations

import hashlib
import inspect

import gevent
import pytest
from gevent.event import Event
from gevent.server import StreamServer
from locust import event as locust_event
from locust.env import Environment

import leanhttp
import loadtest_arrival

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
FAILED = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
# What each user sends, in order: (path, name)
REQUESTS = [("/ok", None), ("/fail", None), ("/ok", "named"), ("/ok", None), ("/fail", "named")]


def handle(sock, _address):
    with sock:
        while request := sock.recv(4096):
            sock.sendall(FAILED if b" /fail " in request else OK)


@pytest.fixture(scope="module")
def server():
    server = StreamServer(("127.0.0.1", 0), handle)
    server.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.stop(timeout=1)


@pytest.fixture
def fired(monkeypatch) -> list:
    """The request events fired (of any environment), counted where Locust's EventHook fires them."""
    events = []
    fire = locust_event.EventHook.fire

    def counting_fire(self, **kwargs):
        if "response_time" in kwargs:
            events.append(kwargs["name"])
        return fire(self, **kwargs)

    monkeypatch.setattr(locust_event.EventHook, "fire", counting_fire)
    return events


def lean_user(host: str):
    """A LeanHttpUser in an environment of its own with Locust's runner (which adds its statistics listener)."""
    class Lean(leanhttp.LeanHttpUser):
        pass

    Lean.host = host
    environment = Environment(user_classes=[Lean])
    environment.create_local_runner()
    return Lean(environment), environment


def statistics(environment) -> dict:
    """What the statistics hold, but the response times (a clock's)."""
    stats = environment.stats
    entries = {"total": stats.total, **{f"{name} {method}": entry for (name, method), entry in stats.entries.items()}}
    return {
        "entries": {key: (e.num_requests, e.num_failures, e.num_none_requests, e.total_content_length)
                    for key, e in entries.items()},
        "errors": {(e.method, e.name, repr(e.error), e.occurrences) for e in stats.errors.values()},
    }


def test_with_only_locusts_listener_a_request_goes_straight_into_the_same_statistics(server, fired):
    direct, direct_environment = lean_user(server)
    assert direct._statistics_listener is not None, "Locust's runner listener not found: see statistics_listener"
    for path, name in REQUESTS:
        direct.request(path, name=name)
    assert fired == []  # no event: the statistics directly

    through_event, event_environment = lean_user(server)
    heard = []
    event_environment.events.request.add_listener(lambda **kwargs: heard.append(kwargs))
    for path, name in REQUESTS:
        through_event.request(path, name=name)
    assert len(fired) == len(REQUESTS) == len(heard)

    assert statistics(direct_environment) == statistics(event_environment)
    assert statistics(direct_environment)["entries"]["total"] == (5, 2, 0, 14)
    assert [(kwargs["name"], type(kwargs["exception"]).__name__, kwargs["response_length"]) for kwargs in heard] == [
        ("/ok", "NoneType", 2), ("/fail", "HttpStatusError", 4), ("named", "NoneType", 2), ("/ok", "NoneType", 2),
        ("named", "HttpStatusError", 4)]
    assert {"request_type", "response_time", "context", "response", "url", "start_time"} <= set(heard[0])


def test_a_listener_added_later_hears_every_request_from_then_and_none_after_it_is_removed(server, fired):
    user, environment = lean_user(server)
    user.request("/ok")
    heard = []

    def listener(**kwargs):
        heard.append(kwargs["name"])

    environment.events.request.add_listener(listener)
    user.request("/ok", name="heard")
    environment.events.request.remove_listener(listener)
    user.request("/ok", name="after")
    assert heard == ["heard"] and fired == ["heard"]
    assert environment.stats.total.num_requests == 3


def test_an_event_whose_fire_is_replaced_is_fired(server, fired):
    """A fire replaced without saying how it changes the response time (leanhttp.RESPONSE_TIME_OF) may do
    anything: every request goes through it."""
    user, environment = lean_user(server)
    hook = environment.events.request
    replaced = []
    fire = hook.fire

    def fire_and_note(**kwargs):
        replaced.append(kwargs["name"])
        return fire(**kwargs)

    hook.fire = fire_and_note
    user.request("/ok")
    assert replaced == ["/ok"] and environment.stats.total.num_requests == 1


def open_model(environment):
    """The open model's latency from the slot on `environment`'s request event, as its plugin installs it; its
    counts and the event that stops it."""
    dispatcher = loadtest_arrival.Dispatcher(loadtest_arrival.Schedule(), loadtest_arrival.Counts(), Event())
    loadtest_arrival._latency_from_slots(environment, dispatcher)
    return dispatcher.counts, dispatcher.stopping


@pytest.mark.parametrize("with_a_listener", [False, True], ids=["straight", "through-the-event"])
def test_in_the_open_model_both_paths_report_the_latency_from_the_slot_and_keep_the_service_time(
        server, fired, with_a_listener):
    """The open model replaces the event's fire and says how it changes the response time: LeanHttpUser logs the
    same response time straight into the statistics (no event) while Locust's listener is the only one, and
    nothing, as the event would, while Locust stops the users."""
    user, environment = lean_user(server)
    counts, stopping = open_model(environment)
    heard = []
    if with_a_listener:
        environment.events.request.add_listener(lambda **kwargs: heard.append(kwargs["response_time"]))
    gevent.getcurrent().loadtest_lateness_ms = late_ms = 250.0  # the task started 250 ms after its slot
    try:
        for path, name in REQUESTS:
            user.request(path, name=name)
        stopping.set()
        user.request("/ok", name="while stopping")
    finally:
        del gevent.getcurrent().loadtest_lateness_ms
    total = environment.stats.total
    assert len(counts.service_ms) == total.num_requests == len(REQUESTS) and total.num_failures == 2
    assert total.total_response_time == pytest.approx(sum(counts.service_ms) + late_ms * len(REQUESTS))
    assert total.min_response_time >= late_ms and ("while stopping", "GET") not in environment.stats.entries
    assert fired == (["/ok", "/fail", "named", "/ok", "named"] if with_a_listener else [])
    assert heard == ([service + late_ms for service in counts.service_ms] if with_a_listener else [])


# Locust's runner listener the direct path stands for, by its text's SHA-256 (Locust 2.47): a change there fails
# here, so that leanhttp's direct path is checked against the new listener first.
RUNNERS_LISTENER_SHA256 = "1e236fff8131d77a92b445a8b0d0c38c846742d6bb932525c4278aa74314e1a5"


def test_locusts_statistics_listener_is_still_the_one_the_direct_path_does_the_work_of():
    text = inspect.getsource(leanhttp._STATISTICS_LISTENER_CODE)
    assert hashlib.sha256(text.encode()).hexdigest() == RUNNERS_LISTENER_SHA256, (
        f"Locust's runner listener changed: check LeanHttpUser.request's direct path against it\n{text}")

"""How LeanHttpUser reports a request (plugin/leanhttp.py): straight into the statistics while Locust's own listener
is the request event's only one, through the event otherwise; the statistics the same either way, and a listener of
the user's own gets every request from the moment it is added."""
from __future__ import annotations

import hashlib
import inspect

import pytest
from gevent.server import StreamServer
from locust import event as locust_event
from locust.env import Environment

import leanhttp

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
    """The open model replaces the event's fire (its latency from the slot): every request must go through it."""
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


# Locust's runner listener the direct path stands for, by its text's SHA-256 (Locust 2.47): a change there fails
# here, so that leanhttp's direct path is checked against the new listener first.
RUNNERS_LISTENER_SHA256 = "1e236fff8131d77a92b445a8b0d0c38c846742d6bb932525c4278aa74314e1a5"


def test_locusts_statistics_listener_is_still_the_one_the_direct_path_does_the_work_of():
    text = inspect.getsource(leanhttp._STATISTICS_LISTENER_CODE)
    assert hashlib.sha256(text.encode()).hexdigest() == RUNNERS_LISTENER_SHA256, (
        f"Locust's runner listener changed: check LeanHttpUser.request's direct path against it\n{text}")

"""LeanHttpUser's request deadline (plugin/leanhttp.py Deadlines): a request with no complete response ends as a
TimeoutError at its timeout (within one check), and nothing else is touched: requests answered in time, and a user
that answered and then waits past its old deadline."""
from __future__ import annotations

import time

import gevent
import pytest
from gevent.server import StreamServer
from locust.env import Environment


import leanhttp  # noqa: E402

TIMEOUT_S = 0.3
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def handle(sock, _address):
    """Answer each request at once, except one for /silent: that one gets nothing until the client leaves."""
    with sock:
        while request := sock.recv(4096):
            if b" /silent " in request:
                while sock.recv(4096):
                    pass
                return
            sock.sendall(RESPONSE)


@pytest.fixture
def server():
    server = StreamServer(("127.0.0.1", 0), handle)
    server.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.stop(timeout=1)


def users(host: str, count: int) -> tuple[list, list]:
    """`count` users of a LeanHttpUser with the short timeout, and the list their request events land in."""
    class Lean(leanhttp.LeanHttpUser):
        timeout = TIMEOUT_S

    Lean.host = host
    environment = Environment(user_classes=[Lean])
    reported = []
    environment.events.request.add_listener(lambda **kwargs: reported.append(kwargs))
    return [Lean(environment) for _ in range(count)], reported


def test_a_silent_request_ends_at_its_deadline_and_the_answered_ones_are_untouched(server):
    (silent, answered), reported = users(server, 2)

    def keep_asking():
        for _ in range(50):
            answered.request("/fast")
            gevent.sleep(0.01)

    started = time.perf_counter()
    asking = gevent.spawn(keep_asking)
    with gevent.Timeout(5):  # the deadline's failure fails the test, not hangs it
        assert silent.request("/silent") is None
    took = time.perf_counter() - started
    asking.join(timeout=10)
    # Not before its deadline, and by it rather than by anything slower (the bound leaves room for a busy machine:
    # this layer runs beside others).
    assert TIMEOUT_S <= took < TIMEOUT_S + leanhttp.DEADLINE_CHECK_S + 2, took
    errors = [(r["name"], str(r["exception"])) for r in reported if r["exception"] is not None]
    assert errors == [("/silent", f"no complete response within {TIMEOUT_S:g} s")]
    assert sum(r["name"] == "/fast" for r in reported) == 50
    assert leanhttp.DEADLINES.due == {}


def test_a_user_answered_in_time_is_not_interrupted_after_its_old_deadline(server):
    (user,), reported = users(server, 1)

    def ask_then_wait():
        user.request("/fast")
        gevent.sleep(TIMEOUT_S + 3 * leanhttp.DEADLINE_CHECK_S)  # past the answered request's deadline
        return "waited"

    assert gevent.spawn(ask_then_wait).get(timeout=5) == "waited"
    assert [r["exception"] for r in reported] == [None]

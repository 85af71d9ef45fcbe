"""http_close: requests per second when every request opens its own plain TCP connection.

Each request opens a new HTTP connection, GETs the 1 KB file with `Connection: close`, and the connection closes
after the response: the load of clients without keep-alive, and of HAProxy's "close" mode (`haproxy.keepAlive:
false` closes even the connections of keep-alive clients). It needs an http:// host (over https it would be
tls_handshake). Users spread over the target's routes (LOADTEST_ROUTES). Settings: LOADTEST_PATH (default /1kb),
LOADTEST_WAIT seconds between requests per user (default 0).
"""
from locust import constant

from leanhttp import LeanHttpUser
from loadtest_lib import RouteSpread, setting

# The Locust user class this scenario runs: worker sizing figures are per user class.
USER_CLASS = "LeanHttpUser"


class HttpClose(RouteSpread, LeanHttpUser):
    path = setting("path", "/1kb")
    keep_alive = False
    wait_time = constant(float(setting("wait", "0")))
    tasks = [LeanHttpUser.request]  # the request of `path` is the task itself: one Python call less a request

    def __init__(self, environment):
        super().__init__(environment)
        if not self.host.startswith("http://"):
            raise ValueError(f"http_close measures plain connections: it needs an http:// host, not {self.host!r}")

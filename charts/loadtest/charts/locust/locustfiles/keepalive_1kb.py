"""keepalive_1kb: maximum RPS over persistent connections, a 1 KB static file per request.

The NGINX Ingress sizing method's first metric: HTTP keep-alive, 1 KB payload, no think time, so RPS is bounded by
the target (or by the generator: watch worker CPU). Each user keeps one connection (LeanHttpUser: several times
FastHttpUser's requests per worker core, see benchmarks/generators.py). Users spread over the target's routes
(LOADTEST_ROUTES). Settings: LOADTEST_PATH (default /1kb),
LOADTEST_WAIT seconds between requests per user (default 0).
"""
from locust import constant

from leanhttp import LeanHttpUser
from loadtest_lib import RouteSpread, setting

# The user class whose measured requests per core (benchmarks/generators.py) sizes this scenario's workers.
USER_CLASS = "LeanHttpUser"


class KeepAlive1KB(RouteSpread, LeanHttpUser):
    path = setting("path", "/1kb")
    wait_time = constant(float(setting("wait", "0")))
    tasks = [LeanHttpUser.request]  # the request of `path` is the task itself: one Python call less a request

"""keepalive_16kb: RPS over persistent connections with a 16 KB file per request, NGINX's larger-payload case.

The same load as keepalive_1kb with a payload sixteen times larger: where a 1 KB GET measures the target's request
handling, 16 KB adds the copying and the bandwidth, so a node's network can cap RPS before its CPU (the planner
counts the bytes). Each user keeps one connection (LeanHttpUser), spread over the target's routes (LOADTEST_ROUTES).
Settings: LOADTEST_PATH (default /16kb), LOADTEST_WAIT seconds between requests per user (default 0).
"""
from locust import constant

from leanhttp import LeanHttpUser
from loadtest_lib import RouteSpread, setting

# The Locust user class this scenario runs: worker sizing figures are per user class.
USER_CLASS = "LeanHttpUser"


class KeepAlive16KB(RouteSpread, LeanHttpUser):
    path = setting("path", "/16kb")
    wait_time = constant(float(setting("wait", "0")))
    tasks = [LeanHttpUser.request]  # the request of `path` is the task itself: one Python call less a request

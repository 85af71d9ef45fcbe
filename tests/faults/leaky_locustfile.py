"""A user test that leaks: every request keeps 10 KB it never frees, as a test that collects its responses does (the
fault layer's worker killed for its memory, and the node layer's). The first request also keeps 80 MB, so the limit
is reached in seconds, at a pace each 3 s report still sees: the last report before the kill has 80 % of it or more."""
from leanhttp import LeanHttpUser
from locust import constant, task

KEPT = []


class Leaky(LeanHttpUser):
    wait_time = constant(0.01)

    @task
    def get(self):
        self.request("/1kb")
        KEPT.append(b"\x01" * (80_000_000 if not KEPT else 10_000))  # written, so it counts against the limit at once

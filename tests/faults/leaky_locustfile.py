"""A user test that leaks: every request keeps 10 KB it never frees, as a test that collects its responses does (the
fault layer's worker killed for its memory)."""
from leanhttp import LeanHttpUser
from locust import constant, task

KEPT = []


class Leaky(LeanHttpUser):
    wait_time = constant(0.01)

    @task
    def get(self):
        self.request("/1kb")
        KEPT.append(b"\x01" * 10_000)  # written, so it counts against the memory limit at once

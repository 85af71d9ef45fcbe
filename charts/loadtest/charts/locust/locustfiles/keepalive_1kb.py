"""keepalive_1kb: maximum RPS over persistent connections, a 1 KB static file per request.

The NGINX Ingress sizing method's first metric: HTTP keep-alive, 1 KB payload, no think time, so RPS is bounded by
the target (or by the generator: watch worker CPU). Settings: LOADTEST_PATH (default /1kb), LOADTEST_WAIT seconds
between requests per user (default 0).
"""
from locust import FastHttpUser, constant, task

from loadtest_lib import setting


class KeepAlive1KB(FastHttpUser):
    path = setting("path", "/1kb")
    wait_time = constant(float(setting("wait", "0")))

    @task
    def get_1kb(self):
        self.client.get(self.path, name=self.path)

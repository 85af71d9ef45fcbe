"""tls_handshake: TLS handshakes per second (TLS TPS), the NGINX Ingress sizing method's second metric.

Each request opens a new HTTPS connection, with a full handshake (no session resumption), GETs an empty file and
closes the connection (`Connection: close`), so RPS here is the target's TLS TPS: the handshake dominates the cost.
It needs an https:// host. Users spread over the target's routes (LOADTEST_ROUTES). Settings: LOADTEST_PATH
(default /0kb), LOADTEST_WAIT seconds between requests per user (default 0).
"""
from locust import constant

from leanhttp import LeanHttpUser
from loadtest_lib import RouteSpread, setting

# The Locust user class this scenario runs: worker sizing figures are per user class.
USER_CLASS = "LeanHttpUser"


class TlsHandshake(RouteSpread, LeanHttpUser):
    path = setting("path", "/0kb")
    keep_alive = False
    wait_time = constant(float(setting("wait", "0")))
    tasks = [LeanHttpUser.request]  # the request of `path` is the task itself: one Python call less a request

    def __init__(self, environment):
        super().__init__(environment)
        if not self.host.startswith("https://"):
            raise ValueError(f"tls_handshake measures TLS handshakes: it needs an https:// host, not {self.host!r}")

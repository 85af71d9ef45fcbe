"""Shared pieces of the loadtest scenarios, shipped beside them (the chart mounts this folder as one ConfigMap).

Importing this module registers its Locust event listeners, so every scenario gets them by importing it.
Configuration comes from environment variables, which work the same for a local run and in the chart.
"""
from __future__ import annotations

import hmac
import itertools
import os
import random
from urllib.parse import urlsplit

from locust import events

import loadtest_locust  # noqa: F401  (importing it applies its changes to Locust's per-request path)
import loadtest_abort  # noqa: F401  (registering it stops a run early on LOADTEST_ABORT_ON's conditions)
import loadtest_arrival  # noqa: F401  (registering it runs the open model when LOADTEST_ARRIVAL_RATE is set)
import loadtest_faults  # noqa: F401  (registering it records workers lost and joined, and the requests they sent)
import loadtest_judge  # noqa: F401  (registering it judges LOADTEST_CHECKS when the master ends a run)
import loadtest_metrics  # noqa: F401  (registering it serves the run's Prometheus metrics)
from loadtest_shared import settings

# "user:password" for HTTP basic auth on the web UI: in a file (the chart mounts its Secret there when webAuth is
# enabled), or in the environment (a local run).


def setting(name: str, default: str) -> str:
    """A scenario setting from the environment (settings.env_name: a declared one's variable, a test's own as
    LOADTEST_<NAME>), else the scenario's default."""
    return os.environ.get(settings.env_name(name), default)


def web_auth_credentials() -> tuple[str, str]:
    """The web UI's "user:password", from LOADTEST_WEB_AUTH_FILE or LOADTEST_WEB_AUTH; (source, "") when neither."""
    path = os.environ.get(settings.WEB_AUTH_FILE.env)
    if path:
        try:
            with open(path) as f:
                return path, f.read().strip()
        except OSError as e:
            raise SystemExit(f"{settings.WEB_AUTH_FILE.env}={path}: {e.strerror}") from None
    return settings.WEB_AUTH.env, os.environ.get(settings.WEB_AUTH.env, "")


@events.init.add_listener
def _protect_web_ui(environment, web_ui=None, **_):
    source, credentials = web_auth_credentials()
    if not credentials or web_ui is None:
        return
    user, sep, password = credentials.partition(":")
    if not (sep and user and password):
        raise SystemExit(f"{source} must hold 'user:password'")
    from flask import Response, request

    @web_ui.app.before_request
    def require_basic_auth():
        auth = request.authorization
        if (
            auth is not None
            and hmac.compare_digest((auth.username or "").encode(), user.encode())
            and hmac.compare_digest((auth.password or "").encode(), password.encode())
        ):
            return None
        return Response("authentication required\n", 401, {"WWW-Authenticate": 'Basic realm="locust"'})


def _route_indexes():
    """Route numbers for the users of this process, in turn, from a random start: several workers do not all put
    their first users on route 0."""
    routes = int(setting("routes", "1"))
    if routes < 1:
        raise SystemExit(f"LOADTEST_ROUTES must be at least 1, not {routes}")
    start = random.randrange(routes)
    return itertools.cycle([*range(start, routes), *range(start)])


_next_route = _route_indexes()


class RouteSpread:
    """Mixin for a LeanHttpUser scenario that spreads its users over the target's routes (LOADTEST_ROUTES, default 1).

    A user on route i > 0 sends Host (and, over TLS, SNI) r<i>.<host name of the URL>; route 0 keeps the URL's own
    Host. The chart's nginx and haproxy targets name their routes the same way, so every route gets its share.
    List it before LeanHttpUser: `class Scenario(RouteSpread, LeanHttpUser)`.
    """

    def __init__(self, environment):
        route = next(_next_route)
        if route and self.host:
            self.headers = {**self.headers, "Host": f"r{route}.{urlsplit(self.host).hostname}"}
        super().__init__(environment)

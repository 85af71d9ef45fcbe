"""Shared pieces of the loadtest scenarios, shipped beside them (the chart mounts this folder as one ConfigMap).

Importing this module registers its Locust event listeners, so every scenario gets them by importing it.
Configuration comes from environment variables, which work the same for a local run and in the chart.
"""
from __future__ import annotations

import hmac
import os

from locust import events

# "user:password" for HTTP basic auth on the web UI; the chart sets it from a Secret when webAuth is enabled.
WEB_AUTH_ENV = "LOADTEST_WEB_AUTH"


def setting(name: str, default: str) -> str:
    """A scenario setting: LOADTEST_<NAME> from the environment, else the scenario's default."""
    return os.environ.get(f"LOADTEST_{name.upper()}", default)


@events.init.add_listener
def _protect_web_ui(environment, web_ui=None, **_):
    credentials = os.environ.get(WEB_AUTH_ENV)
    if not credentials or web_ui is None:
        return
    user, sep, password = credentials.partition(":")
    if not (sep and user and password):
        raise SystemExit(f"{WEB_AUTH_ENV} must look like 'user:password'")
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

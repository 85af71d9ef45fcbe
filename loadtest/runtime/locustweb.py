"""Locust's web API, as a sweep drives it: live status, start or resize the swarm, stop it.

The same calls work against the local master and, through `kubectl port-forward`, the chart's master; `credentials`
("user:password") go as the web UI's basic auth (`locust.webAuth`). A URL never carries them: a command line shows
in `ps` and in shell history.
"""
from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse

from ..errors import RunFailed, UsageError
from . import http_client

# The plugin's (plugin/loadtest_metrics.py) copy of what Locust's --json-file writes at exit, live.
STATS_JSON, STATE = "/loadtest/stats.json", "/loadtest/state"
# Where the CLI takes the web UI's "user:password" from (or a file: --locust-auth-file).
CREDENTIALS_ENV = "LOADTEST_LOCUST_AUTH"


class LocustWebError(RunFailed):
    pass


MASTER_SILENT_S = 5  # a master silent this long is lost, not slow (it answers the web UI's calls within a second)


class Silence:
    """Since when a master has not answered (unix time; None: it answered the last call), and whether that is long
    enough to call it lost."""

    def __init__(self, patience_s: float = MASTER_SILENT_S):
        self.patience_s, self.since = patience_s, None

    def heard(self) -> None:
        self.since = None

    def missed(self) -> bool:
        """A call it did not answer; True once it has been silent for patience_s."""
        self.since = self.since or time.time()
        return time.time() - self.since >= self.patience_s


class LocustWeb:
    def __init__(self, url: str, credentials: str | None = None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"Locust URL {url!r} is not like http://127.0.0.1:8089")
        if parts.username or parts.password:
            raise UsageError(f"Locust URL {parts.scheme}://…@{parts.hostname}: leave the credentials out of the URL "
                             f"(it shows in ps and shell history); export {CREDENTIALS_ENV}=user:password or pass "
                             "--locust-auth-file FILE")
        self.headers = {}
        if credentials:
            self.headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
        try:
            port = parts.port
        except ValueError:
            raise UsageError(f"Locust URL {url!r}: its port is not a number from 1 to 65535") from None
        netloc = parts.hostname + (f":{port}" if port else "")
        self.url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))

    def _call(self, path: str, form: dict | None = None) -> dict:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            return json.loads(http_client.fetch(f"{self.url}{path}", data=data, headers=self.headers, timeout=10))
        except urllib.error.HTTPError as e:
            hint = (f" (the web UI wants credentials: export {CREDENTIALS_ENV}=user:password or pass "
                    "--locust-auth-file FILE)") if e.code == 401 else ""
            raise LocustWebError(f"Locust at {self.url} answered {path} with HTTP {e.code}{hint}") from None
        except (OSError, ValueError) as e:
            raise LocustWebError(f"Locust at {self.url} did not answer {path}: {e}") from None

    def status(self) -> dict:
        """The web UI's live JSON: state, user_count, current_rps, fail_ratio, percentiles, and workers on a master."""
        return self._call("/stats/requests")

    def state(self) -> dict:
        """The runner's state and user count as they are now (the plugin's /loadtest/state; status() is cached)."""
        return self._call(STATE)

    def stats_entries(self) -> list[dict]:
        """The run's statistics so far in Locust's --json-file format (the plugin's /loadtest/stats.json)."""
        return self._call(STATS_JSON)

    def swarm(self, users: int, spawn_rate: float, stop_after_s: int | None = None) -> None:
        """Start the swarm, or move a running one to `users` (Locust spreads them over the connected workers); with
        `stop_after_s`, the master stops it by itself that long after (its web UI's run time), should nobody else."""
        form = {"user_count": users, "spawn_rate": spawn_rate, **({"run_time": f"{stop_after_s}s"} if stop_after_s
                                                                 else {})}
        answer = self._call("/swarm", form)
        if not answer.get("success"):
            raise LocustWebError(f"Locust refused to swarm {users} users: {answer.get('message')}")

    def reset_stats(self) -> None:
        """Start Locust's statistics afresh (the web UI's reset button)."""
        try:
            http_client.fetch(f"{self.url}/stats/reset", data=b"", headers=self.headers, timeout=10)
        except OSError as e:
            raise LocustWebError(f"Locust at {self.url} did not reset its statistics: {e}") from None

    def stop(self) -> None:
        self._call("/stop", {})  # POST: Locust refuses a GET

    def wait_workers(self, count: int, timeout_s: float) -> None:
        """Wait until exactly `count` workers are connected and none is missing."""
        deadline = time.monotonic() + timeout_s
        seen: list = []
        while time.monotonic() < deadline:
            seen = [w["state"] for w in self.status().get("workers", [])]
            if len(seen) == count and "missing" not in seen:
                return
            time.sleep(0.25)
        raise LocustWebError(f"Locust at {self.url} has {len(seen)} worker(s) ({', '.join(seen) or 'none'}), "
                             f"not the {count} expected, after {timeout_s:.0f} s")

    def wait_users(self, users: int, timeout_s: float) -> None:
        """Wait until the swarm runs `users` users (spawning is over)."""
        deadline = time.monotonic() + timeout_s
        status: dict = {}
        while time.monotonic() < deadline:
            status = self.status()
            if status.get("state") == "running" and status.get("user_count") == users:
                return
            time.sleep(0.5)
        raise LocustWebError(f"Locust did not reach {users} running users within {timeout_s:.0f} s "
                             f"(state {status.get('state')}, {status.get('user_count')} users)")


def live_figures(status: dict, rps: float | None, worker_cpu: list[float], users: int | None = None) -> str:
    """The figures of a run's live progress line, one format wherever a run prints one (the local run, a release's
    run, a sweep's step): the users (Locust's count unless given), the RPS of the last second (None before the
    workers' first report: Locust's own current_rps reads 0 then), failures, p95 and each worker's CPU as a share of
    its core."""
    p95 = (status.get("current_response_time_percentiles") or {}).get("response_time_percentile_0.95")
    return (f"users {status.get('user_count', 0) if users is None else users:>5}  "
            f"RPS {'-' if rps is None else f'{rps:,.0f}':>9}  failures {status.get('fail_ratio', 0):>6.2%}  "
            f"p95 {p95 or 0:>5.0f} ms  worker CPU {' '.join(f'{c:.0%}' for c in worker_cpu) or '-'}")

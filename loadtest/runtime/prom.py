"""Prometheus' HTTP query API, as a sweep reads it: instant queries at a given time, and the scrape interval."""
from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from ..errors import RunFailed

DURATION = re.compile(r"(\d+)(ms|s|m|h)")
UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


class PrometheusError(RunFailed):
    pass


def duration_s(text: str) -> float:
    """A Prometheus duration such as 15s, 1m30s or 500ms, in seconds."""
    parts = DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise PrometheusError(f"{text!r} is not a Prometheus duration")
    return sum(int(n) * UNIT_S[u] for n, u in parts)


class Prometheus:
    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def get(self, path: str, **params) -> dict:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=15) as response:
                body = json.load(response)
        except urllib.error.HTTPError as e:
            try:
                body = json.load(e)
            except ValueError:
                raise PrometheusError(f"Prometheus at {self.url} answered {path} with HTTP {e.code}") from None
        except (OSError, ValueError) as e:
            raise PrometheusError(f"Prometheus at {self.url} did not answer {path}: {e}") from None
        if body.get("status") != "success":
            raise PrometheusError(f"Prometheus refused {params.get('query', path)}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        return self.get("/api/v1/query", query=expr, **({"time": f"{at:.3f}"} if at else {}))["result"]

    def scalar(self, expr: str, at: float | None = None) -> float | None:
        """The value of a query that returns one series (None when it returns none)."""
        result = self.query(expr, at)
        if len(result) > 1:
            raise PrometheusError(f"{expr} returned {len(result)} series, not one")
        return float(result[0]["value"][1]) if result else None

    def values(self, expr: str, at: float | None = None) -> list[float]:
        return [float(s["value"][1]) for s in self.query(expr, at)]

    def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[tuple[float, float]]:
        """(time, value) of a query that returns one series, every step_s from start to end ([] when none)."""
        result = self.get("/api/v1/query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}",
                          step=f"{step_s:g}")["result"]
        if len(result) > 1:
            raise PrometheusError(f"{expr} returned {len(result)} series, not one")
        return [(float(t), float(v)) for t, v in result[0]["values"]] if result else []

    def scrape_interval_s(self) -> float:
        config = yaml.safe_load(self.get("/api/v1/status/config")["yaml"])
        return duration_s(config.get("global", {}).get("scrape_interval", "1m"))

    def version(self) -> str:
        return self.get("/api/v1/status/buildinfo").get("version", "unknown")

    def wait_stamped_since(self, at: float, timeout_s: float, stamps: tuple[str, ...] = ("min(timestamp(up))",)
                           ) -> bool:
        """Wait until each of `stamps` (a query of a sample's timestamp) is at or after `at` (unix time): by default,
        every target scraped since, so each sample up to `at` is in the query API (a sample stamped by its exporter,
        as cAdvisor's are, comes with the scrape after its stamp). False if not within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            seen = [self.scalar(stamp) for stamp in stamps]
            if all(t is not None and t >= at for t in seen):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)

    def wait_for(self, expr: str, timeout_s: float, what: str) -> None:
        """Wait until `expr` returns a series; `what` names it in the error."""
        deadline = time.monotonic() + timeout_s
        while not self.query(expr):
            if time.monotonic() > deadline:
                raise PrometheusError(f"Prometheus at {self.url} has no {what} after {timeout_s:.0f} s ({expr})")
            time.sleep(1)

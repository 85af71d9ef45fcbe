"""Prometheus' HTTP query API, read the one way: the judged master in the pod (a run's series.csv) and the CLI (a
sweep's steps, `loadtest run --release`, `loadtest tune`) both query through this client.

Standard library only: the chart's pods load it beside the scenarios. Every failure (no answer, an HTTP error, a
refused query, more series than asked for) raises `error`, which the CLI sets to its own error class.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request


class PrometheusError(Exception):
    """Prometheus did not answer, or refused the query; the message names the server and the query."""


class Prometheus:
    error: type[Exception] = PrometheusError

    def __init__(self, url: str, timeout_s: float = 15):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def get(self, path: str, **params) -> dict:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=self.timeout_s) as response:
                body = json.load(response)
        except urllib.error.HTTPError as e:
            try:
                body = json.load(e)
            except ValueError:
                raise self.error(f"Prometheus at {self.url} answered {path} with HTTP {e.code}") from None
        except (OSError, ValueError) as e:
            raise self.error(f"Prometheus at {self.url} did not answer {path}: {e}") from None
        if body.get("status") != "success":
            raise self.error(f"Prometheus refused {params.get('query', path)}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        return self.get("/api/v1/query", query=expr, **({"time": f"{at:.3f}"} if at else {}))["result"]

    def _one(self, expr: str, result: list[dict]) -> dict | None:
        if len(result) > 1:
            raise self.error(f"{expr} returned {len(result)} series, not one")
        return result[0] if result else None

    def scalar(self, expr: str, at: float | None = None) -> float | None:
        """The value of a query that returns one series (None when it returns none)."""
        series = self._one(expr, self.query(expr, at))
        return float(series["value"][1]) if series else None

    def values(self, expr: str, at: float | None = None) -> list[float]:
        return [float(s["value"][1]) for s in self.query(expr, at)]

    def query_range(self, expr: str, start: float, end: float, step_s: float) -> dict[float, float]:
        """{time: value} of a query that returns one series, every step_s from start to end ({} when none)."""
        series = self._one(expr, self.get("/api/v1/query_range", query=expr, start=f"{start:.3f}",
                                          end=f"{end:.3f}", step=f"{step_s:g}")["result"])
        return {float(t): float(v) for t, v in series["values"]} if series else {}

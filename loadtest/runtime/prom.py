"""Prometheus as the CLI reads it: the pods' query client, the server's scrape interval, and waits for samples."""
from __future__ import annotations

import time

import yaml
from loadtest_shared import prometheus, units

from ..errors import RunFailed


class PrometheusError(RunFailed):
    pass


def duration_s(text: str) -> float:
    """A Prometheus duration such as 15s, 1m30s or 500ms, in seconds."""
    try:
        return units.seconds(text)
    except ValueError as e:
        raise PrometheusError(f"not a Prometheus duration: {e}") from None


class Prometheus(prometheus.Prometheus):
    """The pods' client (loadtest_shared.prometheus), with what only the CLI asks: the scrape interval from the
    server's configuration, and waits for samples."""

    error = PrometheusError

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

"""The keys under which the plugin's modules add their part to a worker's report to its master (Locust's
report_to_master event) and find it again on the master (worker_report): one place for them, so that a module that
reads another's part needs no import of it.

Standard library only: the chart's pods load it beside the scenarios.
"""
from __future__ import annotations

METRICS = "loadtest_metrics"  # loadtest_metrics: the worker's CPU, its memory and the requests it sent
ARRIVAL = "loadtest_arrival"  # loadtest_arrival: the open model's slots, late starts and loop probes

"""The scenarios: what each built-in locustfile measures, and everything else that depends on which one runs.

The one list of scenarios. `loadtest values` writes the chart schema's enums and the chart's TLS helper from it,
the CLI takes its choices from it, the planner its defaults, and the tests their matrices; a unit test checks that
every scenario has its locustfile and that the backend serves its payload. To add one, see CONTRIBUTING.md, "Add a
scenario".
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from .. import paths
from ..errors import UsageError

# How a scenario's connections use TLS: it needs an https:// host, it needs http://, or either works.
TLS_REQUIRED, TLS_FORBIDDEN, TLS_EITHER = "required", "forbidden", "either"


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str  # one line, for help texts and the values.yaml comment
    payload: str  # the backend file each request GETs, at /<payload>; the backend serves every scenario's
    payload_bytes: int  # its size
    tls: str  # TLS_REQUIRED, TLS_FORBIDDEN or TLS_EITHER
    default_rps_per_core: float  # RPS a worker core gives when no calibration file says otherwise
    wire_bytes: int  # bytes on the wire per request, both directions, headers and TLS included
    target_metric: str  # which published target figure applies (loadtest.capacity.published): "rps" or "tls_tps"

    @property
    def locustfile(self):
        return paths.LOCUSTFILES / f"{self.name}.py"

    @property
    def default_tls_mode(self) -> str:
        """TLS terminated at the target where the scenario needs TLS, plain HTTP otherwise."""
        return "edge" if self.tls == TLS_REQUIRED else "none"

    @property
    def user_class(self) -> str:
        """The Locust user class its locustfile declares in USER_CLASS: per-core figures are per user class."""
        m = re.search(r'^USER_CLASS = "(\w+)"', self.locustfile.read_text(), re.M)
        return m.group(1) if m else "unknown"


# The defaults per worker core (default_rps_per_core) and how they were measured: the planner prints where with every
# plan from defaults, and docs/sizing.md quotes both through `loadtest docs` (per_core_markdown). Calibrate on your
# nodes before trusting a plan to the last worker.
DEFAULTS_MEASURED_ON = "the project's 2-core AMD EPYC VM with chart 0.7.4 and Locust 2.47, 2026-11-30"
DEFAULTS_METHOD = ("each the median of three `loadtest calibrate` runs (one worker, 50 users, 15 s a scenario, against "
                   "the local stack's nginx on the other core, the worker at 98-100 % of its core)")
SCENARIOS = {
    s.name: s
    for s in (
        Scenario("keepalive_1kb", "keep-alive connections, GET of a 1 KB file, no think time (max RPS)",
                 "1kb", 1024, TLS_EITHER, 55_314, 1_024 + 450, "rps"),
        Scenario("http_close", "a new plain connection per request, GET of the 1 KB file, closed after the response",
                 "1kb", 1024, TLS_FORBIDDEN, 9_500, 1_024 + 450 + 400, "rps"),  # + TCP handshake and teardown
        Scenario("tls_handshake", "a new HTTPS connection per request, full TLS handshake, GET of an empty file "
                 "(TLS TPS)", "0kb", 0, TLS_REQUIRED, 1_435, 5_000, "tls_tps"),  # certificate chain, key exchange
        Scenario("keepalive_16kb", "keep-alive connections, GET of a 16 KB file (NGINX's larger-payload case)",
                 "16kb", 16_384, TLS_EITHER, 52_010, 16_384 + 450, "rps"),
    )
}
DEFAULT = "keepalive_1kb"


def get(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise UsageError(f"unknown scenario {name!r}; scenarios: {', '.join(SCENARIOS)}") from None


def payloads() -> dict[str, int]:
    """The files the backend serves, by name, with their sizes: every scenario's payload."""
    return {s.payload: s.payload_bytes for s in SCENARIOS.values()}


def tls_scenarios() -> list[str]:
    """Scenarios that need an https:// host: the chart reaches its target over TLS for them."""
    return [s.name for s in SCENARIOS.values() if s.tls == TLS_REQUIRED]


def per_core_markdown() -> str:
    """The defaults per worker core as docs/sizing.md quotes them."""
    rows = [f"| {s.name} | {s.user_class} | {s.default_rps_per_core:,.0f} |" for s in SCENARIOS.values()]
    measured = textwrap.fill(f"Measured: {DEFAULTS_METHOD}, on {DEFAULTS_MEASURED_ON}.", 120, break_on_hyphens=False)
    return "\n".join(["| scenario | user class | RPS per worker core |", "|---|---|---|", *rows, "", measured])

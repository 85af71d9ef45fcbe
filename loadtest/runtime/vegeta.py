"""vegeta (github.com/tsenart/vegeta/v12, built pinned by scripts/setup): the open-model reference for issue #28.

Locust is a closed model: a user sends its next request once the last one is answered, so a slow target lowers the
offered rate. vegeta sends at a fixed arrival rate whatever the target does; an arrival-rate mode is checked against
it at the same offered rate on the same target.

How vegeta v12.13.0 paces and measures (read in the module's source, lib/attack.go `Attacker.Attack` and `hit`,
lib/pacer.go `ConstantPacer.Pace`, lib/metrics.go `Metrics.Close`):

- One pacer goroutine sleeps until each hit's scheduled time ((n + 1) / rate after the start; when behind schedule
  it sends at once, to catch up) and hands a tick to an idle worker over an unbuffered channel. When every worker is
  busy it starts another one, up to -max-workers (unbounded by default), so a slow response does not delay the
  next send: the arrivals stay open-model as long as workers can be added.
- A hit's latency runs from when its worker takes the tick and stamps the result (`res.Timestamp`, just before
  the request is built and sent) to when the response body has been read (`res.Latency = time.Since(res.Timestamp)`),
  not from the scheduled send time. Coordinated omission is avoided by the pacing above (vegeta's README: "Avoids
  nasty Coordinated Omission"), not corrected for: when the pacer falls behind (-max-workers reached, or the generator
  out of CPU) it blocks on the tick channel and then sends the late hits at once, and the time a hit waited for its
  send is in no latency. The sent rate ("rate") then drops below the offered one, which is how such a run shows.
- The report's "rate" is sent requests / (last send - first send); "throughput" is successful (2xx/3xx) requests /
  (first send to last response), so it includes the wait for the last responses; percentiles are t-digest
  estimates (compression 100), max is exact.

The results leave the bodies out (-max-body=0: each body is still read to its end, not kept), and the attack writes
them to a file that `vegeta report` reads afterwards, so the report takes no CPU from the attack.
"""
from __future__ import annotations

import json
import math
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import RunFailed
from . import tools

PINNED = "v12.13.0"  # scripts/setup's go_tool line; `vegeta -version` prints no version for a `go install` build
SLACK_S = 30  # beyond the attack's duration: start, the last responses (at most the request timeout), the report


@dataclass(frozen=True)
class Attack:
    """One vegeta attack's report. Latencies are vegeta's: from the actual send to the response's last byte."""

    offered_rps: float  # the pacer's rate; 0 for max_rate (vegeta's -rate=0: as fast as the workers go)
    achieved_rps: float  # vegeta's "throughput": successful requests/s, first send to last response
    sent_rps: float  # vegeta's "rate": requests sent/s, first send to last send
    requests: int
    success_ratio: float  # vegeta's "success": 2xx/3xx responses / requests
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    errors: tuple[str, ...] = ()  # vegeta's distinct error messages


def version() -> str:
    """The version scripts/setup built (its stamp beside the binary), "unknown", or "not installed"."""
    try:
        binary = Path(tools.find("vegeta"))
    except tools.ToolMissing:
        return "not installed"
    stamp = binary.parent / ".vegeta.version"
    return stamp.read_text().strip() if stamp.is_file() else "unknown"


def rate_flag(rate: float) -> str:
    """vegeta's -rate value: whole rates as N/1s; others as one hit per interval in ns (its frequency is an int)."""
    if rate <= 0 or not math.isfinite(rate):
        raise ValueError(f"rate must be a positive number of requests per second, not {rate}")
    if rate == int(rate):
        return f"{int(rate)}/1s"
    return f"1/{round(1e9 / rate)}ns"


def attack(url: str, rate: float, duration_s: float, workers: int | None = None, cpus: int | None = None,
           timeout_s: float = 10, pin: list[int] | None = None, max_workers: int | None = None) -> Attack:
    """`GET url` at `rate` requests/s for `duration_s`, keep-alive; `workers` is vegeta's initial worker count (it
    adds more when they are all busy, up to `max_workers`: unbounded by default), `cpus` its GOMAXPROCS (default:
    every core), `pin` the CPUs it runs on."""
    return _run(url, rate_flag(rate), rate, duration_s, workers, max_workers, cpus, timeout_s, pin)


def max_rate(url: str, duration_s: float, cpus: int = 1, workers: int = 64, timeout_s: float = 10,
             pin: list[int] | None = None) -> Attack:
    """vegeta as fast as `workers` workers go (-rate=0 -max-workers=workers) on `cpus` cores (GOMAXPROCS), on the
    CPUs `pin` names when given (taskset): the reference's per-core rate is the result's achieved_rps / cpus. A
    closed model: latencies here are not open-model ones."""
    return _run(url, "0", 0.0, duration_s, workers, workers, cpus, timeout_s, pin)


def _run(url: str, rate: str, offered: float, duration_s: float, workers: int | None, max_workers: int | None,
         cpus: int | None, timeout_s: float, pin: list[int] | None = None) -> Attack:
    binary = tools.find("vegeta")
    argv = [*(["taskset", "-c", ",".join(map(str, pin))] if pin else []), binary,
            *(["-cpus", str(cpus)] if cpus else []), "attack", f"-rate={rate}", f"-duration={duration_s}s",
            f"-timeout={timeout_s}s", "-keepalive=true", "-max-body=0"]
    if workers is not None:
        argv.append(f"-workers={workers}")
    if max_workers is not None:
        argv.append(f"-max-workers={max_workers}")
    with tempfile.TemporaryDirectory(prefix="loadtest-vegeta-") as folder:
        results = Path(folder) / "results.bin"
        argv.append(f"-output={results}")
        _call(argv, f"GET {url}\n", duration_s + SLACK_S, "attack")
        report = _call([binary, "report", "-type=json", str(results)], None, SLACK_S, "report")
    return parse(report, offered)


def _call(argv: list[str], stdin: str | None, timeout_s: float, what: str) -> str:
    try:
        out = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:  # subprocess.run kills the process it started, by PID
        raise RunFailed(f"vegeta {what} did not finish within {timeout_s:.0f} s: {' '.join(argv)}") from None
    if out.returncode != 0:
        raise RunFailed(f"vegeta {what} exited with {out.returncode}: {' '.join(argv)}\n{out.stderr.strip()[:2000]}")
    return out.stdout


def parse(report: str, offered_rps: float) -> Attack:
    """An Attack from `vegeta report -type=json` (durations in ns)."""
    data = json.loads(report)
    if not data["requests"]:
        raise RunFailed("vegeta sent no request")
    latencies = data["latencies"]
    ms = {key: latencies[key] / 1e6 for key in ("mean", "50th", "90th", "99th", "max")}
    return Attack(
        offered_rps=offered_rps, achieved_rps=data["throughput"], sent_rps=data["rate"], requests=data["requests"],
        success_ratio=data["success"], mean_ms=ms["mean"], p50_ms=ms["50th"], p90_ms=ms["90th"],
        p99_ms=ms["99th"], max_ms=ms["max"], errors=tuple(data.get("errors") or ()),
    )

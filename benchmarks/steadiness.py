"""Does each CPU run at one speed throughout, or slow down for stretches? The host check of arrival.py and
generators.py.

    ~/.cache/loadtest/venv/bin/python benchmarks/steadiness.py [--seconds 3]

One process per CPU, pinned there, times the same small piece of Python (about 12 µs) over and over, with nothing
else running (a process in the way would make pieces wait, which reads the same). A piece that takes over SLOW_FACTOR
times the median ran on a slowed CPU; slow pieces less than EPISODE_GAP_S apart are one stretch. On a virtual machine
whose physical cores are busy with other tenants, stretches of tens of ms come several times a second (2026-11-28 on
the project's VM: 6-15 % of the time, the longest 45-180 ms; nginx's work between reading a request and writing its
answer then took 45-50 µs, 5 otherwise). A stretch longer than a late start (verdict.LATE_MS) makes an open-model
generator late whatever its CPU to spare, so benchmarks/arrival.py marks such a run noisy. No assertions: this prints
figures.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from loadtest_shared import checks

from loadtest.errors import RunFailed

CHECK_S = 3.0  # the benchmarks' check before each run
SLOW_FACTOR = 3
EPISODE_GAP_S = 0.002
PIECE_ITERATIONS = 300


@dataclass(frozen=True)
class Steadiness:
    cpu: int
    seconds: float
    slow_share: float  # of the time, in stretches of slow pieces
    longest_ms: float  # the longest stretch

    def __str__(self) -> str:
        return (f"CPU {self.cpu} slow {self.slow_share:.1%} of {self.seconds:g} s, "
                f"longest stretch {self.longest_ms:.1f} ms")


def stretches(pieces: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(start, end) of each stretch of slow pieces, from the pieces' (start, duration)."""
    durations = sorted(duration for _, duration in pieces)
    slow_from = SLOW_FACTOR * durations[len(durations) // 2]
    found: list[list[float]] = []
    for start, duration in pieces:
        if duration > slow_from:
            if found and start - found[-1][1] < EPISODE_GAP_S:
                found[-1][1] = start + duration
            else:
                found.append([start, start + duration])
    return [(start, end) for start, end in found]


def summary(cpu: int, seconds: float, pieces: list[tuple[float, float]]) -> Steadiness:
    """The share of the pieces' whole span in stretches (the last piece may end past `seconds`), and the longest."""
    found = stretches(pieces)
    span = max(start + duration for start, duration in pieces) - min(start for start, _ in pieces)
    return Steadiness(cpu, seconds, sum(end - start for start, end in found) / span,
                      max((end - start for start, end in found), default=0.0) * 1000)


def slowest_ms(readings) -> float:
    """The longest stretch of any of `readings` (0 for none)."""
    return max((reading.longest_ms for reading in readings), default=0.0)


def _piece() -> int:
    total = 0
    for i in range(PIECE_ITERATIONS):
        total += i * i
    return total


def probe(cpu: int, seconds: float) -> Steadiness:
    """Time pieces on `cpu` for `seconds` (in a process of its own: it pins itself)."""
    os.sched_setaffinity(0, {cpu})
    clock, pieces = time.perf_counter, []
    end = clock() + seconds
    while (start := clock()) < end:
        _piece()
        pieces.append((start, clock() - start))
    return summary(cpu, seconds, pieces)


def measure(cpus: list[int], seconds: float = CHECK_S) -> list[Steadiness]:
    """Every CPU in `cpus` at once, each by a process of its own (this script with --one-cpu: a fresh interpreter,
    where a fork of the caller could inherit its locks, and gevent's patches in a Locust test)."""
    probes = [subprocess.Popen([sys.executable, __file__, "--one-cpu", str(cpu), "--seconds", str(seconds)],
                               stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL) for cpu in cpus]
    try:
        outputs = [p.communicate(timeout=seconds + 60)[0] for p in probes]
    except subprocess.TimeoutExpired:
        for p in probes:
            p.kill()
        raise RunFailed(f"the steadiness probe did not end within {seconds + 60:g} s") from None
    if failed := [cpu for cpu, p in zip(cpus, probes) if p.returncode != 0]:
        raise RunFailed(f"the steadiness probe failed on CPU(s) {failed}")
    return [Steadiness(**json.loads(output)) for output in outputs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=CHECK_S,
                        help=f"seconds per CPU, all CPUs at once (default {CHECK_S:g})")
    parser.add_argument("--one-cpu", type=int, metavar="CPU", help="probe this CPU only, its figures as JSON")
    args = parser.parse_args(argv)
    if not 0.1 <= args.seconds <= 600:
        parser.error("--seconds must be 0.1..600")
    if args.one_cpu is not None:
        if args.one_cpu not in os.sched_getaffinity(0):
            parser.error(f"--one-cpu {args.one_cpu}: not a CPU this process may run on")
        print(json.dumps(asdict(probe(args.one_cpu, args.seconds))))
        return 0
    try:
        for steadiness in measure(sorted(os.sched_getaffinity(0)), args.seconds):
            print(steadiness)
    except RunFailed as e:
        print(f"steadiness: {e}", file=sys.stderr)
        return checks.RUN_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())

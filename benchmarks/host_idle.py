"""The host's idle CPUs while a benchmark runs: they poll a moment before they halt, as on a host tuned for
benchmarks. arrival.py and generators.py set it for their run; this prints what the host does now.

    ~/.cache/loadtest/venv/bin/python benchmarks/host_idle.py

Why: the benchmarks run their nginx on the generator's own VM (CPU 0). On a KVM guest whose idle CPUs halt at once
(cpuidle-haltpoll with haltpoll.guest_halt_poll_ns=0, as this project's VM boots), waking a halted vCPU costs the
waker an exit to the hypervisor. An open-model generator paced below its ceiling leaves nginx's CPU idle between
requests, so each of its sends wakes it: at 20,000/s a quarter of the generator's core went to that wake-up, 12.5 µs
a request inside send(), more than Locust's own work a request (perf on the generator's CPU, 2026-12-07). A
closed-model generator keeps nginx busy and pays almost none of it, and on EKS the target runs on another node, its
wake-ups its host's. So for a benchmark's time an idle CPU polls POLL_NS before it halts (the kernel's default for
cpuidle-haltpoll), as pyperf's `system tune` sets a benchmark host's CPU frequency, and gets its setting back when
the benchmark ends, however it ends (SIGTERM too). `--host-as-is` on either benchmark measures the host as it is.
No assertions: this prints the setting.
"""
from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

PARAMETER = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
POLL_NS = 200_000


def current(parameter: Path = PARAMETER) -> int | None:
    """How long an idle CPU polls before it halts, ns; None without cpuidle-haltpoll (idle CPUs as the kernel's
    other idle drivers have them)."""
    try:
        return int(parameter.read_text().strip())
    except (OSError, ValueError):
        return None


def describe(poll_ns: int | None) -> str:
    if poll_ns is None:
        return "idle CPUs as the host's idle driver has them (no cpuidle-haltpoll here)"
    if poll_ns == 0:
        return "idle CPUs halt at once (haltpoll.guest_halt_poll_ns 0): a send that wakes one pays the hypervisor"
    return f"idle CPUs poll {poll_ns / 1000:g} µs before they halt (haltpoll.guest_halt_poll_ns)"


@contextlib.contextmanager
def polling(parameter: Path = PARAMETER, poll_ns: int = POLL_NS) -> Iterator[str]:
    """Idle CPUs poll at least `poll_ns` before they halt while the block runs, the host's setting back after it;
    yields what the benchmark runs with, in words, for its output."""
    before = current(parameter)
    if before is None or before >= poll_ns:
        yield describe(before)
        return
    try:
        parameter.write_text(str(poll_ns))
    except OSError as e:
        yield f"{describe(before)}; not changed ({e.strerror}: run the benchmark as root for figures of the generator)"
        return
    # A SIGTERM would end the process without the finally below, leaving the host's CPUs polling.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        yield (f"{describe(poll_ns)}, set for this benchmark (the host's {before} ns back at its end: "
               "benchmarks/host_idle.py)")
    finally:
        parameter.write_text(str(before))
        signal.signal(signal.SIGTERM, previous)


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host-as-is", action="store_true",
                        help=f"leave the host's idle CPUs as they are (by default they poll {POLL_NS // 1000} µs "
                             "before they halt for the benchmark's time, so that waking the target's CPU is not "
                             "charged to the generator: benchmarks/host_idle.py)")


def for_benchmark(host_as_is: bool) -> contextlib.AbstractContextManager[str]:
    """What a benchmark runs in: polling(), or the host as it is with --host-as-is."""
    return contextlib.nullcontext(f"{describe(current())} (--host-as-is)") if host_as_is else polling()


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print(describe(current()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

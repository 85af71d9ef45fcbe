"""What a load test on this machine can hold: a size no machine of its cores and memory holds is refused, naming the
option and the most it takes; a legal size that surely measures the generator, not the target, gets a warning.

The local run and the local sweep ask it before anything starts (a sweep for its biggest step), so a typo such as
--users 100000000 ends in a sentence, not in a machine swapping for an hour.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError

# A Locust user's memory, at least: the open model's pool measured 17-23 MiB per 1,000 users, a user without a
# connection (docs/open-model.md, "Per core": the process's peak resident set over its pool, nine runs on 2026-11-28);
# a user of the closed model holds a connection too. The lower figure: only what surely cannot fit is refused.
USER_MEMORY_KIB = 17
# Workers beyond this many a core only take turns on them (a worker wants a whole core: docs/sizing.md); more than a
# core each is legal but measures the machine's scheduler, so it gets a warning.
MAX_WORKERS_PER_CORE = 4


@dataclass(frozen=True)
class Machine:
    cores: int
    memory_mi: int

    def describe(self) -> str:
        return f"{self.cores} core(s) and {self.memory_mi / 1024:.1f} GiB"


def check(machine: Machine, workers: int, users: int, workers_option: str = "--workers",
          users_option: str = "--users") -> list[str]:
    """Refuse `workers` and `users` this machine cannot hold (UsageError naming the option and the most it takes);
    return the warnings for a size it holds but that surely measures the generator."""
    most_workers = MAX_WORKERS_PER_CORE * machine.cores
    if workers > most_workers:
        raise UsageError(f"{workers_option} {workers:,}: this machine has {machine.cores} core(s), and more than "
                         f"{MAX_WORKERS_PER_CORE} workers a core only take turns on them; give at most {most_workers} "
                         f"(one a core, {machine.cores}, measures best)")
    most_users = machine.memory_mi * 1024 // USER_MEMORY_KIB
    if users > most_users:
        raise UsageError(f"{users_option} {users:,}: at least {USER_MEMORY_KIB} KiB a Locust user needs "
                         f"{users * USER_MEMORY_KIB / 1024 ** 2:,.1f} GiB, more than this machine's "
                         f"{machine.memory_mi / 1024:.1f} GiB; give at most {most_users:,}")
    if workers > machine.cores:
        return [f"{workers_option} {workers}: more workers than this machine's {machine.cores} core(s) share them and "
                "wait on each other; the verdict will likely say generator-bound (one a core measures best)"]
    return []


def check_rate(machine: Machine, rate: float, per_core: float | None, scenario: str,
               rate_option: str = "--arrival-rate") -> list[str]:
    """A warning where the offered rate is far beyond what the machine's cores send of the scenario (its calibrated
    figure per core in the open model; None for a test of the user's, which has none)."""
    if per_core is None or rate <= 2 * per_core * machine.cores:
        return []
    return [f"{rate_option} {rate:,.0f}: {machine.cores} core(s) send about {per_core * machine.cores:,.0f} requests/s "
            f"of {scenario} in the open model (its calibrated figure per core): the run will measure the generator, "
            "not the target"]

"""A sweep's plan: what its steps raise, how long each warms up and holds, and the arithmetic of exact windows.

Closed model (users, workers, target-cpus): each step runs a number of users, each sending once its answer came. Open
model (arrival-rate): each step offers a number of requests per second, sent on a fixed schedule whatever the target
does (loadtest.workload.arrival), from a pool of users the rate sizes; its latency counts from each request's slot.

Pure: the runtime's sweeper (loadtest.runtime.sweeper) runs the plan against the local stack or a release.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from loadtest_shared import settings

from ..errors import UsageError
from . import arrival

# What a sweep raises, and how the report names it.
KINDS = {"users": "users", "workers": "workers", "target-cpus": "target CPUs", "arrival-rate": "arrival rate"}
# The open model's sweep: each step's load is the requests per second offered, all workers together.
ARRIVAL_RATE = "arrival-rate"
USERS_PER_WORKER = 50  # the default of workers and target-cpus sweeps
# Locust workers send their request counts to the master in batches this far apart (locust.runners), and with them
# the CPU they used since the last (loadtest_metrics): a worker started for a step is measured within its warm-up.
WORKER_REPORT_MS = 3000
# Two report periods: the first report after a step's change may still carry the previous step's requests and CPU,
# the second is the step's own. (The window's percentiles come from the response-time counts at its edges, not from
# Locust's rolling 10 s percentiles, which once set a 10 s floor.)
MIN_WARMUP_S = 2 * WORKER_REPORT_MS // 1000


class SweepError(UsageError):
    """A sweep that cannot be run as asked: the message names the option."""


@dataclass(frozen=True)
class Spec:
    kind: str  # a key of KINDS
    loads: list[int]
    warmup_s: int
    hold_s: int
    users_per_worker: int  # users of a workers or target-cpus sweep: this times the workers
    spawn_rate: float  # users started per second; 0: all at once
    p99_bound_ms: float | None = None  # a step whose p99 is above it is the knee (--max-p99); None: no bound

    @property
    def open_model(self) -> bool:
        """Each step offers a rate of requests (arrival-rate) rather than a number of users."""
        return self.kind == ARRIVAL_RATE

    def __post_init__(self):
        if self.kind not in KINDS:
            raise SweepError(f"--sweep {self.kind!r}: one of {', '.join(KINDS)}")
        if not self.loads or any(n < 1 for n in self.loads):
            raise SweepError("--steps: positive whole numbers, e.g. 50,100,200")
        if any(b <= a for a, b in zip(self.loads, self.loads[1:])):
            raise SweepError(f"--steps {','.join(map(str, self.loads))}: each step must be above the one before")
        if self.warmup_s < MIN_WARMUP_S:
            raise SweepError(f"--warmup {self.warmup_s}s: at least {MIN_WARMUP_S}s, two of the workers' "
                             f"{WORKER_REPORT_MS / 1000:g} s reports, or the window would count the previous step's")
        if self.hold_s < 1 or self.users_per_worker < 1 or self.spawn_rate < 0:
            raise SweepError("--hold and --users-per-worker must be positive, --spawn-rate not negative")

    def users(self, load: int, workers: int) -> int:
        """Users of a step: the load itself, users per worker times the workers, or the open model's pool."""
        if self.open_model:
            return arrival.pool_size(load, workers)
        return load if self.kind == "users" else self.users_per_worker * workers


def check_open_model(*, users_per_worker: int | None, wait_s: float, release: str | None) -> None:
    """Refuse what an arrival-rate sweep cannot take: a user count (the rate sizes the pool), think time (the rate
    sets when each request goes), or a release (its rate is a chart value; each step would be a helm upgrade)."""
    if release:
        raise SweepError(f"--sweep {ARRIVAL_RATE} with --release: a release's rate is its chart value, and a sweep "
                         f"cannot change it yet. Run it here with --local, or step by hand: for each rate N, "
                         f"loadtest run --release {release} --arrival-rate N (it sets the release's "
                         "locust.load.arrivalRate by helm upgrade, and back after the run)")
    given = {settings.ARRIVAL_RATE: True, settings.USERS: users_per_worker is not None, settings.WAIT: wait_s}
    if why := settings.refusal(given, {settings.ARRIVAL_RATE: f"--sweep {ARRIVAL_RATE}",
                                       settings.USERS: "--users-per-worker"}):
        raise SweepError(why)


def parse_steps(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SweepError(f"--steps {text!r}: whole numbers separated by commas, e.g. 50,100,200") from None


def window_range(seconds: float) -> str:
    """A PromQL range of `seconds`, in whole milliseconds."""
    return f"{max(1, round(seconds * 1000))}ms"


def measured_window(hold_s: int, scrape_s: float) -> int:
    """Check the hold against the two clocks a window must hold whole periods of: a worker's stats report (its
    requests reach the master in 3 s batches) and Prometheus' scrape. Then each edge of the window sits at the same
    point of both cycles, and with its edges away from the reports (window_end) the count over it is whole batches:
    exact, where a window cutting batches is off by up to one batch per edge (half the requests of a 6 s window)."""
    period_ms = math.lcm(WORKER_REPORT_MS, round(scrape_s * 1000))
    if (hold_s * 1000) % period_ms:
        whole = -(-hold_s * 1000 // period_ms) * period_ms // 1000
        raise SweepError(f"--hold {hold_s}s: use a multiple of {period_ms / 1000:g} s (Locust workers report every "
                         f"{WORKER_REPORT_MS / 1000:g} s and Prometheus scrapes every {scrape_s:g} s), e.g. "
                         f"--hold {whole}s")
    return hold_s


def places_edges(scrape_s: float) -> bool:
    """Whether scrapes come often enough for window_end: an edge a scrape away from every report on both sides needs
    a report period of more than two scrapes (with EKS' 15 s scrapes every scrape is beside a report)."""
    return 2 * scrape_s < WORKER_REPORT_MS / 1000


def measuring_s(hold_s: int, scrape_s: float) -> float:
    """How long a step measures: its hold and a scrape (the window's whole scrapes fit inside) and, where window_end
    places the window, one report period and a scrape more for the scrapes it chooses from."""
    return hold_s + scrape_s + (WORKER_REPORT_MS / 1000 + scrape_s if places_edges(scrape_s) else 0)


def window_end(stamps: list[float], landings: list[set[float]], hold_s: int, scrape_s: float) -> float | None:
    """The scrape to end a measured window at: of the scrapes `stamps` (times, ascending), the latest whose window
    (it and the scrape hold_s before) has the fewest edges beside a worker's report. `landings` holds, per worker, the
    scrapes that first showed one of its reports (its count rose since the scrape before).

    A window whose edge falls where a report lands counts that report's batch, or not, by a few milliseconds of
    jitter: a 3 s window then held no report at all, or two (0 RPS, or double). An edge a scrape away from any
    report on either side keeps the count to whole batches. The last scrape is never chosen: what lands after it is
    not known yet. None when no scrape has a window before it, or scrapes are too far apart (places_edges)."""
    if not places_edges(scrape_s):
        return None
    index = {stamp: i for i, stamp in enumerate(stamps)}

    def beside_a_report(i: int) -> int:
        return sum(stamps[i] in landed or stamps[i + 1] in landed for landed in landings)

    best = None
    for i in range(len(stamps) - 1):
        start = min(stamps, key=lambda stamp: abs(stamp - (stamps[i] - hold_s)))
        j = index[start]
        if abs(start - (stamps[i] - hold_s)) > scrape_s / 2 or j == 0:
            continue
        risk = beside_a_report(i) + beside_a_report(j)
        if best is None or risk <= best[0]:
            best = (risk, stamps[i])
    return None if best is None else best[1]

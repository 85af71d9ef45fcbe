"""What to change next on a running release, and why: the seed's tuning loop as one decision.

A run's steady window says which side limits it (loadtest.judging.verdict). The seed's story goes on from there: workers
at 100m plateau throttled while the nodes are 40 % requested, so give each a whole core and as many as the nodes hold
(loadtest.capacity.sizing); whole workers at their core on full nodes need more nodes; a target at its CPU means the
generator is fine and the target is measured, at more CPUs next; neither saturated means more users, where the
target's CPU is measured (where it is not, its headroom is unmeasured: measure it first). Lost workers and a target
that failed or went silent measured nothing: find why first. Pending workers come before any of it: until they run,
the load is spread over fewer workers than planned. One diagnosis a cause of the verdict (ADVICE).

The monitoring chart's rule `loadtest:advice` draws the same diagnosis for the dashboards, written from ADVICE and the
verdict's causes (tests/chart/test_one_verdict_rules.py holds both to one table); this module adds what Prometheus
cannot know: how many workers the nodes hold, how many nodes to add and what they cost.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from loadtest_shared import results, verdict

from .. import units
from ..capacity import catalog, sizing

# The diagnoses, as the rule's `advice` label names them.
WORKERS_PENDING = "workers-pending"
WORKERS_LOST = "workers-lost"  # the window ran with fewer workers than asked for: find why, run again
TARGET_NOT_SERVING = "target-not-serving"  # the target failed or stopped answering: no capacity was measured
WHOLE_CORE = "give-workers-a-whole-core"
MORE_GENERATOR = "add-workers-or-nodes"
SWEEP_TARGET = "sweep-target-cpus"
RAISE_USERS = "raise-users"
MEASURE_TARGET = "measure-target"  # the target's CPU unmeasured: only the generator's headroom is known
CHECK_SCHEDULE = "check-the-schedule"  # the open model's rate not offered, neither side saturated
IDLE = "start-a-swarm"  # no steady window: nothing to judge (no rule series either)

# The window tune judges is the rules' (monitoring.rules.windowSeconds, the rule's range `[1m]` as the chart renders
# it): the last window's steady samples. A release whose chart has no such value judges the minute.
DEFAULT_WINDOW_S = 60
# More workers for saturated ones: enough that the busiest would sit at this share of its core, room for the rate to
# grow by a third before it saturates again.
GENERATOR_AIM = 0.75
# More users for a healthy run: at most this factor at once (CPU grows less than linearly at low load, so a bigger
# jump could overshoot the knee the next window should show).
MAX_USERS_FACTOR = 4
# Cluster pods the sizing places in every way (its worst placement is exponential in their count); beyond, the pods
# are counted where they run now.
MAX_PLACED_PODS = 8


def window_s(values: dict) -> int:
    """The release's rules window in seconds, from its values (helm get values --all)."""
    window = ((values.get("monitoring") or {}).get("rules") or {}).get("windowSeconds")
    return int(window) if window else DEFAULT_WINDOW_S


@dataclass(frozen=True)
class NodeGroup:
    """The nodes the workers may run on, as the cluster shows them."""

    shape: sizing.NodeShape  # the smallest of them
    nodes: int
    daemonsets: tuple[sizing.PodRequest, ...]  # on every node
    cluster_pods: tuple[sizing.PodRequest, ...]  # what else may land among the workers (add-ons, other pods)
    master: sizing.PodRequest  # the release's master
    free_now_m: tuple[int, ...] = ()  # each node's CPU left for workers where every other pod runs now
    node_type: str | None = None  # the catalog's instance type, when the nodes are one

    @property
    def price_usd_hour(self) -> float | None:
        return catalog.INSTANCES[self.node_type].price_usd_hour if self.node_type in catalog.INSTANCES else None

    def holds(self, worker_cpu_m: int, worker_memory_mi: int, nodes: int | None = None) -> int:
        """Workers of this size that schedule on `nodes` such nodes whatever node the other pods land on (the
        sizing's worst placement); with too many pods to place every way, where they run now."""
        nodes = nodes or self.nodes
        singles = sum(p.replicas for p in self.cluster_pods)
        if singles > MAX_PLACED_PODS:
            empty = max(0, self.shape.allocatable_cpu_m - sum(d.cpu_m for d in self.daemonsets))
            return sum(free // worker_cpu_m for free in self.free_now_m) + (nodes - self.nodes) * (empty // worker_cpu_m)
        try:
            plan = sizing.plan_workers(self.shape, nodes, worker_cpu_m=worker_cpu_m,
                                       worker_memory_mi=worker_memory_mi, daemonsets=self.daemonsets,
                                       cluster_pods=self.cluster_pods, master=self.master)
        except sizing.SizingError:
            return 0
        return plan.replicas

    def nodes_for(self, workers: int, worker_cpu_m: int, worker_memory_mi: int, most: int = 100) -> int | None:
        """The fewest nodes that hold `workers` (None beyond `most`)."""
        return next((n for n in range(self.nodes, most + 1)
                     if self.holds(worker_cpu_m, worker_memory_mi, n) >= workers), None)

    def describe(self) -> str:
        kind = self.node_type or self.shape.name
        return (f"{self.nodes} x {kind} ({self.shape.allocatable_cpu_m}m allocatable CPU each; on every node "
                f"{sum(d.cpu_m for d in self.daemonsets)}m of DaemonSets; among them "
                f"{sum(p.cpu_m * p.replicas for p in self.cluster_pods) + self.master.cpu_m}m of other pods, the "
                f"master's {self.master.cpu_m}m included)")


@dataclass(frozen=True)
class Snapshot:
    """What a release shows: its values, its pods and nodes, and its last steady window in Prometheus."""

    release: str
    mode: str  # locust.mode: interactive or autostart
    worker_cpu_m: int
    worker_memory_mi: int
    replicas: int  # locust.worker.replicas
    pending: int  # worker pods the scheduler could not place
    users: int  # users running now (the window's most)
    rps: float | None = None
    fail_ratio: float | None = None
    p95_ms: float | None = None
    window: verdict.Window | None = None  # None: no steady sample in the window
    group: NodeGroup | None = None  # None: the nodes could not be read
    no_window: str | None = None  # why there is no steady window, when there is none
    arrival_rate: float | None = None  # locust.load.arrivalRate (the open model); None in the closed model
    window_s: int = DEFAULT_WINDOW_S  # the window judged: the release's rules window


@dataclass(frozen=True)
class Advice:
    diagnosis: str  # one of DIAGNOSES, or IDLE
    summary: str  # one sentence
    figures: tuple[str, ...] = ()  # the figures behind it
    changes: dict[str, str] = field(default_factory=dict)  # helm --set path -> value ({}: no values change)
    current: dict[str, str] = field(default_factory=dict)  # the same paths' values now
    nodes_to_add: int = 0
    usd_per_hour: float | None = None  # what the added nodes cost
    next_step: str | None = None  # what to do where no values change does it


def _fill(snapshot: Snapshot, cpu_m: int) -> tuple[int, list[str]]:
    """Workers of `cpu_m` the nodes hold, and the arithmetic in words."""
    group = snapshot.group
    if group is None:
        # Without the nodes: the CPU the workers request now, in whole cores.
        count = max(1, snapshot.replicas * snapshot.worker_cpu_m // cpu_m)
        return count, [f"the nodes could not be read: {count} worker(s) request the CPU the {snapshot.replicas} "
                       "request now"]
    count = group.holds(cpu_m, snapshot.worker_memory_mi)
    return count, [f"the worker nodes: {group.describe()}",
                   f"they hold {count} worker(s) at {units.cpu(cpu_m)} in every placement of the other pods "
                   "(loadtest size's arithmetic)"]


def _add_nodes(snapshot: Snapshot, workers: int) -> tuple[int, float | None, str]:
    """Nodes to add for `workers` workers at the current size, their cost per hour, and the words for it."""
    group = snapshot.group
    if group is None:
        return 0, None, f"make room for {workers} worker(s) at {units.cpu(snapshot.worker_cpu_m)}"
    total = group.nodes_for(workers, snapshot.worker_cpu_m, snapshot.worker_memory_mi)
    if total is None:
        return 0, None, (f"{workers} worker(s) need more than 100 {group.node_type or group.shape.name} nodes: "
                         "choose a bigger node type")
    add = total - group.nodes
    price = group.price_usd_hour
    cost = None if price is None else round(add * price, 3)
    priced = (f" (+{cost:.3f} USD/h on demand, {add} x {price} USD/h)" if cost is not None
              else " (their price is not in the catalog: the nodes are no EC2 type it knows)")
    return add, cost, f"add {add} node(s) to the worker node group, {total} in all{priced}"


def advise(s: Snapshot) -> Advice:
    """The one diagnosis and the one change for this snapshot (see the module's docstring for the order)."""
    if s.pending:
        return _pending(s)
    w = s.window
    if w is None or not s.users:
        return Advice(IDLE, f"no steady window of {s.window_s} s to judge ({s.no_window or 'no users running'})",
                      next_step="start the swarm (the web UI, `loadtest run --release`, or locust.mode autostart) "
                                f"and run tune again once every user has run for {s.window_s} s")
    v = verdict.judge(w)
    figures = (f"steady window: {w.samples} sample(s), {s.users} users, "
               + (f"{s.rps:,.0f} RPS" if s.rps is not None else "RPS unknown")
               + (f", p95 {s.p95_ms:.0f} ms" if s.p95_ms is not None else ""),
               f"verdict {v.kind}: {w.figures()}")
    return ADVICE[v.cause].advise(s, w, v, figures)


def _no_sample(s: Snapshot, w: verdict.Window, v: verdict.Verdict, figures: tuple[str, ...]) -> Advice:
    return Advice(IDLE, f"no steady sample of the workers' CPU in the last {s.window_s} s: nothing to judge",
                  figures, next_step="check that the workers report their CPU (locust_worker_cpu_usage_cores in the "
                                     "release's Prometheus) and run tune again")


def _generator(s: Snapshot, w: verdict.Window, v: verdict.Verdict, figures: tuple[str, ...]) -> Advice:
    throttled = w.worker_throttling is not None and w.worker_throttling >= verdict.THROTTLED
    if throttled or s.worker_cpu_m < sizing.WORKER_CPU_M:
        return _whole_core(s, w, throttled, figures)
    return _more_generator(s, w, figures)


def _sweep_target(s: Snapshot, w: verdict.Window, v: verdict.Verdict, figures: tuple[str, ...]) -> Advice:
    return Advice(
        SWEEP_TARGET,
        "the target is saturated while the workers have headroom: this RPS is the target's capacity at its CPU "
        "count, and more workers would not change it",
        figures,
        next_step=f"measure the target at more CPUs: `loadtest sweep --release {s.release} --sweep target-cpus "
                  "--steps 1,2,4 ...` (docs/sizing.md, \"Sweep\")")


def _more_load(s: Snapshot, w: verdict.Window, v: verdict.Verdict, figures: tuple[str, ...]) -> Advice:
    busiest = max(w.busiest_worker, w.target_cpu)
    factor = min(MAX_USERS_FACTOR, verdict.SATURATED_CPU / busiest) if busiest > 0 else MAX_USERS_FACTOR
    return _raise_rate(s, w, factor, figures) if s.arrival_rate else _raise_users(s, w, factor, figures)


def _workers_lost(s: Snapshot, w: verdict.Window, v: verdict.Verdict, figures: tuple[str, ...]) -> Advice:
    """Workers lost in the window: it ran with less load than asked for, so nothing in it is the target's; no size
    change is advised until the workers stay."""
    return Advice(
        WORKERS_LOST,
        f"the generator lost workers in the window ({'; '.join(w.losses)}): it ran with less load than asked for, "
        "so its RPS and latency are not the target's at this load",
        figures,
        next_step=f"find why they went (`kubectl describe pod` on the release's workers: OOMKilled wants more "
                  f"locust.worker.memory than {s.worker_memory_mi}Mi, Evicted or a node gone wants room or a steadier "
                  "node group), then run tune again once the workers stay")


def _target_not_serving(s: Snapshot, w: verdict.Window, v: verdict.Verdict, figures: tuple[str, ...]) -> Advice:
    """The target failed or went silent: the window measured no capacity, and no generator change would."""
    return Advice(
        TARGET_NOT_SERVING,
        "the target did not serve this load (failing or silent): no capacity was measured, and no change to the "
        f"generator would measure one; {v.reason}",
        figures,
        next_step="read its failures (the web UI's Failures tab, stats_failures.csv) and its logs; if it serves a "
                  f"smaller load, find where it stops: `loadtest sweep --release {s.release} --sweep users --steps "
                  "...` (docs/sizing.md, \"Sweep\")")


def _check_schedule(s: Snapshot, w: verdict.Window, v: verdict.Verdict, figures: tuple[str, ...]) -> Advice:
    """The open model's rate not sent with neither side saturated: no load or size change helps; the verdict's
    reason says whether the slots or the task fell short."""
    return Advice(
        CHECK_SCHEDULE,
        f"the rate was not offered ({w.achieved:.1%} of {s.arrival_rate or 0:g} requests/s sent) though neither side "
        "is saturated and every slot started on time: the generator's schedule or task fell short, not the target",
        figures,
        next_step="check that every worker runs and got its share of the rate (the web UI's workers, "
                  "locust_worker_arrival_slots_total by worker) and that the task sends one request in every slot; "
                  f"the verdict says which: {v.reason}")


def _measure_target(s: Snapshot, w: verdict.Window, v: verdict.Verdict, figures: tuple[str, ...]) -> Advice:
    """The generator has headroom and the target's CPU is unmeasured: more load is not advised on the workers' CPU
    alone (the target may be at its limit already); measure the target first."""
    return Advice(
        MEASURE_TARGET,
        f"the workers have headroom (busiest {w.busiest_worker:.0%} of its CPU ceiling) but the target's CPU is not "
        "measured: whether it has headroom is unmeasured, so this RPS is a floor of its capacity and no more load "
        "is advised from the workers' CPU alone",
        figures,
        next_step="measure the target: load the release's own target (locust.target), or give the target's pod a "
                  "CPU limit so cAdvisor and kube-state-metrics show its share of it, then run tune again")


def _pending(s: Snapshot) -> Advice:
    """Worker pods the nodes have no room for: ask for those that fit, or add nodes."""
    running = s.replicas - s.pending
    fit, lines = _fill(s, s.worker_cpu_m)
    fit = min(fit, s.replicas)
    add, cost, words = _add_nodes(s, s.replicas)
    return Advice(
        WORKERS_PENDING,
        f"{s.pending} of {s.replicas} worker pods are Pending: the nodes have no room for them, so the load runs "
        f"on {running}; ask for the {fit} that fit, or {words}",
        (*lines,), {"locust.worker.replicas": str(fit)}, {"locust.worker.replicas": str(s.replicas)},
        nodes_to_add=add, usd_per_hour=cost)


def _whole_core(s: Snapshot, w: verdict.Window, throttled: bool, figures: tuple[str, ...]) -> Advice:
    """Workers starved by a CPU limit below a core: give each a whole core, as many as the nodes hold."""
    cpu = units.cpu
    fit, lines = _fill(s, sizing.WORKER_CPU_M)
    why = (f"throttled in {w.worker_throttling:.0%} of their CFS periods" if throttled
           else f"at {w.busiest_worker:.0%} of a {cpu(s.worker_cpu_m)} ceiling")
    if fit == 0:
        add, cost, words = _add_nodes(replace(s, worker_cpu_m=sizing.WORKER_CPU_M), 1)
        return Advice(WHOLE_CORE, f"the workers are CPU-starved ({why}) and no {cpu(sizing.WORKER_CPU_M)} "
                                  f"worker fits the nodes beside the other pods: {words}",
                      (*figures, *lines), nodes_to_add=add, usd_per_hour=cost)
    return Advice(
        WHOLE_CORE,
        f"the workers are CPU-starved ({why}): a worker uses up to one core, and a thinner one plateaus "
        f"early; give each {cpu(sizing.WORKER_CPU_M)} and run as many as the nodes hold ({fit})",
        (*figures, *lines),
        {"locust.worker.cpu": cpu(sizing.WORKER_CPU_M), "locust.worker.replicas": str(fit)},
        {"locust.worker.cpu": cpu(s.worker_cpu_m), "locust.worker.replicas": str(s.replicas)})


def _more_generator(s: Snapshot, w: verdict.Window, figures: tuple[str, ...]) -> Advice:
    """Workers at their whole core: run as many as the nodes hold, or add nodes for more."""
    fit, lines = _fill(s, s.worker_cpu_m)
    if fit > s.replicas:
        return Advice(
            MORE_GENERATOR,
            f"the workers are at their core ({w.busiest_worker:.0%}) and the nodes have room: run the {fit} "
            "workers they hold",
            (*figures, *lines), {"locust.worker.replicas": str(fit)},
            {"locust.worker.replicas": str(s.replicas)})
    wanted = max(s.replicas + 1, math.ceil(s.replicas * w.busiest_worker / GENERATOR_AIM))
    add, cost, words = _add_nodes(s, wanted)
    return Advice(
        MORE_GENERATOR,
        f"the workers are at their core ({w.busiest_worker:.0%}) and the nodes are full ({s.replicas} workers): "
        f"{wanted} workers would sit at about {GENERATOR_AIM:.0%} of theirs; {words}, then set "
        f"locust.worker.replicas={wanted} and run tune again",
        (*figures, *lines), nodes_to_add=add, usd_per_hour=cost)


def _raise_users(s: Snapshot, w: verdict.Window, factor: float, figures: tuple[str, ...]) -> Advice:
    """Neither side saturated in the closed model: more users, by as much as the busier side has room for."""
    users = max(s.users + 1, math.ceil(s.users * factor))
    expected = f", about {s.rps / s.users * users:,.0f} RPS at {s.rps / s.users:,.1f} RPS a user" if s.rps else ""
    summary = (f"neither side is saturated (busiest worker {w.busiest_worker:.0%}"
               + (f", target {w.target_cpu:.0%}" if w.target_cpu is not None else "")
               + f" of its CPU): raise the users from {s.users} to {users}{expected}")
    if s.mode == "autostart":
        return Advice(RAISE_USERS, summary, figures, {"locust.autostart.users": str(users)},
                      {"locust.autostart.users": str(s.users)})
    return Advice(RAISE_USERS, summary, figures,
                  next_step=f"start the swarm with {users} users: the web UI, or `loadtest run --release "
                            f"{s.release} --users {users}`")


def _raise_rate(s: Snapshot, w: verdict.Window, factor: float, figures: tuple[str, ...]) -> Advice:
    """The open model's load is its rate (locust.load.arrivalRate, which sizes its own pool of users): raise it."""
    rate = max(math.floor(s.arrival_rate) + 1, math.ceil(s.arrival_rate * factor))
    summary = (f"neither side is saturated (busiest worker {w.busiest_worker:.0%}"
               + (f", target {w.target_cpu:.0%}" if w.target_cpu is not None else "")
               + f" of its CPU): raise the arrival rate from {s.arrival_rate:g} to {rate} requests/s")
    changes, current = {"locust.load.arrivalRate": str(rate)}, {"locust.load.arrivalRate": f"{s.arrival_rate:g}"}
    if s.mode == "autostart":
        return Advice(RAISE_USERS, summary, figures, changes, current)
    return Advice(RAISE_USERS, summary, figures,
                  next_step=f"the rate is a value of the release, not the web UI's (its user count is the pool): "
                            f"`helm upgrade {s.release} charts/loadtest --reuse-values --set "
                            f"locust.load.arrivalRate={rate}`, then start the swarm again")


@dataclass(frozen=True)
class CauseAdvice:
    """What tune advises for one of the verdict's causes: the function that writes it, and the diagnoses it may
    give, each with the PromQL that narrows the cause's window to it in the rules ("" where the cause has one)."""

    advise: Callable[[Snapshot, verdict.Window, verdict.Verdict, tuple[str, ...]], Advice]
    diagnoses: tuple[tuple[str, str], ...]


# Workers whose CPU limit holds them back (throttled, or below a core): _generator reads it from the snapshot, the
# rules from this record.
_STARVED = "loadtest:workers_starved:bool == 1"
# The advice for each of the verdict's causes (loadtest_shared.verdict.CAUSES, in the judge's order): advise() follows
# the cause the judge names, and the rules' `loadtest:advice` is written from this table by `loadtest values`
# (judging/rules.py). A cause with no diagnosis in the rules (no sample: nothing judged) gives no series there.
ADVICE = {
    "no-sample": CauseAdvice(_no_sample, ()),
    "lost-workers": CauseAdvice(_workers_lost, ((WORKERS_LOST, ""),)),
    "target-silent": CauseAdvice(_target_not_serving, ((TARGET_NOT_SERVING, ""),)),
    "target-failing": CauseAdvice(_target_not_serving, ((TARGET_NOT_SERVING, ""),)),
    "generator": CauseAdvice(_generator, ((WHOLE_CORE, f"and on (release) {_STARVED}"),
                                          (MORE_GENERATOR, f"unless on (release) {_STARVED}"))),
    "target": CauseAdvice(_sweep_target, ((SWEEP_TARGET, ""),)),
    "rate-not-offered": CauseAdvice(_check_schedule, ((CHECK_SCHEDULE, ""),)),
    "target-unmeasured": CauseAdvice(_measure_target, ((MEASURE_TARGET, ""),)),
    "healthy": CauseAdvice(_more_load, ((RAISE_USERS, ""),)),
}
# Every diagnosis the rules record, in their order: Pending workers before every cause.
DIAGNOSES = (WORKERS_PENDING, *dict.fromkeys(d for a in ADVICE.values() for d, _ in a.diagnoses))
# Each diagnosis in a sentence: when it is given and what to do (the dashboards' Next step panel).
MEANINGS = {
    WORKERS_PENDING: "worker pods find no node; ask for fewer or add nodes",
    WORKERS_LOST: "workers were lost in the window, which ran with less load than asked for; find why, run again",
    TARGET_NOT_SERVING: "the target failed more than the failure threshold of the requests or went silent: no "
                        "capacity was measured; read its failures and logs, sweep the users to find where it stops",
    WHOLE_CORE: "the workers are saturated, throttled or below a core; a worker uses up to one, so give each "
                f"{units.cpu(sizing.WORKER_CPU_M)} and as many as the nodes hold",
    MORE_GENERATOR: "whole workers at their core; more workers where the nodes have room, else nodes",
    SWEEP_TARGET: "the target is at its CPU, the generator is fine; measure it at more CPUs",
    CHECK_SCHEDULE: "the open model's rate was not offered with neither side saturated; see that every worker got "
                    "its share of the rate and the task sends a request in every slot",
    MEASURE_TARGET: "the workers have headroom and the target's CPU is not measured; measure it first",
    RAISE_USERS: "neither side is saturated; raise the users (the open model: the rate)",
}


def upgrade_command(release: str, namespace: str, chart: str, changes: dict[str, str]) -> list[str]:
    """The `helm upgrade` that makes the change and keeps every other value of the release."""
    return ["helm", "upgrade", release, chart, "-n", namespace, "--reuse-values",
            *(arg for key, value in changes.items() for arg in ("--set", f"{key}={value}"))]


@dataclass(frozen=True)
class Outcome:
    """A change's before and after steady windows, and whether it made things worse."""

    before: Snapshot
    after: Snapshot

    @property
    def worse(self) -> list[str]:
        """What got worse beyond compare's limits: RPS down by more than its drop, or failures past the rules'
        failure threshold where they were not."""
        b, a = self.before, self.after
        out = []
        if b.rps and a.rps is not None and a.rps < b.rps * (1 - results.DEFAULT_LIMITS.max_rps_drop):
            out.append(f"RPS fell {1 - a.rps / b.rps:.0%} ({b.rps:,.0f} -> {a.rps:,.0f}; more than "
                       f"{results.DEFAULT_LIMITS.max_rps_drop:.0%} is a regression)")
        limit = verdict.FAILURE_RATIO
        if (a.fail_ratio or 0) > limit >= (b.fail_ratio or 0):
            out.append(f"failures rose to {a.fail_ratio:.2%} (from {b.fail_ratio or 0:.2%}; above {limit:.0%})")
        return out

    def table(self) -> list[str]:
        def row(what: str, fmt, get) -> str:
            before, after = get(self.before), get(self.after)
            return f"  {what:<16} {fmt(before):>14}  {fmt(after):>14}"

        def pct(x):
            return "-" if x is None else f"{x:.0%}"

        def verdict_of(s: Snapshot) -> str:
            return verdict.judge(s.window).kind if s.window else "no window"

        return [
            f"  {'':<16} {'before':>14}  {'after':>14}",
            row("RPS", lambda x: "-" if x is None else f"{x:,.0f}", lambda s: s.rps),
            row("p95", lambda x: "-" if x is None else f"{x:,.0f} ms", lambda s: s.p95_ms),
            row("failures", lambda x: "-" if x is None else f"{x:.2%}", lambda s: s.fail_ratio),
            row("workers", str, lambda s: f"{s.replicas} x {units.cpu(s.worker_cpu_m)}"),
            row("busiest worker", pct, lambda s: s.window.busiest_worker if s.window else None),
            row("throttled", pct, lambda s: s.window.worker_throttling if s.window else None),
            row("verdict", str, verdict_of),
        ]

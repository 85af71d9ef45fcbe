"""`loadtest sweep` with several --release: one users sweep from several releases (regions), each step's users split
over them, started together, measured in each region's own Prometheus and judged per region and as one.

Every release is opened first, as `loadtest run` opens them (regionsrun.open_all: port-forwards, workers connected,
swarm idle); one that cannot be, or cannot be swept (no Prometheus, locust.mode run, the open model), ends the sweep
before any load. A step's users are split by the shares or by each release's workers; each region's thread waits at
a barrier, swarms its part and goes through the step as a one-release sweep does (runtime.sweeper.Sweeper: warm-up,
a window of whole scrapes and reports, read from its Prometheus, judged). The start skew is the span from the first
swarm request sent to the last one answered. The whole step adds the regions' requests and RPS, takes its
percentiles from the union of their windows' response-time counts (judging.regions.whole_step) and its verdict from
theirs; the knee and the generator's saturation are the whole's.

A region whose step fails (its master lost, its Prometheus silent) ends the sweep: the others' steps are stopped,
the steps so far are kept in every report, marked incomplete with the region and the reason. So does Ctrl-C. The
sweep's folder holds the whole's report; a sub-folder a region holds that region's own, as a one-release sweep
writes it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
from pathlib import Path

from ..errors import RunFailed, UsageError
from ..judging import regions as judged_regions, sweepreport
from ..workload import regions as split_regions
from ..workload.sweep import KINDS, Spec, measured_window
from . import regionsrun, together
from .release import Release
from .sweep_cluster import ClusterDriver
from .sweeper import Sweeper, interrupted_at, stops_at

BARRIER_TIMEOUT_S = 60


def parts_of(load: int, weights: dict[str, float]) -> dict[str, int]:
    """A step's users split by the weights (the shares, else the workers); a region left with none is refused."""
    parts = split_regions.split(load, weights)
    empty = [region for region, n in parts.items() if n < 1]
    if empty:
        raise UsageError(f"--steps {load}: region {empty[0]} would get no user of the split "
                         f"({', '.join(f'{r} {n}' for r, n in parts.items())}); give steps of {len(parts)} users or "
                         "more")
    return parts


def sweepers_for(opened: dict, spec: Spec, weights: dict[str, float], chart: Path, out: Path, progress
                 ) -> dict[str, Sweeper]:
    """A one-release sweeper a region, each writing its own report in the region's sub-folder and starting its users
    at its share of the spawn rate (every region's ramp ends together, as the whole's would); a release the sweep
    cannot read or drive is refused, naming its region."""
    sweepers = {}
    for region, o in opened.items():
        if o.prometheus is None:
            raise UsageError(f"region {region}: {o.release} runs no Prometheus (monitoring.enabled false); a sweep "
                             "reads every step from it: helm upgrade --reuse-values --set monitoring.enabled=true")
        if o.rate:
            raise UsageError(f"region {region}: {o.release} runs the open model (locust.load.arrivalRate "
                             f"{o.rate:g}); a users sweep needs the closed model: helm upgrade --reuse-values --set "
                             "locust.load.arrivalRate=0, or sweep rates with `loadtest run --arrival-rate`")
        say = lambda line, r=region: progress(f"[{r}] {line}")  # noqa: E731
        mine = dataclasses.replace(spec, spawn_rate=spec.spawn_rate * weights[region] / sum(weights.values()))
        try:
            driver = ClusterDriver(o.release, chart, o.web, o.prometheus, spec=mine, progress=say)
        except UsageError as e:
            raise UsageError(f"region {region}: {e}") from None
        sweepers[region] = Sweeper(driver, mine, progress=say,
                                   report_dir=out / split_regions.folder_name(region))
    return sweepers


def run(releases: dict[str, Release], spec: Spec, shares: dict[str, float] | None, chart: Path, out: Path,
        progress=print) -> sweepreport.Sweep:
    """The sweep, its whole's report in `out` rewritten after every step (each region's in its sub-folder)."""
    progress = together.one_line_at_a_time(progress)
    with contextlib.ExitStack() as stack:
        opened = regionsrun.open_all(releases, stack, progress)
        weights = split_regions.weights(shares, {region: o.workers for region, o in opened.items()})
        sweepers = sweepers_for(opened, spec, weights, chart, out, progress)
        steps = [parts_of(load, weights) for load in spec.loads]
        scrape = {region: s.driver.prometheus.scrape_interval_s() for region, s in sweepers.items()}
        for region, scrape_s in scrape.items():
            try:
                measured_window(spec.hold_s, scrape_s)
            except UsageError as e:
                raise UsageError(f"region {region}: {e}") from None
        mine = {region: sweepreport.Sweep(conditions={
            **s.conditions(scrape[region]), "sweep": f"{KINDS[spec.kind]} {', '.join(str(p[region]) for p in steps)}, "
                                                     f"this region's part of {', '.join(map(str, spec.loads))}"},
            sweep_of=KINDS[spec.kind]) for region, s in sweepers.items()}
        whole = sweepreport.Sweep(conditions={
            "regions": ", ".join(f"{region} ({o.release})" for region, o in opened.items()),
            "split": "by the shares given" if shares else "by each release's workers",
            "sweep": f"{KINDS[spec.kind]} {', '.join(map(str, spec.loads))}, all regions together",
            **{key: value for key, value in next(iter(mine.values())).conditions.items()
               if key in ("latency bound", "warm-up per step", "measured window per step", "date")},
        }, sweep_of=KINDS[spec.kind], regions={
            region: {"release": str(o.release), "folder": split_regions.folder_name(region), "workers": o.workers,
                     "users": [part[region] for part in steps]} for region, o in opened.items()})
        out.mkdir(parents=True, exist_ok=True)
        progress("each step's users: " + "; ".join(
            f"{load} ({', '.join(f'{r} {n}' for r, n in part.items())})" for load, part in zip(spec.loads, steps)))
        try:
            for index, (load, part) in enumerate(zip(spec.loads, steps)):
                try:
                    whole.records.append(_step(sweepers, spec, index, load, part, scrape, mine, progress))
                    sweepreport.write(whole, out)
                    if stops_at(whole, progress):
                        break
                except (KeyboardInterrupt, RunFailed) as e:
                    whole.incomplete = interrupted_at(index, len(spec.loads), e, len(whole.records) > index)
                    for region, s in sweepers.items():
                        mine[region].incomplete = whole.incomplete
                        s.save(mine[region])
                    sweepreport.write(whole, out)
                    raise
        finally:
            for s in sweepers.values():
                s.stop_swarm()
    return whole


def _step(sweepers: dict[str, Sweeper], spec: Spec, index: int, load: int, part: dict[str, int],
          scrape: dict[str, float], mine: dict[str, sweepreport.Sweep], progress) -> sweepreport.StepRecord:
    """One step in every region at once: each swarms its part at the barrier and measures its window; the whole's
    record merged from theirs. A region's failure stops the others' steps and fails the step, naming it (what the
    others measured of it stays in their own reports)."""
    of = f"step {index + 1}/{len(spec.loads)}"
    barrier = threading.Barrier(len(sweepers))
    measured, failed = {}, {}

    def stop_all() -> None:
        barrier.abort()
        for s in sweepers.values():
            s.stopping.set()

    def leg(region: str) -> None:
        s = sweepers[region]
        try:
            barrier.wait(BARRIER_TIMEOUT_S)
            s.start(of, part[region])
            f, target_cores = s.measure_window(of, scrape[region])
            record, v = s.record(of, index, part[region], f, target_cores)
            measured[region] = (record, f.response_times, v)
        except threading.BrokenBarrierError:
            pass  # another region failed before its start, or Ctrl-C
        except RunFailed as e:
            if not any(other.stopping.is_set() for other in sweepers.values()):
                failed[region] = e
            stop_all()

    interrupted = together.at_once({f"region {region}": lambda region=region: leg(region) for region in sweepers},
                                   stop_all)
    for s in sweepers.values():
        s.stopping.clear()
    for region, (record, _, _) in measured.items():
        mine[region].records.append(record)
        sweepers[region].save(mine[region])
    if interrupted:
        raise KeyboardInterrupt
    if failed:
        region, e = next(iter(failed.items()))
        raise RunFailed(f"region {region}: {e}; the other regions' steps were stopped")
    sent = min(s.swarm_sent for s in sweepers.values())
    skew = max(s.swarm_answered for s in sweepers.values()) - sent
    whole, reason = judged_regions.whole_step(index, load, spec.p99_bound_ms, measured)
    whole = dataclasses.replace(whole, start_skew_s=round(skew, 3))
    f = whole.step
    progress(f"{of} whole: {f.rps:,.0f} RPS, p95 {f.p95_ms:.1f} ms, p99 {whole.p99_ms:.1f} ms, failures "
             f"{f.failure_ratio:.2%}; every region started within {skew * 1000:.0f} ms; {whole.verdict}: {reason}")
    return whole


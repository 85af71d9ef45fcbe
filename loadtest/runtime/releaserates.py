"""`loadtest run --release ... --arrival-rate N`: each release offers its part of N in the open model
(locust.load.arrivalRate), set with helm upgrade before any load and set back to what it was once the run ends,
however it ends (as a sweep sets back what it changed).

A release's rate is its master's from the start (the plugin splits it over the workers as they connect), so a new
rate is a rollout of its master and workers: the releases are upgraded together, a thread each, and the run opens
them after. One that cannot be upgraded ends the run before any load, naming its region, and every release this
command upgraded is set back: no region is left at a rate nobody asked for, or loading alone.
"""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from loadtest_shared import settings

from ..errors import RunFailed, UsageError
from ..workload import regions as split_regions
from . import together
from .release import Release, ReleaseError, value_at
from .releaserun import rate_of, workers_of

RATE = settings.ARRIVAL_RATE.value  # the chart value a release's rate is


@dataclass(frozen=True)
class RateChange:
    """One release's part of the run's rate, and the rate it offered before."""

    region: str
    release: Release
    before: float  # 0: the closed model
    part: float


def parts(releases: dict[str, Release], rate: float, shares: dict[str, float] | None) -> list[RateChange]:
    """Each release's part of `rate`: by the shares given, else by its workers (its capacity); refused before
    anything changes for a release this command cannot drive (not interactive, no worker, not there)."""
    for region, release in releases.items():
        refuse_beside_a_rate(region, release, release.values(defaults=False))
    found = {region: release.values().get("locust", {}) for region, release in releases.items()}
    workers = {region: workers_of(releases[region], locust) for region, locust in found.items()}
    split = split_regions.split_rate(rate, split_regions.weights(shares, workers))
    empty = [region for region, part in split.items() if part <= 0]
    if empty:
        raise UsageError(f"--arrival-rate {rate:g}: region {empty[0]} would get no part of it "
                         f"({', '.join(f'{r} {p:g}' for r, p in split.items())}); give a higher rate")
    return [RateChange(region, releases[region], rate_of(found[region]), split[region]) for region in releases]


def refuse_beside_a_rate(region: str, release: Release, values: dict) -> None:
    """A release whose values (those set on it: the chart's defaults take a rate) a rate cannot go with (a user
    count, a step load: the chart refuses the pair) is refused before anything changes, in the settings' own words,
    with the upgrade that clears the value."""
    for rule in settings.EXCLUSIVE:
        held = value_at(values, rule.second.value) if rule.first is settings.ARRIVAL_RATE and rule.second.value \
            else None
        if held is not None and held is not False:
            raise UsageError(f"region {region}: " + rule.message(
                "--arrival-rate", f"its {rule.second.value} {json.dumps(held)}", "drop --arrival-rate",
                f"helm upgrade {release.name} --reuse-values --set {rule.second.value}={rule.second.off}"))


def shown(rate: float) -> str:
    """A rate as the chart value takes it: 0 for the closed model, else the number to a thousandth."""
    return f"{rate:.3f}".rstrip("0").rstrip(".")


@contextlib.contextmanager
def applied(changes: list[RateChange], chart: Path, progress=print):
    """Every release at its part of the run's rate while the block runs, and set back after it, however it ends."""
    progress = together.one_line_at_a_time(progress)
    moved = [change for change in changes if change.part != change.before]
    whole = sum(change.part for change in changes)
    for change in changes:
        progress(f"[{change.region}] {RATE} {shown(change.part)} (its part of {shown(whole)} requests/s)"
                 + (": helm upgrade, waiting for the rollout" if change in moved else ", as it is already"))
    try:
        failed = _upgrade_all(moved, lambda change: change.part, chart, progress)
        if failed:
            region, why = next(iter(failed.items()))
            raise RunFailed(f"region {region}: helm upgrade --set {RATE}=... failed: {why}\nno region was "
                            "started: every release must take its part of the rate first")
        yield
    finally:
        if moved:
            progress("setting back each release's rate: " + ", ".join(f"{c.region} {shown(c.before)}" for c in moved))
            for region, why in _upgrade_all(moved, lambda change: change.before, chart, progress).items():
                change = next(c for c in moved if c.region == region)
                progress(f"[{region}] could not set its rate back ({why}); run: helm upgrade {change.release.name} "
                         f"{chart} --reuse-values --set {RATE}={shown(change.before)} "
                         + " ".join(change.release.where("helm")))


def _upgrade_all(changes: list[RateChange], rate, chart: Path, progress) -> dict[str, str]:
    """Each change's release upgraded to rate(change), all at once, each saying how long its rollout took; the
    regions that failed, and why. Ctrl-C waits for the upgrades under way (helm refuses a second operation on a
    release while one runs), then goes on."""
    failed: dict[str, str] = {}

    def upgrade(change: RateChange) -> None:
        began = time.monotonic()
        try:
            change.release.upgrade(chart, {RATE: shown(rate(change))})
            progress(f"[{change.region}] {RATE} {shown(rate(change))}: rolled out in "
                     f"{time.monotonic() - began:.0f} s")
        except ReleaseError as e:
            failed[change.region] = str(e).strip()

    if together.at_once({f"upgrade {change.region}": lambda change=change: upgrade(change) for change in changes}):
        raise KeyboardInterrupt
    return failed

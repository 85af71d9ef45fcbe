"""A run from several releases judged as one and per region: the regions' statistics merged exactly, a region's
checks, and the verdict of the whole.

Percentiles are never averaged: every region's master keeps Locust's count of requests per rounded response time
(its --json-file entries), and the whole run's entries are the regions' side by side, so the whole's percentiles are
Locust's own over the union of the regions' requests (loadtest_shared.checks.from_entries), within Locust's rounding
of each response time and nothing more.
"""
from __future__ import annotations

import re
from dataclasses import replace

from loadtest_shared import checks, verdict

from ..errors import UsageError
from .knee import Step
from .sweepreport import StepRecord

# `us-east-1:p99<300ms`: a check on one region. The region is what comes before the last ':' outside a request name
# (an EKS context, an ARN, holds ':' of its own; a request name in brackets may too).
REGION_CHECK = re.compile(r"^\s*(?P<region>[^\[\]\s]+):(?P<check>[^:]+(?:\[.*)?)$")


def split_checks(texts: list[str], regions: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The checks on the whole run, and each region's (given as REGION:CHECK), as texts of the check language."""
    whole: list[str] = []
    per_region: dict[str, list[str]] = {region: [] for region in regions}
    for text in texts:
        for part in checks.SEPARATOR.split(text):
            found = REGION_CHECK.match(part)
            if not found:
                whole += [part] if part.strip() else []
                continue
            region = found.group("region")
            if region not in per_region:
                raise UsageError(f"--check {part.strip()!r}: no region {region!r} in this run; one of "
                                 f"{', '.join(regions) or 'none (a check names a region only when the run has several)'}")
            per_region[region].append(found.group("check"))
    return whole, per_region


def region_outcomes(region: str, outcomes: list[checks.Outcome]) -> list[checks.Outcome]:
    """A region's outcomes (its checks, judged in its own result on its own figures), each named with its region as
    the user gave it."""
    return [replace(o, check=replace(o.check, text=f"{region}:{o.check.text}")) for o in outcomes]


def merged_entries(by_region: dict[str, list[dict]]) -> list[dict]:
    """The whole run's statistics: every region's entries (Locust's --json-file format) side by side, each named with
    its region. Figures read from them (checks.from_entries) add the regions' counts per request name and per
    response time, and their rates (each region's over its own window: the regions' statistics began at their own
    steady moments, so one span over all would count a region's requests over time it did not run)."""
    return [{**entry, checks.SOURCE: region} for region, entries in by_region.items() for entry in entries]


def combined(verdicts: dict[str, verdict.Verdict | None]) -> tuple[verdict.Verdict | None, str | None]:
    """The whole run's verdict from its regions': the generator was the limit if it was in any region (that
    region's figures are its generator's, and so are the whole's), else the target if it was in any region; a region
    without a verdict leaves the whole unjudged (never taken as healthy). Returns the verdict, or None and why."""
    unjudged = [region for region, v in verdicts.items() if v is None]
    if unjudged:
        return None, f"no verdict for the whole run: {', '.join(unjudged)} had none (see its folder)"
    for kind in (verdict.GENERATOR_BOUND, verdict.TARGET_BOUND, verdict.NOT_GENERATOR_BOUND):
        limited = {region: v for region, v in verdicts.items() if v.kind == kind}
        if limited:
            first = next(iter(limited.values()))
            return verdict.Verdict(kind, "; ".join(f"{r}: {v.reason}" for r, v in limited.items()), first.cause), None
    first = next(iter(verdicts.values()))
    return verdict.Verdict(verdict.HEALTHY, f"every region healthy ({', '.join(verdicts)})", first.cause), None


def whole_step(index: int, load: int, p99_bound_ms: float | None,
               parts: dict[str, tuple[StepRecord, dict[float, float], verdict.Verdict]]) -> tuple[StepRecord, str]:
    """A sweep step of several regions as one: each region's record, its window's requests per response time (as
    Locust rounds it) and its verdict, merged. Requests, failures and RPS add up (each region's RPS over its own
    window); the percentiles are Locust's over the union of the windows' requests, never a mean of the regions';
    the verdict is the regions' combined one. Returns the whole's record and its verdict's reason."""
    records = {region: record for region, (record, _, _) in parts.items()}
    union: dict[float, float] = {}
    for _, counts, _ in parts.values():
        for ms, n in counts.items():
            union[ms] = union.get(ms, 0.0) + n
    p50, p95, p99 = (round(checks.percentile(union, q), 1) if union else 0.0 for q in (0.5, 0.95, 0.99))
    v, _ = combined({region: v for region, (_, _, v) in parts.items()})
    requests = sum(r.requests for r in records.values())
    failures = sum(r.failures for r in records.values())
    cores = [r.target_cpu_cores for r in records.values()]
    step = Step(index, load, sum(r.step.rps for r in records.values()), p95,
                failures / requests if requests else 1.0, v.kind == verdict.GENERATOR_BOUND, p99_ms=p99,
                p99_bound_ms=p99_bound_ms)
    return StepRecord(
        step=step, start=min(r.start for r in records.values()), end=max(r.end for r in records.values()),
        p50_ms=p50, p99_ms=p99, requests=requests, failures=failures,
        users=sum(r.users for r in records.values()), workers=sum(r.workers for r in records.values()),
        worker_cpu_max=max(r.worker_cpu_max for r in records.values()),
        worker_cpu_cores=sum(r.worker_cpu_cores for r in records.values()),
        target_cpus=sum(r.target_cpus for r in records.values()),
        target_cpu_cores=None if None in cores else sum(cores), verdict=v.kind, targets=len(records)), v.reason

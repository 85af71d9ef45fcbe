"""Regressions between two results of the same kind: two runs (their result.json) or two sweeps (their sweep.json).

Runs compare all requests together: RPS must not drop, nor p95 rise, by more than the limits. Sweeps compare their
capacity (the last step before the knee, the most the target gave with sane latency): its RPS, its p95, and where
the knee sits; a knee at a lower load is a regression. A result whose figures are the generator's ceiling is no
baseline and no current: comparing it would record the generator's limit as the target's.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from . import checks
from .errors import UsageError


@dataclass(frozen=True)
class Limits:
    max_rps_drop: float  # a fraction: 0.05 is a 5 % drop
    max_p95_rise: float


# What `loadtest compare` holds a change to unless told otherwise; `loadtest tune` judges its change by them too.
DEFAULT_LIMITS = Limits(max_rps_drop=0.05, max_p95_rise=0.10)


@dataclass(frozen=True)
class Figure:
    what: str
    baseline: float | None
    current: float | None
    change: float | None  # current / baseline - 1
    limit: str  # what the change was held to, or "" for a figure shown only
    regressed: bool


@dataclass(frozen=True)
class Comparison:
    kind: str  # "run" or "sweep"
    baseline: Path
    current: Path
    figures: list[Figure]
    invalid: str | None  # why the comparison cannot be read (a generator-bound side), if it cannot

    @property
    def regressed(self) -> bool:
        return any(f.regressed for f in self.figures)

    @property
    def exit_code(self) -> int:
        if self.invalid:
            return checks.GENERATOR_BOUND
        return checks.CHECK_FAILED if self.regressed else checks.PASSED


def parse_share(text: str, option: str) -> float:
    """5% or 0.05, as a fraction."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UsageError(f"{option} {text!r}: a percentage such as 5% (or a fraction such as 0.05)".strip()) from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{option} {text!r}: a share from 0 up, such as 5% or 0.05".strip())
    return value


def load(path: Path) -> tuple[str, dict]:
    """("run" or "sweep", its JSON) of a results folder or of its result.json / sweep.json."""
    for kind, name in (("run", "result.json"), ("sweep", "sweep.json")):
        file = path / name if path.is_dir() else path
        if file.name == name and file.is_file():
            try:
                return kind, json.loads(file.read_text())
            except ValueError as e:
                raise UsageError(f"{file}: not JSON ({e}); is it a loadtest result?") from None
    raise UsageError(f"{path}: no result.json (a `loadtest run` folder) or sweep.json (a `loadtest sweep` report)")


def change(baseline: float | None, current: float | None) -> float | None:
    """current / baseline - 1, rounded so that a change of exactly a limit (950 of 1000: 5 %) is that limit."""
    if baseline is None or current is None or baseline == 0:
        return None
    return round(current / baseline - 1, 9)


def _rps_p95(what: str, base: tuple[float, float], cur: tuple[float, float], limits: Limits) -> list[Figure]:
    rps, p95 = change(base[0], cur[0]), change(base[1], cur[1])
    return [
        Figure(f"{what} RPS", base[0], cur[0], rps, f"drop <= {limits.max_rps_drop:.0%}",
               rps is not None and -rps > limits.max_rps_drop),
        Figure(f"{what} p95 (ms)", base[1], cur[1], p95, f"rise <= {limits.max_p95_rise:.0%}",
               p95 is not None and p95 > limits.max_p95_rise),
    ]


def runs(base: dict, cur: dict, limits: Limits) -> tuple[list[Figure], str | None]:
    for side, result in (("baseline", base), ("current", cur)):
        if not result.get("complete", False):
            raise UsageError(f"the {side} run is incomplete ({result.get('incomplete')}): compare complete runs")
    invalid = [side for side, r in (("baseline", base), ("current", cur))
               if r["exit_code"] == checks.GENERATOR_BOUND]
    b, c = base["figures"][checks.AGGREGATED], cur["figures"][checks.AGGREGATED]
    figures = _rps_p95("all requests", (b["rps"], b["percentiles_ms"]["0.95"]),
                       (c["rps"], c["percentiles_ms"]["0.95"]), limits)
    figures.append(Figure("failure ratio", b["fail_ratio"], c["fail_ratio"], None, "", False))
    why = (f"the {' and the '.join(invalid)} run{'s were' if len(invalid) > 1 else ' was'} generator-bound: "
           "its RPS is the generator's ceiling" if invalid else None)
    return figures, why


def capacity(sweep: dict) -> dict | None:
    number = sweep.get("capacity_step")
    return sweep["steps"][number - 1] if number else None


def knee_load(sweep: dict) -> float | None:
    number = sweep.get("knee_step")
    return sweep["steps"][number - 1]["load"] if number else None


def sweeps(base: dict, cur: dict, limits: Limits) -> tuple[list[Figure], str | None]:
    if base.get("sweep_of") != cur.get("sweep_of"):
        raise UsageError(f"the baseline sweeps {base.get('sweep_of')} and the current one {cur.get('sweep_of')}: "
                         "compare sweeps of the same kind")
    for side, sweep in (("baseline", base), ("current", cur)):
        if not sweep.get("complete", False):
            raise UsageError(f"the {side} sweep is incomplete ({sweep.get('incomplete')}): compare complete sweeps")
    # A sweep the generator stopped before any knee only has a lower bound of the target's capacity.
    bounded = [side for side, s in (("baseline", base), ("current", cur))
               if s.get("generator_bound_step") and not s.get("knee_step")]
    if bounded:
        return [], (f"the {' and the '.join(bounded)} sweep stopped when the generator saturated, before a knee: "
                    "its capacity is only a lower bound")
    b, c = capacity(base), capacity(cur)
    if b is None:
        return [], "the baseline sweep has no capacity step (it failed from its first step): no baseline to hold to"
    knee_b, knee_c = knee_load(base), knee_load(cur)
    if c is None:  # the knee at the first step: nothing held up
        figures = [Figure("capacity RPS", b["rps"], None, None, "a capacity step", True)]
    else:
        figures = _rps_p95("capacity", (b["rps"], b["p95_ms"]), (c["rps"], c["p95_ms"]), limits)
    # A knee at a lower load, or a knee where the baseline's whole range had none.
    moved = knee_c is not None and (knee_c < knee_b if knee_b is not None
                                    else knee_c <= max(s["load"] for s in base["steps"]))
    figures.append(Figure(f"knee ({base['sweep_of']})", knee_b, knee_c, change(knee_b, knee_c),
                          "not at a lower load", moved))
    return figures, None


def compare(baseline: Path, current: Path, limits: Limits) -> Comparison:
    kind_b, base = load(baseline)
    kind_c, cur = load(current)
    if kind_b != kind_c:
        raise UsageError(f"{baseline} is a {kind_b} and {current} a {kind_c}: compare two runs or two sweeps")
    try:
        figures, invalid = (runs if kind_b == "run" else sweeps)(base, cur, limits)
    except (KeyError, IndexError, TypeError, AttributeError) as e:
        name = "result.json" if kind_b == "run" else "sweep.json"
        raise UsageError(f"{baseline} or {current}: a {name} without what a comparison reads ({type(e).__name__}: "
                         f"{e}); give the folders `loadtest {kind_b}` wrote") from None
    return Comparison(kind_b, baseline, current, figures, invalid)


def _show(value: float | None) -> str:
    return "-" if value is None else f"{value:,.4g}" if abs(value) < 1 else f"{value:,.1f}"


def markdown(c: Comparison) -> str:
    code = c.exit_code
    head = {checks.PASSED: "no regression", checks.CHECK_FAILED: "REGRESSION",
            checks.GENERATOR_BOUND: "INVALID comparison"}[code]
    lines = [f"# Load test comparison ({c.kind}s): {head}", "",
             f"baseline `{c.baseline}`, current `{c.current}`", ""]
    if c.invalid:
        lines += [f"Invalid: {c.invalid}.", ""]
    if c.figures:
        lines += ["| figure | baseline | current | change | limit | result |", "|---|---|---|---|---|---|"]
        for f in c.figures:
            result = "**regressed**" if f.regressed else "ok" if f.limit else ""
            lines.append(f"| {f.what} | {_show(f.baseline)} | {_show(f.current)} | "
                         f"{'-' if f.change is None else f'{f.change:+.1%}'} | {f.limit} | {result} |")
    lines += ["", f"Exit code {code}."]
    return "\n".join(lines) + "\n"

"""Regressions between two results of the same kind: two runs (their result.json) or two sweeps (their sweep.json).

Runs compare all requests together: RPS must not drop, nor p95 rise, by more than the limits. Sweeps compare their
capacity (the last step before the knee, the most the target gave with sane latency): its RPS, its p95, and where
the knee sits; a knee at a lower load is a regression. A result whose figures are the generator's ceiling is no
baseline and no current: comparing it would record the generator's limit as the target's.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# The arithmetic of a run against another is the pods' too (a scheduled run held to its baseline).
from loadtest_shared import checks, results, units

from ..errors import UsageError



@dataclass(frozen=True)
class Comparison:
    kind: str  # "run" or "sweep"
    baseline: Path
    current: Path
    figures: list[results.Figure]
    invalid: str | None  # why the comparison cannot be read (a generator-bound side), if it cannot

    @property
    def regressed(self) -> bool:
        return any(f.regressed for f in self.figures)

    @property
    def exit_code(self) -> int:
        if self.invalid:
            return checks.INVALID
        return checks.CHECK_FAILED if self.regressed else checks.PASSED


def parse_share(text: str, option: str, at_most: float | None = None) -> float:
    """5% or 0.05, as a fraction; `at_most` (a fraction) where a larger share cannot happen (a drop above 100 %)."""
    try:
        value = units.share(text)
    except ValueError as e:
        raise UsageError(f"{option} {e}".strip()) from None
    if at_most is not None and value > at_most:
        raise UsageError(f"{option} {text!r}: give at most {at_most:.0%}; nothing drops by more".strip())
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


def runs(base: dict, cur: dict, limits: results.Limits) -> tuple[list[results.Figure], str | None]:
    try:
        return results.compare_runs(base, cur, limits)
    except results.Incomparable as e:
        raise UsageError(str(e)) from None


def capacity(sweep: dict) -> dict | None:
    number = sweep.get("capacity_step")
    return sweep["steps"][number - 1] if number else None


def knee_load(sweep: dict) -> float | None:
    number = sweep.get("knee_step")
    return sweep["steps"][number - 1]["load"] if number else None


def sweeps(base: dict, cur: dict, limits: results.Limits) -> tuple[list[results.Figure], str | None]:
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
        figures = [results.Figure("capacity RPS", b["rps"], None, None, "a capacity step", True)]
    else:
        figures = results.rps_p95("capacity", (b["rps"], b["p95_ms"]), (c["rps"], c["p95_ms"]), limits)
    # A knee at a lower load, or a knee where the baseline's whole range had none.
    moved = knee_c is not None and (knee_c < knee_b if knee_b is not None
                                    else knee_c <= max(s["load"] for s in base["steps"]))
    figures.append(results.Figure(f"knee ({base['sweep_of']})", knee_b, knee_c, results.change(knee_b, knee_c),
                          "not at a lower load", moved))
    return figures, None


def compare(baseline: Path, current: Path, limits: results.Limits) -> Comparison:
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
            checks.INVALID: "INVALID comparison"}[code]
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

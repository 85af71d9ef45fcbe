"""Calibration: the RPS one worker core delivers per scenario, which the planner multiplies by the worker count.

The figures come from `loadtest calibrate` (a short run per scenario on this machine), from a sweep's report (on a
release, the worker nodes' own CPUs did the work), or, without a calibration file, from the scenarios' labelled
defaults. A figure measured with another user class than the scenario uses now would mis-size the workers, so it
is ignored.
"""
from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path

from . import paths, verdict
from .errors import UsageError
from .scenarios import SCENARIOS

DEFAULT_FILE = paths.CACHE / "calibration.json"


class CalibrationError(UsageError):
    pass


@dataclass(frozen=True)
class Calibration:
    rps_per_core: dict[str, float]
    source: str  # where the figures come from, printed with every plan


def load_calibration(path: Path | None = None) -> Calibration:
    path = path or DEFAULT_FILE
    figures = {n: s.default_rps_per_core for n, s in SCENARIOS.items()}
    if not path.exists():
        return Calibration(figures,
                           "defaults (no calibration file: run `loadtest calibrate` for figures from your machine)")
    try:
        data = json.loads(path.read_text())
        measured = data["scenarios"]
        source = f"calibration {path} ({data['date']}, Locust {data['locust_version']}, {data['cpu_model']})"
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CalibrationError(f"--calibration {path}: not a calibration file ({e}); write one with "
                               "`loadtest calibrate`") from None
    figures.update({name: m["rps_per_core"] for name, m in measured.items()
                    if name in SCENARIOS and m.get("user_class", SCENARIOS[name].user_class)
                    == SCENARIOS[name].user_class})
    swept = [f"{name} from {m['source']}" for name, m in measured.items() if m.get("source")]
    return Calibration(figures, "; ".join([source, *swept]))


def figure(scenario: str, rps: float, worker_cores: float, failures: int, lower_bound: bool, **extra) -> dict:
    """One scenario's entry of a calibration file."""
    return {"rps_per_core": round(rps / worker_cores) if worker_cores > 0 else 0, "rps": round(rps, 1),
            "worker_cpu": round(worker_cores, 3), "failures": failures,
            "user_class": SCENARIOS[scenario].user_class, "lower_bound": lower_bound, **extra}


def saturated(worker_cpu: float) -> bool:
    """A worker this busy gave what a core gives; a less busy one was held back by the target (a lower bound)."""
    return worker_cpu >= verdict.SATURATED_CPU * 0.9


def from_sweep(path: Path) -> tuple[str, dict]:
    """(scenario, figure) from a sweep's report: the step where the workers were busiest, RPS over the cores all
    workers used. A sweep on a release measures the worker nodes' own CPUs, as the planner wants."""
    file = path / "sweep.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
        conditions, steps = data["conditions"], data["steps"]
    except (OSError, ValueError, KeyError) as e:
        raise CalibrationError(f"--from-sweep {path}: not a sweep report ({e}); give the folder `loadtest sweep` "
                               "wrote") from None
    scenario = conditions.get("scenario")
    if scenario not in SCENARIOS:
        raise CalibrationError(f"--from-sweep {path}: scenario {scenario!r} is not one the planner knows")
    measured = [s for s in steps if s.get("worker_cpu_cores", 0) > 0 and s["requests"] > 0]
    if not measured:
        raise CalibrationError(f"--from-sweep {path}: no step has the workers' CPU measured")
    best = max(measured, key=lambda s: s["worker_cpu_max"])
    where = conditions.get("node types") if "local" not in conditions.get("node types", "local") \
        else conditions.get("where", "this machine")
    return scenario, figure(scenario, best["rps"], best["worker_cpu_cores"], best["failures"],
                            not saturated(best["worker_cpu_max"]),
                            source=f"sweep {file}, step {best['step']} ({where}, {conditions.get('date', 'undated')})")


def write(path: Path, figures: dict[str, dict], header: dict) -> None:
    """Write a calibration file with `figures` per scenario; the header says when, with what, on which CPU."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"date": datetime.date.today().isoformat(), **header, "scenarios": figures},
                               indent=2) + "\n")


def merge(path: Path, scenario: str, entry: dict, header: dict) -> None:
    """Put one scenario's figure into a calibration file, keeping the others (a new file gets `header`)."""
    data = json.loads(path.read_text()) if path.exists() else {"date": datetime.date.today().isoformat(), **header,
                                                                 "scenarios": {}}
    data["scenarios"][scenario] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")

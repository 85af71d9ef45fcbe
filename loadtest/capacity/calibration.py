"""Calibration: the RPS one worker core delivers per scenario, which the planner multiplies by the worker count.

The figures come from `loadtest calibrate` (a short run per scenario on this machine), from a sweep's report (on a
release, the worker nodes' own CPUs did the work), or, without a calibration file, from the scenarios' labelled
defaults. A figure measured with another user class than the scenario uses now would mis-size the workers, so it
is ignored.

A user's own test (`loadtest calibrate -f yours.py`) gets an entry of its own, under its name, with its mean
response size for the network arithmetic: `loadtest plan --scenario <name>` sizes for it.
"""
from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path

from loadtest_shared import verdict

from .. import paths
from ..errors import UsageError
from ..workload.scenarios import DEFAULTS_MEASURED_ON, SCENARIOS, TLS_EITHER, Scenario

DEFAULT_FILE = paths.CACHE / "calibration.json"


class CalibrationError(UsageError):
    pass


# Request and response headers (and framing) of an HTTP/1.1 exchange, added to a response body for the wire.
HEADER_BYTES = 450


@dataclass(frozen=True)
class Calibration:
    rps_per_core: dict[str, float]
    source: str  # where the figures come from, printed with every plan
    own_tests: dict[str, Scenario] = field(default_factory=dict)  # calibrated user tests, as the planner sees them

    def scenario(self, name: str) -> Scenario:
        """A built-in scenario or a calibrated test of the user's, by name."""
        found = SCENARIOS.get(name) or self.own_tests.get(name)
        if found is None:
            raise CalibrationError(f"--scenario {name}: unknown; scenarios {', '.join(SCENARIOS)}"
                                   + (f", your calibrated tests {', '.join(self.own_tests)}" if self.own_tests else "")
                                   + "; calibrate a test of yours with `loadtest calibrate -f yours.py`")
        return found


def own_test(name: str, entry: dict) -> Scenario:
    """A calibrated user test as a scenario: its figure per core, and its mean response on the wire."""
    body = int(entry.get("response_bytes", 0))
    return Scenario(name, f"your test {entry['locustfile']}", "", body, TLS_EITHER, entry["rps_per_core"],
                    body + HEADER_BYTES, "rps")


def load_calibration(path: Path | None = None) -> Calibration:
    """The figures of a calibration file: `path` (which must exist), or the default file when there is one, else the
    scenarios' labelled defaults."""
    figures = {n: s.default_rps_per_core for n, s in SCENARIOS.items()}
    if path is None and not DEFAULT_FILE.exists():
        return Calibration(figures,
                           f"defaults (measured on {DEFAULTS_MEASURED_ON}: docs/sizing.md; no calibration file: run "
                           "`loadtest calibrate` for figures from your machine)")
    path = path or DEFAULT_FILE
    if not path.exists():
        raise CalibrationError(f"--calibration {path}: no such file; write it with `loadtest calibrate --output "
                               f"{path}`, or leave --calibration out for {DEFAULT_FILE} or the defaults")
    try:
        data = json.loads(path.read_text())
        measured = data["scenarios"]
        source = f"calibration {path} ({data['date']}, Locust {data['locust_version']}, {data['cpu_model']})"
        figures.update({name: float(m["rps_per_core"]) for name, m in measured.items()
                        if name in SCENARIOS and m.get("user_class", SCENARIOS[name].user_class)
                        == SCENARIOS[name].user_class})
        own = {name: own_test(name, m) for name, m in measured.items() if "locustfile" in m and name not in SCENARIOS}
        swept = [f"{name} from {m['source']}" for name, m in measured.items() if m.get("source")]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise CalibrationError(f"--calibration {path}: not a calibration file ({type(e).__name__}: {e}); write one "
                               "with `loadtest calibrate`") from None
    figures.update({name: t.default_rps_per_core for name, t in own.items()})
    return Calibration(figures, "; ".join([source, *swept]), own)


def figure(scenario: str, rps: float, worker_cores: float, failures: int, lower_bound: bool,
           user_class: str | None = None, **extra) -> dict:
    """One scenario's entry of a calibration file (a user's test gives its own user class, and its locustfile)."""
    return {"rps_per_core": round(rps / worker_cores) if worker_cores > 0 else 0, "rps": round(rps, 1),
            "worker_cpu": round(worker_cores, 3), "failures": failures,
            "user_class": user_class or SCENARIOS[scenario].user_class, "lower_bound": lower_bound, **extra}


def from_sweep(path: Path) -> tuple[str, dict]:
    """(scenario, figure) from a sweep's report: the step where the workers were busiest, RPS over the cores all
    workers used. A sweep on a release measures the worker nodes' own CPUs, as the planner wants."""
    file = path / "sweep.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
        conditions, steps = data["conditions"], data["steps"]
        scenario = conditions.get("scenario")
        measured = [s for s in steps if (s.get("worker_cpu_cores") or 0) > 0 and (s.get("requests") or 0) > 0]
        best = max(measured, key=lambda s: s["worker_cpu_max"]) if measured else None
        where = conditions.get("node types") if "local" not in conditions.get("node types", "local") \
            else conditions.get("where", "this machine")
        if scenario not in SCENARIOS:
            raise CalibrationError(f"--from-sweep {path}: scenario {scenario!r} is not one the planner knows")
        if not best:
            raise CalibrationError(f"--from-sweep {path}: no step has the workers' CPU and requests measured")
        return scenario, figure(scenario, best["rps"], best["worker_cpu_cores"], best["failures"],
                                not verdict.gave_its_core(best["worker_cpu_max"]),
                                source=f"sweep {file}, step {best['step']} "
                                       f"({where}, {conditions.get('date', 'undated')})")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        if isinstance(e, CalibrationError):
            raise
        raise CalibrationError(f"--from-sweep {path}: not a sweep report ({type(e).__name__}: {e}); give the folder "
                               "`loadtest sweep` wrote") from None


def write(path: Path, figures: dict[str, dict], header: dict) -> None:
    """Write a calibration file with `figures` per scenario; the header says when, with what, on which CPU."""
    paths.write_text(path, json.dumps({"date": datetime.date.today().isoformat(), **header, "scenarios": figures},
                                      indent=2) + "\n")


def check_mergeable(path: Path, option: str = "--output") -> None:
    """Refuse, before anything runs, an existing file that `merge` could not add a figure to."""
    if not path.is_file():
        return
    try:
        data = json.loads(path.read_text())
        why = "" if isinstance(data, dict) and isinstance(data.get("scenarios"), dict) else \
            f"a JSON {type(data).__name__} without a scenarios object"
    except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        why = f"not JSON: {e}"
    if why:
        raise CalibrationError(f"{option} {path} is not a calibration file ({why}), and the figure would be added to "
                               "it; give another file, or move this one away")


def merge(path: Path, scenario: str, entry: dict, header: dict) -> None:
    """Put one scenario's figure into a calibration file, keeping the others (a new file gets `header`)."""
    data = json.loads(path.read_text()) if path.exists() else {"date": datetime.date.today().isoformat(), **header,
                                                                 "scenarios": {}}
    data["scenarios"][scenario] = entry
    paths.write_text(path, json.dumps(data, indent=2) + "\n")

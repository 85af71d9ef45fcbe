"""Measuring RPS per worker core on this machine: one worker, enough users to keep it busy, a short local run per
scenario; RPS over the worker's measured CPU (in cores) is the figure (loadtest.calibration)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from .. import calibration
from . import localrun

USERS_PER_WORKER = 50


def measure(scenario: str, run_time_s: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="loadtest-calibrate-") as workdir:
        result = localrun.run(scenario, USERS_PER_WORKER, USERS_PER_WORKER, run_time_s, 1, Path(workdir),
                              progress=lambda line: None)
    cpu = result.worker_cpu[0] if result.worker_cpu else 0.0
    return calibration.figure(scenario, result.rps, cpu, result.failures, not calibration.saturated(cpu))

"""Measuring RPS per worker core on this machine: one worker, enough users to keep it busy, a short local run per
scenario (or of the user's own test); RPS over the worker's measured CPU (in cores) is the figure
(loadtest.capacity.calibration)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from loadtest_shared import verdict

from ..capacity import calibration
from . import localrun

USERS_PER_WORKER = 50


def measure(scenario: str, run_time_s: int, test: localrun.OwnTest | None = None,
            users: int = USERS_PER_WORKER) -> dict:
    with tempfile.TemporaryDirectory(prefix="loadtest-calibrate-") as workdir:
        result = localrun.run(test.name if test else scenario, users, users, run_time_s, 1, Path(workdir),
                              progress=lambda line: None, test=test)
    cpu = result.worker_cpu[0] if result.worker_cpu else 0.0
    own = {} if test is None else {"user_class": ", ".join(test.user_classes), "locustfile": str(test.locustfile),
                                   "response_bytes": round(result.response_bytes)}
    return calibration.figure(result.scenario, result.rps, cpu, result.failures, not verdict.gave_its_core(cpu),
                              **own)

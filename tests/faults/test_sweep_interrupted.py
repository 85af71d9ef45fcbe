"""A sweep cut short by Ctrl-C on the local stack (real nginx, Locust, Prometheus): what it measured so far is kept and
marked incomplete. Its steps are light (a user or two, 50 ms between requests) and judged by their count, not rates."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys

from helpers import wait_for_line
from interrupt import sigint_restored

from loadtest.workload import sweep

# The shortest windows the sweep takes (tests/dataplane/test_sweep.py says why).
WARMUP_S, HOLD_S = sweep.MIN_WARMUP_S, 3


def test_a_sweep_interrupted_after_two_steps_leaves_both_in_its_report(tmp_path):
    """Ctrl-C (SIGINT to the CLI) during the third step: the report already holds the two measured steps, and it
    says it is incomplete and why; the CLI exits 130 with the folder named, and a second sweep will not overwrite it."""
    out = tmp_path / "report"
    cmd = [sys.executable, "-m", "loadtest", "sweep", "--local", "--target", "backend", "--scenario", "keepalive_1kb",
           "--steps", "1,2,4,8", "--warmup", f"{WARMUP_S}s", "--hold", f"{HOLD_S}s", "--wait", "0.05",
           "--output", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                            preexec_fn=sigint_restored, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        # Once the third step has started, not once two are written: a Ctrl-C sent then could land while the second
        # step's report was still being written, or after a sweep judged to stop there (a whole run, 2026-12-06).
        wait_for_line(proc, "step 3/4: ", 180)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stdout + stderr
    assert f"the steps measured so far are in {out}, marked incomplete" in stderr
    data = json.loads((out / "sweep.json").read_text())
    assert [s["step"] for s in data["steps"]] == [1, 2] and all(s["requests"] > 0 for s in data["steps"])
    assert data["complete"] is False and data["incomplete"] == "interrupted during step 3 of 4"
    assert "INCOMPLETE after 2 step(s): interrupted during step 3 of 4" in (out / "sizing.md").read_text()
    with open(out / "steps.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 2
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert again.returncode == 2 and "holds an earlier sweep" in again.stderr

"""The dead man's switch of `loadtest run --release`: the swarm is started with the master's own run time (the
run's and a margin), so a master whose command died or lost it (a port-forward gone, Ctrl-C that could not reach
it) stops its load by itself. A real master and worker of the local stack, started through its web API as the
command starts a release's, with nobody to stop them."""
from __future__ import annotations

import time

from conftest import idle_master
from helpers import wait_for

USERS = 5
STOP_AFTER_S = 2
TIMEOUT_S = 60


def test_a_swarm_nobody_stops_is_stopped_by_its_master_after_its_run_time(tmp_path):
    with idle_master(tmp_path, "0.05", TIMEOUT_S) as (_, _, web):
        started = time.monotonic()
        web.swarm(USERS, USERS, stop_after_s=STOP_AFTER_S)
        wait_for("the swarm running", lambda: web.state()["state"] == "running", TIMEOUT_S)
        wait_for("the swarm stopped by its master", lambda: web.state()["state"] == "stopped", TIMEOUT_S)
        assert time.monotonic() - started >= STOP_AFTER_S

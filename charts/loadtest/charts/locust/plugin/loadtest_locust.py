"""Changes to Locust's per-request path, applied when the plugin loads. Each is written as it could be offered to
Locust, and tests/unit/test_locust_patches.py holds each to the code of Locust's it replaces: a Locust that changes
underneath fails that test, not a run.

A user whose wait_time is 0 ends every task in gevent.sleep(0): a trip through the event loop (two greenlet switches
and a callback) that only matters for a task that never yielded, which would otherwise hold the loop. A task that
sent a request has yielded already, waiting for its answer; its trip is skipped. The open model replaces the same
method with its own (loadtest_arrival), which skips it for a user that parked for its slot.
"""
from __future__ import annotations

import gevent
from gevent import get_hub
from locust.user.task import TaskSet


class LoopTurns:
    """The event loop's turns, counted by a check watcher (it runs once a loop iteration, after the poll): a greenlet
    that sees the count change since it last looked has yielded to the loop in between."""

    def __init__(self):
        self.turns = 0
        self.watcher = get_hub().loop.check()
        self.watcher.ref = False  # it does not keep the loop running
        self.watcher.start(self._turn)

    def _turn(self) -> None:
        self.turns += 1


LOOP = LoopTurns()


def _sleep_unless_yielded(taskset, seconds: float, sleep=gevent.sleep) -> None:
    """TaskSet._sleep: Locust's wait between tasks, without the zero-second sleep for a task that yielded to the
    event loop since the last one (a task that never yields still gets it, and cannot hold the loop)."""
    turns = LOOP.turns
    if seconds == 0 and taskset.__dict__.get("_loop_seen") != turns:
        taskset._loop_seen = turns
        return
    sleep(seconds)
    taskset._loop_seen = LOOP.turns


TaskSet._sleep = _sleep_unless_yielded

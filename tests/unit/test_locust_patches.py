"""loadtest_locust's changes to Locust's per-request path: each holds to the code of Locust's it replaces (a Locust
that changes underneath fails here, not in a run), and does what it says on a real event loop."""
from __future__ import annotations

import inspect

import gevent
from locust.user.task import TaskSet

import loadtest_locust


def test_locusts_wait_between_tasks_is_still_the_zero_second_sleep_the_patch_replaces():
    source = inspect.getsource(TaskSet)  # the file's, whatever the class holds now
    assert "    def _sleep(self, seconds):\n        gevent.sleep(seconds)\n" in source
    wait = source[source.index("    def wait(self):"):source.index("    def _sleep(self, seconds):")]
    assert "self._sleep(self.wait_time())" in wait and wait.count("_sleep(") == 1


class Task:
    """What _sleep sees of a TaskSet: its instance dictionary."""


def test_a_task_that_yielded_skips_the_zero_second_sleep_and_one_that_did_not_still_takes_it():
    others_ran = []
    task = Task()

    def other():
        while True:
            others_ran.append(1)
            gevent.sleep(0)

    neighbour = gevent.spawn(other)
    try:
        gevent.sleep(0.01)  # the neighbour runs, and the loop turns
        loadtest_locust._sleep_unless_yielded(task, 0)  # first look: it yielded just now
        before = len(others_ran)
        loadtest_locust._sleep_unless_yielded(task, 0)  # no yield since: it sleeps, and the neighbour runs
        assert len(others_ran) > before
        gevent.sleep(0.01)  # a task that waited for its answer
        before = len(others_ran)
        loadtest_locust._sleep_unless_yielded(task, 0)  # skipped: nobody else ran during it
        assert len(others_ran) == before
    finally:
        neighbour.kill()


def test_a_wait_of_more_than_zero_always_sleeps():
    task, slept = Task(), []
    loadtest_locust._sleep_unless_yielded(task, 0.25, sleep=slept.append)
    loadtest_locust._sleep_unless_yielded(task, 0.25, sleep=slept.append)
    assert slept == [0.25, 0.25]

"""An SLO stop: conditions that end a run early (`loadtest run --abort-on 'fail_ratio>5%'`, the chart's
`locust.abortOn`), so a target that is gone or broken is not loaded for the rest of the run time and the run says
when and why it stopped. A condition is written in the checks' language (loadtest_shared.checks) and read the other way:
the run stops once it holds over the requests the workers reported in the last WINDOW_S seconds, a fail ratio of the
last seconds rather than of the whole run, which a long healthy start would dilute.

The master stops the run as its run time would: the workers stop, the statistics and the series up to the stop are
kept, and the run is judged. The stop is a failed check (exit 1, checks.CHECK_FAILED): the condition is in
the checks' outcomes, and result.json's `faults.stopped_early` says when and what was measured. A target that hangs
(no response at all) is seen when its requests time out (LeanHttpUser's 60 s): until then there is nothing to judge.

Importing this module registers it (loadtest_lib imports it); it does nothing unless LOADTEST_ABORT_ON is set.
"""
from __future__ import annotations

import collections
import logging
import os
import time

import gevent
from locust import events
from locust.runners import STATE_RUNNING, STATE_SPAWNING, MasterRunner

import loadtest_faults
from loadtest_shared import checks, settings

WINDOW_S = 10.0  # the reports a condition is judged over: the last three or so of each worker (every 3 s)
LOOK_S = 1.0

logger = logging.getLogger(__name__)


class AbortOn:
    """The conditions, the workers' reports of the last WINDOW_S seconds, and the stop once one holds."""

    def __init__(self, environment, conditions: list):
        self.environment, self.conditions = environment, conditions
        self.reports: collections.deque = collections.deque()  # (time received, its serialized entries)
        self.stopped: dict | None = None

    def report(self, client_id: str, data: dict, **_) -> None:
        if data.get("stats"):
            self.reports.append((time.time(), data["stats"]))

    def holding(self, now: float) -> checks.Outcome | None:
        """The first condition that holds over the window's reports (its outcome as a check), or None."""
        while self.reports and self.reports[0][0] < now - WINDOW_S:
            self.reports.popleft()
        entries = [entry for _, stats in self.reports for entry in stats]
        if not entries:
            return None
        for outcome in checks.judge(self.conditions, checks.from_entries(entries)):
            if outcome.passed:  # the condition, read as a check, holds
                return outcome
        return None

    def look(self, now: float | None = None) -> bool:
        """Stop the run when a condition holds; whether it did."""
        runner = self.environment.runner
        if self.stopped or runner.state not in (STATE_SPAWNING, STATE_RUNNING):
            return False
        now = time.time() if now is None else now
        outcome = self.holding(now)
        if outcome is None:
            return False
        since = loadtest_faults.log.started if loadtest_faults.log else now
        self.stopped = {"check": outcome.check.text, "measured": outcome.measured, "at": now,
                        "description": f"--abort-on {outcome.check.text} held over the last {WINDOW_S:g} s of "
                                       f"reports ({checks.show(outcome.check.metric, outcome.measured)}) "
                                       f"{now - since:.0f} s into the run: the run was stopped there"}
        logger.error("%s", self.stopped["description"])
        if loadtest_faults.log:
            loadtest_faults.log.stopped_early = self.stopped
        gevent.spawn(end_run, self.environment)
        return True

    def outcome(self) -> checks.Outcome | None:
        """The stop as a failed check, for the run's judgement; None when the run was not stopped early."""
        if not self.stopped:
            return None
        [check] = [c for c in self.conditions if c.text == self.stopped["check"]]
        return checks.abort_outcome(check, self.stopped["measured"])

    def watch(self) -> None:
        while not self.look():
            gevent.sleep(LOOK_S)


def end_run(environment) -> None:
    """End the run as its run time does (Locust's own stop_and_optionally_quit): headless, quit at once; under
    --autostart, stop the users, stay --autoquit seconds, then quit; in the web UI, stop the users only."""
    runner, options = environment.runner, environment.parsed_options
    if options.headless:
        runner.quit()
        return
    runner.stop()
    if options.autostart and options.autoquit != -1:
        gevent.sleep(options.autoquit)
        runner.quit()
        if environment.web_ui:
            environment.web_ui.stop()


active: AbortOn | None = None  # the master's, when LOADTEST_ABORT_ON names conditions


@events.init.add_listener
def _register(environment, **_):
    global active
    if not os.environ.get(settings.ABORT_ON.env, "").strip() or not isinstance(environment.runner, MasterRunner):
        return
    try:
        conditions = checks.parse_all([os.environ[settings.ABORT_ON.env]])
    except checks.CheckError as e:
        logger.error("%s: %s", settings.ABORT_ON.env, e)
        raise SystemExit(checks.BAD_INPUT) from None
    active = AbortOn(environment, conditions)
    environment.events.worker_report.add_listener(active.report)
    gevent.spawn(active.watch)

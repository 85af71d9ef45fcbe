"""Pressing Ctrl-C on a command a test started, as a terminal does."""
from __future__ import annotations

import os
import signal


def sigint_restored() -> None:
    """A Popen preexec_fn: SIGINT back to its default in the child. A shell starts background jobs with SIGINT
    ignored (`scripts/test &`, nohup, some CI runners), and a Python started with it ignored never raises
    KeyboardInterrupt: the command under test would run on through its Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def foreground_job() -> None:
    """A Popen preexec_fn: the child as a terminal's foreground job, SIGINT restored and in a process group of its
    own, which press_ctrl_c signals whole (the command and every process it started in its group)."""
    sigint_restored()
    os.setpgrp()


def press_ctrl_c(proc) -> None:
    """Ctrl-C on a foreground_job: SIGINT to its whole process group, as a terminal sends it."""
    os.killpg(proc.pid, signal.SIGINT)

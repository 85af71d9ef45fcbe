"""Pressing Ctrl-C on a command a test started, as a terminal does."""
from __future__ import annotations

import signal


def sigint_restored() -> None:
    """A Popen preexec_fn: SIGINT back to its default in the child. A shell starts background jobs with SIGINT
    ignored (`scripts/test &`, nohup, some CI runners), and a Python started with it ignored never raises
    KeyboardInterrupt: the command under test would run on through its Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

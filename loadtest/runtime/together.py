"""Work for several regions at once, a thread each, that Ctrl-C still reaches: the main thread waits in short joins
(a blocking join holds Ctrl-C back until every thread ends), and on Ctrl-C tells the threads so, then waits for
them, so that each ends its own work (stops its swarm, finishes its helm upgrade) before the command goes on."""
from __future__ import annotations

import threading
from collections.abc import Callable

JOIN_S = 0.5


def at_once(work: dict[str, Callable[[], None]], on_interrupt: Callable[[], None] = lambda: None) -> bool:
    """Each of `work`'s functions in a thread of its own (named after its key), all started together and waited
    for; True when Ctrl-C came meanwhile (on_interrupt() was called, and every thread still ended)."""
    threads = [threading.Thread(target=job, name=name, daemon=True) for name, job in work.items()]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(JOIN_S)
        return False
    except KeyboardInterrupt:
        on_interrupt()
        for thread in threads:
            thread.join()
        return True


def one_line_at_a_time(progress: Callable[[str], None]) -> Callable[[str], None]:
    """`progress` for several threads: each line said whole (print writes a line and its newline apart, so two
    threads' lines could run into one)."""
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            progress(line)

    return say

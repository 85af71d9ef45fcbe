"""The run's processes are stopped once each: a Locust master that gets SIGTERM twice shuts down twice, and its second
shutdown writes its final statistics again, empty (Locust's serialize_stats resets what it serializes). Their ports
are out of reach of outgoing connections."""
import socket
import sys

from helpers import wait_for

from loadtest.runtime.processes import EPHEMERAL_RANGE, LOCAL_HOST, Processes, free_port

# Logs each SIGTERM it gets and takes a moment (argv[1] seconds) to shut down, as a Locust master writing its files.
# Each line is one write: print writes its text and its newline apart, and a SIGTERM handled between the two once
# logged "readySIGTERM" (an unbuffered stdout, the suite's whole run on 2026-12-07).
SLOW_TO_STOP = """
import signal, sys, time
def stopping(*_):
    sys.stdout.write("SIGTERM\\n")
    sys.stdout.flush()
    time.sleep(float(sys.argv[1]))
    sys.exit(0)
signal.signal(signal.SIGTERM, stopping)
sys.stdout.write("ready\\n")
sys.stdout.flush()
time.sleep(60)
"""


def test_every_process_gets_one_sigterm(tmp_path):
    procs = Processes(tmp_path)
    # The second is still shutting down when the first has gone: it must not be told again.
    for name, seconds in (("first", "0.3"), ("second", "1")):
        procs.start(name, [sys.executable, "-c", SLOW_TO_STOP, seconds])
    wait_for("both processes ready", lambda: all("ready" in (tmp_path / f"{name}.log").read_text()
                                                 for name in ("first", "second")), 10, every=0.05)
    procs.stop_all()
    for name in ("first", "second"):
        assert (tmp_path / f"{name}.log").read_text().split() == ["ready", "SIGTERM"], name


def test_a_free_port_lies_below_the_ephemeral_range_and_is_handed_out_once():
    """An outgoing connection takes its source port from the ephemeral range: a listener's port there can be taken
    before the listener binds it (a kube-controller-manager failed so beside a load of new connections)."""
    first_ephemeral = int(EPHEMERAL_RANGE.read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports) and all(port < first_ephemeral for port in ports), ports
    for port in ports:
        with socket.socket() as s:
            s.bind((LOCAL_HOST, port))  # nothing listens there

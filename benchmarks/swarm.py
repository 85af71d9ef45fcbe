"""Simulated Locust workers for benchmarks/master.py: N zmq DEALER sockets in one process that speak Locust's worker
protocol to a real master, each sending what a real worker sends, as often: a heartbeat every second, a statistics
report every 3 s (Locust's HEARTBEAT_INTERVAL and WORKER_REPORT_INTERVAL). The payloads are a real worker's, recorded
by RECORDER (the master benchmark records one before it starts a swarm): its heartbeat, its last statistics report
(the plugin's CPU and throttling figures and the open model's slots and service times included), and in the open
model the plugin's message that it can take its share of the rate. Only the worker id differs per simulated worker. A worker reports
from the moment it has its users: the master clears its statistics as it hands them out, and a real worker's reports
before that carry no requests.

    python benchmarks/swarm.py --master 127.0.0.1:5557 --workers 1000 --recording messages.bin

It reads commands on stdin, one per line ("stop-reports": no more statistics reports; "quit") and writes events on
stdout as JSON lines: "connected" (every worker acknowledged), "spawned" (every worker got its users), "reports"
(what was sent when told to stop reporting, and how late its clock ran at worst) and "counts" (at quit).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import uuid

import msgpack
import zmq
from locust import __version__ as LOCUST_VERSION
from locust.rpc.protocol import Message

from loadtest import paths

sys.path.insert(0, str(paths.PLUGIN))
import loadtest_arrival  # noqa: E402  (the plugin's open model: its message names)

HEARTBEAT_S = 1.0  # locust.runners.HEARTBEAT_INTERVAL
REPORT_S = 3.0  # locust.runners.WORKER_REPORT_INTERVAL
TICK_S = 0.05  # the swarm's clock: every worker's sends fall on one of these ticks, spread evenly

# A locustfile for the one real worker whose messages the swarm sends: every message the worker sends to its master
# is appended to LOADTEST_RECORDING, serialized as Locust serializes it.
RECORDER = '''
import os
from locust import events
from locust.runners import WorkerRunner


@events.init.add_listener
def record(environment, **_):
    runner = environment.runner
    if not isinstance(runner, WorkerRunner):
        return
    client, path = runner.client, os.environ["LOADTEST_RECORDING"]
    send = client.send

    def send_and_record(msg):
        with open(path, "ab") as f:
            data = msg.serialize()
            f.write(len(data).to_bytes(4, "big") + data)
        return send(msg)

    client.send = send_and_record
'''


class Recording:
    """A real worker's messages by type, the last of each (the statistics report: the last with requests in it)."""

    def __init__(self, path: str):
        self.messages: dict[str, Message] = {}
        with open(path, "rb") as f:
            raw = f.read()
        pos = 0
        while pos < len(raw):
            size = int.from_bytes(raw[pos:pos + 4], "big")
            msg = Message.unserialize(raw[pos + 4:pos + 4 + size])
            pos += 4 + size
            if msg.type != "stats" or msg.data.get("stats_total", {}).get("num_requests"):
                self.messages[msg.type] = msg
        missing = {"heartbeat", "stats", "spawning_complete"} - self.messages.keys()
        if missing:
            raise ValueError(f"{path}: the recorded worker sent no {', '.join(sorted(missing))}")

    @property
    def requests_per_report(self) -> int:
        return self.messages["stats"].data["stats_total"]["num_requests"]

    @property
    def open_model(self) -> bool:
        """The worker ran the open model: its reports carry the schedule's counts, and it says it is ready for its
        share of the rate (from the plugin's init, before the recorder wraps the worker's sends)."""
        return loadtest_arrival.REPORT_KEY in self.messages["stats"].data

    def encoded(self, kind: str, node_id: str, **changes) -> bytes:
        msg = self.messages[kind]
        data = {**msg.data, **changes} if changes else msg.data
        return Message(kind, data, node_id).serialize()


class Worker:
    """One simulated worker: its socket, its messages encoded once, and when it was acknowledged and spawned."""

    def __init__(self, context: zmq.Context, address: str, node_id: str, recording: Recording):
        self.node_id = node_id
        self.socket = context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.IDENTITY, node_id.encode())
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(f"tcp://{address}")
        self.heartbeat = recording.encoded("heartbeat", node_id, state="ready")
        self.heartbeat_running = recording.encoded("heartbeat", node_id, state="running")
        self.stats = recording.encoded("stats", node_id)
        self.ready = (Message(loadtest_arrival.READY_MESSAGE, None, node_id).serialize() if recording.open_model
                      else None)
        self.acked = self.spawned = False

    def send(self, data: bytes) -> None:
        self.socket.send(data, zmq.NOBLOCK)


class Swarm:
    def __init__(self, address: str, count: int, recording: Recording):
        self.context = zmq.Context(io_threads=1)
        self.context.set(zmq.MAX_SOCKETS, count + 64)
        self.recording = recording
        run = uuid.uuid4().hex[:8]
        self.workers = [Worker(self.context, address, f"sim{i:05d}-{run}_{uuid.uuid4().hex}", recording)
                        for i in range(count)]
        self.by_socket = {w.socket: w for w in self.workers}
        self.poller = zmq.Poller()
        for worker in self.workers:
            self.poller.register(worker.socket, zmq.POLLIN)
        self.counts = {"heartbeats_sent": 0, "heartbeats_received": 0, "reports_sent": 0, "shares_received": 0,
                       "quits_received": 0, "send_failures": 0}
        self.acked = self.spawned = 0
        self.reporting = True
        self.max_lag_s = 0.0  # how late the swarm sent a tick's messages: above a second, it is the bottleneck

    def hello(self) -> None:
        for worker in self.workers:
            worker.send(Message("client_ready", LOCUST_VERSION, worker.node_id).serialize())

    def tick(self, index: int) -> None:
        """Send what falls on tick `index`: the heartbeats of every (1 s / TICK_S)-th worker, the reports of every
        (3 s / TICK_S)-th."""
        beat_every, report_every = round(HEARTBEAT_S / TICK_S), round(REPORT_S / TICK_S)
        for worker in self.workers[index % beat_every::beat_every]:
            if worker.acked:
                self._send(worker, worker.heartbeat_running if worker.spawned else worker.heartbeat,
                           "heartbeats_sent")
        if self.reporting:
            for worker in self.workers[index % report_every::report_every]:
                if worker.spawned:  # the master clears its statistics when it starts the users
                    self._send(worker, worker.stats, "reports_sent")

    def _send(self, worker: Worker, data: bytes, counter: str) -> None:
        try:
            worker.send(data)
            self.counts[counter] += 1
        except zmq.Again:  # the socket's queue to the master is full: the master is not reading
            self.counts["send_failures"] += 1

    def receive(self, ready) -> None:
        for sock, _ in ready:
            worker = self.by_socket.get(sock)
            if worker is None:
                continue
            while True:
                try:
                    msg = Message.unserialize(sock.recv(zmq.NOBLOCK))
                except zmq.Again:
                    break
                self.handle(worker, msg)

    def handle(self, worker: Worker, msg: Message) -> None:
        if msg.type == "heartbeat":
            self.counts["heartbeats_received"] += 1
        elif msg.type == "ack":
            if not worker.acked:
                worker.acked = True
                self.acked += 1
                if worker.ready is not None:
                    worker.send(worker.ready)
        elif msg.type == "spawn":
            worker.send(Message("spawning", None, worker.node_id).serialize())
            classes = msg.data["user_classes_count"]
            worker.send(self.recording.encoded("spawning_complete", worker.node_id, user_classes_count=classes,
                                               user_count=sum(classes.values())))
            if not worker.spawned:
                worker.spawned = True
                self.spawned += 1
        elif msg.type == loadtest_arrival.SHARE_MESSAGE:
            self.counts["shares_received"] += 1
        elif msg.type == "quit":
            self.counts["quits_received"] += 1

    def close(self) -> None:
        for worker in self.workers:
            worker.socket.close(linger=0)
        self.context.term()


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


def run(address: str, count: int, recording: Recording) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * count + 256  # a zmq socket holds its TCP socket and its mailbox's eventfd
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(f"{count} workers need {needed} open files; this shell's hard limit is {hard} (ulimit -Hn)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    swarm = Swarm(address, count, recording)
    swarm.poller.register(sys.stdin.fileno(), zmq.POLLIN)
    swarm.hello()
    start = time.monotonic()
    done = -1  # the last tick sent
    connected_said = spawned_said = False
    while True:
        now = time.monotonic()
        while done < int((now - start) / TICK_S):
            done += 1
            swarm.max_lag_s = max(swarm.max_lag_s, now - (start + done * TICK_S))
            swarm.tick(done)
        next_tick = start + (done + 1) * TICK_S
        ready = swarm.poller.poll(max(0, int((next_tick - time.monotonic()) * 1000)))
        swarm.receive(ready)
        if not connected_said and swarm.acked == count:
            connected_said = True
            emit("connected", workers=count)
        if not spawned_said and swarm.spawned == count:
            spawned_said = True
            emit("spawned", workers=count)
        if any(sock == sys.stdin.fileno() for sock, _ in ready):
            data = os.read(sys.stdin.fileno(), 4096)
            for command in data.decode().split() if data else ["quit"]:  # end of input: quit
                if command == "stop-reports":
                    swarm.reporting = False
                    emit("reports", sent=swarm.counts["reports_sent"], max_lag_s=swarm.max_lag_s,
                         requests_per_report=recording.requests_per_report)
                elif command == "quit":
                    emit("counts", acked=swarm.acked, spawned=swarm.spawned, **swarm.counts)
                    swarm.close()
                    return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--master", required=True, help="the master's host:port (its --master-bind-port)")
    parser.add_argument("--workers", type=int, required=True, help="how many workers to simulate")
    parser.add_argument("--recording", required=True, help="a real worker's messages (RECORDER's file)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers: at least 1")
    try:
        recording = Recording(args.recording)
    except (OSError, ValueError, msgpack.UnpackException) as e:
        parser.error(f"--recording: {e}")
    run(args.master, args.workers, recording)
    return 0


if __name__ == "__main__":
    sys.exit(main())

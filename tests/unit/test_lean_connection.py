"""LeanHttpUser's connection check on its own: a keep-alive connection idle for a while is checked for the server's
close before reuse (plugin/leanhttp.py), whatever its descriptor's number."""
from __future__ import annotations

import os
import resource
import time

import pytest
from gevent import socket


import leanhttp  # noqa: E402

HIGH_FD = 1500  # select() refuses descriptors from 1024 on (FD_SETSIZE); a worker with thousands of users has them


@pytest.fixture
def server():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    yield listener
    listener.close()


def test_an_idle_connection_with_a_descriptor_above_1024_is_checked_and_dropped_once_the_server_closed(server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= HIGH_FD:
        pytest.skip(f"the open-file limit ({hard}) allows no descriptor {HIGH_FD}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, HIGH_FD + 1), hard))
    try:
        client = socket.create_connection(server.getsockname())
        os.dup2(client.fileno(), HIGH_FD)
        client.close()
        connection = leanhttp.HttpConnection(*server.getsockname())
        connection.sock = socket.socket(fileno=HIGH_FD)
        accepted, _ = server.accept()
        connection.idle_since = time.perf_counter() - leanhttp.IDLE_CHECK_S - 1
        assert connection.reusable()  # idle, still open: kept (select() raised ValueError here)
        accepted.close()  # the server drops its idle connection
        deadline = time.monotonic() + 5
        while connection.reusable() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert connection.sock is None  # closed by the check, so the next request opens a new one
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

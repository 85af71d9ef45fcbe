"""moto's S3 server for the layers that keep runs in a bucket (the dataplane's masters, the cluster's releases): on
127.0.0.1, checking every request's signature as S3 does, with the bucket S3_BUCKET made by the store's own signed
request; stopped by PID."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from helpers import wait_for

from loadtest.runtime.processes import LOCAL_HOST, STOP_TIMEOUT_S, free_port, stop

from loadtest_shared.s3 import Credentials, Store, sign

MOTO_STARTUP_TIMEOUT_S = 60  # its imports take seconds on a busy machine
S3_BUCKET = "loadtest-results"
# Each IAM request below is one of moto's unchecked requests: keep INITIAL_NO_AUTH_ACTION_COUNT equal to their number.
BOOTSTRAP_REQUESTS = 3
S3_FULL_ACCESS = json.dumps({"Version": "2012-10-17",
                             "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})


def wait_for_port(port: int, proc: subprocess.Popen, log: Path) -> None:
    def listening() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"moto_server exited with {proc.returncode}:\n{log.read_text()[-3000:]}", pytrace=False)
        socket.create_connection((LOCAL_HOST, port), timeout=1).close()
        return True

    wait_for(f"moto_server listening on {port}", listening, MOTO_STARTUP_TIMEOUT_S, every=0.2, ignoring=(OSError,),
             detail=lambda: log.read_text()[-3000:])


def iam(endpoint: str, **params: str) -> str:
    """One IAM Query API call (while moto checks no signature: the signature only routes it to IAM)."""
    body = urllib.parse.urlencode({**params, "Version": "2010-05-08"}).encode()
    headers = sign("POST", f"{endpoint}/", {"Content-Type": "application/x-www-form-urlencoded"},
                   hashlib.sha256(body).hexdigest(), Credentials("AKIABOOTSTRAP", "-"), service="iam")
    with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/", data=body, headers=headers, method="POST"),
                                timeout=10) as resp:
        return resp.read().decode()


@contextlib.contextmanager
def moto_s3(folder: Path):
    """(endpoint, credentials) of a moto S3 whose log is in `folder`, with the bucket S3_BUCKET."""
    try:
        import moto  # noqa: F401
    except ImportError:
        pytest.fail("moto is not installed in this venv: run scripts/setup (requirements.txt pins it)", pytrace=False)
    log = folder / "moto.log"
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(BOOTSTRAP_REQUESTS)}
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", LOCAL_HOST, "-p", str(port)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for_port(port, proc, log)
        endpoint = f"http://{LOCAL_HOST}:{port}"
        iam(endpoint, Action="CreateUser", UserName="loadtest")
        created = iam(endpoint, Action="CreateAccessKey", UserName="loadtest")
        credentials = Credentials(re.search(r"<AccessKeyId>(.+?)</AccessKeyId>", created)[1],
                                  re.search(r"<SecretAccessKey>(.+?)</SecretAccessKey>", created)[1])
        iam(endpoint, Action="PutUserPolicy", UserName="loadtest", PolicyName="s3", PolicyDocument=S3_FULL_ACCESS)
        # From here on every request is checked: the bucket is made with the store's own signed request.
        Store(endpoint, S3_BUCKET, credentials=credentials).request("PUT")
        yield endpoint, credentials
    finally:
        stop(proc, STOP_TIMEOUT_S)

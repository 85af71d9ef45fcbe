"""The S3 results store (loadtest_shared.s3) against a real S3 API: moto's server (requirements.txt pins it)
on 127.0.0.1, with its signature checks ON. moto serves any request unsigned by default; with
INITIAL_NO_AUTH_ACTION_COUNT=3 only the first three requests go unchecked (the IAM user, its access key and its
policy that the fixture creates), and every S3 request after them must carry a SigV4 signature moto recomputes with
the user's secret (botocore's signer, the SDKs' own) and an access key it knows. moto does not compare the body with
the signed X-Amz-Content-Sha256, which the unit layer checks (tests/unit/test_s3_signing.py)."""
from __future__ import annotations

import hashlib
import json
import socket
import time
from pathlib import Path

import pytest

from s3server import S3_BUCKET

from loadtest.runtime.processes import LOCAL_HOST

from loadtest_shared.s3 import Credentials, S3Error, Store

BUCKET = S3_BUCKET

@pytest.fixture
def store(s3, request):
    """A store in its own prefix (the test's name), so that tests never see each other's runs."""
    endpoint, credentials = s3
    return Store(endpoint, BUCKET, f"tests/{request.node.name}", credentials=credentials, retries=0)


def results_folder(path: Path, seed: str) -> Path:
    """A run's results folder as a run writes it (flat), with bytes a text round trip would mangle."""
    path.mkdir(parents=True)
    files = {
        "result.json": json.dumps({"run": seed, "rps": 17137.4, "verdict": "healthy"}).encode(),
        "checks.xml": f'<?xml version="1.0"?>\n<testsuite name="{seed}" tests="1"/>\n'.encode(),
        "summary.md": f"# {seed}\n\n| p99 | 10 ms |\n".encode(),
        "report.html": f"<html><body>{seed} — 17 137 RPS ✓</body></html>\r\n".encode(),
        "stats.csv": b"Type,Name,Request Count\nGET,/,341579\n",
        "stats_history.csv": b"".join(b"%d,%d\n" % (t, t * 17) for t in range(5000)),
        "stats_failures.csv": b"",
        "stats.json": json.dumps({"seed": seed, "raw": list(range(50))}).encode(),
        "series.csv": bytes(range(256)) * 8 + hashlib.sha256(seed.encode()).digest(),
    }
    for name, data in files.items():
        (path / name).write_bytes(data)
    return path


def folder_bytes(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_put_get_list_round_trip_pages_through_continuation_tokens(store):
    keys = [f"{store.prefix}/k{i:02d}" for i in range(7)]
    for i, key in enumerate(keys):
        store.put(key, f"object {i}\n".encode() + bytes([i, 0, 255]))
    store.put(f"{store.prefix}-sibling/k", b"a key beside the prefix, never listed under it")

    pages, request = [], store.request

    def counted(*args, **kwargs):
        pages.append(dict(kwargs.get("query") or {}))
        return request(*args, **kwargs)

    store.request = counted
    listed = store.list(f"{store.prefix}/", page_size=3)
    del store.request

    assert listed == keys
    assert len(pages) == 3, f"7 keys 3 a page are 3 ListObjectsV2 pages, not {len(pages)}: {pages}"
    assert "continuation-token" not in pages[0] and all("continuation-token" in p for p in pages[1:])
    assert [store.get(k) for k in keys] == [f"object {i}\n".encode() + bytes([i, 0, 255]) for i in range(7)]
    assert store.list(f"{store.prefix}/nothing-here") == []
    with pytest.raises(S3Error) as missing:
        store.get(f"{store.prefix}/absent")
    assert (missing.value.status, missing.value.code) == (404, "NoSuchKey")


def test_upload_folder_then_runs_then_download_is_byte_identical(store, tmp_path):
    folder = results_folder(tmp_path / "2026-01-02T0304", "first")
    keys = store.upload_folder(folder, "2026-01-02T0304")

    assert keys[-1] == f"{store.prefix}/2026-01-02T0304/.complete", "the marker must be written last"
    assert sorted(keys[:-1]) == [f"{store.prefix}/2026-01-02T0304/{name}" for name in sorted(folder_bytes(folder))]
    assert store.runs() == ["2026-01-02T0304"]
    assert store.incomplete_runs() == []
    marker = json.loads(store.get(keys[-1]))
    assert marker["files"]["series.csv"]["sha256"] == hashlib.sha256((folder / "series.csv").read_bytes()).hexdigest()

    written = store.download_run("2026-01-02T0304", tmp_path / "back")
    assert sorted(p.name for p in written) == sorted(folder_bytes(folder))
    assert folder_bytes(tmp_path / "back") == folder_bytes(folder)

    with pytest.raises(FileExistsError, match="already complete"):
        store.upload_folder(folder, "2026-01-02T0304")


class DiesAfter(Store):
    """A store whose uploader dies (as a killed pod would) once it has written `puts` objects."""

    def __init__(self, *args, puts: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.puts_left = puts

    def put(self, key, data, content_type=None):
        if self.puts_left == 0:
            raise ConnectionResetError("the pod died mid-upload")
        self.puts_left -= 1
        super().put(key, data, content_type)


def test_upload_dying_midway_leaves_earlier_runs_intact_and_its_run_incomplete(store, tmp_path):
    first = results_folder(tmp_path / "first", "first")
    store.upload_folder(first, "run-1")
    before = {k: store.get(k) for k in store.list(f"{store.prefix}/run-1/")}

    second = results_folder(tmp_path / "second", "second")
    dying = DiesAfter(store.endpoint, store.bucket, store.prefix, credentials=store.credentials, retries=0, puts=4)
    with pytest.raises(ConnectionResetError):
        dying.upload_folder(second, "run-2")

    assert store.runs() == ["run-1"]
    assert store.incomplete_runs() == ["run-2"]
    assert len(store.list(f"{store.prefix}/run-2/")) == 4, "the 4 files written before the crash, and no marker"
    assert {k: store.get(k) for k in store.list(f"{store.prefix}/run-1/")} == before, "run-1's keys were touched"
    with pytest.raises(S3Error) as incomplete:
        store.download_run("run-2", tmp_path / "partial")
    assert incomplete.value.code == "IncompleteRun" and "never finished" in str(incomplete.value)
    store.download_run("run-1", tmp_path / "run-1")
    assert folder_bytes(tmp_path / "run-1") == folder_bytes(first)

    # The retry of the same run completes it.
    store.upload_folder(second, "run-2")
    assert (store.runs(), store.incomplete_runs()) == (["run-1", "run-2"], [])
    store.download_run("run-2", tmp_path / "run-2")
    assert folder_bytes(tmp_path / "run-2") == folder_bytes(second)


@pytest.mark.parametrize("wrong", ["secret", "access key"])
def test_wrong_credentials_are_refused_with_s3s_error_code(s3, store, tmp_path, wrong):
    endpoint, good = s3
    # The secret's last character changed (to "y" where it is "x": moto's random one ends so about one time in 60).
    bad = (Credentials(good.access_key, good.secret_key[:-1] + ("y" if good.secret_key.endswith("x") else "x"))
           if wrong == "secret"
           else Credentials("AKIA" + "Q" * 16, good.secret_key))
    intruder = Store(endpoint, BUCKET, store.prefix, credentials=bad, retries=0)
    with pytest.raises(S3Error) as refused:
        intruder.upload_folder(results_folder(tmp_path / "run", "x"), "run")
    want = "SignatureDoesNotMatch" if wrong == "secret" else "InvalidAccessKeyId"
    assert (refused.value.status, refused.value.code) == (403, want), str(refused.value)
    assert want in str(refused.value)
    assert store.list(f"{store.prefix}/") == [], "nothing may be written with wrong credentials"


def test_an_endpoint_that_never_answers_times_out_with_a_clear_error(s3):
    _, credentials = s3
    with socket.socket() as silent:  # listens, never answers
        silent.bind((LOCAL_HOST, 0))
        silent.listen()
        store = Store(f"http://{LOCAL_HOST}:{silent.getsockname()[1]}", BUCKET,
                                  credentials=credentials, timeout=0.5, retries=0)
        started = time.monotonic()
        with pytest.raises(S3Error) as silence:
            store.get("k")
    assert time.monotonic() - started < 5
    assert silence.value.status is None and silence.value.code == "NoAnswer", str(silence.value)

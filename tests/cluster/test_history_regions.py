"""`loadtest history` of two releases, as two regions' scheduled runs are: each release (locust.mode run, its runs
kept in a bucket through a Secret of its namespace) is read from the real API server (helm's values, the Secret), its
bucket's runs copied into a folder of its own, and each region gets its own table and page, held to its own
baseline: one region's runs never show in the other's. The bucket is moto's S3 on 127.0.0.1, checking signatures;
the two regions are two namespaces of one control plane (the node layer's several-release run has two contexts)."""
from __future__ import annotations

import base64
import os
import subprocess
import sys

from helpers import write_run
from s3server import S3_BUCKET, moto_s3

from loadtest import paths
from loadtest_shared.s3 import Store

RELEASE = "lt"
# Each region's runs: (folder name, RPS); the first of each is its pinned baseline.
RUNS = {0: [("20261101T000000Z-lt", 1000.0), ("20261102T000000Z-lt", 990.0)],
        1: [("20261101T000000Z-lt", 700.0), ("20261102T000000Z-lt", 400.0)]}


def secret(namespace: str, credentials) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "results-s3", "namespace": namespace},
            "data": {"AWS_ACCESS_KEY_ID": base64.b64encode(credentials.access_key.encode()).decode(),
                     "AWS_SECRET_ACCESS_KEY": base64.b64encode(credentials.secret_key.encode()).decode()}}


def test_each_regions_runs_are_copied_tabled_and_paged_apart(cluster, module_namespace_pair, helm, tmp_path):
    with moto_s3(tmp_path) as (endpoint, credentials):
        for i, namespace in enumerate(module_namespace_pair):
            cluster.apply([secret(namespace, credentials)])
            helm("install", RELEASE, str(paths.CHART), "-n", namespace, "--set", "locust.mode=run",
                 "--set", "locust.autostart.runTime=1m", "--set", "locust.results.store=s3",
                 "--set", f"locust.results.s3.endpoint={endpoint}", "--set", f"locust.results.s3.bucket={S3_BUCKET}",
                 "--set", f"locust.results.s3.prefix=region-{i}",
                 "--set", "locust.results.s3.existingSecret=results-s3")
            bucket = Store(endpoint, S3_BUCKET, f"region-{i}", credentials=credentials)
            for n, (run, rps) in enumerate(RUNS[i]):
                bucket.upload_folder(write_run(tmp_path / f"{i}" / run, rps=rps, started=1000.0 + n * 100), run)
            bucket.put(f"region-{i}/baseline", f"{RUNS[i][0][0]}\n".encode(), "text/plain")
        work = tmp_path / "work"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        listed = subprocess.run([sys.executable, "-m", "loadtest", "history", "--kubeconfig", str(cluster.kubeconfig),
                                 *(a for ns in module_namespace_pair for a in ("--release", f"{ns}/{RELEASE}"))],
                                capture_output=True, text=True, timeout=120, cwd=work, env=env,
                                stdin=subprocess.DEVNULL)
    print(listed.stdout, listed.stderr)
    assert listed.returncode == 0, listed.stderr
    sections = listed.stdout.split("== region ")[1:]
    assert len(sections) == 2
    for i, (namespace, section) in enumerate(zip(module_namespace_pair, sections)):
        assert section.startswith(f"{namespace}/{RELEASE}: release {RELEASE} (namespace {namespace})")
        copy = work / f"history-{namespace}-{RELEASE}"
        assert sorted(p.name for p in copy.iterdir() if p.is_dir()) == [run for run, _ in RUNS[i]]
        assert (copy / "history.html").is_file() and f"history page: history-{namespace}-{RELEASE}/" in section
        assert (copy / "baseline").read_text().strip() == RUNS[i][0][0]
        rows = [line for line in section.splitlines() if line.startswith(RUNS[i][1][0]) and "keepalive_1kb" in line]
        assert len(rows) == 1
        # Held to its own region's baseline: 990 against 1,000 holds; 400 against 700 regressed.
        assert f"{RUNS[i][1][1]:,.0f}" in rows[0], rows[0]
        assert rows[0].rstrip().endswith("ok" if i == 0 else "REGRESSED"), rows[0]

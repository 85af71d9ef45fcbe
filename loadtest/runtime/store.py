"""A store of judged runs that is not a local folder, copied into one for `loadtest history`: a release's store (the
PersistentVolumeClaim its scheduled runs write to, or its S3 bucket), or an S3 bucket given as s3://bucket/prefix.

A bucket is read with the client the chart's master uploads with (loadtest_shared.s3), the credentials from
the environment as the AWS SDKs take them (a release's own Secret when --release names one and the environment has
none). A PVC is read through a short-lived pod in the release's namespace that mounts it (PSS restricted, the
release's Locust image, gone when the copy is): `tar` over `kubectl exec`. Pinning a baseline writes the store's
`baseline` (a file, or an object) that the next scheduled run is held to.
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import secrets
import subprocess
import tarfile
import time
from pathlib import Path

from loadtest_shared import results, s3

from ..errors import RunFailed, UsageError
from . import tools
from .release import Release, ReleaseError

READER_TIMEOUT_S = 120  # for the reader pod to run: an image already on the node starts in seconds
KUBECTL_TIMEOUT_S = 300  # for one kubectl call through the reader pod: tarring a claim of many runs
RESULTS_MOUNT = "/results"


class StoreError(RunFailed):
    pass


class S3Runs:
    """Runs in a bucket."""

    def __init__(self, store):
        self.store = store

    @property
    def where(self) -> str:
        return self.store.url

    def copy_to(self, into: Path, progress=print) -> list[str]:
        """The complete runs not yet in `into`, downloaded, and the pinned baseline; the incomplete uploads' names."""
        try:
            for run in self.store.runs():
                if not (into / run / results.RESULT).is_file():
                    progress(f"  {run}")
                    self.store.download_run(run, into / run)
            try:
                pinned = self.store.get(self.baseline_key).decode().strip()
                (into / results.BASELINE).write_text(pinned + "\n")
            except s3.S3Error as e:
                if e.code != "NoSuchKey":
                    raise
                (into / results.BASELINE).unlink(missing_ok=True)
            return self.store.incomplete_runs()
        except s3.S3Error as e:
            raise StoreError(f"{self.where}: {e}") from None

    @property
    def baseline_key(self) -> str:
        return "/".join(p for p in (self.store.prefix, results.BASELINE) if p)

    def pin(self, run: str) -> None:
        try:
            self.store.put(self.baseline_key, f"{run}\n".encode(), "text/plain")
        except s3.S3Error as e:
            raise StoreError(f"{self.where}: {e}") from None


def bucket(url: str) -> S3Runs:
    """s3://bucket/prefix, credentials from the environment."""
    try:
        return S3Runs(s3.from_url(url))
    except (ValueError, s3.S3Error) as e:
        raise UsageError(f"--store {url}: {e}") from None


class PvcRuns:
    """Runs on a release's PersistentVolumeClaim, read and written through a pod that mounts it."""

    def __init__(self, release: Release, claim: str, image: str):
        self.release, self.claim, self.image = release, claim, image

    @property
    def where(self) -> str:
        return f"PersistentVolumeClaim {self.claim} (namespace {self.release.namespace})"

    @contextlib.contextmanager
    def _reader(self):
        name = f"{self.release.name}-results-{secrets.token_hex(3)}"[:63]
        restricted = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                      "readOnlyRootFilesystem": True}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {
                   "app.kubernetes.io/instance": self.release.name, "app.kubernetes.io/component": "results-reader",
                   "app.kubernetes.io/managed-by": "loadtest"}},
               "spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 900, "automountServiceAccountToken": False,
                        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                                            "fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
                        # Up until deleted: a sleep as the container's PID 1 would ignore SIGTERM and hold the
                        # pod (and the claim, ReadWriteOnce, that a run's master needs next) for its whole 30 s grace.
                        "containers": [{"name": "reader", "image": self.image,
                                        "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 900 & wait"],
                                        "securityContext": restricted,
                                        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                                                      "limits": {"cpu": "200m", "memory": "128Mi"}},
                                        "volumeMounts": [{"name": "results", "mountPath": RESULTS_MOUNT}]}],
                        "volumes": [{"name": "results", "persistentVolumeClaim": {"claimName": self.claim}}]}}
        self._kubectl_stdin(json.dumps(pod), "apply", "-f", "-")
        try:
            deadline = time.monotonic() + READER_TIMEOUT_S
            while self.release.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}") != "Running":
                if time.monotonic() > deadline:
                    events = self.release.kubectl("get", "events", "--field-selector",
                                                  f"involvedObject.name={name}", "-o",
                                                  "jsonpath={range .items[*]}{.message}{'\\n'}{end}")
                    raise StoreError(f"the pod that reads {self.where} did not start in {READER_TIMEOUT_S} s "
                                     f"(the PVC may be attached to a node where a run is going on):\n{events}")
                time.sleep(1)
            yield name
        finally:
            self.release.kubectl("delete", "pod", name, "--wait=false", "--ignore-not-found")

    def _kubectl_stdin(self, text: str, *args: str) -> bytes:
        # Its own flags first: after `exec POD --`, every word is the container's command.
        cmd = [tools.find("kubectl"), *self.release.where("kubectl")]
        try:
            out = subprocess.run([*cmd, *args], input=text.encode(), capture_output=True, timeout=KUBECTL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise StoreError(f"kubectl {' '.join(args[:2])} did not finish in {KUBECTL_TIMEOUT_S} s") from None
        if out.returncode != 0:
            raise StoreError(f"kubectl {' '.join(args[:2])} failed: {out.stderr.decode().strip()}")
        return out.stdout

    def _exec(self, pod: str, *command: str) -> bytes:
        return self._kubectl_stdin("", "exec", pod, "-c", "reader", "--", *command)

    def copy_to(self, into: Path, progress=print) -> list[str]:
        with self._reader() as pod:
            archive = self._exec(pod, "tar", "-C", RESULTS_MOUNT, "-cf", "-", ".")
        (into / results.BASELINE).unlink(missing_ok=True)  # the claim's, if it has one, comes with the copy
        for run in extract(archive, into):
            progress(f"  {run}")
        return []  # a folder on the claim is never half-uploaded: an unfinished run says so in its result.json

    def pin(self, run: str) -> None:
        with self._reader() as pod:
            self._exec(pod, "sh", "-c", f'printf "%s\\n" "$1" > {RESULTS_MOUNT}/{results.BASELINE}', "sh", run)


def extract(archive: bytes, into: Path) -> list[str]:
    """Unpack a tar of the claim (`tar -C /results -cf - .`) into `into`: its files and folders only, none outside
    it; returns the run folders it held."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        tar.extractall(into, members=members, filter="data")
    # "./<run>/<file>": pathlib drops the ".", so a run's folder is the first part of a member's path.
    return sorted({Path(m.name).parts[0] for m in members if len(Path(m.name).parts) > 1})


def of_release(release: Release) -> PvcRuns | S3Runs:
    """Where the release keeps its runs, from its values (locust.results)."""
    values = release.values()
    locust = values.get("locust", {})
    kept = locust.get("results", {})
    store = kept.get("store", "none")
    if store == "pvc":
        claim = kept.get("pvc", {}).get("existingClaim") or release.labelled("pvc", "locust-results")["metadata"]["name"]
        return PvcRuns(release, claim, master_image(release))
    if store == "s3":
        config = kept.get("s3", {})
        credentials = None
        if not os.environ.get("AWS_ACCESS_KEY_ID") and config.get("existingSecret"):
            credentials = _secret_credentials(release, config["existingSecret"])
        try:
            return S3Runs(s3.Store(config.get("endpoint"), config.get("bucket"), config.get("prefix", ""),
                                   config.get("region") or s3.DEFAULT_REGION, credentials=credentials))
        except (ValueError, s3.S3Error) as e:
            raise UsageError(f"release {release.name}'s bucket: {e}") from None
    raise UsageError(f"release {release.name} keeps no results (locust.results.store is {store!r}): set "
                     "locust.results.store=pvc or s3 with locust.mode=run")


def master_image(release: Release) -> str:
    """The image the release's master runs (packages baked in or not): the reader pod runs it too, so it is on the
    node already and holds tar."""
    found = json.loads(release.kubectl("get", "cronjob,job,deployment", "-o", "json", "-l",
                                       f"app.kubernetes.io/instance={release.name},"
                                       "app.kubernetes.io/component=locust-master"))["items"]
    for obj in found:
        spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
        return spec["template"]["spec"]["containers"][0]["image"]
    raise StoreError(f"release {release.name} has no Locust master in namespace {release.namespace}")


def _secret_credentials(release: Release, secret: str):
    try:
        data = json.loads(release.kubectl("get", "secret", secret, "-o", "json"))["data"]
        return s3.Credentials(base64.b64decode(data["AWS_ACCESS_KEY_ID"]).decode(),
                              base64.b64decode(data["AWS_SECRET_ACCESS_KEY"]).decode())
    except (ReleaseError, KeyError) as e:
        raise StoreError(f"cannot read the bucket's credentials from Secret {secret} ({e}); export "
                         "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead") from None

"""The S3 results store: a minimal S3 client (AWS Signature Version 4) that keeps each run's results folder in a bucket.

Why the standard library only: the uploader runs inside the Locust master pod, whose image holds Python, Locust and
nothing else (no boto3), and this file ships to the pod in the locustfiles ConfigMap like every module beside it. So
the signing is done here, by the book (AWS SigV4, the payload's SHA-256 signed: "UNSIGNED-PAYLOAD" is refused by some
S3-compatible stores), and the HTTP through urllib with a timeout on every request.

Where it talks to: any S3 API, path-style (`<endpoint>/<bucket>/<key>`, which every S3-compatible store serves;
MinIO, Ceph and the like often have no wildcard DNS for virtual-hosted buckets). Credentials come from the
environment as the AWS SDKs read them: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for temporary ones,
AWS_SESSION_TOKEN (the chart sets them from a Secret). `from_url` also reads AWS_REGION / AWS_DEFAULT_REGION and
AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, as the SDKs do.

Key layout (`prefix` may be empty; a run's folder is flat):

    <prefix>/<run>/result.json        every file of the run's results folder, under the run's name
    <prefix>/<run>/report.html        ...
    <prefix>/<run>/.complete          written LAST, once every file is in: a JSON list of the files with their sizes
                                      and SHA-256

A run is complete when its `.complete` marker is there. An upload that dies midway (pod killed, network gone) leaves
its run without the marker: `incomplete_runs()` lists it, `runs()` and `download_run` leave it out, and no other run's
keys are ever written. Uploading the same run again (a retry) overwrites its files, then writes the marker.
"""
from __future__ import annotations

import datetime
import hashlib
import hmac
import http.client
import json
import mimetypes
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

DEFAULT_REGION = "us-east-1"
TIMEOUT_S = 30.0  # per request: connecting, and each read of the answer
RETRIES = 2  # more attempts after a 5xx answer or a network failure (S3 asks clients to retry 500 and 503 SlowDown)
MARKER = ".complete"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
ALGORITHM = "AWS4-HMAC-SHA256"


class S3Error(Exception):
    """A request the store refused or could not answer: `status` (the HTTP status, None when no answer came),
    `code` and `message` (S3's <Error><Code> and <Message>, e.g. "SignatureDoesNotMatch"), `method` and `url`."""

    def __init__(self, status: int | None, code: str, message: str, method: str = "", url: str = ""):
        self.status, self.code, self.message, self.method, self.url = status, code, message, method, url
        where = f"{method} {url}: " if method else ""
        got = f"HTTP {status} {code}" if status is not None else code
        super().__init__(f"S3 {where}{got}: {message}" if message else f"S3 {where}{got}")


# --- Signature Version 4 -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    session_token: str | None = None

    def __repr__(self) -> str:  # never print the secret
        token = "..." if self.session_token else None
        return f"Credentials(access_key={self.access_key!r}, secret_key=..., session_token={token})"

    @classmethod
    def from_env(cls, environ=None) -> Credentials:
        """AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the optional AWS_SESSION_TOKEN, as the AWS SDKs read them."""
        env = os.environ if environ is None else environ
        key, secret = env.get("AWS_ACCESS_KEY_ID", ""), env.get("AWS_SECRET_ACCESS_KEY", "")
        if not key or not secret:
            missing = [n for n, v in (("AWS_ACCESS_KEY_ID", key), ("AWS_SECRET_ACCESS_KEY", secret)) if not v]
            raise S3Error(None, "MissingCredentials",
                          f"{' and '.join(missing)} not set: the S3 store signs every request with them")
        return cls(key, secret, env.get("AWS_SESSION_TOKEN") or None)


def uri_encode(text: str, encode_slash: bool = True) -> str:
    """SigV4's UriEncode: every byte of the UTF-8 form but A-Z a-z 0-9 - _ . ~ as %XY (upper-case hex); '/' kept in
    a path, encoded in a query value."""
    return urllib.parse.quote(text, safe="-_.~" if encode_slash else "-_.~/")


def canonical_query(query: str) -> str:
    """A URL's query as SigV4 signs it: each name and value decoded then UriEncoded, sorted, a bare name as `name=`."""
    pairs = []
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        pairs.append((uri_encode(urllib.parse.unquote(name)), uri_encode(urllib.parse.unquote(value))))
    return "&".join(f"{n}={v}" for n, v in sorted(pairs))


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sign(method: str, url: str, headers: dict[str, str], payload_sha256: str, credentials: Credentials,
         region: str = DEFAULT_REGION, now: datetime.datetime | None = None, service: str = "s3") -> dict[str, str]:
    """The headers to send for one request, signed with SigV4: `headers` plus Host, X-Amz-Date,
    X-Amz-Content-Sha256 (the payload's hex SHA-256, signed), X-Amz-Security-Token when the credentials have one,
    and Authorization. `url` is the URL as sent (path and query already encoded); every header is signed."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    parts = urllib.parse.urlsplit(url)
    out = {"Host": parts.netloc, **headers, "X-Amz-Date": amz_date, "X-Amz-Content-Sha256": payload_sha256}
    if credentials.session_token:
        out["X-Amz-Security-Token"] = credentials.session_token
    canonical = {}
    for name, value in out.items():
        canonical[name.lower()] = " ".join(str(value).split())
    signed_headers = ";".join(sorted(canonical))
    canonical_request = "\n".join([
        method,
        parts.path or "/",
        canonical_query(parts.query),
        "".join(f"{n}:{canonical[n]}\n" for n in sorted(canonical)),
        signed_headers,
        payload_sha256,
    ])
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical_request.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{credentials.secret_key}".encode(), amz_date[:8]), region), service),
                "aws4_request")
    signature = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    out["Authorization"] = (f"{ALGORITHM} Credential={credentials.access_key}/{scope},"
                            f"SignedHeaders={signed_headers},Signature={signature}")
    return out


# --- The store -----------------------------------------------------------------------------------------------------


def _local_name(tag: str) -> str:
    return tag.rpartition("}")[2]


def _check_segment(kind: str, name: str) -> str:
    """A run or file name is one path segment: no '/', not '.', '..' or empty (a store read back never writes
    outside the folder it was asked to fill)."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        raise ValueError(f"{kind} {name!r} is not a plain name (one path segment, no '/')")
    return name


class Store:
    """Runs' results folders in one bucket, under `prefix`. `put`, `get` and `list` take whole object keys;
    `upload_folder`, `runs`, `incomplete_runs` and `download_run` take run names and apply the prefix."""

    def __init__(self, endpoint: str, bucket: str, prefix: str = "", region: str = DEFAULT_REGION,
                 credentials: Credentials | None = None, timeout: float = TIMEOUT_S, retries: int = RETRIES,
                 page_size: int = 1000):
        parts = urllib.parse.urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"S3 endpoint {endpoint!r} is not an http(s) URL, e.g. https://s3.us-east-1.amazonaws.com")
        if not bucket or "/" in bucket:
            raise ValueError(f"S3 bucket {bucket!r} is not a bucket name")
        self._origin, self._base_path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
        self.endpoint = self._origin + self._base_path
        self.bucket, self.prefix, self.region = bucket, prefix.strip("/"), region
        self.credentials = credentials or Credentials.from_env()
        self.timeout, self.retries, self.page_size = timeout, retries, page_size

    def __repr__(self) -> str:
        return f"Store({self.endpoint!r}, bucket={self.bucket!r}, prefix={self.prefix!r}, region={self.region!r})"

    @property
    def url(self) -> str:
        """Where the runs are, for messages: s3://bucket/prefix."""
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    # -- requests --

    def object_url(self, key: str = "", query: dict[str, str] | None = None) -> str:
        """The path-style URL of `key` in the bucket (the bucket itself when key is empty), path and query encoded."""
        path = uri_encode(f"{self._base_path}/{self.bucket}" + (f"/{key}" if key else ""), encode_slash=False)
        q = "&".join(f"{uri_encode(k)}={uri_encode(v)}" for k, v in sorted((query or {}).items()))
        return f"{self._origin}{path}" + (f"?{q}" if q else "")

    def request(self, method: str, key: str = "", query: dict[str, str] | None = None, body: bytes = b"",
                headers: dict[str, str] | None = None) -> bytes:
        """One signed request, retried after a 5xx answer or a network failure; the answer's body, or S3Error."""
        url = self.object_url(key, query)
        payload_sha256 = hashlib.sha256(body).hexdigest()
        for attempt in range(self.retries + 1):
            signed = sign(method, url, dict(headers or {}), payload_sha256, self.credentials, self.region)
            req = urllib.request.Request(url, data=body if method in ("PUT", "POST") else None, method=method,
                                         headers=signed)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return resp.read()
            except urllib.error.HTTPError as e:
                error = self._error(e.code, e.read() if e.fp else b"", method, url)
                if e.code < 500:
                    raise error from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                reason = getattr(e, "reason", e)
                error = S3Error(None, "NoAnswer", f"no answer from {self.endpoint} ({reason})", method, url)
            if attempt < self.retries:
                time.sleep(0.5 * 2 ** attempt)
        raise error

    @staticmethod
    def _error(status: int, body: bytes, method: str, url: str) -> S3Error:
        code, message = "", ""
        try:
            root = ElementTree.fromstring(body)
            fields = {_local_name(el.tag): (el.text or "") for el in root.iter()}
            code, message = fields.get("Code", ""), fields.get("Message", "")
        except ElementTree.ParseError:
            message = body[:200].decode(errors="replace").strip()
        return S3Error(status, code or http.client.responses.get(status, "Error"), message, method, url)

    # -- objects --

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        """Write one object (PutObject), its payload's SHA-256 signed."""
        content_type = content_type or mimetypes.guess_type(key)[0] or "application/octet-stream"
        self.request("PUT", key, body=data, headers={"Content-Type": content_type})

    def get(self, key: str) -> bytes:
        """Read one object (GetObject); S3Error with code NoSuchKey when it is not there."""
        return self.request("GET", key)

    def list(self, prefix: str = "", page_size: int | None = None) -> list[str]:
        """Every key that starts with `prefix`, in S3's (UTF-8 binary) order: ListObjectsV2, page after page
        (`page_size` keys a page, 1000 at most) through the continuation token."""
        keys: list[str] = []
        query = {"list-type": "2", "prefix": prefix, "encoding-type": "url",
                 "max-keys": str(page_size or self.page_size)}
        while True:
            root = ElementTree.fromstring(self.request("GET", query=query))
            fields: dict[str, str] = {}
            for el in root:
                name = _local_name(el.tag)
                if name == "Contents":
                    for child in el:
                        if _local_name(child.tag) == "Key":
                            keys.append(urllib.parse.unquote(child.text or ""))
                else:
                    fields[name] = el.text or ""
            if fields.get("IsTruncated", "false").lower() != "true":
                return keys
            token = fields.get("NextContinuationToken")
            if not token:
                raise S3Error(200, "MissingContinuationToken",
                              "ListObjectsV2 said the list is truncated but gave no NextContinuationToken", "GET",
                              self.object_url(query=query))
            query = {**query, "continuation-token": token}

    # -- runs --

    def run_key(self, run_name: str, file_name: str = "") -> str:
        """`<prefix>/<run>/<file>` (`<prefix>/<run>/` without a file)."""
        return "/".join(p for p in (self.prefix, _check_segment("run name", run_name)) if p) + "/" + file_name

    def upload_folder(self, local_dir: str | os.PathLike, run_name: str) -> list[str]:
        """Upload every file of the run's flat results folder under `<prefix>/<run_name>/`, then, last, the
        `.complete` marker listing them; the keys written, marker last. A sub-folder is refused (a run's folder is
        flat), a local `.complete` is not sent (the marker is the store's own), and a run already complete in the
        store is not overwritten (FileExistsError)."""
        folder = Path(local_dir)
        entries = sorted(folder.iterdir()) if folder.is_dir() else None
        if entries is None:
            raise FileNotFoundError(f"results folder {folder} does not exist")
        nested = [p.name for p in entries if not p.is_file()]
        if nested:
            raise ValueError(f"results folder {folder} has sub-folders {nested}: a run's folder is flat")
        files = [p for p in entries if p.name != MARKER]
        marker_key = self.run_key(run_name, MARKER)
        if marker_key in self.list(marker_key):
            raise FileExistsError(f"run {run_name!r} is already complete in {self.url}: pick another run name")
        manifest, written = {}, []
        for path in files:
            data = path.read_bytes()
            key = self.run_key(run_name, _check_segment("file name", path.name))
            self.put(key, data)
            manifest[path.name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            written.append(key)
        marker = {"run": run_name, "files": manifest,
                  "uploaded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        self.put(marker_key, json.dumps(marker, indent=1, sort_keys=True).encode() + b"\n", "application/json")
        return [*written, marker_key]

    def sync_folder(self, local_dir: str | os.PathLike, run_name: str, sent: dict[str, tuple[int, int]]) -> int:
        """Upload the files of the run's folder that changed since `sent` (name -> size and mtime, updated in
        place), never the marker: while a run goes on, the bucket holds what it has so far, incomplete. The number
        of files sent."""
        count = 0
        for path in sorted(Path(local_dir).iterdir()):
            if not path.is_file() or path.name == MARKER:
                continue
            stat = path.stat()
            if sent.get(path.name) == (stat.st_size, stat.st_mtime_ns):
                continue
            self.put(self.run_key(run_name, _check_segment("file name", path.name)), path.read_bytes())
            sent[path.name] = (stat.st_size, stat.st_mtime_ns)
            count += 1
        return count

    def _scan(self) -> tuple[list[str], list[str]]:
        base = f"{self.prefix}/" if self.prefix else ""
        seen: dict[str, bool] = {}
        for key in self.list(base):
            run, sep, rest = key[len(base):].partition("/")
            if not sep or not run:
                continue  # an object beside the runs, not in a run's folder
            seen[run] = seen.get(run, False) or rest == MARKER
        return sorted(r for r, done in seen.items() if done), sorted(r for r, done in seen.items() if not done)

    def runs(self) -> list[str]:
        """The names of the complete runs under the prefix (those with their `.complete` marker), sorted."""
        return self._scan()[0]

    def incomplete_runs(self) -> list[str]:
        """The names of the runs whose upload never finished (files but no `.complete` marker), sorted."""
        return self._scan()[1]

    def download_run(self, run_name: str, local_dir: str | os.PathLike) -> list[Path]:
        """Download a complete run's files into `local_dir` (created if needed), each checked against the size and
        SHA-256 its marker recorded; the paths written. S3Error (code IncompleteRun) when the run has no marker."""
        marker_key = self.run_key(run_name, MARKER)
        try:
            marker = json.loads(self.get(marker_key))
        except S3Error as e:
            if e.code != "NoSuchKey":
                raise
            raise S3Error(e.status, "IncompleteRun",
                          f"run {run_name!r} has no {MARKER} marker in {self.url}: its upload never finished "
                          f"(or there is no such run)", e.method, e.url) from None
        folder = Path(local_dir)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, meta in sorted(marker["files"].items()):
            data = self.get(self.run_key(run_name, _check_segment("file name", name)))
            if len(data) != meta["size"] or hashlib.sha256(data).hexdigest() != meta["sha256"]:
                raise S3Error(200, "ChecksumMismatch",
                              f"{name} of run {run_name!r} is not the file its {MARKER} marker recorded "
                              f"({len(data)} bytes, want {meta['size']})", "GET",
                              self.object_url(self.run_key(run_name, name)))
            (folder / name).write_bytes(data)
            written.append(folder / name)
        return written


def from_url(url: str, endpoint: str | None = None, region: str | None = None, **kwargs) -> Store:
    """A Store for "s3://bucket/prefix". The region: `region`, else AWS_REGION or AWS_DEFAULT_REGION, else
    us-east-1; the endpoint: `endpoint`, else AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else AWS's for the region."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"results store {url!r} is not an s3://bucket/prefix URL")
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
    endpoint = (endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
                or f"https://s3.{region}.amazonaws.com")
    return Store(endpoint, parts.netloc, parts.path, region, **kwargs)

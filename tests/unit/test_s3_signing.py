"""The S3 store's Signature Version 4 (loadtest_shared.s3) against the worked examples AWS publishes in
"Signature Calculations for the Authorization Header: Transferring Payload in a Single Chunk" (S3 API reference,
sig-v4-header-based-auth): the same inputs must give AWS's signatures to the last hex digit, or S3 refuses every
request with SignatureDoesNotMatch. No network: the store's request building is checked on its own."""
from __future__ import annotations

import datetime
import hashlib

import pytest


from loadtest_shared import s3

# The examples' credentials and time (AWS's documentation keys, not real ones).
AWS_EXAMPLE = s3.Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
AWS_EXAMPLE_TIME = datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc)
HOST = "https://examplebucket.s3.amazonaws.com"


def test_get_object_example_gives_aws_authorization_header():
    """"Example: GET Object": the first 10 bytes of test.txt, empty payload hashed."""
    headers = s3.sign("GET", f"{HOST}/test.txt", {"Range": "bytes=0-9"}, s3.EMPTY_SHA256,
                               AWS_EXAMPLE, "us-east-1", AWS_EXAMPLE_TIME)
    assert headers["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    assert headers["X-Amz-Content-Sha256"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert headers["X-Amz-Date"] == "20130524T000000Z"
    assert headers["Host"] == "examplebucket.s3.amazonaws.com"


def test_put_object_example_signs_the_payload_hash_and_encodes_the_key():
    """"Example: PUT Object": "Welcome to Amazon S3." as test$file.text; the payload's SHA-256 is signed (not
    UNSIGNED-PAYLOAD) and '$' in the key is sent and signed as %24."""
    payload_sha256 = hashlib.sha256(b"Welcome to Amazon S3.").hexdigest()
    assert payload_sha256 == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
    url = f"{HOST}/{s3.uri_encode('test$file.text', encode_slash=False)}"
    assert url.endswith("/test%24file.text")
    headers = s3.sign(
        "PUT", url, {"Date": "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY"},
        payload_sha256, AWS_EXAMPLE, "us-east-1", AWS_EXAMPLE_TIME)
    assert headers["Authorization"].endswith(
        ",SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
        "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")


@pytest.mark.parametrize(("query", "signature"), [
    # "Example: GET Bucket Lifecycle": a bare sub-resource name is signed as "lifecycle=".
    ("lifecycle", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
    # "Example: Get Bucket (List Objects)": the query is signed sorted, whatever order it is sent in.
    ("max-keys=2&prefix=J", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
    ("prefix=J&max-keys=2", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
])
def test_bucket_examples_sign_the_canonical_query(query, signature):
    headers = s3.sign("GET", f"{HOST}/?{query}", {}, s3.EMPTY_SHA256, AWS_EXAMPLE, "us-east-1",
                               AWS_EXAMPLE_TIME)
    assert headers["Authorization"].endswith(f"Signature={signature}")


def test_uri_encode_is_sigv4s_not_urls_default():
    assert s3.uri_encode("a b+c=d&e/f~g_h-i.j") == "a%20b%2Bc%3Dd%26e%2Ff~g_h-i.j"
    assert s3.uri_encode("runs/2026-01-02 03:04/x", encode_slash=False) == "runs/2026-01-02%2003%3A04/x"
    assert s3.uri_encode("é") == "%C3%A9"
    assert s3.canonical_query("prefix=a%2Fb&list-type=2&continuation-token=x%2By%3D") == \
        "continuation-token=x%2By%3D&list-type=2&prefix=a%2Fb"


def test_session_token_is_sent_and_signed():
    creds = s3.Credentials("ASIAEXAMPLE", "secret", session_token="token/with+chars")
    headers = s3.sign("GET", f"{HOST}/k", {}, s3.EMPTY_SHA256, creds, "eu-west-1",
                               AWS_EXAMPLE_TIME)
    assert headers["X-Amz-Security-Token"] == "token/with+chars"
    assert "x-amz-security-token" in headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert "/20130524/eu-west-1/s3/aws4_request," in headers["Authorization"]


def test_store_builds_path_style_urls_under_the_prefix():
    store = s3.Store("http://127.0.0.1:9000/", "results", "/nightly/", credentials=AWS_EXAMPLE)
    assert store.run_key("2026-01-02T0304", "report.html") == "nightly/2026-01-02T0304/report.html"
    assert store.object_url(store.run_key("run 1", "stats.csv")) == \
        "http://127.0.0.1:9000/results/nightly/run%201/stats.csv"
    assert store.object_url(query={"prefix": "nightly/", "list-type": "2"}) == \
        "http://127.0.0.1:9000/results?list-type=2&prefix=nightly%2F"
    with pytest.raises(ValueError, match="one path segment"):
        store.run_key("../other-run", "x")


def test_from_url_reads_bucket_prefix_region_and_endpoint(monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    store = s3.from_url("s3://results/loadtest/nightly")
    assert (store.bucket, store.prefix, store.region, store.endpoint) == \
        ("results", "loadtest/nightly", "us-east-1", "https://s3.us-east-1.amazonaws.com")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert s3.from_url("s3://results").endpoint == "https://s3.eu-west-1.amazonaws.com"
    store = s3.from_url("s3://results/p", endpoint="http://127.0.0.1:9000")
    assert (store.endpoint, store.region) == ("http://127.0.0.1:9000", "eu-west-1")
    with pytest.raises(ValueError, match="s3://bucket/prefix"):
        s3.from_url("results/p")


def test_missing_credentials_are_named(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    with pytest.raises(s3.S3Error, match="AWS_ACCESS_KEY_ID not set"):
        s3.Store("http://127.0.0.1:9000", "results")


def test_error_carries_s3s_code_and_message():
    body = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code>'
            b"<Message>The request signature we calculated does not match</Message></Error>")
    error = s3.Store._error(403, body, "GET", "http://127.0.0.1:9000/results/k")
    assert (error.status, error.code) == (403, "SignatureDoesNotMatch")
    assert str(error) == ("S3 GET http://127.0.0.1:9000/results/k: HTTP 403 SignatureDoesNotMatch: "
                          "The request signature we calculated does not match")
    assert s3.Store._error(502, b"Bad gateway", "PUT", "u").code == "Bad Gateway"


def test_put_sends_and_signs_the_bodys_sha256_not_unsigned_payload(monkeypatch):
    """Some S3-compatible stores refuse UNSIGNED-PAYLOAD, and a signed hash lets S3 refuse a body changed in flight
    (moto, the dataplane layer's server, does not compare them: this is checked here)."""
    sent = []

    class Answer:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return b""

    def urlopen(req, timeout):
        sent.append((req, timeout))
        return Answer()

    monkeypatch.setattr(s3.urllib.request, "urlopen", urlopen)
    store = s3.Store("http://127.0.0.1:9000", "results", "p", credentials=AWS_EXAMPLE, timeout=7)
    body = b"<html>report</html>\n"
    store.put("p/run/report.html", body)
    req, timeout = sent[0]
    assert (req.get_method(), req.full_url, req.data, timeout) == (
        "PUT", "http://127.0.0.1:9000/results/p/run/report.html", body, 7)
    headers = {k.lower(): v for k, v in req.header_items()}
    assert headers["x-amz-content-sha256"] == hashlib.sha256(body).hexdigest()
    assert headers["content-type"] == "text/html"
    assert "x-amz-content-sha256" in headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")

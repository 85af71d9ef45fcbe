"""The CLI's one HTTP client, for what it asks of local ports (a port-forward to a release's Locust or Prometheus, a
process's status page, the local cluster's API server): a request with a timeout, always, and its body; the caller
says what a failure means. The pods' own clients (Prometheus, S3) are the plugin's, in the standard library."""
from __future__ import annotations

import http.client
import ssl
import urllib.error
import urllib.request


def fetch(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None, timeout: float,
          context: ssl.SSLContext | None = None) -> bytes:
    """The body of a GET (a POST with `data`); urllib's errors as they come (HTTPError for an answer that is not a
    2xx, another OSError when none came)."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        return response.read()


def status(url: str, *, timeout: float, context: ssl.SSLContext | None = None) -> int | None:
    """The HTTP status `url` answers with now, whatever it is (a 401 of a web UI behind its password is an answer);
    None while nothing answers (refused, reset, half an answer)."""
    try:
        request = urllib.request.Request(url)
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except (OSError, http.client.HTTPException):
        return None

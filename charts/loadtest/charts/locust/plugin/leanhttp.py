"""LeanHttpUser: a Locust user that spends its CPU on requests, not on client features.

FastHttpUser carries cookies, redirects, decoding and catch_response on every request; a throughput scenario needs
none of that, and a generator core spent on it is a node the user pays for. LeanHttpUser sends one prepared HTTP/1.1
request per self.request() call over its own connection, reads the whole response with a small parser, and reports
each attempt as one Locust request (the request event, or straight into Locust's statistics while only Locust's own
listener would hear it: see statistics_listener), so Locust's stats, web UI, CSV and master/worker distribution stay
as they are.

- Keep-alive (default): one persistent connection per user. After a failure the connection is dropped and the next
  request opens a new one; a connection left idle longer than IDLE_CHECK_S is checked for a server-side close first.
- keep_alive = False: a new connection per request, sent with `Connection: close`. With an https host that is a full
  TLS handshake per request (no session resumption), which is what a handshake scenario measures.
- Success is a 2xx status. Everything else is a failure with a stable message Locust groups by: the status
  (HttpStatusError), a refused/reset/closed connection, a malformed response, a TLS error, or no complete response
  within `timeout` seconds (connect, TLS, send and the whole body all count against it; the request ends at most
  DEADLINE_CHECK_S after its deadline).
- Requests that are in flight when Locust stops a user (end of the run, a step down) are not reported, as with any
  Locust user.

Host, port, scheme and an optional base path come from Locust's host (--host, LOCUST_HOST or the class attribute);
a scenario subclass sets the rest as class attributes and calls self.request() from its tasks.
"""
from __future__ import annotations

import functools
import re
import time
from urllib.parse import urlsplit

from gevent import get_hub, getcurrent, monkey, socket, ssl
from locust import User
from locust.runners import Runner as LocustRunner

# A server silently drops idle keep-alive connections after its timeout (nginx 75 s, HAProxy often seconds). Reusing
# one would fail a request the server never saw, so a connection idle longer than this is checked before reuse.
IDLE_CHECK_S = 1.0
# poll(), not select(): select refuses descriptors from 1024 on, and a worker with thousands of users has them. The
# original (unpatched) poll: with a zero timeout it never blocks, so it needs no event loop.
_poll = monkey.get_original("select", "poll")
_POLLIN = monkey.get_original("select", "POLLIN")
MAX_HEAD_BYTES = 64 * 1024  # a bigger response head (or chunk-size line) is garbage, not a response
RECV_BYTES = 256 * 1024
_FRAMING_HEADER = re.compile(rb"\r\n(content-length|transfer-encoding|connection)[ \t]*:[ \t]*([^\r\n]*)", re.I)
_BODYLESS_STATUSES = frozenset((204, 304))


# How often the process's requests in flight are checked against their deadlines (see Deadlines).
DEADLINE_CHECK_S = 0.1


class DeadlinePassed(Exception):
    """Thrown into a request's greenlet when its deadline has passed."""


class Deadlines:
    """The process's requests in flight (by greenlet) and when each must end. A timer of the event loop checks them
    every DEADLINE_CHECK_S and ends those past it, as a gevent Timeout would. A Timeout per request (an exception
    object and a libev timer started and stopped for every request) cost some 7 us of a request's 37 on one core:
    without it a core sent a quarter more (benchmarks/generators.py, chart 0.6.5)."""

    def __init__(self):
        self.due: dict = {}
        self._timer = None

    def start(self) -> None:
        """Check from now on, in this thread's event loop (once: every user calls it)."""
        if self._timer is None:
            self._timer = get_hub().loop.timer(DEADLINE_CHECK_S, DEADLINE_CHECK_S, ref=False)
            self._timer.start(self._check)

    def _check(self) -> None:
        now = time.perf_counter()
        due = self.due
        for greenlet in [g for g, deadline in due.items() if deadline <= now]:
            # Each thrown greenlet runs until it waits again, which may end or begin requests: look again.
            if due.get(greenlet, now + 1) <= now:
                del due[greenlet]
                if not greenlet.dead:
                    greenlet.throw(DeadlinePassed())


DEADLINES = Deadlines()
_clock = time.perf_counter


class HttpStatusError(Exception):
    """The response arrived, with a status other than 2xx."""

    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status = status


class ConnectionClosedError(ConnectionError):
    """The server closed the connection before the response was complete."""


class HttpProtocolError(Exception):
    """The bytes the server sent are not a valid HTTP/1.x response."""


@functools.lru_cache(maxsize=None)
def tls_context(verify: bool | str) -> ssl.SSLContext:
    """One context per verify setting, shared by all users: loading the CA store per user would cost seconds."""
    if verify is False:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
    context.set_alpn_protocols(["http/1.1"])
    return context


def _readable(sock: socket.socket) -> bool:
    """Bytes, or the peer's close, wait on sock: checked without blocking."""
    poller = _poll()
    poller.register(sock.fileno(), _POLLIN)
    return bool(poller.poll(0))


class HttpConnection:
    """One client connection to the target, used for one request at a time.

    exchange() sends a prepared request and reads the whole response, counting the body bytes without keeping them.
    Any exception leaves the connection closed; the next exchange() after close() opens a new one.
    """

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None = None, server_hostname: str | None = None):
        self.host, self.port = host, port
        self.tls, self.server_hostname = tls, server_hostname
        self.sock: socket.socket | None = None
        self.idle_since = self.ended = 0.0
        self._address: tuple | None = None  # resolved once per connection failure, not per (close-mode) connection

    def open(self) -> None:
        if self._address is None:
            family, kind, proto, _, sockaddr = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)[0]
            self._address = (family, kind, proto, sockaddr)
        family, kind, proto, sockaddr = self._address
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.connect(sockaddr)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=self.server_hostname)
        except BaseException:
            sock.close()
            self._address = None
            raise
        self.sock = sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def reusable(self, now: float | None = None) -> bool:
        """Open, and (after a long idle time) not closed by the server: an idle connection must not be readable.
        `now`: the clock (time.perf_counter) as the caller just read it, if it did."""
        if self.sock is None:
            return False
        if (_clock() if now is None else now) - self.idle_since > IDLE_CHECK_S and _readable(self.sock):
            self.close()
            return False
        return True

    def exchange(self, request: bytes, head_method: bool = False, now: float | None = None) -> tuple[int, int]:
        """Send `request`, read its response in full: (status, body length). Closes when the response says so;
        `ended` is the clock (time.perf_counter) when the response had been read.

        head_method: the request is a HEAD, whose response has no body whatever its headers say.
        now: the clock as the caller just read it, if it did (a clock reading less a request)."""
        if not self.reusable(now):
            self.open()
        try:
            sent = self.sock.send(request)  # one call sends a small request; gevent's sendall costs more
            if sent < len(request):
                self.sock.sendall(request[sent:])
            status, length, keep_alive = self._read_response(head_method)
        except BaseException:
            self.close()
            self._address = None
            raise
        self.ended = _clock()
        if keep_alive:
            self.idle_since = self.ended
        else:
            self.close()
        return status, length

    def _recv(self, size: int = RECV_BYTES, mid_response: bool = True) -> bytes:
        data = self.sock.recv(size)
        if not data:
            raise ConnectionClosedError(
                "connection closed mid-response" if mid_response else "connection closed before the response")
        return data

    def _more(self, buf: bytes, pos: int) -> tuple[bytes, int]:
        """The unread part of buf plus the next received bytes, with a limit on how long one line may grow."""
        if len(buf) - pos > MAX_HEAD_BYTES:
            raise HttpProtocolError(f"no line end within {MAX_HEAD_BYTES} bytes")
        return buf[pos:] + self._recv(), 0

    def _read_response(self, head_method: bool) -> tuple[int, int, bool]:
        if self.tls is None:
            # Right after the send the response is not there yet: gevent's recv would try anyway, fail (EAGAIN, a
            # syscall and an exception) and only then wait. Waiting first saves one of a request's five syscalls: a
            # core sent 7-35 % more in four pairs of runs (benchmarks/generators.py, chart 0.6.6). A TLS socket may
            # hold decrypted bytes read already, so it reads first.
            self.sock._wait(self.sock._read_event)
        buf = self._recv(mid_response=False)
        while True:  # interim 1xx responses precede the final one
            while (head_end := buf.find(b"\r\n\r\n")) < 0:
                buf, _ = self._more(buf, 0)
            version, status_digits = buf[:8], buf[9:12]
            if version not in (b"HTTP/1.1", b"HTTP/1.0") or buf[8:9] != b" " or not status_digits.isdigit() \
                    or buf[12:13] not in (b" ", b"\r"):
                raise HttpProtocolError("malformed status line")
            status = int(status_digits)
            body_start = head_end + 4
            if 100 <= status < 200 and status != 101:
                buf = buf[body_start:] or self._recv()
                continue
            break

        content_length, chunked, framed_by_close = None, False, False
        keep_alive = version == b"HTTP/1.1"
        for name, value in _FRAMING_HEADER.findall(buf, 0, head_end):
            name, value = name.lower(), value.strip().lower()
            if name == b"content-length":
                if not value.isdigit() or content_length not in (None, int(value)):
                    raise HttpProtocolError("invalid Content-Length")
                content_length = int(value)
            elif name == b"transfer-encoding":
                # RFC 9112 6.3: chunked as the final coding frames the body; any other coding runs until close
                chunked = value.rsplit(b",", 1)[-1].strip() == b"chunked"
                framed_by_close = not chunked
            else:
                tokens = {token.strip() for token in value.split(b",")}
                keep_alive = b"keep-alive" in tokens if version == b"HTTP/1.0" else b"close" not in tokens
        if status == 101:  # an upgrade nobody asked for: the connection no longer speaks HTTP
            keep_alive = False

        if head_method or status in _BODYLESS_STATUSES or status == 101:
            length, rest = 0, buf[body_start:]
        elif chunked:
            length, rest = self._read_chunked(buf, body_start)
        elif content_length is not None and not framed_by_close:
            length, rest = content_length, self._skip(buf[body_start:], content_length)
        else:
            return status, self._read_until_close(len(buf) - body_start), False
        # bytes after the response were never asked for: the connection is out of step with the server
        return status, length, keep_alive and not rest

    def _skip(self, received: bytes, length: int) -> bytes:
        """Consume a body of `length` bytes of which `received` arrived with the head; return what follows it."""
        remaining = length - len(received)
        while remaining > 0:
            remaining -= len(self._recv(min(remaining, RECV_BYTES)))
        return received[length:]

    def _read_chunked(self, buf: bytes, pos: int) -> tuple[int, bytes]:
        length = 0
        while True:
            while (line_end := buf.find(b"\r\n", pos)) < 0:
                buf, pos = self._more(buf, pos)
            try:
                size = int(buf[pos:line_end].split(b";", 1)[0], 16)
            except ValueError:
                raise HttpProtocolError("malformed chunk size") from None
            if size < 0:
                raise HttpProtocolError("malformed chunk size")
            pos = line_end + 2
            if size == 0:
                break
            length += size
            buffered = len(buf) - pos
            if buffered >= size:
                pos += size
            else:
                self._skip(b"", size - buffered)
                buf, pos = b"", 0
            while len(buf) - pos < 2:
                buf, pos = self._more(buf, pos)
            if buf[pos:pos + 2] != b"\r\n":
                raise HttpProtocolError("chunk data not followed by CRLF")
            pos += 2
        while True:  # trailer fields, up to an empty line
            while (line_end := buf.find(b"\r\n", pos)) < 0:
                buf, pos = self._more(buf, pos)
            empty_line = line_end == pos
            pos = line_end + 2
            if empty_line:
                return length, buf[pos:]

    def _read_until_close(self, received: int) -> int:
        while data := self.sock.recv(RECV_BYTES):
            received += len(data)
        return received


# Locust's own listener of the request event (the runner's, Runner.__init__'s on_request), known by its code.
_STATISTICS_LISTENER_CODE = next(const for const in LocustRunner.__init__.__code__.co_consts
                                 if getattr(const, "co_name", None) == "on_request")


# A replaced fire of the request event may say, under this attribute, how it changes each request's response time:
# a function of the response time (ms) giving the one to report, or None for a request it drops. The direct path
# below applies it and stays direct; a replaced fire without it is fired. (The open model's, loadtest_arrival: the
# latency from the slot, nothing while Locust stops the users.)
RESPONSE_TIME_OF = "response_time_of"


def statistics_listener(hook):
    """Locust's own listener among the request event's: it logs each request (and a failure's error) into the
    environment's statistics, and nothing else. None when the runner has none (no runner yet, another Locust).

    While it is the event's only listener, and the event's fire is Locust's (or one that says how it changes the
    response time, RESPONSE_TIME_OF), a request is logged into the statistics directly: firing the event would do
    that and only that, through two calls with nine keyword arguments each (2.3 us a request with that listener
    alone, where logging directly takes 1.0 us: timeit on one core, 2026-11-30)."""
    return next((handler for handler in hook._handlers
                 if getattr(handler, "__code__", None) is _STATISTICS_LISTENER_CODE), None)


class LeanHttpUser(User):
    """A user with one HTTP connection; each self.request() is one Locust request.

    Subclasses set what to send (class attributes) and call self.request() in their tasks. Choose FastHttpUser
    instead when a scenario needs cookies, redirects, response content checks or catch_response.
    """

    abstract = True
    path = "/"
    method = "GET"
    headers: dict[str, str] = {}  # added to Host and User-Agent; a Host here replaces the URL's (and sets SNI)
    body = b""
    keep_alive = True  # False: a new connection (and TLS handshake) per request
    verify: bool | str = False  # TLS: False accepts any certificate, True checks it against system CAs, or a CA file
    timeout = 60.0  # seconds for the whole request: connect, TLS handshake, send, whole response

    def __init__(self, environment):
        super().__init__(environment)
        if not self.host:
            raise ValueError(f"{type(self).__name__} needs a host: --host, LOCUST_HOST or the class attribute")
        url = urlsplit(self.host)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"{type(self).__name__}: host {self.host!r} is not like http(s)://name[:port]")
        tls = url.scheme == "https"
        self._base_url = f"{url.scheme}://{url.netloc}"
        self._base_path = url.path.rstrip("/")
        # header names are case-insensitive: keyed by lower case, a scenario's "host" replaces the URL's Host
        fields = {"host": ("Host", url.netloc.rpartition("@")[2]), "user-agent": ("User-Agent", "loadtest-lean")}
        fields.update((name.lower(), (name, value)) for name, value in self.headers.items())
        if not self.keep_alive:
            fields["connection"] = ("Connection", "close")
        if self.body or self.method in ("POST", "PUT", "PATCH"):
            fields["content-length"] = ("Content-Length", str(len(self.body)))
        self._head_lines = [f"{name}: {value}" for name, value in fields.values()]
        sni = urlsplit(f"//{fields['host'][1]}").hostname if tls else None
        self._connection = HttpConnection(url.hostname, url.port or (443 if tls else 80),
                                          tls_context(self.verify) if tls else None, sni)
        self._prepared: dict[str, tuple[bytes, str]] = {}
        self._prepare(self.path)  # a bad path or header fails at start, not on every request
        self._head_method = self.method == "HEAD"
        self._request_event = environment.events.request
        self._statistics_listener = statistics_listener(self._request_event)
        DEADLINES.start()

    def _prepare(self, path: str) -> tuple[bytes, str]:
        """The request bytes and URL for a path, built once per user and path."""
        prepared = self._prepared.get(path)
        if prepared is None:
            target = self._base_path + path
            lines = [f"{self.method} {target} HTTP/1.1", *self._head_lines]
            if any(c in line for line in lines for c in "\r\n\0") or not target.startswith("/") or " " in target:
                raise ValueError(f"{type(self).__name__}: path or headers would not make a valid request: {lines}")
            data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body
            prepared = self._prepared[path] = (data, self._base_url + target)
        return prepared

    def request(self, path: str | None = None, name: str | None = None) -> int | None:
        """Send one request (the class's path unless given) and report it. Returns the status, None when none came."""
        path = path or self.path
        name = name or path
        data, url = self._prepared.get(path) or self._prepare(path)
        due, me = DEADLINES.due, getcurrent()
        started = _clock()
        due[me] = started + self.timeout
        connection = self._connection
        try:
            status, length = connection.exchange(data, self._head_method, started)
            ended = connection.ended
            exception = None if 200 <= status < 300 else HttpStatusError(status)
        except DeadlinePassed:
            status, length, ended = None, 0, _clock()
            exception = TimeoutError(f"no complete response within {self.timeout:g} s")
        except (OSError, HttpProtocolError) as error:  # OSError covers refused, reset, closed, TLS and DNS errors
            status, length, ended, exception = None, 0, _clock(), error
        finally:
            due.pop(me, None)
        response_time = (ended - started) * 1000
        hook = self._request_event
        handlers = hook._handlers
        direct = len(handlers) == 1 and handlers[0] is self._statistics_listener
        if direct and "fire" in hook.__dict__:
            response_time_of = getattr(hook.fire, RESPONSE_TIME_OF, None)
            if response_time_of is None:
                direct = False
            else:
                response_time = response_time_of(response_time)
                if response_time is None:
                    return status  # a request the replaced fire drops
        if direct:
            # All the event would do: what Locust's own listener does with it (see statistics_listener).
            stats = self.environment.stats
            stats.log_request(self.method, name, response_time, length)
            if exception:
                stats.log_error(self.method, name, exception)
        else:
            hook.fire(request_type=self.method, name=name, response_time=response_time,
                      response_length=length, exception=exception, context=self.context(), response=None, url=url,
                      start_time=time.time() - response_time / 1000)
        return status

    def on_stop(self):
        self._connection.close()

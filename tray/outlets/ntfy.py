"""The phone, through ntfy: prompts out as JSON publishes, the user's taps back as a stream.

Only the standard library (http.client), so the app needs nothing more for it. Both go
through the web proxy that the standard variables name (:mod:`tray.outlets.web_proxy`,
from the environment the caller passes): an https server through a CONNECT tunnel, an
http one by asking the proxy for the whole URL.

``NtfyPublisher`` sends on a daemon thread of its own: ``publish`` queues and returns.
When the server cannot be reached it says so once, keeps the newest few messages, and
tries again later and later (5 s, doubling up to 5 min), saying once when it works again.

``ReplyStream`` reads the reply topic's JSON stream on a daemon thread and hands each
message's text to ``on_reply`` (on that thread: the caller posts it on to its worker).
On a reconnect it asks for what came since the last message it saw, so a reply sent
while the connection was down still arrives, and none arrives twice.

Anyone who knows a topic can read it and post to it: the topic is a password. So the
URL's path, the topic, the token and every message stay out of the log; lines name the
host only. Everything the server sends is untrusted: a reply is only ever text handed on,
bounded in size, and only a well-formed message id goes back into a request.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import re
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from types import MappingProxyType

from tray.core.config.away import NTFY_TOPIC, ntfy_server
from tray.outlets.web_proxy import Proxy, ProxySettingError, proxy_for

# What a message id may be before it goes back to the server as ``since`` (ntfy's are
# 12 of these characters).
MESSAGE_ID = re.compile(r"[-_A-Za-z0-9]{1,64}")

PUBLISH_TIMEOUT = 10.0
PUBLISH_BACKOFF_FIRST = 5.0
PUBLISH_BACKOFF_MAX = 300.0
# Messages kept while the server fails; older ones are dropped (their prompt is stale).
PENDING_LIMIT = 8
STREAM_BACKOFF_FIRST = 1.0
STREAM_BACKOFF_MAX = 60.0
CONNECT_TIMEOUT = 10.0
# ntfy sends a keepalive line every 45 s: two missed ones mean the connection is dead,
# even when no error says so (a NAT or a proxy forgot it).
READ_TIMEOUT = 90.0
# A reply is a signed token of up to 1 KiB; anything much bigger is not one of ours.
REPLY_LIMIT = 4096
LINE_LIMIT = 65536
READ_SIZE = 16384
# Ids of the replies handed on, against a server that sends one again (a message
# published while the stream subscribes, or a ``since`` id it no longer has).
SEEN_LIMIT = 1024
STOP_TIMEOUT = 2.0
# Statuses that refuse the message itself: sending it again would fail again.
_BAD_MESSAGE = frozenset({400, 413})
# No proxy variables: what a caller that passes no environment gets.
NO_ENVIRONMENT: Mapping[str, str] = MappingProxyType({})
# http.client's words when a proxy refuses a tunnel: "Tunnel connection failed: 407 ...".
_TUNNEL_REFUSED = re.compile(r"Tunnel connection failed: (\d{3})")


class _ProxyUnusableError(OSError):
    """The proxy variable that applies cannot be used; its text names the variable only."""


class _Server:
    """Where a base URL points: how to connect (directly or through a proxy), the path
    prefix, and the host for logs."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        environ: Mapping[str, str],
        tls: ssl.SSLContext | None,
    ) -> None:
        server = ntfy_server(base_url)
        self.https = server.https
        self.host = server.host.strip("[]")  # an IPv6 address, as http.client takes it
        self.port = server.port
        self.prefix = server.prefix
        self._netloc = server.host if server.port is None else f"{server.host}:{server.port}"
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        # The system's CAs and hostname checks, loaded once, unless the caller chose.
        self._context = (tls or ssl.create_default_context()) if self.https else None
        self.proxy: Proxy | None = None
        self._problem: str | None = None
        port = self.port or (443 if self.https else 80)
        try:
            self.proxy = proxy_for(self.https, self.host, port, environ)
        except ProxySettingError as error:
            self._problem = str(error)  # said at each attempt's failure, as any other
        # The proxy's host and port are no secret (its password is): they go in the log.
        self.where = self.host
        if self.proxy is not None:
            self.where += f" (through the proxy at {self.proxy.host}:{self.proxy.port})"

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._problem is not None:
            raise _ProxyUnusableError(self._problem)
        proxy = self.proxy
        if proxy is None:
            if self._context is not None:
                return http.client.HTTPSConnection(
                    self.host, self.port, timeout=timeout, context=self._context
                )
            return http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        if self._context is not None:
            # TLS end to end, inside a CONNECT tunnel: the proxy sees the host only.
            tunnel = http.client.HTTPSConnection(
                proxy.host, proxy.port, timeout=timeout, context=self._context
            )
            tunnel.set_tunnel(self.host, self.port, headers=proxy.headers())
            return tunnel
        return http.client.HTTPConnection(proxy.host, proxy.port, timeout=timeout)

    def target(self, path: str) -> str:
        """The request's target for ``path``: the whole URL when an http proxy is asked."""
        if self.proxy is not None and self._context is None:
            return f"http://{self._netloc}{path}"
        return path

    def request_headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {**(extra or {}), **self.headers}
        if self.proxy is not None and self._context is None:
            headers.update(self.proxy.headers())
        return headers


def _describe(error: BaseException) -> str:
    """What went wrong, by kind only: some errors' text holds a request's URL."""
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, _ProxyUnusableError):
        return str(error)
    refused = _TUNNEL_REFUSED.match(str(error)) if type(error) is OSError else None
    if refused is not None:
        return f"the proxy refused the tunnel: HTTP {refused.group(1)}"
    return type(error).__name__


class NtfyPublisher:
    """JSON publishes to one ntfy server, sent in order on a thread of its own."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        log: logging.Logger,
        timeout: float = PUBLISH_TIMEOUT,
        *,
        environ: Mapping[str, str] = NO_ENVIRONMENT,
        tls: ssl.SSLContext | None = None,
        backoff_first: float = PUBLISH_BACKOFF_FIRST,
        backoff_max: float = PUBLISH_BACKOFF_MAX,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``environ`` holds the proxy variables; ``tls``, the CAs to trust (the system's
        by default)."""
        self._server = _Server(base_url, token, environ, tls)
        self._log = log
        self._timeout = timeout
        self._backoff_first = backoff_first
        self._backoff_max = backoff_max
        self._clock = clock
        self._wake = threading.Condition()
        self._pending: deque[bytes] = deque(maxlen=PENDING_LIMIT)
        self._stopping = False
        self._failing = False
        self._backoff = 0.0
        self._retry_at = 0.0
        self._sent = 0
        self._failures = 0
        self._thread = threading.Thread(target=self._run, name="tray-ntfy-publish", daemon=True)
        self._thread.start()

    def publish(self, message: dict[str, object]) -> None:
        """Queue one JSON publish (``topic``, ``message``, ``actions``...); returns at once."""
        body = json.dumps(message, separators=(",", ":")).encode()
        with self._wake:
            self._pending.append(body)
            self._wake.notify()

    def stats(self) -> tuple[int, int, bool]:
        """(sent, failed attempts, failing now), for tests."""
        with self._wake:
            return self._sent, self._failures, self._failing

    def stop(self, timeout: float = STOP_TIMEOUT) -> bool:
        """Stop sending; whether the thread has ended (within ``timeout``)."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopping and not (
                    self._pending and self._retry_at <= self._clock()
                ):
                    wait = self._retry_at - self._clock() if self._pending else None
                    self._wake.wait(wait)
                if self._stopping:
                    return
                # Out of the queue while it is sent, so that a publish arriving meanwhile
                # never pushes out an unsent message in its place.
                body = self._pending.popleft()
            self._settle(body, self._send(body))

    def _send(self, body: bytes) -> int | str:
        """The server's status, or what kept the request from getting one."""
        try:
            connection = self._server.connection(self._timeout)
        except OSError as error:
            return _describe(error)
        headers = self._server.request_headers({"Content-Type": "application/json"})
        target = self._server.target(f"{self._server.prefix}/")
        try:
            connection.request("POST", target, body=body, headers=headers)
            response = connection.getresponse()
            response.read(LINE_LIMIT)
            return response.status
        except (OSError, http.client.HTTPException) as error:
            return _describe(error)
        finally:
            connection.close()

    def _settle(self, body: bytes, outcome: int | str) -> None:
        host = self._server.where
        with self._wake:
            if isinstance(outcome, int) and 200 <= outcome < 300:
                self._sent += 1
                if self._failing:
                    self._log.info("ntfy: publishing to %s works again", host)
                self._failing = False
                self._backoff = 0.0
                self._retry_at = 0.0
                return
            if outcome in _BAD_MESSAGE:
                self._log.warning("ntfy: %s refused a message (HTTP %s); dropped it", host, outcome)
                return
            self._failures += 1
            # Back at the head, unless newer ones have filled the queue meanwhile: then
            # this one, the oldest, is the one to drop.
            if len(self._pending) < PENDING_LIMIT:
                self._pending.appendleft(body)
            self._backoff = min(self._backoff_max, self._backoff * 2 or self._backoff_first)
            self._retry_at = self._clock() + self._backoff
            if not self._failing:
                self._failing = True
                reason = f"HTTP {outcome}" if isinstance(outcome, int) else outcome
                self._log.warning(
                    "ntfy: publishing to %s failed (%s); retrying in %g s, then less often",
                    host,
                    reason,
                    self._backoff,
                )


class _Lines:
    """A stream's lines, none longer than LINE_LIMIT: a longer one is skipped unread.

    Not HTTPResponse.readline(limit): over a chunked body it can return more than its
    limit (it checks each chunk's part against the whole limit).
    """

    def __init__(self, response: http.client.HTTPResponse) -> None:
        self._response = response
        self._buffer = bytearray()
        self._skipping = False

    def next(self) -> bytes | None:
        """The next line; b"" in place of one too long; None at the end."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                if self._skipping or len(line) > LINE_LIMIT + 1:
                    self._skipping = False
                    return b""
                return line
            if len(self._buffer) > LINE_LIMIT:
                self._buffer.clear()  # the start of a line too long: forget it as it comes
                self._skipping = True
            data = self._response.read1(READ_SIZE)
            if not data:
                return None
            self._buffer += data


class ReplyStream:
    """The reply topic's JSON stream, read on a thread of its own, reconnecting.

    The first connection asks for the messages since ``since`` (a unix time; ntfy counts
    it in whole seconds; by default the moment of ``start``), every later one for those
    after the last message id seen. After a connection fails or ends it waits 1 s,
    doubling up to 60 s, back to 1 s once a connection has shown itself alive (a message
    or a keepalive: an open event alone, from a server that then hangs up, is not).
    """

    def __init__(
        self,
        base_url: str,
        topic: str,
        token: str | None,
        on_reply: Callable[[str], None],
        log: logging.Logger,
        *,
        since: float | None = None,
        backoff_first: float = STREAM_BACKOFF_FIRST,
        backoff_max: float = STREAM_BACKOFF_MAX,
        read_timeout: float = READ_TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
        environ: Mapping[str, str] = NO_ENVIRONMENT,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """``environ`` holds the proxy variables; ``tls``, the CAs to trust (the system's
        by default)."""
        if not NTFY_TOPIC.fullmatch(topic):
            raise ValueError("an ntfy topic is 1 to 64 letters, digits, '-' or '_'")
        self._server = _Server(base_url, token, environ, tls)
        self._topic = topic
        self._on_reply = on_reply
        self._log = log
        self._since_time = since
        self._backoff_first = backoff_first
        self._backoff_max = backoff_max
        self._read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._last_id: str | None = None
        self._seen: set[str] = set()
        self._seen_order: deque[str] = deque()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._connection: http.client.HTTPConnection | None = None
        self._connected_once = False
        self._failing = False
        self._thread = threading.Thread(target=self._run, name="tray-ntfy-replies", daemon=True)

    def start(self) -> None:
        if self._since_time is None:
            # From now on, and not from the first connection: a reply sent while it
            # connects is then still asked for.
            self._since_time = time.time()
        self._thread.start()

    def stop(self, timeout: float = STOP_TIMEOUT) -> bool:
        """Stop listening; whether the thread has ended (within ``timeout``)."""
        self._stopping.set()
        with self._lock:
            connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            # Closing alone would not wake a read blocked in another thread.
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        delay = self._backoff_first
        while not self._stopping.is_set():
            delivered, reason = self._listen()
            if self._stopping.is_set():
                return
            if delivered:
                delay = self._backoff_first
            if not self._failing:
                self._failing = True
                self._log.warning(
                    "ntfy: the reply stream from %s failed (%s); reconnecting in %g s, "
                    "then less often",
                    self._server.where,
                    reason,
                    delay,
                )
            if self._stopping.wait(delay):
                return
            delay = min(self._backoff_max, delay * 2)

    def _path(self) -> str:
        since = self._last_id or str(int(self._since_time or 0))
        return self._server.target(f"{self._server.prefix}/{self._topic}/json?since={since}")

    def _listen(self) -> tuple[bool, str]:
        """One connection, read to its end: (whether it delivered anything, why it ended)."""
        try:
            connection = self._server.connection(self._connect_timeout)
        except OSError as error:
            return False, _describe(error)
        with self._lock:
            self._connection = connection
        delivered = False
        try:
            connection.connect()
            if self._stopping.is_set() or connection.sock is None:
                return False, "stopped"
            connection.sock.settimeout(self._read_timeout)
            connection.request("GET", self._path(), headers=self._server.request_headers())
            response = connection.getresponse()
            if response.status != 200:
                return False, f"HTTP {response.status}"
            self._connected()
            lines = _Lines(response)
            while not self._stopping.is_set():
                line = lines.next()
                if line is None:
                    return delivered, "the server ended it"
                delivered = self._take(line) or delivered
            return delivered, "stopped"
        except (OSError, ValueError, http.client.HTTPException) as error:
            return delivered, _describe(error)
        finally:
            with self._lock:
                self._connection = None
            connection.close()

    def _connected(self) -> None:
        host = self._server.where
        if self._failing:
            self._log.info("ntfy: the reply stream from %s is connected again", host)
        elif not self._connected_once:
            self._log.info("ntfy: listening for replies at %s", host)
        self._failing = False
        self._connected_once = True

    def _take(self, line: bytes) -> bool:
        """Hand on the reply in one line of the stream; True for a sign of a live stream
        (a message or a keepalive), which resets the backoff."""
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep
            return False
        if not isinstance(event, dict) or event.get("topic", self._topic) != self._topic:
            return False
        kind = event.get("event")
        if kind == "keepalive":
            return True
        message_id = event.get("id")
        if kind != "message" or not isinstance(message_id, str):
            return False
        if not MESSAGE_ID.fullmatch(message_id):
            return False
        self._last_id = message_id
        if message_id in self._seen:
            return True
        self._remember(message_id)
        text = event.get("message")
        # An "encoding" (base64) means the text is not what the phone sent.
        if (
            not isinstance(text, str)
            or event.get("encoding")
            or len(text.encode(errors="replace")) > REPLY_LIMIT
        ):
            self._log.debug("ntfy: ignored a message that is no reply")
            return True
        if not self._stopping.is_set():
            try:
                self._on_reply(text)
            except Exception as error:  # the caller's bug must not end the stream
                self._log.error("ntfy: handling a reply failed (%s)", type(error).__name__)
        return True

    def _remember(self, message_id: str) -> None:
        self._seen.add(message_id)
        self._seen_order.append(message_id)
        if len(self._seen_order) > SEEN_LIMIT:
            self._seen.discard(self._seen_order.popleft())


__all__ = ["NtfyPublisher", "ReplyStream"]

"""FakeNtfy: a fake of ntfy's server on loopback, for tests of tray's ntfy outlet.

A small, honest stand-in for the parts of ntfy's HTTP API that tray uses, as documented
(docs.ntfy.sh: publish, subscribe/api): JSON publish (``POST <base>/``), plain publish
(``POST``/``PUT <base>/<topic>``), the JSON stream (``GET <base>/<topic>/json``: the open
event, the cached messages after ``since``, then new ones as they come, and a keepalive
line whenever it has been quiet), ``poll=1``, ``since`` (``all``, ``none``, a unix time or
a message id; not ``latest`` nor durations), and an access token (``Authorization: Bearer
tk_...``; without it, ntfy's JSON 401). Its cache outlives a stop, as ntfy's cache file
does a restart. It speaks https when given a TLS context (:func:`tls_contexts` makes a
certificate for 127.0.0.1 with openssl). Not here: accounts, ACLs, attachments, rate
limits, SSE or WebSockets.
"""

from __future__ import annotations

import contextlib
import copy
import json
import queue
import re
import secrets
import select
import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

TOPIC = re.compile(r"[-_A-Za-z0-9]{1,64}")
MESSAGE_ID = re.compile(r"[-_A-Za-z0-9]{12}")
# The JSON publish fields this fake keeps, as ntfy's message object names them.
FIELDS = ("title", "priority", "tags", "click", "icon", "actions", "markdown")
CACHE_SECONDS = 12 * 3600  # ntfy's default cache duration, for the "expires" field
ACTIONS = ("view", "http")  # those with a url; not "broadcast" (Android intents)
QUIET_LOOK = 0.05  # how often a quiet stream looks whether its subscriber hung up


@dataclass(frozen=True)
class Seen:
    """One request as the server got it (the test reads these, e.g. for ``since``)."""

    method: str
    path: str
    query: dict[str, str]
    authorization: str | None
    at: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class _Stream:
    topic: str
    lines: queue.Queue[bytes | None] = field(default_factory=queue.Queue)


class _RefusedError(Exception):
    """(HTTP status, ntfy's error code, its text)."""


def _event(kind: str, topic: str, at: float = 0) -> dict[str, object]:
    stamp = int(at or time.time())  # ids of 12 characters, as ntfy's:
    return {"id": secrets.token_urlsafe(9), "time": stamp, "event": kind, "topic": topic}


def _line(event: dict[str, object]) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


def tls_contexts(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server's TLS context with a new certificate for 127.0.0.1, and a client's that
    trusts that certificate alone (hostnames checked, as the system's would be)."""
    key, certificate = directory / "key.pem", directory / "certificate.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(certificate),
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(certificate, key)
    client = ssl.create_default_context(cafile=str(certificate))
    return server, client


class FakeNtfy:
    """A fake ntfy server on 127.0.0.1 (port 0 at first, the same port after a restart)."""

    def __init__(
        self,
        token: str | None = None,
        *,
        prefix: str = "",
        keepalive: float = 45.0,
        tls: ssl.SSLContext | None = None,
    ):
        self.token = token
        self.tls = tls
        self.prefix = prefix.rstrip("/")
        self.keepalive = keepalive
        self.message_limit = 4096  # ntfy's message-size-limit setting, 4 KiB unless raised
        # Every request is answered 503, as a reverse proxy does while ntfy is down.
        self.unavailable = False
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._cache: list[dict[str, object]] = []  # every topic's, in publishing order
        self._streams: list[_Stream] = []
        self.port = 0  # 0 until started; then kept, for a restart on the same port
        self.url = ""
        self._server: _Server | None = None

    def published(self, topic: str) -> list[dict[str, object]]:
        with self._lock:
            return [copy.deepcopy(m) for m in self._cache if m["topic"] == topic]

    def publish(
        self, topic: str, message: str, fields: dict[str, object] | None = None, at: float = 0
    ) -> dict[str, object]:
        """Cache and send out one message, as the server does for a publish it accepts
        (also while stopped: its cache outlives the listener). ``at`` backdates it."""
        stored = _event("message", topic, at)
        stored.update(expires=cast(int, stored["time"]) + CACHE_SECONDS, message=message)
        stored.update(copy.deepcopy(fields or {}))
        with self._lock:
            self._cache.append(stored)
            for stream in self._streams:
                if stream.topic == topic:
                    stream.lines.put(_line(stored))
            return copy.deepcopy(stored)

    def streams(self, topic: str) -> int:
        with self._lock:
            return sum(1 for s in self._streams if s.topic == topic)

    def send_raw(self, topic: str, line: bytes) -> None:
        """Write ``line`` as is into every open stream on ``topic`` (junk, for tests)."""
        with self._lock:
            for stream in self._streams:
                if stream.topic == topic:
                    stream.lines.put(line)

    def drop_streams(self) -> int:
        """Cut every open stream at once, as a network drop would (no clean end)."""
        with self._lock:
            dropped, self._streams = self._streams, []
        for stream in dropped:
            stream.lines.put(None)
        return len(dropped)

    def start(self) -> FakeNtfy:
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.fake = self
        self.port = int(server.server_address[1])
        scheme = "http" if self.tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self.port}{self.prefix}"
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            self.drop_streams()

    def __enter__(self) -> FakeNtfy:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def _accept(self, topic: str, message: str, fields: dict[str, object]) -> dict[str, object]:
        if len(message.encode()) > self.message_limit:
            raise _RefusedError(413, 41301, "message too large")
        priority = fields.get("priority")
        if priority is not None and (type(priority) is not int or not 1 <= priority <= 5):
            raise _RefusedError(400, 40007, "invalid priority")
        actions = fields.get("actions", [])
        for action in actions if isinstance(actions, list) and len(actions) <= 3 else [None]:
            if not isinstance(action, dict) or action.get("action") not in ACTIONS:
                raise _RefusedError(400, 40018, "invalid request: actions invalid")
            if not isinstance(action.get("label"), str) or not isinstance(action.get("url"), str):
                raise _RefusedError(400, 40018, "invalid request: actions invalid")
            action.setdefault("id", secrets.token_urlsafe(9))
        # ntfy's stand-in text for an empty message.
        return self.publish(topic, message or "triggered", fields)

    def _since(self, topic: str, since: str) -> list[dict[str, object]]:
        mine = [m for m in self._cache if m["topic"] == topic]
        if since in ("all", "none"):
            return mine if since == "all" else []
        if since.isdigit():
            return [m for m in mine if cast(int, m["time"]) >= int(since)]
        if MESSAGE_ID.fullmatch(since):
            ids = [m["id"] for m in self._cache]
            if since not in ids:  # an unknown id: ntfy sends everything it has
                return mine
            after = self._cache[ids.index(since) + 1 :]
            return [m for m in after if m["topic"] == topic]
        raise _RefusedError(400, 40008, "invalid since parameter")

    def _subscribe(self, topic: str, since: str, poll: bool) -> tuple[list[bytes], _Stream | None]:
        # One lock for the cached messages and the registration: none twice, none lost.
        with self._lock:
            old = [_line(m) for m in self._since(topic, since)]
            stream = None if poll else _Stream(topic)
            self._streams.extend([stream] if stream else [])
            return old, stream


class _Server(ThreadingHTTPServer):
    fake: FakeNtfy

    def finish_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        if self.fake.tls is None or not isinstance(request, socket.socket):
            return super().finish_request(request, client_address)
        # The handshake on the request's own thread, not the one that accepts.
        with self.fake.tls.wrap_socket(request, server_side=True) as wrapped:
            super().finish_request(wrapped, client_address)
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked streams, as ntfy (Go's net/http) sends them
    server: _Server

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_GET  # noqa: N815 - http.server's names

    def log_message(self, format: str, *args: object) -> None:
        pass  # requests are in fake.requests; stderr stays the test's

    def _handle(self) -> None:
        fake = self.server.fake
        parts = urlsplit(self.path)
        query = dict(parse_qsl(parts.query))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        authorization = self.headers.get("Authorization")
        with fake._lock:
            fake.requests.append(Seen(self.command, parts.path, query, authorization))
        try:
            if fake.unavailable:
                raise _RefusedError(503, 50301, "service unavailable")
            if not parts.path.startswith(f"{fake.prefix}/"):
                raise _RefusedError(404, 40401, "page not found")
            path = parts.path[len(fake.prefix) :]
            if fake.token is not None and authorization != f"Bearer {fake.token}":
                raise _RefusedError(401, 40101, "unauthorized")
            if self.command != "GET":
                return self._reply(200, self._publish(path, body))
            topic, _, json_path = path[1:].partition("/")
            if not TOPIC.fullmatch(topic) or json_path != "json":
                raise _RefusedError(404, 40401, "page not found")
            poll = query.get("poll") in ("1", "yes", "true")
            since = query.get("since", "all" if poll else "none")
            self._stream(*fake._subscribe(topic, since, poll))
        except _RefusedError as refused:
            status, code, error = refused.args
            self._reply(status, {"code": code, "http": status, "error": error})

    def _publish(self, path: str, body: bytes) -> dict[str, object]:
        if path != "/":  # plain publish: the body is the message
            if not TOPIC.fullmatch(path[1:]):
                raise _RefusedError(404, 40401, "page not found")
            return self.server.fake._accept(path[1:], body.decode("utf-8", "replace"), {})
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        data = data if isinstance(data, dict) else {}
        topic, message = data.get("topic"), data.get("message", "")
        if not (isinstance(topic, str) and TOPIC.fullmatch(topic) and isinstance(message, str)):
            raise _RefusedError(400, 40024, "invalid request: JSON with a topic and a message")
        fields = {k: data[k] for k in FIELDS if k in data}
        return self.server.fake._accept(topic, message, fields)

    def _reply(self, status: int, data: dict[str, object]) -> None:
        payload = _line(data)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _stream(self, old: list[bytes], stream: _Stream | None) -> None:
        fake = self.server.fake
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if stream is None:  # poll=1: what is cached, then the end
            for line in [*old, b""]:
                self._chunk(line)
            return
        self.close_connection = True
        try:
            for line in [_line(_event("open", stream.topic)), *old]:
                self._chunk(line)
            quiet_until = time.monotonic() + fake.keepalive
            while True:
                try:
                    item = stream.lines.get(timeout=QUIET_LOOK)
                except queue.Empty:
                    if self._hung_up():
                        return
                    if time.monotonic() < quiet_until:
                        continue
                    item = _line(_event("keepalive", stream.topic))
                if item is None:  # dropped: cut the connection, no last chunk
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._chunk(item)
                quiet_until = time.monotonic() + fake.keepalive
        except OSError:
            return  # the subscriber went away
        finally:
            with fake._lock, contextlib.suppress(ValueError):  # unless dropped already
                fake._streams.remove(stream)

    def _hung_up(self) -> bool:
        # ntfy sees a subscriber leave at once (Go ends the request's context); a write
        # would find out only at the next keepalive.
        readable, _, _ = select.select([self.connection], [], [], 0)
        # The raw socket's: TLS's recv takes no flags.
        peek = socket.socket.recv(self.connection, 1, socket.MSG_PEEK) if readable else None
        return peek == b""

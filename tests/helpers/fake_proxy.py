"""FakeProxy: a web proxy of the tests' own on loopback, for clients that must go through
one. It does what an http proxy does for them: a CONNECT tunnel (for an https URL), or a
request for a whole URL (for an http one) sent on as a request for its path; then it
relays bytes both ways as they come, so a stream through it still streams. It keeps what
it was asked, and can ask for a password (407) as a company's proxy does.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit

HEAD_LIMIT = 65536
CONNECT_TIMEOUT = 10.0
# Request headers meant for the proxy itself, not passed on.
_HOP_HEADERS = ("proxy-authorization", "proxy-connection")


@dataclass(frozen=True)
class Asked:
    """One request to the proxy: CONNECT's ``host:port``, or the whole URL asked for."""

    method: str
    target: str
    authorization: str | None


class FakeProxy:
    """An http proxy on 127.0.0.1, at a port the system chose (``port``)."""

    def __init__(self, authorization: str | None = None) -> None:
        # The Proxy-Authorization it asks for; None: it lets anyone through.
        self.authorization = authorization
        self.asked: list[Asked] = []
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> FakeProxy:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def requests(self) -> list[Asked]:
        with self._lock:
            return list(self.asked)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # stopped
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _serve(self, client: socket.socket) -> None:
        self._keep(client)
        upstream: socket.socket | None = None
        try:
            head, rest = _read_head(client)
            if head is None:
                return
            request_line, *lines = head.decode("latin-1").split("\r\n")
            method, target, version = request_line.split(" ", 2)
            headers = [tuple(line.split(":", 1)) for line in lines if ":" in line]
            given = next(
                (v.strip() for k, v in headers if k.strip().lower() == "proxy-authorization"),
                None,
            )
            with self._lock:
                self.asked.append(Asked(method, target, given))
            if self.authorization is not None and given != self.authorization:
                client.sendall(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b'Proxy-Authenticate: Basic realm="fake"\r\nContent-Length: 0\r\n\r\n'
                )
                return
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                upstream = socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                parts = urlsplit(target)
                assert parts.scheme == "http" and parts.hostname, target
                address = (parts.hostname, parts.port or 80)
                upstream = socket.create_connection(address, CONNECT_TIMEOUT)
                path = parts.path + (f"?{parts.query}" if parts.query else "")
                kept = "".join(
                    f"{k}:{v}\r\n" for k, v in headers if k.strip().lower() not in _HOP_HEADERS
                )
                upstream.sendall(f"{method} {path} {version}\r\n{kept}\r\n".encode("latin-1"))
            upstream.settimeout(None)
            self._keep(upstream)
            _relay(client, upstream, rest)
        except OSError:
            return  # either side went away
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with self._lock:
                        self._open.discard(sock)
                    sock.close()


def _read_head(client: socket.socket) -> tuple[bytes | None, bytes]:
    """The request's head (up to its blank line) and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk or len(data) > HEAD_LIMIT:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _relay(client: socket.socket, upstream: socket.socket, pending: bytes) -> None:
    """Bytes both ways as they come, until either side ends."""
    if pending:
        upstream.sendall(pending)
    other = {client: upstream, upstream: client}
    while True:
        readable, _, _ = select.select(list(other), [], [])
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            other[sock].sendall(data)

"""A loopback HTTP server that stands in for ntfy or a webhook: a small, honest fake that
keeps every POST it gets, for tests of forwarding through the real Apprise."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, object]
    at: float = field(default_factory=time.monotonic)


@dataclass
class Receiver:
    """A loopback HTTP server keeping every POST; ``hang`` makes it never answer."""

    server: ThreadingHTTPServer
    requests: list[Request] = field(default_factory=list)
    hang: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])


def start_receiver(port: int = 0) -> Receiver:
    holder: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            receiver = holder[0]
            length = int(self.headers.get("Content-Length", "0"))
            data = self.rfile.read(length)
            if receiver.hang.is_set():
                receiver.release.wait(30)
                return
            receiver.requests.append(
                Request(self.path, dict(self.headers.items()), json.loads(data or b"{}"))
            )
            reply = b'{"id":"x"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test reads the requests; stderr stays the app's

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    receiver = Receiver(server)
    holder.append(receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    """A receiver for the block, shut down after it even when it hangs."""
    started = start_receiver()
    try:
        yield started
    finally:
        started.release.set()
        started.server.shutdown()
        started.server.server_close()

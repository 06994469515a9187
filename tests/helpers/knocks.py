"""A port that counts who knocks: each connection is accepted and closed at once.

For a test that must see a client retry (a link to a host that went down) without
sleeping for however long the retries might take: it waits until the count is reached.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


class Knocks:
    def __init__(self, listener: socket.socket) -> None:
        self._listener = listener
        self._lock = threading.Lock()
        self._count = 0
        self._thread = threading.Thread(target=self._serve, name="knocks", daemon=True)
        self._thread.start()

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:  # closed: the test is done with it
                return
            connection.close()
            with self._lock:
                self._count += 1

    def close(self) -> None:
        # shutdown() wakes the accept() that close() alone would leave blocked.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join()


@contextlib.contextmanager
def knocks_on(port: int) -> Iterator[Knocks]:
    """Count the connections to 127.0.0.1:``port`` (free now: a server there was stopped)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # The stopped server's connections may linger in TIME_WAIT on this port.
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)
    knocks = Knocks(listener)
    try:
        yield knocks
    finally:
        knocks.close()

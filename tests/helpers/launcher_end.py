"""A launcher's end of a session's answer socket, served on a thread by a test: the real
socket and the real gate over ``records``, with the keys written down instead of typed."""

from __future__ import annotations

import select
import threading
import time
from pathlib import Path

from helpers.answer_keys import SHIPPED_SETTINGS
from tray.core.answers.gate import Decision, Request, decide
from tray.launcher.answer_socket import AnswerSocket, socket_path
from tray.protocol.records import Record


class LauncherEnd:
    """``typed`` is what would have gone into the program; ``requests`` what was asked;
    ``last_input_at`` the user's last keystroke, as the gate sees it."""

    def __init__(self, state_dir: Path, session_id: str, records: tuple[Record, ...]) -> None:
        self.records = records
        self.last_input_at: float | None = None
        self.typed: list[bytes] = []
        self.requests: list[Request] = []
        self._socket = AnswerSocket(
            socket_path(state_dir, session_id), self._gate, self._type, record_clock=time.time
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _gate(self, request: Request) -> Decision:
        self.requests.append(request)
        return decide(self.records, request, self.last_input_at, SHIPPED_SETTINGS)

    def _type(self, keys: bytes) -> bool:
        self.typed.append(keys)
        return True

    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select(self._socket.fds(), [], [], 0.01)
            for fd in ready:
                self._socket.on_readable(fd)
            self._socket.tick()
        self._socket.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

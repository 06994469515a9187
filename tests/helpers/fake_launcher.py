"""A session's launcher, played by a test on a thread: the real answer socket and the real
gate, and no program behind them.

The one stand-in for a launcher's end of the answer channel, wherever a test needs one
(the app's answers, the desktop's buttons, `tray answer`, a host's stream).
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from helpers.answer_keys import SHIPPED_SETTINGS
from tray.core.answers.gate import Decision, Request, decide
from tray.launcher.answer_socket import AnswerSocket
from tray.protocol.records import Record
from tray.state.answer_channel import socket_path

# How long the thread waits for the socket before it looks at ``stop`` and ticks again.
POLL = 0.01


class FakeLauncher:
    """The answer socket of session ``session_id`` in ``state_dir``, gated over
    ``records`` (a test may replace them): ``typed`` is what would have gone into the
    program, ``requests`` what was asked, ``last_input_at`` the user's last keystroke as
    the gate sees it. ``record_clock`` is the clock of the records' ``since``.

    It serves from the start, or (``serving=False``) once :meth:`serve` is called: until
    then a connection waits at the door (:meth:`knocked`), as at a launcher busy with its
    program's output.
    """

    def __init__(
        self,
        state_dir: Path,
        session_id: str,
        records: Sequence[Record],
        *,
        record_clock: Callable[[], float] = time.time,
        serving: bool = True,
    ) -> None:
        self.records = records
        self.last_input_at: float | None = None
        self.typed: list[bytes] = []
        self.requests: list[Request] = []
        self.socket = AnswerSocket(
            socket_path(state_dir, session_id), self._gate, self._type, record_clock=record_clock
        )
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="fake-launcher", daemon=True)
        if serving:
            self.serve()

    def serve(self) -> None:
        self.thread.start()

    def knocked(self) -> bool:
        """Whether a client is at the door: a connection waits to be taken."""
        ready, _, _ = select.select([self.socket.fileno()], [], [], 0)
        return bool(ready)

    def close(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(5)
        self.socket.close()

    def _gate(self, request: Request) -> Decision:
        self.requests.append(request)
        return decide(tuple(self.records), request, self.last_input_at, SHIPPED_SETTINGS)

    def _type(self, keys: bytes) -> bool:
        self.typed.append(keys)
        return True

    def _serve(self) -> None:
        while not self.stop.is_set():
            ready, _, _ = select.select(self.socket.fds(), [], [], POLL)
            for fd in ready:
                self.socket.on_readable(fd)
            self.socket.tick()

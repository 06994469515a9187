"""A command on a real pty, held as a terminal holds it: its output is read, and dropped,
on a thread of its own, so that the pty never fills and the command never waits on it."""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Mapping, Sequence

from ptyprocess import PtyProcess

from helpers.waiting import DEFAULT_TIMEOUT


class DrainedPty:
    """``argv`` on a pty of 30 rows and 100 columns, with ``env`` and TERM=xterm-256color."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.proc = PtyProcess.spawn(
            list(argv), env={**env, "TERM": "xterm-256color"}, dimensions=(30, 100)
        )
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while not self._stop.is_set():
            try:
                if not select.select([self.proc.fd], [], [], 0.05)[0]:
                    continue
                if not os.read(self.proc.fd, 65536):
                    return
            except (OSError, ValueError):
                return

    def type(self, data: bytes) -> None:
        """Keys, as the user types them into the terminal."""
        os.write(self.proc.fd, data)

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            self.proc.terminate(force=True)
        self._reader.join(DEFAULT_TIMEOUT)
        self.proc.close(force=True)

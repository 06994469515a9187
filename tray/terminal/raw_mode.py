"""Raw mode on the user's terminal, always restorable: for ``tray run``'s proxy and
``tray doctor``'s question to the terminal."""

from __future__ import annotations

import termios
from contextlib import suppress
from types import TracebackType
from typing import Any

# Indexes into the list termios.tcgetattr returns.
IFLAG, OFLAG, CFLAG, LFLAG, ISPEED, OSPEED, CC = range(7)


def make_raw(attributes: list[Any]) -> list[Any]:
    """What cfmakeraw(3) makes of ``attributes``; the argument is left untouched."""
    raw = list(attributes)
    raw[IFLAG] &= ~(
        termios.IGNBRK
        | termios.BRKINT
        | termios.PARMRK
        | termios.ISTRIP
        | termios.INLCR
        | termios.IGNCR
        | termios.ICRNL
        | termios.IXON
    )
    raw[OFLAG] &= ~termios.OPOST
    raw[LFLAG] &= ~(termios.ECHO | termios.ECHONL | termios.ICANON | termios.ISIG | termios.IEXTEN)
    raw[CFLAG] = (raw[CFLAG] & ~(termios.CSIZE | termios.PARENB)) | termios.CS8
    cc = list(raw[CC])
    cc[termios.VMIN] = 1
    cc[termios.VTIME] = 0
    raw[CC] = cc
    return raw


class RawMode:
    """Raw mode on a terminal, restorable at any time and always restored on exit.

    :meth:`restore` and :meth:`enter` may alternate (job control): each new
    :meth:`enter` after a restore saves the settings as they are then, because the
    shell may have changed them while we were stopped.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._saved: list[Any] | None = None

    @property
    def active(self) -> bool:
        return self._saved is not None

    def enter(self) -> None:
        # Calling this while active re-applies raw mode from the original settings,
        # for when something else (a SIGSTOP and a shell) changed them behind our back.
        if self._saved is None:
            self._saved = termios.tcgetattr(self._fd)
        # TCSANOW rather than TCSAFLUSH: what the user typed ahead is not thrown away.
        termios.tcsetattr(self._fd, termios.TCSANOW, make_raw(self._saved))

    def restore(self) -> None:
        saved, self._saved = self._saved, None
        if saved is None:
            return
        # A hung-up terminal refuses everything; there is nothing left to restore then.
        with suppress(OSError, termios.error):
            termios.tcsetattr(self._fd, termios.TCSANOW, saved)

    def __enter__(self) -> RawMode:
        self.enter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.restore()

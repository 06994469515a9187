"""The user's terminal: raw mode that always comes back, window sizes, signals as an fd."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import termios
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any

DEFAULT_ROWS = 24
DEFAULT_COLUMNS = 80
_MAX_DIMENSION = 0xFFFF  # struct winsize holds unsigned shorts
# struct winsize: rows, columns, xpixel, ypixel.
_WINSIZE = struct.Struct("HHHH")

# Indexes into the list termios.tcgetattr returns.
IFLAG, OFLAG, CFLAG, LFLAG, ISPEED, OSPEED, CC = range(7)


@dataclass(frozen=True, slots=True)
class WindowSize:
    rows: int
    columns: int
    xpixel: int = 0
    ypixel: int = 0


@dataclass(frozen=True, slots=True)
class UserTerminal:
    """The user's side of a run, as the proxy sees it.

    ``stdin`` is -1 when there is no input at all; ``stdout`` None when output goes
    nowhere. ``raw`` is the user's terminal in raw mode, None in pipe mode. ``size_fd``
    is the terminal whose size the command's pty follows, if any. ``tstp_ignored``: we
    were started with SIGTSTP ignored (no job control above us), so a stopped command
    does not stop the launcher with it.
    """

    stdin: int
    stdout: int | None
    raw: RawMode | None
    size_fd: int | None
    tstp_ignored: bool


def get_size(fd: int) -> WindowSize | None:
    """The terminal's size, or None when ``fd`` is no terminal or reports no size."""
    try:
        packed = fcntl.ioctl(fd, termios.TIOCGWINSZ, bytes(_WINSIZE.size))
    except OSError:
        return None
    size = WindowSize(*_WINSIZE.unpack(packed))
    if size.rows == 0 or size.columns == 0:
        return None
    return size


def set_size(fd: int, size: WindowSize) -> None:
    """Set a pty's size; the kernel sends SIGWINCH to its foreground group when it changes."""
    packed = _WINSIZE.pack(size.rows, size.columns, size.xpixel, size.ypixel)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, packed)


def _dimension(environ: Mapping[str, str], key: str, default: int) -> int:
    try:
        value = int(environ.get(key, ""))
    except ValueError:
        return default
    return value if 0 < value <= _MAX_DIMENSION else default


def size_from_environ(environ: Mapping[str, str]) -> WindowSize:
    """``LINES`` and ``COLUMNS`` when they hold usable numbers, else 24x80."""
    return WindowSize(
        _dimension(environ, "LINES", DEFAULT_ROWS),
        _dimension(environ, "COLUMNS", DEFAULT_COLUMNS),
    )


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


def _ignore(signum: int, frame: FrameType | None) -> None:
    """The signal's only effect is the byte set_wakeup_fd writes."""


class SignalPipe:
    """Signals turned into bytes on a pipe, so one poll() waits for I/O and signals.

    Each signal handled here writes its number to the pipe (``signal.set_wakeup_fd``);
    the Python-level handler does nothing. Everything is put back on exit.
    """

    def __init__(self, signals: Iterable[int]) -> None:
        self._signals = tuple(signals)
        self._previous: dict[int, Any] = {}
        self._previous_wakeup = -1
        self._read_fd = -1
        self._write_fd = -1

    def fileno(self) -> int:
        return self._read_fd

    def __enter__(self) -> SignalPipe:
        self._read_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._previous_wakeup = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        for signum in self._signals:
            self._previous[signum] = signal.signal(signum, _ignore)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()
        signal.set_wakeup_fd(self._previous_wakeup)
        os.close(self._read_fd)
        os.close(self._write_fd)

    def read(self) -> list[int]:
        """The signals that arrived since the last call, oldest first, repeats kept."""
        received: list[int] = []
        while True:
            try:
                chunk = os.read(self._read_fd, 256)
            except BlockingIOError:
                return received
            if not chunk:
                return received
            received.extend(chunk)

    def default(self, signum: int) -> DefaultDisposition:
        """The default disposition for a while, e.g. so SIGTSTP really stops us."""
        return DefaultDisposition(signum)


class DefaultDisposition:
    """A signal's default disposition inside ``with``, its handler back after."""

    def __init__(self, signum: int) -> None:
        self._signum = signum
        self._previous: Any = None

    def __enter__(self) -> None:
        self._previous = signal.signal(self._signum, signal.SIG_DFL)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        previous = self._previous
        signal.signal(self._signum, previous if previous is not None else signal.SIG_DFL)

"""The user's terminal as ``tray run`` holds it: window sizes, and signals as an fd.

Raw mode is :mod:`tray.terminal.raw_mode`'s, which ``tray doctor`` uses too."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import termios
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any

from tray.terminal.raw_mode import RawMode

DEFAULT_ROWS = 24
DEFAULT_COLUMNS = 80
_MAX_DIMENSION = 0xFFFF  # struct winsize holds unsigned shorts
# struct winsize: rows, columns, xpixel, ypixel.
_WINSIZE = struct.Struct("HHHH")


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

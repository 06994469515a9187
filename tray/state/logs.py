"""Every log tray keeps, and where each goes.

- ``app.log`` in the state directory: the tray app's (:func:`open_app_log`);
- ``launcher.log`` beside it: ``tray run``'s, never on the terminal, which belongs to the
  command (:class:`LauncherLog`);
- stderr, for the commands that keep running (:func:`stderr_log`), with a problem
  warned of once rather than at every re-read (:class:`OnceLog`), and stdout sent to
  /dev/null once its reader has gone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import logging


class OnceLog:
    """Warns once per problem, not once per event, and notes when it clears."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._active: set[str] = set()

    def problem(self, key: str, message: str) -> None:
        if key not in self._active:
            self._active.add(key)
            self._log.warning("%s", message)

    def cleared(self, keys: set[str]) -> None:
        for key in self._active - keys:
            self._log.info("recovered: %s", key)
        self._active &= keys


class OnceFilter:
    """Lets each message through once: a watch re-reads every few seconds, and an
    unreadable file is worth one warning, not one a round. (A logging filter need only
    have ``filter``; not deriving from ``logging.Filter`` keeps logging off the path of
    ``tray run``, whose launcher log below needs none of it.)"""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self._seen:
            return False
        self._seen.add(message)
        return True


def stderr_log(name: str, stream: TextIO, prefix: str) -> logging.Logger:
    """A logger that writes ``PREFIX: message`` lines to ``stream`` and nowhere else,
    each message once."""
    import logging  # noqa: PLC0415 - see OnceFilter

    log = logging.getLogger(name)
    log.propagate = False
    log.handlers.clear()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(f"{prefix}: %(message)s"))
    handler.addFilter(OnceFilter())
    log.addHandler(handler)
    return log


def discard_output(fd: int) -> None:
    """Point ``fd`` at /dev/null: its reader went away, and whatever is still buffered
    can go nowhere, so the flushes at exit succeed instead of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        with suppress(OSError):
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)


# The app's log.

APP_LOG_NAME = "app.log"
FORMAT = "%(asctime)s %(levelname)s %(message)s"


def open_app_log(state_dir: Path) -> logging.Logger:
    """The app's log: ``app.log`` in the state directory, and stderr when it is a terminal
    or when ``app.log`` cannot be written (said once, on stderr)."""
    import logging  # noqa: PLC0415 - see OnceFilter

    log = logging.getLogger("tray.app")
    log.setLevel(logging.INFO)
    formatter = logging.Formatter(FORMAT)
    # Started in the background (by `tray demo`, autostart, systemd), stderr is a file
    # or a journal, and app.log already has every line.
    to_stderr = sys.stderr is not None and sys.stderr.isatty()
    path = state_dir / APP_LOG_NAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as error:
        if sys.stderr is not None:
            reason = error.strerror or str(error)
            sys.stderr.write(f"tray app: cannot write {path}: {reason}; logging to stderr\n")
            to_stderr = True
    else:
        handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
        handler.setFormatter(formatter)
        log.addHandler(handler)
    if to_stderr:
        stream = logging.StreamHandler()
        stream.setFormatter(formatter)
        log.addHandler(stream)
    return log


# The launcher's log.

LAUNCHER_LOG_NAME = "launcher.log"
LOG_LIMIT = 1 << 20


def _local_time(seconds: float) -> str:
    """Local ISO 8601 time to the millisecond."""
    return datetime.fromtimestamp(seconds).isoformat(timespec="milliseconds")


class LauncherLog:
    """Appends lines to a file; a log that cannot be written is silently given up.

    ``path`` None: nothing is logged (there is no state directory to log in).
    """

    def __init__(
        self, path: str | os.PathLike[str] | None, session_id: str, clock: Callable[[], float]
    ) -> None:
        self._path = None if path is None else os.fspath(path)
        self._session_id = session_id
        self._clock = clock
        self._fd = -1

    def __call__(self, message: str) -> None:
        if self._path is None:
            return
        stamp = _local_time(self._clock())
        line = f"{stamp} {self._session_id} {' '.join(message.split())}\n"
        try:
            if self._fd < 0:
                self._open(self._path)
            os.write(self._fd, line.encode("utf-8", "replace"))
        except OSError:
            self._path = None

    def _open(self, path: str) -> None:
        # No log yet, or none to move aside: the open below says what counts.
        with suppress(OSError):
            if os.stat(path).st_size > LOG_LIMIT:
                os.replace(path, path + ".1")
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

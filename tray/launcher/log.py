"""The launcher's diagnostics: one line per event in the state directory, never on the terminal.

The terminal belongs to the command, so anything the launcher has to say while it runs
goes to ``launcher.log`` beside the state files, kept to about a megabyte.
"""

from __future__ import annotations

import os
import time

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

LOG_NAME = "launcher.log"
LOG_LIMIT = 1 << 20


def _local_time(seconds: float) -> str:
    """Local ISO 8601 time to the millisecond; time, not datetime, which costs a launch 1 ms."""
    whole = int(seconds // 1)
    millis = int((seconds - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(whole)) + f".{millis:03d}"


class LauncherLog:
    """Appends lines to a file; a log that cannot be written is silently given up.

    ``path`` None: nothing is logged (there is no state directory to log in). A string,
    as the launcher gives it: pathlib would cost every `tray run` milliseconds.
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
        try:
            if os.stat(path).st_size > LOG_LIMIT:
                os.replace(path, path + ".1")
        except OSError:
            pass  # no log yet, or none to move aside: the open below says what counts
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

"""The sessions as ``tray status`` lists them, read again whenever they change.

One reading for every command that shows sessions (``tray status`` in each format, its
``--watch``, and the jsonl stream another machine's tray reads): unreadable files named
once, ended sessions past ``keep_ended`` left out, and a loop that wakes on the state
directory's file events and on the liveness timer.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from tray.base.safe_text import clean_text
from tray.core.session.model import Session, expired
from tray.state.directory_watcher import DirectoryWatcher
from tray.state.store import Problem, StateStore

# A SIGKILLed launcher writes nothing, so only a re-read finds it dead; the tray app
# re-reads as often.
LIVENESS_PERIOD: Final = 2.0


class SessionFeed:
    """Reads the state directory as ``tray status`` does.

    Problems go to ``log`` each time they are reported; a :func:`tray.state.logs.stderr_log`
    lets each through once.
    """

    def __init__(self, store: StateStore, keep_ended: float, log: logging.Logger) -> None:
        self.store = store
        self.keep_ended = keep_ended
        self._log = log

    def read(self, now: float) -> tuple[list[Session], list[Problem]]:
        """The sessions still listed, and the files that could not be read."""
        sessions, problems = self.store.read_all(now)
        return [s for s in sessions if not expired(s, now, self.keep_ended)], problems

    def report(self, problems: Sequence[Problem]) -> bool:
        """Warn about unreadable files; True when the directory itself is unreadable."""
        broken = False
        for problem in problems:
            path = clean_text(str(problem.path))
            reason = clean_text(problem.reason)
            if problem.path == self.store.directory:
                self._log.warning("cannot read %s: %s", path, reason)
                broken = True
            else:
                self._log.warning("skipping %s: %s", path, reason)
        return broken

    def current(self, now: float) -> list[Session]:
        """:meth:`read`, with the problems reported."""
        sessions, problems = self.read(now)
        self.report(problems)
        return sessions


class ChangeSignal:
    """Wakes a re-reading loop on file events in ``directory``, or after a timeout.

    A directory that does not exist yet is watched from the moment it appears. Call
    :meth:`begin` before each read: a change during the read then wakes the next round.
    """

    def __init__(
        self, directory: Path, log: logging.Logger, changed: threading.Event | None = None
    ) -> None:
        self.changed = changed if changed is not None else threading.Event()
        self._directory = directory
        self._watcher = DirectoryWatcher(directory, self.changed, log)
        self._tried = False

    def begin(self) -> None:
        if not self._tried and self._directory.is_dir():
            # Once, even when it fails: the watcher then logs why, and the liveness
            # re-read still finds every change, only later.
            self._tried = True
            self._watcher.start()
        self.changed.clear()

    def wait(self, timeout: float) -> bool:
        """Whether something changed within ``timeout`` seconds."""
        return self.changed.wait(timeout)

    def stop(self) -> None:
        self._watcher.stop()


def emit_on_change(
    line: Callable[[], str],
    emit: Callable[[str], None],
    changes: ChangeSignal,
    *,
    period: float,
    stopping: Callable[[], bool],
    beat: Callable[[], None] | None = None,
    beat_every: float = math.inf,
    min_interval: float = 0.0,
    pause: Callable[[float], object] = time.sleep,
) -> None:
    """Emit ``line()`` now and again whenever it changes, until ``stopping()`` says so.

    It wakes on ``changes`` and every ``period`` seconds, and never emits the same line
    twice in a row. The first round always runs. With ``beat``, that is called when
    nothing went out for ``beat_every`` seconds, so a reader can tell quiet from dead.
    After a wake it ``pause``s until ``min_interval`` has passed since the last output:
    a storm of changes becomes a few lines. Stops ``changes`` at the end.
    """
    monotonic = time.monotonic
    last: str | None = None
    last_out = -math.inf
    try:
        while True:
            changes.begin()
            current = line()
            if current != last:
                emit(current)
                last = current
                last_out = monotonic()
            elif beat is not None and monotonic() - last_out >= beat_every:
                beat()
                last_out = monotonic()
            if stopping():
                break
            if changes.wait(min(period, max(0.0, last_out + beat_every - monotonic()))):
                rest = last_out + min_interval - monotonic()
                if rest > 0 and not stopping():
                    pause(rest)
            if stopping():
                break
    finally:
        changes.stop()

"""What the command reported, kept as the session's state file, written sparingly.

A command may send thousands of reports a second and the user types all the time;
the state file is rewritten at most every WRITE_INTERVAL for reports, and only every
INPUT_WRITE_INTERVAL when nothing but the time of the last keystroke changed. Reports
that change nothing a reader can see cause no write at all.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from tray.launcher.log import LauncherLog
from tray.protocol.records import RecordTable
from tray.protocol.report import parse_body
from tray.protocol.scanner import Event, FullReset, PromptStart, Query, RawReport
from tray.session import Session
from tray.store import StateStore

WRITE_INTERVAL = 0.1
INPUT_WRITE_INTERVAL = 2.0


def _visible(session: Session) -> dict[str, Any]:
    view = session.to_public()
    del view["updated_at"]
    return view


class SessionRecorder:
    """The session's records and the pacing of its state file writes.

    Deadlines are on the monotonic clock; the times recorded in the session are on the
    environment's (wall) clock. ``on_write`` sees every session written, with the
    monotonic time of that write.
    """

    def __init__(
        self,
        session: Session,
        clock: Callable[[], float],
        log: LauncherLog,
        on_write: Callable[[Session, float], None] | None = None,
    ) -> None:
        self.session = session
        self.store: StateStore | None = None
        self.log = log
        self._clock = clock
        self._on_write = on_write
        self._table = RecordTable()
        self._source = "launcher"
        self._changed_at = session.updated_at
        self._last_input_at: float | None = None
        self._view_dirty = False
        self._input_dirty = False
        self._last_write = -math.inf
        self._written_view: dict[str, Any] | None = None
        self._write_failed = False

    def apply(self, events: Iterable[Event]) -> bytes:
        """Record a chunk's events; return the answers owed to the command's queries."""
        now = self._clock()
        answers = b""
        recorded = False
        for event in events:
            if isinstance(event, Query):
                answers += event.answer
                self._source = "program"
            elif isinstance(event, RawReport):
                self._source = "program"
                report = parse_body(event.body)
                if report is not None:
                    self._table.apply(report, now)
            elif isinstance(event, PromptStart):
                self._table.end_of_run()
            elif isinstance(event, FullReset):
                self._table.reset()
            else:
                # Bells, notifications, focus reporting and cursor queries are not
                # recorded yet; a chunk with only those must not schedule a write.
                continue
            recorded = True
        if recorded:
            self._changed_at = now
            self._view_dirty = True
        return answers

    def typed(self) -> None:
        """The user typed something: worth recording, but not in a hurry."""
        self._last_input_at = self._clock()
        self._input_dirty = True

    def started(self, child_pid: int) -> None:
        self.session = dataclasses.replace(self.session, child_pid=child_pid)
        self.write(self.snapshot())

    def finish(self, code: int | None) -> None:
        self._table.end_of_run()
        self.write(self.snapshot().ended(code, self._clock()))

    def snapshot(self) -> Session:
        return dataclasses.replace(
            self.session,
            updated_at=self._changed_at,
            source=self._source,
            records=tuple(self._table.records()),
            last_input_at=self._last_input_at,
        )

    def next_write(self) -> float | None:
        """When the next write is due (monotonic), or None when nothing is pending."""
        if self._view_dirty:
            return self._last_write + WRITE_INTERVAL
        if self._input_dirty:
            return self._last_write + INPUT_WRITE_INTERVAL
        return None

    def maybe_persist(self, now: float) -> None:
        due = self.next_write()
        if due is None or now < due:
            return
        session = self.snapshot()
        input_due = self._input_dirty and now >= self._last_write + INPUT_WRITE_INTERVAL
        if self._view_dirty and not input_due and _visible(session) == self._written_view:
            self._view_dirty = False  # reports that changed nothing anyone can see
            return
        self.write(session)

    def write(self, session: Session) -> None:
        self._view_dirty = self._input_dirty = False
        self._last_write = time.monotonic()
        self._written_view = _visible(session)
        if self.store is not None:
            try:
                self.store.write(session)
            except OSError as error:
                if not self._write_failed:
                    self.log(f"cannot write the state file: {error}")
                self._write_failed = True
        if self._on_write is not None:
            self._on_write(session, self._last_write)
